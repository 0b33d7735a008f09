//! Random logs and queries for the property tests (and for the wasm-versus-native
//! comparison, through `src/bin/random_cases.rs`). Values are chosen so that
//! answers have one right form: execution times are multiples of 1/4 (sums are
//! exact in any order) and entry ids are unique (logs.all breaks ties by id).
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use log_endpoints::timestamp::format_rfc3339;
use proptest::prelude::*;
use serde_json::{json, Value};

/// 2026-11-20T12:29:56.789Z in microseconds.
pub const NOW: i64 = 1_795_177_796_789_000;
const HOUR: i64 = 3_600_000_000;

const PROJECTS: [&str; 4] = ["alpha", "beta", "gamma", "δelta"];
const FUNCTIONS: [&str; 3] = ["fn-a", "fn-b", "fn-c"];
const PATHS: [&str; 6] = [
    "/rest/v1/todos",
    "/auth/v1/token",
    "/storage/v1/object/x.png",
    "/realtime/v1/websocket",
    "/functions/v1/fn-a",
    "/rest/v1/rpc/auth_check",
];

#[derive(Debug, Clone)]
pub struct Entry {
    pub stream: &'static str,
    pub value: Value,
}

fn timestamp() -> impl Strategy<Value = Value> {
    // Mostly the last 10 days, some in the future, in every accepted encoding; a
    // quarter on a few shared instants, so that ties are common.
    let back = prop_oneof![
        3 => -2 * HOUR..240 * HOUR,
        1 => prop::sample::select(&[0, HOUR, 3 * HOUR + 7, 23 * HOUR, 25 * HOUR, 100 * HOUR][..]),
    ];
    (back, 0..4u8).prop_map(|(back, form)| {
        let us = NOW - back;
        match form {
            0 => json!(us),
            1 => json!(us / 1000),
            2 => json!(format_rfc3339(us)),
            _ => json!(us * 1000),
        }
    })
}

fn project() -> impl Strategy<Value = Option<&'static str>> {
    prop_oneof![9 => prop::sample::select(&PROJECTS[..]).prop_map(Some), 1 => Just(None)]
}

fn request() -> BoxedStrategy<Value> {
    (prop::sample::select(&PATHS[..]), prop::sample::select(&PROJECTS[..]), 0..5u8).prop_map(
        |(path, project, q)| json!({"url": format!("https://{project}.supabase.co{path}?q={q}"), "path": path}),
    )
    .boxed()
}

/// REPEATED fields come as an array or, now and then, a single record.
fn repeated(item: BoxedStrategy<Value>) -> BoxedStrategy<Value> {
    prop_oneof![
        4 => prop::collection::vec(item.clone(), 0..3).prop_map(Value::Array),
        1 => item,
    ]
    .boxed()
}

fn edge_entry() -> impl Strategy<Value = Value> {
    (timestamp(), project(), prop::option::of("[a-z |/0-9]{0,12}"), repeated(repeated(request()).prop_map(|r| json!({"request": r})).boxed()))
        .prop_map(|(timestamp, project, message, metadata)| {
            json!({"timestamp": timestamp, "project": project, "event_message": message, "metadata": metadata})
        })
}

fn function_record() -> BoxedStrategy<Value> {
    let status = prop_oneof![
        prop::sample::select(&[200, 201, 304, 399, 400, 404, 500][..]).prop_map(|s| json!(s)),
        Just(Value::Null)
    ];
    (
        project(),
        prop::option::of(prop::sample::select(&FUNCTIONS[..])),
        // Thousandths, as hosts write them: their float sums depend on the
        // order they are added in, which answers must not.
        prop::option::of(0..5_000_000u32),
        repeated(status.prop_map(|s| json!({"status_code": s})).boxed()),
    )
        .prop_map(|(project, function, thousandths, response)| {
            json!({"project_ref": project, "function_id": function,
                   "execution_time_ms": thousandths.map(|t| f64::from(t) / 1000.0), "response": response})
        })
        .boxed()
}

fn function_entry() -> impl Strategy<Value = Value> {
    (timestamp(), repeated(function_record()))
        .prop_map(|(timestamp, metadata)| json!({"timestamp": timestamp, "metadata": metadata}))
}

/// Up to `max` entries of both streams, a few of them invalid, with unique ids.
pub fn entries(max: usize) -> impl Strategy<Value = Vec<Entry>> {
    let entry = prop_oneof![
        10 => edge_entry().prop_map(|v| Entry { stream: "edge_logs", value: v }),
        10 => function_entry().prop_map(|v| Entry { stream: "function_edge_logs", value: v }),
        1 => Just(Entry { stream: "edge_logs", value: json!({"timestamp": "not a time"}) }),
        1 => Just(Entry { stream: "function_edge_logs", value: json!({"timestamp": -1}) }),
    ];
    prop::collection::vec(entry, 1..max).prop_map(|mut entries| {
        for (n, entry) in entries.iter_mut().enumerate() {
            if let Value::Object(map) = &mut entry.value {
                map.insert("id".into(), json!(format!("id-{n:05}")));
            }
        }
        entries
    })
}

#[derive(Debug, Clone)]
pub struct RandomQuery {
    pub endpoint: &'static str,
    pub params: Vec<(String, String)>,
    pub now: i64,
}

fn iso_around_now() -> impl Strategy<Value = String> {
    (-3 * HOUR..200 * HOUR).prop_map(|back| format_rfc3339(NOW - back))
}

pub fn query() -> impl Strategy<Value = RandomQuery> {
    let project = prop::sample::select(&["alpha", "beta", "gamma", "δelta", "nobody"][..]);
    let stats = (
        project.clone(),
        prop::sample::select(&["5min", "15min", "1hr", "1day", "7day", "weekly"][..]),
        prop::option::of(prop::sample::select(&["fn-a", "fn-b", "fn-c", ""][..])),
    )
        .prop_map(|(p, i, f)| {
            let mut params = vec![
                ("project".to_owned(), p.to_owned()),
                ("interval".to_owned(), i.to_owned()),
            ];
            params.extend(f.map(|f| ("function_id".to_owned(), f.to_owned())));
            ("functions.invocation-stats", params)
        });
    let logs = (
        project,
        prop::sample::select(&["FREE", "PRO", "PAYG", "ENTERPRISE", "TEAM"][..]),
        prop::option::of(iso_around_now()),
        prop::option::of(iso_around_now()),
    )
        .prop_map(|(p, t, start, end)| {
            let mut params = vec![
                ("project".to_owned(), p.to_owned()),
                ("project_tier".to_owned(), t.to_owned()),
            ];
            params.extend(start.map(|s| ("iso_timestamp_start".to_owned(), s)));
            params.extend(end.map(|e| ("iso_timestamp_end".to_owned(), e)));
            ("logs.all", params)
        });
    let counts = (
        prop::sample::select(
            &[
                "alpha",
                "alpha|beta",
                r"\.supabase\.co/(rest|auth)",
                "δ",
                "(",
                "^https://gamma",
            ][..],
        ),
        prop::sample::select(&["minutely", "hourly", "daily", "weekly"][..]),
    )
        .prop_map(|(p, i)| {
            (
                "usage.api-counts",
                vec![
                    ("project".to_owned(), p.to_owned()),
                    ("interval".to_owned(), i.to_owned()),
                ],
            )
        });
    // Whole milliseconds, so the JS API (which takes "now" in ms) can say the same instant.
    (prop_oneof![stats, logs, counts], -HOUR / 1000..HOUR / 1000).prop_map(
        |((endpoint, params), shift_ms)| RandomQuery {
            endpoint,
            params,
            now: NOW + shift_ms * 1000,
        },
    )
}

/// Entries of many other projects (`tenant-NN`, Zipf-like sizes: tenant 0 the
/// busiest), on their own hosts, which no `query()` asks for or matches: a
/// store's answers must not change when they are added.
pub fn other_tenants(max: usize) -> impl Strategy<Value = Vec<Entry>> {
    let tenant = (0.0..1.0f64).prop_map(|u| (u.powi(3) * 60.0) as usize);
    let entry = (tenant, timestamp(), prop::sample::select(&PATHS[..]), any::<bool>()).prop_map(
        |(tenant, timestamp, path, edge)| {
            let project = format!("tenant-{tenant:02}");
            if edge {
                let url = format!("https://{project}.example.net{path}");
                Entry {
                    stream: "edge_logs",
                    value: json!({"timestamp": timestamp, "project": project, "event_message": path,
                                  "metadata": [{"request": [{"url": url, "path": path}]}]}),
                }
            } else {
                Entry {
                    stream: "function_edge_logs",
                    value: json!({"timestamp": timestamp, "metadata": [{"project_ref": project, "function_id": "fn-a",
                                  "execution_time_ms": 1.5, "response": [{"status_code": 200}]}]}),
                }
            }
        },
    );
    prop::collection::vec(entry, 0..max).prop_map(|mut entries| {
        for (n, entry) in entries.iter_mut().enumerate() {
            if let Value::Object(map) = &mut entry.value {
                map.insert("id".into(), json!(format!("tenant-id-{n:05}")));
            }
        }
        entries
    })
}

/// Edge entries of the queried projects with long messages (0.5–3 KB), up
/// to `max`: enough text to fill and seal text blocks.
pub fn long_entries(max: usize) -> impl Strategy<Value = Vec<Entry>> {
    let entry = (timestamp(), prop::sample::select(&PROJECTS[..]), 500..3000usize, any::<u64>())
        .prop_map(|(timestamp, project, len, seed)| {
            // Words from the seed: text deflate shortens, as log lines are.
            let mut shapes = Shapes(seed | 1);
            let mut message = String::with_capacity(len + 8);
            while message.len() < len {
                let state = shapes.next();
                message.push_str(["select", "from", "where", "rows", "ms", "GET", "/rest/v1/"][(state % 7) as usize]);
                message.push_str(&format!(" {} ", state % 1000));
            }
            Entry {
                stream: "edge_logs",
                value: json!({"timestamp": timestamp, "project": project, "event_message": message,
                              "metadata": [{"request": [{"url": format!("https://{project}.supabase.co/rest/v1/t"), "path": "/rest/v1/t"}]}]}),
            }
        });
    prop::collection::vec(entry, 0..max).prop_map(|mut entries| {
        for (n, entry) in entries.iter_mut().enumerate() {
            if let Value::Object(map) = &mut entry.value {
                map.insert("id".into(), json!(format!("long-id-{n:05}")));
            }
        }
        entries
    })
}

/// NDJSON of `entries`.
pub fn ndjson<'a>(entries: impl IntoIterator<Item = &'a Value>) -> String {
    entries.into_iter().map(|v| v.to_string() + "\n").collect()
}

/// An edge entry as a shipper may have written it: members in any order,
/// spaces and tabs around tokens, escapes serde_json would not write (`\/`,
/// `\u00e9`, surrogate pairs), numbers in forms it would not keep (`1.50`,
/// `1e3`, 23 digits), unknown members (sometimes twice) and keys written with
/// an escape. Ids are plain, escaped, or UUIDs (which the store keeps as
/// 16 bytes when written in lowercase); `metadata` is one record or two,
/// a bare record, or null, and the message may be null or absent.
#[derive(Debug, Clone)]
pub struct RawEdge {
    /// As decoded; unique.
    pub id: String,
    pub project: &'static str,
    /// Microseconds since the Unix epoch.
    pub timestamp: i64,
    /// As decoded.
    pub event_message: Option<String>,
    /// The raw text of its value, without the spaces around it: the bytes
    /// logs.all must give back.
    pub metadata: String,
    /// The entry's NDJSON line, without its newline.
    pub line: String,
}

/// `min..max` edge entries (`RawEdge`) of `PROJECTS`, within the 20 hours
/// before `NOW`; a quarter on a few shared instants, so that ties are
/// common.
pub fn raw_edge_entries(min: usize, max: usize) -> impl Strategy<Value = Vec<RawEdge>> {
    let back = prop_oneof![
        3 => 1..20 * HOUR,
        1 => prop::sample::select(&[1, HOUR, 3 * HOUR + 7][..]),
    ];
    prop::collection::vec((any::<u64>(), back), min..max).prop_map(|picks| {
        picks
            .into_iter()
            .enumerate()
            .map(|(n, (seed, back))| raw_edge(n, seed, NOW - back))
            .collect()
    })
}

/// Xorshift: the shapes of one entry from one seed.
struct Shapes(u64);

impl Shapes {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len())]
    }

    fn space(&mut self) -> &'static str {
        self.pick(&["", "", "", " ", "  ", "\t", " \t"])
    }

    fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            items.swap(i, self.below(i + 1));
        }
    }

    /// A JSON string: its text (with quotes) and what it decodes to.
    fn string(&mut self, max_parts: usize) -> (String, String) {
        const PARTS: [(&str, &str); 13] = [
            ("a", "a"),
            ("GET | 200", "GET | 200"),
            ("caf\\u00e9", "café"),
            ("\\\"q\\\"", "\"q\""),
            ("\\\\", "\\"),
            ("\\/", "/"),
            ("\\n", "\n"),
            ("\\t", "\t"),
            ("\\ud83d\\ude00", "😀"),
            ("é", "é"),
            ("日本", "日本"),
            (" ", " "),
            ("\\u0000", "\0"),
        ];
        let (mut text, mut decoded) = (String::from("\""), String::new());
        for _ in 0..self.below(max_parts + 1) {
            let (raw, value) = self.pick(&PARTS);
            text.push_str(raw);
            decoded.push_str(value);
        }
        text.push('"');
        (text, decoded)
    }

    /// Any JSON value, nested at most `depth` deep.
    fn value(&mut self, depth: usize) -> String {
        const NUMBERS: [&str; 10] = [
            "0",
            "-0",
            "1.50",
            "1e3",
            "1E-7",
            "-12.5e+10",
            "12345678901234567890123",
            "3.141592653589793238462643383279",
            "-0.0",
            "200",
        ];
        match (self.below(10), depth) {
            (0..=2, _) => self.pick(&NUMBERS).to_string(),
            (3..=4, _) => self.string(6).0,
            (5, _) => self.pick(&["true", "false", "null"]).to_string(),
            (6..=7, 1..) => {
                let items: Vec<String> =
                    (0..self.below(4)).map(|_| self.value(depth - 1)).collect();
                self.list('[', items, ']')
            }
            (_, 1..) => {
                let members = self.extra_members(depth - 1, 4);
                self.list('{', members, '}')
            }
            _ => "null".to_string(),
        }
    }

    /// Up to `max` members with keys no reader knows, none twice.
    fn extra_members(&mut self, depth: usize, max: usize) -> Vec<String> {
        let mut keys = ["a", "b2", "x-trace", "caf\\u00e9", "k\\\"q", "", "deep"];
        self.shuffle(&mut keys);
        let count = self.below(max + 1);
        keys[..count]
            .iter()
            .map(|key| {
                let value = self.value(depth);
                self.member(key, &value)
            })
            .collect()
    }

    fn member(&mut self, key: &str, value: &str) -> String {
        format!("\"{key}\"{}:{}{value}", self.space(), self.space())
    }

    /// `items` between `open` and `close`, with spaces around each.
    fn list(&mut self, open: char, items: Vec<String>, close: char) -> String {
        let mut out = format!("{open}{}", self.space());
        for (i, item) in items.iter().enumerate() {
            if i > 0 {
                out.push_str(&format!("{},{}", self.space(), self.space()));
            }
            out.push_str(item);
        }
        out.push_str(self.space());
        out.push(close);
        out
    }
}

/// Entry `n` of `raw_edge_entries`, shaped by `seed`.
fn raw_edge(n: usize, seed: u64, timestamp: i64) -> RawEdge {
    let mut shapes = Shapes(seed | 1);
    let project = shapes.pick(&PROJECTS);
    // The id as written, and as it reads.
    let (id_text, id) = match shapes.below(4) {
        0 => {
            let uuid = format!("{n:08x}-0000-4000-8000-{:012x}", seed >> 16);
            (uuid.clone(), uuid)
        }
        1 => {
            let uuid = format!("{n:08X}-0000-4000-8000-{:012X}", seed >> 16);
            (uuid.clone(), uuid)
        }
        2 => (format!("r\\u0061w-{n:05}"), format!("raw-{n:05}")),
        _ => (format!("raw-{n:05}"), format!("raw-{n:05}")),
    };
    let url = match shapes.below(3) {
        0 => format!("\"https://{project}.supabase.co/rest/v1/t?q=caf\\u00e9\""),
        1 => format!("\"https:\\/\\/{project}.supabase.co\\/rest\\/v1\\/t\""),
        _ => format!("\"https://{project}.supabase.co/storage/v1/object/a%20b.png\""),
    };
    let path = shapes
        .pick(&["\"/rest/v1/t\"", "\"\\/rest\\/v1\\/t\""])
        .to_string();
    let mut request = vec![shapes.member("url", &url), shapes.member("path", &path)];
    request.extend(shapes.extra_members(2, 3));
    shapes.shuffle(&mut request);
    let request = shapes.list('{', request, '}');
    let request = shapes.list('[', vec![request], ']');
    // Text for deflate to shorten, as log lines are: enough of it that a
    // few hundred entries fill blocks.
    let body = shapes.string(200).0;
    let mut record = vec![
        shapes.member("request", &request),
        shapes.member("body", &body),
    ];
    record.extend(shapes.extra_members(3, 4));
    shapes.shuffle(&mut record);
    let record = shapes.list('{', record, '}');
    let metadata = match shapes.below(8) {
        0 => "null".to_string(),
        1 => record,
        2 => {
            let other = shapes.extra_members(2, 3);
            let other = shapes.list('{', other, '}');
            shapes.list('[', vec![record, other], ']')
        }
        _ => shapes.list('[', vec![record], ']'),
    };
    let (message, event_message) = shapes.string(8);
    let (message, event_message) = match shapes.below(8) {
        0 => (None, None),
        1 => (Some("null".to_string()), None),
        _ => (Some(message), Some(event_message)),
    };
    let metadata_key = shapes.pick(&["metadata", "metadata", "metad\\u0061ta"]);
    let mut members = vec![
        shapes.member("id", &format!("\"{id_text}\"")),
        shapes.member("timestamp", &timestamp.to_string()),
        shapes.member("project", &format!("\"{project}\"")),
        shapes.member(metadata_key, &metadata),
    ];
    if let Some(message) = message {
        members.push(shapes.member("event_message", &message));
    }
    for _ in 0..shapes.below(3) {
        let value = shapes.value(2);
        members.push(shapes.member("x", &value));
    }
    shapes.shuffle(&mut members);
    let line = shapes.list('{', members, '}');
    RawEdge {
        id,
        project,
        timestamp,
        event_message,
        metadata,
        line,
    }
}
