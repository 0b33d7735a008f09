//! `LogEndpoints`, the core service: it owns the store, the keys and the cache,
//! and is what both the wasm binding and native callers drive. Time is always
//! passed in, so the host decides what "now" is.

use std::cell::OnceCell;
use std::collections::HashMap;
use std::ops::Range;
use std::sync::Arc;

use serde::Serialize;

use crate::auth::{ApiKey, KeyRing, Purpose};
use crate::cache::{QueryAnswer, ResultCache};
use crate::endpoints::{parameters_warning, registry, EndpointInfo, EndpointKind, Query};
use crate::error::{Error, ErrorReport, Result};
use crate::http::{HttpAnswer, HttpRequest};
use crate::ingest::{
    self, frame_batch, BatchForm, EntryForm, Framed, IngestReport, RejectReason, Source,
    StagedEdge, StagedInvocation, StagedOther, Stream,
};
use crate::limits::{Limits, LARGEST_STORE_BYTES};
use crate::memory::reserve_room;
use crate::params::{Params, MAX_VALUE_BYTES};
use crate::read_jobs::{self, ReadJob};
use crate::routes::Route;
use crate::shard::{
    is_group_shard, read_record, BatchKey, BatchSplit, Delivery, DeliveryAnswer, IngestAnswers,
    IngestStatus, QueryPlan, RefusedSection, Section, ShardQuery, Split,
};
use crate::staged::{self, StagedRows};
use crate::store::block_storage::BlockStorageRef;
use crate::store::seal_jobs::JobsSink;
use crate::store::{Estimate, Store};
use crate::timestamp::Micros;
use crate::words::counted;

#[derive(Debug, Clone, Default)]
pub struct Config {
    pub api_keys: Vec<ApiKey>,
    pub limits: Limits,
    /// Where sealed text blocks go (none: memory): the edge worker's SQLite.
    pub block_storage: Option<BlockStorageRef>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StoreStats {
    pub edge_entries: usize,
    pub function_rows: usize,
    /// Entries of other sources, by source name.
    pub other_sources: std::collections::BTreeMap<String, usize>,
    /// Bytes the store takes in memory (what `max_store_bytes` bounds).
    pub store_bytes: usize,
    /// Bytes of compressed text in the host's block storage, not in memory.
    pub storage_bytes: usize,
    /// Full text blocks waiting for their seal job (`defer_seals`), read
    /// as open text until it is installed.
    pub unsealed_blocks: usize,
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
    /// A warning when a stream holds entries none of which names a project
    /// (no endpoint finds them), in words.
    pub unprojected: Option<String>,
}

/// A batch read and made ready to keep (`prepare_ingest`): what the edge
/// worker keeps (the record) and answers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PreparedBatch {
    pub key: BatchKey,
    pub report: IngestReport,
    /// How many shards its entries go to (0: nothing to keep).
    pub shards: usize,
    /// The answers to the request that sent it (`prepare_request`), by
    /// what the object that keeps it finds of its key.
    pub answers: Option<IngestAnswers>,
    /// What is kept: the batch's staged rows, split by shard (`ingest_record`
    /// or the sharded deployment's rounds read it).
    #[serde(skip)]
    pub record: Vec<u8>,
}

/// What a shard did with a delivery: which partition and round it was, and
/// what became of its entries.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DeliveryReport {
    pub partition: String,
    pub round: u64,
    pub report: IngestReport,
    /// The sections the store refused (each whole), and why.
    pub refused: Vec<RefusedSection>,
    /// Whether any section was kept: if not, the shard stores nothing of
    /// the delivery (only that its round was applied).
    pub keep: bool,
    /// When not every section was applied whole in one go: the delivery as
    /// applied (what fitted, in the chunks it was appended in), which is
    /// what the shard stores and replays.
    #[serde(skip)]
    pub kept: Option<Vec<u8>>,
    /// The rows the store had no room for (a delivery of the same partition
    /// and round), which the ingest partition sends on to each project's
    /// next split (`Round::overflow`), and how many.
    #[serde(skip)]
    pub overflow: Option<Vec<u8>>,
    pub overflow_entries: usize,
}

impl DeliveryReport {
    /// The shard's answer to the partition that sent the delivery.
    pub fn answer(&self) -> DeliveryAnswer {
        DeliveryAnswer {
            duplicate: false,
            accepted: self.report.accepted,
            refused: self.refused.clone(),
            overflow_entries: self.overflow_entries,
        }
    }
}

/// Rows `range` of `rows` as a section of their own.
fn section_of(
    rows: &StagedRows,
    stream: Stream,
    which: impl ExactSizeIterator<Item = usize>,
) -> Section {
    let mut raw = Vec::new();
    let entries = which.len();
    rows.write_rows(which, &mut raw);
    let mut body = Vec::new();
    staged::write_block(&mut body, entries, &raw);
    Section {
        stream,
        entries,
        body,
    }
}

/// What `append_as_far_as_fits` did with one stream's rows.
#[derive(Default)]
struct Fitted {
    /// The chunks appended, in order (each must be replayed as one, to take
    /// the same room).
    chunks: Vec<Range<usize>>,
    /// Rows refused alone, each larger than the whole budget, and why the first was.
    too_large: usize,
    first_too_large: Option<Error>,
    /// Where it stopped, and why: the rows from there were not tried.
    stopped: Option<(usize, Error)>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct WarmReport {
    pub refreshed: usize,
    pub kept: usize,
}

/// What a memory budget counts: the whole store (`limits.maxStoreBytes`),
/// or other sources' entries, which may hold at most a quarter of it, so that
/// a flood of them (no endpoint reads them) never refuses the two streams
/// the endpoints read (docs/contract.md, "Ingest").
#[derive(Clone, Copy)]
enum Budget {
    Store,
    OtherSources,
}

/// What a budget counts once a batch is appended, as `Estimate` says.
type Prediction<'p> = &'p dyn Fn(&Store, Estimate) -> usize;

/// A batch's entries read as `ingest_source` reads them within `limits`:
/// the rows they make, and their report (but the newest time, known once
/// they are kept). Shared by a store's own ingest and read jobs.
fn read_entries<'b>(
    source: &'b Source,
    form: BatchForm,
    batch: &'b [u8],
    limits: &Limits,
) -> Result<(StagedRows<'b>, IngestReport)> {
    let BatchForm {
        framing,
        entries: form,
        received_at: _,
    } = form;
    refuse_a_snapshot(batch)?;
    let entries = frame_batch(batch, framing, limits)?;
    let mut report = IngestReport::new(limits.max_reported_rejections);
    let rows = match source.stream {
        Stream::Edge => StagedRows::Edge(read_each(&entries, &mut report, |raw, index| {
            ingest::read_edge(raw, &form, index)
        })),
        Stream::Function => {
            let mut rows = Vec::with_capacity(entries.len());
            for (index, entry) in entries.iter().enumerate() {
                let before = rows.len();
                match entry
                    .text
                    .clone()
                    .and_then(|raw| ingest::read_function(raw, &form, index, &mut rows))
                {
                    Ok(()) => report.accepted += 1,
                    Err(reason) => {
                        rows.truncate(before);
                        report.reject(index, entry.reason(reason));
                    }
                }
            }
            StagedRows::Function(rows)
        }
        Stream::Other => StagedRows::Other(read_each(&entries, &mut report, |raw, index| {
            ingest::read_other(raw, &source.name, &form, index)
        })),
    };
    Ok((rows, report))
}

/// Each entry read into a row by `read` (given its text and index), or
/// refused in `report`, which counts the rows as accepted.
fn read_each<'b, T>(
    entries: &[Framed<'b>],
    report: &mut IngestReport,
    mut read: impl FnMut(&'b str, usize) -> std::result::Result<T, RejectReason>,
) -> Vec<T> {
    let mut rows = Vec::with_capacity(entries.len());
    for (index, entry) in entries.iter().enumerate() {
        match entry.text.clone().and_then(|raw| read(raw, index)) {
            Ok(row) => rows.push(row),
            Err(reason) => report.reject(index, entry.reason(reason)),
        }
    }
    report.accepted = rows.len();
    rows
}

/// A saved store handed in as logs is refused, naming what opens it.
fn refuse_a_snapshot(batch: &[u8]) -> Result<()> {
    match crate::snapshot::has_magic(batch) {
        true => Err(Error::UnreadableBatch {
            reason: "it is a saved store (a snapshot), not logs: open it with `LogEndpoints.fromSnapshot` (the CLI's `--open`)".into(),
        }),
        false => Ok(()),
    }
}

/// The edge text's blocks and heap bytes once a batch is appended
/// (`EdgeTable::text_after`), each estimate worked out once and the exact
/// one only when the bound does not do (near the budget). Both hold for the
/// edge table as it was then: once it changes (sealing in place instead,
/// `append_edges`), a caller makes a new one.
struct EdgeTextAfter<'b, 'a> {
    staged: &'b [StagedEdge<'a>],
    bound: OnceCell<(usize, usize)>,
    exact: OnceCell<(usize, usize)>,
    /// The edge table's heap bytes when an estimate was first asked for.
    table_bytes: OnceCell<usize>,
}

impl<'b, 'a> EdgeTextAfter<'b, 'a> {
    fn new(staged: &'b [StagedEdge<'a>]) -> Self {
        EdgeTextAfter {
            staged,
            bound: OnceCell::new(),
            exact: OnceCell::new(),
            table_bytes: OnceCell::new(),
        }
    }

    fn of(&self, store: &Store, estimate: Estimate) -> (usize, usize) {
        if cfg!(debug_assertions) {
            let bytes = store.edge.heap_bytes();
            let first = *self.table_bytes.get_or_init(|| bytes);
            debug_assert_eq!(first, bytes, "the edge table changed since its estimates");
        }
        let estimated = match estimate {
            Estimate::Bound => &self.bound,
            Estimate::Exact => &self.exact,
        };
        *estimated.get_or_init(|| store.edge.text_after(self.staged, estimate))
    }
}

/// The store's size once edge entries `staged` are appended.
fn edges_after(
    store: &Store,
    staged: &[StagedEdge],
    text: &EdgeTextAfter,
    estimate: Estimate,
) -> usize {
    store.heap_bytes() - store.edge.heap_bytes()
        + store
            .edge
            .heap_bytes_after(staged, estimate, text.of(store, estimate))
}

/// The store's size once other sources' `entries` are appended.
fn others_after(
    store: &Store,
    entries: &[StagedOther],
    text_after: (usize, usize),
    names: Estimate,
) -> usize {
    store.heap_bytes() - store.other.heap_bytes()
        + store.other.heap_bytes_after(entries, names, text_after)
}

impl Budget {
    fn limit(self, limits: &Limits) -> usize {
        match self {
            Budget::Store => limits.max_store_bytes,
            Budget::OtherSources => limits.max_store_bytes / 4,
        }
    }

    fn used(self, store: &Store) -> usize {
        match self {
            Budget::Store => store.heap_bytes(),
            Budget::OtherSources => store.other.heap_bytes(),
        }
    }

    fn name(self) -> &'static str {
        match self {
            Budget::Store => "the store",
            Budget::OtherSources => "other sources' quarter of the store",
        }
    }
}

#[derive(Default)]
pub struct LogEndpoints {
    store: Store,
    keys: KeyRing,
    cache: ResultCache,
    limits: Limits,
    block_storage: Option<BlockStorageRef>,
    /// A replay is applying what was kept, whatever the budget says
    /// (`replaying`).
    budget_waived: bool,
    /// Bytes of stored batches replayed into this store since it was made
    /// (`snapshot_due_after_replay`).
    replayed_bytes: usize,
}

/// A store made by replaying stored batches of at least its budget divided
/// by this has its snapshot written at once, not at the next maintenance:
/// its next wake would replay them all again. On workerd records replay at
/// about 18 MB/s (the full object of `node bench/cold-start.mjs` holds 234 MB
/// of them and replays in 12.7 s), so a sixteenth of the 72 MiB budget takes
/// about 250 ms, more than writing the full store's snapshot (146 ms).
const SNAPSHOT_AFTER_REPLAYING_ONE_IN: usize = 16;

/// Which endpoint a call names, and by which route: the route decides how
/// the endpoint is named and how its parameters read.
enum Call<'a> {
    /// Logflare's path: an endpoint by name or UUID, its own parameters.
    Logflare { endpoint: &'a str },
    /// Supabase's Management API: the project in the path, an endpoint by
    /// name, that API's parameters.
    Management {
        project_ref: &'a str,
        endpoint: &'a str,
    },
}

impl<'a> Call<'a> {
    /// The call a query path makes; any other path is 404.
    fn of(route: &'a Route, path: &str) -> Result<Call<'a>> {
        match route {
            Route::Query { endpoint } => Ok(Call::Logflare { endpoint }),
            Route::Management {
                project_ref,
                endpoint,
            } => Ok(Call::Management {
                project_ref,
                endpoint,
            }),
            Route::Ingest { .. } | Route::LogflareIngest | Route::Health | Route::IngestStatus => {
                Err(Error::NotFound {
                    path: path.chars().take(200).collect(),
                })
            }
        }
    }

    fn resolve(&self) -> Result<EndpointKind> {
        match self {
            Call::Logflare { endpoint } => EndpointKind::resolve(endpoint),
            Call::Management { endpoint, .. } => EndpointKind::resolve_management(endpoint),
        }
    }

    fn parse(&self, kind: EndpointKind, params: &Params, limits: &Limits) -> Result<Query> {
        match self {
            Call::Logflare { .. } => Query::parse(kind, params, limits),
            Call::Management { project_ref, .. } => {
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
        }
    }
}

impl LogEndpoints {
    #[cfg_attr(
        target_pointer_width = "32",
        allow(
            clippy::unnecessary_min_or_max,
            reason = "a usize of 32 bits is never above LARGEST_STORE_BYTES; of 64, it may be"
        )
    )]
    pub fn new(config: Config) -> LogEndpoints {
        let mut limits = config.limits;
        limits.max_param_bytes = limits.max_param_bytes.min(MAX_VALUE_BYTES);
        limits.max_store_bytes = limits.max_store_bytes.min(LARGEST_STORE_BYTES);
        let mut service = LogEndpoints {
            keys: KeyRing::new(config.api_keys),
            limits,
            ..LogEndpoints::default()
        };
        if let Some(storage) = config.block_storage {
            service.store.keep_text_in(&storage);
            service.block_storage = Some(storage);
        }
        service
    }

    /// The limits it works to (as configured, capped where the store must).
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// The answer of `GET /health`: 503 when no ingest key or no query key
    /// is configured (the worker's settings `INGEST_KEYS`, `API_KEYS`).
    pub fn health(&self) -> HttpAnswer {
        let missing: Vec<&str> = [
            (Purpose::Ingest, "INGEST_KEYS"),
            (Purpose::Query, "API_KEYS"),
        ]
        .into_iter()
        .filter(|&(purpose, _)| !self.keys.holds(purpose))
        .map(|(_, setting)| setting)
        .collect();
        HttpAnswer::health(&missing)
    }

    /// Whether `api_key` may see the ingest status (`GET /api/ingest/status`):
    /// an unrestricted query key, since the status counts every project's entries.
    pub fn authorize_status(&self, api_key: Option<&str>) -> Result<()> {
        match self.keys.check(api_key, Purpose::Query)?.is_unrestricted() {
            true => Ok(()),
            false => Err(Error::Forbidden {
                reason: "this key reads some endpoints or projects only; the ingest status counts every project's entries".into(),
            }),
        }
    }

    /// The answer of `GET /api/ingest/status`: the ingest partitions'
    /// statuses (`[name, status]`; none with `SHARDING=off`) together.
    pub fn ingest_status(
        sharding: bool,
        statuses: Vec<(String, serde_json::Value)>,
    ) -> Result<HttpAnswer> {
        let status = match sharding {
            true => IngestStatus::of(statuses)?,
            false => IngestStatus::unsharded(),
        };
        let body = serde_json::to_string(&status).map_err(|e| Error::Unavailable {
            reason: format!("the ingest status could not be written ({e})"),
        })?;
        Ok(HttpAnswer::fresh_json(body))
    }

    /// The store as versioned, checksummed bytes (`from_snapshot` reads them).
    /// Keys, limits and the result cache are not part of it.
    pub fn snapshot(&self) -> Vec<u8> {
        crate::snapshot::write(&self.store)
    }

    /// The bytes `snapshot` returns, handed to `emit` as numbered parts of
    /// `crate::snapshot::PART_BYTES` as they are written, part 0 last (see
    /// `snapshot::write_parts`); their length. A host storing a large store's
    /// snapshot in parts holds one part at a time, not the whole.
    pub fn snapshot_parts(&self, emit: &mut dyn FnMut(usize, &[u8])) -> usize {
        crate::snapshot::write_parts(&self.store, crate::snapshot::PART_BYTES, emit)
    }

    /// Whether bytes begin as a snapshot does (a saved analysis, not a log file).
    pub fn is_snapshot(bytes: &[u8]) -> bool {
        crate::snapshot::has_magic(bytes)
    }

    /// A service holding the store a snapshot holds, with `config`'s keys and
    /// limits: 400 `invalid_snapshot` for bytes that are not a whole snapshot,
    /// 503 `store_full` when the store is larger than `max_store_bytes`.
    pub fn from_snapshot(bytes: &[u8], config: Config) -> Result<LogEndpoints> {
        let service = LogEndpoints::new(config);
        let room = bytes.len().min(service.limits.max_store_bytes);
        let store = crate::snapshot::read(bytes, || reserve_room(room))?;
        service.holding(store)
    }

    /// As `from_snapshot`, for a snapshot of `total` bytes arriving in parts
    /// (`snapshot::Parts`): each is read as it comes, so memory holds the
    /// store and one part, not the snapshot as well.
    pub fn from_snapshot_parts<I>(parts: I, total: usize, config: Config) -> Result<LogEndpoints>
    where
        I: Iterator<Item = std::result::Result<Vec<u8>, String>>,
    {
        let service = LogEndpoints::new(config);
        let room = total.min(service.limits.max_store_bytes);
        let store = crate::snapshot::read_parts(parts, total, || reserve_room(room))?;
        service.holding(store)
    }

    /// This service with a restored `store`: 503 `store_full` past its budget.
    fn holding(mut self, mut store: Store) -> Result<LogEndpoints> {
        match &self.block_storage {
            Some(storage) => store.keep_text_in(storage),
            None if store.uses_storage() => {
                return Err(Error::InvalidSnapshot {
                    reason: "its text blocks are in a host's block storage, and none was given"
                        .into(),
                })
            }
            None => {}
        }
        // Blocks a deferring store left waiting are compressed here: a
        // restored store seals in place until told otherwise.
        store.defer_seals(false);
        let used = store.heap_bytes();
        if used > self.limits.max_store_bytes {
            return Err(Error::StoreFull {
                needed: used,
                used: 0,
                budget: self.limits.max_store_bytes,
                of: Budget::Store.name(),
            });
        }
        // The busiest projects' packed rows are made by the first query of
        // function rows (`prepare_for`), not here: on workerd they took 10–55 ms
        // of a cold start that asks something else first.
        self.store = store;
        Ok(self)
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

    /// A batch of `source` whose entries read as `form`, made ready to keep:
    /// read as `ingest` reads it (its report is the acknowledgement's), its
    /// key (which recognises it when it is sent again, and in the sharded
    /// deployment picks the ingest partition that keeps it) and its record
    /// (its staged rows split by shard). `idempotency_key`: the client's.
    pub fn prepare_ingest(
        &self,
        source: &Source,
        form: impl Into<BatchForm>,
        batch: &[u8],
        idempotency_key: Option<&str>,
    ) -> Result<PreparedBatch> {
        self.prepare(
            source,
            form.into(),
            batch,
            BatchKey::of(&source.name, batch, idempotency_key),
        )
    }

    fn prepare(
        &self,
        source: &Source,
        form: BatchForm,
        batch: &[u8],
        key: BatchKey,
    ) -> Result<PreparedBatch> {
        let split = Split::of(source, form, batch, &self.limits)?;
        Ok(PreparedBatch {
            key,
            record: split.record(),
            shards: split.shards(),
            report: split.report,
            answers: None,
        })
    }

    /// An ingest request (`/api/logs/{stream}`, or Logflare's ingest API)
    /// and its decoded body, received at `now`, made ready to keep, with its
    /// answer: the key first (401, 403), then the source, then the entries.
    pub fn prepare_request(
        &self,
        request: &HttpRequest,
        batch: &[u8],
        now: Micros,
    ) -> Result<PreparedBatch> {
        self.authorize_ingest(request.key().as_deref())?;
        let call = request.ingest_call(batch)?;
        let content = BatchKey::content_hash(&call.source.name, batch);
        let key =
            BatchKey::with_content(&call.source.name, content, call.idempotency_key.as_deref());
        let mut prepared = self.prepare(&call.source, call.form(now, content), batch, key)?;
        prepared.answers = Some(IngestAnswers::new(
            call.answer(&prepared.report),
            call.idempotency_key,
        ));
        Ok(prepared)
    }

    /// Keeps a prepared batch's record in this store: all of it, or, when the
    /// store refuses it (its budget), none of it (a record holds one
    /// stream's rows, appended at once).
    pub fn ingest_record(&mut self, record: &[u8]) -> Result<IngestReport> {
        let mut report = IngestReport::new(self.limits.max_reported_rejections);
        let mut streams: Vec<(Stream, usize, Vec<u8>)> = Vec::new();
        for part in read_record(record)? {
            // Runs of blocks joined are one run.
            match streams
                .iter_mut()
                .find(|(stream, ..)| *stream == part.stream)
            {
                Some((_, count, blocks)) => {
                    *count += part.entries;
                    blocks.extend_from_slice(part.body);
                }
                None => streams.push((part.stream, part.entries, part.body.to_vec())),
            }
        }
        for (stream, count, blocks) in streams {
            let newest = self.append_staged(stream, count, &blocks)?;
            report.accepted += count;
            report.newest_timestamp = report.newest_timestamp.max(newest);
        }
        Ok(report)
    }

    /// Ingests what an ingest partition delivered to store `shard` (its
    /// name). Every section is read before any is applied (bytes that do not
    /// read change nothing); then each is kept as far as it fits on its own,
    /// so that a stream that does not fit (over the budget, or other sources
    /// over their share) never takes the others with it. Refused sections
    /// are reported, and `kept` is then the delivery as it was applied, for
    /// the caller to store. What finds no room (in the store, or in other
    /// sources' quarter of it) is handed back (`overflow`) for the project's
    /// next split, and so are, in a group's shard, the rows of a project
    /// that would hold more than half of its budget with them: a busy project
    /// goes on to splits of its own and leaves room for its group's others.
    pub fn ingest_delivery(&mut self, bytes: &[u8], shard: &str) -> Result<DeliveryReport> {
        let project_cap = is_group_shard(shard).then_some(self.limits.max_store_bytes / 2);
        let delivery = Delivery::read(bytes)?;
        let raws = delivery
            .sections
            .iter()
            .map(|section| staged::read_counted_blocks(&section.body, section.entries))
            .collect::<Result<Vec<_>>>()?;
        let mut rows = delivery
            .sections
            .iter()
            .zip(&raws)
            .map(|(section, raw)| StagedRows::read(section.stream, raw, section.entries))
            .collect::<Result<Vec<_>>>()?;
        let mut report = IngestReport::new(self.limits.max_reported_rejections);
        let mut refused = Vec::new();
        // Per section, the chunks appended (copied out only when one was not whole).
        let mut appended = Vec::with_capacity(delivery.sections.len());
        let mut overflow = Vec::new();
        for ((section, rows), raw) in delivery.sections.iter().zip(rows.iter_mut()).zip(&raws) {
            let past = project_cap.and_then(|cap| self.take_past_share(rows, raw.len(), cap));
            if let Some(past) = past {
                overflow.push(section_of(&past, section.stream, 0..past.len()));
            }
            let rows = &*rows;
            let fitted = self.append_as_far_as_fits(rows);
            report.accepted += fitted
                .chunks
                .iter()
                .map(ExactSizeIterator::len)
                .sum::<usize>();
            for chunk in &fitted.chunks {
                report.newest_timestamp =
                    report.newest_timestamp.max(rows.newest_in(chunk.clone()));
            }
            if let Some(error) = &fitted.first_too_large {
                refused.push(RefusedSection {
                    stream: Some(section.stream),
                    entries: fitted.too_large,
                    error: ErrorReport::from(error),
                });
            }
            match fitted.stopped {
                None => {}
                // No room, in the store or in other sources' quarter of it:
                // the rows go on to the project's next split, where they fit
                // (a row that could not fit an empty store is `BatchTooLarge`).
                Some((at, Error::StoreFull { .. })) => {
                    overflow.push(section_of(rows, section.stream, at..rows.len()));
                }
                Some((at, error)) => refused.push(RefusedSection {
                    stream: Some(section.stream),
                    entries: rows.len() - at,
                    error: ErrorReport::from(&error),
                }),
            }
            appended.push(fitted.chunks);
        }
        let whole_in_one = |section: &Section, chunks: &[Range<usize>]| matches!(chunks, [only] if only.len() == section.entries);
        let whole = (delivery.sections.iter().zip(&appended))
            .all(|(section, chunks)| whole_in_one(section, chunks));
        let kept = (!whole).then(|| {
            (delivery.sections.iter().zip(&rows).zip(appended))
                .flat_map(|((section, rows), chunks)| {
                    let one = whole_in_one(section, &chunks);
                    chunks.into_iter().map(move |chunk| match one {
                        true => section.clone(),
                        false => section_of(rows, section.stream, chunk),
                    })
                })
                .collect::<Vec<_>>()
        });
        let keep = report.accepted > 0;
        let as_delivery = |sections: Vec<Section>| {
            Delivery {
                partition: delivery.partition.clone(),
                round: delivery.round,
                sections,
            }
            .write()
        };
        Ok(DeliveryReport {
            overflow_entries: overflow.iter().map(|s: &Section| s.entries).sum(),
            overflow: (!overflow.is_empty()).then(|| as_delivery(overflow)),
            kept: kept.map(as_delivery),
            partition: delivery.partition.clone(),
            round: delivery.round,
            report,
            refused,
            keep,
        })
    }

    /// Takes out of `rows` (`staged_bytes` of staged rows) those of the
    /// projects that would hold more than `cap` bytes of the store with them
    /// (`None`: no such project).
    fn take_past_share<'a>(
        &self,
        rows: &mut StagedRows<'a>,
        staged_bytes: usize,
        cap: usize,
    ) -> Option<StagedRows<'a>> {
        // A row takes what its table's rows take on average; in an empty
        // table, what it took staged (more: its text is not compressed yet).
        let per_row = match self.store.bytes_per_row(rows.stream()) {
            0 => staged_bytes.checked_div(rows.len()).unwrap_or(0),
            average => average,
        };
        // A store that holds no more than `cap` with every row cannot have such a project.
        if self.store.heap_bytes() + rows.len().saturating_mul(per_row) <= cap {
            return None;
        }
        let mut in_rows: HashMap<Option<&str>, usize> = HashMap::new();
        for row in 0..rows.len() {
            *in_rows.entry(rows.project(row)).or_default() += 1;
        }
        let past: Vec<Option<String>> = in_rows
            .into_iter()
            .filter(|&(project, count)| {
                self.store.project_bytes(project) + count.saturating_mul(per_row) > cap
            })
            .map(|(project, _)| project.map(str::to_owned))
            .collect();
        if past.is_empty() {
            return None;
        }
        Some(rows.take_where(|project| past.iter().any(|p| p.as_deref() == project)))
    }

    /// Applies again a delivery this store applied before (`kept`, or the
    /// delivery as sent when it was kept whole), as a store rebuilt from its
    /// snapshot and the deliveries after it does: all of it, whatever the
    /// budget says now. The rows were within the budget when they were taken;
    /// a store restored from a snapshot holds its rows with no spare room, so
    /// its columns grow at other points than the live store's did, and a
    /// budget checked again could leave acknowledged rows out.
    pub fn replay_delivery(&mut self, bytes: &[u8]) -> Result<DeliveryReport> {
        // As a split's: what was kept is kept again, whatever share a project has.
        self.replaying(bytes.len(), |service| service.ingest_delivery(bytes, ""))
    }

    /// `replay_delivery` for a record kept here directly (`ingest_record`).
    pub fn replay_record(&mut self, record: &[u8]) -> Result<IngestReport> {
        self.replaying(record.len(), |service| service.ingest_record(record))
    }

    /// Whether the stored batches replayed into this store since it was made
    /// (by a wake: a snapshot and the batches after it, or every batch) are
    /// so many that its snapshot should be written now
    /// (`SNAPSHOT_AFTER_REPLAYING_ONE_IN`).
    pub fn snapshot_due_after_replay(&self) -> bool {
        self.replayed_bytes > 0
            && self.replayed_bytes >= self.limits.max_store_bytes / SNAPSHOT_AFTER_REPLAYING_ONE_IN
    }

    /// Applies a stored batch of `bytes` (`apply`) as a replay does: counted,
    /// and whatever the budget says.
    fn replaying<T>(
        &mut self,
        bytes: usize,
        apply: impl FnOnce(&mut Self) -> Result<T>,
    ) -> Result<T> {
        self.replayed_bytes = self.replayed_bytes.saturating_add(bytes);
        let budget = std::mem::replace(&mut self.limits.max_store_bytes, usize::MAX);
        self.budget_waived = true;
        let applied = apply(self);
        self.budget_waived = false;
        self.limits.max_store_bytes = budget;
        applied
    }

    /// Appends as many of `rows` as fit, in order: all at once, or, when they
    /// do not fit, in chunks halved until one fits (a store filling up takes
    /// what it has room for), growing again after each that fits. A row
    /// larger than the whole budget fits no store: it is refused alone and
    /// the rows after it are tried (they may be other projects' rows of the
    /// same round).
    fn append_as_far_as_fits(&mut self, rows: &StagedRows) -> Fitted {
        let count = rows.len();
        let (mut at, mut chunk) = (0, count);
        let mut fitted = Fitted::default();
        while at < count {
            let end = at + chunk.min(count - at);
            match self.append_range(rows, at..end) {
                Ok(()) => {
                    fitted.chunks.push(at..end);
                    at = end;
                    chunk = chunk.saturating_mul(2);
                }
                Err(Error::StoreFull { .. } | Error::BatchTooLarge { .. }) if end - at > 1 => {
                    chunk = (end - at) / 2;
                }
                Err(error @ Error::BatchTooLarge { .. }) => {
                    fitted.too_large += 1;
                    fitted.first_too_large.get_or_insert(error);
                    at = end;
                }
                Err(error) => {
                    fitted.stopped = Some((at, error));
                    break;
                }
            }
        }
        fitted
    }

    /// Appends `count` staged rows of `stream` (as blocks), all or none; the
    /// newest timestamp among them.
    fn append_staged(
        &mut self,
        stream: Stream,
        count: usize,
        blocks: &[u8],
    ) -> Result<Option<Micros>> {
        let raw = staged::read_counted_blocks(blocks, count)?;
        let rows = StagedRows::read(stream, &raw, count)?;
        self.append_rows(&rows)?;
        Ok(rows.newest())
    }

    /// Appends one stream's rows, all or none.
    fn append_rows(&mut self, rows: &StagedRows) -> Result<()> {
        self.append_range(rows, 0..rows.len())
    }

    /// Appends rows `range` of one stream's rows, all or none.
    fn append_range(&mut self, rows: &StagedRows, range: Range<usize>) -> Result<()> {
        match rows {
            StagedRows::Edge(rows) => self.append_edges(rows.get(range).unwrap_or_default()),
            StagedRows::Function(rows) => {
                self.append_invocations(rows.get(range).unwrap_or_default())
            }
            StagedRows::Other(rows) => self.append_others(rows.get(range).unwrap_or_default()),
        }
    }

    /// Reads a batch (JSON array or NDJSON, UTF-8) into `stream_name`'s table. Bad
    /// entries are reported with their index; the others are all kept, or, when the
    /// batch as a whole is refused, none are.
    pub fn ingest(&mut self, stream_name: &str, batch: &[u8]) -> Result<IngestReport> {
        self.ingest_source(&Source::stream(stream_name)?, EntryForm::Contract, batch)
    }

    /// `ingest` for any source, the batch read as `form`.
    pub fn ingest_source(
        &mut self,
        source: &Source,
        form: impl Into<BatchForm>,
        batch: &[u8],
    ) -> Result<IngestReport> {
        // Logs handed in are kept whatever their age: a library's clock is
        // the caller's (`setNow`), and an old download is read as it is.
        let (rows, mut report) = read_entries(source, form.into(), batch, &self.limits)?;
        self.append_rows(&rows)?;
        report.newest_timestamp = rows.newest();
        Ok(report)
    }

    /// Appends edge entries whole, or, past the budget, none (503 `store_full`).
    /// The wide URL filters due (see `UrlTrigrams`) give way to the entries:
    /// a batch that fits only without them leaves them unbuilt.
    fn append_edges(&mut self, staged: &[StagedEdge]) -> Result<()> {
        let text = EdgeTextAfter::new(staged);
        let predict = |store: &Store, names| edges_after(store, staged, &text, names);
        self.seal_jobs_paused_if_over(&[(Budget::Store, &predict)], |service, paused| {
            // Sealing in place, the text takes other room.
            let in_place = EdgeTextAfter::new(staged);
            let text = if paused { &in_place } else { &text };
            service.append_edges_with(staged, text)
        })
    }

    fn append_edges_with(&mut self, staged: &[StagedEdge], text: &EdgeTextAfter) -> Result<()> {
        let after = |store: &Store, names| edges_after(store, staged, text, names);
        let optional = self.store.edge.url_trigrams.due_bytes();
        let postpone = match self.check_budget(Budget::Store, after) {
            Err(Error::StoreFull { .. } | Error::BatchTooLarge { .. }) if optional > 0 => {
                self.check_budget(Budget::Store, |store, names| {
                    after(store, names).saturating_sub(optional)
                })?;
                true
            }
            checked => checked.map(|()| false)?,
        };
        let fits = |estimate| self.store.edge.fits(staged, text.of(&self.store, estimate));
        if !(fits(Estimate::Bound) || fits(Estimate::Exact)) {
            return Err(Error::BatchTooLarge {
                reason: "the edge log store cannot address more text or requests".into(),
            });
        }
        // Only once the batch is taken: a refused batch changes nothing.
        if postpone {
            self.store.edge.url_trigrams.postpone_wide_filters();
        }
        self.store.edge.append(staged);
        Ok(())
    }

    /// Appends function rows whole, or, past the budget, none (503
    /// `store_full`); then the busiest projects' packed rows, with the room
    /// the budget leaves.
    fn append_invocations(&mut self, rows: &[StagedInvocation]) -> Result<()> {
        let predict = |store: &Store, names| {
            store.heap_bytes() - store.functions.heap_bytes()
                + store.functions.heap_bytes_after(rows, names)
        };
        self.seal_jobs_paused_if_over(&[(Budget::Store, &predict)], |service, _| {
            let checked = service.check_budget(Budget::Store, predict);
            if checked.is_ok() {
                service.store.functions.append(rows);
                service.sync_packed();
            }
            checked
        })
    }

    /// Brings the busiest projects' packed rows up to date with the room the
    /// budget leaves; none while a replay waives the budget (`replaying`),
    /// whose room made copies past the budget (a 4 MiB store rebuilt from its
    /// records held 4.8 MB). The first query of function rows then makes
    /// them (`prepare_for`).
    fn sync_packed(&mut self) {
        if self.budget_waived {
            return;
        }
        let room = self
            .limits
            .max_store_bytes
            .saturating_sub(self.store.heap_bytes());
        self.store.functions.sync_packed(room);
    }

    /// Appends other sources' entries whole, or, past the budget or their
    /// share of it, none (503 `store_full`).
    fn append_others(&mut self, entries: &[StagedOther]) -> Result<()> {
        let text_after = self.store.other.text_after(entries);
        let share = |store: &Store, names| store.other.heap_bytes_after(entries, names, text_after);
        let whole = |store: &Store, names| others_after(store, entries, text_after, names);
        let predictions: [(Budget, Prediction); 2] =
            [(Budget::OtherSources, &share), (Budget::Store, &whole)];
        self.seal_jobs_paused_if_over(&predictions, |service, paused| {
            let text_after = match paused {
                true => service.store.other.text_after(entries),
                false => text_after,
            };
            service.append_others_with(entries, text_after)
        })
    }

    fn append_others_with(
        &mut self,
        entries: &[StagedOther],
        text_after: (usize, usize),
    ) -> Result<()> {
        self.check_budget(Budget::OtherSources, |store, names| {
            store.other.heap_bytes_after(entries, names, text_after)
        })?;
        self.check_budget(Budget::Store, |store, names| {
            others_after(store, entries, text_after, names)
        })?;
        if !self.store.other.fits(text_after) {
            return Err(Error::BatchTooLarge {
                reason: "the other sources' store cannot address more text".into(),
            });
        }
        self.store.other.append(entries);
        Ok(())
    }

    /// Appends a batch (`append`) with seal jobs paused when a store that
    /// defers its seals (`defer_seals`) would pass a budget's limit by a
    /// prediction of `predictions`: its waiting blocks are compressed here
    /// first, and it decides, gives way or refuses as a store that never
    /// deferred, whose predictions are never larger; so a deferring store
    /// takes the batches that one takes. `append` is told whether it was
    /// paused (a paused store's text is to be predicted again); deferring
    /// resumes after.
    fn seal_jobs_paused_if_over<T>(
        &mut self,
        predictions: &[(Budget, Prediction<'_>)],
        append: impl FnOnce(&mut Self, bool) -> T,
    ) -> T {
        let paused = self.store.defers_seals()
            && predictions.iter().any(|&(budget, predict)| {
                let limit = budget.limit(&self.limits);
                predict(&self.store, Estimate::Bound) > limit
                    && predict(&self.store, Estimate::Exact) > limit
            });
        if paused {
            self.store.defer_seals(false);
        }
        let appended = append(self, paused);
        if paused {
            self.store.defer_seals(true);
        }
        appended
    }

    /// Refuses a batch whose append would take what `budget` counts past its
    /// limit; `predict` gives that size. `Estimate::Bound` is an upper bound
    /// that reads no entry's text, so the exact count is only worked out
    /// when the bound does not fit (a store well within its budget pays
    /// nothing for it).
    ///
    /// The busiest projects' packed function rows give way to rows: when a
    /// batch fits only without them, they are dropped (and no more are made:
    /// the store is nearly full).
    fn check_budget(
        &mut self,
        budget: Budget,
        predict: impl Fn(&Store, Estimate) -> usize,
    ) -> Result<()> {
        let limit = budget.limit(&self.limits);
        if predict(&self.store, Estimate::Bound) <= limit {
            return Ok(());
        }
        let mut after = predict(&self.store, Estimate::Exact);
        let packed = self.store.functions.packed.heap_bytes();
        if after > limit && matches!(budget, Budget::Store) && after - packed <= limit {
            self.store.functions.packed.give_way();
            after -= packed;
        }
        let used = budget.used(&self.store);
        let needed = after.saturating_sub(used);
        if needed > limit {
            // Not a matter of room: the batch alone is more than the whole
            // budget, so a retry would be refused the same (a shipper drops it).
            return Err(Error::BatchTooLarge {
                reason: format!(
                    "it needs about {needed} bytes, more than {}'s whole budget of {limit} bytes (limits.maxStoreBytes)",
                    budget.name()
                ),
            });
        }
        if after > limit {
            return Err(Error::StoreFull {
                needed,
                used,
                budget: limit,
                of: budget.name(),
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
    ) -> Result<QueryAnswer> {
        let call = Call::Logflare {
            endpoint: name_or_uuid,
        };
        self.answer(call, params, api_key, now)
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
    ) -> Result<QueryAnswer> {
        let call = Call::Management {
            project_ref,
            endpoint: name,
        };
        self.answer(call, params, api_key, now)
    }

    /// Runs the query a path asks for (`/api/endpoints/query/…` or
    /// `/v1/projects/{ref}/analytics/endpoints/…`); any other path is 404.
    pub fn query_path(
        &mut self,
        path: &str,
        params: &Params,
        api_key: Option<&str>,
        now: Micros,
    ) -> Result<QueryAnswer> {
        let route = Route::parse(path)?;
        self.answer(Call::of(&route, path)?, params, api_key, now)
    }

    /// `query_path` as one shard of a project-day split across shards
    /// answers a directory: rows of partial state where buckets may span
    /// shards (`Merge::BucketStates`), else the endpoint's rows. Not cached:
    /// the directory's merged answer is what a client sees.
    pub fn query_path_partial(
        &mut self,
        path: &str,
        params: &Params,
        api_key: Option<&str>,
        now: Micros,
    ) -> Result<QueryAnswer> {
        let route = Route::parse(path)?;
        let (query, warning) = self.validate(Call::of(&route, path)?, params, api_key, now)?;
        self.prepare_for(&query);
        let body: Arc<str> = query.run_partial(&self.store, now)?.into();
        Ok(QueryAnswer::new(body, None, warning))
    }

    /// What a sharded deployment does for the call a path asks for: the call
    /// is checked exactly as `query_path` checks it (key, endpoint, parameters,
    /// restrictions), so a refused call never reaches a shard; its plan says
    /// which shards can hold its rows (see `shard::ShardQuery`).
    pub fn shard_query(
        &self,
        path: &str,
        params: &Params,
        api_key: Option<&str>,
        now: Micros,
    ) -> Result<ShardQuery> {
        let route = Route::parse(path)?;
        let (query, warning) = self.validate(Call::of(&route, path)?, params, api_key, now)?;
        let kind = query.kind();
        let plan = QueryPlan::new(
            kind.name(),
            query.reach(now)?,
            kind.merge(),
            warning.clone(),
        );
        Ok(ShardQuery::new(query, warning, now, plan, kind.merge()))
    }

    /// The plan of `shard_query`.
    pub fn plan_query(
        &self,
        path: &str,
        params: &Params,
        api_key: Option<&str>,
        now: Micros,
    ) -> Result<QueryPlan> {
        Ok(self.shard_query(path, params, api_key, now)?.plan().clone())
    }

    /// The answer of a call across shards: the shards' answers merged, or,
    /// when no shard could hold a row of it, this store's own (a store
    /// without entries answers an unknown project).
    pub fn answer_shard_query(&mut self, query: &ShardQuery) -> Result<QueryAnswer> {
        if let Some(merged) = query.gather.merged() {
            return merged;
        }
        let mut answer = self.execute(query.query.clone(), query.warning.clone(), query.now)?;
        answer.shards = Some(0);
        answer.objects = query.gather.objects().to_vec();
        Ok(answer)
    }

    /// The answer one store would give, from the answers of the shards a plan
    /// for `endpoint` asked (at least one).
    pub fn merge_answers(endpoint: &str, parts: &[QueryAnswer]) -> Result<QueryAnswer> {
        crate::shard::merge_answers(EndpointKind::resolve(endpoint)?.merge(), parts)
    }

    fn answer(
        &mut self,
        call: Call,
        params: &Params,
        api_key: Option<&str>,
        now: Micros,
    ) -> Result<QueryAnswer> {
        let (query, warning) = self.validate(call, params, api_key, now)?;
        self.execute(query, warning, now)
    }

    /// Checks a call in the order `query` documents; the validated call, scoped
    /// to the key's projects, and the warning its answer carries.
    fn validate(
        &self,
        call: Call,
        params: &Params,
        api_key: Option<&str>,
        now: Micros,
    ) -> Result<(Query, Option<String>)> {
        let key = self.keys.check(api_key, Purpose::Query)?;
        let kind = call.resolve()?;
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
        let query = call.parse(kind, params, &self.limits)?;
        key.may_read(&query)?;
        let query = key.scope(query);
        let route_sets = match call {
            Call::Management { project_ref, .. } => {
                let shown: String = project_ref.chars().take(64).collect();
                let path = params
                    .get("project")
                    .filter(|&sent| sent != project_ref)
                    .map(|_| {
                        format!(
                            "parameter `project` ignored: the path names the project (`{shown}`)"
                        )
                    });
                let own = kind
                    .management_sets()
                    .iter()
                    .filter(|name| params.get(name).is_some())
                    .map(|name| {
                        format!("parameter `{name}` ignored: the Management API route sets it")
                    });
                path.into_iter().chain(own).collect::<Vec<_>>()
            }
            Call::Logflare { .. } => Vec::new(),
        };
        let warnings: Vec<String> = parameters_warning(kind, params)
            .into_iter()
            .chain(route_sets)
            .chain(query.warning(now))
            .collect();
        Ok((query, (!warnings.is_empty()).then(|| warnings.join("; "))))
    }

    fn execute(
        &mut self,
        query: Query,
        warning: Option<String>,
        now: Micros,
    ) -> Result<QueryAnswer> {
        if let Some((body, status)) = self.cache.get(&query, now) {
            return Ok(QueryAnswer::new(body, Some(status), warning));
        }
        self.prepare_for(&query);
        let body: Arc<str> = query.run(&self.store, now)?.into();
        let cache = self.cache.put(&query, body.clone(), now);
        Ok(QueryAnswer::new(body, cache, warning))
    }

    /// Makes the packed rows a query of function rows reads, when rows came
    /// since they were made: a replay or a restore makes none (`sync_packed`).
    fn prepare_for(&mut self, query: &Query) {
        let functions = &self.store.functions;
        if query.kind().spec().stream == Stream::Function.name()
            && functions.packed.is_stale(functions.len())
        {
            self.sync_packed();
        }
    }

    /// Re-computes cached results that are still in use and due for warming.
    pub fn warm_cache(&mut self, now: Micros) -> WarmReport {
        let due = self.cache.due_for_warming(now);
        let mut refreshed = 0;
        for query in &due {
            self.prepare_for(query);
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

    /// From now on, full text blocks wait for the host to compress them in
    /// another instance of the module (`take_seal_jobs`, `seal_blocks`,
    /// `install_sealed`): ingest goes on while a second core compresses. Off,
    /// they are compressed as they fill, and those waiting are compressed
    /// now. Answers are the same either way; a batch that would take the
    /// store past a budget is decided as in place (`seal_jobs_paused_if_over`),
    /// and a restored store seals in place until told otherwise.
    pub fn defer_seals(&mut self, on: bool) {
        self.store.defer_seals(on);
    }

    /// The full text blocks not handed out yet, as a frame of seal jobs;
    /// `None` when there are none.
    pub fn take_seal_jobs(&mut self) -> Option<Vec<u8>> {
        self.take_seal_jobs_into(Vec::with_capacity)
    }

    /// `take_seal_jobs`, the frame written to the sink `sink` makes for its
    /// length (the host's buffer: each block's text is copied out once).
    pub(crate) fn take_seal_jobs_into<S: JobsSink>(
        &mut self,
        sink: impl FnOnce(usize) -> S,
    ) -> Option<S> {
        self.store.take_seal_jobs(sink)
    }

    /// Compresses a frame of seal jobs (in any instance of the module):
    /// the frame of sealed blocks for `install_sealed`, 500 `bad_seal_jobs`
    /// for bytes that are not seal jobs.
    pub fn seal_blocks(jobs: &[u8]) -> Result<Vec<u8>> {
        crate::store::seal_jobs::seal_blocks(jobs).ok_or_else(|| Error::BadSealJobs {
            reason: "not a whole frame of seal jobs".into(),
        })
    }

    /// Puts sealed blocks in place of the open text they were made from: how
    /// many were, a block that no longer waits (compressed here since) being
    /// passed over; 500 `bad_seal_jobs` for a frame that is not sealed blocks
    /// of this store's jobs.
    pub fn install_sealed(&mut self, sealed: &[u8]) -> Result<usize> {
        self.store
            .install_sealed(sealed)
            .map_err(|reason| Error::BadSealJobs {
                reason: reason.into(),
            })
    }

    /// What reading a batch of `stream_name` here depends on, as a read job
    /// for `read_batch` in another instance of the module (a worker's): a
    /// second core reads batches while this one appends.
    pub fn read_job(&self, stream_name: &str) -> Result<Vec<u8>> {
        Source::stream(stream_name)?;
        let job = ReadJob {
            stream: stream_name.to_owned(),
            limits: self.limits,
        };
        Ok(job.write())
    }

    /// A batch read as `ingest` reads it in the store whose job `job` is, in
    /// any instance of the module: its report and its rows, for
    /// `ingest_read`. Throws as `ingest` would for the batch as a whole;
    /// 500 `bad_read_job` for a job that does not read.
    pub fn read_batch(job: &[u8], batch: &[u8]) -> Result<Vec<u8>> {
        let job = ReadJob::read(job)?;
        let source = Source::stream(&job.stream)?;
        let (rows, report) = read_entries(&source, EntryForm::Contract.into(), batch, &job.limits)?;
        Ok(read_jobs::write_answer(&job.stream, &report, &rows))
    }

    /// Appends the rows of a batch `read_batch` read: all, or, past the
    /// budget, none (as `ingest`); its report. The store is as had it read
    /// the batch itself. 500 `bad_read_job` for bytes that are not such a
    /// batch.
    pub fn ingest_read(&mut self, answer: &[u8]) -> Result<IngestReport> {
        let answer = read_jobs::read_answer(answer)?;
        let bad = |reason: &str| Error::BadReadJob {
            reason: reason.into(),
        };
        let stream = Source::stream(&answer.stream)
            .map_err(|_| bad("a stream not known"))?
            .stream;
        let rows = StagedRows::read(stream, answer.rows, answer.count)
            .map_err(|_| bad("rows that do not read"))?;
        self.append_rows(&rows)?;
        let mut read = answer.report;
        read.newest_timestamp = rows.newest();
        let mut report = IngestReport::new(self.limits.max_reported_rejections);
        report.absorb(read);
        Ok(report)
    }

    pub fn endpoints(&self) -> &'static [EndpointInfo] {
        registry()
    }

    /// The most input a file fed in pieces gathers into one batch for this
    /// store: `wanted`, or less for a small store, whose budget a batch's
    /// estimate would pass whole (a store then fills, and says so, batch by
    /// batch, rather than refusing one batch as larger than all of it).
    pub(crate) fn feed_batch_bytes(&self, wanted: usize) -> usize {
        wanted.min((self.limits.max_store_bytes / 16).max(16 << 10))
    }

    pub fn stats(&self) -> StoreStats {
        StoreStats {
            edge_entries: self.store.edge.len(),
            function_rows: self.store.functions.len(),
            other_sources: self.store.other.entries_by_source(),
            store_bytes: self.store.heap_bytes(),
            storage_bytes: self.store.storage_bytes(),
            unsealed_blocks: self.store.unsealed_blocks(),
            cached_results: self.cache.len(),
        }
    }

    pub fn catalog(&self) -> Catalog {
        let edge_projects = self.store.edge.projects.sorted_values();
        let function_projects = self.store.functions.projects.sorted_values();
        // Entries of a stream none of which names a project: every endpoint answers per project.
        let unnamed: Vec<String> = [
            (
                self.store.edge.len(),
                &edge_projects,
                "edge entry",
                "edge entries",
            ),
            (
                self.store.functions.len(),
                &function_projects,
                "function row",
                "function rows",
            ),
        ]
        .into_iter()
        .filter(|(held, projects, ..)| *held > 0 && projects.is_empty())
        .map(|(held, _, one, many)| counted(held, one, many))
        .collect();
        Catalog {
            unprojected: match unnamed.is_empty() {
                true => None,
                false => Some(format!(
                    "none of the {} names a project (a `project` field or column; `metadata.project_ref` for functions): the endpoints answer per project and will find nothing",
                    unnamed.join(" or ")
                )),
            },
            edge_projects,
            function_projects,
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
