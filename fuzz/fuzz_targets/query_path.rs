//! The whole `query` path: endpoint name or UUID, query string, key and clock all
//! from the input, over a store with entries of both streams. Every answer is a
//! JSON result or one of the contract's errors, and no error echoes the key.
#![no_main]

use std::sync::{Mutex, OnceLock};

use libfuzzer_sys::fuzz_target;
use log_endpoints::{ApiKey, Config, LogEndpoints, Params};

const KEY: &str = "k-0123456789-secret";
const RESTRICTED: &str = "k-restricted-secret";

/// One service for all runs (building it per run would dominate the time); the
/// cache is cleared before each run so runs do not depend on each other.
fn service() -> &'static Mutex<LogEndpoints> {
    static SERVICE: OnceLock<Mutex<LogEndpoints>> = OnceLock::new();
    SERVICE.get_or_init(|| {
        let mut svc = LogEndpoints::new(Config {
            api_keys: vec![
                ApiKey::new(KEY).expect("key"),
                ApiKey::new(RESTRICTED)
                    .expect("key")
                    .only_projects(&["alpha"]),
            ],
            ..Config::default()
        });
        let (edge, functions) = logs();
        svc.ingest("edge_logs", &edge).expect("edge logs");
        svc.ingest("function_edge_logs", &functions)
            .expect("function logs");
        Mutex::new(svc)
    })
}

fn logs() -> (Vec<u8>, Vec<u8>) {
    {
        let mut edge = String::new();
        let mut functions = String::new();
        for i in 0..300i64 {
            let project = ["alpha", "beta", "gamma"][(i % 3) as usize];
            let ts = 1_795_177_796_000_000 - i * 3_600_000_000 / 7;
            let path = [
                "/rest/v1/t",
                "/auth/v1/user",
                "/storage/v1/o",
                "/realtime/v1/ws",
            ][(i % 4) as usize];
            edge.push_str(&format!(
                r#"{{"id":"e{i}","timestamp":{ts},"project":"{project}","event_message":"GET {path}","metadata":[{{"request":[{{"url":"https://{project}.supabase.co{path}?q={i}","path":"{path}"}}]}}]}}"#
            ));
            edge.push('\n');
            functions.push_str(&format!(
                r#"{{"id":"f{i}","timestamp":{ts},"metadata":[{{"project_ref":"{project}","function_id":"fn{}","execution_time_ms":{},"response":[{{"status_code":{}}}]}}]}}"#,
                i % 5,
                (i * 37 % 1000) as f64 / 3.0,
                [200, 201, 404, 500][(i % 4) as usize]
            ));
            functions.push('\n');
        }
        (edge.into_bytes(), functions.into_bytes())
    }
}

const ENDPOINTS: [&str; 6] = [
    "functions.invocation-stats",
    "logs.all",
    "usage.api-counts",
    "not.an-endpoint",
    "0b5b1c0e-0000-5000-8000-000000000000",
    "",
];

fuzz_target!(|data: &[u8]| {
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    let mut svc = service()
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    svc.clear_cache();

    let text = String::from_utf8_lossy(rest);
    // Input layout: "<endpoint>\n<query string>" or just a query string.
    let (endpoint, query) = match text.split_once('\n') {
        Some((name, query)) if selector & 0x80 != 0 => (name.to_owned(), query),
        _ => (
            ENDPOINTS[usize::from(selector) % ENDPOINTS.len()].to_owned(),
            &*text,
        ),
    };
    let key = match (selector >> 3) & 3 {
        0 | 1 => Some(KEY),
        2 => Some(RESTRICTED),
        _ => None,
    };
    let now = 1_795_177_796_000_000 + i64::from(selector) * 61_000_000;
    let Ok(params) = Params::parse_query_string(query) else {
        return;
    };
    let mut first_body = None;
    for _ in 0..2 {
        // Twice: the second answer may come from the cache and must be the same.
        match svc.query(&endpoint, &params, key, now) {
            Ok(out) => {
                if let Some(first) = first_body.replace(out.body.clone()) {
                    assert_eq!(first, out.body);
                }
                let parsed: serde_json::Value =
                    serde_json::from_str(&out.body).expect("query body is JSON");
                assert!(parsed["result"]
                    .as_array()
                    .is_some_and(|rows| rows.len() <= 1000));
            }
            Err(error) => {
                assert!(matches!(error.status(), 400 | 401 | 403 | 404), "{error}");
                // A parameter value is named back in its error; a key never is,
                // unless the same text was also sent as a parameter or endpoint name.
                let message = error.to_string();
                for secret in [KEY, RESTRICTED] {
                    assert!(
                        !message.contains(secret) || text.contains(secret),
                        "{message}"
                    );
                }
                assert!(!error.to_string().contains("panicked"));
            }
        }
    }
});
