//! A shard's answer to an ingest partition's delivery, declared once: the
//! shard writes it (`X-Delivery`, with the rows it hands back as the body),
//! stores it with the round it applied and gives it again when the round
//! comes again, and the partition reads it.

use serde::{Deserialize, Serialize};

use crate::error::{Error, ErrorReport, Result};
use crate::ingest::Stream;

/// Rows a shard refused for good, and why: the ingest partition records
/// them (docs/edge-deployment.md, "Refused deliveries").
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RefusedSection {
    /// The section's stream; none for rows it had handed back, which may
    /// be of either.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream: Option<Stream>,
    pub entries: usize,
    pub error: ErrorReport,
}

/// What a shard answers a delivery (the `X-Delivery` header's JSON).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
// Fields it does not know are passed over: a shard of a later release may store more.
#[serde(rename_all = "camelCase", default)]
pub struct DeliveryAnswer {
    /// The round was applied before: this is the answer given then.
    pub duplicate: bool,
    pub accepted: usize,
    pub refused: Vec<RefusedSection>,
    /// Rows there was no room for, handed back as the answer's body: the
    /// partition sends them on to each project-day's next split.
    pub overflow_entries: usize,
}

impl DeliveryAnswer {
    /// The header's text.
    pub fn text(&self) -> String {
        // A struct of numbers, strings and lists always serializes.
        serde_json::to_string(self).unwrap_or_default()
    }

    /// A shard's answer as the partition reads it; no header is an answer
    /// of nothing (a shard that kept nothing to say).
    pub fn read(text: Option<&str>) -> Result<DeliveryAnswer> {
        let Some(text) = text else {
            return Ok(DeliveryAnswer::default());
        };
        serde_json::from_str(text).map_err(|e| Error::BadShardAnswer {
            reason: format!("a delivery's answer that does not read ({e})"),
        })
    }

    /// The answer stored when the round was applied (none stored: it kept
    /// nothing), given again for the same round: marked a duplicate. When
    /// the rows it handed back no longer read from storage (`lost`), they
    /// are named as refused, not the round's entries, which the shard kept.
    pub fn replayed(stored: Option<&str>, lost: Option<ErrorReport>) -> Result<DeliveryAnswer> {
        let mut answer = DeliveryAnswer::read(stored)?;
        answer.duplicate = true;
        if let Some(error) = lost {
            answer.refused.push(RefusedSection {
                stream: None,
                entries: std::mem::take(&mut answer.overflow_entries),
                error: ErrorReport {
                    message: format!("rows handed back: {}", error.message),
                    ..error
                },
            });
        }
        Ok(answer)
    }

    /// Entries refused for good, in all sections.
    pub fn refused_entries(&self) -> usize {
        self.refused.iter().map(|section| section.entries).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn applied() -> DeliveryAnswer {
        DeliveryAnswer {
            duplicate: false,
            accepted: 10,
            refused: vec![RefusedSection {
                stream: Some(Stream::Edge),
                entries: 2,
                error: ErrorReport {
                    status: 413,
                    code: "batch_too_large".into(),
                    message: "too large".into(),
                },
            }],
            overflow_entries: 5,
        }
    }

    #[test]
    fn an_answer_reads_as_it_was_written_and_none_is_nothing() {
        let answer = applied();
        assert_eq!(DeliveryAnswer::read(Some(&answer.text())).unwrap(), answer);
        assert_eq!(
            answer.text(),
            r#"{"duplicate":false,"accepted":10,"refused":[{"stream":"edge_logs","entries":2,"error":{"status":413,"code":"batch_too_large","message":"too large"}}],"overflowEntries":5}"#
        );
        assert_eq!(
            DeliveryAnswer::read(None).unwrap(),
            DeliveryAnswer::default()
        );
        let later = r#"{"accepted":3,"keptBytes":100}"#;
        assert_eq!(DeliveryAnswer::read(Some(later)).unwrap().accepted, 3);
        for bad in ["", "{", r#"{"accepted":"ten"}"#, "7"] {
            let error = DeliveryAnswer::read(Some(bad)).unwrap_err();
            assert_eq!(
                (error.status(), error.code()),
                (502, "bad_shard_answer"),
                "{bad}"
            );
        }
    }

    #[test]
    fn a_round_again_gets_the_stored_answer_marked_and_lost_rows_named_as_refused() {
        let stored = applied().text();
        let again = DeliveryAnswer::replayed(Some(&stored), None).unwrap();
        assert_eq!(
            again,
            DeliveryAnswer {
                duplicate: true,
                ..applied()
            }
        );
        assert_eq!(
            DeliveryAnswer::replayed(None, None).unwrap(),
            DeliveryAnswer {
                duplicate: true,
                ..DeliveryAnswer::default()
            }
        );
        let lost = ErrorReport {
            status: 400,
            code: "unreadable_batch".into(),
            message: "part 2 is missing".into(),
        };
        let again = DeliveryAnswer::replayed(Some(&stored), Some(lost)).unwrap();
        assert_eq!((again.overflow_entries, again.refused_entries()), (0, 7));
        let named = &again.refused[1];
        assert_eq!((named.stream, named.entries), (None, 5));
        assert_eq!(named.error.message, "rows handed back: part 2 is missing");
        assert_eq!(named.error.code, "unreadable_batch");
    }
}
