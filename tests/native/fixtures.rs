//! The shared fixture suite, run natively against the core.
use crate::fixture_suite::{self, Driver, Outcome};
use log_endpoints::{ApiKey, Config, LogEndpoints, Params};
use serde_json::Value;

struct Native {
    service: LogEndpoints,
    now_us: i64,
}

impl Driver for Native {
    fn new(api_keys: &[&str], now_ms: f64) -> Self {
        let api_keys = api_keys.iter().map(|k| ApiKey::new(*k).unwrap()).collect();
        Native {
            service: LogEndpoints::new(Config {
                api_keys,
                ..Config::default()
            }),
            now_us: (now_ms * 1000.0) as i64,
        }
    }

    fn ingest(&mut self, stream: &str, batch: &str) -> Value {
        serde_json::to_value(self.service.ingest(stream, batch.as_bytes()).unwrap()).unwrap()
    }

    fn query(&mut self, endpoint: &str, params: &Value, api_key: Option<&str>) -> Outcome {
        let pairs = params
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_owned()));
        let params = Params::from_pairs(pairs).unwrap();
        match self.service.query(endpoint, &params, api_key, self.now_us) {
            Ok(out) => Outcome::Rows(serde_json::from_str(&out.body).unwrap()),
            Err(e) => Outcome::Failed(e.status(), e.code().to_owned(), e.to_string()),
        }
    }
}

#[test]
fn fixtures_native() {
    let failures = fixture_suite::run_all::<Native>();
    assert!(
        failures.is_empty(),
        "{} fixture failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
