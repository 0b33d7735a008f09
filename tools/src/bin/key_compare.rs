//! Checks one presented API key many times against a service holding three keys;
//! run under `valgrind --tool=callgrind` by tests/node/constant-time.test.mjs to
//! show that the instruction count does not depend on where a wrong key differs.
//!
//!   cargo run --release -p log-endpoints-tools --bin key_compare -- <presented key> [times]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use log_endpoints::{ApiKey, Config, LogEndpoints, Params};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let presented = args.get(1).cloned().unwrap_or_default();
    let times: usize = args.get(2).and_then(|t| t.parse().ok()).unwrap_or(20_000);
    let mut svc = LogEndpoints::new(Config {
        api_keys: [
            "first-secret-key-0000000000000001",
            "second-secret-key-000000000000002",
            "third-secret-key-0000000000000003",
        ]
        .into_iter()
        .map(|k| ApiKey::new(k).unwrap())
        .collect(),
        ..Config::default()
    });
    let params = Params::from_pairs([("project", "p"), ("project_tier", "FREE")]).unwrap();
    let mut accepted = 0;
    for _ in 0..times {
        if std::hint::black_box(svc.query("logs.all", &params, Some(&presented), 0)).is_ok() {
            accepted += 1;
        }
    }
    println!("{accepted}");
}
