//! A round of distribution: the batches an ingest partition keeps, read back
//! and coalesced, so that each shard takes one delivery per round (a section
//! per stream: every batch's staged rows for it, joined) and each directory
//! partition one registration (the days and URL trigram bits of the projects
//! it knows), however many batches the round covers.

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};

use super::frame::{read_record, read_registration, write_registration, Delivery, Section};
use super::route::{shares_of, split_after, SplitRoute, SplitRoutes};
use super::{day_of_shard, directory_name, group_of, shard_name, split_of_shard};
use crate::error::{Error, Result};
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
    /// The project-day's highest split with entries (0: only its group's shard).
    pub split: u32,
}

/// One shard's delivery of a round, as the bytes sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShardDelivery {
    pub shard: String,
    pub entries: usize,
    pub bytes: Vec<u8>,
}

/// Whether a shard's refusal of a delivery (its status) is final, so the
/// round records it and goes on: a 4xx (bytes that do not read, which a
/// retry cannot change). Anything else (a 5xx, no answer) is retried, and
/// the shard recognises a delivery it already applied. (Rows a shard has no
/// room for are not refused: it hands them back, and they go to the
/// project-day's next split.)
pub fn refusal_is_final(status: u16) -> bool {
    (400..500).contains(&status)
}

/// Per (project key, day): the URL bits its entries set, and its highest split.
type ProjectDays = BTreeMap<(String, String), (TrigramFilter, u32)>;

pub struct Round {
    partition: String,
    round: u64,
    /// The project-days whose entries go to a split of their own.
    routes: SplitRoutes,
    /// Per shard, per stream: the staged rows so far and how many.
    shards: BTreeMap<String, BTreeMap<Stream, (Vec<u8>, usize)>>,
    /// Per directory partition, its project-days.
    registrations: BTreeMap<String, ProjectDays>,
    /// The splits overflow sent project-days to (`overflow`).
    moved: SplitRoutes,
}

impl Round {
    pub fn new(partition: &str, round: u64) -> Round {
        Round::with_routes(partition, round, SplitRoutes::default())
    }

    /// A round whose project-days go where `routes` says.
    pub fn with_routes(partition: &str, round: u64, routes: SplitRoutes) -> Round {
        Round {
            partition: partition.to_owned(),
            round,
            routes,
            shards: BTreeMap::new(),
            registrations: BTreeMap::new(),
            moved: SplitRoutes::default(),
        }
    }

    fn register(&mut self, project_key: &str, day: &str, split: u32, bits: &[u32]) {
        let (filter, highest) = self
            .registrations
            .entry(directory_name(group_of(project_key)))
            .or_default()
            .entry((project_key.to_owned(), day.to_owned()))
            .or_default();
        for &bit in bits {
            filter.set(bit);
        }
        *highest = (*highest).max(split);
    }

    fn push(&mut self, shard: String, stream: Stream, block: &[u8], rows: usize) {
        let (body, entries) = self
            .shards
            .entry(shard)
            .or_default()
            .entry(stream)
            .or_insert_with(|| (Vec::new(), 0));
        // Runs of blocks joined are one run.
        body.extend_from_slice(block);
        *entries += rows;
    }

    /// Adds one kept batch (a record).
    pub fn add(&mut self, record: &[u8]) -> Result<()> {
        for part in read_record(record)? {
            let mut routed = false;
            for (key, bits) in &part.projects {
                let split = self.routes.split(key, part.day);
                routed |= split > 0;
                self.register(key, part.day, split, bits);
            }
            if routed {
                let routes = &self.routes;
                let shares = shares_of(part.stream, part.body, part.entries, part.day, |key| {
                    routes.split(key, part.day)
                })?;
                for share in shares {
                    self.push(share.shard, part.stream, &share.block, share.rows);
                }
            } else {
                let shard = shard_name(part.group, part.day);
                self.push(shard, part.stream, part.body, part.entries);
            }
        }
        Ok(())
    }

    /// A round of the rows full shards handed back in one wave of deliveries
    /// (`overflows`: each shard's name and its `DeliveryReport::overflow`),
    /// each project's rows sent to its next split. One round per wave, its
    /// overflows taken in shard order, gives each split one delivery per wave,
    /// the same one when the round is sent again: a shard applies one delivery
    /// of a partition's round and answers a second as it did the first, so
    /// two of them would leave the second's rows out. `as_round` numbers the
    /// new round instead of the overflows' own: a delivery handed back after
    /// its round was over (it waited for its shard) goes out under a number
    /// no shard has seen yet.
    pub fn rerouted(
        overflows: &[(String, Vec<u8>)],
        routes: SplitRoutes,
        as_round: Option<u64>,
    ) -> Result<Round> {
        let mut sorted: Vec<&(String, Vec<u8>)> = overflows.iter().collect();
        sorted.sort_by(|a, b| a.0.cmp(&b.0));
        let Some((_, first)) = sorted.first() else {
            return Err(Error::invalid("overflows", "no shard handed rows back"));
        };
        let (partition, round) = Delivery::header(first)?;
        let mut rerouted = Round::with_routes(&partition, as_round.unwrap_or(round), routes);
        for (from, overflow) in sorted {
            if Delivery::header(overflow)? != (partition.clone(), round) {
                return Err(Error::invalid(
                    "overflows",
                    format!("{from} handed back rows of another round than {partition}'s {round}"),
                ));
            }
            rerouted.overflow(from, overflow)?;
        }
        Ok(rerouted)
    }

    /// Adds the rows shard `from` had no room for (`overflow`: a delivery of
    /// this round, as `DeliveryReport::overflow` hands it back): each
    /// project's rows go to its split after `from`'s, registered first, or
    /// to the project-day's current split when the routes are past `from`
    /// already (a delivery that waited for its shard was made with older
    /// routes: each of a backlog's overflows would open a split of its own).
    pub fn overflow(&mut self, from: &str, overflow: &[u8]) -> Result<()> {
        let delivery = Delivery::read(overflow)?;
        let day = day_of_shard(from).to_owned();
        for section in delivery.sections {
            let routes = &self.routes;
            let shares = shares_of(
                section.stream,
                &section.body,
                section.entries,
                &day,
                |key| split_after(routes.split(key, &day), split_of_shard(from, key)),
            )?;
            for share in shares {
                self.register(&share.project_key, &day, share.split, &[]);
                self.moved.raise(&share.project_key, &day, share.split);
                self.push(share.shard, section.stream, &share.block, share.rows);
            }
        }
        Ok(())
    }

    /// The splits `overflow` sent project-days to: the partition's routes
    /// once this round is over.
    pub fn moved(&self) -> Vec<SplitRoute> {
        self.moved.list()
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
                    .filter_map(|((project_key, day), (filter, split))| {
                        let (days, sent) = match known.projects.get(project_key) {
                            Some((days, sent)) => (Some(days), Some(sent)),
                            None => (None, None),
                        };
                        let url_bits: Vec<u32> = filter
                            .bits()
                            .into_iter()
                            .filter(|&bit| !sent.is_some_and(|s| s.has_all(&[bit])))
                            .collect();
                        let new_shard = days
                            .and_then(|d| d.get(day))
                            .is_none_or(|&known| known < *split);
                        (new_shard || !url_bits.is_empty()).then(|| Registered {
                            project_key: project_key.clone(),
                            day: day.clone(),
                            url_bits,
                            split: *split,
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
    /// Per project key: its days (and each one's highest split), and its URL bits.
    projects: HashMap<String, (BTreeMap<String, u32>, TrigramFilter)>,
}

impl KnownRegistrations {
    /// Remembers a registration a directory partition recorded (its bytes).
    pub fn learn(&mut self, bytes: &[u8]) -> crate::error::Result<()> {
        for entry in read_registration(bytes)? {
            let (days, sent) = self.projects.entry(entry.project_key.clone()).or_default();
            let split = days.entry(entry.day.clone()).or_default();
            *split = (*split).max(entry.split);
            for &bit in &entry.url_bits {
                sent.set(bit);
            }
        }
        Ok(())
    }
}
