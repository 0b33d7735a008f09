//! Every case of tests/bad_inputs.json through the core: the same file drives the
//! JS API test and the README's table, so the table says what the code does.
use log_endpoints::{ApiKey, Config, Limits, LogEndpoints, Params};
use serde_json::Value;

const NOW: i64 = 1_795_177_796_789_000;

/// Expands `{{N*x}}` into x repeated N times (x must not end in `}`).
fn expand(template: &str) -> String {
    let mut out = String::new();
    let mut rest = template;
    while let Some(start) = rest.find("{{") {
        let Some((count, tail)) = rest[start + 2..]
            .split_once('*')
            .filter(|(n, _)| n.bytes().all(|b| b.is_ascii_digit()))
        else {
            out.push_str(&rest[..start + 2]);
            rest = &rest[start + 2..];
            continue;
        };
        // The first `}}` closes (so repeated text must not end in `}`).
        let end = tail.find("}}").expect("closing }}");
        out.push_str(&rest[..start]);
        out.push_str(&tail[..end].repeat(count.parse().unwrap()));
        rest = &tail[end + 2..];
    }
    out.push_str(rest);
    out
}

fn service(limits: Option<&Value>) -> LogEndpoints {
    let l: Limits = limits.map_or_else(Limits::default, |l| {
        serde_json::from_value(l.clone()).unwrap()
    });
    LogEndpoints::new(Config {
        api_keys: vec![
            ApiKey::new("good-key").unwrap(),
            ApiKey::new("alpha-key").unwrap().only_projects(&["alpha"]),
        ],
        limits: l,
        block_storage: None,
    })
}

fn check_error(what: &str, e: &log_endpoints::Error, expect: &Value) {
    assert_eq!(
        u64::from(e.status()),
        expect["status"].as_u64().unwrap(),
        "{what}: {e}"
    );
    assert_eq!(e.code(), expect["code"].as_str().unwrap(), "{what}: {e}");
    if let Some(message) = expect["message"].as_str() {
        assert!(
            e.to_string().contains(message),
            "{what}: `{e}` lacks `{message}`"
        );
    }
}

#[test]
fn every_bad_input_gets_the_documented_answer() {
    let cases: Value = serde_json::from_str(include_str!("../bad_inputs.json")).unwrap();
    let cases = cases["cases"].as_array().unwrap();
    assert!(cases.len() >= 30);
    for case in cases {
        let what = case["what"].as_str().unwrap();
        let expect = &case["expect"];
        let mut svc = service(case.get("limits"));
        if let Some(ingest) = case.get("ingest") {
            let bytes: Vec<u8> = match ingest.get("bytes") {
                Some(bytes) => bytes
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|b| b.as_u64().unwrap() as u8)
                    .collect(),
                None => expand(ingest["batch"].as_str().unwrap()).into_bytes(),
            };
            let before = svc.stats();
            match svc.ingest(ingest["stream"].as_str().unwrap(), &bytes) {
                Ok(report) => {
                    assert_eq!(
                        report.accepted as u64,
                        expect["accepted"].as_u64().expect(what),
                        "{what}"
                    );
                    let [index, reason] = [&expect["rejected"][0], &expect["rejected"][1]];
                    let first = report.rejected.first().expect(what);
                    assert_eq!(first.index as u64, index.as_u64().unwrap(), "{what}");
                    assert!(
                        first.reason.to_string().contains(reason.as_str().unwrap()),
                        "{what}: `{}`",
                        first.reason
                    );
                }
                Err(e) => {
                    check_error(what, &e, expect);
                    assert_eq!(
                        svc.stats(),
                        before,
                        "{what}: a refused batch must change nothing"
                    );
                }
            }
        } else {
            let query = &case["query"];
            let result = Params::parse_query_string(&expand(query["params"].as_str().unwrap()))
                .and_then(|params| match query["path"].as_str() {
                    Some(path) => svc.query_path(path, &params, query["key"].as_str(), NOW),
                    None => svc.query(
                        query["endpoint"].as_str().unwrap(),
                        &params,
                        query["key"].as_str(),
                        NOW,
                    ),
                });
            match result {
                Ok(out) => {
                    assert_eq!(expect["status"], 200, "{what}: succeeded");
                    let warning = expect["warning"].as_str();
                    assert_eq!(
                        out.warning.is_some(),
                        warning.is_some(),
                        "{what}: {:?}",
                        out.warning
                    );
                    if let (Some(got), Some(expected)) = (&out.warning, warning) {
                        assert!(got.contains(expected), "{what}: {got}");
                    }
                }
                Err(e) => check_error(what, &e, expect),
            }
        }
    }
}

#[test]
fn templates_expand() {
    assert_eq!(expand("a{{3*[}}{{3*]}}}"), "a[[[]]]}");
    assert_eq!(expand("{{2*{\"a\":1}\n}}"), "{\"a\":1}\n{\"a\":1}\n");
    assert_eq!(expand("{{2*x=1&}}"), "x=1&x=1&");
}
