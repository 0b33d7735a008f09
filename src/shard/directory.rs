//! The directory of shards (one partition of it): which days each of its
//! projects has entries on, how many stores each project-day is split across
//! (its highest split: the group's shard, then `{day}/p/{ref}/1` …), and per
//! project which trigram bits its request
//! URLs set (the same one-hash filter a store keeps per project). A query
//! plan reads it to ask only shards that can hold rows: the shards of a
//! project's days in the plan's range, or, for a usage.api-counts pattern, of
//! every project whose filter holds the bits the pattern requires (several
//! projects of one group share a shard, asked once). The worker keeps each
//! partition in an object of its own: what it learns as an append-only log of
//! registrations (as they came), now and then folded into a snapshot.

use std::collections::BTreeMap;

/// Registrations a directory partition keeps as they came before it folds
/// them into its snapshot: each wake replays at most this many, and a fold
/// (a snapshot of the partition) comes once per this many.
pub const LOG_ROWS: usize = 64;

use serde::Serialize;

use super::frame::{read_registration, write_registration};
use super::round::Registered;
use super::{group_of, shard_name, split_shard_name, QueryPlan};
use crate::error::Result;
use crate::store::TrigramFilter;

#[derive(Default)]
pub struct ShardDirectory {
    /// Per project key, per day, the highest split.
    days: BTreeMap<String, BTreeMap<String, u32>>,
    filters: BTreeMap<String, TrigramFilter>,
}

/// Whose shard: a group's (split 0) or a project's own (its splits).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Owner<'a> {
    Group(u32),
    Project(&'a str),
}

/// What an `add` changed: a new shard, new filter bits, or nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Added {
    pub new_shard: bool,
    pub new_bits: bool,
}

impl ShardDirectory {
    /// Records that `project_key`'s shards of `day` up to `split` hold
    /// entries whose URLs set `url_bits`.
    ///
    /// An empty `day` records the bits alone (`snapshot` writes a project
    /// whose days are all past retention so).
    pub fn add(&mut self, project_key: &str, day: &str, split: u32, url_bits: &[u32]) -> Added {
        let days = self.days.entry(project_key.to_owned()).or_default();
        let new_shard = match days.get_mut(day) {
            _ if day.is_empty() => false,
            Some(highest) if *highest >= split => false,
            Some(highest) => {
                *highest = split;
                true
            }
            None => {
                days.insert(day.to_owned(), split);
                true
            }
        };
        let new_bits = self
            .filters
            .entry(project_key.to_owned())
            .or_default()
            .union(&TrigramFilter::of_bits(url_bits));
        Added {
            new_shard,
            new_bits,
        }
    }

    /// Applies a registration (its bytes, as an ingest partition's round
    /// made them); how many project-days it named.
    pub fn register(&mut self, bytes: &[u8]) -> Result<usize> {
        let entries = read_registration(bytes)?;
        for entry in &entries {
            self.add(&entry.project_key, &entry.day, entry.split, &entry.url_bits);
        }
        Ok(entries.len())
    }

    /// Everything it knows, as bytes (`restore` reads them). A project
    /// whose days are all past retention keeps its URL bits (under an empty
    /// day): an ingest partition that sent them does not send them again
    /// when the project comes back, so a restored directory without them
    /// would leave the project's new shards out of pattern counts.
    pub fn snapshot(&self) -> Vec<u8> {
        let entries: Vec<Registered> = self
            .days
            .iter()
            .flat_map(|(key, days)| {
                let bits = self
                    .filters
                    .get(key)
                    .map(TrigramFilter::bits)
                    .unwrap_or_default();
                let no_days = days.is_empty().then(|| (String::new(), 0));
                days.iter()
                    .map(|(day, &split)| (day.clone(), split))
                    .chain(no_days)
                    .enumerate()
                    .map(move |(i, (day, split))| Registered {
                        project_key: key.clone(),
                        day,
                        // The filter once per project.
                        url_bits: if i == 0 { bits.clone() } else { Vec::new() },
                        split,
                    })
            })
            .collect();
        write_registration(&entries)
    }

    /// The directory a snapshot holds.
    pub fn restore(bytes: &[u8]) -> Result<ShardDirectory> {
        let mut directory = ShardDirectory::default();
        directory.register(bytes)?;
        Ok(directory)
    }

    fn may_contain(&self, project_key: &str, bits: &[u32]) -> bool {
        match self.filters.get(project_key) {
            Some(filter) => filter.has_all(bits),
            None => bits.is_empty(),
        }
    }

    /// The shards a plan asks, newest day first (then by project key).
    pub fn lookup(&self, plan: &QueryPlan) -> Vec<String> {
        self.shards_for(
            plan.project_key.as_deref(),
            &plan.url_bits,
            &plan.first_day,
            plan.last_day.as_deref(),
        )
    }

    /// `lookup` by the plan's fields.
    pub fn shards_for(
        &self,
        project_key: Option<&str>,
        url_bits: &[u32],
        first_day: &str,
        last_day: Option<&str>,
    ) -> Vec<String> {
        let in_range = |day: &&String| {
            day.as_str() >= first_day && last_day.is_none_or(|last| day.as_str() <= last)
        };
        let projects: Vec<(&String, &BTreeMap<String, u32>)> = match project_key {
            Some(key) => self.days.get_key_value(key).into_iter().collect(),
            None => self
                .days
                .iter()
                .filter(|(key, _)| self.may_contain(key, url_bits))
                .collect(),
        };
        // (day, group or project key, split): newest day first, then its
        // group's shard, then the project's splits in order.
        let mut shards: Vec<(&str, Owner, u32)> = Vec::new();
        for (key, days) in projects {
            let group = group_of(key);
            for (day, &highest) in days.iter().filter(|(day, _)| in_range(day)) {
                shards.push((day, Owner::Group(group), 0));
                shards
                    .extend((1..=highest).map(|split| (day.as_str(), Owner::Project(key), split)));
            }
        }
        shards.sort_by(|a, b| b.0.cmp(a.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));
        shards.dedup();
        shards
            .into_iter()
            .map(|(day, owner, split)| match owner {
                Owner::Group(group) => shard_name(group, day),
                Owner::Project(key) => split_shard_name(key, day, split),
            })
            .collect()
    }

    /// Forgets every shard of a day before `day` (past retention); how many.
    pub fn drop_before(&mut self, day: &str) -> usize {
        let mut dropped = 0;
        for days in self.days.values_mut() {
            let before = days.len();
            days.retain(|d, _| d.as_str() >= day);
            dropped += before - days.len();
        }
        dropped
    }

    pub fn shards(&self) -> usize {
        self.days
            .values()
            .flat_map(BTreeMap::values)
            .map(|&highest| highest as usize + 1)
            .sum()
    }

    pub fn projects(&self) -> usize {
        self.days.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(
        project_key: Option<&str>,
        url_bits: Vec<u32>,
        first: &str,
        last: Option<&str>,
    ) -> QueryPlan {
        QueryPlan {
            endpoint: "usage.api-counts".into(),
            directories: Vec::new(),
            project_key: project_key.map(String::from),
            url_bits,
            first_day: first.into(),
            last_day: last.map(String::from),
            newest_first: None,
            warning: None,
        }
    }

    #[test]
    fn lookup_by_project_days_and_url_bits() {
        let shard = |key: &str, day: &str| shard_name(group_of(key), day);
        let mut dir = ShardDirectory::default();
        assert_eq!(
            dir.add("p/a", "2026-11-19", 0, &[1, 9]),
            Added {
                new_shard: true,
                new_bits: true
            }
        );
        assert_eq!(dir.add("p/a", "2026-11-19", 0, &[9]), Added::default());
        dir.add("p/a", "2026-11-20", 0, &[]);
        dir.add("p/b", "2026-11-20", 0, &[2]);
        assert_eq!(
            dir.lookup(&plan(Some("p/a"), vec![], "2026-11-01", None)),
            [shard("p/a", "2026-11-20"), shard("p/a", "2026-11-19")]
        );
        assert_eq!(
            dir.lookup(&plan(Some("p/a"), vec![], "2026-11-20", Some("2026-11-20"))),
            [shard("p/a", "2026-11-20")]
        );
        assert!(dir
            .lookup(&plan(Some("p/c"), vec![], "2026-11-01", None))
            .is_empty());
        assert_eq!(
            dir.lookup(&plan(None, vec![9], "2026-11-01", None)),
            [shard("p/a", "2026-11-20"), shard("p/a", "2026-11-19")]
        );
        let mut both = vec![shard("p/a", "2026-11-20"), shard("p/b", "2026-11-20")];
        both.sort();
        both.dedup();
        assert_eq!(dir.lookup(&plan(None, vec![], "2026-11-20", None)), both);
        assert_eq!(dir.drop_before("2026-11-20"), 1);
        assert_eq!((dir.shards(), dir.projects()), (2, 2));
    }

    #[test]
    fn a_project_past_retention_keeps_its_url_bits_through_a_snapshot() {
        let mut dir = ShardDirectory::default();
        dir.add("p/a", "2026-11-19", 0, &[1, 9]);
        dir.add("p/b", "2026-11-20", 0, &[2]);
        assert_eq!(dir.drop_before("2026-11-20"), 1);
        let mut restored = ShardDirectory::restore(&dir.snapshot()).unwrap();
        assert_eq!(restored.shards(), dir.shards());
        assert_eq!(restored.snapshot(), dir.snapshot());
        // p/a comes back; its ingest partition sent bits 1 and 9 before.
        for directory in [&mut dir, &mut restored] {
            assert!(directory.add("p/a", "2026-11-22", 0, &[]).new_shard);
            assert_eq!(
                directory.lookup(&plan(None, vec![9], "2026-11-20", None)),
                [shard_name(group_of("p/a"), "2026-11-22")]
            );
        }
    }

    #[test]
    fn a_split_project_day_lists_every_split_after_its_group_shard() {
        let mut dir = ShardDirectory::default();
        dir.add("p/a", "2026-11-20", 0, &[3]);
        dir.add("p/b", "2026-11-20", 0, &[3]);
        assert!(dir.add("p/a", "2026-11-20", 2, &[]).new_shard);
        assert!(!dir.add("p/a", "2026-11-20", 1, &[]).new_shard);
        dir.add("p/a", "2026-11-19", 0, &[]);
        let group = shard_name(group_of("p/a"), "2026-11-20");
        assert_eq!(
            dir.lookup(&plan(Some("p/a"), vec![], "2026-11-01", None)),
            [
                group.clone(),
                "2026-11-20/p/a/1".to_owned(),
                "2026-11-20/p/a/2".to_owned(),
                shard_name(group_of("p/a"), "2026-11-19"),
            ]
        );
        let restored = ShardDirectory::restore(&dir.snapshot()).unwrap();
        assert_eq!(
            restored.lookup(&plan(None, vec![3], "2026-11-20", None)),
            dir.lookup(&plan(None, vec![3], "2026-11-20", None))
        );
        assert_eq!(dir.shards(), 5);
    }
}
