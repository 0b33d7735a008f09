//! The sharded deployment's rules, decided here once and carried out by the
//! edge worker: a store ("shard") holds one project's entries of one UTC day.
//!
//! - `split`: a batch cut into one part per shard, with the batch's own indexes.
//! - `merge`: the shards' answers combined into the answer one store holding
//!   every entry gives, and the shards' ingest reports into the batch's report.
//! - `directory`: which shards exist, and which a plan asks.
//! - here: shard names, and where a validated call's rows can be (`Reach`,
//!   declared by each endpoint module, and the `QueryPlan` the worker follows).
//!
//! Why a day: every bucket of every endpoint is at most a day long and starts
//! at a UTC multiple of its width, so all entries of one bucket of one project
//! are in one shard, and percentiles stay exact without moving values between
//! shards. Entries with one timestamp are in one shard too, so logs.all's
//! tie-break by id is the same across shards.

mod directory;
mod merge;
mod query;
mod split;

use serde::{Deserialize, Serialize};

use crate::endpoints::LONGEST_RETENTION;
use crate::reach::{Merge, Projects, Reach};
use crate::timestamp::{format_datetime, truncate, Micros, DAY};

pub use directory::{Added, ShardDirectory};
pub use merge::{combine_ingest, merge_answers, PartAnswer, PartOutcome};
pub use query::ShardQuery;
pub use split::{split_by_shard, BatchSplit, ShardPart};

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
}

/// The key of a project in shard names and the directory: `p/{ref}`, or
/// `none` for entries that name no project.
pub fn project_key(project: Option<&str>) -> String {
    match project {
        Some(name) => format!("p/{name}"),
        None => "none".to_owned(),
    }
}

/// The name of the store holding `project_key`'s entries of `day`.
pub fn shard_name(project_key: &str, day: &str) -> String {
    format!("{day}/{project_key}")
}

/// What the worker does for one validated call: which shards to ask (from the
/// directory of shards) and in what order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct QueryPlan {
    /// The endpoint's name, for `mergeAnswers`.
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
        let (project_key, url_bits) = match reach.projects {
            Projects::One(project) => (Some(project_key(Some(&project))), Vec::new()),
            Projects::UrlsWith(bits) => (None, bits),
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
            warning,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn days_and_names() {
        assert_eq!(day_of(0), "1970-01-01");
        assert_eq!(day_of(DAY - 1), "1970-01-01");
        assert_eq!(day_of(DAY), "1970-01-02");
        assert_eq!(day_of(-1), "1969-12-31");
        assert_eq!(
            shard_name(&project_key(Some("abc")), "2026-11-20"),
            "2026-11-20/p/abc"
        );
        assert_eq!(
            shard_name(&project_key(None), "2026-11-20"),
            "2026-11-20/none"
        );
    }
}
