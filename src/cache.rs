//! Query answers, and the result cache (docs/contract.md, "Cache"): per (endpoint, parameter values), for
//! the endpoint's cache seconds from when the result was computed. Warming
//! re-computes entries that are still in use every cache-warming interval; an
//! entry nobody has asked for in a whole cache period is dropped instead. The
//! cache holds at most `MAX_CACHED_BYTES`, outside the store's budget.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::endpoints::Query;
use crate::timestamp::{Micros, SECOND};

pub struct CachedResult {
    pub body: Arc<str>,
    pub computed_at: Micros,
    pub last_used: Micros,
    /// The cache's count of uses at this entry's last: which answers were
    /// used least recently when several were used at one `now`.
    use_order: u64,
}

/// Whether a result came from the cache, and for how many more seconds it is good.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheStatus {
    pub hit: bool,
    pub max_age_seconds: u64,
}

/// A query's answer: the JSON body, for cached endpoints the cache status,
/// and what the caller should know about how the call was read. Passed
/// between objects and to JS as `{ body, cache: "HIT" | "MISS" | null,
/// maxAge, warning, shards, objects }`; as HTTP, its headers say the rest (`http`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueryAnswer {
    pub body: Arc<str>,
    pub cache: Option<CacheStatus>,
    /// How the call was read differently from how it was sent (e.g. `sql`
    /// ignored): `X-Endpoint-Warning`.
    pub warning: Option<String>,
    /// How many shards a sharded deployment read for it (`X-Shards`).
    pub shards: Option<usize>,
    /// The objects a sharded deployment asked for it, in order (`X-Objects`).
    pub objects: Vec<String>,
}

impl QueryAnswer {
    /// An answer computed (or found in the cache) by one store.
    pub fn new(body: Arc<str>, cache: Option<CacheStatus>, warning: Option<String>) -> Self {
        QueryAnswer {
            body,
            cache,
            warning,
            shards: None,
            objects: Vec::new(),
        }
    }
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireAnswer<'a> {
    #[serde(borrow)]
    body: Cow<'a, str>,
    #[serde(default, borrow)]
    cache: Option<Cow<'a, str>>,
    #[serde(default)]
    max_age: Option<u64>,
    #[serde(default, borrow)]
    warning: Option<Cow<'a, str>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    shards: Option<usize>,
    #[serde(default, skip_serializing_if = "<[String]>::is_empty")]
    objects: Cow<'a, [String]>,
}

impl Serialize for QueryAnswer {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        WireAnswer {
            body: Cow::Borrowed(&self.body),
            cache: self.cache.map(|c| Cow::Borrowed(c.label())),
            max_age: self.cache.map(|c| c.max_age_seconds),
            warning: self.warning.as_deref().map(Cow::Borrowed),
            shards: self.shards,
            objects: Cow::Borrowed(&self.objects),
        }
        .serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for QueryAnswer {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let wire = WireAnswer::deserialize(deserializer)?;
        Ok(QueryAnswer {
            body: wire.body.into(),
            cache: CacheStatus::from_parts(wire.cache.as_deref(), wire.max_age),
            warning: wire.warning.map(Cow::into_owned),
            shards: wire.shards,
            objects: wire.objects.into_owned(),
        })
    }
}

impl CacheStatus {
    /// `HIT` or `MISS`, as `X-Cache` says it.
    pub fn label(self) -> &'static str {
        if self.hit {
            "HIT"
        } else {
            "MISS"
        }
    }

    /// The status a label and a remaining lifetime describe; none without both.
    pub fn from_parts(label: Option<&str>, max_age_seconds: Option<u64>) -> Option<CacheStatus> {
        let hit = match label? {
            "HIT" => true,
            "MISS" => false,
            _ => return None,
        };
        Some(CacheStatus {
            hit,
            max_age_seconds: max_age_seconds?,
        })
    }
}

/// Most bytes the cached answers may take (their bodies, and `ENTRY_BYTES`
/// each): past it, expired answers go, then the least recently used, down to
/// three quarters of it. Answers are a few KiB at most, so this is thousands;
/// without it, callers asking ever new parameters (a pattern per request)
/// grew the cache until memory ran out, with no host warming it.
pub(crate) const MAX_CACHED_BYTES: usize = 4 << 20;
/// What an entry takes besides its body: its query, its slot, its times.
const ENTRY_BYTES: usize = 256;

fn cost(body: &str) -> usize {
    body.len() + ENTRY_BYTES
}

#[derive(Default)]
pub struct ResultCache {
    entries: HashMap<Query, CachedResult>,
    /// What the entries take, by `cost`.
    bytes: usize,
    /// Gets and puts so far (`CachedResult::use_order`).
    uses: u64,
}

fn lifetime(query: &Query) -> Option<Micros> {
    query
        .kind()
        .spec()
        .cache_seconds
        .map(|s| s as Micros * SECOND)
}

fn remaining_seconds(expires_at: Micros, now: Micros) -> u64 {
    let left = expires_at.saturating_sub(now).max(0);
    (left as u64).div_ceil(SECOND as u64)
}

impl ResultCache {
    /// A fresh cached body for `query` at `now`, marking it used.
    pub fn get(&mut self, query: &Query, now: Micros) -> Option<(Arc<str>, CacheStatus)> {
        let ttl = lifetime(query)?;
        let entry = self.entries.get_mut(query)?;
        // A clock that went backwards (a test, a host clock step) is not a hit either.
        if now >= entry.computed_at.saturating_add(ttl) || now < entry.computed_at {
            return None;
        }
        self.uses += 1;
        (entry.last_used, entry.use_order) = (now, self.uses);
        let status = CacheStatus {
            hit: true,
            max_age_seconds: remaining_seconds(entry.computed_at + ttl, now),
        };
        Some((entry.body.clone(), status))
    }

    /// Stores a fresh result; returns the status of a miss, or `None` when the
    /// endpoint is not cached.
    pub fn put(&mut self, query: &Query, body: Arc<str>, now: Micros) -> Option<CacheStatus> {
        let ttl = lifetime(query)?;
        self.bytes += cost(&body);
        self.uses += 1;
        let replaced = self.entries.insert(
            query.clone(),
            CachedResult {
                body,
                computed_at: now,
                last_used: now,
                use_order: self.uses,
            },
        );
        if let Some(old) = replaced {
            self.bytes -= cost(&old.body);
        }
        if self.bytes > MAX_CACHED_BYTES {
            self.make_room(now);
        }
        Some(CacheStatus {
            hit: false,
            max_age_seconds: remaining_seconds(now + ttl, now),
        })
    }

    /// Drops expired answers, then the least recently used, until the cache
    /// holds at most three quarters of `MAX_CACHED_BYTES`.
    fn make_room(&mut self, now: Micros) {
        self.entries.retain(|query, entry| {
            lifetime(query).is_some_and(|ttl| {
                now < entry.computed_at.saturating_add(ttl) && now >= entry.computed_at
            })
        });
        self.recount();
        let room = MAX_CACHED_BYTES / 4 * 3;
        if self.bytes <= room {
            return;
        }
        // By use, not by `last_used`: answers used at one `now` would
        // otherwise go in the map's (random) order.
        let mut by_use: Vec<(u64, Query)> = self
            .entries
            .iter()
            .map(|(query, entry)| (entry.use_order, query.clone()))
            .collect();
        by_use.sort_unstable_by_key(|(use_order, _)| *use_order);
        for (_, query) in by_use {
            if self.bytes <= room {
                break;
            }
            if let Some(entry) = self.entries.remove(&query) {
                self.bytes -= cost(&entry.body);
            }
        }
    }

    fn recount(&mut self) {
        self.bytes = self.entries.values().map(|entry| cost(&entry.body)).sum();
    }

    /// Drops entries unused for a whole cache period and returns the queries due
    /// for re-computation (computed at least one warming interval ago).
    pub fn due_for_warming(&mut self, now: Micros) -> Vec<Query> {
        self.entries.retain(|query, entry| {
            lifetime(query).is_some_and(|ttl| {
                now < entry.last_used.saturating_add(ttl) && now >= entry.computed_at
            })
        });
        self.recount();
        self.entries
            .iter()
            .filter(|(query, entry)| {
                query
                    .kind()
                    .spec()
                    .cache_warming_seconds
                    .is_some_and(|w| now >= entry.computed_at.saturating_add(w as Micros * SECOND))
            })
            .map(|(query, _)| query.clone())
            .collect()
    }

    /// Replaces a warmed entry's body, keeping when it was last used.
    pub fn refresh(&mut self, query: &Query, body: Arc<str>, now: Micros) {
        if let Some(entry) = self.entries.get_mut(query) {
            self.bytes = self.bytes + cost(&body) - cost(&entry.body);
            entry.body = body;
            entry.computed_at = now;
        }
        if self.bytes > MAX_CACHED_BYTES {
            self.make_room(now);
        }
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn clear(&mut self) {
        self.entries.clear();
        self.bytes = 0;
    }
}
