use crate::common::*;
use serde_json::json;

const FN: &str = "function_edge_logs";

fn bucket_start(ts: i64, step: i64) -> i64 {
    ts - ts.rem_euclid(step)
}

#[test]
fn window_edges_for_1hr() {
    let mut svc = service();
    let first = bucket_start(NOW - HOUR, MIN); // 11:29:00.000000
    let last = bucket_start(NOW, MIN); // 12:29:00.000000
    ingest(
        &mut svc,
        FN,
        &[
            func("at-first", first, "p", "f", Some(10.0), 200),
            func("before-first", first - 1, "p", "f", Some(10.0), 200),
            func(
                "end-of-last-bucket",
                last + MIN - 1,
                "p",
                "f",
                Some(30.0),
                200,
            ),
            func("after-last-bucket", last + MIN, "p", "f", Some(30.0), 200),
            func("other-project", first, "q", "f", Some(10.0), 200),
        ],
    );
    let rows = rows(
        &mut svc,
        "functions.invocation-stats",
        &[("project", "p"), ("interval", "1hr")],
    );
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0]["timestamp"], json!(first));
    assert_eq!(rows[0]["count"], json!(1));
    assert_eq!(rows[1]["timestamp"], json!(last));
    assert_eq!(rows[1]["count"], json!(1));
    assert_eq!(rows[1]["max_execution_time"], json!(30.0));
}

#[test]
fn statistics_percentiles_and_errors() {
    let mut svc = service();
    let t = bucket_start(NOW, HOUR) + 5 * MIN;
    let mut entries: Vec<_> = (1..=20)
        .map(|i| {
            func(
                &format!("e{i}"),
                t + i,
                "p",
                "f",
                Some(f64::from(i as i32)),
                if i == 1 {
                    399
                } else if i <= 4 {
                    400 + i
                } else {
                    200
                },
            )
        })
        .collect();
    entries.push(func("null-time", t, "p", "f", None, 500));
    ingest(&mut svc, FN, &entries);
    let rows = rows(
        &mut svc,
        "functions.invocation-stats",
        &[("project", "p"), ("interval", "1day")],
    );
    assert_eq!(rows.len(), 1);
    let row = &rows[0];
    assert_eq!(row["timestamp"], json!(bucket_start(NOW, HOUR)));
    assert_eq!(row["count"], json!(21));
    // 399 is not an error; 402, 403, 404 and the null-time entry's 500 are.
    assert_eq!(row["error_count"], json!(4));
    assert_eq!(row["min_execution_time"], json!(1.0));
    assert_eq!(row["max_execution_time"], json!(20.0));
    assert_eq!(row["avg_execution_time"], json!(10.5));
    // n = 20 non-null: p95 = sorted[ceil(19) - 1] = 19, p99 = sorted[ceil(19.8) - 1] = 20.
    assert_eq!(row["p95_execution_time"], json!(19.0));
    assert_eq!(row["p99_execution_time"], json!(20.0));
}

#[test]
fn all_null_times_give_null_statistics() {
    let mut svc = service();
    ingest(&mut svc, FN, &[func("a", NOW - MIN, "p", "f", None, 200)]);
    let rows = rows(
        &mut svc,
        "functions.invocation-stats",
        &[("project", "p"), ("interval", "15min")],
    );
    assert_eq!(rows.len(), 1);
    for field in [
        "min_execution_time",
        "max_execution_time",
        "avg_execution_time",
        "p95_execution_time",
        "p99_execution_time",
    ] {
        assert_eq!(rows[0][field], json!(null), "{field}");
    }
    assert_eq!(rows[0]["count"], json!(1));
}

#[test]
fn function_filter_and_empty_function_id() {
    let mut svc = service();
    ingest(
        &mut svc,
        FN,
        &[
            func("a", NOW - MIN, "p", "f1", Some(1.0), 200),
            func("b", NOW - MIN, "p", "f2", Some(2.0), 200),
        ],
    );
    let only_f2 = rows(
        &mut svc,
        "functions.invocation-stats",
        &[("project", "p"), ("interval", "1hr"), ("function_id", "f2")],
    );
    assert_eq!(only_f2[0]["count"], json!(1));
    assert_eq!(only_f2[0]["min_execution_time"], json!(2.0));
    let all = rows(
        &mut svc,
        "functions.invocation-stats",
        &[("project", "p"), ("interval", "1hr"), ("function_id", "")],
    );
    assert_eq!(all[0]["count"], json!(2));
    let none = rows(
        &mut svc,
        "functions.invocation-stats",
        &[("project", "p"), ("interval", "1hr"), ("function_id", "f3")],
    );
    assert!(none.is_empty());
}

#[test]
fn bucket_widths_per_interval() {
    let mut svc = service();
    // Two entries 40 s apart in the same minute, hour and day; one 8 days back.
    let a = bucket_start(NOW, MIN) + SEC;
    let b = a + 40 * SEC;
    let old = NOW - 8 * DAY;
    ingest(
        &mut svc,
        FN,
        &[
            func("a", a, "p", "f", Some(1.0), 200),
            func("b", b.min(NOW), "p", "f", Some(1.0), 200),
            func("old", old, "p", "f", Some(1.0), 200),
        ],
    );
    let counts = |svc: &mut _, interval: &str| -> Vec<(i64, i64)> {
        rows(
            svc,
            "functions.invocation-stats",
            &[("project", "p"), ("interval", interval)],
        )
        .iter()
        .map(|r| {
            (
                r["timestamp"].as_i64().unwrap(),
                r["count"].as_i64().unwrap(),
            )
        })
        .collect()
    };
    let b = b.min(NOW);
    assert_eq!(
        counts(&mut svc, "5min"),
        vec![(a, 1), (bucket_start(b, SEC), 1)]
    );
    assert_eq!(counts(&mut svc, "15min"), vec![(bucket_start(a, MIN), 2)]);
    assert_eq!(counts(&mut svc, "1hr"), vec![(bucket_start(a, MIN), 2)]);
    assert_eq!(counts(&mut svc, "1day"), vec![(bucket_start(a, HOUR), 2)]);
    assert_eq!(counts(&mut svc, "7day"), vec![(bucket_start(a, DAY), 2)]);
    // Any other interval behaves as 1day.
    assert_eq!(counts(&mut svc, "2weeks"), counts(&mut svc, "1day"));
    // 7day starts at trunc(now − 7 days, day): 8 days back is outside.
    let seven_days_start = bucket_start(NOW - 7 * DAY, DAY);
    ingest(
        &mut svc,
        FN,
        &[func(
            "edge-of-7day",
            seven_days_start,
            "p",
            "f",
            Some(1.0),
            200,
        )],
    );
    assert_eq!(
        counts(&mut svc, "7day"),
        vec![(seven_days_start, 1), (bucket_start(a, DAY), 2)]
    );
}

#[test]
fn rows_are_sorted_ascending_whatever_the_ingest_order() {
    let mut svc = service();
    let later = func("later", NOW - 10 * MIN, "p", "f", Some(1.0), 200);
    let earlier = func("earlier", NOW - 50 * MIN, "p", "f", Some(1.0), 200);
    ingest(&mut svc, FN, &[later]);
    ingest(&mut svc, FN, &[earlier]);
    let rows = rows(
        &mut svc,
        "functions.invocation-stats",
        &[("project", "p"), ("interval", "1hr")],
    );
    let stamps: Vec<i64> = rows
        .iter()
        .map(|r| r["timestamp"].as_i64().unwrap())
        .collect();
    assert_eq!(
        stamps,
        vec![
            bucket_start(NOW - 50 * MIN, MIN),
            bucket_start(NOW - 10 * MIN, MIN)
        ]
    );
}

/// Times at one instant are summed exactly, so the order they came in does
/// not show in the last digits of avg (left to right in floats, these give
/// 2.5999999999999996 in one order and 2.6 in the other).
#[test]
fn averages_do_not_depend_on_the_order_of_equal_timestamps() {
    let at = NOW - 10 * MIN;
    let answers: Vec<Vec<f64>> = [[0.1, 0.2, 2.3], [0.1, 2.3, 0.2]]
        .iter()
        .map(|times| {
            let mut svc = service();
            for (i, &time) in times.iter().enumerate() {
                ingest(
                    &mut svc,
                    FN,
                    &[func(&format!("e{i}"), at, "p", "f", Some(time), 200)],
                );
            }
            let stats = rows(
                &mut svc,
                "functions.invocation-stats",
                &[("project", "p"), ("interval", "1hr")],
            );
            let combined = rows(
                &mut svc,
                "functions.combined-stats",
                &[("project", "p"), ("function_id", "f"), ("interval", "1hr")],
            );
            [&stats[0], &combined[0]]
                .map(|row| row["avg_execution_time"].as_f64().unwrap())
                .to_vec()
        })
        .collect();
    assert_eq!(answers[0], vec![2.5999999999999996 / 3.0; 2]);
    assert_eq!(answers[1], answers[0]);
}

#[test]
fn parameter_errors() {
    let mut svc = service();
    let e = error(
        &mut svc,
        "functions.invocation-stats",
        &[("interval", "1hr")],
    );
    assert_eq!((e.status(), e.code()), (400, "missing_parameter"));
    assert!(e.to_string().contains("`project`"));
    let e = error(&mut svc, "functions.invocation-stats", &[("project", "p")]);
    assert!(e.to_string().contains("`interval`"));
    let out = run(
        &mut svc,
        "functions.invocation-stats",
        &[("project", "p"), ("interval", "1hr"), ("sql", "select 1")],
        NOW,
    )
    .unwrap();
    assert!(out.warning.is_some_and(|w| w.contains("`sql`")));
}

/// A store of `budget` bytes.
fn limited(budget: usize) -> log_endpoints::LogEndpoints {
    log_endpoints::LogEndpoints::new(budget_config(KEY, budget))
}

/// The configuration of `limited`.
/// 2,000 function rows from row `n0` on, 3 in 8 of project "busy" (or, with
/// `spread_busy`, of 16 projects in its place), in time order after the
/// batch before, as a shipper sends them.
fn busy_batch(n0: usize, spread_busy: bool) -> String {
    let projects = ["busy", "busy", "busy", "a", "b", "c", "d", "e"];
    let entries: Vec<serde_json::Value> = (n0..n0 + 2_000)
        .map(|n| {
            let project = match projects[n % projects.len()] {
                "busy" if spread_busy => format!("busy-{}", n % 16),
                name => name.to_owned(),
            };
            let status = [200, 201, 404, 500][n % 7 % 4];
            let time = (n % 11 != 0).then(|| (n * 7_919 % 5_000) as f64 / 8.0);
            let at = NOW - 7 * DAY + n as i64 * 997_000;
            func(
                &format!("f-{n}"),
                at,
                &project,
                ["f0", "f1"][n % 3 % 2],
                time,
                status,
            )
        })
        .collect();
    serde_json::Value::Array(entries).to_string()
}

/// The busiest projects' packed rows (src/store/packed.rs) take only room the
/// budget leaves: a store filling up with a busy project's rows stays within
/// its budget, takes as many rows as one whose rows are never packed (the
/// same rows, the busy project's spread over 16 projects), and answers as a
/// store with room to spare.
#[test]
fn packed_rows_never_take_room_from_rows() {
    let budget = 4 << 20;
    let (mut packing, mut spread, mut roomy) = (limited(budget), limited(budget), service());
    let mut refused = [false, false];
    for n0 in (0..400_000).step_by(2_000) {
        for (store, spread_busy, done) in [(&mut packing, false, 0), (&mut spread, true, 1)] {
            if refused[done] {
                continue;
            }
            match store.ingest(FN, busy_batch(n0, spread_busy).as_bytes()) {
                Ok(_) if !spread_busy => {
                    roomy.ingest(FN, busy_batch(n0, false).as_bytes()).unwrap();
                }
                Ok(_) => {}
                Err(e) => {
                    assert_eq!(e.code(), "store_full");
                    refused[done] = true;
                }
            }
            assert!(
                store.stats().store_bytes <= budget,
                "{}",
                store.stats().store_bytes
            );
        }
        if refused == [true, true] {
            break;
        }
    }
    assert_eq!(refused, [true, true], "both stores filled up");
    let (packed_rows, spread_rows) = (packing.stats().function_rows, spread.stats().function_rows);
    // The busy project (3 in 8 rows) passed the size at which it is packed.
    assert!(packed_rows > 16_384 * 8 / 3);
    assert!(
        packed_rows + 2_000 >= spread_rows,
        "the packed rows took room from rows: {packed_rows} rows against {spread_rows}"
    );
    assert_eq!(packed_rows, roomy.stats().function_rows);
    for interval in ["7day", "1day", "1hr"] {
        for function in [None, Some("f1")] {
            let mut params = vec![("project", "busy"), ("interval", interval)];
            params.extend(function.map(|f| ("function_id", f)));
            assert_eq!(
                rows(&mut packing, "functions.invocation-stats", &params),
                rows(&mut roomy, "functions.invocation-stats", &params),
                "{params:?}"
            );
        }
    }
}

/// A store restored from a snapshot holds no packed rows; the first query
/// of function rows makes them, whichever way it comes: a split shard's
/// partial answer too (a full split shard takes no more batches, so nothing
/// else would), with the same answer as the store it was written from.
#[test]
fn a_restored_shards_partial_answers_make_its_packed_rows() {
    let budget = 4 << 20;
    let mut live = limited(budget);
    for n0 in (0..60_000).step_by(2_000) {
        live.ingest(FN, busy_batch(n0, false).as_bytes()).unwrap();
    }
    let mut restored =
        log_endpoints::LogEndpoints::from_snapshot(&live.snapshot(), budget_config(KEY, budget))
            .unwrap();
    let unpacked = restored.stats().store_bytes;
    assert!(
        live.stats().store_bytes > unpacked + 100_000,
        "the busy project is packed: {} bytes against {unpacked} restored",
        live.stats().store_bytes
    );
    let path = "/api/endpoints/query/functions.invocation-stats";
    let params =
        log_endpoints::Params::from_pairs([("project", "busy"), ("interval", "7day")]).unwrap();
    let partial = |svc: &mut log_endpoints::LogEndpoints| {
        svc.query_path_partial(path, &params, Some(KEY), NOW)
            .unwrap()
            .body
    };
    assert_eq!(partial(&mut restored), partial(&mut live));
    // A copy of the busy project's 22,500 rows (the live store's columns
    // have room to grow besides).
    let packed = restored.stats().store_bytes;
    assert!(
        packed > unpacked + 100_000,
        "no packed copy: {packed} bytes against {unpacked}"
    );
}

/// A store made by replaying stored batches asks for its snapshot to be
/// written at once from a sixteenth of its budget in replayed bytes on (its
/// next wake would replay them all again); one that took them as ingest, or
/// replayed less, does not.
#[test]
fn a_long_replay_asks_for_a_snapshot() {
    let budget = 1 << 20;
    let source = log_endpoints::Source::stream(FN).unwrap();
    let mut live = limited(budget);
    let records: Vec<Vec<u8>> = (0..8)
        .map(|k| {
            let batch = busy_batch(k * 2_000, false);
            let prepared = live
                .prepare_ingest(
                    &source,
                    log_endpoints::EntryForm::Contract,
                    batch.as_bytes(),
                    None,
                )
                .unwrap();
            live.ingest_record(&prepared.record).unwrap();
            prepared.record
        })
        .collect();
    assert!(!live.snapshot_due_after_replay());
    let mut rebuilt = limited(budget);
    let mut replayed = 0;
    for record in &records {
        assert_eq!(rebuilt.snapshot_due_after_replay(), replayed >= budget / 16);
        rebuilt.replay_record(record).unwrap();
        replayed += record.len();
    }
    assert!(
        replayed >= budget / 16 && rebuilt.snapshot_due_after_replay(),
        "{replayed} bytes replayed"
    );
    assert!(records[0].len() < budget / 16, "one batch alone is not due");
}

/// A full store rebuilt from the records it kept (as the edge worker replays
/// its stored batches, with the budget waived) holds every row and stays
/// within its budget: the busiest projects' packed rows are not made past
/// it, during the replay or by the queries after it.
#[test]
fn a_full_store_rebuilt_from_its_records_stays_within_its_budget() {
    let budget = 4 << 20;
    let source = log_endpoints::Source::stream(FN).unwrap();
    let mut live = limited(budget);
    let mut kept = Vec::new();
    for n0 in (0..400_000).step_by(2_000) {
        let record = live
            .prepare_ingest(
                &source,
                log_endpoints::EntryForm::Contract,
                busy_batch(n0, false).as_bytes(),
                None,
            )
            .unwrap()
            .record;
        match live.ingest_record(&record) {
            Ok(_) => kept.push(record),
            Err(e) => {
                assert_eq!(e.code(), "store_full");
                break;
            }
        }
    }
    assert!(
        live.stats().function_rows > 16_384 * 8 / 3,
        "the busy project passed the size at which it is packed"
    );
    let mut rebuilt = limited(budget);
    for record in &kept {
        rebuilt.replay_record(record).unwrap();
    }
    assert_eq!(rebuilt.stats().function_rows, live.stats().function_rows);
    assert!(
        rebuilt.stats().store_bytes <= budget,
        "{} bytes after the replay",
        rebuilt.stats().store_bytes
    );
    for interval in ["7day", "1day", "1hr"] {
        let params = [("project", "busy"), ("interval", interval)];
        assert_eq!(
            rows(&mut rebuilt, "functions.invocation-stats", &params),
            rows(&mut live, "functions.invocation-stats", &params),
            "{params:?}"
        );
    }
    assert!(
        rebuilt.stats().store_bytes <= budget,
        "{} bytes after queries",
        rebuilt.stats().store_bytes
    );
}
