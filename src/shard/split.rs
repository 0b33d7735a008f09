//! Splitting a batch by shard (project and UTC day; see the parent module).
//! Entries are read exactly as one store reads them, so rejections are the ones
//! ingesting the whole batch would report (with the batch's own indexes), and
//! the others are grouped by the shard they belong to:
//! - an edge entry by its top-level `project` and its timestamp's day;
//! - a function entry by each `metadata[].project_ref` it holds (an entry that
//!   names two projects goes to both, and each store counts only its own rows)
//!   and its timestamp's day;
//! - an entry with no project, to its day's part whose `project` is `None`.
//!
//! Each edge part carries the trigram bits of its request URLs, which the
//! directory of shards keeps per project to find the projects a
//! usage.api-counts pattern can match.

use std::collections::BTreeMap;

use serde::Serialize;

use super::{day_of, project_key, shard_name};
use crate::error::Result;
use crate::ingest::{self, frame_batch, IngestReport, Stream};
use crate::limits::Limits;
use crate::store::UrlTrigrams;

/// One shard's entries of a batch: a JSON array of their text as it arrived,
/// and their indexes in the batch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ShardPart {
    /// The store's name (`shard_name`).
    pub shard: String,
    pub project: Option<String>,
    /// `project_key(project)`: the project's key in the directory.
    pub project_key: String,
    pub day: String,
    pub body: String,
    pub indexes: Vec<usize>,
    /// The trigram bits of the part's request URLs (edge entries), ascending.
    pub url_bits: Vec<u32>,
}

/// A batch split by shard: the parts (by day, then project key) and the
/// entries refused, as `ingest` would report them (nothing accepted yet).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BatchSplit {
    pub parts: Vec<ShardPart>,
    pub report: IngestReport,
}

/// Splits a batch of `stream_name` by shard, under `limits` (as one store's
/// ingest would check them).
pub fn split_by_shard(stream_name: &str, batch: &[u8], limits: &Limits) -> Result<BatchSplit> {
    let (stream, entries) = frame_batch(stream_name, batch, limits)?;
    let mut parts: BTreeMap<(String, String), ShardPart> = BTreeMap::new();
    let mut report = IngestReport::new(limits.max_reported_rejections);
    let mut rows = Vec::new();
    // The trigram bits of the current entry's request URLs.
    let mut bits: Vec<u32> = Vec::new();
    for (index, entry) in entries.iter().enumerate() {
        bits.clear();
        let read = entry.text.clone().and_then(|text| {
            let shards: Vec<(Option<String>, String)> = match stream {
                Stream::Edge => {
                    let edge = ingest::read_edge(text)?;
                    for url in edge.requests.iter().filter_map(|r| r.url.as_deref()) {
                        bits.extend(UrlTrigrams::bits_of(url.as_bytes()));
                    }
                    vec![(edge.project.map(String::from), day_of(edge.timestamp))]
                }
                Stream::Function => {
                    rows.clear();
                    ingest::read_function(text, &mut rows)?;
                    let mut names: Vec<(Option<String>, String)> = rows
                        .iter()
                        .map(|r| {
                            (
                                r.project_ref.as_deref().map(String::from),
                                day_of(r.timestamp),
                            )
                        })
                        .collect();
                    names.sort_unstable();
                    names.dedup();
                    names
                }
            };
            Ok((text, shards))
        });
        let (text, shards) = match read {
            Ok(read) => read,
            Err(reason) => {
                report.reject(index, entry.reason(reason));
                continue;
            }
        };
        for (project, day) in shards {
            let key = project_key(project.as_deref());
            let part = parts
                .entry((day.clone(), key.clone()))
                .or_insert_with(|| ShardPart {
                    shard: shard_name(&key, &day),
                    project,
                    project_key: key,
                    day,
                    body: String::from("["),
                    indexes: Vec::new(),
                    url_bits: Vec::new(),
                });
            if !part.indexes.is_empty() {
                part.body.push(',');
            }
            part.body.push_str(text);
            part.indexes.push(index);
            part.url_bits.extend_from_slice(&bits);
            if part.url_bits.len() > 4096 {
                part.url_bits.sort_unstable();
                part.url_bits.dedup();
            }
        }
    }
    let parts = parts
        .into_values()
        .map(|mut part| {
            part.body.push(']');
            part.url_bits.sort_unstable();
            part.url_bits.dedup();
            part
        })
        .collect();
    Ok(BatchSplit { parts, report })
}
