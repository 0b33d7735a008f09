use crate::common::*;
use log_endpoints::{ApiKey, Config, LogEndpoints};
use serde_json::{json, Value};

const EDGE: &str = "edge_logs";

fn counts(row: &Value) -> [i64; 4] {
    [
        "total_rest_requests",
        "total_storage_requests",
        "total_auth_requests",
        "total_realtime_requests",
    ]
    .map(|f| row[f].as_i64().unwrap())
}

#[test]
fn minutely_window_and_areas() {
    let mut svc = service();
    let start = NOW - 60 * MIN;
    ingest(
        &mut svc,
        EDGE,
        &[
            edge("at-start", start, "abc", "/rest/v1/todos"),
            edge("before-start", start - 1, "abc", "/rest/v1/todos"),
            edge("storage", NOW - 30 * SEC, "abc", "/storage/v1/object/x"),
            edge("auth", NOW - 30 * SEC, "abc", "/auth/v1/token"),
            edge("realtime", NOW - 30 * SEC, "abc", "/realtime/v1/websocket"),
            edge("graphql", NOW - 30 * SEC, "abc", "/graphql/v1"),
            edge("other-project", NOW - 30 * SEC, "xyz", "/rest/v1/todos"),
            edge("future", NOW + 5 * MIN, "abc", "/rest/v1/todos"),
        ],
    );
    let got = rows(
        &mut svc,
        "usage.api-counts",
        &[("project", "abc"), ("interval", "minutely")],
    );
    assert_eq!(got.len(), 3);
    // start = 11:29:56.789 → bucket 11:29:00
    assert_eq!(got[0]["timestamp"], json!("2026-11-20T11:29:00"));
    assert_eq!(counts(&got[0]), [1, 0, 0, 0]);
    assert_eq!(got[1]["timestamp"], json!("2026-11-20T12:29:00"));
    assert_eq!(counts(&got[1]), [0, 1, 1, 1]);
    assert_eq!(got[2]["timestamp"], json!("2026-11-20T12:34:00"));
}

#[test]
fn a_matching_bucket_appears_even_with_zero_counts() {
    let mut svc = service();
    ingest(
        &mut svc,
        EDGE,
        &[edge("g", NOW - MIN, "abc", "/graphql/v1")],
    );
    let got = rows(
        &mut svc,
        "usage.api-counts",
        &[("project", "abc"), ("interval", "hourly")],
    );
    assert_eq!(got.len(), 1);
    assert_eq!(got[0]["timestamp"], json!("2026-11-20T12:00:00"));
    assert_eq!(counts(&got[0]), [0, 0, 0, 0]);
}

#[test]
fn daily_buckets_over_seven_days() {
    let mut svc = service();
    ingest(
        &mut svc,
        EDGE,
        &[
            edge("d0", NOW - 7 * DAY, "abc", "/rest/v1/a"),
            edge("too-old", NOW - 7 * DAY - 1, "abc", "/rest/v1/a"),
            edge("d3a", NOW - 3 * DAY, "abc", "/auth/v1/a"),
            edge("d3b", NOW - 3 * DAY + 1, "abc", "/auth/v1/a"),
        ],
    );
    let got = rows(
        &mut svc,
        "usage.api-counts",
        &[("project", "abc"), ("interval", "daily")],
    );
    let stamps: Vec<&str> = got
        .iter()
        .map(|r| r["timestamp"].as_str().unwrap())
        .collect();
    assert_eq!(stamps, vec!["2026-11-13T00:00:00", "2026-11-17T00:00:00"]);
    assert_eq!(counts(&got[1]), [0, 0, 2, 0]);
}

#[test]
fn project_is_a_regular_expression_on_the_url() {
    let mut svc = service();
    ingest(
        &mut svc,
        EDGE,
        &[
            edge("a", NOW - MIN, "abc", "/rest/v1/a"),
            edge("b", NOW - MIN, "abcdef", "/rest/v1/a"),
            edge("c", NOW - MIN, "aXc", "/rest/v1/a"),
        ],
    );
    let total = |svc: &mut _, pattern: &str| -> i64 {
        rows(
            svc,
            "usage.api-counts",
            &[("project", pattern), ("interval", "hourly")],
        )
        .iter()
        .map(|r| counts(r)[0])
        .sum()
    };
    assert_eq!(total(&mut svc, "abc"), 2); // searched anywhere: abc and abcdef
    assert_eq!(total(&mut svc, r"//abc\.supabase"), 1);
    assert_eq!(total(&mut svc, "a.c"), 3);
    assert_eq!(total(&mut svc, "^https://(abc|aXc)\\."), 2);
    assert_eq!(total(&mut svc, "nomatch"), 0);
}

#[test]
fn each_request_record_counts() {
    let mut svc = service();
    let entry = json!({"id": "multi", "timestamp": NOW - MIN, "project": "abc", "metadata": [
        {"request": [{"path": "/rest/v1/a", "url": "https://abc.supabase.co/rest/v1/a"},
                     {"path": "/storage/v1/b", "url": "https://abc.supabase.co/storage/v1/b"}]},
        {"request": {"path": "/rest/v1/c", "url": "https://zzz.supabase.co/rest/v1/c"}}]});
    ingest(&mut svc, EDGE, &[entry]);
    let got = rows(
        &mut svc,
        "usage.api-counts",
        &[("project", "abc"), ("interval", "hourly")],
    );
    assert_eq!(counts(&got[0]), [1, 1, 0, 0]);
}

#[test]
fn bad_interval_and_bad_pattern() {
    let mut svc = service();
    let e = error(
        &mut svc,
        "usage.api-counts",
        &[("project", "abc"), ("interval", "weekly")],
    );
    assert_eq!((e.status(), e.code()), (400, "invalid_parameter"));
    assert!(
        e.to_string().contains("`interval`") && e.to_string().contains("weekly"),
        "{e}"
    );
    let e = error(
        &mut svc,
        "usage.api-counts",
        &[("project", "(abc"), ("interval", "hourly")],
    );
    assert_eq!((e.status(), e.code()), (400, "invalid_parameter"));
    assert!(e.to_string().contains("`project`"), "{e}");
    let e = error(
        &mut svc,
        "usage.api-counts",
        &[("project", "(a{1000}){1000}"), ("interval", "hourly")],
    );
    assert_eq!(e.status(), 400);
    assert!(e.to_string().contains("too large"), "{e}");
}

/// Whichever literal a pattern requires (inside a host, inside a path, or
/// across the two, with refs that look alike), skipping projects by the URL
/// index counts what matching every URL counts: the pattern against the
/// same one under an alternation, which the index does not look into. And
/// deciding a URL by its origin counts what reading it counts: the pattern
/// against the same one followed by `(?:\z|)`, an assertion past the match
/// that makes every URL be read (patterns that end in `$` or `\b` are read
/// in any case), and against the regex crate run over every URL here.
mod skipping_projects_never_changes_a_count {
    use super::*;
    use proptest::prelude::*;

    fn url(origin: u8, project: u32, path: &[u8]) -> String {
        let path: String = path
            .iter()
            .map(|&p| {
                [
                    "/rest/v1/",
                    "tenant-1",
                    "7",
                    "abc",
                    "?id=eq.",
                    "/storage/v1/o/",
                    "-",
                ][p as usize % 7]
            })
            .collect();
        match origin % 4 {
            0 | 1 => format!("https://tenant-{project}.supabase.co{path}"),
            2 => format!("https://api.tenant-{}.io{path}", project + 1),
            _ => path,
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]
        #[test]
        fn for_any_literal(
            requests in prop::collection::vec((0u8..4, 1u32..25, prop::collection::vec(0u8..7, 0..4)), 1..60),
            pick in any::<prop::sample::Index>(),
            cut in (0usize..200, 1usize..30),
            anchored in any::<bool>(),
            ending in 0u8..4,
            to_origin_end in any::<bool>(),
        ) {
            let mut svc = service();
            let entries: Vec<Value> = requests.iter().enumerate().map(|(i, (origin, project, path))| {
                let mut entry = edge(&format!("e{i}"), NOW - (i as i64) * SEC, &format!("tenant-{project}"), "/rest/v1/t");
                entry["metadata"][0]["request"][0]["url"] = json!(url(*origin, *project, path));
                entry
            }).collect();
            ingest(&mut svc, EDGE, &entries);
            let (origin, project, path) = &requests[pick.index(requests.len())];
            let text = url(*origin, *project, path);
            // Half the literals end where the URL's origin ends (all URLs are ASCII).
            let origin_end = text.find("://").map(|at| {
                at + 3 + text[at + 3..].find(['/', '?', '#']).unwrap_or(text.len() - at - 3)
            });
            let literal = match origin_end {
                Some(end) if to_origin_end => {
                    text[if anchored { 0 } else { end.saturating_sub(cut.1) }..end].to_owned()
                }
                _ => {
                    let start = if anchored { 0 } else { cut.0 % text.len().max(1) };
                    text.chars().skip(start).take(cut.1).collect()
                }
            };
            prop_assume!(!literal.is_empty());
            // A match that ends the URL, a word's end, or one more byte of any kind.
            let ending = ["", "$", r"\b", "."][usize::from(ending)];
            let pattern = format!("{}{}{ending}", if anchored { "^" } else { "" }, regex::escape(&literal));
            let everything = format!("{pattern}|\\x00\\x00\\x00");
            let every_url_read = format!(r"(?:{pattern})(?:\z|)");
            let mut count = |p: &str| rows(&mut svc, "usage.api-counts", &[("project", p), ("interval", "hourly")]);
            let skipped = count(&pattern);
            if ending.is_empty() {
                prop_assert!(!skipped.is_empty(), "{pattern} matches the URL it came from");
            }
            prop_assert_eq!(&skipped, &count(&everything), "{}", pattern);
            prop_assert_eq!(&skipped, &count(&every_url_read), "{}", pattern);
            // Each request is a REST one: the REST counts are the matching URLs.
            let regex = regex::Regex::new(&pattern).unwrap();
            let matching = requests.iter().filter(|(o, p, path)| regex.is_match(&url(*o, *p, path))).count();
            prop_assert_eq!(skipped.iter().map(|r| counts(r)[0]).sum::<i64>(), matching as i64, "{}", pattern);
        }
    }
}

/// Projects with many distinct paths get a second, wide URL filter (built by
/// the batch after the one that fills a sixteenth of their first one, and
/// doubled as it fills): skipping projects by it never drops a count, in the
/// store that built it or in one restored from its snapshot. Refs look
/// alike and paths hold other projects' refs, so a literal can be in a
/// host, in a path, in both or in neither; a tenth of the URLs have no origin.
#[test]
fn wide_filters_of_busy_projects_never_drop_a_count() {
    let mut seed = 0x2545_F491_4F6C_DD1Du64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let mut svc = service();
    let mut words = Vec::new();
    for batch in 0..8 {
        let entries: Vec<Value> = (0..500)
            .map(|i| {
                // Busy projects first: tenant-1 … tenant-5 hold most entries.
                let rank = (next() % 40) * (next() % 40) / 40;
                let project = format!("tenant-{}", 1 + rank);
                let word: String = (0..10)
                    .map(|_| char::from(b'a' + (next() % 26) as u8))
                    .collect();
                let path = match next() % 4 {
                    0 => {
                        words.push(word.clone());
                        format!("/storage/v1/object/{word}")
                    }
                    1 => format!("/functions/v1/tenant-{}-fn", next() % 300),
                    2 => format!("/rest/v1/t?id=eq.{}", next() % 100_000),
                    _ => "/auth/v1/token".to_owned(),
                };
                let at = NOW - (batch * 500 + i) * SEC;
                let mut entry = edge(&format!("b{batch}-{i}"), at, &project, &path);
                if next() % 10 == 0 {
                    entry["metadata"][0]["request"][0]["url"] = json!(path);
                }
                entry
            })
            .collect();
        ingest(&mut svc, EDGE, &entries);
    }
    let config = Config {
        api_keys: vec![ApiKey::new(KEY).unwrap()],
        ..Config::default()
    };
    let mut restored = LogEndpoints::from_snapshot(&svc.snapshot(), config).unwrap();
    let mut patterns: Vec<String> = [
        "tenant-1",
        "tenant-1\\.",
        "tenant-12",
        "tenant-3-fn",
        "t-2",
        "^/storage",
        "eq\\.77",
        "co/auth",
    ]
    .map(str::to_owned)
    .to_vec();
    for _ in 0..12 {
        let word = &words[next() as usize % words.len()];
        let start = next() as usize % 6;
        patterns.push(word[start..start + 3 + next() as usize % 4].to_owned());
    }
    for pattern in &patterns {
        let count = |svc: &mut LogEndpoints, p: &str| {
            rows(
                svc,
                "usage.api-counts",
                &[("project", p), ("interval", "daily")],
            )
        };
        // An alternation is not looked into: every URL is read.
        let every_url_read = count(&mut svc, &format!("{pattern}|\\x00\\x00\\x00"));
        assert!(!every_url_read.is_empty(), "{pattern} matches some URL");
        assert_eq!(count(&mut svc, pattern), every_url_read, "{pattern}");
        assert_eq!(
            count(&mut restored, pattern),
            every_url_read,
            "{pattern}, restored"
        );
    }
}

/// A pattern that matches every origin of a project counts its requests
/// without reading its URLs. URLs without an origin have the empty one, so a
/// pattern must match the empty text to count them that way; a project with
/// more origins than the index keeps per project (15) is read URL by URL.
/// Either way the counts are those of reading every URL.
#[test]
fn patterns_that_match_every_origin_count_as_reading_every_url() {
    let mut svc = service();
    let urls_of = |project: &str| -> Vec<String> {
        match project {
            // Three origins, and URLs without one.
            "tenant-1" => (0..30)
                .map(|i| match i % 4 {
                    0 => format!("https://tenant-1.supabase.co/rest/v1/t{i}"),
                    1 => format!("https://api.tenant-1.io/rest/v1/t{i}"),
                    2 => format!("http://tenant-1.local:8000/rest/v1/t{i}"),
                    _ => format!("/rest/v1/t{i}"),
                })
                .collect(),
            // Twenty origins: more than the index keeps.
            "tenant-2" => (0..40)
                .map(|i| format!("https://h{}.tenant-2.co/rest/v1/t{i}", i % 20))
                .collect(),
            // Only URLs without an origin.
            _ => (0..10).map(|i| format!("/rest/v1/t{i}?x=co")).collect(),
        }
    };
    let mut all = Vec::new();
    for project in ["tenant-1", "tenant-2", "tenant-3"] {
        for (i, url) in urls_of(project).into_iter().enumerate() {
            let mut entry = edge(
                &format!("{project}-{i}"),
                NOW - (all.len() as i64) * SEC,
                project,
                "/rest/v1/t",
            );
            entry["metadata"][0]["request"][0]["url"] = json!(url);
            all.push((entry, url));
        }
    }
    let mut entries: Vec<Value> = all.iter().map(|(e, _)| e.clone()).collect();
    // Requests without a URL, of a project whose every origin a pattern matches: never counted.
    for i in 0..5 {
        let mut entry = edge(
            &format!("no-url-{i}"),
            NOW - (100 + i) * SEC,
            "tenant-1",
            "/rest/v1/t",
        );
        let request = entry["metadata"][0]["request"][0].as_object_mut().unwrap();
        request.remove("url");
        entries.push(entry);
    }
    ingest(&mut svc, EDGE, &entries);
    for pattern in [
        "^https://",
        "https",
        "tenant-2",
        r"^https://h(?:[0-9]|1[0-4])\.",
        "co",
        "^",
        "(?:)",
        "x*",
        "^/rest",
        "v1",
        "[a-z]",
        "t1",
    ] {
        let mut count = |p: &str| {
            rows(
                &mut svc,
                "usage.api-counts",
                &[("project", p), ("interval", "daily")],
            )
        };
        let counted = count(pattern);
        // An assertion past the match: origins no longer decide, every URL is read.
        assert_eq!(
            counted,
            count(&format!(r"(?:{pattern})(?:\z|)")),
            "{pattern}"
        );
        let regex = regex::Regex::new(pattern).unwrap();
        let matching = all.iter().filter(|(_, url)| regex.is_match(url)).count();
        let rest: i64 = counted.iter().map(|r| counts(r)[0]).sum();
        assert_eq!(rest, matching as i64, "{pattern}");
    }
}
