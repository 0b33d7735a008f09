//! The limits that protect an instance, each with a safe default. Read from JS
//! options as camelCase names (`maxBatchBytes`, …); absent ones keep theirs.

use serde::Deserialize;

/// Default compiled-size limit of a usage.api-counts `project` pattern.
pub const REGEX_SIZE_LIMIT: usize = 1 << 20;

/// The largest `max_store_bytes`: a store's offsets into its interned text
/// are 32-bit, and wasm32's memory holds no more anyway.
pub const LARGEST_STORE_BYTES: usize = u32::MAX as usize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct Limits {
    /// Largest batch accepted by one `ingest` call, in bytes.
    pub max_batch_bytes: usize,
    /// Most entries accepted by one `ingest` call.
    pub max_batch_entries: usize,
    /// How many rejections are reported in detail (all are counted).
    pub max_reported_rejections: usize,
    /// Memory budget of the store (`stats().storeBytes`). A batch that would take
    /// the store past it is refused whole (503 `store_full`); nothing is evicted,
    /// so what was accepted is never lost behind the caller's back. At most
    /// `LARGEST_STORE_BYTES` (a larger value is taken as that).
    pub max_store_bytes: usize,
    /// Longest accepted query parameter value, in bytes (at most 64 KiB).
    pub max_param_bytes: usize,
    /// Compiled-size limit of a usage.api-counts `project` regular expression.
    pub max_regex_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_batch_bytes: 512 << 20,
            max_batch_entries: 2_000_000,
            max_reported_rejections: 1000,
            max_store_bytes: 1 << 30,
            max_param_bytes: 4096,
            max_regex_bytes: REGEX_SIZE_LIMIT,
        }
    }
}
