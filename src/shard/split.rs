//! Splitting a batch by shard (a group of projects and a UTC day; see the
//! parent module). Entries are read exactly as one store reads them, so the
//! report's rejections are the ones ingesting the whole batch would report,
//! and the others are grouped by the shard they belong to:
//! - an edge entry by its top-level `project` and its timestamp's day;
//! - a function entry by each `metadata[].project_ref` it holds (an entry that
//!   names projects of two groups goes to both shards, and each store's
//!   queries count only their project's rows) and its timestamp's day;
//! - an entry with no project, by the group of the key `none`.
//!
//! Each part also says, per project, which days and URL trigram bits the
//! directory must learn, so that a usage.api-counts pattern finds the
//! projects whose URLs can match.

use std::collections::BTreeMap;

use serde::Serialize;

use super::{day_of, group_of, project_key, shard_name};
use crate::error::Result;
use crate::ingest::{self, frame_batch, IngestReport, Stream};
use crate::limits::Limits;
use crate::store::UrlTrigrams;

/// One project's share of a part: what the directory learns of it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ProjectUrls {
    /// `project_key(project)`: the project's key in the directory.
    pub project_key: String,
    /// The trigram bits of its entries' request URLs (edge entries), ascending.
    pub url_bits: Vec<u32>,
}

/// One shard's entries of a batch: a JSON array of their text as it arrived.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ShardPart {
    /// The store's name (`shard_name`).
    pub shard: String,
    pub group: u32,
    pub day: String,
    pub stream: Stream,
    pub body: String,
    /// How many entries `body` holds.
    pub entries: usize,
    /// The projects whose entries it holds, by key.
    pub projects: Vec<ProjectUrls>,
}

/// A batch split by shard: the parts (by shard) and the entries refused, as
/// `ingest` would report them (`accepted`: the entries read).
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
    let mut parts: BTreeMap<String, ShardPart> = BTreeMap::new();
    // Per part, per project key: the URL trigram bits seen.
    let mut seen: BTreeMap<String, BTreeMap<String, Vec<u32>>> = BTreeMap::new();
    let mut report = IngestReport::new(limits.max_reported_rejections);
    let mut rows = Vec::new();
    // The trigram bits of the current entry's request URLs.
    let mut bits: Vec<u32> = Vec::new();
    for (index, entry) in entries.iter().enumerate() {
        bits.clear();
        let read = entry.text.clone().and_then(|text| {
            let shards: Vec<(String, String)> = match stream {
                Stream::Edge => {
                    let edge = ingest::read_edge(text)?;
                    for url in edge.requests.iter().filter_map(|r| r.url.as_deref()) {
                        bits.extend(UrlTrigrams::bits_of(url.as_bytes()));
                    }
                    vec![(project_key(edge.project.as_deref()), day_of(edge.timestamp))]
                }
                Stream::Function => {
                    rows.clear();
                    ingest::read_function(text, &mut rows)?;
                    let mut names: Vec<(String, String)> = rows
                        .iter()
                        .map(|r| (project_key(r.project_ref.as_deref()), day_of(r.timestamp)))
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
        report.accepted += 1;
        let mut taken: Vec<String> = Vec::with_capacity(shards.len());
        for (key, day) in shards {
            let group = group_of(&key);
            let shard = shard_name(group, &day);
            let projects = seen.entry(shard.clone()).or_default();
            let project_bits = projects.entry(key).or_default();
            project_bits.extend_from_slice(&bits);
            if project_bits.len() > 4096 {
                project_bits.sort_unstable();
                project_bits.dedup();
            }
            // An entry of two projects of one group goes to that shard once.
            if taken.contains(&shard) {
                continue;
            }
            taken.push(shard.clone());
            let part = parts.entry(shard.clone()).or_insert_with(|| ShardPart {
                shard,
                group,
                day,
                stream,
                body: String::from("["),
                entries: 0,
                projects: Vec::new(),
            });
            if part.entries > 0 {
                part.body.push(',');
            }
            part.body.push_str(text);
            part.entries += 1;
        }
    }
    let parts = parts
        .into_values()
        .map(|mut part| {
            part.body.push(']');
            part.projects = seen
                .remove(&part.shard)
                .unwrap_or_default()
                .into_iter()
                .map(|(project_key, mut url_bits)| {
                    url_bits.sort_unstable();
                    url_bits.dedup();
                    ProjectUrls {
                        project_key,
                        url_bits,
                    }
                })
                .collect();
            part
        })
        .collect();
    Ok(BatchSplit { parts, report })
}
