//! A batch's key: what makes a resent batch the same batch. Either the
//! client's `Idempotency-Key` (for the same source), or the batch's source
//! and decoded bytes (as ClickHouse deduplicates inserted blocks by their hash). The key picks the
//! ingest partition, so every copy of a batch meets the partition that
//! remembers the first.

use serde::Serialize;
use xxhash_rust::xxh3::{xxh3_128, Xxh3};

use super::{ingest_name, INGEST_PARTITIONS};

/// How long an object remembers the key of a batch it kept (a shipper's
/// retries come within minutes; a day covers an outage): a resend within it
/// is acknowledged again and not kept twice.
pub const RESEND_WINDOW_HOURS: i64 = 24;

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BatchKey {
    /// 32 hex digits.
    pub key: String,
    /// The hash of the batch's source and decoded bytes (32 hex digits): the
    /// key itself unless an `Idempotency-Key` made it, when a resend under
    /// that key with other content is told apart by it.
    pub content: String,
    /// The ingest partition that keeps the batch.
    pub partition: String,
}

impl BatchKey {
    /// The key of `batch` sent to `source` (the caller passes one name per
    /// stream, so an alias makes the same key), or of the client's
    /// idempotency key for that source.
    pub fn of(source: &str, batch: &[u8], idempotency_key: Option<&str>) -> BatchKey {
        BatchKey::with_content(
            source,
            BatchKey::content_hash(source, batch),
            idempotency_key,
        )
    }

    /// `of`, given the batch's `content_hash` (so a caller that has it does
    /// not hash the batch again).
    pub fn with_content(source: &str, content: u128, idempotency_key: Option<&str>) -> BatchKey {
        let hash = match idempotency_key.filter(|k| !k.is_empty()) {
            Some(key) => xxh3_128(format!("idempotency-key\0{source}\0{key}").as_bytes()),
            None => content,
        };
        BatchKey {
            key: format!("{hash:032x}"),
            content: format!("{content:032x}"),
            partition: ingest_name((hash % u128::from(INGEST_PARTITIONS)) as u32),
        }
    }

    /// Whether a batch of `content` whose key was kept within the resend
    /// window with `kept_content` is the same batch (acknowledged again, not
    /// kept twice), rather than other content under the same
    /// `Idempotency-Key` (422 `idempotency_key_reused`). A key kept before
    /// contents were recorded (`None`) counts as the same batch.
    pub fn is_same_batch(content: &str, kept_content: Option<&str>) -> bool {
        kept_content.is_none_or(|kept| kept == content)
    }

    /// The hash of a batch's source and decoded bytes.
    pub fn content_hash(source: &str, batch: &[u8]) -> u128 {
        let mut hasher = Xxh3::new();
        hasher.update(source.as_bytes());
        hasher.update(&[0]);
        hasher.update(batch);
        hasher.digest128()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;

    #[test]
    fn a_key_kept_with_other_content_is_other_content() {
        let keyed = BatchKey::of("edge_logs", b"[1]", Some("job-1"));
        assert!(BatchKey::is_same_batch(
            &keyed.content,
            Some(&keyed.content)
        ));
        assert!(
            BatchKey::is_same_batch(&keyed.content, None),
            "kept before contents were"
        );
        let other = BatchKey::of("edge_logs", b"[2]", Some("job-1"));
        assert_eq!(other.key, keyed.key);
        assert!(!BatchKey::is_same_batch(
            &other.content,
            Some(&keyed.content)
        ));
    }

    #[test]
    fn same_bytes_same_key_and_partition() {
        let a = BatchKey::of("edge_logs", b"[1]", None);
        assert_eq!(a, BatchKey::of("edge_logs", b"[1]", None));
        assert_ne!(a.key, BatchKey::of("edge_logs", b"[2]", None).key);
        assert_ne!(a.key, BatchKey::of("function_edge_logs", b"[1]", None).key);
        let keyed = BatchKey::of("edge_logs", b"[1]", Some("k-1"));
        let other = BatchKey::of("edge_logs", b"[2]", Some("k-1"));
        assert_eq!(
            (&keyed.key, &keyed.partition),
            (&other.key, &other.partition)
        );
        assert_ne!(keyed.content, other.content);
        assert_eq!(
            keyed.content, a.key,
            "the content is the key a batch has without one"
        );
        assert_ne!(
            keyed.key,
            BatchKey::of("postgres.logs", b"[1]", Some("k-1")).key
        );
        assert_eq!(a.key.len(), 32);
    }

    #[test]
    fn the_key_reuse_error_names_the_resend_window() {
        let within = format!("within {RESEND_WINDOW_HOURS} hours");
        let error = Error::IdempotencyKeyReused { key: "k".into() };
        assert!(error.to_string().contains(&within), "{error}");
        assert!(error.kind().when.contains(&within), "{}", error.kind().when);
    }
}
