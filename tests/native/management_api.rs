//! Supabase's Management API route (`/v1/projects/{ref}/analytics/endpoints/…`)
//! and the endpoints only its clients ask for: the path's project, its own
//! parameter rules, and answers equal to the Logflare path's where both apply.
use crate::common::*;
use log_endpoints::{LogEndpoints, Params};
use serde_json::{json, Value};

fn path_rows(svc: &mut LogEndpoints, path: &str, query: &str) -> Result<Vec<Value>, (u16, String)> {
    svc.clear_cache();
    let params = Params::parse_query_string(query).unwrap();
    svc.query_path(path, &params, Some(KEY), NOW)
        .map(|out| {
            let body: Value = serde_json::from_str(&out.body).unwrap();
            body["result"].as_array().unwrap().clone()
        })
        .map_err(|e| (e.status(), e.to_string()))
}

fn management(name: &str, project: &str) -> String {
    format!("/v1/projects/{project}/analytics/endpoints/{name}")
}

fn function_entry(id: &str, ts: i64, function: &str, exec: Option<f64>, status: i64) -> Value {
    func(id, ts, "alpha", function, exec, status)
}

#[test]
fn api_counts_through_both_paths_for_every_interval() {
    let mut svc = service();
    let entries: Vec<Value> = (0..400)
        .map(|i| {
            let project = ["alpha", "beta"][i % 2];
            let path = [
                "/rest/v1/t",
                "/auth/v1/user",
                "/storage/v1/o",
                "/realtime/v1/ws",
            ][i % 4];
            edge(&format!("e{i}"), NOW - (i as i64) * 23 * MIN, project, path)
        })
        .collect();
    ingest(&mut svc, "edge_logs", &entries);
    for interval in [
        "15min", "30min", "1hr", "3hr", "1day", "3day", "7day", "minutely", "hourly", "daily",
    ] {
        let logflare = rows(
            &mut svc,
            "usage.api-counts",
            &[("project", "alpha"), ("interval", interval)],
        );
        for version in ["v1", "v0"] {
            let path = format!("/{version}/projects/alpha/analytics/endpoints/usage.api-counts");
            let got = path_rows(&mut svc, &path, &format!("interval={interval}")).unwrap();
            assert_eq!(got, logflare, "{interval}");
        }
        assert!(!logflare.is_empty(), "{interval}");
    }
    // Without an interval: the last 24 hours by hour, as `1day`.
    assert_eq!(
        path_rows(&mut svc, &management("usage.api-counts", "alpha"), "").unwrap(),
        rows(
            &mut svc,
            "usage.api-counts",
            &[("project", "alpha"), ("interval", "1day")]
        )
    );
    let day = rows(
        &mut svc,
        "usage.api-counts",
        &[("project", "alpha"), ("interval", "1day")],
    );
    assert!(day.len() >= 20 && day.len() <= 25, "{}", day.len());
    assert_eq!(day[0]["timestamp"].as_str().map(str::len), Some(19));
}

#[test]
fn the_path_selects_the_project_not_a_url_pattern() {
    let mut svc = service();
    // Self-hosted: the ref `default` appears in no URL.
    let mut entry = edge("d1", NOW - MIN, "default", "/rest/v1/todos");
    entry["metadata"][0]["request"][0]["url"] = json!("http://localhost:8000/rest/v1/todos");
    ingest(
        &mut svc,
        "edge_logs",
        &[entry, edge("o1", NOW - MIN, "other", "/rest/v1/default")],
    );
    let got = path_rows(
        &mut svc,
        &management("usage.api-counts", "default"),
        "interval=1hr",
    )
    .unwrap();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0]["total_rest_requests"], 1);
    // The Logflare path reads `project` as a URL pattern, as the reference does.
    let by_pattern = rows(
        &mut svc,
        "usage.api-counts",
        &[("project", "default"), ("interval", "1hr")],
    );
    assert_eq!(
        by_pattern[0]["total_rest_requests"], 1,
        "only the other project's URL matches"
    );
    let count = path_rows(
        &mut svc,
        &management("usage.api-requests-count", "default"),
        "",
    )
    .unwrap();
    assert_eq!(count, vec![json!({"count": 1})]);
    // A `project` beside the path's is ignored, and the answer says so.
    let warning = |svc: &mut LogEndpoints, query: &str| {
        let params = Params::parse_query_string(query).unwrap();
        let path = management("usage.api-requests-count", "default");
        let answer = svc.query_path(&path, &params, Some(KEY), NOW).unwrap();
        (answer.body, answer.warning)
    };
    let (body, said) = warning(&mut svc, "project=other");
    assert_eq!(&*body, r#"{"result":[{"count":1}]}"#);
    assert_eq!(
        said.as_deref(),
        Some("parameter `project` ignored: the path names the project (`default`)")
    );
    assert_eq!(warning(&mut svc, "project=default").1, None);
    // logs.all's tier is the route's own (90 days): one sent is named as ignored.
    let params = Params::parse_query_string("project_tier=FREE").unwrap();
    let answer = svc
        .query_path(&management("logs.all", "default"), &params, Some(KEY), NOW)
        .unwrap();
    assert_eq!(
        answer.warning.as_deref(),
        Some("parameter `project_tier` ignored: the Management API route sets it")
    );
}

#[test]
fn api_requests_count_is_the_last_24_hours() {
    let mut svc = service();
    ingest(
        &mut svc,
        "edge_logs",
        &[
            edge("a", NOW - 23 * HOUR, "alpha", "/rest/v1/a"),
            edge("b", NOW - MIN, "alpha", "/auth/v1/b"),
            edge("c", NOW - 25 * HOUR, "alpha", "/rest/v1/c"),
            edge("d", NOW - MIN, "beta", "/rest/v1/d"),
        ],
    );
    let path = management("usage.api-requests-count", "alpha");
    assert_eq!(
        path_rows(&mut svc, &path, "").unwrap(),
        vec![json!({"count": 2})]
    );
    assert_eq!(
        rows(
            &mut svc,
            "usage.api-requests-count",
            &[("project", "alpha")]
        ),
        vec![json!({"count": 2})]
    );
    assert_eq!(
        path_rows(
            &mut svc,
            &management("usage.api-requests-count", "nobody"),
            ""
        )
        .unwrap(),
        vec![json!({"count": 0})]
    );
}

#[test]
fn combined_stats_counts_status_classes_and_times() {
    let mut svc = service();
    let bucket = NOW / MIN * MIN - 3 * MIN;
    ingest(
        &mut svc,
        "function_edge_logs",
        &[
            function_entry("1", bucket + SEC, "f", Some(10.0), 200),
            function_entry("2", bucket + 2 * SEC, "f", Some(30.0), 201),
            function_entry("3", bucket + 3 * SEC, "f", None, 302),
            function_entry("4", bucket + 4 * SEC, "f", Some(20.0), 404),
            function_entry("5", bucket + 5 * SEC, "f", Some(50.0), 503),
            function_entry("6", bucket + 6 * SEC, "g", Some(99.0), 500),
            function_entry("7", bucket - 2 * HOUR, "f", Some(1.0), 200),
        ],
    );
    let query = "function_id=f&interval=15min";
    let got = path_rows(
        &mut svc,
        &management("functions.combined-stats", "alpha"),
        query,
    )
    .unwrap();
    assert_eq!(
        got,
        vec![json!({
            "timestamp": bucket, "requests_count": 5, "success_count": 2, "redirect_count": 1,
            "client_err_count": 1, "server_err_count": 1, "avg_execution_time": 27.5,
            "max_execution_time": 50.0, "log_count": null, "log_info_count": null,
            "log_warn_count": null, "log_error_count": null, "avg_cpu_time_used": null,
            "max_cpu_time_used": null, "avg_memory_used": null, "avg_heap_memory_used": null,
            "avg_external_memory_used": null
        })]
    );
    let by_name = rows(
        &mut svc,
        "functions.combined-stats",
        &[
            ("project", "alpha"),
            ("function_id", "f"),
            ("interval", "15min"),
        ],
    );
    assert_eq!(by_name, got);
    let day = path_rows(
        &mut svc,
        &management("functions.combined-stats", "alpha"),
        "function_id=f&interval=1day",
    )
    .unwrap();
    assert_eq!(
        day.iter()
            .map(|r| r["requests_count"].as_i64().unwrap())
            .sum::<i64>(),
        6
    );
    let e = path_rows(
        &mut svc,
        &management("functions.combined-stats", "alpha"),
        "function_id=f",
    )
    .unwrap_err();
    assert_eq!(e.0, 400);
}

#[test]
fn logs_all_windows_of_the_management_api() {
    let mut svc = service();
    let at = |minutes: i64| NOW - minutes * MIN;
    ingest(
        &mut svc,
        "edge_logs",
        &[
            edge("now", at(0) - SEC, "alpha", "/rest/v1/a"),
            edge("m5", at(5), "alpha", "/rest/v1/a"),
            edge("m5b", at(5) - 30 * SEC, "alpha", "/rest/v1/a"),
            edge("h20", at(20 * 60), "alpha", "/rest/v1/a"),
        ],
    );
    let ids = |rows: Vec<Value>| {
        rows.iter()
            .map(|r| r["id"].as_str().unwrap().to_owned())
            .collect::<Vec<_>>()
    };
    let path = management("logs.all", "alpha");
    let iso = |us: i64| log_endpoints::timestamp::format_rfc3339(us);
    // No bounds: the last minute. Studio's `sql` is ignored.
    assert_eq!(
        ids(path_rows(&mut svc, &path, "sql=select%201").unwrap()),
        ["now"]
    );
    // One bound: a minute beside it (start exclusive, end inclusive).
    let start = format!("iso_timestamp_start={}", iso(at(6)));
    assert_eq!(
        ids(path_rows(&mut svc, &path, &start).unwrap()),
        ["m5", "m5b"]
    );
    let start = format!("iso_timestamp_start={}", iso(at(5) - 40 * SEC));
    assert_eq!(
        ids(path_rows(&mut svc, &path, &start).unwrap()),
        ["m5", "m5b"]
    );
    let start = format!("iso_timestamp_start={}", iso(at(5)));
    assert!(path_rows(&mut svc, &path, &start).unwrap().is_empty());
    let end = format!("iso_timestamp_end={}", iso(at(5)));
    assert_eq!(
        ids(path_rows(&mut svc, &path, &end).unwrap()),
        ["m5", "m5b"]
    );
    // Both: up to 24 hours; past data is found whatever the tier would say.
    let both = format!(
        "iso_timestamp_start={}&iso_timestamp_end={}",
        iso(at(21 * 60)),
        iso(at(0))
    );
    assert_eq!(
        ids(path_rows(&mut svc, &path, &both).unwrap()),
        ["now", "m5", "m5b", "h20"]
    );
    let long = format!(
        "iso_timestamp_start={}&iso_timestamp_end={}",
        iso(at(24 * 60 + 1)),
        iso(at(0))
    );
    let e = path_rows(&mut svc, &path, &long).unwrap_err();
    assert_eq!(e.0, 400);
    assert!(e.1.contains("`iso_timestamp_end`"), "{}", e.1);
}

/// A warning names what the caller sent; as a header it holds only
/// printable ASCII (a line break or a character past U+00FF would make the
/// host's `Headers` throw, and the answer be lost), and as text it is whole.
#[test]
fn a_warning_of_what_the_caller_sent_is_a_valid_header() {
    let mut svc = service();
    let params = Params::parse_query_string("project=x&a%0D%0Ab=1&t%C3%BCr=2").unwrap();
    let path = "/v1/projects/a%0Ab%E2%80%A8/analytics/endpoints/logs.all";
    let answer = svc.query_path(path, &params, Some(KEY), NOW).unwrap();
    let text = answer.warning.clone().unwrap();
    assert!(
        text.contains("unknown parameter `a\r\nb` ignored") && text.contains("`tür`"),
        "{text}"
    );
    assert!(text.contains("(`a\nb\u{2028}`)"), "{text}");
    let http = log_endpoints::HttpAnswer::from(&answer);
    let (_, header) = http
        .headers
        .iter()
        .find(|(name, _)| name == "X-Endpoint-Warning")
        .unwrap();
    assert!(
        header.bytes().all(|b| (b' '..=b'~').contains(&b)),
        "{header}"
    );
    assert!(
        header.contains("`a%0D%0Ab`")
            && header.contains("`t%C3%BCr`")
            && header.contains("a%0Ab%E2%80%A8"),
        "{header}"
    );
}
