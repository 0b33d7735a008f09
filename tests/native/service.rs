use crate::common::*;
use log_endpoints::{ApiKey, Config, EndpointKind, LogEndpoints, Params};
use serde_json::json;

#[test]
fn key_is_checked_before_anything_is_revealed() {
    let mut svc = service();
    let params = Params::from_pairs([("project", "p"), ("project_tier", "FREE")]).unwrap();
    let e = svc
        .query("no.such.endpoint", &params, None, NOW)
        .unwrap_err();
    assert_eq!((e.status(), e.code()), (401, "missing_api_key"));
    let e = svc
        .query("no.such.endpoint", &params, Some("wrong"), NOW)
        .unwrap_err();
    assert_eq!((e.status(), e.code()), (401, "invalid_api_key"));
    assert!(!e.to_string().contains("wrong"), "keys are never echoed");
    let e = svc
        .query("no.such.endpoint", &params, Some(KEY), NOW)
        .unwrap_err();
    assert_eq!((e.status(), e.code()), (404, "endpoint_not_found"));
    let e = svc
        .query("logs.all", &Params::new(), Some("wrong"), NOW)
        .unwrap_err();
    assert_eq!(e.status(), 401, "a bad key hides parameter errors too");
}

#[test]
fn name_and_uuid_give_the_same_answer() {
    let mut svc = service();
    ingest(
        &mut svc,
        "cloudflare.logs.prod",
        &[edge("a", NOW - MIN, "p", "/rest/v1/x")],
    );
    let id = EndpointKind::LogsAll.id().to_string();
    let by_name = run(
        &mut svc,
        "logs.all",
        &[("project", "p"), ("project_tier", "FREE")],
        NOW,
    )
    .unwrap();
    let by_id = run(
        &mut svc,
        &id,
        &[("project", "p"), ("project_tier", "FREE")],
        NOW,
    )
    .unwrap();
    assert_eq!(by_name.body, by_id.body);
    assert!(by_name.body.contains("\"id\":\"a\""));
}

#[test]
fn restricted_keys_get_403() {
    let mut svc = LogEndpoints::new(Config {
        api_keys: vec![
            ApiKey::new("logs-only")
                .unwrap()
                .only_endpoints(&["logs.all"])
                .unwrap(),
            ApiKey::new("project-p").unwrap().only_projects(&["p"]),
        ],
        ..Config::default()
    });
    let logs = Params::from_pairs([("project", "p"), ("project_tier", "FREE")]).unwrap();
    let stats = Params::from_pairs([("project", "p"), ("interval", "1hr")]).unwrap();
    assert!(svc.query("logs.all", &logs, Some("logs-only"), NOW).is_ok());
    let e = svc
        .query("functions.invocation-stats", &stats, Some("logs-only"), NOW)
        .unwrap_err();
    assert_eq!((e.status(), e.code()), (403, "forbidden"));
    assert!(svc
        .query("functions.invocation-stats", &stats, Some("project-p"), NOW)
        .is_ok());
    let other = Params::from_pairs([("project", "q"), ("project_tier", "FREE")]).unwrap();
    assert_eq!(
        svc.query("logs.all", &other, Some("project-p"), NOW)
            .unwrap_err()
            .status(),
        403
    );
    // A wider pattern than the literal project is refused for a project-restricted key.
    let pattern = Params::from_pairs([("project", "p|q"), ("interval", "hourly")]).unwrap();
    assert_eq!(
        svc.query("usage.api-counts", &pattern, Some("project-p"), NOW)
            .unwrap_err()
            .status(),
        403
    );
    assert!(ApiKey::new("x").unwrap().only_endpoints(&["nope"]).is_err());
}

#[test]
fn cache_hit_expiry_and_warming() {
    let mut svc = service();
    ingest(
        &mut svc,
        "function_edge_logs",
        &[func("a", NOW - MIN, "p", "f", Some(1.0), 200)],
    );
    let params = [("project", "p"), ("interval", "1hr")];
    let first = run(&mut svc, "functions.invocation-stats", &params, NOW).unwrap();
    let status = first.cache.unwrap();
    assert!(!status.hit);
    assert_eq!(status.max_age_seconds, 900);

    // New data does not show until the cached result expires (as in the reference).
    ingest(
        &mut svc,
        "function_edge_logs",
        &[func("b", NOW - MIN, "p", "f", Some(1.0), 200)],
    );
    let hit = run(
        &mut svc,
        "functions.invocation-stats",
        &params,
        NOW + 100 * SEC,
    )
    .unwrap();
    assert!(hit.cache.unwrap().hit);
    assert_eq!(hit.cache.unwrap().max_age_seconds, 800);
    assert_eq!(hit.body, first.body);

    // Errors are never cached.
    assert!(run(
        &mut svc,
        "functions.invocation-stats",
        &[("project", "p")],
        NOW
    )
    .is_err());
    assert_eq!(svc.stats().cached_results, 1);

    // At 900 s the entry has expired: a miss, recomputed with both entries.
    let expired = run(
        &mut svc,
        "functions.invocation-stats",
        &params,
        NOW + 900 * SEC,
    )
    .unwrap();
    assert!(!expired.cache.unwrap().hit);
    assert!(expired.body.contains("\"count\":2"));

    // Warming after 300 s re-runs it; the next read is a hit with a fresh max-age.
    ingest(
        &mut svc,
        "function_edge_logs",
        &[func("c", NOW + 900 * SEC, "p", "f", Some(1.0), 200)],
    );
    let report = svc.warm_cache(NOW + 1200 * SEC);
    assert_eq!(report.refreshed, 1);
    let warmed = run(
        &mut svc,
        "functions.invocation-stats",
        &params,
        NOW + 1201 * SEC,
    )
    .unwrap();
    assert!(warmed.cache.unwrap().hit);
    assert_eq!(warmed.cache.unwrap().max_age_seconds, 899);
    // The 1hr window at now + 1200 s holds a and b (one bucket) and c (another).
    assert!(
        warmed.body.contains("\"count\":2") && warmed.body.contains("\"count\":1"),
        "{}",
        warmed.body
    );

    // An entry nobody asked for in a whole cache period is dropped, not warmed.
    let report = svc.warm_cache(NOW + 1201 * SEC + 900 * SEC);
    assert_eq!((report.refreshed, report.kept), (0, 0));
}

/// Callers asking ever new parameters do not grow the cache without end:
/// past its size, the least recently used answers make room (cached answers
/// are 4 MiB at most, 256 bytes and a body each: 16,384 at the most here).
#[test]
fn the_cache_keeps_the_most_recently_used_answers_within_its_size() {
    the_cache_keeps_the_most_recently_used(|n| n as i64);
}

/// A host's clock in milliseconds gives many calls one `now`: they are
/// still used in an order, and the least recently used still go first.
#[test]
fn answers_used_at_one_now_make_room_least_recently_used_first() {
    the_cache_keeps_the_most_recently_used(|_| 0);
}

/// Asks 20,000 answers, the first again every 1,000th; the `n`th at `NOW + at(n)`.
fn the_cache_keeps_the_most_recently_used(at: fn(usize) -> i64) {
    let mut svc = service();
    let ask = |svc: &mut LogEndpoints, n: usize, at: i64| {
        let project = format!("p{n}");
        let params = [("project", project.as_str()), ("interval", "1hr")];
        let answer = run(svc, "functions.invocation-stats", &params, NOW + at).unwrap();
        answer.cache.unwrap().hit
    };
    for n in 0..20_000 {
        assert!(!ask(&mut svc, n, at(n)));
        if n % 1000 == 0 {
            assert!(ask(&mut svc, 0, at(n)), "asked again at {n}, so kept");
        }
    }
    let kept = svc.stats().cached_results;
    assert!((10_000..16_384).contains(&kept), "{kept} answers kept");
    assert!(ask(&mut svc, 19_999, at(20_000)), "the newest is kept");
    assert!(
        ask(&mut svc, 0, at(20_001)),
        "one asked again and again is kept"
    );
    assert!(
        !ask(&mut svc, 1, at(20_002)),
        "the least recently used went first"
    );
}

#[test]
fn logs_all_is_never_cached() {
    let mut svc = service();
    let out = run(
        &mut svc,
        "logs.all",
        &[("project", "p"), ("project_tier", "FREE")],
        NOW,
    )
    .unwrap();
    assert_eq!(out.cache, None);
    ingest(&mut svc, "edge_logs", &[edge("a", NOW - MIN, "p", "/")]);
    let out = run(
        &mut svc,
        "logs.all",
        &[("project", "p"), ("project_tier", "FREE")],
        NOW,
    )
    .unwrap();
    assert!(out.body.contains("\"id\":\"a\""));
}

#[test]
fn batches_keep_good_entries_and_report_bad_ones() {
    let mut svc = service();
    let ndjson = format!(
        "{}\nnot json\n\n{{\"id\":\"no-ts\"}}\n{}\n[1]\n",
        edge("good1", NOW - MIN, "p", "/"),
        json!({"id": "good2", "timestamp": "2026-11-20T12:00:00.5Z", "project": "p"})
    );
    let report = svc.ingest("edge_logs", ndjson.as_bytes()).unwrap();
    assert_eq!(report.accepted, 2);
    let reasons: Vec<(usize, String)> = report
        .rejected
        .iter()
        .map(|r| (r.index, r.reason.to_string()))
        .collect();
    assert_eq!(reasons.len(), 3);
    assert_eq!(reasons[0].0, 1);
    assert!(reasons[0].1.contains("line 2"));
    assert_eq!(reasons[1], (2, "missing `timestamp`".to_owned()));
    assert_eq!(reasons[2], (4, "entry is not a JSON object".to_owned()));
    assert_eq!(report.rejected_total, 3);

    let e = svc.ingest("postgres_logs", b"[]").unwrap_err();
    assert_eq!((e.status(), e.code()), (400, "unknown_stream"));
    let e = svc.ingest("edge_logs", b"[{\"id\":1,").unwrap_err();
    assert_eq!((e.status(), e.code()), (400, "unreadable_batch"));
    assert_eq!(
        svc.stats().edge_entries,
        2,
        "a refused batch changes nothing"
    );
}

#[test]
fn batch_limits() {
    let mut svc = LogEndpoints::new(Config {
        limits: log_endpoints::Limits {
            max_batch_bytes: 100,
            max_batch_entries: 2,
            ..Default::default()
        },
        ..Config::default()
    });
    let e = svc.ingest("edge_logs", &[b' '; 101]).unwrap_err();
    assert_eq!((e.status(), e.code()), (413, "payload_too_large"));
    let e = svc.ingest("edge_logs", b"[{},{},{}]").unwrap_err();
    assert_eq!(e.status(), 413);
}

/// The budget counts a new name once, however many rows of the batch carry
/// it: one new project's many rows fit where they fit (its name and its
/// function's, per row, had been counted as 3 MB more than a 2 MiB budget).
#[test]
fn a_batch_of_one_new_projects_rows_is_counted_as_it_is_kept() {
    let mut svc = LogEndpoints::new(Config {
        api_keys: vec![ApiKey::new("k").unwrap()],
        limits: log_endpoints::Limits {
            max_store_bytes: 2 << 20,
            ..Default::default()
        },
        ..Config::default()
    });
    let project = "a-project-of-twenty-";
    let function = "00000000-0000-4000-8000-000000000001";
    let rows: Vec<_> = (0..50_000)
        .map(|i| func(&format!("f{i}"), NOW - i, project, function, Some(1.0), 200))
        .collect();
    let batch = serde_json::Value::Array(rows).to_string();
    let report = svc.ingest("function_edge_logs", batch.as_bytes()).unwrap();
    assert_eq!(report.accepted, 50_000);
    assert!(svc.stats().store_bytes <= 2 << 20);
}

#[test]
fn every_timestamp_form_is_read() {
    let mut svc = service();
    let t = 1_795_176_000i64; // 2026-11-20T12:00:00Z
    let batch = json!([
        {"id": "s", "timestamp": t, "project": "p"},
        {"id": "ms", "timestamp": t * 1000 + 1, "project": "p"},
        {"id": "us", "timestamp": t * 1_000_000 + 2, "project": "p"},
        {"id": "ns", "timestamp": (t as i128 * 1_000_000_000 + 3_000).to_string().parse::<serde_json::Number>().unwrap(), "project": "p"},
        {"id": "iso", "timestamp": "2026-11-20T12:00:00.000004Z", "project": "p"},
        {"id": "offset", "timestamp": "2026-11-20T14:00:00.000005+02:00", "project": "p"},
    ]);
    let report = svc
        .ingest("edge_logs", batch.to_string().as_bytes())
        .unwrap();
    assert_eq!(report.accepted, 6, "{:?}", report.rejected);
    let got = rows(
        &mut svc,
        "logs.all",
        &[("project", "p"), ("project_tier", "FREE")],
    );
    let stamps: Vec<(String, i64)> = got
        .iter()
        .map(|r| {
            (
                r["id"].as_str().unwrap().to_owned(),
                r["timestamp"].as_i64().unwrap(),
            )
        })
        .collect();
    let us = t * 1_000_000;
    let expected: Vec<(String, i64)> = [
        ("ms", us + 1000),
        ("offset", us + 5),
        ("iso", us + 4),
        ("ns", us + 3),
        ("us", us + 2),
        ("s", us),
    ]
    .iter()
    .map(|(id, ts)| ((*id).to_owned(), *ts))
    .collect();
    assert_eq!(stamps, expected);
}

#[test]
fn endpoints_listing() {
    let svc = service();
    let names: Vec<&str> = svc.endpoints().iter().map(|e| e.spec.name).collect();
    assert_eq!(
        names,
        [
            "functions.invocation-stats",
            "logs.all",
            "usage.api-counts",
            "usage.api-requests-count",
            "functions.combined-stats"
        ]
    );
}

#[test]
fn catalog_lists_what_is_held() {
    let mut svc = service();
    assert_eq!(svc.catalog().newest_timestamp, None);
    ingest(
        &mut svc,
        "edge_logs",
        &[
            edge("a", NOW - MIN, "pb", "/"),
            edge("b", NOW - HOUR, "pa", "/"),
        ],
    );
    ingest(
        &mut svc,
        "function_edge_logs",
        &[
            func("c", NOW, "pf", "f2", None, 200),
            func("d", NOW - DAY, "pf", "f1", None, 200),
        ],
    );
    let catalog = svc.catalog();
    assert_eq!(catalog.edge_projects, ["pa", "pb"]);
    assert_eq!(catalog.function_projects, ["pf"]);
    assert_eq!(catalog.functions, ["f1", "f2"]);
    assert_eq!(
        (catalog.oldest_timestamp, catalog.newest_timestamp),
        (Some(NOW - DAY), Some(NOW))
    );
}

/// Whether a store's seal jobs come back, and when.
#[derive(Clone, Copy, Debug)]
enum SealJobs {
    /// Handed out and never back (a worker that stopped).
    NeverBack,
    /// Sealed and installed after each batch: nothing waits at the next.
    BackAtOnce,
}

#[test]
fn a_store_whose_seals_wait_for_jobs_takes_the_batches_one_sealing_in_place_takes() {
    // Edge entries of 300 projects and function rows, into a 1 MiB store
    // until it is full: a batch that would take the deferring store past
    // its budget is decided as in place, so both take and refuse the same
    // batches, whether jobs never come back or come back at once.
    for jobs in [SealJobs::NeverBack, SealJobs::BackAtOnce] {
        let config = || Config {
            api_keys: vec![ApiKey::new(KEY).unwrap()],
            limits: log_endpoints::Limits {
                max_store_bytes: 2 << 20,
                ..Default::default()
            },
            ..Config::default()
        };
        let mut in_place = LogEndpoints::new(config());
        let mut by_jobs = LogEndpoints::new(config());
        by_jobs.defer_seals(true);
        let mut handed_out = 0;
        let mut refused = 0;
        for batch in 0..5000 {
            let edges: String = (0..50)
                .map(|i| {
                    let n = batch * 50 + i;
                    let path = format!("/rest/v1/t{}?q={}", n % 13, "x".repeat(n % 300));
                    let ts = NOW - HOUR + n as i64;
                    format!(
                        "{}\n",
                        edge(&format!("id-{n}"), ts, &format!("p{}", n % 300), &path)
                    )
                })
                .collect();
            let functions: String = (0..400)
                .map(|i| {
                    let n = batch * 400 + i;
                    let ts = NOW - HOUR + n as i64;
                    let row = func(
                        &format!("f-{n}"),
                        ts,
                        &format!("p{}", n % 300),
                        "fn",
                        Some(n as f64),
                        200,
                    );
                    format!("{row}\n")
                })
                .collect();
            for (stream, body) in [("edge_logs", &edges), ("function_edge_logs", &functions)] {
                let a = in_place.ingest(stream, body.as_bytes()).map(|r| r.accepted);
                let b = by_jobs.ingest(stream, body.as_bytes()).map(|r| r.accepted);
                let (a, b) = (a.map_err(|e| e.code()), b.map_err(|e| e.code()));
                assert_eq!(a, b, "{jobs:?}: batch {batch} of {stream}");
                refused += usize::from(a.is_err());
            }
            if let Some(frame) = by_jobs.take_seal_jobs() {
                handed_out += 1;
                if let SealJobs::BackAtOnce = jobs {
                    by_jobs
                        .install_sealed(&LogEndpoints::seal_blocks(&frame).unwrap())
                        .unwrap();
                }
            }
            if refused > 20 {
                assert!(
                    handed_out > 10,
                    "{jobs:?}: {handed_out} frames of seal jobs before the store filled"
                );
                break;
            }
        }
        assert!(refused > 20, "{jobs:?}: the store did not fill");
        assert_eq!(by_jobs.stats().edge_entries, in_place.stats().edge_entries);
        assert_eq!(
            by_jobs.stats().function_rows,
            in_place.stats().function_rows
        );
    }
}
