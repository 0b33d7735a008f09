//! log-endpoints: Logflare-style saved log-analytics endpoints
//! (`functions.invocation-stats`, `logs.all`, `usage.api-counts`, and Supabase's
//! Management API `usage.api-requests-count` and `functions.combined-stats`)
//! over log batches held in memory.
//!
//! Everything but `binding` is plain Rust with no JavaScript types; `binding`
//! is the one place where JS values come in and results and errors go out.

mod auth;
mod cache;
mod endpoints;
mod error;
mod feed;
mod ingest;
mod json;
mod params;
mod routes;
mod service;
mod shard;
mod snapshot;
/// For the fuzz target: a payload under a right snapshot header.
#[doc(hidden)]
pub use snapshot::{seal as seal_snapshot_payload, HEADER_BYTES as SNAPSHOT_HEADER_BYTES};
mod store;
pub mod timestamp;

#[cfg(target_arch = "wasm32")]
mod binding;
#[cfg(target_arch = "wasm32")]
pub use binding::JsLogEndpoints;

pub use auth::{ApiKey, Purpose};
pub use cache::CacheStatus;
pub use endpoints::{
    registry, ApiCountsInterval, EndpointInfo, EndpointKind, EndpointSpec, Parameter, ProjectTier,
    StatsInterval, LONGEST_RETENTION, MAX_ROWS,
};
pub use error::{Error, Result};
pub use feed::{detect_stream, FeedReport, Feeder, DEFAULT_BATCH_BYTES};
pub use ingest::{RejectReason, Rejection, Stream};
pub use params::{Params, MAX_PARAMS, MAX_VALUE_BYTES};
pub use routes::Route;
pub use service::{
    Catalog, Config, IngestReport, Limits, LogEndpoints, QueryOutput, StoreStats, WarmReport,
};
pub use shard::{
    day_of, shard_name, split_by_shard, Added, BatchSplit, CombinedReport, Directory,
    IngestOutcome, PartError, PartOutcome, PartReport, QueryPlan, ReportedRejection, ShardPart,
};
