//! Prints random logs, queries and this native build's answers as JSON, for
//! `tests/node/wasm-native.test.mjs`, which gives the same logs and queries to
//! the wasm build and requires identical answers.
//!
//!   cargo run -p log-endpoints-tools --bin random_cases -- [cases] [seed]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use log_endpoints::{ApiKey, Config, LogEndpoints, Params};
use log_endpoints_tools::random_logs::{entries, ndjson, query};
use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::{Config as RunnerConfig, RngAlgorithm, TestRng, TestRunner};
use serde_json::{json, Value};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let cases: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(40);
    let seed: u64 = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(1);
    let mut seed_bytes = [0u8; 32];
    seed_bytes[..8].copy_from_slice(&seed.to_le_bytes());
    let mut runner = TestRunner::new_with_rng(
        RunnerConfig::default(),
        TestRng::from_seed(RngAlgorithm::ChaCha, &seed_bytes),
    );
    let strategy = (entries(150), proptest::collection::vec(query(), 1..16));
    let mut out = Vec::new();
    for _ in 0..cases {
        let (logs, queries) = strategy.new_tree(&mut runner).unwrap().current();
        let mut svc = LogEndpoints::new(Config {
            api_keys: vec![ApiKey::new("k").unwrap()],
            ..Config::default()
        });
        let mut batches = Vec::new();
        for stream in ["edge_logs", "function_edge_logs"] {
            let text = ndjson(logs.iter().filter(|e| e.stream == stream).map(|e| &e.value));
            let report = svc.ingest(stream, text.as_bytes()).unwrap();
            batches.push(json!({"stream": stream, "ndjson": text, "accepted": report.accepted,
                "rejected": report.rejected.iter().map(|r| json!([r.index, r.reason])).collect::<Vec<_>>()}));
        }
        let queries: Vec<Value> = queries
            .iter()
            .map(|q| {
                let params = Params::from_pairs(q.params.iter().cloned()).unwrap();
                let answer = match svc.query(q.endpoint, &params, Some("k"), q.now) {
                    Ok(o) => json!({"body": &*o.body}),
                    Err(e) => json!({"status": e.status(), "code": e.code(), "message": e.to_string()}),
                };
                json!({"endpoint": q.endpoint, "params": q.params, "nowUs": q.now, "answer": answer})
            })
            .collect();
        out.push(json!({"batches": batches, "queries": queries}));
    }
    println!("{}", Value::Array(out));
}
