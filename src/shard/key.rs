//! A batch's key: what makes a resent batch the same batch. Either the
//! client's `Idempotency-Key` (for the same source), or the batch's source
//! and decoded bytes (as ClickHouse deduplicates inserted blocks by their hash). The key picks the
//! ingest partition, so every copy of a batch meets the partition that
//! remembers the first.

use serde::Serialize;
use xxhash_rust::xxh3::{xxh3_128, Xxh3};

use super::{ingest_name, INGEST_PARTITIONS};
use crate::error::Error;
use crate::http::HttpAnswer;

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

    /// What an object that keeps batches finds of a batch of `content`:
    /// `kept` is `None` when its key was not kept within the resend window,
    /// else the content kept with it (`None` for a key kept before contents
    /// were recorded, which counts as the same batch).
    pub fn seen(content: &str, kept: Option<Option<&str>>) -> Seen {
        match kept {
            None => Seen::New,
            Some(kept) if kept.is_none_or(|kept| kept == content) => Seen::Duplicate,
            Some(_) => Seen::KeyReused,
        }
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

/// What the object that keeps a batch found of its key (`BatchKey::seen`):
/// the message an ingest partition answers the front with, and what picks
/// the request's answer (`IngestAnswers::to`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Seen {
    /// Not kept within the resend window: kept now.
    New,
    /// The same batch, kept before: acknowledged again, not kept twice.
    Duplicate,
    /// Other content under an `Idempotency-Key` kept before: not kept.
    KeyReused,
}

/// The answers to an ingest request, one for each thing the object that
/// keeps its batch may find (`Seen`; a host picks the field of that name),
/// made with the batch's report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct IngestAnswers {
    /// The report's answer (and the one answer when nothing is kept).
    pub new: HttpAnswer,
    /// The same, marked `X-Duplicate: true`.
    pub duplicate: HttpAnswer,
    /// 422 `idempotency_key_reused` for a request with an `Idempotency-Key`.
    /// Without one a batch's key is its content, so this is never found;
    /// it is then the duplicate's answer.
    pub key_reused: HttpAnswer,
}

impl IngestAnswers {
    pub fn new(answer: HttpAnswer, idempotency_key: Option<String>) -> IngestAnswers {
        let mut duplicate = answer.clone();
        duplicate
            .headers
            .push(("X-Duplicate".to_owned(), "true".to_owned()));
        IngestAnswers {
            new: answer,
            key_reused: match idempotency_key {
                Some(key) => HttpAnswer::from(&Error::IdempotencyKeyReused { key }),
                None => duplicate.clone(),
            },
            duplicate,
        }
    }

    /// The answer when the keeping object found `seen`.
    pub fn to(&self, seen: Seen) -> &HttpAnswer {
        match seen {
            Seen::New => &self.new,
            Seen::Duplicate => &self.duplicate,
            Seen::KeyReused => &self.key_reused,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_kept_with_other_content_is_other_content() {
        let keyed = BatchKey::of("edge_logs", b"[1]", Some("job-1"));
        assert_eq!(BatchKey::seen(&keyed.content, None), Seen::New);
        assert_eq!(
            BatchKey::seen(&keyed.content, Some(Some(&keyed.content))),
            Seen::Duplicate
        );
        assert_eq!(
            BatchKey::seen(&keyed.content, Some(None)),
            Seen::Duplicate,
            "kept before contents were"
        );
        let other = BatchKey::of("edge_logs", b"[2]", Some("job-1"));
        assert_eq!(other.key, keyed.key);
        assert_eq!(
            BatchKey::seen(&other.content, Some(Some(&keyed.content))),
            Seen::KeyReused
        );
    }

    #[test]
    fn each_seen_has_its_answer() {
        let ok = HttpAnswer::from(&Error::NotFound { path: "x".into() });
        let keyed = IngestAnswers::new(ok.clone(), Some("job-1".into()));
        assert_eq!(keyed.to(Seen::New), &ok);
        let duplicate = keyed.to(Seen::Duplicate);
        assert_eq!((duplicate.status, &duplicate.body), (ok.status, &ok.body));
        assert!(duplicate
            .headers
            .contains(&("X-Duplicate".to_owned(), "true".to_owned())));
        assert_eq!(keyed.to(Seen::KeyReused).status, 422);
        let unkeyed = IngestAnswers::new(ok, None);
        assert_eq!(unkeyed.to(Seen::KeyReused), unkeyed.to(Seen::Duplicate));
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
