//! Splitting a batch by project: each project's part, ingested into a store of
//! its own, answers that project's queries as one store of the whole batch does,
//! and the refusals are the ones ingesting the whole batch reports.
use log_endpoints::{ApiKey, Config, LogEndpoints, Params};
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
fn a_mixed_batch_is_split_by_project_with_the_batch_s_own_indexes() {
    let batch = [
        r#"{"id":"a","timestamp":1,"project":"p1","metadata":[]}"#,
        r#"{"id":"b","timestamp":2,"project":"p2"}"#,
        r#"not json"#,
        r#"{"id":"c","timestamp":3,"project":"p1"}"#,
        r#"{"id":"d","timestamp":4}"#,
        r#"{"timestamp":5,"project":"p2"}"#,
    ]
    .join("\n");
    let split = service()
        .split_by_project("edge_logs", batch.as_bytes())
        .unwrap();
    let parts: Vec<(Option<&str>, &[usize])> = split
        .parts
        .iter()
        .map(|p| (p.project.as_deref(), p.indexes.as_slice()))
        .collect();
    assert_eq!(
        parts,
        [
            (None, &[4][..]),
            (Some("p1"), &[0, 3][..]),
            (Some("p2"), &[1][..])
        ]
    );
    let report = service().ingest("edge_logs", batch.as_bytes()).unwrap();
    assert_eq!(split.rejected, report.rejected);
    assert_eq!(split.rejected_total, 2);
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
        .split_by_project("function_edge_logs", batch.as_bytes())
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
    let error = svc.split_by_project("edge_logs", b"{}\n{}").unwrap_err();
    assert_eq!(error.code(), "payload_too_large");
    assert_eq!(
        svc.split_by_project("nope", b"{}").unwrap_err().code(),
        "unknown_stream"
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn each_project_s_store_answers_as_one_store(
        (ours, tenants) in (entries(100), other_tenants(200)),
        queries in prop::collection::vec(query(), 1..10),
    ) {
        let all: Vec<Entry> = ours.into_iter().chain(tenants).collect();
        let mut whole = service();
        let mut shards: std::collections::HashMap<Option<String>, LogEndpoints> = Default::default();
        for stream in ["edge_logs", "function_edge_logs"] {
            let text = batch(&all, stream);
            whole.ingest(stream, text.as_bytes()).unwrap();
            let split = whole.split_by_project(stream, text.as_bytes()).unwrap();
            for part in split.parts {
                let shard = shards.entry(part.project.clone()).or_insert_with(service);
                let taken = shard.ingest(stream, part.body.as_bytes()).unwrap();
                prop_assert_eq!(taken.accepted, part.indexes.len());
            }
        }
        for q in queries.iter().filter(|q| q.endpoint != "usage.api-counts") {
            let project = q.params.iter().find(|(k, _)| k == "project").map(|(_, v)| v.clone());
            let expected = answer(&mut whole, q.endpoint, &q.params, q.now);
            let got = match shards.get_mut(&project) {
                Some(shard) => answer(shard, q.endpoint, &q.params, q.now),
                // A project no entry named: an empty store answers.
                None => answer(&mut service(), q.endpoint, &q.params, q.now),
            };
            prop_assert_eq!(got, expected, "{:?}", q);
        }
    }
}
