//! Where a project-day's entries go: its group's shard until a store refuses
//! them for want of room, then stores of its own, `{day}/p/{ref}/1`, `/2` …
//! (its splits). A shard that fills up takes what fits of a delivery and
//! hands the rest back (`DeliveryReport::overflow`); the ingest partition
//! sends that rest on, each project's rows to its next split, and from its
//! next round on sends the project-day's entries straight there. The
//! directory keeps each project-day's highest split, so a query asks every
//! one of them.
//!
//! A partition's routes change only between rounds, so a round sent again
//! (after a failure) takes the same way, and each shard on it recognises
//! the round and answers as it did the first time.

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};

use super::split_shard_name;
use crate::error::Result;
use crate::ingest::Stream;
use crate::staged::{self, StagedRows};

/// A project-day's current split: where its entries go.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SplitRoute {
    pub project_key: String,
    pub day: String,
    pub split: u32,
}

/// Every project-day's split that is not 0, as one partition knows them.
#[derive(Debug, Clone, Default)]
pub struct SplitRoutes(HashMap<(String, String), u32>);

impl SplitRoutes {
    pub fn new(routes: impl IntoIterator<Item = SplitRoute>) -> SplitRoutes {
        let mut known = SplitRoutes::default();
        for route in routes {
            known.raise(&route.project_key, &route.day, route.split);
        }
        known
    }

    /// The split `project_key`'s entries of `day` go to.
    pub fn split(&self, project_key: &str, day: &str) -> u32 {
        // A lookup without allocating: few project-days are ever split.
        if self.0.is_empty() {
            return 0;
        }
        self.0
            .get(&(project_key.to_owned(), day.to_owned()))
            .copied()
            .unwrap_or(0)
    }

    /// Records a split, keeping the highest.
    pub fn raise(&mut self, project_key: &str, day: &str, split: u32) {
        let known = self
            .0
            .entry((project_key.to_owned(), day.to_owned()))
            .or_default();
        *known = (*known).max(split);
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The routes, sorted.
    pub fn list(&self) -> Vec<SplitRoute> {
        let sorted: BTreeMap<_, _> = self.0.iter().collect();
        sorted
            .into_iter()
            .map(|((project_key, day), &split)| SplitRoute {
                project_key: project_key.clone(),
                day: day.clone(),
                split,
            })
            .collect()
    }
}

/// One shard's share of a run of staged rows.
pub(crate) struct Share {
    pub shard: String,
    pub project_key: String,
    pub split: u32,
    /// The rows, as one block.
    pub block: Vec<u8>,
    pub rows: usize,
}

/// Where a project-day's rows go that split `full` had no room for, when the
/// routes send it to `current`: the split after the full one, or the current
/// one when the routes are past the full one already.
pub(crate) fn split_after(current: u32, full: u32) -> u32 {
    if current > full {
        current
    } else {
        full + 1
    }
}

/// The rows of `block` (`count` rows of `stream`, all of `day`), grouped by
/// the shard each goes to: its project's split, as `split_of` says.
pub(crate) fn shares_of(
    stream: Stream,
    block: &[u8],
    count: usize,
    day: &str,
    split_of: impl Fn(&str) -> u32,
) -> Result<Vec<Share>> {
    let raw = staged::read_counted_blocks(block, count)?;
    let rows = StagedRows::read(stream, &raw, count)?;
    let mut by_project: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for row in 0..rows.len() {
        by_project
            .entry(super::project_key(rows.project(row)))
            .or_default()
            .push(row);
    }
    Ok(by_project
        .into_iter()
        .map(|(project_key, indices)| {
            let split = split_of(&project_key);
            let mut raw = Vec::new();
            rows.write_rows(indices.iter().copied(), &mut raw);
            let mut block = Vec::new();
            staged::write_block(&mut block, indices.len(), &raw);
            Share {
                shard: split_shard_name(&project_key, day, split),
                project_key,
                split,
                block,
                rows: indices.len(),
            }
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::split_after;

    #[test]
    fn rows_a_full_split_hands_back_go_to_the_next_split_or_the_current_one() {
        // In a round: the full split is the current one, or one after it.
        assert_eq!(split_after(0, 0), 1);
        assert_eq!(split_after(2, 2), 3);
        assert_eq!(split_after(2, 3), 4);
        // A delivery that waited: the routes moved on past the full split.
        assert_eq!(split_after(3, 1), 3);
        assert_eq!(split_after(2, 0), 2);
    }
}
