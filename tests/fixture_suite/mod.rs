//! The shared fixture suite: saved batches and expected results under
//! `tests/fixtures/`, run natively (`tests/fixtures.rs`) and in wasm through the
//! JS API (`tests/wasm.rs`). Each environment supplies a `Driver`.
#![allow(
    dead_code,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use serde_json::Value;

pub const FIXTURES: [(&str, &str); 4] = [
    (
        "invocation_stats",
        include_str!("../fixtures/invocation_stats.json"),
    ),
    ("logs_all", include_str!("../fixtures/logs_all.json")),
    ("api_counts", include_str!("../fixtures/api_counts.json")),
    ("errors", include_str!("../fixtures/errors.json")),
];

pub const FIXTURE_KEY: &str = "fixture-key";

/// What a query gave: the parsed body, or (status, code, message).
pub enum Outcome {
    Rows(Value),
    Failed(u16, String, String),
}

/// One environment's way of running the fixture steps.
pub trait Driver {
    fn new(api_keys: &[&str], now_ms: f64) -> Self;
    /// Returns `{accepted, rejected}` as JSON.
    fn ingest(&mut self, stream: &str, batch: &str) -> Value;
    fn query(&mut self, endpoint: &str, params: &Value, api_key: Option<&str>) -> Outcome;
}

/// A batch's text: a JSON array, or NDJSON where string entries are written as raw lines.
pub fn batch_text(batch: &Value) -> String {
    let entries = batch["entries"].as_array().expect("entries");
    match batch["format"].as_str() {
        Some("ndjson") => entries
            .iter()
            .map(|e| e.as_str().map_or_else(|| e.to_string(), str::to_owned))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => Value::Array(entries.clone()).to_string(),
    }
}

/// Numbers compare as f64 (so 20 == 20.0 and JS's rounding of big integers is
/// tolerated); everything else structurally, and object key order does not matter.
pub fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            let (x, y) = (x.as_f64().unwrap(), y.as_f64().unwrap());
            x == y || (x - y).abs() <= 1e-9 * x.abs().max(y.abs())
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same(x, y))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
        }
        _ => a == b,
    }
}

/// `*` at either end of `pattern` matches anything.
fn glob(pattern: &str, text: &str) -> bool {
    match (pattern.strip_prefix('*'), pattern.strip_suffix('*')) {
        (Some(rest), _) if rest.ends_with('*') => text.contains(&rest[..rest.len() - 1]),
        (Some(rest), _) => text.ends_with(rest),
        (None, Some(rest)) => text.starts_with(rest),
        (None, None) => text == pattern,
    }
}

fn now_ms(fixture: &Value) -> f64 {
    let now = fixture["now"].as_str().expect("now");
    log_endpoints::timestamp::parse_iso(now).expect("fixture now") as f64 / 1000.0
}

/// Runs every fixture; returns the failures, one line each.
pub fn run_all<D: Driver>() -> Vec<String> {
    let mut failures = Vec::new();
    for (name, text) in FIXTURES {
        let fixture: Value = serde_json::from_str(text).expect("fixture JSON");
        let mut driver = D::new(&[FIXTURE_KEY], now_ms(&fixture));
        for (i, batch) in fixture["batches"]
            .as_array()
            .expect("batches")
            .iter()
            .enumerate()
        {
            let report = driver.ingest(
                batch["stream"].as_str().expect("stream"),
                &batch_text(batch),
            );
            let expected = &fixture["expect_ingest"][i];
            if report["accepted"] != expected["accepted"] {
                failures.push(format!(
                    "{name}: batch {i} accepted {} (expected {})",
                    report["accepted"], expected["accepted"]
                ));
            }
            let got = report["rejected"].as_array().cloned().unwrap_or_default();
            let want = expected["rejected"].as_array().cloned().unwrap_or_default();
            let matches = got.len() == want.len()
                && got.iter().zip(&want).all(|(g, w)| {
                    g["index"] == w["index"]
                        && glob(
                            w["reason"].as_str().unwrap(),
                            g["reason"].as_str().unwrap_or(""),
                        )
                });
            if !matches {
                failures.push(format!(
                    "{name}: batch {i} rejected {got:?}, expected {want:?}"
                ));
            }
        }
        for (i, query) in fixture["queries"]
            .as_array()
            .expect("queries")
            .iter()
            .enumerate()
        {
            let endpoint = query["endpoint"].as_str().expect("endpoint");
            let api_key = match query.get("api_key") {
                None => Some(FIXTURE_KEY),
                Some(Value::Null) => None,
                Some(key) => key.as_str(),
            };
            let label = format!("{name} query {i} ({endpoint} {})", query["params"]);
            match (
                driver.query(endpoint, &query["params"], api_key),
                query.get("error"),
            ) {
                (Outcome::Rows(body), None) => {
                    if !same(&body["result"], &query["result"]) {
                        failures.push(format!(
                            "{label}: got {}, expected {}",
                            body["result"], query["result"]
                        ));
                    }
                }
                (Outcome::Failed(status, code, message), Some(error)) => {
                    let message_ok = error
                        .get("message")
                        .and_then(Value::as_str)
                        .is_none_or(|p| glob(p, &message));
                    if error["status"] != status || error["code"] != code.as_str() || !message_ok {
                        failures.push(format!(
                            "{label}: got error {status} {code} `{message}`, expected {error}"
                        ));
                    }
                }
                (Outcome::Rows(body), Some(error)) => {
                    failures.push(format!("{label}: got rows {body}, expected error {error}"))
                }
                (Outcome::Failed(status, code, message), None) => {
                    failures.push(format!("{label}: got error {status} {code} `{message}`"))
                }
            }
        }
    }
    failures
}
