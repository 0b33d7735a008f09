//! Splitting a batch by project, for a deployment that keeps each project in a
//! store of its own (one Durable Object per project). Entries are read exactly
//! as one store reads them, so rejections are the ones ingesting the whole
//! batch would report (with the batch's own indexes), and the others are
//! grouped by the project they belong to:
//! - an edge entry by its top-level `project`;
//! - a function entry by each `metadata[].project_ref` it holds: an entry that
//!   names two projects goes to both, and each store counts only its own rows;
//! - an entry with no project, to the part whose `project` is `None`.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::error::Result;
use crate::ingest::{self, Rejection, Stream};
use crate::service::{frame_batch, Limits};

/// One project's entries of a batch: a JSON array of their text as it arrived,
/// and their indexes in the batch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ProjectPart {
    pub project: Option<String>,
    pub body: String,
    pub indexes: Vec<usize>,
}

/// A batch split by project: the parts (by project name; entries without a
/// project first) and the entries refused, as `ingest` would report them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BatchSplit {
    pub parts: Vec<ProjectPart>,
    pub rejected: Vec<Rejection>,
    pub rejected_total: usize,
}

/// Splits a batch of `stream_name` by project, under `limits` (as one store's
/// ingest would check them).
pub fn split_by_project(stream_name: &str, batch: &[u8], limits: &Limits) -> Result<BatchSplit> {
    let (stream, entries) = frame_batch(stream_name, batch, limits)?;
    let mut parts: BTreeMap<Option<String>, ProjectPart> = BTreeMap::new();
    let mut rejected = Vec::new();
    let mut rejected_total = 0;
    let mut rows = Vec::new();
    for (index, entry) in entries.iter().enumerate() {
        let read = entry.text.clone().and_then(|text| {
            let projects = match stream {
                Stream::Edge => vec![ingest::read_edge(text)?.project.map(String::from)],
                Stream::Function => {
                    rows.clear();
                    ingest::read_function(text, &mut rows)?;
                    let mut names: Vec<Option<String>> = rows
                        .iter()
                        .map(|r| r.project_ref.as_deref().map(String::from))
                        .collect();
                    names.sort_unstable();
                    names.dedup();
                    if names.is_empty() {
                        names.push(None);
                    }
                    names
                }
            };
            Ok((text, projects))
        });
        let (text, projects) = match read {
            Ok(read) => read,
            Err(reason) => {
                rejected_total += 1;
                if rejected.len() < limits.max_reported_rejections {
                    rejected.push(Rejection {
                        index,
                        reason: entry.reason(reason),
                    });
                }
                continue;
            }
        };
        for project in projects {
            let part = parts.entry(project.clone()).or_insert_with(|| ProjectPart {
                project,
                body: String::from("["),
                indexes: Vec::new(),
            });
            if !part.indexes.is_empty() {
                part.body.push(',');
            }
            part.body.push_str(text);
            part.indexes.push(index);
        }
    }
    let parts = parts
        .into_values()
        .map(|mut part| {
            part.body.push(']');
            part
        })
        .collect();
    Ok(BatchSplit {
        parts,
        rejected,
        rejected_total,
    })
}
