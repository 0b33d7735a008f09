//! The sharded deployment's rules, decided here once and carried out by the
//! edge worker's objects (docs/edge-deployment.md).
//!
//! - A store ("shard") holds the entries of one UTC day of one group of
//!   projects (a project's group is a hash of its ref, one of `SHARD_GROUPS`),
//!   so a round of ingest writes to at most `SHARD_GROUPS` stores a day however
//!   many projects sent entries, and each store's per-project indexes keep a
//!   query's cost what its own project holds.
//! - `key`: a batch's key (its content, or the client's `Idempotency-Key`),
//!   which picks its ingest partition, so a resent batch always meets the
//!   partition that kept the first one.
//! - `split`: a batch cut into one part per shard, with what the directory
//!   learns from each project.
//! - `frame`: the bytes the ingest partitions keep (a split batch) and send
//!   (a round's part for one shard).
//! - `round`: the batches a partition keeps, coalesced into one delivery per
//!   shard and one registration per directory partition.
//! - `directory`: which shards exist, per project, and which a plan asks.
//! - `route`: where a project-day's entries go once a store is full (its
//!   splits), and the rows a full store handed back, sent on.
//! - `query`: a call across objects, asked in waves of at most
//!   `MAX_CONCURRENT` and merged (`merge`).
//! - `status`: what the ingest partitions hold and have not yet distributed.
//!
//! Why a day: every bucket of every endpoint is at most a day long and starts
//! at a UTC multiple of its width, so all entries of one bucket of one project
//! are in one shard, and percentiles stay exact without moving values between
//! shards, unless the project-day outgrew a store and is split (`route`):
//! then its shards answer partial states that merge (`Merge::BucketStates`).

mod answer;
mod directory;
mod frame;
mod key;
mod merge;
mod query;
mod round;
mod route;
pub mod schedule;
mod split;
mod status;

use serde::{Deserialize, Serialize};
use xxhash_rust::xxh3::xxh3_64;

use crate::endpoints::LONGEST_RETENTION;
use crate::reach::{Merge, Projects, Reach};
use crate::timestamp::{format_datetime, truncate, Micros, DAY};

pub use answer::{DeliveryAnswer, RefusedSection};
pub use directory::{Added, ShardDirectory, LOG_ROWS as DIRECTORY_LOG_ROWS};
pub use frame::{read_record, Delivery, Section};
pub use key::{BatchKey, IngestAnswers, KeepAnswer, Seen, RESEND_WINDOW_HOURS};
pub use merge::merge_answers;
pub use query::{Gather, ShardQuery};
pub use round::{refusal_is_final, KnownRegistrations, Registration, Round, ShardDelivery};
pub use route::{SplitRoute, SplitRoutes};
pub use split::{split_by_shard, BatchSplit, ShardPart, Split};
pub use status::{IngestStatus, PartitionStatus};

/// Groups of projects: a day of a group is one shard.
pub const SHARD_GROUPS: u32 = 16;
/// Partitions of the directory of shards (a group's partition is `group % DIRECTORY_PARTITIONS`).
pub const DIRECTORY_PARTITIONS: u32 = 8;
/// Partitions of ingest: the objects that make batches durable before the
/// acknowledgement and distribute them after it.
pub const INGEST_PARTITIONS: u32 = 4;
/// Most calls one object has in flight to other objects (the Workers limit of
/// six simultaneous connections per invocation).
pub const MAX_CONCURRENT: usize = 6;

/// The UTC day of a timestamp, `YYYY-MM-DD` (sorts as the days do).
pub fn day_of(timestamp: Micros) -> String {
    let mut day = format_datetime(truncate(timestamp, DAY));
    day.truncate(10);
    day
}

/// What retention keeps at `now`: stored batches whose newest entry is from
/// `cutoff` on (µs), and the shards of days from `first_kept_day` on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Retention {
    pub cutoff: Micros,
    pub first_kept_day: String,
}

impl Retention {
    pub fn at(now: Micros) -> Retention {
        Retention {
            cutoff: now.saturating_sub(LONGEST_RETENTION),
            first_kept_day: day_of(now.saturating_sub(LONGEST_RETENTION).saturating_add(1)),
        }
    }

    /// The first time at which entries as new as `newest` are all past
    /// retention (`at(time).cutoff` passes `newest`): when a store of them
    /// next has work to do, if nothing else comes.
    pub fn ends_after(newest: Micros) -> Micros {
        newest.saturating_add(LONGEST_RETENTION).saturating_add(1)
    }
}

/// The key of a project in the directory: `p/{ref}`, or `none` for entries
/// that name no project.
pub fn project_key(project: Option<&str>) -> String {
    match project {
        Some(name) => format!("p/{name}"),
        None => "none".to_owned(),
    }
}

/// The group of a project (by its key): a stable hash, so refs that look
/// alike (`tenant-1`, `tenant-2`, …) spread as random ones do.
pub fn group_of(project_key: &str) -> u32 {
    (xxh3_64(project_key.as_bytes()) % u64::from(SHARD_GROUPS)) as u32
}

/// The name of the store holding `group`'s entries of `day`.
pub fn shard_name(group: u32, day: &str) -> String {
    format!("{day}/g/{group:02}")
}

/// Whether a store is a group's shard (`shard_name`), which its projects
/// share, rather than a split of one project-day.
pub fn is_group_shard(name: &str) -> bool {
    name.split('/').nth(1) == Some("g")
}

/// The name of the store holding a project's entries of `day`: its group's
/// (split 0), or, once a store refused them for want of room, its own
/// `{day}/p/{ref}/{split}` (README, "Edge worker": a project-day larger
/// than one store).
pub fn split_shard_name(project_key: &str, day: &str, split: u32) -> String {
    match split {
        0 => shard_name(group_of(project_key), day),
        n => format!("{day}/{project_key}/{n}"),
    }
}

/// The day a shard's name holds (`YYYY-MM-DD`, what comes before the first `/`).
pub fn day_of_shard(name: &str) -> &str {
    name.split('/').next().unwrap_or_default()
}

/// The split a shard's name holds for `project_key` (0: the group's shard).
pub fn split_of_shard(name: &str, project_key: &str) -> u32 {
    name.strip_prefix(day_of_shard(name))
        .and_then(|rest| rest.strip_prefix('/'))
        .and_then(|rest| rest.strip_prefix(project_key))
        .and_then(|rest| rest.strip_prefix('/'))
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// The name of the directory partition that knows `group`'s shards.
pub fn directory_name(group: u32) -> String {
    format!("directory/{}", group % DIRECTORY_PARTITIONS)
}

/// Every directory partition's name.
pub fn directory_names() -> Vec<String> {
    (0..DIRECTORY_PARTITIONS).map(directory_name).collect()
}

/// The name of ingest partition `partition`.
pub fn ingest_name(partition: u32) -> String {
    format!("ingest/{partition}")
}

/// What the worker does for one validated call: which directory partitions
/// to ask, and what they look up (which shards can hold its rows) and in what
/// order they ask them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct QueryPlan {
    /// The endpoint's name (its merge rule).
    pub endpoint: String,
    /// Ask this project's shards (a `project_key`) …
    pub project_key: Option<String>,
    /// … or, when `project_key` is `None`, the shards of every project whose
    /// URL filter holds each of these bits (none: every project).
    pub url_bits: Vec<u32>,
    /// The first and last day (`YYYY-MM-DD`) whose shards can hold rows.
    pub first_day: String,
    pub last_day: Option<String>,
    /// Ask the days newest first and stop once this many rows came (logs.all):
    /// an older day cannot hold a row newer than a younger day's.
    pub newest_first: Option<usize>,
    /// The directory partitions that know the shards to ask.
    pub directories: Vec<String>,
    /// The warning the answer carries (`X-Endpoint-Warning`).
    pub warning: Option<String>,
}

impl QueryPlan {
    pub(crate) fn new(
        endpoint: &'static str,
        reach: Reach,
        merge: Merge,
        warning: Option<String>,
    ) -> QueryPlan {
        let (project_key, url_bits, directories) = match reach.projects {
            Projects::One(project) => {
                let key = project_key(Some(&project));
                let directory = directory_name(group_of(&key));
                (Some(key), Vec::new(), vec![directory])
            }
            Projects::UrlsWith(bits) => (None, bits, directory_names()),
        };
        QueryPlan {
            endpoint: endpoint.to_owned(),
            project_key,
            url_bits,
            first_day: day_of(reach.from),
            last_day: reach.to.map(day_of),
            newest_first: match merge {
                Merge::NewestFirst { limit } => Some(limit),
                _ => None,
            },
            directories,
            warning,
        }
    }

    /// How the answers of the objects it asks combine.
    pub fn merge(&self) -> crate::error::Result<Merge> {
        Ok(crate::endpoints::EndpointKind::resolve(&self.endpoint)?.merge())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retention_ends_when_the_newest_entry_passes_the_cutoff() {
        let newest: Micros = 1_764_000_000_000_000;
        let ends = Retention::ends_after(newest);
        assert!(
            Retention::at(ends - 1).cutoff <= newest,
            "still kept a µs before"
        );
        assert!(
            Retention::at(ends).cutoff > newest,
            "past retention from then"
        );
        assert_eq!(ends - newest, 90 * 24 * 3600 * 1_000_000 + 1);
    }

    #[test]
    fn days_names_and_groups() {
        assert_eq!(day_of(0), "1970-01-01");
        assert_eq!(day_of(DAY - 1), "1970-01-01");
        assert_eq!(day_of(DAY), "1970-01-02");
        assert_eq!(day_of(-1), "1969-12-31");
        assert_eq!(shard_name(7, "2026-11-20"), "2026-11-20/g/07");
        let base = split_shard_name("p/a/b", "2026-11-20", 0);
        assert_eq!(base, shard_name(group_of("p/a/b"), "2026-11-20"));
        let third = split_shard_name("p/a/b", "2026-11-20", 3);
        assert_eq!(third, "2026-11-20/p/a/b/3");
        assert_eq!(
            (day_of_shard(&third), day_of_shard(&base)),
            ("2026-11-20", "2026-11-20")
        );
        assert_eq!(
            (
                split_of_shard(&third, "p/a/b"),
                split_of_shard(&base, "p/a/b")
            ),
            (3, 0)
        );
        assert_eq!(split_of_shard(&third, "p/a"), 0);
        assert_eq!(project_key(None), "none");
        // Refs that look alike spread over the groups as random ones would.
        let mut used = std::collections::BTreeSet::new();
        for i in 1..=2000 {
            used.insert(group_of(&project_key(Some(&format!("tenant-{i}")))));
        }
        assert_eq!(used.len(), SHARD_GROUPS as usize);
        assert!(directory_name(SHARD_GROUPS - 1).starts_with("directory/"));
    }
}
