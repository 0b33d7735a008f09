//! A batch's key: what makes a resent batch the same batch. Either the
//! client's `Idempotency-Key` (for the same source), or the batch's source
//! and decoded bytes (as ClickHouse deduplicates inserted blocks by their hash). The key picks the
//! ingest partition, so every copy of a batch meets the partition that
//! remembers the first.

use serde::{Deserialize, Serialize};
use xxhash_rust::xxh3::{xxh3_128, Xxh3};

use super::{ingest_name, INGEST_PARTITIONS};
use crate::error::{Error, Result};
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
/// what an ingest partition answers the front (`KeepAnswer`), and which of
/// the request's `IngestAnswers` is sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Seen {
    /// Not kept within the resend window: kept now.
    New,
    /// The same batch, kept before: acknowledged again, not kept twice.
    Duplicate,
    /// Other content under an `Idempotency-Key` kept before: not kept.
    KeyReused,
}

/// An ingest partition's answer to the front: what it found of the batch's
/// key, and the same as the two flags its earlier builds answered with, so
/// that a front and a partition of different builds (a deploy under way)
/// read each other.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct KeepAnswer {
    seen: Seen,
    duplicate: bool,
    key_reused: bool,
}

impl KeepAnswer {
    pub fn of(seen: Seen) -> KeepAnswer {
        KeepAnswer {
            seen,
            duplicate: seen == Seen::Duplicate,
            key_reused: seen == Seen::KeyReused,
        }
    }

    pub fn text(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// What a partition's answer says it found: its `seen` (or a bare
    /// `Seen`, as builds 85cc4ee to 2a81980 answered), else its flags (as
    /// earlier builds answered, and as a later `Seen` this build does not
    /// know falls back to). An answer with neither does not read: 503, since
    /// the batch may have been kept, and a resend is answered as one.
    pub fn read(text: &str) -> Result<Seen> {
        let unreadable = |why: String| Error::Unavailable {
            reason: format!("the ingest partition's answer does not read ({why})"),
        };
        let value: serde_json::Value =
            serde_json::from_str(text).map_err(|e| unreadable(e.to_string()))?;
        let seen_of = |v: &serde_json::Value| Seen::deserialize(v).ok();
        if let Some(seen) = seen_of(&value) {
            return Ok(seen);
        }
        let flag = |name: &str| value.get(name).and_then(serde_json::Value::as_bool);
        match (
            value.get("seen").and_then(seen_of),
            flag("duplicate"),
            flag("keyReused"),
        ) {
            (Some(seen), ..) => Ok(seen),
            (None, None, None) => Err(unreadable(format!("no `seen` and no flags: {text}"))),
            (None, _, Some(true)) => Ok(Seen::KeyReused),
            (None, Some(true), _) => Ok(Seen::Duplicate),
            (None, ..) => Ok(Seen::New),
        }
    }
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
    fn a_partition_and_a_front_of_different_builds_read_each_other() {
        for seen in [Seen::New, Seen::Duplicate, Seen::KeyReused] {
            assert_eq!(
                KeepAnswer::read(&KeepAnswer::of(seen).text()).unwrap(),
                seen
            );
        }
        // An earlier build's partition answered the flags alone.
        let earlier = |text: &str| KeepAnswer::read(text).unwrap();
        assert_eq!(
            earlier(r#"{"duplicate":false,"keyReused":false}"#),
            Seen::New
        );
        assert_eq!(
            earlier(r#"{"duplicate":true,"keyReused":false}"#),
            Seen::Duplicate
        );
        assert_eq!(
            earlier(r#"{"duplicate":false,"keyReused":true}"#),
            Seen::KeyReused
        );
        // Builds 85cc4ee to 2a81980 answered the bare Seen; a later Seen falls back to the flags.
        assert_eq!(earlier(r#""keyReused""#), Seen::KeyReused);
        assert_eq!(
            earlier(r#"{"seen":"later","duplicate":true,"keyReused":false}"#),
            Seen::Duplicate
        );
        // An earlier build's front reads the flags of this one's.
        let text = KeepAnswer::of(Seen::KeyReused).text();
        assert!(text.contains(r#""keyReused":true"#), "{text}");
        for unreadable in ["{}", "\"later\"", "[]", "not json"] {
            let code = KeepAnswer::read(unreadable).unwrap_err().code();
            assert_eq!(code, "unavailable", "{unreadable}");
        }
    }

    #[test]
    fn each_seen_has_its_answer() {
        let ok = HttpAnswer::from(&Error::NotFound { path: "x".into() });
        let keyed = IngestAnswers::new(ok.clone(), Some("job-1".into()));
        assert_eq!(keyed.new, ok);
        let duplicate = &keyed.duplicate;
        assert_eq!((duplicate.status, &duplicate.body), (ok.status, &ok.body));
        assert!(duplicate
            .headers
            .contains(&("X-Duplicate".to_owned(), "true".to_owned())));
        assert_eq!(keyed.key_reused.status, 422);
        let unkeyed = IngestAnswers::new(ok, None);
        assert_eq!(unkeyed.key_reused, unkeyed.duplicate);
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
