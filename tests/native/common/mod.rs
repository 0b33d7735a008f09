//! Builders shared by the native integration tests.
use log_endpoints::{ApiKey, Config, Error, LogEndpoints, Params, QueryAnswer};
use serde_json::{json, Value};

/// 2026-11-20T12:29:56.789Z in microseconds.
pub const NOW: i64 = 1_795_177_796_789_000;
pub const SEC: i64 = 1_000_000;
pub const MIN: i64 = 60 * SEC;
pub const HOUR: i64 = 60 * MIN;
pub const DAY: i64 = 24 * HOUR;
pub const KEY: &str = "test-key";

pub fn service() -> LogEndpoints {
    LogEndpoints::new(Config {
        api_keys: vec![ApiKey::new(KEY).unwrap()],
        ..Config::default()
    })
}

/// A service's config with one query key and a store budget of `max_store_bytes`.
pub fn budget_config(key: &str, max_store_bytes: usize) -> Config {
    Config {
        api_keys: vec![ApiKey::new(key).unwrap()],
        limits: log_endpoints::Limits {
            max_store_bytes,
            ..Default::default()
        },
        block_storage: None,
    }
}

pub fn edge(id: &str, ts: i64, project: &str, path: &str) -> Value {
    json!({
        "id": id, "timestamp": ts, "event_message": format!("GET | 200 | {path}"), "project": project,
        "metadata": [{"request": [{"method": "GET", "path": path,
            "url": format!("https://{project}.supabase.co{path}")}], "response": [{"status_code": 200}]}]
    })
}

pub fn func(
    id: &str,
    ts: i64,
    project: &str,
    function: &str,
    exec: Option<f64>,
    status: i64,
) -> Value {
    json!({
        "id": id, "timestamp": ts, "event_message": "POST | 200",
        "metadata": [{"project_ref": project, "function_id": function, "execution_time_ms": exec,
            "response": [{"status_code": status}]}]
    })
}

pub fn ingest(svc: &mut LogEndpoints, stream: &str, entries: &[Value]) {
    let report = svc
        .ingest(
            stream,
            Value::Array(entries.to_vec()).to_string().as_bytes(),
        )
        .unwrap();
    assert_eq!(
        report.rejected,
        vec![],
        "fixture entries must all be accepted"
    );
    assert_eq!(report.accepted, entries.len());
}

pub fn run(
    svc: &mut LogEndpoints,
    endpoint: &str,
    params: &[(&str, &str)],
    now: i64,
) -> Result<QueryAnswer, Error> {
    svc.query(
        endpoint,
        &Params::from_pairs(params.iter().copied()).unwrap(),
        Some(KEY),
        now,
    )
}

/// The `result` rows of a successful query.
pub fn rows(svc: &mut LogEndpoints, endpoint: &str, params: &[(&str, &str)]) -> Vec<Value> {
    svc.clear_cache();
    let out =
        run(svc, endpoint, params, NOW).unwrap_or_else(|e| panic!("{endpoint} {params:?}: {e}"));
    let body: Value = serde_json::from_str(&out.body).unwrap();
    body["result"].as_array().unwrap().clone()
}

pub fn error(svc: &mut LogEndpoints, endpoint: &str, params: &[(&str, &str)]) -> Error {
    run(svc, endpoint, params, NOW).unwrap_err()
}
