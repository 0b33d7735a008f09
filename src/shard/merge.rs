//! Combining what the shards answered into what one store would answer:
//! query answers by each endpoint's `Merge` rule, and the shards' ingest
//! reports into the batch's report (which entries were kept, by the batch's
//! own indexes, when a shard failed).

use std::collections::{BTreeMap, BTreeSet};

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::cache::{CacheStatus, QueryAnswer};
use crate::error::{Error, ErrorReport, Result};
use crate::ingest::IngestReport;
use crate::json;
use crate::reach::Merge;

#[derive(Deserialize)]
struct Body<'a> {
    #[serde(borrow)]
    result: Vec<&'a RawValue>,
}

/// A row's fields in their order, values as sent.
type Fields<'a> = json::Fields<'a, &'a str>;

/// A bucket key: a number (microseconds) or a datetime text (fixed width, so
/// its text order is its time order).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Key<'a> {
    Number(i64),
    Text(&'a str),
}

fn bad(reason: impl Into<String>) -> Error {
    Error::BadShardAnswer {
        reason: reason.into(),
    }
}

fn key_of<'a>(fields: &Fields<'a>, name: &str) -> Result<Key<'a>> {
    let raw = fields
        .0
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, v)| v.get())
        .ok_or_else(|| bad(format!("a row has no `{name}`")))?;
    if let Ok(number) = raw.parse::<i64>() {
        return Ok(Key::Number(number));
    }
    serde_json::from_str::<&str>(raw)
        .map(Key::Text)
        .map_err(|_| bad(format!("`{name}` is neither a number nor a text")))
}

fn count(raw: &RawValue, name: &str) -> Result<i64> {
    raw.get()
        .parse::<i64>()
        .map_err(|_| bad(format!("`{name}` is not a whole number")))
}

fn push_fields(out: &mut String, fields: &[(String, String)]) {
    out.push('{');
    for (i, (name, value)) in fields.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        json::push_key(out, name);
        out.push_str(value);
    }
    out.push('}');
}

/// Adds rows field by field (the `skip` field, a key, is kept as it is).
fn add_rows(rows: &[Fields<'_>], skip: Option<&str>) -> Result<Vec<(String, String)>> {
    let Some(first) = rows.first() else {
        return Ok(Vec::new());
    };
    first
        .0
        .iter()
        .map(|&(name, value)| {
            if Some(name) == skip {
                return Ok((name.to_owned(), value.get().to_owned()));
            }
            let mut sum = 0i64;
            for row in rows {
                let raw = row
                    .0
                    .iter()
                    .find(|(n, _)| *n == name)
                    .ok_or_else(|| bad(format!("a row has no `{name}`")))?
                    .1;
                sum = sum.saturating_add(count(raw, name)?);
            }
            Ok((name.to_owned(), sum.to_string()))
        })
        .collect()
}

pub(crate) fn rows_of(body: &str) -> Result<Vec<&RawValue>> {
    serde_json::from_str::<Body>(body)
        .map(|b| b.result)
        .map_err(|e| bad(format!("not a `{{\"result\":[…]}}` answer ({e})")))
}

fn fields_of(row: &RawValue) -> Result<Fields<'_>> {
    serde_json::from_str(row.get()).map_err(|e| bad(format!("a row is not an object ({e})")))
}

/// The body one store holding every shard's entries would answer, from the
/// shards' bodies.
fn merge_bodies(rule: Merge, bodies: &[&str]) -> Result<String> {
    let mut out = String::from("{\"result\":[");
    let mut first = true;
    let mut push = |out: &mut String, row: &str| {
        if !first {
            out.push(',');
        }
        first = false;
        out.push_str(row);
    };
    match rule {
        Merge::NewestFirst { limit } => {
            #[derive(Deserialize)]
            struct Order<'a> {
                timestamp: i64,
                #[serde(borrow)]
                id: &'a str,
            }
            let mut rows: Vec<(Order, &RawValue)> = Vec::new();
            for body in bodies {
                for row in rows_of(body)? {
                    let order: Order = serde_json::from_str(row.get())
                        .map_err(|e| bad(format!("a logs.all row lacks its order ({e})")))?;
                    rows.push((order, row));
                }
            }
            rows.sort_by(|(a, _), (b, _)| {
                b.timestamp.cmp(&a.timestamp).then_with(|| a.id.cmp(b.id))
            });
            for (_, row) in rows.iter().take(limit) {
                push(&mut out, row.get());
            }
        }
        Merge::AddAll => {
            let rows = bodies
                .iter()
                .map(|b| rows_of(b))
                .collect::<Result<Vec<_>>>()?
                .into_iter()
                .flatten()
                .map(fields_of)
                .collect::<Result<Vec<_>>>()?;
            if !rows.is_empty() {
                let mut row = String::new();
                push_fields(&mut row, &add_rows(&rows, None)?);
                push(&mut out, &row);
            }
        }
        Merge::AddByKey { key } | Merge::OneShardPerKey { key } => {
            let mut buckets: BTreeMap<Key, (Vec<Fields>, &RawValue)> = BTreeMap::new();
            for body in bodies {
                for row in rows_of(body)? {
                    let fields = fields_of(row)?;
                    buckets
                        .entry(key_of(&fields, key)?)
                        .or_insert_with(|| (Vec::new(), row))
                        .0
                        .push(fields);
                }
            }
            for (bucket, (rows, first_row)) in buckets {
                if rows.len() == 1 {
                    push(&mut out, first_row.get());
                } else if matches!(rule, Merge::OneShardPerKey { .. }) {
                    return Err(bad(format!(
                        "two shards answered the bucket {bucket:?}, which one shard holds whole"
                    )));
                } else {
                    let mut row = String::new();
                    push_fields(&mut row, &add_rows(&rows, Some(key))?);
                    push(&mut out, &row);
                }
            }
        }
    }
    out.push_str("]}");
    Ok(out)
}

/// The answer one store holding every shard's entries would give, from the
/// shards' answers (at least one). It is a cache hit only when every part was,
/// and stays fresh as long as the stalest part.
pub fn merge_answers(rule: Merge, parts: &[QueryAnswer]) -> Result<QueryAnswer> {
    match parts {
        [] => return Err(bad("no answers to combine")),
        [only] => return Ok(only.clone()),
        _ => {}
    }
    let bodies: Vec<&str> = parts.iter().map(|p| &*p.body).collect();
    let body = merge_bodies(rule, &bodies)?;
    let cache = parts
        .iter()
        .map(|p| p.cache)
        .collect::<Option<Vec<CacheStatus>>>()
        .and_then(|all| {
            Some(CacheStatus {
                hit: all.iter().all(|c| c.hit),
                max_age_seconds: all.iter().map(|c| c.max_age_seconds).min()?,
            })
        });
    let warning = parts.iter().find_map(|p| p.warning.clone());
    Ok(QueryAnswer::new(body.into(), cache, warning))
}

/// What one shard did with its part of a batch (`indexes`: the part's
/// entries' places in the batch): stored it, with its report, or kept
/// nothing of it, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PartOutcome {
    Stored {
        indexes: Vec<usize>,
        report: IngestReport,
    },
    Failed {
        indexes: Vec<usize>,
        error: ErrorReport,
    },
}

/// What the front knows of one shard's part after sending it: the shard's
/// HTTP answer (`status` and `body`), or why there was none (`failure`).
/// How a part is reported between objects; `outcome` reads it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PartAnswer {
    pub indexes: Vec<usize>,
    #[serde(default)]
    pub status: Option<u16>,
    #[serde(default)]
    pub body: Option<String>,
    #[serde(default)]
    pub failure: Option<String>,
}

impl PartAnswer {
    pub fn outcome(self) -> PartOutcome {
        let indexes = self.indexes;
        let failed = |error: Error| PartOutcome::Failed {
            indexes: indexes.clone(),
            error: ErrorReport::from(&error),
        };
        let body = self.body.unwrap_or_default();
        match (self.status, self.failure) {
            (Some(200), None) => match serde_json::from_str::<IngestReport>(&body) {
                Ok(report) => PartOutcome::Stored {
                    indexes: indexes.clone(),
                    report,
                },
                Err(e) => failed(Error::BadShardAnswer {
                    reason: format!("an ingest report that does not read ({e})"),
                }),
            },
            (Some(status), None) => PartOutcome::Failed {
                error: ErrorReport::from_answer(status, &body),
                indexes,
            },
            (_, failure) => failed(Error::Unavailable {
                reason: failure.unwrap_or_else(|| "the shard did not answer".into()),
            }),
        }
    }
}

/// The batch's report from the split's refusals (`split`) and what each
/// shard did with its part: as one store's when every shard kept its part.
/// Otherwise the entries of failed parts are `not_kept` (an entry of two
/// projects is kept only when both shards kept it), with the first failure's
/// error; `IngestReport::status` makes that 503 when nothing was kept, else 502.
pub fn combine_ingest(split: IngestReport, parts: Vec<PartOutcome>) -> IngestReport {
    let mut report = split;
    let mut kept = BTreeSet::new();
    let mut not_kept = BTreeSet::new();
    for part in parts {
        match part {
            PartOutcome::Stored {
                indexes,
                report: shard,
            } => {
                let refused: BTreeSet<usize> = shard.rejected.iter().map(|r| r.index).collect();
                let unlisted = shard.rejected_total - shard.rejected.len();
                for r in shard.rejected {
                    if let Some(&index) = indexes.get(r.index) {
                        report.reject(index, r.reason);
                    }
                }
                report.rejected_total += unlisted;
                report.newest_timestamp = report.newest_timestamp.max(shard.newest_timestamp);
                kept.extend(
                    indexes
                        .iter()
                        .enumerate()
                        .filter(|(i, _)| !refused.contains(i))
                        .map(|(_, &index)| index),
                );
            }
            PartOutcome::Failed { indexes, error } => {
                report.error = report.error.take().or(Some(error));
                not_kept.extend(indexes);
            }
        }
    }
    report.tidy();
    report.accepted = kept.difference(&not_kept).count();
    report.not_kept = (!not_kept.is_empty()).then(|| not_kept.into_iter().collect());
    report
}

#[cfg(test)]
mod tests {
    use super::*;

    fn out(body: &str) -> QueryAnswer {
        QueryAnswer::new(body.into(), None, None)
    }

    #[test]
    fn buckets_add_and_keep_their_field_order() {
        let merged = merge_answers(
            Merge::AddByKey { key: "timestamp" },
            &[
                out(r#"{"result":[{"timestamp":2,"b":1,"a":2},{"timestamp":5,"b":0,"a":1}]}"#),
                out(r#"{"result":[{"timestamp":1,"b":3,"a":0},{"timestamp":2,"b":4,"a":4}]}"#),
            ],
        )
        .unwrap();
        assert_eq!(
            &*merged.body,
            r#"{"result":[{"timestamp":1,"b":3,"a":0},{"timestamp":2,"b":5,"a":6},{"timestamp":5,"b":0,"a":1}]}"#
        );
    }

    #[test]
    fn newest_first_keeps_the_limit_and_breaks_ties_by_id() {
        let merged = merge_bodies(
            Merge::NewestFirst { limit: 3 },
            &[
                r#"{"result":[{"id":"b","timestamp":9,"m":{"x":1}},{"id":"z","timestamp":4}]}"#,
                r#"{"result":[{"id":"a","timestamp":9},{"id":"c","timestamp":7}]}"#,
            ],
        )
        .unwrap();
        assert_eq!(
            merged,
            r#"{"result":[{"id":"a","timestamp":9},{"id":"b","timestamp":9,"m":{"x":1}},{"id":"c","timestamp":7}]}"#
        );
    }

    #[test]
    fn one_shard_per_bucket_refuses_a_bucket_twice() {
        let rule = Merge::OneShardPerKey { key: "timestamp" };
        let ok = merge_bodies(
            rule,
            &[
                r#"{"result":[{"timestamp":2,"p95":1.5}]}"#,
                r#"{"result":[{"timestamp":1,"p95":2}]}"#,
            ],
        );
        assert_eq!(
            ok.unwrap(),
            r#"{"result":[{"timestamp":1,"p95":2},{"timestamp":2,"p95":1.5}]}"#
        );
        let twice = merge_bodies(
            rule,
            &[
                r#"{"result":[{"timestamp":2,"p95":1.5}]}"#,
                r#"{"result":[{"timestamp":2,"p95":2}]}"#,
            ],
        );
        assert!(matches!(twice, Err(Error::BadShardAnswer { .. })));
        assert_eq!(merge_bodies(rule, &["[]"]).unwrap_err().status(), 502);
    }

    #[test]
    fn a_failed_shard_s_entries_are_not_kept() {
        let stored = |accepted| {
            let mut report = IngestReport::new(100);
            report.accepted = accepted;
            report
        };
        let split = || {
            let mut report = IngestReport::new(100);
            report.reject(1, "bad");
            report
        };
        let parts = |second_fails: bool| {
            let second = if second_fails {
                PartOutcome::Failed {
                    indexes: vec![2, 3],
                    error: ErrorReport::from(&Error::StorageUnavailable { reason: "x".into() }),
                }
            } else {
                PartOutcome::Stored {
                    indexes: vec![2, 3],
                    report: stored(2),
                }
            };
            vec![
                PartOutcome::Stored {
                    indexes: vec![0, 3],
                    report: stored(2),
                },
                second,
            ]
        };
        let all = combine_ingest(split(), parts(false));
        assert_eq!(
            (all.status(), all.accepted, all.not_kept.clone()),
            (200, 3, None)
        );
        assert_eq!((all.rejected_total, all.rejected[0].index), (1, 1));
        let some = combine_ingest(split(), parts(true));
        assert_eq!(
            (some.status(), some.accepted, some.not_kept.clone()),
            (502, 1, Some(vec![2, 3]))
        );
        assert_eq!(some.error.map(|e| e.status), Some(503));
        let nothing = vec![PartAnswer {
            indexes: vec![0],
            status: None,
            body: None,
            failure: None,
        }
        .outcome()];
        assert_eq!(combine_ingest(split(), nothing).status(), 503);
    }
}
