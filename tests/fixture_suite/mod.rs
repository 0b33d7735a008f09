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
    failures.extend(strings_at_every_offset::<D>());
    failures
}

/// Edge entries whose strings hold an escape, or a control byte (which
/// JSON refuses), after 0 to 39 plain bytes, so that each falls at every
/// place of the reader's 8- and 16-byte steps: the escapes read back
/// decoded, and every entry with a control byte is refused.
fn strings_at_every_offset<D: Driver>() -> Vec<String> {
    const ESCAPES: [(&str, &str); 5] = [
        (r#"\""#, "\""),
        (r"\\", "\\"),
        (r"\u00e9", "é"),
        (r"\n", "\n"),
        (r"\/", "/"),
    ];
    const PLAIN: usize = 40;
    let fixture: Value = serde_json::from_str(FIXTURES[1].1).expect("fixture JSON");
    let mut driver = D::new(&[FIXTURE_KEY], now_ms(&fixture));
    let mut failures = Vec::new();
    let line = |id: &str, project: &str, message: &str, header: &str| {
        format!(
            r#"{{"id":"{id}","timestamp":"2026-11-20T12:00:00Z","project":"{project}","event_message":"{message}","metadata":[{{"request":[{{"url":"https://{project}.supabase.co/{message}","path":"/rest/v1/x","headers":[{{"user_agent":"{header}"}}]}}]}}]}}"#
        )
    };
    for (kind, (escape, decoded)) in ESCAPES.iter().enumerate() {
        let project = format!("strings-{kind}");
        let mut lines = Vec::new();
        for plain in 0..PLAIN {
            let message = format!("{}{escape}b", "a".repeat(plain));
            lines.push(line(
                &format!("{kind}-{plain}"),
                &project,
                &message,
                &message,
            ));
            // A tab or a 0x01 as it is, in a field read and in one skipped.
            let control = ["\t", "\u{1}"][plain % 2];
            let bad = format!("{}{control}b", "a".repeat(plain));
            lines.push(line("bad", &project, &bad, "ok"));
            lines.push(line("bad", &project, "ok", &bad));
        }
        let report = driver.ingest("edge_logs", &lines.join("\n"));
        let refused: Vec<u64> = report["rejected"]
            .as_array()
            .map(|r| r.iter().filter_map(|r| r["index"].as_u64()).collect())
            .unwrap_or_default();
        let bad_lines: Vec<u64> = (0..lines.len() as u64).filter(|i| i % 3 != 0).collect();
        if report["accepted"] != PLAIN || refused != bad_lines {
            failures.push(format!("strings {escape}: ingest said {report}"));
        }
        let params = serde_json::json!({ "project": project, "project_tier": "FREE" });
        let Outcome::Rows(body) = driver.query("logs.all", &params, Some(FIXTURE_KEY)) else {
            failures.push(format!("strings {escape}: logs.all failed"));
            continue;
        };
        let rows = body["result"].as_array().cloned().unwrap_or_default();
        for plain in 0..PLAIN {
            let id = format!("{kind}-{plain}");
            let want = format!("{}{decoded}b", "a".repeat(plain));
            let row = rows.iter().find(|r| r["id"] == id.as_str());
            let message = row.map(|r| &r["event_message"]);
            let url = row.map(|r| &r["metadata"][0]["request"][0]["url"]);
            let want_url = format!("https://{project}.supabase.co/{want}");
            if message.and_then(Value::as_str) != Some(want.as_str())
                || url.and_then(Value::as_str) != Some(want_url.as_str())
            {
                failures.push(format!("strings {id}: read {row:?}, expected {want:?}"));
            }
        }
    }
    failures
}
