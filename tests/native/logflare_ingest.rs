//! Logflare's ingest API as self-hosted Supabase's Vector sinks call it:
//! the routes and source selection, the body forms, entries normalised as
//! Logflare does, every other source kept, and the answers a shipper acts on.
//! Each batch goes through `prepare_request` (what the edge worker calls) and
//! its record into a store, as the worker keeps it.

use crate::common::*;
use log_endpoints::{ApiKey, Config, HttpAnswer, HttpRequest, LogEndpoints, Params, PreparedBatch};
use serde_json::{json, Value};

const INGEST_KEY: &str = "public-token";

fn service_with_ingest_key() -> LogEndpoints {
    LogEndpoints::new(Config {
        api_keys: vec![
            ApiKey::new(KEY).unwrap(),
            ApiKey::ingest(INGEST_KEY).unwrap(),
        ],
        ..Config::default()
    })
}

/// A POST as Vector's http sink sends it: `x-api-key` and `?source_name=`.
fn vector_post(path_and_query: &str) -> HttpRequest {
    let (path, query) = path_and_query
        .split_once('?')
        .unwrap_or((path_and_query, ""));
    HttpRequest {
        method: "POST".into(),
        path: path.into(),
        query: query.into(),
        api_key: Some(INGEST_KEY.into()),
        ..HttpRequest::default()
    }
}

/// Prepares a batch and keeps its record, as the worker does; the answer.
fn send(svc: &mut LogEndpoints, request: &HttpRequest, body: &str) -> (HttpAnswer, PreparedBatch) {
    let prepared = svc
        .prepare_request(request, body.as_bytes(), NOW)
        .unwrap_or_else(|e| panic!("{}: {e}", request.path));
    if prepared.shards > 0 {
        svc.ingest_record(&prepared.record).unwrap();
    }
    (prepared.answers.clone().unwrap().new, prepared)
}

fn body(answer: &HttpAnswer) -> Value {
    serde_json::from_str(&answer.body).unwrap()
}

/// Kong events as `vector.yml` ships them: no `id`, `metadata` an object,
/// seconds-precision times, the path with its query string and no URL.
fn kong_batch() -> String {
    let access = |at: &str, method: &str, path: &str, status: u16| {
        json!({"appname": "supabase-kong",
            "event_message": format!("172.18.0.1 - - [20/Nov/2026:12:00:00 +0000] \"{method} {path} HTTP/1.1\" {status} 523 \"-\" \"curl/8.5.0\""),
            "metadata": {"request": {"headers": {"cf_connecting_ip": "172.18.0.1", "referer": "-", "user_agent": "curl/8.5.0"},
                "method": method, "path": path, "protocol": "HTTP/1.1"}, "response": {"status_code": status}},
            "project": "default", "timestamp": at})
    };
    let error = json!({"appname": "supabase-kong", "event_message": "2026/11/20 12:01:00 [error] 1#0: upstream timed out",
        "metadata": {"request": {"host": "localhost", "method": "GET", "path": "/auth/v1/user"}},
        "project": "default", "severity": "error", "timestamp": "2026-11-20T12:01:00Z"});
    json!([
        access(
            "2026-11-20T12:00:00Z",
            "GET",
            "/rest/v1/todos?select=*",
            200
        ),
        access(
            "2026-11-20T12:00:01Z",
            "POST",
            "/storage/v1/object/avatars/a.png",
            200
        ),
        error,
    ])
    .to_string()
}

fn logs_all_default(svc: &mut LogEndpoints) -> Vec<Value> {
    rows(
        svc,
        "logs.all",
        &[
            ("project", "default"),
            ("project_tier", "ENTERPRISE"),
            ("iso_timestamp_start", "2026-11-20T00:00:00Z"),
            ("sql", "select id, timestamp, event_message from edge_logs"),
        ],
    )
}

#[test]
fn kong_events_are_kept_once_each_with_an_id_and_counted_by_path() {
    let mut svc = service_with_ingest_key();
    let request = vector_post("/api/logs?source_name=cloudflare.logs.prod");
    let (answer, first) = send(&mut svc, &request, &kong_batch());
    assert_eq!(answer.status, 200);
    assert_eq!(
        body(&answer),
        json!({"message": "Logged!", "accepted": 3, "rejected": [], "rejectedTotal": 0})
    );
    let rows = logs_all_default(&mut svc);
    let mut ids: Vec<&str> = rows.iter().map(|r| r["id"].as_str().unwrap()).collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), 3, "three distinct generated ids: {rows:?}");
    assert_eq!(rows[0]["timestamp"], json!(1_795_176_060_000_000i64));
    // The same batch again: the same key (a resend is recognised) and the same ids.
    let again = svc
        .prepare_request(&request, kong_batch().as_bytes(), NOW + SEC)
        .unwrap();
    assert_eq!((again.key, again.record), (first.key, first.record));

    // Kong events carry no URL: the Management API route counts `default`'s own entries by path.
    let counts = svc
        .query_management(
            "default",
            "usage.api-counts",
            &Params::from_pairs([("interval", "1day")]).unwrap(),
            Some(KEY),
            NOW,
        )
        .unwrap();
    let counts: Value = serde_json::from_str(&counts.body).unwrap();
    let total = |area: &str| {
        counts["result"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| b[area].as_i64().unwrap())
            .sum::<i64>()
    };
    assert_eq!(
        (
            total("total_rest_requests"),
            total("total_storage_requests"),
            total("total_auth_requests")
        ),
        (1, 1, 1)
    );
}

#[test]
fn other_sources_are_kept_under_their_name_and_counted() {
    let mut svc = service_with_ingest_key();
    let sources = [
        (
            "gotrue.logs.prod",
            json!({"appname": "supabase-auth", "event_message": "{\"msg\":\"login\"}", "metadata": {"level": "info"}, "project": "default", "timestamp": "2026-11-20T12:00:00Z"}),
        ),
        (
            "realtime.logs.prod",
            json!({"appname": "realtime", "event_message": "joined", "metadata": {"external_id": "default", "project": "default"}, "timestamp": "2026-11-20T12:00:00Z"}),
        ),
        (
            "postgREST.logs.prod",
            json!({"appname": "supabase-rest", "event_message": "listening", "metadata": {"host": "default"}, "project": "default", "timestamp": 1795176000}),
        ),
        (
            "postgres.logs",
            json!({"appname": "supabase-db", "event_message": "checkpoint", "metadata": {"parsed": {"error_severity": "LOG"}}, "project": "default", "timestamp": "2026-11-20T12:00:00.123456789Z"}),
        ),
        (
            "storage.logs.prod.2",
            json!({"appname": "supabase-storage", "event_message": "ok", "metadata": {"level": "info", "tenantId": "default"}, "project": "default"}),
        ),
        (
            "my.own.source",
            json!({"msg": "any shape at all", "timestamp": "not a time"}),
        ),
        // A time past what a JS number holds: the time of receipt, as a time that does not read.
        (
            "far.future.source",
            json!({"msg": "never", "timestamp": "9999-12-31"}),
        ),
    ];
    for (source, entry) in &sources {
        let request = vector_post(&format!("/api/logs?source_name={source}"));
        let (answer, _) = send(&mut svc, &request, &json!([entry, entry]).to_string());
        assert_eq!(
            (answer.status, body(&answer)["accepted"].clone()),
            (200, json!(2)),
            "{source}"
        );
    }
    let stats = svc.stats();
    assert_eq!(stats.other_sources.len(), sources.len());
    assert!(stats.other_sources.values().all(|&n| n == 2));
    assert_eq!((stats.edge_entries, stats.function_rows), (0, 0));
    // Kept across a snapshot, and read back the same.
    let restored = LogEndpoints::from_snapshot(&svc.snapshot(), Config::default()).unwrap();
    assert_eq!(restored.stats().other_sources, stats.other_sources);
}

#[test]
fn bodies_in_every_form_logflare_takes() {
    let entry = json!({"event_message": "hello", "metadata": {"project_ref": "default"}, "timestamp": "2026-11-20T12:14:02.118734201Z"});
    let request = vector_post("/api/logs?source_name=deno-relay-logs");
    for (form, text) in [
        ("a bare array", json!([entry, entry]).to_string()),
        (
            "a batch object",
            json!({"batch": [entry, entry]}).to_string(),
        ),
        (
            "a batch object with other fields",
            json!({"batch": [entry, entry], "source_name": "deno-relay-logs"}).to_string(),
        ),
        ("NDJSON", format!("{entry}\n{entry}\n")),
        (
            "one object, pretty-printed",
            serde_json::to_string_pretty(&entry).unwrap(),
        ),
    ] {
        let mut svc = service_with_ingest_key();
        let (answer, _) = send(&mut svc, &request, &text);
        let expected = if form.starts_with("one") { 1 } else { 2 };
        assert_eq!(
            (answer.status, body(&answer)["accepted"].clone()),
            (200, json!(expected)),
            "{form}"
        );
        assert_eq!(svc.stats().function_rows, expected, "{form}");
    }
}

#[test]
fn entries_normalised_as_logflare_does() {
    let mut svc = service_with_ingest_key();
    let batch = json!([
        {"message": "from message", "project": "default", "metadata": {"request": {"path": "/rest/v1/x"}}},
        {"event_message": "kept", "message": "message wins", "id": "given", "project": "default", "timestamp": "2026-11-20T12:00:00.123456789Z"},
        {"event_message": "empty id", "id": "", "project": "default", "timestamp": 1795176000000000i64},
    ]);
    let (answer, _) = send(
        &mut svc,
        &vector_post("/logs?source=cloudflare.logs.prod"),
        &batch.to_string(),
    );
    assert_eq!(body(&answer)["accepted"], json!(3));
    let rows = logs_all_default(&mut svc);
    let by_message = |m: &str| {
        rows.iter()
            .find(|r| r["event_message"] == json!(m))
            .unwrap_or_else(|| panic!("{m}: {rows:?}"))
    };
    assert_eq!(
        by_message("from message")["timestamp"],
        json!(NOW),
        "no timestamp: the time of receipt"
    );
    assert_eq!(by_message("message wins")["id"], json!("given"));
    assert_eq!(
        by_message("message wins")["timestamp"],
        json!(1_795_176_000_123_456i64),
        "nanoseconds truncated"
    );
    assert_eq!(
        by_message("empty id")["id"].as_str().map(str::len),
        Some(36),
        "an empty id is generated"
    );

    // `/api/logs/{stream}` keeps the contract: an entry without `id` is refused.
    let strict = vector_post("/api/logs/edge_logs");
    let one = json!([{"project": "default", "timestamp": 1}]).to_string();
    let (answer, _) = send(&mut svc, &strict, &one);
    assert_eq!(answer.status, 422);
    assert!(answer.body.contains("missing `id`"));
}

#[test]
fn answers_a_shipper_can_act_on() {
    let svc = service_with_ingest_key();
    let prepare =
        |request: &HttpRequest, text: &str| svc.prepare_request(request, text.as_bytes(), NOW);
    let to_gotrue = vector_post("/api/logs?source_name=gotrue.logs.prod");

    // Nothing kept: 422 with each entry's reason (Vector drops it: a resend cannot help).
    let answer = prepare(&to_gotrue, "[1, \"two\"]")
        .unwrap()
        .answers
        .unwrap()
        .new;
    assert_eq!(answer.status, 422);
    assert_eq!(body(&answer)["error"]["code"], json!("nothing_kept"));
    assert_eq!(body(&answer)["rejectedTotal"], json!(2));
    let answer = prepare(&to_gotrue, "").unwrap().answers.unwrap().new;
    assert_eq!(
        (answer.status, body(&answer)["error"]["code"].clone()),
        (400, json!("unreadable_batch"))
    );

    // As Vector sends it (`application/json`), a body that is not JSON is unreadable as a whole.
    let mut as_json = to_gotrue.clone();
    as_json.content_type = Some("application/json; charset=utf-8".into());
    let refused = prepare(&as_json, "not json\n").unwrap_err();
    assert_eq!(
        (refused.status(), refused.code()),
        (400, "unreadable_batch")
    );
    assert!(
        refused.to_string().contains("the body is not JSON"),
        "{refused}"
    );
    assert!(prepare(&as_json, "[{}]").is_ok());

    let code = |request: &HttpRequest, text: &str| {
        prepare(request, text)
            .map(|_| ())
            .map_err(|e| (e.status(), e.code(), e.parameter().map(str::to_owned)))
    };
    assert_eq!(
        code(&to_gotrue, "{not json"),
        Ok(()),
        "a line that is not JSON is one refused entry"
    );
    assert_eq!(code(&to_gotrue, "[{"), Err((400, "unreadable_batch", None)));
    assert_eq!(
        code(&vector_post("/api/logs"), "[]"),
        Err((400, "missing_parameter", Some("source_name".into())))
    );
    assert_eq!(
        code(&vector_post("/api/logs?source_name="), "[]"),
        Err((400, "missing_parameter", Some("source_name".into()))),
        "an empty name is no name"
    );
    assert_eq!(
        code(&vector_post("/api/logs?source_name=%01"), "[]"),
        Err((400, "invalid_parameter", Some("source_name".into())))
    );
    let mut empty_then_header = vector_post("/api/logs?source_name=");
    empty_then_header.source = Some("gotrue.logs.prod".into());
    assert_eq!(code(&empty_then_header, "[{}]"), Ok(()));
    assert_eq!(
        code(&vector_post("/api/logs/gotrue.logs.prod"), "[]"),
        Err((400, "unknown_stream", None))
    );
    assert_eq!(
        code(&vector_post("/api/other"), "[]"),
        Err((404, "not_found", None))
    );
    let mut no_key = to_gotrue.clone();
    no_key.api_key = None;
    assert_eq!(code(&no_key, "[]"), Err((401, "missing_api_key", None)));
    let mut query_key = to_gotrue.clone();
    query_key.api_key = Some(KEY.into());
    assert_eq!(code(&query_key, "[]"), Err((403, "forbidden", None)));

    // The key in the query string (older vector.yml), and the source in the X-Source header.
    let mut old_form = vector_post(&format!("/api/events?api_key={INGEST_KEY}"));
    old_form.api_key = None;
    old_form.source = Some("gotrue.logs.prod".into());
    assert_eq!(code(&old_form, "[{}]"), Ok(()));

    // An Idempotency-Key names one batch of one source.
    let keyed = |source: &str| {
        let mut request = vector_post(&format!("/api/logs?source_name={source}"));
        request.idempotency_key = Some("job-1".into());
        prepare(&request, "[{}]").unwrap().key
    };
    assert_ne!(keyed("gotrue.logs.prod"), keyed("postgres.logs"));
}

/// Where Logflare's clients name the source: `source_name`, `collection_name`,
/// `source`, `collection` in the query string or beside a batch in its body
/// (`logflare-transport-core-js`: `{"batch": [...], "source": "…"}`), then
/// the `X-Source` and `X-Collection` headers.
#[test]
fn the_source_wherever_logflare_clients_name_it() {
    let svc = service_with_ingest_key();
    let source_of = |request: &HttpRequest, body: &str| {
        let prepared = svc.prepare_request(request, body.as_bytes(), NOW)?;
        let stats = {
            let mut one = service_with_ingest_key();
            one.ingest_record(&prepared.record).unwrap();
            one.stats()
        };
        Ok::<_, log_endpoints::Error>(stats.other_sources.into_keys().collect::<Vec<_>>())
    };
    let batch =
        r#"{"batch": [{"event_message": "hi"}], "source": "body-id", "source_name": "body-name"}"#;
    for (path, body, header, expected) in [
        ("/api/logs?collection_name=a", "[{}]", None, "a"),
        ("/api/logs?collection=a", "[{}]", None, "a"),
        ("/logs", batch, None, "body-name"),
        (
            "/logs",
            r#"{"source": "body-id", "batch": [{}]}"#,
            None,
            "body-id",
        ),
        (
            "/logs",
            r#"{"collection": "c\u0031", "batch": [{}]}"#,
            None,
            "c1",
        ),
        // The query string before the body, names before ids.
        ("/logs?source_name=q", batch, None, "q"),
        ("/logs?source=q", batch, None, "body-name"),
        // The body before the headers; a body that is no batch envelope names nothing.
        ("/logs", batch, Some("h"), "body-name"),
        ("/logs", r#"{"source": "entry-field"}"#, Some("h"), "h"),
        ("/logs", r#"{"source": "", "batch": [{}]}"#, Some("h"), "h"),
        // A BOM before the envelope; a name given twice counts as its last.
        (
            "/logs",
            "\u{feff} {\"batch\": [{}], \"source\": \"bom\"}",
            None,
            "bom",
        ),
        (
            "/logs",
            r#"{"batch": [{}], "source": "first", "source": "last"}"#,
            None,
            "last",
        ),
    ] {
        let mut request = vector_post(path);
        request.source = header.map(str::to_owned);
        assert_eq!(
            source_of(&request, body).map_err(|e| e.to_string()),
            Ok(vec![expected.to_owned()]),
            "{path} {body} {header:?}"
        );
    }
    // Escaped field names read as written, for the batch and its source alike:
    // both entries of the batch are kept (not the envelope as one entry).
    let escaped =
        r#"{"b\u0061tch": [{"event_message": "a"}, {"event_message": "b"}], "sourc\u0065": "esc"}"#;
    let prepared = svc
        .prepare_request(&vector_post("/logs"), escaped.as_bytes(), NOW)
        .unwrap();
    let mut one = service_with_ingest_key();
    one.ingest_record(&prepared.record).unwrap();
    assert_eq!(one.stats().other_sources.get("esc"), Some(&2));
    let mut by_collection = vector_post("/api/logs");
    by_collection.collection = Some("x".into());
    assert_eq!(
        source_of(&by_collection, "[{}]").ok(),
        Some(vec!["x".into()])
    );
    let refused = source_of(&vector_post("/logs"), r#"{"batch": [{}], "source": 7}"#).unwrap_err();
    assert_eq!(
        (refused.code(), refused.parameter()),
        ("missing_parameter", Some("source_name"))
    );
}

/// A deployment keeps 90 days of logs: an entry older than that when its
/// batch arrives is refused saying so, not acknowledged and dropped unseen
/// by the next round of retention. Handed to the library, it is kept (an
/// old download is read as it is).
#[test]
fn entries_past_retention_are_refused_saying_so() {
    let mut svc = service_with_ingest_key();
    let old = NOW - 91 * DAY;
    let recent = NOW - 89 * DAY;
    // At the cutoff itself no endpoint reads it (each reads after it); a µs later, one does.
    let cutoff = NOW - 90 * DAY;
    let edge_batch = json!([
        edge("old", old, "alpha", "/rest/v1/a"),
        edge("recent", recent, "alpha", "/rest/v1/a"),
        edge("at-cutoff", cutoff, "alpha", "/rest/v1/a"),
        edge("after-cutoff", cutoff + 1, "alpha", "/rest/v1/a")
    ])
    .to_string();
    let (answer, prepared) = send(&mut svc, &vector_post("/api/logs/edge_logs"), &edge_batch);
    assert_eq!(answer.status, 200);
    let rejected = &prepared.report.rejected;
    assert_eq!((prepared.report.accepted, rejected.len()), (2, 2));
    assert_eq!((rejected[0].index, rejected[1].index), (0, 2));
    assert_eq!(
        rejected[0].reason,
        "its `timestamp` is older than the 90 days logs are kept, so no endpoint could find it"
    );
    for (path, entry) in [
        (
            "/api/logs/function_edge_logs",
            func("f-old", old, "alpha", "fn", Some(3.0), 200),
        ),
        (
            "/api/logs?source_name=gotrue.logs.prod",
            json!({"event_message": "old", "timestamp": old, "project": "alpha"}),
        ),
    ] {
        let (answer, _) = send(&mut svc, &vector_post(path), &json!([entry]).to_string());
        assert_eq!(
            answer.status, 422,
            "{path}: nothing kept, which Vector drops"
        );
        assert!(
            answer.body.contains("older than the 90 days logs are kept"),
            "{path}: {}",
            answer.body
        );
    }
    let mut library = service();
    let report = library
        .ingest(
            "edge_logs",
            json!([edge("old", old, "alpha", "/rest/v1/a")])
                .to_string()
                .as_bytes(),
        )
        .unwrap();
    assert_eq!(report.accepted, 1);
}
