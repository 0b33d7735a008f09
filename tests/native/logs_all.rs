use crate::common::*;
use serde_json::{json, Value};

const EDGE: &str = "edge_logs";

fn ids(rows: &[Value]) -> Vec<&str> {
    rows.iter().map(|r| r["id"].as_str().unwrap()).collect()
}

#[test]
fn retention_window_per_tier() {
    let mut svc = service();
    ingest(
        &mut svc,
        EDGE,
        &[
            edge("at-free-edge", NOW - DAY, "p", "/rest/v1/a"),
            edge("inside-free", NOW - DAY + 1, "p", "/rest/v1/a"),
            edge("at-pro-edge", NOW - 7 * DAY, "p", "/rest/v1/a"),
            edge("inside-pro", NOW - 7 * DAY + 1, "p", "/rest/v1/a"),
            edge("inside-payg", NOW - 90 * DAY + 1, "p", "/rest/v1/a"),
            edge("at-payg-edge", NOW - 90 * DAY, "p", "/rest/v1/a"),
            edge("future", NOW + HOUR, "p", "/rest/v1/a"),
        ],
    );
    let tier = |svc: &mut _, t: &str| {
        ids(&rows(
            svc,
            "logs.all",
            &[("project", "p"), ("project_tier", t)],
        ))
        .join(",")
    };
    assert_eq!(tier(&mut svc, "FREE"), "future,inside-free");
    assert_eq!(tier(&mut svc, "GOLD"), "future,inside-free");
    assert_eq!(
        tier(&mut svc, "PRO"),
        "future,inside-free,at-free-edge,inside-pro"
    );
    assert_eq!(
        tier(&mut svc, "PAYG"),
        "future,inside-free,at-free-edge,inside-pro,at-pro-edge,inside-payg"
    );
    assert_eq!(tier(&mut svc, "ENTERPRISE"), tier(&mut svc, "PAYG"));
}

#[test]
fn start_is_exclusive_and_end_inclusive() {
    let mut svc = service();
    // 2026-11-20T11:00:00Z and 12:00:00Z
    let eleven = 1_795_172_400 * SEC;
    let twelve = 1_795_176_000 * SEC;
    ingest(
        &mut svc,
        EDGE,
        &[
            edge("at-start", eleven, "p", "/"),
            edge("after-start", eleven + 1, "p", "/"),
            edge("at-end", twelve, "p", "/"),
            edge("after-end", twelve + 1, "p", "/"),
        ],
    );
    let got = rows(
        &mut svc,
        "logs.all",
        &[
            ("project", "p"),
            ("project_tier", "PRO"),
            ("iso_timestamp_start", "2026-11-20T11:00:00Z"),
            ("iso_timestamp_end", "2026-11-20 12:00:00"),
        ],
    );
    assert_eq!(ids(&got), vec!["at-end", "after-start"]);
    let with_offset = rows(
        &mut svc,
        "logs.all",
        &[
            ("project", "p"),
            ("project_tier", "PRO"),
            ("iso_timestamp_start", "2026-11-20T13:00:00.000000+02:00"),
            ("iso_timestamp_end", ""),
        ],
    );
    assert_eq!(
        ids(&with_offset),
        vec!["after-end", "at-end", "after-start"]
    );
    let e = error(
        &mut svc,
        "logs.all",
        &[
            ("project", "p"),
            ("project_tier", "PRO"),
            ("iso_timestamp_end", "noon"),
        ],
    );
    assert_eq!((e.status(), e.code()), (400, "invalid_parameter"));
    assert!(e.to_string().contains("`iso_timestamp_end`"), "{e}");
}

#[test]
fn newest_first_and_at_most_100() {
    let mut svc = service();
    let entries: Vec<Value> = (0..150)
        .map(|i| edge(&format!("e{i:03}"), NOW - HOUR + i * SEC, "p", "/"))
        .collect();
    ingest(&mut svc, EDGE, &entries);
    ingest(&mut svc, EDGE, &[edge("other", NOW, "q", "/")]);
    let got = rows(
        &mut svc,
        "logs.all",
        &[("project", "p"), ("project_tier", "FREE")],
    );
    assert_eq!(got.len(), 100);
    assert_eq!(got[0]["id"], json!("e149"));
    assert_eq!(got[99]["id"], json!("e050"));
    assert_eq!(got[0]["timestamp"], json!(NOW - HOUR + 149 * SEC));
    assert_eq!(got[0]["event_message"], json!("GET | 200 | /"));
}

#[test]
fn equal_timestamps_are_ordered_by_id_whatever_the_ingest_order() {
    let mut a = service();
    let mut b = service();
    let entries: Vec<Value> = (0..120)
        .map(|i| edge(&format!("id{:03}", (i * 37) % 120), NOW - MIN, "p", "/"))
        .collect();
    ingest(&mut a, EDGE, &entries);
    let reversed: Vec<Value> = entries.iter().rev().cloned().collect();
    ingest(&mut b, EDGE, &reversed);
    let ra = rows(
        &mut a,
        "logs.all",
        &[("project", "p"), ("project_tier", "FREE")],
    );
    let rb = rows(
        &mut b,
        "logs.all",
        &[("project", "p"), ("project_tier", "FREE")],
    );
    assert_eq!(ra, rb);
    assert_eq!(ra[0]["id"], json!("id000"));
    assert_eq!(ra[99]["id"], json!("id099"));
}

#[test]
fn metadata_comes_back_exactly_as_it_went_in() {
    let mut svc = service();
    let raw = r#"[{"id":"m","timestamp":"2026-11-20T12:00:00Z","project":"p","event_message":"x","metadata":[{"request":[{"path":"/rest/v1/t","url":"https://p.supabase.co/rest/v1/t","headers":{"x-big":12345678901234567890123,"x-float":1.50,"u":"caf\u00e9"}}],"custom":{"deep":[[[]]],"nil":null}}]}]"#;
    let report = svc.ingest(EDGE, raw.as_bytes()).unwrap();
    assert_eq!(report.accepted, 1);
    let out = run(
        &mut svc,
        "logs.all",
        &[("project", "p"), ("project_tier", "FREE")],
        NOW,
    )
    .unwrap();
    let expected_metadata = r#"[{"request":[{"path":"/rest/v1/t","url":"https://p.supabase.co/rest/v1/t","headers":{"x-big":12345678901234567890123,"x-float":1.50,"u":"caf\u00e9"}}],"custom":{"deep":[[[]]],"nil":null}}]"#;
    assert!(
        out.body
            .contains(&format!("\"metadata\":{expected_metadata}")),
        "{}",
        out.body
    );
}

#[test]
fn missing_project_or_tier() {
    let mut svc = service();
    let e = error(&mut svc, "logs.all", &[("project_tier", "FREE")]);
    assert_eq!(e.code(), "missing_parameter");
    // A missing or empty tier is FREE, as Logflare binds it (NULL → the
    // "any other value" branch); Studio never sends one.
    ingest(
        &mut svc,
        "edge_logs",
        &[
            edge("recent", NOW - 2 * HOUR, "p", "/rest/v1/a"),
            edge("older", NOW - 2 * DAY, "p", "/rest/v1/a"),
        ],
    );
    for tier in [None, Some(""), Some("FREE"), Some("GOLD")] {
        let mut params = vec![("project", "p")];
        params.extend(tier.map(|t| ("project_tier", t)));
        let body = run(&mut svc, "logs.all", &params, NOW).unwrap().body;
        assert!(
            body.contains("\"recent\"") && !body.contains("\"older\""),
            "{tier:?}: {body}"
        );
    }
    // `sql` and `lql` are ignored, as Logflare does with sandboxing disabled,
    // but the answer says so.
    let plain = run(&mut svc, "logs.all", &[("project", "p")], NOW).unwrap();
    assert_eq!(plain.warning, None);
    let with_lql = run(
        &mut svc,
        "logs.all",
        &[("project", "p"), ("lql", "x"), ("sql", "")],
        NOW,
    )
    .unwrap();
    assert_eq!(with_lql.body, plain.body);
    assert_eq!(
        with_lql.warning.as_deref(),
        Some(
            "parameter `sql` and `lql` ignored: query sandboxing is disabled for endpoint logs.all, \
             which reads edge_logs whatever the query"
        )
    );
    // Studio's log views of other sources send their own query: the warning
    // names the sources it asked for.
    let studio_auth = "select id, auth_logs.timestamp, event_message from auth_logs \
        cross join unnest(metadata) as metadata where auth_logs.timestamp > '2026-11-20' \
        order by timestamp desc limit 100";
    for (sql, asked) in [
        (
            studio_auth,
            " the query asks for `auth_logs`, which logs.all does not read",
        ),
        (
            "select * from FUNCTION_EDGE_LOGS f join edge_logs e on true",
            " the query asks for `FUNCTION_EDGE_LOGS`, which logs.all does not read",
        ),
        ("select id from edge_logs", ""),
        (
            "select extract(hour from timestamp), substring(id from 2) from `p.d.edge_logs`",
            "",
        ),
    ] {
        let answer = run(&mut svc, "logs.all", &[("project", "p"), ("sql", sql)], NOW).unwrap();
        assert_eq!(answer.body, plain.body);
        let warning = answer.warning.unwrap_or_default();
        let expected = "parameter `sql` ignored: query sandboxing is disabled for endpoint logs.all, which reads edge_logs whatever the query";
        assert_eq!(warning.split(';').next(), Some(expected));
        assert_eq!(
            warning.split_once(';').map_or("", |(_, rest)| rest),
            asked,
            "{sql}"
        );
    }
    // Undeclared parameters are ignored, as Logflare does, and named: a
    // misspelt one with the name it likely meant, since the answer is then
    // the default's.
    let free = run(
        &mut svc,
        "logs.all",
        &[("project", "p"), ("project_tier", "FREE")],
        NOW,
    )
    .unwrap();
    let mut warned = |params: &[(&str, &str)]| {
        let answer = run(&mut svc, "logs.all", params, NOW).unwrap();
        (answer.body, answer.warning.unwrap_or_default())
    };
    let (body, warning) = warned(&[("project", "p"), ("project_tier", "FREE"), ("color", "red")]);
    assert_eq!(body, free.body);
    assert_eq!(
        warning,
        "unknown parameter `color` ignored (logs.all takes project, project_tier, iso_timestamp_start, iso_timestamp_end)"
    );
    let (_, misspelt) = warned(&[
        ("project", "p"),
        ("project_teir", "PRO"),
        ("Iso_Timestamp_Strat", ""),
    ]);
    assert_eq!(
        misspelt,
        "unknown parameter `project_teir` ignored (did you mean `project_tier`?); \
         unknown parameter `Iso_Timestamp_Strat` ignored (did you mean `iso_timestamp_start`?)"
    );
    // A repeated name: the last value counts, and the answer says so.
    let (body, repeated) = warned(&[
        ("project", "other"),
        ("project", "p"),
        ("project_tier", "FREE"),
    ]);
    assert_eq!(body, free.body);
    assert_eq!(
        repeated,
        "parameter `project` given 2 times: the last value is used"
    );
    // The key in a query string is the route's, and names other endpoints
    // take are a client's usual set (Studio sends them to logs.all): not unknown.
    assert_eq!(
        warned(&[
            ("project", "p"),
            ("api_key", "k"),
            ("interval", "1hr"),
            ("function_id", "f")
        ])
        .1,
        ""
    );
}

/// A range that cannot match what was likely meant answers as the reference
/// does (no rows, or those after the retention cutoff) and says why.
#[test]
fn empty_or_clipped_ranges_carry_a_warning() {
    let mut svc = service();
    ingest(
        &mut svc,
        EDGE,
        &[
            edge("recent", NOW - HOUR, "p", "/rest/v1/a"),
            edge("old", NOW - 3 * DAY, "p", "/rest/v1/a"),
        ],
    );
    let at = log_endpoints::timestamp::format_rfc3339;
    let answer = |svc: &mut _, tier: &str, start: i64, end: i64| {
        let params = [
            ("project", "p".to_owned()),
            ("project_tier", tier.to_owned()),
            ("iso_timestamp_start", at(start)),
            ("iso_timestamp_end", at(end)),
        ];
        let params: Vec<(&str, &str)> = params.iter().map(|(k, v)| (*k, v.as_str())).collect();
        run(svc, "logs.all", &params, NOW).unwrap()
    };
    let reversed = answer(&mut svc, "PRO", NOW, NOW - 2 * HOUR);
    assert_eq!(reversed.body.as_ref(), r#"{"result":[]}"#);
    assert_eq!(
        reversed.warning.as_deref(),
        Some("iso_timestamp_end is not after iso_timestamp_start: the range holds no instant")
    );
    let before = answer(&mut svc, "FREE", NOW - 4 * DAY, NOW - 2 * DAY);
    assert_eq!(before.body.as_ref(), r#"{"result":[]}"#);
    assert_eq!(
        before.warning.as_deref(),
        Some(&*format!(
            "the range ends before the retention window (FREE keeps 1 day, from {}): nothing in it is searched",
            at(NOW - DAY)
        ))
    );
    let clipped = answer(&mut svc, "PRO", NOW - 10 * DAY, NOW);
    assert!(clipped.body.contains("\"recent\"") && clipped.body.contains("\"old\""));
    assert_eq!(
        clipped.warning.as_deref(),
        Some(&*format!(
            "the range begins before the retention window (PRO keeps 7 days, from {}): only the part after that is searched",
            at(NOW - 7 * DAY)
        ))
    );
    assert_eq!(answer(&mut svc, "PAYG", NOW - 10 * DAY, NOW).warning, None);
    assert_eq!(
        answer(&mut svc, "ENTERPRISE", NOW - 100 * DAY, NOW).warning.as_deref(),
        Some(&*format!(
            "the range begins before the retention window (logs are kept 90 days, from {}): only the part after that is searched",
            at(NOW - 90 * DAY)
        ))
    );
}
