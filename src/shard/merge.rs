//! Combining what the shards answered into what one store would answer, by
//! each endpoint's `Merge` rule.

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::cache::{CacheStatus, QueryAnswer};
use crate::error::{Error, Result};
use crate::json;
use crate::reach::{answer_rows, Merge};

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
                // Owned when escaped: an id may hold `"`, `\` or a control character.
                #[serde(borrow)]
                id: Cow<'a, str>,
            }
            let mut rows: Vec<(Order, &RawValue)> = Vec::new();
            for body in bodies {
                for row in answer_rows(body)? {
                    let order: Order = serde_json::from_str(row.get())
                        .map_err(|e| bad(format!("a logs.all row lacks its order ({e})")))?;
                    rows.push((order, row));
                }
            }
            rows.sort_by(|(a, _), (b, _)| {
                b.timestamp.cmp(&a.timestamp).then_with(|| a.id.cmp(&b.id))
            });
            for (_, row) in rows.iter().take(limit) {
                push(&mut out, row.get());
            }
        }
        Merge::AddAll => {
            let rows = bodies
                .iter()
                .map(|b| answer_rows(b))
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
        Merge::AddByKey { key, limit } | Merge::BucketStates { key, limit } => {
            let mut buckets: BTreeMap<Key, (Vec<Fields>, &RawValue)> = BTreeMap::new();
            for body in bodies {
                for row in answer_rows(body)? {
                    let fields = fields_of(row)?;
                    buckets
                        .entry(key_of(&fields, key)?)
                        .or_insert_with(|| (Vec::new(), row))
                        .0
                        .push(fields);
                }
            }
            for (bucket, (rows, first_row)) in buckets.into_iter().take(limit) {
                if rows.len() == 1 {
                    push(&mut out, first_row.get());
                } else if matches!(rule, Merge::BucketStates { .. }) {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn out(body: &str) -> QueryAnswer {
        QueryAnswer::new(body.into(), None, None)
    }

    #[test]
    fn buckets_add_and_keep_their_field_order() {
        let merged = merge_answers(
            Merge::AddByKey {
                key: "timestamp",
                limit: 1000,
            },
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

    /// Merged buckets stop where one store's answer would: at the limit.
    #[test]
    fn buckets_stop_at_the_limit_as_one_store_does() {
        let merged = merge_bodies(
            Merge::AddByKey {
                key: "timestamp",
                limit: 2,
            },
            &[
                r#"{"result":[{"timestamp":1,"n":1},{"timestamp":3,"n":1}]}"#,
                r#"{"result":[{"timestamp":2,"n":1},{"timestamp":3,"n":2}]}"#,
            ],
        )
        .unwrap();
        assert_eq!(
            merged,
            r#"{"result":[{"timestamp":1,"n":1},{"timestamp":2,"n":1}]}"#
        );
    }

    #[test]
    fn newest_first_reads_ids_with_escapes() {
        let merged = merge_bodies(
            Merge::NewestFirst { limit: 2 },
            &[
                r#"{"result":[{"id":"a\"b","timestamp":9}]}"#,
                r#"{"result":[{"id":"a\\b\n","timestamp":9},{"id":"c","timestamp":1}]}"#,
            ],
        )
        .unwrap();
        assert_eq!(
            merged,
            r#"{"result":[{"id":"a\"b","timestamp":9},{"id":"a\\b\n","timestamp":9}]}"#
        );
    }

    #[test]
    fn one_shard_per_bucket_refuses_a_bucket_twice() {
        let rule = Merge::BucketStates {
            key: "timestamp",
            limit: 1000,
        };
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
}
