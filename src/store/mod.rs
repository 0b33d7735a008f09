//! The in-memory store: one columnar, time-sorted table per stream. Strings that
//! repeat (projects, functions, URLs) are interned to `u32` ids; free text (ids,
//! messages, raw metadata) lives in one arena of deflate blocks per table (`text`)
//! and is addressed by spans.
//! Tables are kept sorted by timestamp so every endpoint can binary-search its window.
//! Each table is declared once (`table!`, in `columns`): its columns with the
//! value a row gives each, from which appending, reserving, permuting, sizing
//! and the snapshot's writer, reader and checks follow.

use std::cell::OnceCell;
use std::collections::{HashMap, HashSet};

use crate::ingest::{StagedEdge, StagedInvocation, StagedOther, StagedRequest};
use crate::timestamp::Micros;

pub mod block_storage;
pub(crate) mod codec;
#[macro_use]
pub(crate) mod columns;
pub mod packed;
mod deflate;
pub mod text;
pub mod url_names;
pub mod project_index;
mod pieced_text;
pub(crate) mod seal_jobs;

use columns::{capacity_bound, sum_columns, Column, PointsInto};
pub use columns::{chunk_ranges, in_chunk, runs_by_chunk, Chunked};
pub use packed::{Packed, PackedRows};
use pieced_text::PiecedText;
pub(crate) use project_index::slot;
pub use project_index::{ProjectRows, Selected, TrigramFilter, UrlTrigrams};
pub use text::{Arena, Span};
pub use url_names::UrlNames;

/// Id of an interned string; `NONE` stands for null/absent.
pub type Sym = u32;
pub const NONE: Sym = u32::MAX;

/// Interned strings, one after another in one text (so that reading them in id
/// order, as a scan over new URLs does, streams through memory, and a snapshot
/// restores them with one copy), held in pieces that never move
/// (`PiecedText`). Each string is held once: the map from
/// strings to ids keeps their hashes, and a lookup compares the text. The map
/// is built on first use, so a store read from a snapshot pays for it only
/// when it is looked up or grows (queries never look up URLs).
#[derive(Default)]
pub struct Interner {
    ids: OnceCell<Ids>,
    text: PiecedText,
    /// Where each value ends in `text` (it starts where the one before ends):
    /// 32 bits, as a store never holds 4 GiB (`limits::LARGEST_STORE_BYTES`).
    ends: Vec<u32>,
}

/// Hashes integer keys no sender chooses (`Sym`s, small integers) in one
/// multiply that spreads them over the bits, where SipHash (the default)
/// costs many times more, in wasm most.
#[derive(Default)]
pub(crate) struct IntKeyHasher(u64);

/// A map keyed by such an integer.
pub(crate) type IntKeyMap<K, V> = HashMap<K, V, std::hash::BuildHasherDefault<IntKeyHasher>>;

impl std::hash::Hasher for IntKeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }
    fn write_u32(&mut self, n: u32) {
        self.0 = u64::from(n).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
    fn write_usize(&mut self, n: usize) {
        self.0 = (n as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

/// An interner's ids by the XXH3 hash of their string: open addressing over a
/// power-of-two table, each slot an id and the low half of its string's hash
/// (`EMPTY`: none), probed in turn from that half's low bits; a slot whose
/// half matches compares the string. A table that grows places its ids again
/// by the halves it holds, without reading or hashing their strings. At most
/// 3/4 full, so a lookup reads a slot or two of one cache line. 11–21 bytes a
/// value, where a `HashMap` of hashes took 20–40. XXH3 hashes a URL several
/// times faster than SipHash, which was a twentieth of ingest.
#[derive(Default)]
struct Ids {
    slots: Vec<(Sym, u32)>,
    len: usize,
}

const EMPTY: (Sym, u32) = (NONE, 0);

/// Slots a table of `values` values has: a power of two at most 3/4 full.
fn table_slots(values: usize) -> usize {
    match values {
        0 => 0,
        _ => (values + values / 3 + 1).next_power_of_two().max(8),
    }
}

fn hash_of(value: &str) -> u64 {
    xxhash_rust::xxh3::xxh3_64(value.as_bytes())
}

impl Ids {
    fn find<'t>(&self, hash: u64, value: &str, text_of: impl Fn(Sym) -> &'t str) -> Option<Sym> {
        let mask = self.slots.len().checked_sub(1)?;
        let half = hash as u32;
        let mut at = half as usize & mask;
        loop {
            let &(id, id_half) = self.slots.get(at)?;
            if id == NONE {
                return None;
            }
            if id_half == half && text_of(id) == value {
                return Some(id);
            }
            at = (at + 1) & mask;
        }
    }

    /// Adds `id` (of a string not held, with `hash`); a full table grows.
    fn insert(&mut self, hash: u64, id: Sym) {
        let slots = table_slots(self.len + 1);
        if slots > self.slots.len() {
            let old = std::mem::replace(&mut self.slots, vec![EMPTY; slots]);
            for slot in old.into_iter().filter(|&(held, _)| held != NONE) {
                self.place(slot);
            }
        }
        self.place((id, hash as u32));
        self.len += 1;
    }

    fn place(&mut self, (id, half): (Sym, u32)) {
        let mask = self.slots.len().saturating_sub(1);
        let mut at = half as usize & mask;
        while let Some(slot) = self.slots.get_mut(at) {
            if slot.0 == NONE {
                *slot = (id, half);
                return;
            }
            at = (at + 1) & mask;
        }
    }
}

/// Value `id` of an interner's `text` cut at `ends`.
fn value_of<'t>(text: &'t PiecedText, ends: &[u32], id: Sym) -> &'t str {
    let at = id as usize;
    let start = match at.checked_sub(1) {
        Some(before) => ends.get(before).copied(),
        None => Some(0),
    };
    start
        .zip(ends.get(at).copied())
        .and_then(|(start, end)| text.get(start as usize..end as usize))
        .unwrap_or("")
}

impl Interner {
    fn ids(&self) -> &Ids {
        self.ids.get_or_init(|| {
            let mut ids = Ids {
                slots: vec![EMPTY; table_slots(self.len())],
                len: 0,
            };
            for id in 0..self.len() as Sym {
                let value = self.get(id);
                let hash = hash_of(value);
                // A repeated value (only in a crafted snapshot) keeps its first id.
                if ids.find(hash, value, |id| self.get(id)).is_none() {
                    ids.insert(hash, id);
                }
            }
            ids
        })
    }

    pub fn intern(&mut self, value: &str) -> Sym {
        let ids = self.ids();
        let hash = hash_of(value);
        if let Some(id) = ids.find(hash, value, |id| value_of(&self.text, &self.ends, id)) {
            return id;
        }
        let id = self.len() as Sym;
        self.text.push(value);
        columns::grow(&mut self.ends, 1);
        self.ends.push(self.text.len() as u32);
        if let Some(ids) = self.ids.get_mut() {
            ids.insert(hash, id);
        }
        id
    }

    pub fn intern_opt(&mut self, value: Option<&str>) -> Sym {
        value.map_or(NONE, |v| self.intern(v))
    }

    pub fn lookup(&self, value: &str) -> Option<Sym> {
        self.ids().find(hash_of(value), value, |id| self.get(id))
    }

    pub fn get(&self, id: Sym) -> &str {
        value_of(&self.text, &self.ends, id)
    }

    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// The values' text (in pieces, one after another) and where each
    /// value ends, as a snapshot stores them.
    pub(crate) fn parts(&self) -> (&PiecedText, &[u32]) {
        (&self.text, &self.ends)
    }

    /// An interner of `text` cut at `ends`; `None` when the ends do not rise
    /// to the text's end on character boundaries.
    pub(crate) fn from_parts(text: String, ends: Vec<u32>) -> Option<Interner> {
        let mut start = 0u32;
        let cuts = ends.iter().fold(true, |ok, &end| {
            let fits = start <= end && text.is_char_boundary(end as usize);
            start = end;
            ok & fits
        });
        (cuts && start as usize == text.len()).then(|| Interner {
            ids: OnceCell::new(),
            text: PiecedText::whole(text),
            ends,
        })
    }

    /// Every interned value, sorted.
    pub fn sorted_values(&self) -> Vec<String> {
        let mut values: Vec<String> = (0..self.len() as Sym)
            .map(|id| self.get(id).to_owned())
            .collect();
        values.sort_unstable();
        values
    }

    /// Each string is held once (the text's capacity), plus its end and its
    /// slots in the table of ids (counted before the table is built, since
    /// the first lookup builds it).
    fn heap_bytes(&self) -> usize {
        self.text.heap_bytes() + self.ends.capacity() * 4 + table_slots(self.len()) * ID_SLOT
    }

    /// Upper bound of what `heap_bytes` grows by when `names` are interned.
    fn growth_after<'a>(
        &self,
        names: impl Iterator<Item = Option<&'a str>>,
        count: Estimate,
    ) -> usize {
        let (values, text) = new_names(self, names, count);
        self.growth_for(values, text)
    }

    /// Upper bound of what `heap_bytes` grows by when `values` new values of
    /// `text` bytes in all are interned one by one.
    fn growth_for(&self, values: usize, text: usize) -> usize {
        let text_growth = self.text.growth_for(values, text);
        let ends_growth =
            capacity_bound(self.ends.capacity(), self.ends.len() + values) - self.ends.capacity();
        let table_growth = table_slots(self.len() + values) - table_slots(self.len());
        text_growth + ends_growth * 4 + table_growth * ID_SLOT
    }
}

/// Upper bound of the names in `names` that `interner` does not hold yet,
/// and of their text: exact for `Exact` (a new name repeated in the batch
/// counts once, as it is interned once; a batch of one new project's many
/// rows had counted its name per row, and been refused as too large).
fn new_names<'a>(
    interner: &Interner,
    names: impl Iterator<Item = Option<&'a str>>,
    count: Estimate,
) -> (usize, usize) {
    match count {
        Estimate::Bound => names.flatten().fold((0, 0), |(values, text), name| {
            (values + 1, text + name.len())
        }),
        Estimate::Exact => {
            let new: HashSet<&str> = names
                .flatten()
                .filter(|name| interner.lookup(name).is_none())
                .collect();
            (new.len(), new.iter().map(|name| name.len()).sum())
        }
    }
}

/// How a budget check estimates what a batch adds: `Bound` reads no
/// entry's text and is an upper bound (every name a batch would intern —
/// projects, functions, URLs — counted as new, and the edge text from its
/// lengths alone, `EdgeTable::text_after`); `Exact` looks each name and
/// project up, which costs a lookup per name on the ingest path.
#[derive(Clone, Copy)]
pub(crate) enum Estimate {
    Bound,
    Exact,
}

/// Whether every id of `values` is `NONE` or below `len`. Not inlined, as
/// every check a restore makes a piece at a time (`PointsInto`).
#[inline(never)]
fn all_below(values: &[Sym], len: usize) -> bool {
    values
        .iter()
        .fold(true, |ok, &s| ok & ((s == NONE) | ((s as usize) < len)))
}

impl PointsInto<Interner> for Sym {
    fn all_point_into(values: &[Sym], names: &Interner) -> bool {
        all_below(values, names.len())
    }
}

impl PointsInto<UrlNames> for Sym {
    fn all_point_into(values: &[Sym], names: &UrlNames) -> bool {
        all_below(values, names.len())
    }
}

impl PointsInto<Arena> for Span {
    #[inline(never)]
    fn all_point_into(values: &[Span], text: &Arena) -> bool {
        values.iter().all(|&s| s.is_null() || text.holds(s))
    }
}

/// `sole_request` of an entry with exactly one request, …
pub const SOLE: u8 = 0x40;
/// … and of one whose one request has a URL.
pub const SOLE_URL: u8 = 0x20;

/// An entry's one request: `SOLE`, with `SOLE_URL` when it has a URL, and
/// its area bits (the low four); 0 for an entry with none or several.
fn sole_request(entry: &StagedEdge) -> u8 {
    match entry.requests.as_slice() {
        [request] => {
            let url = if request.url.is_some() { SOLE_URL } else { 0 };
            SOLE | url | (request.areas & 15)
        }
        _ => 0,
    }
}

/// Bytes of a slot of an interner's table of ids.
const ID_SLOT: usize = std::mem::size_of::<(Sym, u32)>();

table! {
    /// Edge request log entries (logs.all, usage.api-counts).
    pub struct EdgeTable {
        // One row per entry.
        // Its text goes to its project's lane (`project` is interned first).
        group entry_columns, entry_columns_mut, Chunked, fn push_entry(table, entry: &StagedEdge, request: u32, project: Sym) {
            timestamp: Micros = entry.timestamp;
            project: Sym [projects] = project;
            /// Its id, `event_message` and raw `metadata`, as one record.
            record: Span [text] = table.text.push_record(slot(project), &entry.id, Self::fields(entry));
            /// Its one request's URL (`NONE` without one) when `sole_request`
            /// has `SOLE`; otherwise its row in `listed_end`. Nearly every
            /// entry has one request, which then takes these four bytes and
            /// `sole_request`'s one, not a range and a row of request columns.
            request: u32 = request;
            /// Its one request, if it has one (`sole_request`): a scan counts
            /// it without reading the request columns.
            sole_request: u8 = sole_request(entry);
        }
        // One row per entry with no request or several, in arrival order.
        group listed_columns, listed_columns_mut, Vec, fn push_listed(table, end: &u32) {
            /// Where its requests end in the request columns (they begin
            /// where the row before's end).
            listed_end: u32 = *end;
        }
        // One row per request of those entries.
        group request_columns, request_columns_mut, Vec, fn push_request(table, request: &StagedRequest) {
            request_url: Sym [urls] = table.urls.intern_opt(request.url.as_deref());
            request_areas: u8 = request.areas;
        }
        parts {
            text: Arena,
            projects: Interner,
            urls: UrlNames,
            by_project: ProjectRows,
            url_trigrams: UrlTrigrams,
        }
    }
}

/// An edge entry's requests as (URL, area bits), from its `sole_request` and
/// `request` (see there).
pub struct EntryRequests<'a> {
    sole: Option<(Sym, u8)>,
    listed: std::iter::Zip<std::slice::Iter<'a, Sym>, std::slice::Iter<'a, u8>>,
}

impl Iterator for EntryRequests<'_> {
    type Item = (Sym, u8);

    fn next(&mut self) -> Option<(Sym, u8)> {
        match self.sole.take() {
            Some(request) => Some(request),
            None => self.listed.next().map(|(&url, &areas)| (url, areas)),
        }
    }
}

/// The requests of the entries with none or several (`listed_end` and the
/// request columns).
#[derive(Clone, Copy)]
pub struct ListedRequests<'a> {
    end: &'a [u32],
    url: &'a [Sym],
    areas: &'a [u8],
}

impl<'a> ListedRequests<'a> {
    /// The URLs and area bits of the requests of row `listed`.
    pub fn of(&self, listed: u32) -> (&'a [Sym], &'a [u8]) {
        let start = match (listed as usize).checked_sub(1) {
            Some(before) => self.end.get(before).copied(),
            None => Some(0),
        };
        let span = start
            .zip(self.end.get(listed as usize).copied())
            .map(|(start, end)| start as usize..end as usize);
        span.and_then(|span| Some((self.url.get(span.clone())?, self.areas.get(span)?)))
            .unwrap_or((&[], &[]))
    }
}

/// The columns that say which URLs each edge entry's requests have.
pub struct EntryUrls<'a> {
    project: &'a Chunked<Sym>,
    request: &'a Chunked<u32>,
    sole_request: &'a Chunked<u8>,
    listed: ListedRequests<'a>,
}

impl<'a> EntryUrls<'a> {
    /// The project of entry `row` and its request URLs.
    pub fn get(&self, row: usize) -> (Sym, &'a [Sym]) {
        let project = self.project.get(row).copied().unwrap_or(NONE);
        let urls = match (self.sole_request.get(row), self.request.get(row)) {
            (Some(&sole), Some(request)) if sole & SOLE != 0 => std::slice::from_ref(request),
            (Some(_), Some(&listed)) => self.listed.of(listed).0,
            _ => &[],
        };
        (project, urls)
    }
}

table! {
    /// Function invocation rows (functions.invocation-stats): one per (metadata, response).
    pub struct FunctionTable {
        group row_columns, row_columns_mut, Chunked, fn push_row(table, row: &StagedInvocation) {
            timestamp: Micros = row.timestamp;
            project: Sym [projects] = table.projects.intern_opt(row.project_ref.as_deref());
            function: Sym [functions] = table.functions.intern_opt(row.function_id.as_deref());
            /// `NaN` where the execution time is null.
            execution_time_ms: f64 = row.execution_time_ms.unwrap_or(f64::NAN);
            /// `NO_STATUS` where the status code is null.
            status_code: i32 = row.status_code.map_or(NO_STATUS, |s| {
                s.clamp(i64::from(i32::MIN + 1), i64::from(i32::MAX)) as i32
            });
        }
        parts {
            projects: Interner,
            functions: Interner,
            by_project: ProjectRows,
            packed: PackedRows,
        }
    }
}

pub const NO_STATUS: i32 = i32::MIN;

table! {
    /// Entries of other sources (no endpoint reads them yet): each kept as it
    /// arrived, under its source, with its id, time and project.
    pub struct OtherTable {
        group entry_columns, entry_columns_mut, Chunked, fn push_entry(table, entry: &StagedOther) {
            timestamp: Micros = entry.timestamp;
            source: Sym [sources] = table.sources.intern(entry.source);
            project: Sym [projects] = table.projects.intern_opt(entry.project.as_deref());
            /// Its id and the entry as it arrived, as one record.
            record: Span [text] = table.text.push_record(0, &entry.id, [Some(entry.entry)]);
        }
        parts {
            text: Arena,
            sources: Interner,
            projects: Interner,
        }
    }
}

/// Where appending rows `first_new..` left a table unsorted: the first row a
/// stable sort by timestamp moves and the new order of the rows from there
/// (`order[k]` is the row that goes to `from + k`), or `None` when the rows
/// are sorted. Old rows up to the earliest new timestamp keep their place, so
/// a batch that arrives a little out of order costs what it overlaps, not the
/// whole table. The old rows are sorted already, so the order is a merge of
/// them with the new rows sorted (`merged_from`: where the new rows began),
/// which lets each column be put in order with a copy of the new rows only.
struct Reorder {
    from: usize,
    order: Vec<u32>,
    merged_from: Option<usize>,
}

fn sort_order(timestamps: &Chunked<Micros>, first_new: usize) -> Option<Reorder> {
    let len = timestamps.len();
    if first_new > len {
        return None;
    }
    let last_old = first_new.checked_sub(1).and_then(|at| timestamps.get(at));
    let first_added = timestamps.get(first_new);
    let boundary_sorted = last_old.zip(first_added).is_none_or(|(a, b)| a <= b);
    if boundary_sorted && timestamps.values(first_new..len).is_sorted() {
        return None;
    }
    let earliest_new = timestamps.values(first_new..len).copied().min()?;
    let from = timestamps.partition_point_in(0..first_new, |&t| t <= earliest_new);
    let time = |i: u32| timestamps.get(i as usize).copied().unwrap_or(Micros::MAX);
    let mut fresh: Vec<u32> = (first_new as u32..len as u32).collect();
    fresh.sort_by_key(|&i| time(i));
    if !timestamps.values(from..first_new).is_sorted() {
        // Not a table's state; sorted whole all the same.
        let mut order: Vec<u32> = (from as u32..first_new as u32).chain(fresh).collect();
        order.sort_by_key(|&i| time(i));
        return Some(Reorder {
            from,
            order,
            merged_from: None,
        });
    }
    // A stable merge: on equal times the old row first, as a stable sort puts it.
    let mut order = Vec::with_capacity(len - from);
    let mut old_rows = (from as u32..first_new as u32).peekable();
    let mut new_rows = fresh.into_iter().peekable();
    loop {
        let next = match (old_rows.peek(), new_rows.peek()) {
            (Some(&o), Some(&n)) if time(n) < time(o) => new_rows.next(),
            (Some(_), _) => old_rows.next(),
            (None, _) => new_rows.next(),
        };
        match next {
            Some(row) => order.push(row),
            None => break,
        }
    }
    Some(Reorder {
        from,
        order,
        merged_from: Some(first_new),
    })
}

/// Puts `columns` in `reorder`'s order (if any); the first row that moved.
fn reorder(reorder: Option<Reorder>, columns: Vec<&mut dyn Column>) -> Option<usize> {
    let Reorder {
        from,
        order,
        merged_from,
    } = reorder?;
    for column in columns {
        column.permute(from, &order, merged_from);
    }
    Some(from)
}

impl EdgeTable {
    /// What a query for `projects` reads of the rows in `window` (see `Selected`).
    pub fn rows_of(&self, projects: &[Sym], window: std::ops::Range<usize>) -> Selected<'_> {
        self.by_project.select(projects, window)
    }

    /// How many of `project`'s rows are in `window`: two binary searches in
    /// its own rows, however many it holds.
    pub fn count_of(&self, project: Sym, window: std::ops::Range<usize>) -> usize {
        self.by_project.within(project, window).len()
    }

    pub fn len(&self) -> usize {
        self.timestamp.len()
    }

    /// The texts `entries` push, each with its lane (a project not held yet
    /// gets a lane past the others).
    fn texts(&self, entries: &[StagedEdge]) -> Vec<(usize, usize)> {
        let mut new_lanes: HashMap<&str, usize> = HashMap::new();
        let mut texts = Vec::with_capacity(entries.len());
        for e in entries {
            let lane = match e.project.as_deref() {
                None => slot(NONE),
                Some(name) => match self.projects.lookup(name) {
                    Some(project) => slot(project),
                    None => {
                        let next = self.projects.len() + 1 + new_lanes.len();
                        *new_lanes.entry(name).or_insert(next)
                    }
                },
            };
            texts.push((lane, text::record_bytes(&e.id, &Self::fields(e))));
        }
        texts
    }

    /// The fields of an entry's record: `event_message`, `metadata`.
    fn fields<'e>(entry: &'e StagedEdge) -> [Option<&'e str>; 2] {
        [entry.event_message.as_deref(), entry.metadata]
    }

    /// Blocks and heap bytes of the text once `entries` are appended, for
    /// `fits` and the budget: with `Estimate::Bound`, a bound from the
    /// records' lengths (`Arena::after_bound`), which reads no entry's text;
    /// with `Exact`, by the rules of `push` (`Arena::after`), which looks up
    /// each entry's project for its lane. Reading a batch's projects again
    /// after it was parsed took a tenth of edge ingest in wasm, most of it
    /// waiting for memory.
    pub(crate) fn text_after(&self, entries: &[StagedEdge], estimate: Estimate) -> (usize, usize) {
        match estimate {
            Estimate::Bound => self.text.after_bound(
                entries
                    .iter()
                    .map(|e| text::record_bytes_bound(&e.id, &Self::fields(e))),
                // Lanes as `texts` numbers them: none's, then each project
                // held, then one for each entry's project if it is new.
                1 + self.projects.len() + entries.len(),
            ),
            Estimate::Exact => self.text.after(self.texts(entries).into_iter()),
        }
    }

    /// Whether `entries` can be addressed: text blocks and request offsets
    /// are `u32` (`text_after`: see there).
    pub(crate) fn fits(&self, entries: &[StagedEdge], text_after: (usize, usize)) -> bool {
        let (listed, requests) = listed_requests(entries);
        let below_u32_max = |rows: usize| u32::try_from(rows).is_ok_and(|rows| rows < u32::MAX);
        text::can_number(text_after.0)
            && below_u32_max(self.listed_end.len() + listed)
            && below_u32_max(self.request_url.len() + requests)
    }

    /// What `heap_bytes` will be once `entries` are appended (an upper bound).
    pub(crate) fn heap_bytes_after(
        &self,
        entries: &[StagedEdge],
        names: Estimate,
        text_after: (usize, usize),
    ) -> usize {
        let n = entries.len();
        let (listed, requests) = listed_requests(entries);
        let (new_projects, project_text) = new_names(
            &self.projects,
            entries.iter().map(|e| e.project.as_deref()),
            names,
        );
        let url_growth = self.urls.text_to_intern(
            entries
                .iter()
                .flat_map(|e| e.requests.iter().map(|r| r.url.as_deref())),
            names,
        );
        let text_growth = text_after.1 - self.text.heap_bytes();
        self.heap_bytes()
            + sum_columns(self.entry_columns(), |c| c.growth_for(n))
            + sum_columns(self.listed_columns(), |c| c.growth_for(listed))
            + sum_columns(self.request_columns(), |c| c.growth_for(requests))
            + text_growth
            + self.projects.growth_for(new_projects, project_text)
            + self.urls.growth_for(&url_growth)
            + self.by_project.growth_for(n, new_projects)
            + self
                .url_trigrams
                .growth_for(url_growth.keys, self.projects.len(), new_projects)
    }

    /// Appends a whole batch (the caller has checked `fits`) and restores time order.
    pub(crate) fn append(&mut self, entries: &[StagedEdge]) {
        let first_new = self.len();
        let (listed, requests) = listed_requests(entries);
        for column in self.entry_columns_mut() {
            column.reserve_for(entries.len());
        }
        for column in self.listed_columns_mut() {
            column.reserve_for(listed);
        }
        for column in self.request_columns_mut() {
            column.reserve_for(requests);
        }
        for entry in entries {
            let request = match entry.requests.as_slice() {
                [sole] => self.urls.intern_opt(sole.url.as_deref()),
                several => {
                    for request in several {
                        Self::push_request(self, request);
                    }
                    let row = self.listed_end.len() as u32;
                    Self::push_listed(self, &(self.request_url.len() as u32));
                    row
                }
            };
            let project = self.projects.intern_opt(entry.project.as_deref());
            Self::push_entry(self, entry, request, project);
        }
        self.text.compact();
        // The index is taken out while it reads the table's URL columns.
        let mut url_trigrams = std::mem::take(&mut self.url_trigrams);
        let touched = url_trigrams.index(
            self.entry_urls(),
            first_new..self.len(),
            &self.urls,
            self.projects.len(),
        );
        let reordered = reorder(
            sort_order(&self.timestamp, first_new),
            self.entry_columns_mut(),
        );
        self.by_project.update(&self.project, first_new, reordered);
        url_trigrams.widen(self.entry_urls(), &self.by_project, &self.urls, &touched);
        self.url_trigrams = url_trigrams;
    }

    /// The columns that say which URLs each entry's requests have.
    fn entry_urls(&self) -> EntryUrls<'_> {
        EntryUrls {
            project: &self.project,
            request: &self.request,
            sole_request: &self.sole_request,
            listed: self.listed(),
        }
    }

    /// The requests of the entries with none or several.
    pub fn listed(&self) -> ListedRequests<'_> {
        ListedRequests {
            end: &self.listed_end,
            url: &self.request_url,
            areas: &self.request_areas,
        }
    }

    /// The requests of an entry whose `sole_request` and `request` are
    /// `sole` and `request`.
    pub fn requests_of(&self, sole: u8, request: u32) -> EntryRequests<'_> {
        let (sole, listed) = match sole & SOLE {
            0 => (None, self.listed().of(request)),
            _ => (Some((request, sole & 15)), (&[][..], &[][..])),
        };
        EntryRequests {
            sole,
            listed: listed.0.iter().zip(listed.1),
        }
    }

    pub fn heap_bytes(&self) -> usize {
        sum_columns(self.entry_columns(), |c| c.heap_bytes())
            + sum_columns(self.listed_columns(), |c| c.heap_bytes())
            + sum_columns(self.request_columns(), |c| c.heap_bytes())
            + self.text.heap_bytes()
            + self.projects.heap_bytes()
            + self.urls.heap_bytes()
            + self.by_project.heap_bytes()
            + self.url_trigrams.heap_bytes()
    }
}

/// The entries of `entries` with no request or several, and their requests:
/// the rows they add to `listed_end` and to the request columns.
fn listed_requests(entries: &[StagedEdge]) -> (usize, usize) {
    entries
        .iter()
        .filter(|e| e.requests.len() != 1)
        .fold((0, 0), |(listed, requests), e| {
            (listed + 1, requests + e.requests.len())
        })
}

impl FunctionTable {
    /// What a query for `projects` reads of the rows in `window` (see `Selected`).
    pub fn rows_of(&self, projects: &[Sym], window: std::ops::Range<usize>) -> Selected<'_> {
        self.by_project.select(projects, window)
    }

    pub fn len(&self) -> usize {
        self.timestamp.len()
    }

    /// What `heap_bytes` will be once `rows` are appended (an upper bound).
    pub(crate) fn heap_bytes_after(&self, rows: &[StagedInvocation], names: Estimate) -> usize {
        let interned = self
            .projects
            .growth_after(rows.iter().map(|r| r.project_ref.as_deref()), names)
            + self
                .functions
                .growth_after(rows.iter().map(|r| r.function_id.as_deref()), names);
        let (new_projects, _) = new_names(
            &self.projects,
            rows.iter().map(|r| r.project_ref.as_deref()),
            names,
        );
        self.heap_bytes()
            + sum_columns(self.row_columns(), |c| c.growth_for(rows.len()))
            + interned
            + self.by_project.growth_for(rows.len(), new_projects)
    }

    pub(crate) fn append(&mut self, rows: &[StagedInvocation]) {
        let first_new = self.len();
        for column in self.row_columns_mut() {
            column.reserve_for(rows.len());
        }
        for row in rows {
            Self::push_row(self, row);
        }
        let reordered = reorder(
            sort_order(&self.timestamp, first_new),
            self.row_columns_mut(),
        );
        self.by_project.update(&self.project, first_new, reordered);
        self.packed
            .stale_from(reordered.map_or(first_new, |from| from.min(first_new)));
    }

    /// Brings the busiest projects' packed rows up to date, with at most
    /// `room` more bytes (`PackedRows::sync`).
    pub(crate) fn sync_packed(&mut self, room: usize) {
        let source = packed::Source {
            rows: &self.by_project,
            function: &self.function,
            execution_time_ms: &self.execution_time_ms,
            status_code: &self.status_code,
        };
        let len = self.timestamp.len();
        self.packed.sync(&source, len, room);
    }

    pub fn heap_bytes(&self) -> usize {
        self.row_bytes() + self.packed.heap_bytes()
    }

    /// What the rows take, without the packed copies (which give way to them).
    pub fn row_bytes(&self) -> usize {
        sum_columns(self.row_columns(), |c| c.heap_bytes())
            + self.projects.heap_bytes()
            + self.functions.heap_bytes()
            + self.by_project.heap_bytes()
    }
}

impl OtherTable {
    pub fn len(&self) -> usize {
        self.timestamp.len()
    }

    /// The texts `entries` push, all in one lane (no endpoint reads them).
    fn texts<'e>(entries: &'e [StagedOther]) -> impl Iterator<Item = (usize, usize)> + 'e {
        entries
            .iter()
            .map(|e| (0, text::record_bytes(&e.id, &[Some(e.entry)])))
    }

    /// Blocks and heap bytes of the text once `entries` are appended
    /// (`Arena::after`): worked out once a batch, for `fits` and the budget.
    pub(crate) fn text_after(&self, entries: &[StagedOther]) -> (usize, usize) {
        self.text.after(Self::texts(entries))
    }

    /// Whether the text stays addressable: its blocks are `u32` (`text_after`).
    pub(crate) fn fits(&self, text_after: (usize, usize)) -> bool {
        text::can_number(text_after.0)
    }

    /// What `heap_bytes` will be once `entries` are appended (an upper bound).
    pub(crate) fn heap_bytes_after(
        &self,
        entries: &[StagedOther],
        names: Estimate,
        text_after: (usize, usize),
    ) -> usize {
        let interned = self
            .sources
            .growth_after(entries.iter().map(|e| Some(e.source)), names)
            + self
                .projects
                .growth_after(entries.iter().map(|e| e.project.as_deref()), names);
        let text_growth = text_after.1 - self.text.heap_bytes();
        self.heap_bytes()
            + sum_columns(self.entry_columns(), |c| c.growth_for(entries.len()))
            + text_growth
            + interned
    }

    /// Appends a whole batch (the caller has checked `fits`) and restores time order.
    pub(crate) fn append(&mut self, entries: &[StagedOther]) {
        let first_new = self.len();
        for column in self.entry_columns_mut() {
            column.reserve_for(entries.len());
        }
        for entry in entries {
            Self::push_entry(self, entry);
        }
        reorder(
            sort_order(&self.timestamp, first_new),
            self.entry_columns_mut(),
        );
    }

    /// How many entries each source has, by name.
    pub fn entries_by_source(&self) -> std::collections::BTreeMap<String, usize> {
        let mut counts = vec![0usize; self.sources.len()];
        for &source in self.source.iter() {
            if let Some(count) = counts.get_mut(source as usize) {
                *count += 1;
            }
        }
        counts
            .into_iter()
            .enumerate()
            .filter(|&(_, count)| count > 0)
            .map(|(id, count)| (self.sources.get(id as Sym).to_owned(), count))
            .collect()
    }

    pub fn heap_bytes(&self) -> usize {
        sum_columns(self.entry_columns(), |c| c.heap_bytes())
            + self.text.heap_bytes()
            + self.sources.heap_bytes()
            + self.projects.heap_bytes()
    }
}

/// Every table: the two streams the endpoints read, and the other sources.
#[derive(Default)]
pub struct Store {
    pub edge: EdgeTable,
    pub functions: FunctionTable,
    pub other: OtherTable,
}

impl Store {
    pub fn heap_bytes(&self) -> usize {
        self.edge.heap_bytes() + self.functions.heap_bytes() + self.other.heap_bytes()
    }

    /// About how many of the store's bytes `project`'s rows take (`None`:
    /// rows with no project): each table's bytes shared out by its rows.
    /// Other sources' entries (at most a quarter of the store) are left out.
    pub fn project_bytes(&self, project: Option<&str>) -> usize {
        fn share(heap: usize, rows: usize, of_project: usize) -> usize {
            match rows {
                0 => 0,
                _ => (heap as u128 * of_project as u128 / rows as u128) as usize,
            }
        }
        let id = |projects: &Interner| match project {
            None => Some(NONE),
            Some(name) => projects.lookup(name),
        };
        let edge = id(&self.edge.projects).map_or(0, |p| self.edge.by_project.of(p).len());
        let functions =
            id(&self.functions.projects).map_or(0, |p| self.functions.by_project.of(p).len());
        share(self.edge.heap_bytes(), self.edge.len(), edge)
            + share(self.functions.row_bytes(), self.functions.len(), functions)
    }

    /// About how many bytes one more row of `stream` takes: its table's
    /// average so far (0 while it is empty).
    pub fn bytes_per_row(&self, stream: crate::ingest::Stream) -> usize {
        use crate::ingest::Stream;
        let (heap, rows) = match stream {
            Stream::Edge => (self.edge.heap_bytes(), self.edge.len()),
            Stream::Function => (self.functions.row_bytes(), self.functions.len()),
            Stream::Other => (self.other.heap_bytes(), self.other.len()),
        };
        heap.checked_div(rows).unwrap_or(0)
    }

    /// Hands the tables' sealed text blocks, now and from now on, to a
    /// host's storage (`block_storage`): memory keeps their columns and open
    /// blocks only.
    pub(crate) fn keep_text_in(&mut self, storage: &block_storage::BlockStorageRef) {
        use block_storage::TextTable;
        self.edge.text.keep_in(storage.clone(), TextTable::Edge);
        self.other.text.keep_in(storage.clone(), TextTable::Other);
    }

    /// From now on, full text blocks wait for the host to compress them
    /// elsewhere (`on`: `take_seal_jobs`, `install_sealed`), or are
    /// compressed as they fill, those waiting now included (`!on`).
    pub fn defer_seals(&mut self, on: bool) {
        self.edge.text.defer_seals(on);
        self.other.text.defer_seals(on);
    }

    /// Whether full text blocks wait for seal jobs (`defer_seals`).
    pub fn defers_seals(&self) -> bool {
        self.edge.text.defers_seals()
    }

    /// The full blocks not handed out yet, as a frame of seal jobs
    /// (`seal_jobs`) written to the sink `sink` makes for the frame's length;
    /// `None` when there are none.
    pub(crate) fn take_seal_jobs<S: seal_jobs::JobsSink>(
        &mut self,
        sink: impl FnOnce(usize) -> S,
    ) -> Option<S> {
        use block_storage::TextTable;
        let sections = self.edge.text.seal_jobs_bytes() + self.other.text.seal_jobs_bytes();
        if sections == 0 {
            return None;
        }
        let mut jobs = seal_jobs::JobsWriter::new(sink(seal_jobs::frame_bytes(sections)));
        self.edge.text.write_seal_jobs(TextTable::Edge, &mut jobs);
        self.other.text.write_seal_jobs(TextTable::Other, &mut jobs);
        jobs.finish()
    }

    /// Puts in place the blocks of a sealed frame: how many were installed,
    /// a block that no longer waits being passed over; `Err` for a frame
    /// that is not one, or a block that cannot be the one handed out.
    pub fn install_sealed(&mut self, sealed: &[u8]) -> Result<usize, &'static str> {
        use block_storage::TextTable;
        let blocks = seal_jobs::sealed_blocks(sealed).ok_or("not a frame of sealed blocks")?;
        let mut installed = 0;
        for block in blocks {
            let arena = match block.table {
                TextTable::Edge => &mut self.edge.text,
                TextTable::Other => &mut self.other.text,
            };
            match arena.install_sealed(&block) {
                text::Installed::Yes => installed += 1,
                text::Installed::Stale => {}
                text::Installed::Wrong(reason) => return Err(reason),
            }
        }
        Ok(installed)
    }

    /// Full text blocks waiting for their seal, handed out or not.
    pub fn unsealed_blocks(&self) -> usize {
        self.edge.text.unsealed_blocks() + self.other.text.unsealed_blocks()
    }

    /// Whether some text is in a host's storage (the store then reads only
    /// with it).
    pub(crate) fn uses_storage(&self) -> bool {
        self.edge.text.uses_storage() || self.other.text.uses_storage()
    }

    /// Bytes of compressed text in a host's storage, not in memory.
    pub fn storage_bytes(&self) -> usize {
        self.edge.text.storage_bytes() + self.other.text.storage_bytes()
    }

    /// Newest timestamp held in either stream the endpoints read.
    pub fn newest_timestamp(&self) -> Option<Micros> {
        let edge = self.edge.timestamp.last().copied();
        let function = self.functions.timestamp.last().copied();
        edge.max(function)
    }

    /// Oldest timestamp held in either stream the endpoints read.
    pub fn oldest_timestamp(&self) -> Option<Micros> {
        let firsts = [
            self.edge.timestamp.first(),
            self.functions.timestamp.first(),
        ];
        firsts.into_iter().flatten().min().copied()
    }
}

/// First index whose timestamp is `>= at` in a sorted column.
pub fn lower_bound(timestamps: &Chunked<Micros>, at: Micros) -> usize {
    timestamps.partition_point(|&t| t < at)
}

/// `lower_bound` of `at`, known to be at or after index `from` (were it
/// before, this would answer `from`): a search that
/// gallops from `from` (1, 2, 4, … rows on) and then bisects what it
/// stepped over, so that walking a window bucket by bucket reads rows near
/// those it read, not the column's middle (measured: usage.api-counts
/// minutely, whose 60 buckets each searched the whole column).
pub fn lower_bound_from(timestamps: &Chunked<Micros>, from: usize, at: Micros) -> usize {
    let before = |t: &Micros| *t < at;
    let mut reach = 1;
    while timestamps.get(from + reach - 1).is_some_and(before) {
        reach *= 2;
    }
    timestamps.partition_point_in(from + reach / 2..from + reach, before)
}

/// First index whose timestamp is `> at` in a sorted column.
pub fn upper_bound(timestamps: &Chunked<Micros>, at: Micros) -> usize {
    timestamps.partition_point(|&t| t <= at)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ingest::Repeated;

    #[test]
    fn lower_bound_from_any_start_before_the_answer_finds_lower_bound() {
        let timestamps: Chunked<Micros> = [1, 3, 3, 3, 5, 8, 8, 9, 12, 20, 20, 21]
            .into_iter()
            .chain(30..100)
            .collect();
        for at in -1..=101 {
            let expected = lower_bound(&timestamps, at);
            for from in 0..=expected {
                assert_eq!(
                    lower_bound_from(&timestamps, from, at),
                    expected,
                    "at {at} from {from}"
                );
            }
        }
        assert_eq!(lower_bound_from(&Chunked::default(), 0, 5), 0);
    }

    /// An edge batch's text bound (no lookups) is never below the exact
    /// count, with projects held and new, none, canonical UUID ids and
    /// others, and blocks sealed in place or left to seal jobs; and an
    /// append stays within it.
    #[test]
    fn the_edge_texts_bound_is_never_below_its_exact_count() {
        let metadata: Vec<String> = (0..40)
            .map(|i| {
                format!(
                    "[{{\"request\":[{{\"path\":\"/rest/v1/t{i}\"}}],\"pad\":\"{}\"}}]",
                    "x".repeat(i * 97 % 3000)
                )
            })
            .collect();
        for defer in [false, true] {
            let mut table = EdgeTable::default();
            table.text.defer_seals(defer);
            for batch in 0..6usize {
                let projects: Vec<String> = (0..300)
                    .map(|i| format!("tenant-{}", (i * 7 + batch * 40) % 400))
                    .collect();
                let entries: Vec<StagedEdge> = (0..1500usize)
                    .map(|i| StagedEdge {
                        timestamp: (batch * 10_000 + i) as Micros,
                        id: match i % 3 {
                            0 => format!("{:08x}-0000-4000-8000-{:012x}", batch, i).into(),
                            _ => format!("entry-{batch}-{i}").into(),
                        },
                        event_message: (i % 5 != 0).then(|| "GET | 200 | /rest/v1/t".into()),
                        project: (i % 11 != 0)
                            .then(|| projects[i * 13 % projects.len()].as_str().into()),
                        metadata: Some(metadata[i % metadata.len()].as_str()),
                        requests: Repeated::None,
                    })
                    .collect();
                let bound = table.text_after(&entries, Estimate::Bound);
                let exact = table.text_after(&entries, Estimate::Exact);
                assert!(
                    bound.0 >= exact.0 && bound.1 >= exact.1,
                    "{bound:?} {exact:?}"
                );
                table.append(&entries);
                assert!(
                    table.text.heap_bytes() <= exact.1,
                    "{} {exact:?}",
                    table.text.heap_bytes()
                );
            }
        }
    }

    /// One busy project's batches of distinct paths: its URL filter crowds,
    /// so the next batch builds a wide filter, which doubles as it fills; a
    /// due one costs exactly `due_bytes` and can be postponed.
    #[test]
    fn a_crowded_url_filter_gets_a_wide_filter_that_doubles() {
        let mut seed = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = move || crate::test_rng::xorshift(&mut seed);
        let batches: Vec<Vec<String>> = (0..8)
            .map(|_| {
                (0..300)
                    .map(|_| {
                        let word: String = (0..12)
                            .map(|_| char::from(b'a' + (next() % 26) as u8))
                            .collect();
                        format!("https://busy.supabase.co/storage/v1/object/{word}")
                    })
                    .collect()
            })
            .collect();
        fn staged(urls: &[String], batch: usize) -> Vec<StagedEdge<'_>> {
            urls.iter()
                .enumerate()
                .map(|(i, url)| StagedEdge {
                    timestamp: (batch * 1000 + i) as Micros,
                    id: format!("{batch}-{i}").into(),
                    event_message: None,
                    project: Some("busy".into()),
                    metadata: None,
                    requests: Repeated::One(StagedRequest {
                        url: Some(url.as_str().into()),
                        areas: 0,
                    }),
                })
                .collect()
        }
        let mut table = EdgeTable::default();
        let mut words = Vec::new();
        let mut postponed = false;
        for (n, urls) in batches.iter().enumerate() {
            let batch = staged(urls, n);
            let due = table.url_trigrams.due_bytes();
            if due > 0 && n == 4 && !postponed {
                let text_after = table.text_after(&batch, Estimate::Exact);
                let with_due = table.heap_bytes_after(&batch, Estimate::Exact, text_after);
                table.url_trigrams.postpone_wide_filters();
                let without = table.heap_bytes_after(&batch, Estimate::Exact, text_after);
                assert_eq!(with_due - without, due);
                postponed = true;
            }
            let before = table
                .url_trigrams
                .wide_words(table.projects.lookup("busy").unwrap_or(NONE));
            table.append(&batch);
            let busy = table.projects.lookup("busy").unwrap();
            let after = table.url_trigrams.wide_words(busy);
            if postponed && n == 4 {
                assert_eq!(after, before, "a postponed filter is not built");
            }
            words.push(after);
        }
        assert_eq!(
            words[0], None,
            "built by the batch after the one that crowds"
        );
        assert_eq!(words[1], Some(1024));
        assert!(postponed, "a filter was due before batch 4: {words:?}");
        assert!(
            words.contains(&Some(2048)) && words.last() >= Some(&Some(2048)),
            "doubled as it fills: {words:?}"
        );
    }

    #[test]
    fn strings_whose_hashes_collide_keep_their_own_ids() {
        let texts: Vec<String> = (0..100).map(|i| format!("url-{i}")).collect();
        let text_of = |id: Sym| texts[id as usize].as_str();
        let mut ids = Ids::default();
        // Every string the same hash, through the table's growth from 8 slots to 256.
        for id in 0..100 {
            assert_eq!(ids.find(1, text_of(id), text_of), None);
            ids.insert(1, id);
        }
        assert_eq!(ids.slots.len(), 256);
        for id in 0..100 {
            assert_eq!(ids.find(1, text_of(id), text_of), Some(id));
            assert_eq!(ids.find(2, text_of(id), text_of), None, "another hash");
        }
        assert_eq!(ids.find(1, "url-100", text_of), None);
    }

    #[test]
    fn an_interner_read_back_finds_each_value_once() {
        let mut names = Interner::default();
        let values: Vec<String> = (0..1000)
            .map(|i| format!("https://tenant-{i}.supabase.co/"))
            .collect();
        let ids: Vec<Sym> = values.iter().map(|v| names.intern(v)).collect();
        assert_eq!(
            values.iter().map(|v| names.intern(v)).collect::<Vec<_>>(),
            ids
        );
        let (text, ends) = names.parts();
        let restored = Interner::from_parts(text.pieces().collect(), ends.to_vec()).unwrap();
        for (value, &id) in values.iter().zip(&ids) {
            assert_eq!(
                (restored.lookup(value), restored.get(id)),
                (Some(id), value.as_str())
            );
        }
        assert_eq!(restored.lookup("https://tenant-1000.supabase.co/"), None);
    }
}
