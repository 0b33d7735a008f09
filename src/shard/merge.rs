//! Combining what the shards answered into what one store would answer:
//! query answers by each endpoint's `Merge` rule, and the shards' ingest
//! reports into the batch's report (which entries were kept, by the batch's
//! own indexes, when a shard failed).

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::cache::CacheStatus;
use crate::error::{Error, Result};
use crate::json;
use crate::service::QueryOutput;

/// How an endpoint's answers from several shards combine, declared by the
/// endpoint module next to its run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Merge {
    /// Buckets keyed by `key`, in ascending order; rows of one bucket from
    /// several shards (several projects) add field by field, every other field
    /// being a count.
    AddByKey { key: &'static str },
    /// Buckets keyed by `key`, in ascending order, each held whole by one shard
    /// (one project's bucket is never longer than the day its shard holds):
    /// the rows are taken as they are, so averages and percentiles stay exact.
    OneShardPerKey { key: &'static str },
    /// Rows newest first by `timestamp`, ties by `id`, at most `limit` of them.
    NewestFirst { limit: usize },
    /// One row whose fields are all counts: they add.
    AddAll,
}

#[derive(Deserialize)]
struct Body<'a> {
    #[serde(borrow)]
    result: Vec<&'a RawValue>,
}

/// A row's fields in their order, values as sent.
struct Fields<'a>(Vec<(&'a str, &'a RawValue)>);

impl<'de: 'a, 'a> Deserialize<'de> for Fields<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(
        deserializer: D,
    ) -> std::result::Result<Self, D::Error> {
        struct Visit<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> serde::de::Visitor<'de> for Visit<'a> {
            type Value = Fields<'a>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a row object")
            }
            fn visit_map<M: serde::de::MapAccess<'de>>(
                self,
                mut map: M,
            ) -> std::result::Result<Fields<'a>, M::Error> {
                let mut fields = Vec::new();
                while let Some(entry) = map.next_entry::<&'de str, &'de RawValue>()? {
                    fields.push(entry);
                }
                Ok(Fields(fields))
            }
        }
        deserializer.deserialize_map(Visit(std::marker::PhantomData))
    }
}

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

fn rows_of(body: &str) -> Result<Vec<&RawValue>> {
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
pub fn merge_answers(rule: Merge, parts: &[QueryOutput]) -> Result<QueryOutput> {
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
    Ok(QueryOutput {
        body: body.into(),
        cache,
        warning: parts.iter().find_map(|p| p.warning.clone()),
    })
}

/// A rejection as a shard or the split reported it (its reason kept as sent).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReportedRejection {
    pub index: usize,
    pub reason: serde_json::Value,
}

/// What one shard did with its part.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PartOutcome {
    /// The part's entries' indexes in the batch.
    pub indexes: Vec<usize>,
    /// The shard's report, when it stored the part …
    #[serde(default)]
    pub report: Option<PartReport>,
    /// … or why it did not (`{ status, code, message }`): nothing of it was kept.
    #[serde(default)]
    pub error: Option<PartError>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PartReport {
    pub accepted: usize,
    #[serde(default)]
    pub rejected: Vec<ReportedRejection>,
    #[serde(default)]
    pub rejected_total: usize,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PartError {
    pub status: u16,
    pub code: String,
    pub message: String,
}

/// A batch's split refusals and what each shard did with its part.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct IngestOutcome {
    pub rejected: Vec<ReportedRejection>,
    pub rejected_total: usize,
    pub parts: Vec<PartOutcome>,
}

/// The batch's answer: its HTTP status and body.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CombinedReport {
    pub status: u16,
    pub body: CombinedBody,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CombinedBody {
    pub accepted: usize,
    pub rejected: Vec<ReportedRejection>,
    pub rejected_total: usize,
    /// Entries not kept because their shard failed (by the batch's indexes):
    /// resend just these. Absent when every entry was kept or refused.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_kept: Option<Vec<usize>>,
    /// Why (the first failing shard's error).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<PartError>,
}

/// The batch's report from its parts' outcomes: as one store's when every
/// shard kept its part. Otherwise the entries of failed parts are `notKept`
/// (an entry of two projects is kept only when both shards kept it), and the
/// status is one a client retries on: 503 when nothing was kept, else 502.
pub fn combine_ingest(outcome: IngestOutcome, max_reported: usize) -> CombinedReport {
    let mut rejected = outcome.rejected;
    let mut rejected_total = outcome.rejected_total;
    let mut kept = BTreeSet::new();
    let mut not_kept = BTreeSet::new();
    let mut error = None;
    for part in outcome.parts {
        match (part.report, part.error) {
            (Some(report), None) => {
                let refused: BTreeSet<usize> = report.rejected.iter().map(|r| r.index).collect();
                rejected_total += report.rejected_total;
                for r in report.rejected {
                    if let Some(&index) = part.indexes.get(r.index) {
                        rejected.push(ReportedRejection {
                            index,
                            reason: r.reason,
                        });
                    }
                }
                kept.extend(
                    part.indexes
                        .iter()
                        .enumerate()
                        .filter(|(i, _)| !refused.contains(i))
                        .map(|(_, &index)| index),
                );
            }
            (_, failure) => {
                error = error.or(failure).or_else(|| {
                    Some(PartError {
                        status: 503,
                        code: "unavailable".into(),
                        message: "a shard gave no report".into(),
                    })
                });
                not_kept.extend(part.indexes);
            }
        }
    }
    rejected.sort_by_key(|r| r.index);
    rejected.dedup_by_key(|r| r.index);
    rejected.truncate(max_reported);
    let accepted = kept.difference(&not_kept).count();
    let status = match (not_kept.is_empty(), accepted) {
        (true, _) => 200,
        (false, 0) => 503,
        (false, _) => 502,
    };
    CombinedReport {
        status,
        body: CombinedBody {
            accepted,
            rejected,
            rejected_total,
            not_kept: (!not_kept.is_empty()).then(|| not_kept.into_iter().collect()),
            error,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn out(body: &str) -> QueryOutput {
        QueryOutput {
            body: body.into(),
            cache: None,
            warning: None,
        }
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
        assert_eq!(twice.unwrap_err().code(), "bad_shard_answer");
        assert_eq!(merge_bodies(rule, &["[]"]).unwrap_err().status(), 502);
    }

    #[test]
    fn a_failed_shard_s_entries_are_not_kept() {
        let outcome = |second_fails: bool| IngestOutcome {
            rejected: vec![ReportedRejection {
                index: 1,
                reason: "bad".into(),
            }],
            rejected_total: 1,
            parts: vec![
                PartOutcome {
                    indexes: vec![0, 3],
                    report: Some(PartReport {
                        accepted: 2,
                        rejected: vec![],
                        rejected_total: 0,
                    }),
                    error: None,
                },
                PartOutcome {
                    indexes: vec![2, 3],
                    report: (!second_fails).then(|| PartReport {
                        accepted: 2,
                        rejected: vec![],
                        rejected_total: 0,
                    }),
                    error: second_fails.then(|| PartError {
                        status: 503,
                        code: "storage_unavailable".into(),
                        message: "x".into(),
                    }),
                },
            ],
        };
        let all = combine_ingest(outcome(false), 100);
        assert_eq!(
            (all.status, all.body.accepted, all.body.not_kept.clone()),
            (200, 3, None)
        );
        let some = combine_ingest(outcome(true), 100);
        assert_eq!(
            (some.status, some.body.accepted, some.body.not_kept),
            (502, 1, Some(vec![2, 3]))
        );
        let mut nothing = outcome(true);
        nothing.parts.truncate(0);
        nothing.parts.push(PartOutcome {
            indexes: vec![0],
            report: None,
            error: None,
        });
        assert_eq!(combine_ingest(nothing, 100).status, 503);
    }
}
