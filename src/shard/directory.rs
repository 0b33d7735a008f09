//! The directory of shards (one partition of it): which days each of its
//! projects has entries on, and per project which trigram bits its request
//! URLs set (the same one-hash filter a store keeps per project). A query
//! plan reads it to ask only shards that can hold rows: the shards of a
//! project's days in the plan's range, or, for a usage.api-counts pattern, of
//! every project whose filter holds the bits the pattern requires (several
//! projects of one group share a shard, asked once). The worker keeps each
//! partition in an object of its own: what it learns as an append-only log of
//! registrations (as they came), now and then folded into a snapshot.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use super::frame::{read_registration, write_registration};
use super::round::Registered;
use super::{group_of, shard_name, QueryPlan};
use crate::error::Result;
use crate::store::TrigramFilter;

#[derive(Default)]
pub struct ShardDirectory {
    days: BTreeMap<String, BTreeSet<String>>,
    filters: BTreeMap<String, TrigramFilter>,
}

/// What an `add` changed: a new shard, new filter bits, or nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Added {
    pub new_shard: bool,
    pub new_bits: bool,
}

impl ShardDirectory {
    /// Records that `project_key`'s shard of `day` holds entries whose URLs set `url_bits`.
    pub fn add(&mut self, project_key: &str, day: &str, url_bits: &[u32]) -> Added {
        let new_shard = self
            .days
            .entry(project_key.to_owned())
            .or_default()
            .insert(day.to_owned());
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
            self.add(&entry.project_key, &entry.day, &entry.url_bits);
        }
        Ok(entries.len())
    }

    /// Everything it knows, as bytes (`restore` reads them).
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
                days.iter().enumerate().map(move |(i, day)| Registered {
                    project_key: key.clone(),
                    day: day.clone(),
                    // The filter once per project.
                    url_bits: if i == 0 { bits.clone() } else { Vec::new() },
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

    /// A project's filter, as stored (`restore_filter` reads it back).
    pub fn filter(&self, project_key: &str) -> Option<Vec<u8>> {
        self.filters.get(project_key).map(TrigramFilter::to_bytes)
    }

    /// Restores a stored filter (ORed into what is there); wrong sizes are ignored.
    pub fn restore_filter(&mut self, project_key: &str, bytes: &[u8]) {
        if let Some(stored) = TrigramFilter::from_bytes(bytes) {
            self.filters
                .entry(project_key.to_owned())
                .or_default()
                .union(&stored);
        }
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
        let mut shards: Vec<(&str, u32)> = match project_key {
            Some(key) => self
                .days
                .get_key_value(key)
                .into_iter()
                .flat_map(|(key, days)| {
                    let group = group_of(key);
                    days.iter()
                        .filter(in_range)
                        .map(move |d| (d.as_str(), group))
                })
                .collect(),
            None => self
                .days
                .iter()
                .filter(|(key, _)| self.may_contain(key, url_bits))
                .flat_map(|(key, days)| {
                    let group = group_of(key);
                    days.iter()
                        .filter(in_range)
                        .map(move |d| (d.as_str(), group))
                })
                .collect(),
        };
        shards.sort_by(|a, b| b.0.cmp(a.0).then(a.1.cmp(&b.1)));
        shards.dedup();
        shards
            .into_iter()
            .map(|(day, group)| shard_name(group, day))
            .collect()
    }

    /// Forgets every shard of a day before `day` (past retention); how many.
    pub fn drop_before(&mut self, day: &str) -> usize {
        let mut dropped = 0;
        for days in self.days.values_mut() {
            let before = days.len();
            days.retain(|d| d.as_str() >= day);
            dropped += before - days.len();
        }
        dropped
    }

    pub fn shards(&self) -> usize {
        self.days.values().map(BTreeSet::len).sum()
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
            dir.add("p/a", "2026-11-19", &[1, 9]),
            Added {
                new_shard: true,
                new_bits: true
            }
        );
        assert_eq!(dir.add("p/a", "2026-11-19", &[9]), Added::default());
        dir.add("p/a", "2026-11-20", &[]);
        dir.add("p/b", "2026-11-20", &[2]);
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
        let mut copy = ShardDirectory::default();
        copy.restore_filter("p/a", &dir.filter("p/a").unwrap());
        copy.add("p/a", "2026-11-19", &[]);
        assert_eq!(
            copy.lookup(&plan(None, vec![1, 9], "2026-11-01", None)),
            [shard("p/a", "2026-11-19")]
        );
        assert_eq!(dir.drop_before("2026-11-20"), 1);
        assert_eq!((dir.shards(), dir.projects()), (2, 2));
    }
}
