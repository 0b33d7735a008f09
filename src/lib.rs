//! log-endpoints: Logflare-style saved log-analytics endpoints
//! (`functions.invocation-stats`, `logs.all`, `usage.api-counts`) over log
//! batches held in memory.
//!
//! Everything but `binding` is plain Rust with no JavaScript types; `binding`
//! is the one place where JS values come in and results and errors go out.

mod auth;
mod cache;
mod endpoints;
mod error;
mod ingest;
mod json;
mod params;
mod service;
mod store;
pub mod timestamp;

#[cfg(target_arch = "wasm32")]
mod binding;
#[cfg(target_arch = "wasm32")]
pub use binding::JsLogEndpoints;

pub use auth::ApiKey;
pub use cache::CacheStatus;
pub use endpoints::{
    registry, ApiCountsInterval, EndpointInfo, EndpointKind, ProjectTier, StatsInterval, MAX_ROWS,
};
pub use error::{Error, Result};
pub use ingest::{Rejection, Stream};
pub use params::{Params, MAX_PARAMS, MAX_VALUE_BYTES};
pub use service::{
    Config, IngestReport, Limits, LogEndpoints, QueryOutput, StoreStats, WarmReport,
};
