//! Security checks: a project-restricted key reads nothing of another project
//! through any endpoint; keys are never echoed; a regular expression cannot blow
//! up time or memory. (Constant-time key comparison is checked by counting
//! instructions: tests/node/constant-time.test.mjs.)
use crate::common::{edge, func, ingest, DAY, MIN, NOW};
use log_endpoints::{ApiKey, Config, LogEndpoints, Params};

const ALPHA_KEY: &str = "alpha-only-key-3f9a";
const ADMIN_KEY: &str = "admin-key-77c1";

fn service() -> LogEndpoints {
    let mut svc = LogEndpoints::new(Config {
        api_keys: vec![
            ApiKey::new(ALPHA_KEY).unwrap().only_projects(&["alpha"]),
            ApiKey::new(ADMIN_KEY).unwrap(),
        ],
        ..Config::default()
    });
    // Beta's traffic includes a URL that mentions alpha's ref in its path.
    ingest(
        &mut svc,
        "edge_logs",
        &[
            edge("a1", NOW - MIN, "alpha", "/rest/v1/todos"),
            edge("b1", NOW - 2 * MIN, "beta", "/rest/v1/alpha"),
            edge("b2", NOW - 3 * MIN, "beta", "/auth/v1/alpha"),
            edge("b3", NOW - 4 * MIN, "alphabet", "/storage/v1/x"),
        ],
    );
    ingest(
        &mut svc,
        "function_edge_logs",
        &[
            func("fa", NOW - MIN, "alpha", "f", Some(1.0), 200),
            func("fb", NOW - MIN, "beta", "f", Some(2.0), 500),
        ],
    );
    svc
}

fn query(
    svc: &mut LogEndpoints,
    endpoint: &str,
    params: &[(&str, &str)],
    key: &str,
) -> Result<String, (u16, String)> {
    svc.query(
        endpoint,
        &Params::from_pairs(params.iter().copied()).unwrap(),
        Some(key),
        NOW,
    )
    .map(|o| o.body.to_string())
    .map_err(|e| (e.status(), format!("{} {e}", e.code())))
}

#[test]
fn a_project_restricted_key_cannot_read_another_project() {
    let mut svc = service();
    let other_projects = [
        "beta",
        "alpha|beta",
        ".*",
        "alph.",
        "ALPHA",
        "alpha ",
        " alpha",
        "alphabet",
        "(alpha)",
        "beta&project=alpha",
    ];
    for project in other_projects {
        for (endpoint, extra) in [
            ("functions.invocation-stats", ("interval", "1day")),
            ("logs.all", ("project_tier", "ENTERPRISE")),
            ("usage.api-counts", ("interval", "daily")),
        ] {
            let answer = query(
                &mut svc,
                endpoint,
                &[("project", project), extra],
                ALPHA_KEY,
            );
            assert!(
                matches!(&answer, Err((403, _))),
                "{endpoint} project={project:?}: {answer:?}"
            );
        }
    }
    // The last value of a repeated parameter is the one used, and checked.
    let repeated = query(
        &mut svc,
        "logs.all",
        &[
            ("project", "alpha"),
            ("project", "beta"),
            ("project_tier", "PRO"),
        ],
        ALPHA_KEY,
    );
    assert!(matches!(repeated, Err((403, _))));
    // By UUID as by name.
    let id = log_endpoints::EndpointKind::LogsAll.id().to_string();
    assert!(matches!(
        query(
            &mut svc,
            &id,
            &[("project", "beta"), ("project_tier", "PRO")],
            ALPHA_KEY
        ),
        Err((403, _))
    ));
}

#[test]
fn a_restricted_key_counts_only_its_own_entries() {
    let mut svc = service();
    let own = query(
        &mut svc,
        "usage.api-counts",
        &[("project", "alpha"), ("interval", "daily")],
        ALPHA_KEY,
    )
    .unwrap();
    let rows: serde_json::Value = serde_json::from_str(&own).unwrap();
    let total: i64 = rows["result"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            [
                "total_rest_requests",
                "total_storage_requests",
                "total_auth_requests",
                "total_realtime_requests",
            ]
            .iter()
            .map(|k| r[k].as_i64().unwrap())
            .sum::<i64>()
        })
        .sum();
    assert_eq!(total, 1, "only alpha's own request: {own}");
    // The unrestricted key gets the reference's answer: every URL the pattern matches.
    let all = query(
        &mut svc,
        "usage.api-counts",
        &[("project", "alpha"), ("interval", "daily")],
        ADMIN_KEY,
    )
    .unwrap();
    assert_ne!(
        own, all,
        "the admin answer (cached separately) counts beta's URLs that mention alpha"
    );
    let logs = query(
        &mut svc,
        "logs.all",
        &[("project", "alpha"), ("project_tier", "PRO")],
        ALPHA_KEY,
    )
    .unwrap();
    assert!(logs.contains("\"a1\"") && !logs.contains("\"b1\"") && !logs.contains("\"b3\""));
    let stats = query(
        &mut svc,
        "functions.invocation-stats",
        &[("project", "alpha"), ("interval", "1day")],
        ALPHA_KEY,
    )
    .unwrap();
    assert!(
        stats.contains("\"error_count\":0") && stats.contains("\"count\":1"),
        "{stats}"
    );
}

#[test]
fn keys_are_never_echoed() {
    let mut svc = service();
    let wrong = "wrong-key-with-a-recognisable-tail-XYZZY";
    let almost = &ADMIN_KEY[..ADMIN_KEY.len() - 1];
    for key in [wrong, almost, ALPHA_KEY, ADMIN_KEY] {
        for (endpoint, params) in [
            (
                "logs.all",
                vec![("project", "beta"), ("project_tier", "PRO")],
            ),
            ("no.such-endpoint", vec![]),
            (
                "usage.api-counts",
                vec![("project", "("), ("interval", "daily")],
            ),
            (
                "usage.api-counts",
                vec![("project", ADMIN_KEY), ("interval", "weekly")],
            ),
        ] {
            if let Err((_, body)) = query(&mut svc, endpoint, &params, key) {
                for secret in [wrong, ADMIN_KEY, ALPHA_KEY, "XYZZY"] {
                    // A key sent as a parameter value may be named back as that value,
                    // never as a key: only check bodies for keys sent as keys.
                    if params.iter().any(|(_, v)| *v == secret) {
                        continue;
                    }
                    assert!(!body.contains(secret), "{endpoint} with key {key}: {body}");
                }
            }
        }
    }
    let e = svc
        .query("logs.all", &Params::new(), Some(wrong), NOW)
        .unwrap_err();
    assert_eq!(
        (e.status(), e.to_string().as_str()),
        (401, "invalid API key")
    );
}

#[test]
fn a_regex_cannot_blow_up_time_or_memory() {
    let mut svc = service();
    // Long URLs of one repeated letter: a backtracking engine takes exponential
    // time on these patterns; ours is linear (and this test would hang otherwise).
    let long: Vec<_> = (0..2000)
        .map(|i| {
            edge(
                &format!("l{i}"),
                NOW - DAY / 2,
                "alpha",
                &format!("/rest/v1/{}", "a".repeat(3000)),
            )
        })
        .collect();
    ingest(&mut svc, "edge_logs", &long);
    for pattern in [
        "(a*)*b",
        "(a|a)*$",
        "(a+a+)+y",
        "^(([a-z])+.)+[A-Z]([a-z])+$",
        "(.*a){12}",
    ] {
        let answer = query(
            &mut svc,
            "usage.api-counts",
            &[("project", pattern), ("interval", "daily")],
            ADMIN_KEY,
        );
        assert!(answer.is_ok(), "{pattern}: {answer:?}");
    }
    // Patterns whose compiled program would be huge are refused, naming the parameter.
    for pattern in [
        "a{1000}{1000}",
        "((a{100}){100}){100}",
        "\\w{50000}",
        "\\pL{2000}",
    ] {
        match query(
            &mut svc,
            "usage.api-counts",
            &[("project", pattern), ("interval", "daily")],
            ADMIN_KEY,
        ) {
            Err((400, body)) => assert!(
                body.contains("project") && (body.contains("too large") || body.contains("limit")),
                "{body}"
            ),
            other => panic!("{pattern}: {other:?}"),
        }
    }
    // Deep nesting is refused by the parser's nest limit, not by the stack.
    let nested = "(".repeat(5000) + &")".repeat(5000);
    assert!(matches!(
        query(
            &mut svc,
            "usage.api-counts",
            &[("project", &nested), ("interval", "daily")],
            ADMIN_KEY
        ),
        Err((400, _))
    ));
}
