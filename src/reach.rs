//! What each endpoint declares about where its rows can be (which shards) and how answers of
//! several shards combine: the rules a sharded deployment follows (`shard`),
//! kept in a leaf module so that the endpoint modules can name them.

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::error::{Error, Result};
use crate::timestamp::{truncate, Micros};

/// Which projects' stores can hold a call's rows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Projects {
    /// One project's (the call reads only its entries).
    One(String),
    /// Every project whose request URLs may hold each of these trigram bits
    /// (usage.api-counts' pattern); no bits: every project.
    UrlsWith(Vec<u32>),
}

/// Where a call's rows can be: the projects and the time range (bounds
/// inclusive; `None`: unbounded). A superset is safe (a store without rows of
/// the call answers nothing), so bounds may be loose.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reach {
    pub projects: Projects,
    pub from: Micros,
    pub to: Option<Micros>,
}

impl Reach {
    /// One project's buckets of width `step` over `window` back from `now`
    /// (the first and last bucket start truncated to `step`).
    pub(crate) fn buckets(project: &str, now: Micros, window: Micros, step: Micros) -> Reach {
        Reach {
            projects: Projects::One(project.to_owned()),
            from: truncate(now.saturating_sub(window), step),
            to: Some(truncate(now, step).saturating_add(step)),
        }
    }
}

/// How an endpoint's answers from several stores combine, declared by the
/// endpoint module next to its run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Merge {
    /// Buckets keyed by `key`, in ascending order, the first `limit` of them
    /// (as one store's answer stops; each shard's first `limit` hold every
    /// bucket among them); rows of one bucket from several shards (several
    /// projects) add field by field, every other field being a count.
    AddByKey { key: &'static str, limit: usize },
    /// Buckets keyed by `key`, in ascending order, of one project. A bucket is
    /// never longer than a day, so it is held whole by one shard unless its
    /// project-day is split across shards (by size): then rows are taken as
    /// they are, and averages and percentiles stay exact; else every shard
    /// of the call answers partial states (`Endpoint::run_partial`), which the
    /// endpoint merges (`Endpoint::merge_states`). The first `limit` buckets.
    BucketStates { key: &'static str, limit: usize },
    /// Rows newest first by `timestamp`, ties by `id`, at most `limit` of them.
    NewestFirst { limit: usize },
    /// One row whose fields are all counts: they add.
    AddAll,
}

#[derive(Deserialize)]
struct Body<'a> {
    #[serde(borrow)]
    result: Vec<&'a RawValue>,
}

/// The rows of an answer's body `{"result":[…]}`, as sent.
pub(crate) fn answer_rows(body: &str) -> Result<Vec<&RawValue>> {
    serde_json::from_str::<Body>(body)
        .map(|b| b.result)
        .map_err(|e| Error::BadShardAnswer {
            reason: format!("not a `{{\"result\":[…]}}` answer ({e})"),
        })
}
