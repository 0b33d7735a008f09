//! Property tests: answers depend on what was ingested, not on how (order, batch
//! boundaries, encoding), and a cached answer is the answer.
use std::sync::Arc;

use log_endpoints::{ApiKey, BlockStorageRef, Config, LogEndpoints, MemoryBlocks, Params};
use log_endpoints_tools::random_logs::{
    entries, long_entries, ndjson, other_tenants, query, raw_edge_entries, Entry, RandomQuery,
    RawEdge, NOW,
};
use proptest::prelude::*;
use serde_json::Value;

const KEY: &str = "property-key";

/// The service's config: one query key.
fn config() -> Config {
    Config {
        api_keys: vec![ApiKey::new(KEY).unwrap()],
        ..Config::default()
    }
}

fn service() -> LogEndpoints {
    LogEndpoints::new(config())
}

/// Body on success, `error:<code>` on failure: both must agree.
fn answer(svc: &mut LogEndpoints, q: &RandomQuery) -> String {
    let params = Params::from_pairs(q.params.iter().cloned()).unwrap();
    match svc.query(q.endpoint, &params, Some(KEY), q.now) {
        Ok(out) => out.body.to_string(),
        Err(e) => format!("error:{}", e.code()),
    }
}

fn of_stream<'a>(entries: &'a [Entry], stream: &str) -> Vec<&'a Value> {
    entries
        .iter()
        .filter(|e| e.stream == stream)
        .map(|e| &e.value)
        .collect()
}

/// Everything in one NDJSON batch per stream.
fn ingest_whole(entries: &[Entry]) -> (LogEndpoints, usize) {
    let mut svc = service();
    let mut accepted = 0;
    for stream in ["edge_logs", "function_edge_logs"] {
        let report = svc
            .ingest(stream, ndjson(of_stream(entries, stream)).as_bytes())
            .unwrap();
        accepted += report.accepted;
    }
    (svc, accepted)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn a_restored_snapshot_answers_as_the_original(
        (first, long, later) in (entries(120), long_entries(150), entries(40)),
        queries in prop::collection::vec(query(), 1..12),
    ) {
        // With the long entries, sealed (compressed) blocks as well as open
        // ones: a store given the same batches with block storage hands some over.
        let first: Vec<Entry> = first.into_iter().chain(long.iter().cloned()).collect();
        let (mut original, _) = ingest_whole(&first);
        if long.len() > 100 {
            let blocks = Arc::new(MemoryBlocks::default());
            let mut probe = LogEndpoints::new(Config {
                block_storage: Some(BlockStorageRef(blocks.clone())),
                ..Config::default()
            });
            for stream in ["edge_logs", "function_edge_logs"] {
                probe.ingest(stream, ndjson(of_stream(&first, stream)).as_bytes()).unwrap();
            }
            prop_assert!(!blocks.is_empty(), "{} long entries sealed no block", long.len());
        }
        let mut restored = LogEndpoints::from_snapshot(&original.snapshot(), config()).unwrap();
        prop_assert_eq!(restored.stats().edge_entries, original.stats().edge_entries);
        prop_assert_eq!(restored.stats().function_rows, original.stats().function_rows);
        prop_assert_eq!(restored.catalog(), original.catalog());
        for q in &queries {
            prop_assert_eq!(answer(&mut restored, q), answer(&mut original, q), "{:?}", q);
        }
        // Both take further batches alike, and a snapshot of the restored store
        // is the snapshot of the original.
        for stream in ["edge_logs", "function_edge_logs"] {
            let batch = ndjson(of_stream(&later, stream));
            let a = original.ingest(stream, batch.as_bytes()).unwrap();
            let b = restored.ingest(stream, batch.as_bytes()).unwrap();
            prop_assert_eq!(a.accepted, b.accepted);
        }
        original.clear_cache();
        restored.clear_cache();
        for q in &queries {
            prop_assert_eq!(answer(&mut restored, q), answer(&mut original, q), "{:?}", q);
        }
        prop_assert_eq!(restored.snapshot(), original.snapshot());
    }

    #[test]
    fn text_in_block_storage_answers_as_in_memory(
        (first, long, later) in (entries(120), long_entries(150), entries(40)),
        queries in prop::collection::vec(query(), 1..12),
    ) {
        // The same batches into a store that keeps its text in memory and one
        // that hands sealed blocks to block storage: the same answers, before
        // and after a snapshot round trip, and while the stores grow.
        let blocks = Arc::new(MemoryBlocks::default());
        let config = || Config {
            api_keys: vec![ApiKey::new(KEY).unwrap()],
            block_storage: Some(BlockStorageRef(blocks.clone())),
            ..Config::default()
        };
        let mut in_memory = service();
        let mut in_storage = LogEndpoints::new(config());
        for batch in [&first, &long] {
            for stream in ["edge_logs", "function_edge_logs"] {
                let batch = ndjson(of_stream(batch, stream));
                in_memory.ingest(stream, batch.as_bytes()).unwrap();
                in_storage.ingest(stream, batch.as_bytes()).unwrap();
            }
        }
        let stats = in_storage.stats();
        prop_assert_eq!(stats.storage_bytes > 0, !blocks.is_empty());
        if stats.storage_bytes > 0 {
            prop_assert!(stats.store_bytes < in_memory.stats().store_bytes, "{:?}", stats);
        }
        if long.len() > 100 {
            prop_assert!(stats.storage_bytes > 0, "{} long entries sealed no block", long.len());
        }
        for q in &queries {
            prop_assert_eq!(answer(&mut in_storage, q), answer(&mut in_memory, q), "{:?}", q);
        }
        // A snapshot holds the blocks in storage by their hash: it restores
        // with the storage, and is refused without it.
        let snapshot = in_storage.snapshot();
        let mut restored = LogEndpoints::from_snapshot(&snapshot, config()).unwrap();
        let without = LogEndpoints::from_snapshot(&snapshot, Config::default());
        prop_assert_eq!(without.err().map(|e| e.code()), (!blocks.is_empty()).then_some("invalid_snapshot"));
        for stream in ["edge_logs", "function_edge_logs"] {
            let batch = ndjson(of_stream(&later, stream));
            in_memory.ingest(stream, batch.as_bytes()).unwrap();
            restored.ingest(stream, batch.as_bytes()).unwrap();
        }
        in_memory.clear_cache();
        for q in &queries {
            prop_assert_eq!(answer(&mut restored, q), answer(&mut in_memory, q), "{:?}", q);
        }
    }

    #[test]
    fn batches_read_by_read_jobs_answer_and_report_as_batches_read_here(
        (first, later) in (entries(120), entries(60)),
        queries in prop::collection::vec(query(), 1..12),
        budget_kib in prop::option::of(16usize..256),
        with_limits in any::<bool>(),
    ) {
        // The same batches, with a line that is no entry, read here and read
        // by another instance (a read job), with the same limits: the same
        // reports, refusals of whole batches, answers and snapshot.
        let config = || Config {
            api_keys: vec![ApiKey::new(KEY).unwrap()],
            limits: log_endpoints::Limits {
                max_store_bytes: budget_kib.map_or(1 << 30, |kib| kib << 10),
                max_batch_entries: if with_limits { 50 } else { 2_000_000 },
                max_reported_rejections: if with_limits { 1 } else { 1000 },
                ..Default::default()
            },
            ..Config::default()
        };
        let mut here = LogEndpoints::new(config());
        let mut by_jobs = LogEndpoints::new(config());
        for batch in [&first, &later] {
            for stream in ["edge_logs", "function_edge_logs"] {
                let batch = format!("{}{{\"id\": oops}}\n[]\n", ndjson(of_stream(batch, stream)));
                let a = here.ingest(stream, batch.as_bytes()).map_err(|e| e.code());
                let job = by_jobs.read_job(stream).unwrap();
                let b = LogEndpoints::read_batch(&job, batch.as_bytes())
                    .and_then(|read| by_jobs.ingest_read(&read))
                    .map_err(|e| e.code());
                prop_assert_eq!(a, b);
            }
            for q in &queries {
                prop_assert_eq!(answer(&mut by_jobs, q), answer(&mut here, q), "{:?}", q);
            }
        }
        prop_assert_eq!(by_jobs.stats().edge_entries, here.stats().edge_entries);
        prop_assert_eq!(by_jobs.stats().function_rows, here.stats().function_rows);
        prop_assert_eq!(by_jobs.snapshot(), here.snapshot());
    }

    #[test]
    fn blocks_sealed_by_jobs_answer_and_snapshot_as_blocks_sealed_in_place(
        (first, long, later) in (entries(120), long_entries(150), entries(40)),
        queries in prop::collection::vec(query(), 1..12),
        budget_kib in prop::option::of(64usize..512),
    ) {
        // The same batches into a store that seals in place and one whose
        // seals go out as jobs (sealed as another instance would, a batch
        // late): the same answers while jobs are out, and the same snapshot
        // once they are in. With a small budget, both take the same batches:
        // a store about to fill seals in place again.
        let config = || Config {
            api_keys: vec![ApiKey::new(KEY).unwrap()],
            limits: match budget_kib {
                Some(kib) => log_endpoints::Limits { max_store_bytes: kib << 10, ..Default::default() },
                None => Default::default(),
            },
            ..Config::default()
        };
        let mut in_place = LogEndpoints::new(config());
        let mut by_jobs = LogEndpoints::new(config());
        by_jobs.defer_seals(true);
        let mut out: Vec<Vec<u8>> = Vec::new();
        let mut frames = 0;
        for batch in [&first, &long, &later] {
            for stream in ["edge_logs", "function_edge_logs"] {
                let batch = ndjson(of_stream(batch, stream));
                let a = in_place.ingest(stream, batch.as_bytes()).map(|r| r.accepted).map_err(|e| e.code());
                let b = by_jobs.ingest(stream, batch.as_bytes()).map(|r| r.accepted).map_err(|e| e.code());
                prop_assert_eq!(a, b);
            }
            for q in &queries {
                prop_assert_eq!(answer(&mut by_jobs, q), answer(&mut in_place, q), "{:?}", q);
            }
            for sealed in out.drain(..) {
                by_jobs.install_sealed(&sealed).unwrap();
            }
            if let Some(jobs) = by_jobs.take_seal_jobs() {
                out.push(LogEndpoints::seal_blocks(&jobs).unwrap());
                frames += 1;
            }
        }
        if long.len() > 100 && budget_kib.is_none() {
            prop_assert!(frames > 0, "{} long entries left no block to seal", long.len());
        }
        for sealed in out {
            by_jobs.install_sealed(&sealed).unwrap();
        }
        prop_assert_eq!(by_jobs.stats().unsealed_blocks, 0);
        prop_assert_eq!(by_jobs.stats().store_bytes, in_place.stats().store_bytes);
        prop_assert_eq!(by_jobs.snapshot(), in_place.snapshot());
    }

    #[test]
    fn order_and_batching_do_not_change_answers(
        (entries, shuffled) in entries(120).prop_flat_map(|e| (Just(e.clone()), Just(e).prop_shuffle())),
        cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..5),
        queries in prop::collection::vec(query(), 1..12),
    ) {
        let (mut whole, accepted_whole) = ingest_whole(&entries);

        // Same entries, shuffled, cut into several JSON-array batches per stream.
        let mut split = service();
        let mut accepted_split = 0;
        for stream in ["edge_logs", "function_edge_logs"] {
            let values = of_stream(&shuffled, stream);
            let mut bounds: Vec<usize> = cuts.iter().map(|c| c.index(values.len() + 1)).collect();
            bounds.extend([0, values.len()]);
            bounds.sort_unstable();
            for pair in bounds.windows(2) {
                let batch = Value::Array(values[pair[0]..pair[1]].iter().map(|v| (*v).clone()).collect());
                accepted_split += split.ingest(stream, batch.to_string().as_bytes()).unwrap().accepted;
            }
        }
        prop_assert_eq!(accepted_whole, accepted_split);
        prop_assert_eq!(whole.stats().edge_entries, split.stats().edge_entries);
        prop_assert_eq!(whole.stats().function_rows, split.stats().function_rows);
        for q in &queries {
            prop_assert_eq!(answer(&mut whole, q), answer(&mut split, q), "{:?}", q);
        }
    }

    #[test]
    fn other_projects_change_no_answer(
        (entries, tenants, order) in (entries(120), other_tenants(600), any::<prop::sample::Index>()),
        queries in prop::collection::vec(query(), 1..12),
    ) {
        // The queried projects' entries alone, and the same among many other
        // projects' (interleaved at a random point, in several batches): every
        // answer is the same. With the other projects the queried ones are a
        // small share, so the per-project indexes answer; alone, the scans do.
        let (mut alone, _) = ingest_whole(&entries);
        let mut mixed = service();
        for stream in ["edge_logs", "function_edge_logs"] {
            let ours = of_stream(&entries, stream);
            let theirs = of_stream(&tenants, stream);
            let cut = order.index(theirs.len() + 1);
            for batch in [&theirs[..cut], &ours[..], &theirs[cut..]] {
                mixed.ingest(stream, ndjson(batch.iter().copied()).as_bytes()).unwrap();
            }
        }
        for q in &queries {
            prop_assert_eq!(answer(&mut mixed, q), answer(&mut alone, q), "{:?}", q);
        }
    }

    #[test]
    fn cached_and_uncached_answers_agree(
        entries in entries(120),
        queries in prop::collection::vec(query(), 1..12),
    ) {
        let (mut svc, _) = ingest_whole(&entries);
        for q in &queries {
            // An earlier query of the same key (e.g. `interval=weekly`, read
            // as 1day) may have cached its answer at another `now`, which is
            // served while it lasts: compare answers of this `now`.
            svc.clear_cache();
            let first = answer(&mut svc, q);
            let again = answer(&mut svc, q); // a cache hit for the cached endpoints
            svc.warm_cache(q.now + 301_000_000);
            let warmed = answer(&mut svc, q);
            svc.clear_cache();
            let fresh = answer(&mut svc, q);
            prop_assert_eq!(&first, &again, "{:?}", q);
            prop_assert_eq!(&first, &warmed, "{:?}", q);
            prop_assert_eq!(&first, &fresh, "{:?}", q);
        }
    }

    #[test]
    fn a_refused_batch_changes_nothing(
        entries in entries(60),
        budget in 0usize..200_000,
        queries in prop::collection::vec(query(), 1..6),
    ) {
        // A store with a small budget refuses some batches whole; what it answers
        // must then equal a store that never saw the refused batches.
        let mut limited = LogEndpoints::new(Config {
            api_keys: vec![ApiKey::new(KEY).unwrap()],
            limits: log_endpoints::Limits { max_store_bytes: budget, ..Default::default() },
            block_storage: None,
        });
        let mut reference = service();
        for (n, chunk) in entries.chunks(7).enumerate() {
            let stream = if n % 2 == 0 { "edge_logs" } else { "function_edge_logs" };
            let batch = ndjson(of_stream(chunk, stream));
            let before = limited.stats();
            match limited.ingest(stream, batch.as_bytes()) {
                Ok(_) => { reference.ingest(stream, batch.as_bytes()).unwrap(); }
                Err(e) => {
                    // No room left, or a batch bigger than the whole budget.
                    prop_assert!(matches!(e.code(), "store_full" | "payload_too_large"), "{}", e);
                    prop_assert_eq!(limited.stats(), before.clone());
                }
            }
            prop_assert!(limited.stats().store_bytes <= budget.max(before.store_bytes));
        }
        for q in &queries {
            prop_assert_eq!(answer(&mut limited, q), answer(&mut reference, q));
        }
    }

    #[test]
    fn logs_all_gives_back_each_entry_as_it_was_sent(
        sent in raw_edge_entries(150, 500),
        cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..4),
    ) {
        // Entries formatted as shippers may format them (`RawEdge`), in batches
        // cut anywhere: logs.all gives back each one's metadata byte for byte,
        // and its id, time and message, whether its text is in an open block,
        // a sealed one, block storage or a restored snapshot.
        let mut cuts: Vec<usize> = cuts.iter().map(|cut| cut.index(sent.len())).collect();
        cuts.extend([0, sent.len()]);
        cuts.sort_unstable();
        cuts.dedup();
        let blocks = Arc::new(MemoryBlocks::default());
        let mut in_memory = service();
        let mut in_storage = LogEndpoints::new(Config {
            block_storage: Some(BlockStorageRef(blocks.clone())),
            ..config()
        });
        for range in cuts.windows(2) {
            let batch: String = sent[range[0]..range[1]].iter().map(|e| e.line.clone() + "\n").collect();
            for svc in [&mut in_memory, &mut in_storage] {
                let report = svc.ingest("edge_logs", batch.as_bytes()).unwrap();
                prop_assert_eq!(report.accepted, range[1] - range[0], "{:?}", report.rejected);
            }
        }
        // Records keep about 0.8 of a line's bytes, and `compact` seals blocks
        // once open ones hold more than 128 KiB: 200 KiB of lines always do.
        let lines: usize = sent.iter().map(|e| e.line.len()).sum();
        if lines > 200 << 10 {
            prop_assert!(!blocks.is_empty(), "{} bytes of entries sealed no block", lines);
        }
        let mut restored = LogEndpoints::from_snapshot(&in_memory.snapshot(), config()).unwrap();
        for svc in [&mut in_memory, &mut in_storage, &mut restored] {
            logs_all_rows_are_as_sent(svc, &sent)?;
        }
    }
}

/// For each project of `sent`, logs.all's rows are its newest 100 entries,
/// each as it was sent.
fn logs_all_rows_are_as_sent(
    svc: &mut LogEndpoints,
    sent: &[RawEdge],
) -> Result<(), TestCaseError> {
    #[derive(serde::Deserialize)]
    struct Row<'a> {
        id: String,
        timestamp: i64,
        event_message: Option<String>,
        #[serde(borrow)]
        metadata: &'a serde_json::value::RawValue,
    }
    #[derive(serde::Deserialize)]
    struct Answer<'a> {
        #[serde(borrow)]
        result: Vec<Row<'a>>,
    }
    let mut projects: Vec<&str> = sent.iter().map(|e| e.project).collect();
    projects.sort_unstable();
    projects.dedup();
    for project in projects {
        let mut expected: Vec<&RawEdge> = sent.iter().filter(|e| e.project == project).collect();
        expected.sort_by(|a, b| b.timestamp.cmp(&a.timestamp).then_with(|| a.id.cmp(&b.id)));
        expected.truncate(100);
        let params = Params::from_pairs([("project", project), ("project_tier", "FREE")]).unwrap();
        let out = svc.query("logs.all", &params, Some(KEY), NOW).unwrap();
        let answer: Answer = serde_json::from_str(&out.body).unwrap();
        prop_assert_eq!(answer.result.len(), expected.len(), "{}", project);
        for (row, entry) in answer.result.iter().zip(expected) {
            prop_assert_eq!(&row.id, &entry.id);
            prop_assert_eq!(row.timestamp, entry.timestamp);
            prop_assert_eq!(&row.event_message, &entry.event_message);
            prop_assert_eq!(
                row.metadata.get(),
                entry.metadata.as_str(),
                "{}",
                entry.line
            );
        }
    }
    Ok(())
}

/// The fuzz target's snapshot seeds (`node fuzz/make-seeds.mjs`) are
/// snapshots this build reads, so that fuzzing starts inside the reader: a
/// seed of an earlier version is refused at its version number and reaches
/// nothing else. The one hand-damaged seed is refused.
#[test]
fn the_snapshot_fuzz_seeds_are_read_by_this_build() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/fuzz/corpus/from_snapshot");
    let mut seeds = 0;
    for file in std::fs::read_dir(dir).unwrap() {
        let path = file.unwrap().path();
        let bytes = std::fs::read(&path).unwrap();
        let config = Config {
            block_storage: Some(BlockStorageRef(Arc::new(MemoryBlocks::default()))),
            ..Config::default()
        };
        let read = LogEndpoints::from_snapshot(&bytes, config);
        match path.file_name().unwrap() == "header-length-u64-max" {
            true => assert_eq!(read.err().map(|e| e.code()), Some("invalid_snapshot")),
            false => assert!(
                read.is_ok(),
                "{path:?}: {:?} (run node fuzz/make-seeds.mjs)",
                read.err()
            ),
        }
        seeds += 1;
    }
    assert!(seeds >= 5, "{seeds} seeds in {dir}");
}
