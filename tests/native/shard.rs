//! The sharded deployment's rules, run natively: a batch split by shard
//! (project and day), each part ingested into a store of its own, the calls
//! planned, looked up in the directory, asked of those shards (newest day first
//! for logs.all) and the answers merged, answers as one store of every entry
//! does; the refusals are the ones ingesting the whole batch reports.
use std::collections::HashMap;

use log_endpoints::{ApiKey, Config, LogEndpoints, Params, ShardDirectory};
use log_endpoints_tools::random_logs::{entries, ndjson, other_tenants, query, Entry};
use proptest::prelude::*;

const KEY: &str = "shard-key";

fn service() -> LogEndpoints {
    LogEndpoints::new(Config {
        api_keys: vec![ApiKey::new(KEY).unwrap()],
        ..Config::default()
    })
}

fn batch(entries: &[Entry], stream: &str) -> String {
    ndjson(
        entries
            .iter()
            .filter(|e| e.stream == stream)
            .map(|e| &e.value),
    )
}

fn answer(svc: &mut LogEndpoints, endpoint: &str, params: &[(String, String)], now: i64) -> String {
    let params = Params::from_pairs(params.iter().cloned()).unwrap();
    match svc.query(endpoint, &params, Some(KEY), now) {
        Ok(out) => out.body.to_string(),
        Err(e) => format!("error:{}", e.code()),
    }
}

#[test]
fn a_mixed_batch_is_split_by_shard_with_the_batch_s_own_indexes() {
    let batch = [
        r#"{"id":"a","timestamp":1,"project":"p1","metadata":[]}"#,
        r#"{"id":"b","timestamp":2,"project":"p2"}"#,
        r#"not json"#,
        r#"{"id":"c","timestamp":3,"project":"p1"}"#,
        r#"{"id":"e","timestamp":1000000000000000,"project":"p1"}"#,
        r#"{"id":"d","timestamp":4}"#,
        r#"{"timestamp":5,"project":"p2"}"#,
    ]
    .join("\n");
    let split = service()
        .split_by_shard("edge_logs", batch.as_bytes())
        .unwrap();
    let parts: Vec<(&str, Option<&str>, &[usize])> = split
        .parts
        .iter()
        .map(|p| (p.shard.as_str(), p.project.as_deref(), p.indexes.as_slice()))
        .collect();
    assert_eq!(
        parts,
        [
            ("1970-01-01/none", None, &[5][..]),
            ("1970-01-01/p/p1", Some("p1"), &[0, 3][..]),
            ("1970-01-01/p/p2", Some("p2"), &[1][..]),
            ("2001-09-09/p/p1", Some("p1"), &[4][..]),
        ]
    );
    let report = service().ingest("edge_logs", batch.as_bytes()).unwrap();
    assert_eq!(split.report.rejected, report.rejected);
    assert_eq!(split.report.rejected_total, 2);
    // Each part is a batch a store takes whole.
    for part in &split.parts {
        let taken = service().ingest("edge_logs", part.body.as_bytes()).unwrap();
        assert_eq!(taken.accepted, part.indexes.len());
    }
}

#[test]
fn a_function_entry_naming_two_projects_goes_to_both() {
    let batch = r#"{"id":"f","timestamp":1,"metadata":[{"project_ref":"p1","response":[{"status_code":200}]},{"project_ref":"p2"}]}"#;
    let split = service()
        .split_by_shard("function_edge_logs", batch.as_bytes())
        .unwrap();
    let projects: Vec<Option<&str>> = split.parts.iter().map(|p| p.project.as_deref()).collect();
    assert_eq!(projects, [Some("p1"), Some("p2")]);
    assert!(split.parts.iter().all(|p| p.indexes == [0]));
}

#[test]
fn batch_limits_apply_as_to_ingest() {
    let svc = LogEndpoints::new(Config {
        limits: log_endpoints::Limits {
            max_batch_entries: 1,
            ..Default::default()
        },
        ..Config::default()
    });
    let error = svc.split_by_shard("edge_logs", b"{}\n{}").unwrap_err();
    assert_eq!(error.code(), "payload_too_large");
    assert_eq!(
        svc.split_by_shard("nope", b"{}").unwrap_err().code(),
        "unknown_stream"
    );
}

/// What the worker does for a call: plan it, ask the shards the directory
/// names in the core's waves (logs.all newest day first, stopping once
/// enough rows came), and answer with the merge.
fn sharded_answer(
    front: &mut LogEndpoints,
    directory: &ShardDirectory,
    shards: &mut HashMap<String, LogEndpoints>,
    endpoint: &str,
    params: &[(String, String)],
    now: i64,
) -> String {
    let params = Params::from_pairs(params.iter().cloned()).unwrap();
    let path = format!("/api/endpoints/query/{endpoint}");
    let mut query = match front.shard_query(&path, &params, Some(KEY), now) {
        Ok(query) => query,
        Err(e) => return format!("error:{}", e.code()),
    };
    query.ask(directory.lookup(query.plan()));
    loop {
        let wave = query.next_wave();
        if wave.is_empty() {
            break;
        }
        for name in wave {
            let shard = shards
                .get_mut(&name)
                .expect("the directory names only shards that took entries");
            let out = shard.query_path(&path, &params, Some(KEY), now).unwrap();
            query.add(out).unwrap();
        }
    }
    front.answer_shard_query(&query).unwrap().body.to_string()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn the_shards_answer_as_one_store(
        (ours, tenants) in (entries(100), other_tenants(200)),
        queries in prop::collection::vec(query(), 1..10),
    ) {
        let all: Vec<Entry> = ours.into_iter().chain(tenants).collect();
        let mut whole = service();
        let mut directory = ShardDirectory::default();
        let mut shards: HashMap<String, LogEndpoints> = HashMap::new();
        for stream in ["edge_logs", "function_edge_logs"] {
            let text = batch(&all, stream);
            whole.ingest(stream, text.as_bytes()).unwrap();
            let split = whole.split_by_shard(stream, text.as_bytes()).unwrap();
            for part in split.parts {
                directory.add(&part.project_key, &part.day, &part.url_bits);
                let shard = shards.entry(part.shard.clone()).or_insert_with(service);
                let taken = shard.ingest(stream, part.body.as_bytes()).unwrap();
                prop_assert_eq!(taken.accepted, part.indexes.len());
            }
        }
        let mut front = service();
        for q in &queries {
            let expected = answer(&mut whole, q.endpoint, &q.params, q.now);
            let got = sharded_answer(&mut front, &directory, &mut shards, q.endpoint, &q.params, q.now);
            prop_assert_eq!(got, expected, "{:?}", q);
        }
    }
}
