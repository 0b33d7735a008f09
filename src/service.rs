//! `LogEndpoints`, the core service: it owns the store, the keys and the cache,
//! and is what both the wasm binding and native callers drive. Time is always
//! passed in, so the host decides what "now" is.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::auth::{ApiKey, KeyRing, Purpose};
use crate::cache::{CacheStatus, ResultCache};
use crate::endpoints::{ignored_parameters_warning, registry, EndpointInfo, EndpointKind, Query};
use crate::error::{Error, Result};
use crate::ingest::{self, RejectReason, Rejection, Stream};
use crate::params::{Params, MAX_VALUE_BYTES};
use crate::routes::Route;
use crate::shard::{BatchSplit, CombinedReport, IngestOutcome, QueryPlan};
use crate::store::{NameCount, Store};
use crate::timestamp::Micros;

/// Limits that protect the instance; every one has a safe default. Read from
/// JS options as camelCase names (`maxBatchBytes`, …); absent ones keep it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct Limits {
    /// Largest batch accepted by one `ingest` call, in bytes.
    pub max_batch_bytes: usize,
    /// Most entries accepted by one `ingest` call.
    pub max_batch_entries: usize,
    /// How many rejections are reported in detail (all are counted).
    pub max_reported_rejections: usize,
    /// Memory budget of the store (`stats().storeBytes`). A batch that would take
    /// the store past it is refused whole (413 `store_full`); nothing is evicted,
    /// so what was accepted is never lost behind the caller's back.
    pub max_store_bytes: usize,
    /// Longest accepted query parameter value, in bytes (at most 64 KiB).
    pub max_param_bytes: usize,
    /// Compiled-size limit of a usage.api-counts `project` regular expression.
    pub max_regex_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_batch_bytes: 512 << 20,
            max_batch_entries: 2_000_000,
            max_reported_rejections: 1000,
            max_store_bytes: 1 << 30,
            max_param_bytes: 4096,
            max_regex_bytes: crate::endpoints::REGEX_SIZE_LIMIT,
        }
    }
}

#[derive(Debug, Clone, Default)]
pub struct Config {
    pub api_keys: Vec<ApiKey>,
    pub limits: Limits,
}

/// What `ingest` answers: `{accepted, rejected:[{index, reason}]}` (plus the total
/// number rejected, in case the detailed list was cut at `max_reported_rejections`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct IngestReport {
    pub accepted: usize,
    pub rejected: Vec<Rejection>,
    pub rejected_total: usize,
    /// Newest timestamp among the accepted entries (µs), `None` when none were.
    pub newest_timestamp: Option<Micros>,
}

/// A batch's stream and its entries as framed, once the batch as a whole passes
/// the limits (size, entry count): what ingesting and splitting by project share.
pub(crate) fn frame_batch<'a>(
    stream_name: &str,
    batch: &'a [u8],
    limits: &Limits,
) -> Result<(Stream, Vec<ingest::Framed<'a>>)> {
    let stream = Stream::from_name(stream_name)?;
    let too_large = |what: String| Error::BatchTooLarge {
        reason: format!("{what}; split it into smaller batches"),
    };
    if batch.len() > limits.max_batch_bytes {
        return Err(too_large(format!(
            "{} bytes, more than the limit of {} bytes",
            batch.len(),
            limits.max_batch_bytes
        )));
    }
    let entries = ingest::split_entries(batch)?;
    if entries.len() > limits.max_batch_entries {
        return Err(too_large(format!(
            "{} entries, more than the limit of {}",
            entries.len(),
            limits.max_batch_entries
        )));
    }
    Ok((stream, entries))
}

/// A successful query: the JSON body and, for cached endpoints, the cache status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueryOutput {
    pub body: Arc<str>,
    pub cache: Option<CacheStatus>,
    /// What the caller should know about how the call was read (e.g. `sql`
    /// ignored); the worker sends it as `X-Endpoint-Warning`.
    pub warning: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StoreStats {
    pub edge_entries: usize,
    pub function_rows: usize,
    pub store_bytes: usize,
    pub cached_results: usize,
}

/// What the store holds, for offering valid choices (the browser page's pickers).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Catalog {
    pub edge_projects: Vec<String>,
    pub function_projects: Vec<String>,
    pub functions: Vec<String>,
    /// Oldest and newest timestamps over both streams (µs).
    pub oldest_timestamp: Option<Micros>,
    pub newest_timestamp: Option<Micros>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct WarmReport {
    pub refreshed: usize,
    pub kept: usize,
}

#[derive(Default)]
pub struct LogEndpoints {
    store: Store,
    keys: KeyRing,
    cache: ResultCache,
    limits: Limits,
}

/// Parses a Management API call, whose path names the project.
fn management_call(
    kind: EndpointKind,
    project_ref: &str,
    params: &Params,
    limits: &Limits,
) -> Result<Query> {
    // The path's project is a parameter like any other: same limit.
    if project_ref.len() > limits.max_param_bytes {
        return Err(Error::invalid(
            "project",
            format!(
                "{} bytes long, longer than the limit of {} bytes",
                project_ref.len(),
                limits.max_param_bytes
            ),
        ));
    }
    Query::parse_management(kind, project_ref, params, limits)
}

impl LogEndpoints {
    pub fn new(config: Config) -> LogEndpoints {
        let mut limits = config.limits;
        limits.max_param_bytes = limits.max_param_bytes.min(MAX_VALUE_BYTES);
        LogEndpoints {
            keys: KeyRing::new(config.api_keys),
            limits,
            ..LogEndpoints::default()
        }
    }

    /// The store as versioned, checksummed bytes (`from_snapshot` reads them).
    /// Keys, limits and the result cache are not part of it.
    pub fn snapshot(&self) -> Vec<u8> {
        crate::snapshot::write(&self.store)
    }

    /// A service holding the store a snapshot holds, with `config`'s keys and
    /// limits: 400 `invalid_snapshot` for bytes that are not a whole snapshot,
    /// 413 `store_full` when the store is larger than `max_store_bytes`.
    pub fn from_snapshot(bytes: &[u8], config: Config) -> Result<LogEndpoints> {
        let mut service = LogEndpoints::new(config);
        let store = crate::snapshot::read(bytes)?;
        let used = store.heap_bytes();
        if used > service.limits.max_store_bytes {
            return Err(Error::StoreFull {
                needed: used,
                used: 0,
                budget: service.limits.max_store_bytes,
            });
        }
        service.store = store;
        Ok(service)
    }

    /// Checks a key presented for ingesting (hosts that take batches over a
    /// network call this first): 401 for a missing or unknown key, 403 for a
    /// query key, which may read but not write.
    pub fn authorize_ingest(&self, api_key: Option<&str>) -> Result<()> {
        self.keys.check(api_key, Purpose::Ingest).map(|_| ())
    }

    /// Splits a batch of `stream_name` by shard (project and day) without
    /// ingesting it, under this store's limits (see `shard`): what a front
    /// worker that keeps each project's days in stores of their own sends where.
    pub fn split_by_shard(&self, stream_name: &str, batch: &[u8]) -> Result<BatchSplit> {
        crate::shard::split_by_shard(stream_name, batch, &self.limits)
    }

    /// The batch's report from what each shard did with its part (see
    /// `shard::combine_ingest`), listing at most this store's reported rejections.
    pub fn combine_ingest(&self, outcome: IngestOutcome) -> CombinedReport {
        crate::shard::combine_ingest(outcome, self.limits.max_reported_rejections)
    }

    /// Reads a batch (JSON array or NDJSON, UTF-8) into `stream_name`'s table. Bad
    /// entries are reported with their index; the others are all kept, or, when the
    /// batch as a whole is refused, none are.
    pub fn ingest(&mut self, stream_name: &str, batch: &[u8]) -> Result<IngestReport> {
        let (stream, entries) = frame_batch(stream_name, batch, &self.limits)?;
        let mut rejected = Vec::new();
        let mut rejected_total = 0;
        let mut reject = |index: usize, reason: RejectReason| {
            rejected_total += 1;
            if rejected.len() < self.limits.max_reported_rejections {
                rejected.push(Rejection { index, reason });
            }
        };
        let (accepted, newest) = match stream {
            Stream::Edge => {
                let mut staged = Vec::with_capacity(entries.len());
                for (index, entry) in entries.iter().enumerate() {
                    match entry.text.clone().and_then(ingest::read_edge) {
                        Ok(edge) => staged.push(edge),
                        Err(reason) => reject(index, entry.reason(reason)),
                    }
                }
                self.check_budget(|names| {
                    self.store.edge.heap_bytes_after(&staged, names)
                        + self.store.functions.heap_bytes()
                })?;
                if !self.store.edge.fits(&staged) {
                    return Err(Error::BatchTooLarge {
                        reason: "the edge log store cannot address more text (4 GiB)".into(),
                    });
                }
                self.store.edge.append(&staged);
                (staged.len(), staged.iter().map(|e| e.timestamp).max())
            }
            Stream::Function => {
                let mut rows = Vec::with_capacity(entries.len());
                let mut accepted = 0;
                for (index, entry) in entries.iter().enumerate() {
                    let before = rows.len();
                    match entry
                        .text
                        .clone()
                        .and_then(|raw| ingest::read_function(raw, &mut rows))
                    {
                        Ok(()) => accepted += 1,
                        Err(reason) => {
                            rows.truncate(before);
                            reject(index, entry.reason(reason));
                        }
                    }
                }
                self.check_budget(|names| {
                    self.store.edge.heap_bytes()
                        + self.store.functions.heap_bytes_after(&rows, names)
                })?;
                self.store.functions.append(&rows);
                (accepted, rows.iter().map(|r| r.timestamp).max())
            }
        };
        Ok(IngestReport {
            accepted,
            rejected,
            rejected_total,
            newest_timestamp: newest,
        })
    }

    /// Refuses a batch whose append would take `stats().store_bytes` past the
    /// budget; `after` predicts that size. Counting every name as new is an upper
    /// bound without hash lookups, so the exact count is only worked out when the
    /// bound does not fit (a store well within its budget pays nothing for it).
    fn check_budget(&self, after: impl Fn(NameCount) -> usize) -> Result<()> {
        if after(NameCount::AllNew) <= self.limits.max_store_bytes {
            return Ok(());
        }
        let after = after(NameCount::Exact);
        let used = self.store.heap_bytes();
        if after > self.limits.max_store_bytes {
            return Err(Error::StoreFull {
                needed: after.saturating_sub(used),
                used,
                budget: self.limits.max_store_bytes,
            });
        }
        Ok(())
    }

    /// Runs an endpoint by name or UUID (Logflare's path), checking in this
    /// order: key (401), endpoint (404), key's endpoint restriction (403),
    /// parameters (400), key's project restriction (403).
    pub fn query(
        &mut self,
        name_or_uuid: &str,
        params: &Params,
        api_key: Option<&str>,
        now: Micros,
    ) -> Result<QueryOutput> {
        self.run_call(
            api_key,
            now,
            params,
            || EndpointKind::resolve(name_or_uuid),
            |kind, limits| Query::parse(kind, params, limits),
        )
    }

    /// Runs an endpoint through Supabase's Management API route, where the
    /// path names the project and each endpoint has that API's parameters.
    pub fn query_management(
        &mut self,
        project_ref: &str,
        name: &str,
        params: &Params,
        api_key: Option<&str>,
        now: Micros,
    ) -> Result<QueryOutput> {
        self.run_call(
            api_key,
            now,
            params,
            || EndpointKind::resolve_management(name),
            |kind, limits| management_call(kind, project_ref, params, limits),
        )
    }

    /// Runs the query a path asks for (`/api/endpoints/query/…` or
    /// `/v1/projects/{ref}/analytics/endpoints/…`); any other path is 404.
    pub fn query_path(
        &mut self,
        path: &str,
        params: &Params,
        api_key: Option<&str>,
        now: Micros,
    ) -> Result<QueryOutput> {
        let (query, warning) = self.validate_path(path, params, api_key)?;
        self.execute(query, warning, now)
    }

    /// What a sharded deployment does for the call a path asks for: the call
    /// is checked exactly as `query_path` checks it (key, endpoint, parameters,
    /// restrictions), so a refused call never reaches a shard; then which
    /// shards to ask (see `shard::QueryPlan`).
    pub fn plan_path(
        &self,
        path: &str,
        params: &Params,
        api_key: Option<&str>,
        now: Micros,
    ) -> Result<QueryPlan> {
        let (query, warning) = self.validate_path(path, params, api_key)?;
        let kind = query.kind();
        Ok(QueryPlan::new(
            kind.name(),
            query.reach(now)?,
            kind.merge(),
            warning,
        ))
    }

    /// The answer one store would give, from the answers of the shards a plan
    /// for `endpoint` asked (at least one).
    pub fn merge_answers(endpoint: &str, parts: &[QueryOutput]) -> Result<QueryOutput> {
        crate::shard::merge_answers(EndpointKind::resolve(endpoint)?.merge(), parts)
    }

    fn validate_path(
        &self,
        path: &str,
        params: &Params,
        api_key: Option<&str>,
    ) -> Result<(Query, Option<String>)> {
        match Route::parse(path)? {
            Route::Query { endpoint } => self.validate(
                api_key,
                params,
                || EndpointKind::resolve(&endpoint),
                |kind, limits| Query::parse(kind, params, limits),
            ),
            Route::Management {
                project_ref,
                endpoint,
            } => self.validate(
                api_key,
                params,
                || EndpointKind::resolve_management(&endpoint),
                |kind, limits| management_call(kind, &project_ref, params, limits),
            ),
            Route::Ingest { .. } => Err(Error::NotFound {
                path: path.chars().take(200).collect(),
            }),
        }
    }

    fn run_call(
        &mut self,
        api_key: Option<&str>,
        now: Micros,
        params: &Params,
        resolve: impl FnOnce() -> Result<EndpointKind>,
        parse: impl FnOnce(EndpointKind, &Limits) -> Result<Query>,
    ) -> Result<QueryOutput> {
        let (query, warning) = self.validate(api_key, params, resolve, parse)?;
        self.execute(query, warning, now)
    }

    /// Checks a call in the order `query` documents; the validated call, scoped
    /// to the key's projects, and the warning its answer carries.
    fn validate(
        &self,
        api_key: Option<&str>,
        params: &Params,
        resolve: impl FnOnce() -> Result<EndpointKind>,
        parse: impl FnOnce(EndpointKind, &Limits) -> Result<Query>,
    ) -> Result<(Query, Option<String>)> {
        let key = self.keys.check(api_key, Purpose::Query)?;
        let kind = resolve()?;
        key.may_use(kind)?;
        if let Some((name, len)) = params.longer_than(self.limits.max_param_bytes) {
            return Err(Error::invalid(
                name,
                format!(
                    "{len} bytes long, longer than the limit of {} bytes",
                    self.limits.max_param_bytes
                ),
            ));
        }
        let query = parse(kind, &self.limits)?;
        key.may_read(&query)?;
        let query = key.scope(query);
        Ok((query, ignored_parameters_warning(kind, params)))
    }

    fn execute(
        &mut self,
        query: Query,
        warning: Option<String>,
        now: Micros,
    ) -> Result<QueryOutput> {
        if let Some((body, status)) = self.cache.get(&query, now) {
            return Ok(QueryOutput {
                body,
                cache: Some(status),
                warning,
            });
        }
        let body: Arc<str> = query.run(&self.store, now)?.into();
        let cache = self.cache.put(&query, body.clone(), now);
        Ok(QueryOutput {
            body,
            cache,
            warning,
        })
    }

    /// Re-computes cached results that are still in use and due for warming.
    pub fn warm_cache(&mut self, now: Micros) -> WarmReport {
        let due = self.cache.due_for_warming(now);
        let mut refreshed = 0;
        for query in &due {
            if let Ok(body) = query.run(&self.store, now) {
                self.cache.refresh(query, body.into(), now);
                refreshed += 1;
            }
        }
        WarmReport {
            refreshed,
            kept: self.cache.len(),
        }
    }

    pub fn clear_cache(&mut self) {
        self.cache.clear();
    }

    pub fn endpoints(&self) -> &'static [EndpointInfo] {
        registry()
    }

    pub fn stats(&self) -> StoreStats {
        StoreStats {
            edge_entries: self.store.edge.len(),
            function_rows: self.store.functions.len(),
            store_bytes: self.store.heap_bytes(),
            cached_results: self.cache.len(),
        }
    }

    pub fn catalog(&self) -> Catalog {
        Catalog {
            edge_projects: self.store.edge.projects.sorted_values(),
            function_projects: self.store.functions.projects.sorted_values(),
            functions: self.store.functions.functions.sorted_values(),
            oldest_timestamp: self.store.oldest_timestamp(),
            newest_timestamp: self.newest_timestamp(),
        }
    }

    /// The benchmarks' floor: one pass over an 8-byte column of every edge entry
    /// (the timestamps), the least any scanning query must do.
    pub fn scan_floor(&self) -> i64 {
        self.store
            .edge
            .timestamp
            .iter()
            .fold(0i64, |sum, &t| sum.wrapping_add(t))
    }

    /// Newest timestamp held in either stream (the browser page uses it as "now").
    pub fn newest_timestamp(&self) -> Option<Micros> {
        self.store.newest_timestamp()
    }
}
