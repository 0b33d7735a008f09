//! The binding, tested in wasm through the JS API (`wasm-bindgen-test-runner`, in
//! Node and in headless Chromium): the shared fixture suite plus what only the JS
//! boundary does (batch encodings, parameter forms, `Error` objects).
#![cfg(target_arch = "wasm32")]
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod fixture_suite;

use fixture_suite::{Driver, Outcome};
use js_sys::{Reflect, Uint8Array, JSON};
use log_endpoints::JsLogEndpoints;
use serde_json::{json, Value};
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_test::*;

fn js(value: &Value) -> JsValue {
    JSON::parse(&value.to_string()).unwrap()
}

fn rust(value: &JsValue) -> Value {
    serde_json::from_str(&String::from(JSON::stringify(value).unwrap())).unwrap()
}

fn error_parts(error: &JsValue) -> (u16, String, String) {
    assert!(
        error.is_instance_of::<js_sys::Error>(),
        "a real JS Error is thrown"
    );
    let status = Reflect::get(error, &"status".into())
        .unwrap()
        .as_f64()
        .unwrap() as u16;
    let code = Reflect::get(error, &"code".into())
        .unwrap()
        .as_string()
        .unwrap();
    let message = String::from(error.unchecked_ref::<js_sys::Error>().message());
    (status, code, message)
}

struct Wasm(JsLogEndpoints);

impl Driver for Wasm {
    fn new(api_keys: &[&str], now_ms: f64) -> Self {
        Wasm(JsLogEndpoints::new(js(&json!({ "apiKeys": api_keys, "now": now_ms }))).unwrap())
    }

    fn ingest(&mut self, stream: &str, batch: &str) -> Value {
        rust(&self.0.ingest(stream.into(), batch.into()).unwrap())
    }

    fn query(&mut self, endpoint: &str, params: &Value, api_key: Option<&str>) -> Outcome {
        match self.0.query(endpoint.into(), js(params), api_key.into()) {
            Ok(body) => Outcome::Rows(rust(&body)),
            Err(e) => {
                let (status, code, message) = error_parts(&e);
                Outcome::Failed(status, code, message)
            }
        }
    }
}

#[wasm_bindgen_test]
fn fixtures_through_the_js_api() {
    let failures = fixture_suite::run_all::<Wasm>();
    assert!(
        failures.is_empty(),
        "{} fixture failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

const NOW_MS: f64 = 1_795_177_796_789.0;

fn service() -> JsLogEndpoints {
    JsLogEndpoints::new(js(&json!({ "apiKeys": ["k"], "now": NOW_MS }))).unwrap()
}

fn entry(id: &str) -> Value {
    json!({"id": id, "timestamp": "2026-11-20T12:00:00Z", "project": "p", "event_message": "GET",
           "metadata": {"request": {"path": "/rest/v1/x", "url": "https://p.supabase.co/rest/v1/x"}}})
}

fn logs_ids(svc: &mut JsLogEndpoints) -> Vec<String> {
    let body = rust(
        &svc.query(
            "logs.all".into(),
            "project=p&project_tier=FREE".into(),
            "k".into(),
        )
        .unwrap(),
    );
    body["result"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_owned())
        .collect()
}

#[wasm_bindgen_test]
fn every_batch_encoding() {
    let mut svc = service();
    let array = js(&json!([entry("array")]));
    let json_text: JsValue = json!([entry("json-string")]).to_string().into();
    let ndjson: JsValue = format!("{}\n{}\n", entry("nd1"), entry("nd2")).into();
    let bytes: JsValue = Uint8Array::from(format!("{}\n", entry("bytes-nd")).as_bytes()).into();
    let json_bytes: JsValue =
        Uint8Array::from(json!([entry("bytes-json")]).to_string().as_bytes()).into();
    for batch in [array, json_text, ndjson, bytes, json_bytes] {
        let report = rust(&svc.ingest("edge_logs".into(), batch).unwrap());
        assert_eq!(report["rejected"], json!([]));
    }
    let mut ids = logs_ids(&mut svc);
    ids.sort();
    assert_eq!(
        ids,
        [
            "array",
            "bytes-json",
            "bytes-nd",
            "json-string",
            "nd1",
            "nd2"
        ]
    );

    let e = svc
        .ingest("edge_logs".into(), JsValue::from(5))
        .unwrap_err();
    assert_eq!(error_parts(&e).0, 400);
    let e = svc.ingest("nginx".into(), "[]".into()).unwrap_err();
    assert_eq!(error_parts(&e).1, "unknown_stream");
}

#[wasm_bindgen_test]
fn every_parameter_form() {
    let mut svc = service();
    svc.ingest("edge_logs".into(), js(&json!([entry("a")])))
        .unwrap();
    let object = js(&json!({"project": "p", "project_tier": "FREE"}));
    let search_params: JsValue =
        js_sys::eval("new URLSearchParams('project=p&project_tier=FREE')").unwrap();
    let query_string: JsValue = "?project=p&project_tier=FREE".into();
    for params in [object, search_params, query_string] {
        let body = rust(&svc.query("logs.all".into(), params, "k".into()).unwrap());
        assert_eq!(body["result"][0]["id"], json!("a"));
    }
    let e = svc
        .query(
            "logs.all".into(),
            js(&json!({"project": ["p"], "project_tier": "FREE"})),
            "k".into(),
        )
        .unwrap_err();
    let (status, code, message) = error_parts(&e);
    assert_eq!((status, code.as_str()), (400, "invalid_parameter"));
    assert!(message.contains("`project`"), "{message}");
}

#[wasm_bindgen_test]
fn every_error_status() {
    let mut svc = service();
    let ok = js(&json!({"project": "p", "project_tier": "FREE"}));
    let cases: [(&str, JsValue, Option<&str>, u16, &str); 6] = [
        ("logs.all", ok.clone(), None, 401, "missing_api_key"),
        ("logs.all", ok.clone(), Some("bad"), 401, "invalid_api_key"),
        ("nothing", ok.clone(), Some("k"), 404, "endpoint_not_found"),
        (
            "functions.invocation-stats",
            js(&json!({"project": "p"})),
            Some("k"),
            400,
            "missing_parameter",
        ),
        (
            "usage.api-counts",
            js(&json!({"project": "p", "interval": "x"})),
            Some("k"),
            400,
            "invalid_parameter",
        ),
        (
            "logs.all",
            js(&json!({"project_tier": "FREE", "lql": "x"})),
            Some("k"),
            400,
            "missing_parameter",
        ),
    ];
    let e = svc
        .query(
            "functions.invocation-stats".into(),
            js(&json!({"project": "p"})),
            "k".into(),
        )
        .unwrap_err();
    let parameter = Reflect::get(&e, &"parameter".into()).unwrap();
    assert_eq!(
        parameter.as_string().as_deref(),
        Some("interval"),
        "the error names its parameter"
    );
    for (endpoint, params, key, status, code) in cases {
        let e = svc.query(endpoint.into(), params, key.into()).unwrap_err();
        let (got_status, got_code, _) = error_parts(&e);
        assert_eq!(
            (got_status, got_code.as_str()),
            (status, code),
            "{endpoint}"
        );
    }
    let restricted = JsLogEndpoints::new(js(
        &json!({"apiKeys": [{"key": "r", "projects": ["other"]}], "now": NOW_MS}),
    ));
    let e = restricted
        .unwrap()
        .query("logs.all".into(), ok, "r".into())
        .unwrap_err();
    assert_eq!(error_parts(&e).0, 403);
    let small = JsLogEndpoints::new(js(
        &json!({"apiKeys": ["k"], "limits": {"maxBatchBytes": 10}}),
    ));
    let e = small
        .unwrap()
        .ingest("edge_logs".into(), "[                ]".into())
        .unwrap_err();
    assert_eq!(error_parts(&e).0, 413);
    let e = JsLogEndpoints::new(js(&json!({"apiKeys": [7]})))
        .err()
        .unwrap();
    assert_eq!(error_parts(&e).1, "invalid_config");
}

#[wasm_bindgen_test]
fn cache_status_and_clock() {
    let mut svc = service();
    let params = || js(&json!({"project": "p", "interval": "1hr"}));
    let first = rust(
        &svc.query_raw("functions.invocation-stats".into(), params(), "k".into())
            .unwrap(),
    );
    assert_eq!(
        (first["cache"].as_str(), first["maxAge"].as_u64()),
        (Some("MISS"), Some(900))
    );
    svc.set_now((NOW_MS + 60_000.0).into()).unwrap();
    let second = rust(
        &svc.query_raw("functions.invocation-stats".into(), params(), "k".into())
            .unwrap(),
    );
    assert_eq!(
        (second["cache"].as_str(), second["maxAge"].as_u64()),
        (Some("HIT"), Some(840))
    );
    assert_eq!(second["body"], first["body"]);
    let logs = rust(
        &svc.query_raw(
            "logs.all".into(),
            js(&json!({"project": "p", "project_tier": "FREE"})),
            "k".into(),
        )
        .unwrap(),
    );
    assert_eq!(logs["cache"], Value::Null);
    let endpoints = rust(&svc.endpoints().unwrap());
    assert_eq!(endpoints.as_array().unwrap().len(), 5);
    assert_eq!(endpoints[0]["maxRows"], json!(1000));
    assert_eq!(svc.newest_timestamp(), None);
}

/// The largest budget (`u32::MAX` bytes, which is `usize::MAX` in wasm) is a
/// budget like any other: a busy project's function rows are packed under
/// it as under a smaller one (a replay's waived budget once shared its value).
#[wasm_bindgen_test]
fn the_largest_budget_packs_busy_projects_as_a_smaller_one() {
    let with_budget = |bytes: f64| {
        JsLogEndpoints::new(js(&json!({
            "apiKeys": ["k"], "now": NOW_MS, "limits": { "maxStoreBytes": bytes }
        })))
        .unwrap()
    };
    // 3 rows in 8 of one project ("busy"): past the size at which a project
    // is packed, and less than half of the table; or, `spread`, those rows
    // spread over 16 projects, none of which is packed.
    let rows = |spread: bool| -> String {
        (0..48_000)
            .map(|n: i64| {
                let project = match n % 8 < 3 {
                    true if spread => format!("busy-{}", n % 16),
                    true => "busy".to_owned(),
                    false => ["a", "b", "c", "d", "e"][n as usize % 5].to_owned(),
                };
                json!({"id": format!("f-{n}"), "timestamp": 1_795_177_796_000_000i64 - n * 1_000_000,
                       "metadata": [{"project_ref": project, "function_id": "f", "execution_time_ms": n % 700,
                                     "response": [{"status_code": 200}]}]})
                .to_string()
            })
            .collect::<Vec<_>>()
            .join("\n")
    };
    let store_bytes = |budget: f64, spread: bool| {
        let mut svc = with_budget(budget);
        let report = rust(
            &svc.ingest("function_edge_logs".into(), rows(spread).into())
                .unwrap(),
        );
        assert_eq!(report["accepted"], 48_000);
        rust(&svc.stats().unwrap())["storeBytes"].as_u64().unwrap()
    };
    let (largest, smaller) = (
        store_bytes(4_294_967_295.0, false),
        store_bytes(64.0 * 1_048_576.0, false),
    );
    let unpacked = store_bytes(64.0 * 1_048_576.0, true);
    // A copy of 18,000 rows is larger than what 16 projects' names and lists add.
    assert!(
        smaller > unpacked + 100_000,
        "no packed copy: {smaller} bytes against {unpacked}"
    );
    assert_eq!(largest, smaller);
}

/// The engine's memory grows by 2 MiB steps (src/memory.rs), not by the
/// 64 KiB pages an allocation lacks: every growth costs the host about the
/// same, whatever it adds.
#[wasm_bindgen_test]
fn memory_grows_in_steps_not_pages() {
    let pages = || core::arch::wasm32::memory_size::<0>();
    let (start, mut last, mut growths) = (pages(), pages(), 0);
    let mut held = Vec::new();
    // 4 KiB allocations (past what earlier tests left free) until the memory
    // has grown by 16 MiB (256 pages).
    while last - start < 256 && held.len() < 1 << 16 {
        held.push(vec![1u8; 4096]);
        let now = pages();
        if now != last {
            assert!(now - last >= 32, "grew by {} pages", now - last);
            growths += 1;
            last = now;
        }
    }
    assert!(last - start >= 256, "the memory did not grow");
    assert!(growths <= 9, "16 MiB grew the memory {growths} times");
    drop(std::hint::black_box(held));
}
