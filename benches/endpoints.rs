//! The native half of the benchmark (scripts/bench.mjs drives it and prints the
//! table): ingests the two NDJSON files in the same batches the wasm side uses,
//! runs the shared query plan, and prints its timings as JSON.
//!
//!   cargo bench --bench endpoints -- --edge E.ndjson --functions F.ndjson --plan plan.json
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

use std::time::Instant;

use log_endpoints::{ApiKey, Config, Limits, LogEndpoints, Params};
use serde_json::{json, Value};

/// Batches are cut at a line end near this size, on both sides of the comparison.
const BATCH_BYTES: usize = 32 << 20;

fn arg(name: &str) -> Option<String> {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1).cloned())
}

fn batches(bytes: &[u8]) -> impl Iterator<Item = &[u8]> {
    let mut rest = bytes;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let cut = if rest.len() <= BATCH_BYTES {
            rest.len()
        } else {
            rest[..BATCH_BYTES]
                .iter()
                .rposition(|&b| b == b'\n')
                .map_or(rest.len(), |i| i + 1)
        };
        let (batch, tail) = rest.split_at(cut);
        rest = tail;
        Some(batch)
    })
}

/// One run's parameters from the plan (a JSON object of strings).
fn params(run: &Value) -> Params {
    Params::from_pairs(
        run.as_object()
            .unwrap()
            .iter()
            .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_owned())),
    )
    .unwrap()
}

fn ms(start: Instant) -> f64 {
    start.elapsed().as_secs_f64() * 1e3
}

fn main() {
    let plan: Value =
        serde_json::from_str(&std::fs::read_to_string(arg("--plan").expect("--plan")).unwrap())
            .unwrap();
    let now_us = plan["nowUs"].as_i64().unwrap();
    let warm_up_ms = plan["warmUpMs"]
        .as_f64()
        .expect("the plan's warmUpMs (bench/plan.mjs)");
    let mut svc = LogEndpoints::new(Config {
        api_keys: vec![ApiKey::new("bench").unwrap()],
        limits: Limits {
            max_store_bytes: usize::MAX,
            ..Limits::default()
        },
        block_storage: None,
    });
    let mut ingest = serde_json::Map::new();
    for (stream, flag) in [
        ("edge_logs", "--edge"),
        ("function_edge_logs", "--functions"),
    ] {
        let bytes = std::fs::read(arg(flag).expect(flag)).unwrap();
        let mut took = 0.0;
        let mut accepted = 0;
        for batch in batches(&bytes) {
            let start = Instant::now();
            let report = svc.ingest(stream, batch).unwrap();
            took += ms(start);
            assert_eq!(report.rejected_total, 0, "{:?}", report.rejected.first());
            accepted += report.accepted;
        }
        ingest.insert(
            stream.into(),
            json!({"ms": took, "bytes": bytes.len(), "entries": accepted}),
        );
    }

    let mut queries = serde_json::Map::new();
    for (name, entry) in plan["queries"].as_object().unwrap() {
        let endpoint = entry["endpoint"].as_str().unwrap();
        let mut times = Vec::new();
        let mut rows = Vec::new();
        // Warm-up (bench/plan.mjs, WARM_UP_MS), not timed.
        let warm = params(entry["runs"].as_array().unwrap().last().unwrap());
        let warm_started = Instant::now();
        loop {
            svc.clear_cache();
            std::hint::black_box(svc.query(endpoint, &warm, Some("bench"), now_us).unwrap());
            if ms(warm_started) >= warm_up_ms {
                break;
            }
        }
        for run in entry["runs"].as_array().unwrap() {
            let run = params(run);
            svc.clear_cache();
            let start = Instant::now();
            let out = svc.query(endpoint, &run, Some("bench"), now_us).unwrap();
            times.push(ms(start));
            assert!(
                !out.cache.is_some_and(|c| c.hit),
                "{name}: every timed run must be uncached"
            );
            let body: Value = serde_json::from_str(&out.body).unwrap();
            rows.push(body["result"].as_array().map_or(0, Vec::len));
        }
        // Cache hit: the first run's parameters again.
        let first = params(&entry["runs"][0]);
        let mut hits = Vec::new();
        for _ in 0..entry["runs"].as_array().unwrap().len() {
            let start = Instant::now();
            let out = svc.query(endpoint, &first, Some("bench"), now_us).unwrap();
            hits.push(ms(start));
            std::hint::black_box(out);
        }
        queries.insert(
            name.clone(),
            json!({"ms": times, "rows": rows, "hitMs": hits}),
        );
    }

    let mut floor = Vec::new();
    for _ in 0..20 {
        let start = Instant::now();
        std::hint::black_box(svc.scan_floor());
        floor.push(ms(start));
    }
    let stats = svc.stats();
    println!(
        "{}",
        json!({
            "ingest": ingest,
            "queries": queries,
            "floorMs": floor,
            "storeBytes": stats.store_bytes,
            "edgeEntries": stats.edge_entries,
            "functionRows": stats.function_rows,
        })
    );
}
