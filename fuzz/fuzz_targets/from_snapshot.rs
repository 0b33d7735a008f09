//! Any bytes as a snapshot: an `invalid_snapshot` error, or a store that works:
//! every endpoint answers valid JSON or says what it could not read (a damaged
//! block, a block not in storage, a project that is no parameter), it takes a
//! batch, and its own snapshot
//! reads back to the same snapshot. Never a panic. Random bytes rarely pass the
//! checksum, so the input is also tried as a payload under a right header
//! (`seal_snapshot_payload`), which puts the structural checks to work. The
//! same bytes read in parts (`from_snapshot_parts`, cut at sizes the input
//! picks) give the same store or are refused alike. The store keeps its text
//! blocks in a block storage, which holds none of the blocks a snapshot says
//! are there: reading one is an error, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::sync::Arc;

use log_endpoints::{
    seal_snapshot_payload, ApiKey, BlockStorageRef, Config, LogEndpoints, MemoryBlocks, Params,
    SNAPSHOT_HEADER_BYTES,
};

fn config() -> Config {
    Config {
        api_keys: vec![ApiKey::new("k").expect("key")],
        block_storage: Some(BlockStorageRef(Arc::new(MemoryBlocks::default()))),
        ..Config::default()
    }
}

fuzz_target!(|data: &[u8]| {
    try_snapshot(data);
    // A valid snapshot's payload starts after its header.
    try_snapshot(&seal_snapshot_payload(
        data.get(SNAPSHOT_HEADER_BYTES..).unwrap_or(data),
    ));
});

/// `data` cut into parts whose sizes cycle through a few the input picks.
fn parts_of(data: &[u8]) -> Vec<Result<Vec<u8>, String>> {
    let sizes: Vec<usize> = data
        .iter()
        .take(3)
        .map(|&b| usize::from(b) * 7 + 1)
        .collect();
    let (mut parts, mut at) = (Vec::new(), 0);
    for size in sizes.iter().cycle() {
        if at >= data.len() {
            break;
        }
        let end = (at + size).min(data.len());
        parts.push(Ok(data[at..end].to_vec()));
        at = end;
    }
    parts
}

fn try_snapshot(data: &[u8]) {
    let whole = LogEndpoints::from_snapshot(data, config());
    let in_parts =
        LogEndpoints::from_snapshot_parts(parts_of(data).into_iter(), data.len(), config());
    match (&whole, &in_parts) {
        (Ok(a), Ok(b)) => assert_eq!(a.snapshot(), b.snapshot()),
        (Err(a), Err(b)) => assert_eq!(a.code(), b.code()),
        _ => panic!(
            "whole and in parts disagree: {:?} / {:?}",
            whole.is_ok(),
            in_parts.is_ok()
        ),
    }
    let mut svc = match whole {
        Ok(svc) => svc,
        Err(e) => {
            assert!(matches!(e.code(), "invalid_snapshot" | "store_full"), "{e}");
            return;
        }
    };
    let catalog = svc.catalog();
    let project = catalog.edge_projects.first().cloned().unwrap_or_default();
    let queries = [
        (
            "logs.all",
            vec![("project", project.as_str()), ("project_tier", "PAYG")],
        ),
        (
            "usage.api-counts",
            vec![("project", ".*"), ("interval", "daily")],
        ),
        (
            "functions.invocation-stats",
            vec![("project", project.as_str()), ("interval", "7day")],
        ),
    ];
    for (endpoint, params) in queries {
        // A project read from the snapshot may be longer than a parameter can be.
        let params = match Params::from_pairs(params) {
            Ok(params) => params,
            Err(e) => {
                assert_eq!(e.code(), "invalid_parameter", "{endpoint}: {e}");
                continue;
            }
        };
        match svc.query(endpoint, &params, Some("k"), 1_795_177_796_789_000) {
            Ok(out) => assert!(out.body.starts_with("{\"result\":["), "{}", out.body),
            // Text that does not decode is the snapshot's fault; a block the
            // storage does not hold, the storage's; a project read from the
            // snapshot may not be a parameter. Nothing else.
            Err(e) => assert!(
                matches!(
                    e.code(),
                    "invalid_snapshot"
                        | "storage_unavailable"
                        | "missing_parameter"
                        | "invalid_parameter"
                ),
                "{endpoint}: {e}"
            ),
        }
    }
    let again = svc.snapshot();
    let restored = LogEndpoints::from_snapshot(&again, config()).expect("own snapshot");
    assert_eq!(restored.snapshot(), again);
    let _ = svc.ingest("edge_logs", br#"{"id":"x","timestamp":1}"#);
}
