//! log-endpoints: Logflare-style saved log-analytics endpoints
//! (`functions.invocation-stats`, `logs.all`, `usage.api-counts`, and Supabase's
//! Management API `usage.api-requests-count` and `functions.combined-stats`)
//! over log batches held in memory.
//!
//! Modules are listed in layer order: each one uses only modules listed
//! before it (`tests/native/layers.rs` checks this). Everything but `binding`
//! is plain Rust with no JavaScript types; `binding` is the one place where JS
//! values come in and results and errors go out.

// Basics: the engine's memory, time, errors, JSON writing, mergeable quantiles and sums, request parameters and paths, the worker's settings.
#[cfg(test)]
mod test_rng;
mod memory;
mod words;
pub mod timestamp;
mod error;
mod json;
mod sketch;
mod exact_sum;
mod params;
mod routes;
mod settings;
// Data: limits, reading batches, the columnar store and its snapshots.
mod limits;
mod ingest;
mod staged;
mod store;
mod snapshot;
// What endpoints declare for a sharded deployment (where rows are, how answers merge).
mod reach;
// The endpoints, one module each.
mod endpoints;
// Who may call, and answers (cached or not).
mod auth;
mod cache;
mod http;
// The sharded deployment's rules, and batches read in another instance.
mod shard;
mod read_jobs;
// The service that ties them together, and files fed to it in pieces.
mod service;
mod feed;
// The JavaScript boundary.
#[cfg(target_arch = "wasm32")]
mod binding;

/// For the fuzz target: a payload under a right snapshot header.
#[doc(hidden)]
pub use snapshot::{seal as seal_snapshot_payload, HEADER_BYTES as SNAPSHOT_HEADER_BYTES};

#[cfg(target_arch = "wasm32")]
pub use binding::JsLogEndpoints;

#[cfg(all(target_arch = "wasm32", not(target_feature = "atomics")))]
#[global_allocator]
static ALLOCATOR: memory::Growing = memory::Growing::new();

pub use auth::{ApiKey, Purpose};
pub use cache::{CacheStatus, QueryAnswer};
pub use endpoints::{
    registry, ApiCountsInterval, EndpointInfo, EndpointKind, EndpointSpec, Parameter, ProjectTier,
    StatsInterval, LONGEST_RETENTION, MAX_ROWS,
};
pub use error::{Error, ErrorKind, ErrorReport, Result};
pub use feed::{detect_stream, FeedReport, LogFeed, DEFAULT_BATCH_BYTES, REPORTED_REASONS};
pub use http::{
    body_decoding, body_too_large, cors_headers, post_params, presented_key, HttpAnswer,
    HttpRequest, IngestCall, DRAIN_BYTES, MAX_PARAMS_BODY_BYTES,
};
pub use ingest::{
    BatchForm, EntryForm, Framing, IngestReport, RejectReason, Rejection, Source, Stream,
};
pub use limits::{store_bytes_of_mib, Limits, LARGEST_STORE_MIB, REGEX_SIZE_LIMIT};
pub use params::{Params, MAX_PARAMS, MAX_VALUE_BYTES};
pub use routes::Route;
pub use service::{
    Catalog, Config, DeliveryReport, LogEndpoints, PreparedBatch, StoreStats, WarmReport,
};
pub use settings::{Environment, Setting, Settings, SETTINGS};
pub use shard::{
    day_of, day_of_shard, directory_name, group_of, ingest_name, project_key, read_record,
    refusal_is_final, schedule, shard_name, split_by_shard, split_shard_name, Added, BatchKey,
    BatchSplit, Delivery, DeliveryAnswer, Gather, IngestAnswers, IngestStatus, KeepAnswer,
    KnownRegistrations, PartitionStatus, QueryPlan, Registration, Retention, Round, Seen,
    ShardDelivery, ShardDirectory, ShardPart, ShardQuery, SplitRoute, SplitRoutes,
    DIRECTORY_LOG_ROWS, DIRECTORY_PARTITIONS, INGEST_PARTITIONS, MAX_CONCURRENT,
    RESEND_WINDOW_HOURS, SHARD_GROUPS,
};
pub use sketch::RELATIVE_ERROR as SKETCH_RELATIVE_ERROR;
pub use store::block_storage::{BlockStorage, BlockStorageRef, MemoryBlocks};
