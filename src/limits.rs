//! The limits that protect an instance, each with a safe default. Read from JS
//! options as camelCase names (`maxBatchBytes`, …); absent ones keep theirs.
//! A person's store budget in MiB (the CLI's `--max-store`, the page's
//! `?max-store`) is read here too.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// Default compiled-size limit of a usage.api-counts `project` pattern.
pub const REGEX_SIZE_LIMIT: usize = 1 << 20;

/// The largest `max_store_bytes`: a store's offsets into its interned text
/// are 32-bit, and wasm32's memory holds no more anyway.
pub const LARGEST_STORE_BYTES: usize = u32::MAX as usize;

/// The largest store budget a setting in whole MiB can ask for.
pub const LARGEST_STORE_MIB: usize = LARGEST_STORE_BYTES >> 20;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
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

/// The store budget (`max_store_bytes`) a person's setting in MiB asks for
/// (the CLI's `--max-store`, the page's `?max-store`): a whole number from 1
/// to `LARGEST_STORE_MIB`. The error names the `setting` and says what it takes.
pub fn store_bytes_of_mib(text: &str, setting: &str) -> Result<usize> {
    let mib = text.trim().parse::<usize>().ok();
    match mib {
        Some(mib @ 1..=LARGEST_STORE_MIB) => Ok(mib << 20),
        _ => Err(Error::InvalidConfig {
            reason: format!(
                "{setting} takes a whole number of MiB from 1 to {LARGEST_STORE_MIB}, not \"{text}\""
            ),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_store_budget_in_mib_is_a_whole_number_the_store_can_hold() {
        assert_eq!(store_bytes_of_mib("64", "--max-store"), Ok(64 << 20));
        assert_eq!(store_bytes_of_mib(" 1 ", "--max-store"), Ok(1 << 20));
        assert_eq!(store_bytes_of_mib("4095", "--max-store"), Ok(4095 << 20));
        assert!(store_bytes_of_mib("4095", "--max-store").unwrap() <= LARGEST_STORE_BYTES);
        for refused in [
            "0",
            "4096",
            "99999",
            "-1",
            "1.5",
            "lots",
            "",
            "18446744073709551616",
        ] {
            let error = store_bytes_of_mib(refused, "?max-store").unwrap_err();
            assert_eq!(error.kind().code, "invalid_config");
            assert_eq!(
                error.to_string(),
                format!("invalid configuration: ?max-store takes a whole number of MiB from 1 to 4095, not \"{refused}\"")
            );
        }
    }
}
