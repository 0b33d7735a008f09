//! A round of distribution: the batches an ingest partition keeps, read back
//! and coalesced, so that each shard takes one delivery per round (a section
//! per stream, every batch's entries for it in one JSON array) and each
//! directory partition one registration (the days and URL trigram bits of
//! the projects it knows), however many batches the round covers.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use super::directory_name;
use super::frame::{read_record, Delivery, Section};
use crate::error::Result;
use crate::ingest::Stream;

/// What one directory partition learns from a round.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Registration {
    pub directory: String,
    pub entries: Vec<Registered>,
}

/// One project's day, and the URL trigram bits its entries set.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Registered {
    pub project_key: String,
    pub day: String,
    pub url_bits: Vec<u32>,
}

/// One shard's delivery of a round, as the bytes sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShardDelivery {
    pub shard: String,
    pub entries: usize,
    pub bytes: Vec<u8>,
}

/// Whether a shard's refusal of a delivery is final (a 4xx: its entries are
/// over what the shard can hold, and a retry would be refused the same), so
/// the round records it and goes on; anything else (a 5xx, no answer) is
/// retried, and the shard recognises a delivery it already applied.
pub fn refusal_is_final(status: u16) -> bool {
    (400..500).contains(&status)
}

pub struct Round {
    partition: String,
    round: u64,
    /// Per shard, per stream: the JSON array so far and how many entries it holds.
    shards: BTreeMap<String, BTreeMap<Stream, (String, usize)>>,
    /// Per directory partition: per (project key, day), the URL bits.
    registrations: BTreeMap<String, BTreeMap<(String, String), BTreeSet<u32>>>,
}

impl Round {
    pub fn new(partition: &str, round: u64) -> Round {
        Round {
            partition: partition.to_owned(),
            round,
            shards: BTreeMap::new(),
            registrations: BTreeMap::new(),
        }
    }

    /// Adds one kept batch (a record).
    pub fn add(&mut self, record: &[u8]) -> Result<()> {
        for part in read_record(record)? {
            let registry = self
                .registrations
                .entry(directory_name(part.group))
                .or_default();
            for project in part.projects {
                registry
                    .entry((project.project_key, part.day.clone()))
                    .or_default()
                    .extend(project.url_bits);
            }
            let (body, entries) = self
                .shards
                .entry(part.shard)
                .or_default()
                .entry(part.stream)
                .or_insert_with(|| (String::new(), 0));
            // `[a,b]` then `[c]` make `[a,b,c]`.
            match body.pop() {
                Some(_) => {
                    body.push(',');
                    body.push_str(part.body.get(1..).unwrap_or_default());
                }
                None => *body = part.body,
            }
            *entries += part.entries;
        }
        Ok(())
    }

    /// What each directory partition must record before the deliveries.
    pub fn registrations(&self) -> Vec<Registration> {
        self.registrations
            .iter()
            .map(|(directory, projects)| Registration {
                directory: directory.clone(),
                entries: projects
                    .iter()
                    .map(|((project_key, day), bits)| Registered {
                        project_key: project_key.clone(),
                        day: day.clone(),
                        url_bits: bits.iter().copied().collect(),
                    })
                    .collect(),
            })
            .collect()
    }

    /// Each shard's delivery.
    pub fn deliveries(&self) -> Vec<ShardDelivery> {
        self.shards
            .iter()
            .map(|(shard, streams)| {
                let sections: Vec<Section> = streams
                    .iter()
                    .map(|(&stream, (body, entries))| Section {
                        stream,
                        entries: *entries,
                        body: body.clone(),
                    })
                    .collect();
                let delivery = Delivery {
                    partition: self.partition.clone(),
                    round: self.round,
                    sections,
                };
                ShardDelivery {
                    shard: shard.clone(),
                    entries: delivery.sections.iter().map(|s| s.entries).sum(),
                    bytes: delivery.write(),
                }
            })
            .collect()
    }
}
