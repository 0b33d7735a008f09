//! Any bytes as a batch, into either stream or, through Logflare's ingest API
//! (as the edge worker prepares and keeps it), into a stream or another
//! source. The module must not panic; a refused batch leaves the store exactly
//! as it was; an accepted one adds exactly the entries it reports; and every
//! endpoint still answers over what was kept.
#![no_main]

use libfuzzer_sys::fuzz_target;
use log_endpoints::{Config, HttpRequest, LogEndpoints, Params};

const KEY: &str = "fuzz-key";
const INGEST_KEY: &str = "fuzz-ingest-key";
const NOW: i64 = 1_795_177_796_000_000;

fuzz_target!(|data: &[u8]| {
    let Some((&selector, batch)) = data.split_first() else {
        return;
    };
    let stream = if selector & 1 == 0 {
        "edge_logs"
    } else {
        "function_edge_logs"
    };
    let mut svc = LogEndpoints::new(Config {
        api_keys: vec![
            log_endpoints::ApiKey::new(KEY).expect("key"),
            log_endpoints::ApiKey::ingest(INGEST_KEY).expect("key"),
        ],
        ..Config::default()
    });
    // Something already in the store, so atomicity is observable.
    let seed = br#"{"id":"s","timestamp":1795177700000000,"project":"p","metadata":[{"project_ref":"p","function_id":"f","execution_time_ms":3,"response":[{"status_code":200}],"request":[{"url":"https://p.supabase.co/rest/v1/x","path":"/rest/v1/x"}]}]}"#;
    svc.ingest(stream, seed).expect("seed batch");
    let before = svc.stats();
    if selector & 2 != 0 {
        logflare_ingest(&mut svc, selector, batch);
    } else {
        match svc.ingest(stream, batch) {
            Ok(report) => {
                let after = svc.stats();
                if stream == "edge_logs" {
                    assert_eq!(after.edge_entries, before.edge_entries + report.accepted);
                } else {
                    assert!(after.function_rows >= before.function_rows);
                }
                assert!(report.rejected.len() <= report.rejected_total);
            }
            Err(error) => {
                assert_eq!(
                    svc.stats(),
                    before,
                    "a refused batch changed the store: {error}"
                );
                assert!(matches!(error.status(), 400 | 413), "{error}");
            }
        }
    }
    let catalog = svc.catalog();
    let mut projects = catalog.edge_projects;
    projects.extend(catalog.function_projects);
    for project in projects.iter().take(4) {
        for (endpoint, extra) in [
            ("functions.invocation-stats", "interval=7day"),
            ("logs.all", "project_tier=ENTERPRISE"),
            ("usage.api-counts", "interval=daily"),
        ] {
            let mut params = Params::new();
            if params
                .push("project".into(), regex_safe(endpoint, project))
                .is_err()
            {
                continue;
            }
            let (name, value) = extra.split_once('=').expect("pair");
            params.push(name.into(), value.into()).expect("param");
            if let Ok(out) = svc.query(endpoint, &params, Some(KEY), NOW) {
                // Valid JSON by the grammar (IgnoredAny: stored metadata may hold
                // numbers like 1e999 that f64 cannot, handed back as they came).
                serde_json::from_str::<serde::de::IgnoredAny>(&out.body)
                    .expect("query body is JSON");
                assert!(out.body.starts_with("{\"result\":[") && out.body.ends_with("]}"));
            }
        }
    }
});

/// The batch sent to Logflare's route (a source and content type picked by
/// `selector`), its record kept as the edge worker keeps it.
fn logflare_ingest(svc: &mut LogEndpoints, selector: u8, batch: &[u8]) {
    let sources = [
        "cloudflare.logs.prod",
        "deno-relay-logs",
        "gotrue.logs.prod",
    ];
    let source = sources[usize::from(selector >> 2) % sources.len()];
    let request = HttpRequest {
        method: "POST".into(),
        path: "/api/logs".into(),
        query: format!("source_name={source}"),
        api_key: Some(INGEST_KEY.into()),
        content_type: (selector & 0x40 != 0).then(|| "application/json".into()),
        ..HttpRequest::default()
    };
    let before = svc.stats();
    match svc.prepare_request(&request, batch, NOW) {
        Ok(prepared) => {
            let answer = &prepared.answers.as_ref().expect("answers").new;
            let report = &prepared.report;
            assert_eq!(answer.status == 200, report.accepted > 0, "{}", answer.body);
            assert!(matches!(answer.status, 200 | 400 | 422), "{}", answer.body);
            serde_json::from_str::<serde::de::IgnoredAny>(&answer.body).expect("answer is JSON");
            if prepared.shards > 0 {
                let kept = svc
                    .ingest_record(&prepared.record)
                    .expect("a prepared record is kept");
                let after = svc.stats();
                let others =
                    |s: &log_endpoints::StoreStats| s.other_sources.values().sum::<usize>();
                match source {
                    "cloudflare.logs.prod" => {
                        assert_eq!(after.edge_entries, before.edge_entries + report.accepted)
                    }
                    "gotrue.logs.prod" => {
                        assert_eq!(others(&after), others(&before) + report.accepted)
                    }
                    _ => assert_eq!(after.function_rows, before.function_rows + kept.accepted),
                }
            }
        }
        Err(error) => {
            assert_eq!(svc.stats(), before);
            assert!(matches!(error.status(), 400 | 413), "{error}");
        }
    }
}

/// usage.api-counts reads `project` as a regex; escape it so the query is valid.
fn regex_safe(endpoint: &str, project: &str) -> String {
    if endpoint != "usage.api-counts" {
        return project.to_owned();
    }
    project
        .chars()
        .flat_map(|c| {
            let escape = "\\.+*?()|[]{}^$#&-~ ".contains(c);
            escape.then_some('\\').into_iter().chain(std::iter::once(c))
        })
        .collect()
}
