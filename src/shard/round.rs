//! A round of distribution: the batches an ingest partition keeps, read back
//! and coalesced, so that each shard takes one delivery per round (a section
//! per stream, every batch's entries for it in one JSON array) and each
//! directory partition one registration (the days and URL trigram bits of
//! the projects it knows), however many batches the round covers. Each
//! shard's section of a stream is every batch's staged rows for it, joined.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde::{Deserialize, Serialize};

use super::frame::{read_record, read_registration, write_registration, Delivery, Section};
use super::{directory_name, shard_name};
use crate::error::Result;
use crate::ingest::Stream;
use crate::store::TrigramFilter;

/// What one directory partition learns from a round.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Registration {
    pub directory: String,
    pub entries: Vec<Registered>,
}

impl Registration {
    /// The registration as the bytes sent (`ShardDirectory::register` reads them).
    pub fn bytes(&self) -> Vec<u8> {
        write_registration(&self.entries)
    }
}

/// One project's day, and the URL trigram bits its entries set.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
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

/// Whether a shard's refusal of a delivery (its status and error body) is
/// final, so the round records it and goes on: a 4xx (bytes that do not
/// read, which a retry cannot change) or `store_full` (the shard's days hold
/// its whole budget: waiting for room would hold back every later round of
/// the partition). Anything else (a 5xx, no answer) is retried, and the
/// shard recognises a delivery it already applied.
pub fn refusal_is_final(status: u16, body: &str) -> bool {
    (400..500).contains(&status)
        || crate::error::ErrorReport::from_answer(status, body).code == "store_full"
}

pub struct Round {
    partition: String,
    round: u64,
    /// Per shard, per stream: the staged rows so far and how many.
    shards: BTreeMap<String, BTreeMap<Stream, (Vec<u8>, usize)>>,
    /// Per directory partition: per (project key, day), the URL bits.
    registrations: BTreeMap<String, BTreeMap<(String, String), TrigramFilter>>,
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
            for (key, bits) in part.projects {
                let filter = registry
                    .entry((key.to_owned(), part.day.to_owned()))
                    .or_default();
                for bit in bits {
                    filter.set(bit);
                }
            }
            let (body, entries) = self
                .shards
                .entry(shard_name(part.group, part.day))
                .or_default()
                .entry(part.stream)
                .or_insert_with(|| (Vec::new(), 0));
            // Runs of blocks joined are one run.
            body.extend_from_slice(part.body);
            *entries += part.entries;
        }
        Ok(())
    }

    /// What each directory partition must record before the deliveries,
    /// beyond what `known` says this partition registered already: new
    /// project-days, and the URL bits not sent before (a directory ORs them in).
    pub fn registrations(&self, known: &KnownRegistrations) -> Vec<Registration> {
        self.registrations
            .iter()
            .map(|(directory, projects)| Registration {
                directory: directory.clone(),
                entries: projects
                    .iter()
                    .filter_map(|((project_key, day), filter)| {
                        let (days, sent) = match known.projects.get(project_key) {
                            Some((days, sent)) => (Some(days), Some(sent)),
                            None => (None, None),
                        };
                        let url_bits: Vec<u32> = filter
                            .bits()
                            .into_iter()
                            .filter(|&bit| !sent.is_some_and(|s| s.has_all(&[bit])))
                            .collect();
                        let new_day = !days.is_some_and(|d| d.contains(day));
                        (new_day || !url_bits.is_empty()).then(|| Registered {
                            project_key: project_key.clone(),
                            day: day.clone(),
                            url_bits,
                        })
                    })
                    .collect(),
            })
            .filter(|registration| !registration.entries.is_empty())
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

/// What an ingest partition has registered in the directory already (kept in
/// memory; after a restart it registers everything once more, which the
/// directory takes as it is): so that a round sends only what is new, not the
/// same URL bits of every project every time.
#[derive(Default)]
pub struct KnownRegistrations {
    projects: HashMap<String, (BTreeSet<String>, TrigramFilter)>,
}

impl KnownRegistrations {
    /// Remembers a registration a directory partition recorded (its bytes).
    pub fn learn(&mut self, bytes: &[u8]) -> crate::error::Result<()> {
        for entry in read_registration(bytes)? {
            let (days, sent) = self.projects.entry(entry.project_key.clone()).or_default();
            days.insert(entry.day.clone());
            for &bit in &entry.url_bits {
                sent.set(bit);
            }
        }
        Ok(())
    }
}
