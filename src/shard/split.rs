//! Splitting a batch by shard (a group of projects and a UTC day; see the
//! parent module). Entries are read exactly as one store reads them, so the
//! report's rejections are the ones ingesting the whole batch would report,
//! and the others are grouped by the shard they belong to:
//! - an edge entry by its top-level `project` and its timestamp's day;
//! - a function entry by each `metadata[].project_ref` it holds (an entry that
//!   names projects of two groups goes to both shards, and each store's
//!   queries count only their project's rows) and its timestamp's day;
//! - an entry of another source by its top-level `project` and its day (no
//!   endpoint reads it, but its project-day is registered like the others,
//!   so that once it has a split of its own, these entries follow it there
//!   rather than filling its group's shard);
//! - an entry with no project, by the group of the key `none`.
//!
//! Each shard's share also says, per project, which URL trigrams its entries'
//! request URLs hold, so that the directory finds the projects a
//! usage.api-counts pattern can match. The entries stay slices of the batch
//! until the record (or the parts) are written: one copy of each.

use std::borrow::Cow;
use std::collections::HashMap;

use serde::Serialize;

use super::frame::RecordWriter;
use super::{day_of, group_of, project_key, shard_name, Retention};
use crate::endpoints::LONGEST_RETENTION;
use crate::error::Result;
use crate::ingest::{
    self, frame_batch, BatchForm, EntryForm, IngestReport, RejectReason, Source, Stream,
};
use crate::limits::Limits;
use crate::staged;
use crate::store::TrigramFilter;
use crate::timestamp::{Micros, DAY};

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

/// One shard's share: its entries as slices of the batch, their rows staged.
struct Share<'a> {
    day: Micros,
    group: u32,
    texts: Vec<&'a str>,
    /// The rows the shard appends (`staged`), and how many.
    rows: Vec<u8>,
    row_count: usize,
    projects: Vec<(String, TrigramFilter)>,
}

/// A batch split by shard, its entries still slices of it.
pub struct Split<'a> {
    stream: Stream,
    shares: Vec<Share<'a>>,
    pub report: IngestReport,
}

/// A project as an entry names it (`None`: no project).
type Project<'a> = Option<Cow<'a, str>>;

/// Where entries go, found once per shard and per project, not per entry.
#[derive(Default)]
struct Grouping<'a> {
    groups: HashMap<Project<'a>, u32>,
    shares: HashMap<(Micros, u32), usize>,
    projects: HashMap<(usize, Project<'a>), usize>,
}

impl<'a> Split<'a> {
    /// Splits a batch of `source` that reads as `form` by shard, under
    /// `limits` (as one store's ingest would check them).
    pub fn of(
        source: &'a Source,
        form: BatchForm,
        batch: &'a [u8],
        limits: &Limits,
    ) -> Result<Split<'a>> {
        let stream = source.stream;
        let BatchForm {
            framing,
            entries: form,
            received_at,
        } = form;
        let cutoff = received_at.map(|now| Retention::at(now).cutoff);
        // An entry at the cutoff itself is read by no endpoint (each reads after it).
        let kept = |timestamp: Micros| match cutoff.is_some_and(|cutoff| timestamp <= cutoff) {
            true => Err(RejectReason::PastRetention {
                days: LONGEST_RETENTION / DAY,
            }),
            false => Ok(()),
        };
        let entries = frame_batch(batch, framing, limits)?;
        let mut split = Split {
            stream,
            shares: Vec::new(),
            report: IngestReport::new(limits.max_reported_rejections),
        };
        let mut grouping = Grouping::default();
        let mut rows = Vec::new();
        for (index, entry) in entries.iter().enumerate() {
            let text = match entry.text.clone() {
                Ok(text) => text,
                Err(reason) => {
                    split.report.reject(index, entry.reason(reason));
                    continue;
                }
            };
            let read = match stream {
                Stream::Edge => ingest::read_edge(text, &form, index)
                    .and_then(|edge| kept(edge.timestamp).map(|()| edge))
                    .map(|edge| {
                        let share = split.share(&mut grouping, &edge.project, edge.timestamp);
                        split.push(share, text);
                        if let Some(share) = split.shares.get_mut(share) {
                            staged::write_edge(&mut share.rows, &edge);
                            share.row_count += 1;
                        }
                        if let Some(filter) = split.project(&mut grouping, share, edge.project) {
                            for url in edge.requests.iter().filter_map(|r| r.url.as_deref()) {
                                filter.add_url(url.as_bytes());
                            }
                        }
                    }),
                Stream::Function => {
                    rows.clear();
                    let read = ingest::read_function(text, &form, index, &mut rows);
                    read.and_then(|()| rows.first().map_or(Ok(()), |row| kept(row.timestamp)))
                        .map(|()| {
                            let mut taken: Vec<usize> = Vec::new();
                            for row in rows.drain(..) {
                                let share =
                                    split.share(&mut grouping, &row.project_ref, row.timestamp);
                                // An entry of two projects of one shard goes to it once; each
                                // shard stages the rows of its own projects.
                                if !taken.contains(&share) {
                                    taken.push(share);
                                    split.push(share, text);
                                }
                                if let Some(share) = split.shares.get_mut(share) {
                                    staged::write_invocation(&mut share.rows, &row);
                                    share.row_count += 1;
                                }
                                split.project(&mut grouping, share, row.project_ref);
                            }
                        })
                }
                Stream::Other => ingest::read_other(text, &source.name, &form, index)
                    .and_then(|entry| kept(entry.timestamp).map(|()| entry))
                    .map(|entry| {
                        let share = split.share(&mut grouping, &entry.project, entry.timestamp);
                        split.push(share, text);
                        if let Some(share) = split.shares.get_mut(share) {
                            staged::write_other(&mut share.rows, &entry);
                            share.row_count += 1;
                        }
                        split.project(&mut grouping, share, entry.project);
                    }),
            };
            match read {
                Ok(()) => split.report.accepted += 1,
                Err(reason) => split.report.reject(index, entry.reason(reason)),
            }
        }
        // The shares in shard order (day, then group), as the parts list them.
        split.shares.sort_by_key(|s| (s.day, s.group));
        Ok(split)
    }

    /// The share of the shard of `project`'s entries at `timestamp`.
    fn share(
        &mut self,
        grouping: &mut Grouping<'a>,
        project: &Project<'a>,
        timestamp: Micros,
    ) -> usize {
        let group = *grouping
            .groups
            .entry(project.clone())
            .or_insert_with(|| group_of(&project_key(project.as_deref())));
        let day = timestamp.div_euclid(DAY);
        let shares = &mut self.shares;
        *grouping.shares.entry((day, group)).or_insert_with(|| {
            shares.push(Share {
                day,
                group,
                texts: Vec::new(),
                rows: Vec::new(),
                row_count: 0,
                projects: Vec::new(),
            });
            shares.len() - 1
        })
    }

    fn push(&mut self, share: usize, text: &'a str) {
        if let Some(share) = self.shares.get_mut(share) {
            share.texts.push(text);
        }
    }

    /// The URL filter of `project` in `share`, made when first seen.
    fn project(
        &mut self,
        grouping: &mut Grouping<'a>,
        share: usize,
        project: Project<'a>,
    ) -> Option<&mut TrigramFilter> {
        let projects = &mut self.shares.get_mut(share)?.projects;
        let slot = *grouping
            .projects
            .entry((share, project.clone()))
            .or_insert_with(|| {
                projects.push((project_key(project.as_deref()), TrigramFilter::default()));
                projects.len() - 1
            });
        projects.get_mut(slot).map(|(_, filter)| filter)
    }

    /// How many shards the batch's entries go to.
    pub fn shards(&self) -> usize {
        self.shares.len()
    }

    /// What an ingest partition keeps of the batch (`frame::read_record`
    /// reads it): each shard's staged rows, as a compressed block.
    pub fn record(&self) -> Vec<u8> {
        let size: usize = self.shares.iter().map(|s| s.rows.len() + 64).sum();
        let mut record = RecordWriter::new(self.shares.len(), size);
        for share in &self.shares {
            let projects: Vec<(&str, Vec<u32>)> = share
                .projects
                .iter()
                .map(|(key, filter)| (key.as_str(), filter.bits()))
                .collect();
            let mut block = Vec::new();
            staged::write_block(&mut block, share.row_count, &share.rows);
            record.part(
                share.group,
                &day_of(share.day * DAY),
                self.stream,
                share.row_count,
                &block,
                &projects,
            );
        }
        record.finish()
    }

    /// The parts, each with its entries as one JSON array.
    pub fn parts(&self) -> Vec<ShardPart> {
        self.shares
            .iter()
            .map(|share| {
                let day = day_of(share.day * DAY);
                let mut projects: Vec<ProjectUrls> = share
                    .projects
                    .iter()
                    .map(|(key, filter)| ProjectUrls {
                        project_key: key.clone(),
                        url_bits: filter.bits(),
                    })
                    .collect();
                projects.sort_by(|a, b| a.project_key.cmp(&b.project_key));
                ShardPart {
                    shard: shard_name(share.group, &day),
                    group: share.group,
                    day,
                    stream: self.stream,
                    body: format!("[{}]", share.texts.join(",")),
                    entries: share.texts.len(),
                    projects,
                }
            })
            .collect()
    }
}

/// Splits a batch of `stream_name` by shard, under `limits`: its parts, owned.
pub fn split_by_shard(stream_name: &str, batch: &[u8], limits: &Limits) -> Result<BatchSplit> {
    let source = Source::stream(stream_name)?;
    let split = Split::of(&source, EntryForm::Contract.into(), batch, limits)?;
    Ok(BatchSplit {
        parts: split.parts(),
        report: split.report,
    })
}
