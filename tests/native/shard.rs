//! The sharded deployment's rules, run natively as the edge worker runs them:
//! batches prepared at the front (split by shard, keyed), kept by their ingest
//! partitions, coalesced in rounds into one delivery per shard and one
//! registration per directory partition, and ingested by the shards; calls
//! planned at the front, each directory partition gathering its shards'
//! answers in waves, and the front merging the partitions' answers. All of it
//! answers as one store of every entry; the refusals are the ones ingesting
//! the whole batch reports.
use std::collections::{BTreeMap, HashMap, HashSet};

use log_endpoints::{
    shard_name, ApiKey, Config, Delivery, EntryForm, Gather, KnownRegistrations, LogEndpoints,
    Params, QueryAnswer, Round, ShardDirectory, Source, SplitRoute, SplitRoutes,
};
use log_endpoints_tools::random_logs::{self, entries, ndjson, other_tenants, query, Entry};
use proptest::prelude::*;

use crate::common::budget_config;
use serde_json::json;

const KEY: &str = "shard-key";

/// A split of one project-day: a store that takes what fits, whatever one
/// project's share (a group's shard hands back a project past half of it).
const A_SPLIT: &str = "2026-11-20/p/p1/1";

fn service() -> LogEndpoints {
    LogEndpoints::new(Config {
        api_keys: vec![ApiKey::new(KEY).unwrap()],
        ..Config::default()
    })
}

fn batch(entries: &[Entry], stream: &str) -> String {
    ndjson(
        entries
            .iter()
            .filter(|e| e.stream == stream)
            .map(|e| &e.value),
    )
}

fn answer(svc: &mut LogEndpoints, endpoint: &str, params: &[(String, String)], now: i64) -> String {
    let params = Params::from_pairs(params.iter().cloned()).unwrap();
    match svc.query(endpoint, &params, Some(KEY), now) {
        Ok(out) => out.body.to_string(),
        Err(e) => format!("error:{}", e.code()),
    }
}

fn shard_of(project: Option<&str>, day: &str) -> String {
    let key = log_endpoints::project_key(project);
    shard_name(log_endpoints::group_of(&key), day)
}

#[test]
fn a_mixed_batch_is_split_by_shard() {
    let batch = [
        r#"{"id":"a","timestamp":1,"project":"p1","metadata":[]}"#,
        r#"{"id":"b","timestamp":2,"project":"p2"}"#,
        r#"not json"#,
        r#"{"id":"c","timestamp":3,"project":"p1"}"#,
        r#"{"id":"e","timestamp":1000000000000000,"project":"p1"}"#,
        r#"{"id":"d","timestamp":4,"metadata":[{"request":[{"url":"https://d.supabase.co/rest/v1/t"}]}]}"#,
        r#"{"timestamp":5,"project":"p2"}"#,
        r#"{"id":"f","timestamp":6}"#,
    ]
    .join("\n");
    let split = service()
        .split_by_shard("edge_logs", batch.as_bytes())
        .unwrap();
    let mut expected: BTreeMap<String, Vec<&str>> = BTreeMap::new();
    for (project, day, id) in [
        (Some("p1"), "1970-01-01", "a"),
        (Some("p2"), "1970-01-01", "b"),
        (Some("p1"), "1970-01-01", "c"),
        (Some("p1"), "2001-09-09", "e"),
        (None, "1970-01-01", "d"),
    ] {
        expected.entry(shard_of(project, day)).or_default().push(id);
    }
    let got: BTreeMap<String, Vec<String>> = split
        .parts
        .iter()
        .map(|p| {
            let rows: Vec<serde_json::Value> = serde_json::from_str(&p.body).unwrap();
            let mut ids: Vec<String> = rows
                .iter()
                .map(|r| r["id"].as_str().unwrap().to_owned())
                .collect();
            ids.sort();
            assert_eq!(p.entries, ids.len());
            (p.shard.clone(), ids)
        })
        .collect();
    let expected: BTreeMap<String, Vec<String>> = expected
        .into_iter()
        .map(|(shard, mut ids)| {
            ids.sort();
            (shard, ids.into_iter().map(String::from).collect())
        })
        .collect();
    assert_eq!(got, expected);
    let report = service().ingest("edge_logs", batch.as_bytes()).unwrap();
    assert_eq!(split.report.rejected, report.rejected);
    assert_eq!(split.report.rejected_total, 3);
    assert_eq!(split.report.accepted, report.accepted);
}

#[test]
fn batch_limits_apply_as_to_ingest() {
    let svc = LogEndpoints::new(Config {
        limits: log_endpoints::Limits {
            max_batch_entries: 1,
            ..Default::default()
        },
        ..Config::default()
    });
    let error = svc.split_by_shard("edge_logs", b"{}\n{}").unwrap_err();
    assert_eq!(error.code(), "payload_too_large");
    assert_eq!(
        svc.split_by_shard("nope", b"{}").unwrap_err().code(),
        "unknown_stream"
    );
}

/// The record the front keeps of a batch of `source`'s entries `values`.
fn record_of(front: &LogEndpoints, source: &Source, values: &[serde_json::Value]) -> Vec<u8> {
    let text = ndjson(values.iter());
    front
        .prepare_ingest(source, EntryForm::Contract, text.as_bytes(), None)
        .unwrap()
        .record
}

/// The delivery a round of one record sends to the one shard it goes to.
fn only_delivery(record: &[u8], round: u64) -> log_endpoints::ShardDelivery {
    let mut coalesced = Round::new("ingest/0", round);
    coalesced.add(record).unwrap();
    let mut deliveries = coalesced.deliveries();
    assert_eq!(deliveries.len(), 1);
    deliveries.remove(0)
}

/// The deployment, in process: its directory partitions and shards by name,
/// each shard within `shard_bytes` (none: the default budget), and each
/// ingest partition's routes (its split project-days).
#[derive(Default)]
struct Deployment {
    directories: HashMap<String, ShardDirectory>,
    shards: BTreeMap<String, LogEndpoints>,
    rounds: u64,
    shard_bytes: Option<usize>,
    routes: HashMap<String, Vec<SplitRoute>>,
    /// What each shard stored of its deliveries, as the worker keeps them to replay.
    stored: BTreeMap<String, Vec<Vec<u8>>>,
}

impl Deployment {
    fn new_shard(&self) -> LogEndpoints {
        let default = log_endpoints::Limits::default().max_store_bytes;
        LogEndpoints::new(budget_config(KEY, self.shard_bytes.unwrap_or(default)))
    }

    /// One ingest partition's round over the records it kept: registrations
    /// first, then deliveries, and what a full shard hands back sent on to
    /// each project's next split, until every row is in a shard.
    fn distribute(&mut self, partition: &str, records: &[Vec<u8>]) {
        self.rounds += 1;
        let routes = || SplitRoutes::new(self.routes.get(partition).cloned().unwrap_or_default());
        let mut round = Round::with_routes(partition, self.rounds, routes());
        for record in records {
            round.add(record).unwrap();
        }
        let mut work = Some(round);
        let mut moved = Vec::new();
        // A shard applies one delivery of a partition's round: a second would be
        // answered as the first, its rows left out.
        let mut delivered = HashSet::new();
        while let Some(round) = work.take() {
            for registration in round.registrations(&KnownRegistrations::default()) {
                let directory = self.directories.entry(registration.directory).or_default();
                for entry in registration.entries {
                    directory.add(&entry.project_key, &entry.day, entry.split, &entry.url_bits);
                }
            }
            moved.extend(round.moved());
            let mut overflows = Vec::new();
            for delivery in round.deliveries() {
                let (sent_by, sent_round) = Delivery::header(&delivery.bytes).unwrap();
                assert_eq!((sent_by.as_str(), sent_round), (partition, self.rounds));
                assert!(
                    delivered.insert(delivery.shard.clone()),
                    "{} was sent two deliveries of round {}",
                    delivery.shard,
                    self.rounds
                );
                if !self.shards.contains_key(&delivery.shard) {
                    let shard = self.new_shard();
                    self.shards.insert(delivery.shard.clone(), shard);
                }
                let shard = self.shards.get_mut(&delivery.shard).unwrap();
                let taken = shard
                    .ingest_delivery(&delivery.bytes, &delivery.shard)
                    .unwrap();
                assert!(taken.refused.is_empty(), "{:?}", taken.refused);
                assert_eq!(
                    taken.report.accepted + taken.overflow_entries,
                    delivery.entries
                );
                if taken.keep {
                    let kept = taken.kept.unwrap_or_else(|| delivery.bytes.clone());
                    self.stored
                        .entry(delivery.shard.clone())
                        .or_default()
                        .push(kept);
                }
                if let Some(overflow) = taken.overflow {
                    overflows.push((delivery.shard.clone(), overflow));
                }
            }
            // What the wave's full shards handed back: one round, as the worker sends it.
            if !overflows.is_empty() {
                work = Some(Round::rerouted(&overflows, routes(), None).unwrap());
            }
        }
        // The partition's routes change once the round is over.
        self.routes
            .entry(partition.to_owned())
            .or_default()
            .extend(moved);
    }

    /// What the worker does for a call: plan it at the front, ask the
    /// directory partitions it names, each gathering its shards' answers.
    fn answer(
        &mut self,
        front: &mut LogEndpoints,
        endpoint: &str,
        params: &[(String, String)],
        now: i64,
    ) -> String {
        let params = Params::from_pairs(params.iter().cloned()).unwrap();
        let path = format!("/api/endpoints/query/{endpoint}");
        let mut query = match front.shard_query(&path, &params, Some(KEY), now) {
            Ok(query) => query,
            Err(e) => return format!("error:{}", e.code()),
        };
        let plan = query.plan().clone();
        loop {
            let wave = query.next_wave();
            if wave.is_empty() {
                break;
            }
            for name in wave {
                let answer = self.directory_answer(&name, &plan, &path, &params, now);
                query.add(&name, answer).unwrap();
            }
        }
        front.answer_shard_query(&query).unwrap().body.to_string()
    }

    fn directory_answer(
        &mut self,
        name: &str,
        plan: &log_endpoints::QueryPlan,
        path: &str,
        params: &Params,
        now: i64,
    ) -> Option<QueryAnswer> {
        let shards = self.directories.get(name)?.lookup(plan);
        let mut gather = Gather::of_shards(plan, shards).unwrap();
        loop {
            let wave = gather.next_wave();
            if wave.is_empty() {
                break;
            }
            for shard in wave {
                let store = self
                    .shards
                    .get_mut(&shard)
                    .expect("the directory names only shards that took entries");
                let answer = if gather.partial_states() {
                    store.query_path_partial(path, params, Some(KEY), now)
                } else {
                    store.query_path(path, params, Some(KEY), now)
                };
                let answer = answer.unwrap();
                gather.add(&shard, Some(answer)).unwrap();
            }
        }
        gather.merged().map(Result::unwrap)
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn the_shards_answer_as_one_store(
        (ours, tenants) in (entries(100), other_tenants(200)),
        queries in prop::collection::vec(query(), 1..10),
        rounds in 1usize..4,
    ) {
        let all: Vec<Entry> = ours.into_iter().chain(tenants).collect();
        let mut whole = service();
        let mut deployment = Deployment::default();
        let front = service();
        // Each batch kept by the partition its key names; each partition's
        // records distributed in `rounds` rounds.
        let mut kept: BTreeMap<String, Vec<Vec<u8>>> = BTreeMap::new();
        for stream in ["edge_logs", "function_edge_logs"] {
            let text = batch(&all, stream);
            let report = whole.ingest(stream, text.as_bytes()).unwrap();
            let source = Source::stream(stream).unwrap();
            let prepared = front
                .prepare_ingest(&source, EntryForm::Contract, text.as_bytes(), None)
                .unwrap();
            prop_assert_eq!(&prepared.report.rejected, &report.rejected);
            kept.entry(prepared.key.partition).or_default().push(prepared.record);
        }
        for (partition, records) in &kept {
            for chunk in records.chunks(records.len().div_ceil(rounds).max(1)) {
                deployment.distribute(partition, chunk);
            }
        }
        let mut front = front;
        for q in &queries {
            let expected = answer(&mut whole, q.endpoint, &q.params, q.now);
            let got = deployment.answer(&mut front, q.endpoint, &q.params, q.now);
            prop_assert_eq!(got, expected, "{:?}", q);
        }
    }
}

#[test]
fn a_round_sent_again_is_the_same_round() {
    let front = service();
    let text = r#"{"id":"a","timestamp":1,"project":"p1"}"#;
    let source = Source::stream("edge_logs").unwrap();
    let prepared = front
        .prepare_ingest(&source, EntryForm::Contract, text.as_bytes(), None)
        .unwrap();
    let deliveries = |n| {
        let mut round = Round::new("ingest/1", n);
        round.add(&prepared.record).unwrap();
        round.deliveries()
    };
    assert_eq!(deliveries(4), deliveries(4));
    assert_ne!(deliveries(4), deliveries(5));
    assert!(log_endpoints::refusal_is_final(413) && log_endpoints::refusal_is_final(422));
    // Acknowledged rows are never given up for want of room or a shard down.
    for status in [503, 500, 502] {
        assert!(!log_endpoints::refusal_is_final(status), "{status}");
    }
}

/// A shard keeps each stream's section of a delivery as far as it fits on
/// its own: other sources past their quarter of its budget are handed back
/// for the project's next split (where every one of them is kept) without the
/// Kong rows of the same round, and what it stores to replay is what it kept.
#[test]
fn other_sources_over_their_share_never_take_the_streams_with_them() {
    let front = service();
    let round_of = |n: u64| {
        let edge: String = (0..20)
            .map(|i| {
                format!(
                    "{{\"id\":\"e{n}-{i}\",\"timestamp\":{},\"project\":\"p1\"}}\n",
                    1_000 + i
                )
            })
            .collect();
        let other: String = (0..150)
            .map(|i| {
                format!(
                    "{{\"id\":\"o{n}-{i}\",\"timestamp\":{},\"project\":\"p1\",\"event_message\":\"{}\"}}\n",
                    2_000 + i,
                    // Text that does not compress, so the share fills.
                    (0..20u64)
                        .map(|k| format!("{:08x}", (n * 1_000_003 + i * 7_919 + k).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32))
                        .collect::<String>()
                )
            })
            .collect();
        let mut round = Round::new("ingest/1", n);
        for (source, text) in [
            (Source::stream("edge_logs").unwrap(), &edge),
            (
                Source::logflare("postgres.logs", "source_name").unwrap(),
                &other,
            ),
        ] {
            let prepared = front
                .prepare_ingest(&source, EntryForm::Contract, text.as_bytes(), None)
                .unwrap();
            round.add(&prepared.record).unwrap();
        }
        let mut deliveries = round.deliveries();
        assert_eq!(deliveries.len(), 1);
        deliveries.remove(0).bytes
    };
    const ROUNDS: u64 = 12;
    let small = || LogEndpoints::new(budget_config(KEY, 512 << 10));
    // The project-day's splits, the newest taking each round (as the
    // partition's routes send it) and whatever its predecessor handed back.
    let mut splits = vec![small()];
    let mut stored = Vec::new();
    let mut handed_on = 0;
    for n in 1..=ROUNDS {
        let mut delivery = round_of(n);
        loop {
            let split = splits.len();
            let name = format!("2026-11-20/p/p1/{split}");
            let shard = splits.last_mut().unwrap();
            let taken = shard.ingest_delivery(&delivery, &name).unwrap();
            // What fits of the other sources is kept, the rest handed on.
            assert!(taken.refused.is_empty(), "{:?}", taken.refused);
            if split == 1 {
                stored.push(taken.kept.clone().unwrap_or_else(|| delivery.clone()));
            }
            let Some(overflow) = taken.overflow else {
                break;
            };
            handed_on += taken.overflow_entries;
            delivery = overflow;
            splits.push(small());
        }
    }
    assert!(
        handed_on > 0,
        "a later round's other sources pass their share"
    );
    let total = |count: &dyn Fn(&LogEndpoints) -> usize| splits.iter().map(count).sum::<usize>();
    assert_eq!(
        total(&|s| s.stats().edge_entries),
        20 * ROUNDS as usize,
        "every round's Kong rows are kept"
    );
    assert_eq!(
        total(&|s| s
            .stats()
            .other_sources
            .get("postgres.logs")
            .copied()
            .unwrap_or(0)),
        150 * ROUNDS as usize,
        "every other source's entry is kept, in one split or a later one"
    );
    let shard = &mut splits[0];

    // What the shard stores is what it kept: a replay holds the same.
    let mut replayed = small();
    for bytes in &stored {
        let again = replayed.ingest_delivery(bytes, A_SPLIT).unwrap();
        assert!(again.refused.is_empty() && again.kept.is_none());
    }
    assert_eq!(replayed.stats(), shard.stats());

    // A delivery none of whose sections is kept leaves nothing to store.
    let mut only_others = Round::new("ingest/1", ROUNDS + 1);
    let others = front
        .prepare_ingest(
            &Source::logflare("postgres.logs", "source_name").unwrap(),
            EntryForm::Contract,
            format!(
                "{{\"id\":\"late\",\"timestamp\":9,\"project\":\"p1\",\"event_message\":\"{}\"}}",
                "w".repeat(200_000)
            )
            .as_bytes(),
            None,
        )
        .unwrap();
    only_others.add(&others.record).unwrap();
    let refused_whole = shard
        .ingest_delivery(&only_others.deliveries().remove(0).bytes, A_SPLIT)
        .unwrap();
    assert_eq!(
        (refused_whole.keep, refused_whole.refused.len()),
        (false, 1)
    );

    // With room for them, every section is kept and the delivery stored as sent.
    let whole = service().ingest_delivery(&round_of(1), A_SPLIT).unwrap();
    assert_eq!((whole.report.accepted, whole.refused.len()), (170, 0));
    assert!(whole.keep && whole.kept.is_none());
}

/// A row larger than a whole store (here other sources' whole quarter) is
/// refused alone: the rows after it in the same section, other projects'
/// rows of the same round among them, are kept.
#[test]
fn a_row_no_store_can_hold_is_refused_alone() {
    let front = service();
    let postgres = Source::logflare("postgres.logs", "source_name").unwrap();
    let row = |id: &str, project: &str, text: String| json!({"id": id, "timestamp": 1_000, "project": project, "event_message": text});
    let mut round = Round::new("ingest/1", 1);
    round
        .add(&record_of(
            &front,
            &postgres,
            &[
                row("before", "p1", "checkpoint".into()),
                row("huge", "p1", "w".repeat(200_000)),
                row("after", "p1", "checkpoint".into()),
            ],
        ))
        .unwrap();
    let mut shard = LogEndpoints::new(budget_config(KEY, 512 << 10));
    let taken = shard
        .ingest_delivery(&round.deliveries().remove(0).bytes, A_SPLIT)
        .unwrap();
    assert_eq!((taken.report.accepted, taken.overflow_entries), (2, 0));
    assert_eq!(taken.refused.len(), 1);
    assert_eq!(
        (
            taken.refused[0].entries,
            taken.refused[0].error.code.as_str()
        ),
        (1, "payload_too_large")
    );
    assert_eq!(shard.stats().other_sources["postgres.logs"], 2);
    // What it stores replays to the same store.
    let mut replayed = service();
    let again = replayed
        .ingest_delivery(&taken.kept.expect("not kept whole"), A_SPLIT)
        .unwrap();
    assert_eq!(again.report.accepted, 2);
    assert_eq!(replayed.stats().other_sources, shard.stats().other_sources);
}

/// Busy project-days: a few projects' entries over about a day, with
/// execution times of many values, so that small shards split them.
fn busy_days() -> impl Strategy<Value = Vec<Entry>> {
    const HOUR: i64 = 3_600_000_000;
    let entry = (
        // alpha the busiest: its logs.all goes past 100 rows, over several shards.
        prop::sample::select(&["alpha", "alpha", "alpha", "beta", "tenant-7"][..]),
        0..26 * HOUR,
        any::<bool>(),
        prop::sample::select(&["/rest/v1/todos", "/auth/v1/token", "/storage/v1/x"][..]),
        prop::option::of(0..40_000u32),
        prop::sample::select(&[200, 201, 301, 404, 500][..]),
        prop::sample::select(&["fn-a", "fn-b"][..]),
    );
    prop::collection::vec(entry, 300..600).prop_map(move |drawn| {
        drawn
            .into_iter()
            .enumerate()
            .map(|(i, (project, back, edge, path, time, status, function))| {
                let timestamp = random_logs::NOW - back;
                if edge {
                    Entry {
                        stream: "edge_logs",
                        value: json!({"id": format!("e-{i}"), "timestamp": timestamp, "project": project,
                            "event_message": path, "metadata": [{"request": [{"url": format!("https://{project}.supabase.co{path}"), "path": path}]}]}),
                    }
                } else {
                    Entry {
                        stream: "function_edge_logs",
                        value: json!({"id": format!("f-{i}"), "timestamp": timestamp, "metadata": [{"project_ref": project,
                            "function_id": function, "execution_time_ms": time.map(|t| f64::from(t) / 7.0),
                            "response": [{"status_code": status}]}]}),
                    }
                }
            })
            .collect()
    })
}

/// Every endpoint's calls for the busy projects.
fn busy_queries() -> Vec<(&'static str, Vec<(String, String)>)> {
    let p = |pairs: &[(&str, &str)]| -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    };
    let mut calls = Vec::new();
    for project in ["alpha", "beta", "tenant-7"] {
        for interval in ["5min", "15min", "1hr", "1day", "7day"] {
            calls.push((
                "functions.invocation-stats",
                p(&[("project", project), ("interval", interval)]),
            ));
            calls.push((
                "functions.invocation-stats",
                p(&[
                    ("project", project),
                    ("interval", interval),
                    ("function_id", "fn-a"),
                ]),
            ));
        }
        for interval in ["15min", "1hr", "3hr", "1day"] {
            calls.push((
                "functions.combined-stats",
                p(&[
                    ("project", project),
                    ("interval", interval),
                    ("function_id", "fn-b"),
                ]),
            ));
        }
        for tier in ["FREE", "PRO"] {
            calls.push((
                "logs.all",
                p(&[("project", project), ("project_tier", tier)]),
            ));
        }
        calls.push(("usage.api-requests-count", p(&[("project", project)])));
    }
    for pattern in ["alpha", "supabase", "^https://beta", "todos|token"] {
        for interval in ["minutely", "hourly", "daily"] {
            calls.push((
                "usage.api-counts",
                p(&[("project", pattern), ("interval", interval)]),
            ));
        }
    }
    calls
}

/// The buckets (their `timestamp`s) whose execution times more than one
/// shard holds (a shard's own p95 is not null): the only ones whose p95 and
/// p99 may come from the sketch.
fn spanning_buckets(
    deployment: &mut Deployment,
    endpoint: &str,
    params: &[(String, String)],
) -> HashSet<String> {
    let mut shards_of: HashMap<String, usize> = HashMap::new();
    for shard in deployment.shards.values_mut() {
        let body: serde_json::Value =
            serde_json::from_str(&answer(shard, endpoint, params, random_logs::NOW))
                .unwrap_or_default();
        for row in body["result"].as_array().into_iter().flatten() {
            if !row["p95_execution_time"].is_null() {
                *shards_of.entry(row["timestamp"].to_string()).or_default() += 1;
            }
        }
    }
    shards_of
        .into_iter()
        .filter(|(_, shards)| *shards > 1)
        .map(|(bucket, _)| bucket)
        .collect()
}

/// How many shards hold each busy project-day's rows (its group's shard and
/// its splits), as `(day, project)`.
fn shards_per_project_day(deployment: &Deployment) -> BTreeMap<(String, String), usize> {
    let mut count = BTreeMap::new();
    for (name, shard) in &deployment.shards {
        let catalog = shard.catalog();
        let mut projects: Vec<String> = catalog.edge_projects;
        projects.extend(catalog.function_projects);
        projects.sort();
        projects.dedup();
        for project in projects {
            *count
                .entry((log_endpoints::day_of_shard(name).to_owned(), project))
                .or_default() += 1;
        }
    }
    count
}

/// Whether a split deployment's answer is one store's: every field equal
/// (avg too: its sum is exact whatever the order), except, in the `spanning`
/// buckets (whose rows sit in more than one shard), p95 and p99 within the
/// sketch's bound. Elsewhere they are exact.
fn same_answer(got: &str, expected: &str, spanning: &HashSet<String>) -> Result<(), String> {
    let (got, expected): (serde_json::Value, serde_json::Value) = (
        serde_json::from_str(got).map_err(|e| format!("{e}: {got}"))?,
        serde_json::from_str(expected).map_err(|e| format!("{e}: {expected}"))?,
    );
    let (Some(got_rows), Some(expected_rows)) =
        (got["result"].as_array(), expected["result"].as_array())
    else {
        return if got == expected {
            Ok(())
        } else {
            Err(format!("{got} ≠ {expected}"))
        };
    };
    if got_rows.len() != expected_rows.len() {
        return Err(format!("{} rows ≠ {}", got_rows.len(), expected_rows.len()));
    }
    for (g, e) in got_rows.iter().zip(expected_rows) {
        let (Some(g), Some(e)) = (g.as_object(), e.as_object()) else {
            return Err("a row is not an object".into());
        };
        if g.keys().collect::<Vec<_>>() != e.keys().collect::<Vec<_>>() {
            return Err(format!("fields {g:?} ≠ {e:?}"));
        }
        let spans = e
            .get("timestamp")
            .is_some_and(|t| spanning.contains(&t.to_string()));
        for (name, want) in e {
            let have = &g[name];
            let bound = match name.as_str() {
                "p95_execution_time" | "p99_execution_time" if spans => {
                    log_endpoints::SKETCH_RELATIVE_ERROR
                }
                _ => 0.0,
            };
            let close = match (have.as_f64(), want.as_f64()) {
                (Some(h), Some(w)) if bound > 0.0 => (h - w).abs() <= bound * w.abs() + 1e-12,
                _ => have == want,
            };
            if !close {
                return Err(format!("{name}: {have} ≠ {want} in {g:?} / {e:?}"));
            }
        }
    }
    Ok(())
}

/// Project-days split across shards by size (each shard within a small
/// budget) answer every endpoint as one store of every entry does: p95/p99
/// exactly where one shard holds a bucket's times, and within the sketch's
/// bound where several do (which some of the cases must reach). The cases
/// spread a project-day over each of 2, 3, 4 and 5 shards (the busiest
/// over more).
#[test]
fn split_project_days_answer_as_one_store() {
    use proptest::test_runner::{Config, TestRunner};
    let spanned = std::cell::Cell::new(0);
    // Bit k: some project-day's rows were in k shards.
    let spread = std::cell::Cell::new(0u32);
    // Its source file, as the proptest! macro gives it: a failure's seed is
    // kept in tests/proptest-regressions/shard.txt and tried first next time.
    let mut runner = TestRunner::new(Config {
        cases: 32,
        source_file: Some(file!()),
        ..Config::default()
    });
    // Budgets from 4,000 to 10,000 bytes spread a project-day over 2 to 20
    // shards: in 300 cases, each of 2, 3, 4 and 5 came in at least 43% of
    // them, so 32 cases miss one with a chance under 1 in 10^7.
    let cases = (busy_days(), 4_000usize..10_000, 1usize..4);
    let result = runner.run(&cases, |(entries, shard_bytes, rounds)| {
        let mut whole = service();
        let mut deployment = Deployment {
            shard_bytes: Some(shard_bytes),
            ..Deployment::default()
        };
        let front = service();
        let mut kept: BTreeMap<String, Vec<Vec<u8>>> = BTreeMap::new();
        for stream in ["edge_logs", "function_edge_logs"] {
            // Several batches a stream, so that rounds follow one another.
            let mine: Vec<Entry> = entries
                .iter()
                .filter(|e| e.stream == stream)
                .cloned()
                .collect();
            for part in mine.chunks(40) {
                let text = batch(part, stream);
                whole.ingest(stream, text.as_bytes()).unwrap();
                let prepared = front
                    .prepare_ingest(
                        &Source::stream(stream).unwrap(),
                        EntryForm::Contract,
                        text.as_bytes(),
                        None,
                    )
                    .unwrap();
                kept.entry(prepared.key.partition)
                    .or_default()
                    .push(prepared.record);
            }
        }
        for (partition, records) in &kept {
            for chunk in records.chunks(records.len().div_ceil(rounds).max(1)) {
                deployment.distribute(partition, chunk);
            }
        }
        let splits = deployment
            .shards
            .keys()
            .filter(|name| name.contains("/p/"))
            .count();
        prop_assert!(
            splits >= 2,
            "the project-days were not split: {:?}",
            deployment.shards.keys()
        );
        for shards in shards_per_project_day(&deployment).into_values() {
            spread.set(spread.get() | 1u32 << shards.min(31));
        }
        let stored: usize = deployment
            .shards
            .values()
            .map(|s| s.stats().edge_entries + s.stats().function_rows)
            .sum();
        prop_assert_eq!(
            stored,
            whole.stats().edge_entries + whole.stats().function_rows
        );
        let mut front = front;
        for (endpoint, params) in busy_queries() {
            let expected = answer(&mut whole, endpoint, &params, random_logs::NOW);
            let got = deployment.answer(&mut front, endpoint, &params, random_logs::NOW);
            // Only invocation-stats answers p95/p99.
            let spanning = match endpoint {
                "functions.invocation-stats" => {
                    spanning_buckets(&mut deployment, endpoint, &params)
                }
                _ => HashSet::new(),
            };
            spanned.set(spanned.get() + spanning.len());
            if let Err(why) = same_answer(&got, &expected, &spanning) {
                prop_assert!(false, "{} {:?}: {}", endpoint, params, why);
            }
        }
        Ok(())
    });
    if let Err(failure) = result {
        panic!("{failure}");
    }
    assert!(
        spanned.get() > 0,
        "no invocation-stats bucket spanned shards in any case: the sketch's merge was not tested"
    );
    let missing: Vec<u32> = (2..=5).filter(|k| spread.get() & 1 << k == 0).collect();
    assert!(
        missing.is_empty(),
        "no project-day was spread over {missing:?} shards (seen: {:b})",
        spread.get()
    );
}

/// Entries of other sources follow their project-day to its split: a busy
/// project moves on to a new split only once its current one is full (not
/// each round its group's full shard hands back its postgres rows), and every
/// entry of every source is kept once.
#[test]
fn other_sources_follow_their_project_days_split() {
    const BUDGET: usize = 24_000;
    const ROUNDS: usize = 30;
    let front = service();
    let mut deployment = Deployment {
        shard_bytes: Some(BUDGET),
        ..Deployment::default()
    };
    let postgres = Source::logflare("postgres.logs", "source_name").unwrap();
    for round in 0..ROUNDS {
        let at = |i: usize| random_logs::NOW - 1_000 * (round * 100 + i) as i64;
        let edge: Vec<serde_json::Value> = (0..30)
            .map(|i| {
                json!({"id": format!("e-{round}-{i}"), "timestamp": at(i), "project": "alpha",
                    "event_message": "GET /rest/v1/todos",
                    "metadata": [{"request": [{"url": "https://alpha.supabase.co/rest/v1/todos", "path": "/rest/v1/todos"}]}]})
            })
            .collect();
        let other: Vec<serde_json::Value> = (0..4)
            .map(|i| {
                json!({"id": format!("o-{round}-{i}"), "timestamp": at(i), "project": "alpha",
                    "event_message": format!("checkpoint complete: wrote {i} buffers")})
            })
            .collect();
        let records: Vec<Vec<u8>> = [
            (Source::stream("edge_logs").unwrap(), edge),
            (postgres.clone(), other),
        ]
        .into_iter()
        .map(|(source, values)| record_of(&front, &source, &values))
        .collect();
        deployment.distribute("ingest/0", &records);
    }
    let stats: Vec<_> = deployment.shards.values().map(|s| s.stats()).collect();
    let edge: usize = stats.iter().map(|s| s.edge_entries).sum();
    let other: usize = stats.iter().flat_map(|s| s.other_sources.values()).sum();
    assert_eq!((edge, other), (30 * ROUNDS, 4 * ROUNDS));
    let mut splits: Vec<(u32, usize)> = deployment
        .shards
        .iter()
        .filter_map(|(name, shard)| {
            let n = name.strip_prefix(&format!("{}/p/alpha/", &name[..10]))?;
            Some((n.parse().unwrap(), shard.stats().store_bytes))
        })
        .collect();
    splits.sort();
    assert!(
        splits.len() >= 2,
        "alpha's day was not split: {:?}",
        deployment.shards.keys()
    );
    assert_eq!(
        splits.iter().map(|(n, _)| *n).collect::<Vec<_>>(),
        (1..=splits.len() as u32).collect::<Vec<_>>()
    );
    for (n, bytes) in &splits[..splits.len() - 1] {
        assert!(
            *bytes >= BUDGET / 2,
            "split {n} of {} holds {bytes} bytes of {BUDGET}: it was left before it was full",
            splits.len()
        );
    }
}

/// A full shard rebuilt from a snapshot and the deliveries stored after it
/// holds every row the live shard took, wherever the snapshot was taken: a
/// restored store holds its rows with no spare room, so its columns grow at
/// other points than the live store's did, and a replay must not check the
/// budget again.
#[test]
fn a_full_shard_rebuilt_from_any_snapshot_holds_every_row() {
    let front = service();
    let config = || budget_config(KEY, 60_000);
    let delivery = |round: u64| {
        let values: Vec<serde_json::Value> = (0..25)
                .map(|i| {
                    json!({"id": format!("e-{round}-{i}"), "timestamp": random_logs::NOW - (round * 100 + i) as i64 * 1_000,
                        "project": "alpha", "event_message": format!("GET /rest/v1/t{}", (round * 7 + i) % 40),
                        "metadata": [{"request": [{"url": format!("https://alpha.supabase.co/rest/v1/t{}", (round * 7 + i) % 40)}]}]})
                })
            .collect();
        only_delivery(
            &record_of(&front, &Source::stream("edge_logs").unwrap(), &values),
            round,
        )
        .bytes
    };
    // The live shard, filled to the last row: what it stored of each delivery.
    let mut live = LogEndpoints::new(config());
    let mut stored = Vec::new();
    let mut snapshots = Vec::new();
    for round in 1.. {
        snapshots.push(live.snapshot());
        let bytes = delivery(round);
        let taken = live.ingest_delivery(&bytes, A_SPLIT).unwrap();
        if taken.keep {
            stored.push(taken.kept.unwrap_or(bytes));
        }
        if taken.overflow_entries > 0 {
            break;
        }
    }
    assert!(
        stored.len() >= 5,
        "the shard filled up after {} deliveries",
        stored.len()
    );
    let mut due = Vec::new();
    for (at, snapshot) in snapshots.iter().enumerate() {
        let mut rebuilt = LogEndpoints::from_snapshot(snapshot, config()).unwrap();
        let mut replayed = 0;
        for bytes in &stored[at..] {
            let again = rebuilt.replay_delivery(bytes).unwrap();
            assert_eq!((again.overflow_entries, again.refused.len()), (0, 0));
            replayed += bytes.len();
        }
        assert_eq!(
            rebuilt.stats().edge_entries,
            live.stats().edge_entries,
            "rebuilt from the snapshot before delivery {}",
            at + 1
        );
        // Deliveries replayed count toward a snapshot as records do: a
        // sixteenth of the budget.
        assert_eq!(
            rebuilt.snapshot_due_after_replay(),
            replayed >= 60_000 / 16,
            "{replayed} bytes replayed"
        );
        due.push(rebuilt.snapshot_due_after_replay());
    }
    assert!(
        due.contains(&true) && due.contains(&false),
        "both sides of the threshold: {due:?}"
    );
}

/// A busy project leaves its group's shard once it would hold more than half
/// of it, and the other projects of its group stay there: they get no splits
/// of their own, and every entry is kept once.
#[test]
fn a_busy_project_leaves_room_for_its_group() {
    const BUDGET: usize = 1 << 20;
    const ROUNDS: usize = 60;
    const BUSY: usize = 1000;
    let busy = "tenant-7";
    let group = log_endpoints::group_of(&log_endpoints::project_key(Some(busy)));
    let neighbours: Vec<String> = (1..2000)
        .map(|n| format!("tenant-{n}"))
        .filter(|name| {
            name != busy
                && log_endpoints::group_of(&log_endpoints::project_key(Some(name))) == group
        })
        .take(12)
        .collect();
    assert_eq!(neighbours.len(), 12);
    let front = service();
    let mut deployment = Deployment {
        shard_bytes: Some(BUDGET),
        ..Deployment::default()
    };
    let edge = |id: String, at: i64, project: &str| {
        json!({"id": id, "timestamp": at, "project": project, "event_message": "GET /rest/v1/todos",
            "metadata": [{"request": [{"url": format!("https://{project}.supabase.co/rest/v1/todos")}]}]})
    };
    for round in 0..ROUNDS {
        let at = |i: usize| random_logs::NOW - 10 * (round * 1_000 + i) as i64;
        let mut values: Vec<serde_json::Value> = (0..BUSY)
            .map(|i| edge(format!("b-{round}-{i}"), at(i), busy))
            .collect();
        // Each neighbour sends an entry every other round.
        values.extend(
            neighbours
                .iter()
                .enumerate()
                .filter(|(n, _)| (n + round) % 2 == 0)
                .map(|(n, name)| edge(format!("n-{round}-{n}"), at(BUSY + n), name)),
        );
        let record = record_of(&front, &Source::stream("edge_logs").unwrap(), &values);
        deployment.distribute("ingest/0", &[record]);
    }
    let held = |name: &str| {
        deployment
            .shards
            .get(name)
            .map_or(0, |s| s.stats().edge_entries)
    };
    let day = log_endpoints::day_of_shard(deployment.shards.keys().next().unwrap()).to_owned();
    let total: usize = deployment
        .shards
        .values()
        .map(|s| s.stats().edge_entries)
        .sum();
    assert_eq!(total, ROUNDS * (BUSY + 6));
    let splits: Vec<&String> = deployment
        .shards
        .keys()
        .filter(|name| name.contains("/p/"))
        .collect();
    assert!(
        splits
            .iter()
            .all(|name| name.contains(&format!("/p/{busy}/"))),
        "only the busy project has splits: {splits:?}"
    );
    assert!(splits.len() >= 2, "the busy project was split: {splits:?}");
    // With no splits of their own, the neighbours' entries are all in the group's shard.
    assert!(held(&shard_name(group, &day)) >= ROUNDS * 6);
    // Each shard's stored deliveries, replayed, hold what it holds (the group's
    // shard stored what it kept, not the rows it handed back).
    for (name, shard) in &deployment.shards {
        let mut rebuilt = deployment.new_shard();
        for bytes in &deployment.stored[name] {
            rebuilt.replay_delivery(bytes).unwrap();
        }
        assert_eq!(rebuilt.stats(), shard.stats(), "{name} rebuilt");
    }
}

/// A group's shard hands back a busy project's first rows too, when they
/// alone would take more than half of it: an empty table prices a row at
/// what it took staged.
#[test]
fn a_busy_projects_first_rows_go_to_its_split() {
    let front = service();
    let mut group_shard = LogEndpoints::new(budget_config(KEY, 1 << 20));
    let values: Vec<serde_json::Value> = (0..3_000)
        .map(|i| {
            json!({"id": format!("b-{i}"), "timestamp": random_logs::NOW - i, "project": "busy",
                "event_message": "GET /rest/v1/todos", "metadata": [{"request": [{"url": "https://busy.supabase.co/rest/v1/todos"}],
                "note": "x".repeat(200)}]})
        })
        .collect();
    let record = record_of(&front, &Source::stream("edge_logs").unwrap(), &values);
    let delivery = only_delivery(&record, 1);
    let name = shard_name(0, "2026-11-20");
    let taken = group_shard.ingest_delivery(&delivery.bytes, &name).unwrap();
    assert_eq!((taken.report.accepted, taken.overflow_entries), (0, 3_000));
    // The same delivery to a split takes what fits.
    let split = service().ingest_delivery(&delivery.bytes, A_SPLIT).unwrap();
    assert_eq!((split.report.accepted, split.overflow_entries), (3_000, 0));
}
