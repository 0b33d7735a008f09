//! The in-memory store: one columnar, time-sorted table per stream. Strings that
//! repeat (projects, functions, URLs) are interned to `u32` ids; free text (ids,
//! messages, raw metadata) lives in one arena per table and is addressed by spans.
//! Tables are kept sorted by timestamp so every endpoint can binary-search its window.

use std::collections::HashMap;

use crate::ingest::{StagedEdge, StagedInvocation};
use crate::timestamp::Micros;

/// Id of an interned string; `NONE` stands for null/absent.
pub type Sym = u32;
pub const NONE: Sym = u32::MAX;

#[derive(Default)]
pub struct Interner {
    ids: HashMap<Box<str>, Sym>,
    values: Vec<Box<str>>,
}

impl Interner {
    pub fn intern(&mut self, value: &str) -> Sym {
        if let Some(&id) = self.ids.get(value) {
            return id;
        }
        let id = self.values.len() as Sym;
        self.values.push(value.into());
        self.ids.insert(value.into(), id);
        id
    }

    pub fn intern_opt(&mut self, value: Option<&str>) -> Sym {
        value.map_or(NONE, |v| self.intern(v))
    }

    pub fn lookup(&self, value: &str) -> Option<Sym> {
        self.ids.get(value).copied()
    }

    pub fn get(&self, id: Sym) -> &str {
        self.values.get(id as usize).map_or("", |v| v)
    }

    pub fn len(&self) -> usize {
        self.values.len()
    }

    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// Every interned value, sorted.
    pub fn sorted_values(&self) -> Vec<String> {
        let mut values: Vec<String> = self.values.iter().map(|v| v.to_string()).collect();
        values.sort_unstable();
        values
    }

    /// Each string is held twice (map key and value list), plus its slots.
    fn heap_bytes(&self) -> usize {
        let text: usize = self.values.iter().map(|v| v.len()).sum();
        2 * text + self.values.len() * INTERNED_OVERHEAD
    }

    /// What interning `value` would add to `heap_bytes` (counted again for a value
    /// new twice in one batch, so an upper bound).
    fn bytes_to_intern(&self, value: Option<&str>, names: NameCount) -> usize {
        value
            .filter(|v| matches!(names, NameCount::AllNew) || self.lookup(v).is_none())
            .map_or(0, |v| 2 * v.len() + INTERNED_OVERHEAD)
    }
}

/// How `heap_bytes_after` counts the names a batch would intern (projects,
/// functions, URLs): `AllNew` needs no hash lookups and is an upper bound;
/// `Exact` looks each one up, which costs a lookup per name on the ingest path.
#[derive(Clone, Copy)]
pub(crate) enum NameCount {
    AllNew,
    Exact,
}

/// Capacity a column grows to so that `additional` more fit: half again, or
/// exactly what is needed. One rule for growing and for predicting growth, so
/// the memory budget is checked against what the store will really hold.
fn grown(len: usize, capacity: usize, additional: usize) -> usize {
    let needed = len.saturating_add(additional);
    if needed <= capacity {
        capacity
    } else {
        needed.max(capacity + capacity / 2)
    }
}

fn grow<T>(column: &mut Vec<T>, additional: usize) {
    let target = grown(column.len(), column.capacity(), additional);
    column.reserve_exact(target - column.len());
}

/// Bytes by which `column` grows for `additional` more values.
fn growth<T>(column: &Vec<T>, additional: usize) -> usize {
    (grown(column.len(), column.capacity(), additional) - column.capacity())
        * std::mem::size_of::<T>()
}

/// A slice of a table's text arena: chunk index in the top bits of `at`, offset
/// within the chunk below; `len == u32::MAX` is null.
#[derive(Clone, Copy, Debug)]
pub struct Span {
    at: u32,
    len: u32,
}

impl Span {
    pub const NULL: Span = Span {
        at: 0,
        len: u32::MAX,
    };
}

const CHUNK_BITS: u32 = 24;
/// Text is kept in chunks of this size, so that growing the arena never copies
/// (or briefly doubles) everything held so far: in a 4 GiB wasm memory a single
/// 1.6 GB string could not grow at all.
const CHUNK_BYTES: usize = 1 << CHUNK_BITS;
const MAX_CHUNKS: usize = 1 << (32 - CHUNK_BITS);

/// Free text of a table (ids, messages, raw metadata), in append-only chunks.
/// A text longer than a chunk gets a chunk of its own.
#[derive(Default)]
pub struct Arena {
    chunks: Vec<String>,
    bytes: usize,
}

impl Arena {
    /// Chunks and capacity (bytes) after `texts` are pushed, by the rules of `push`.
    fn after(&self, texts: impl Iterator<Item = usize>) -> (usize, usize) {
        let mut chunks = self.chunks.len();
        let mut capacity = self.heap_bytes();
        let (mut len, mut cap) = self
            .chunks
            .last()
            .map_or((0, 0), |c| (c.len(), c.capacity()));
        for text in texts {
            if chunks > 0 && len + text <= CHUNK_BYTES {
                let new_cap = if chunks == 1 {
                    grown(len, cap, text).min(CHUNK_BYTES)
                } else {
                    cap
                };
                capacity += new_cap - cap;
                (len, cap) = (len + text, new_cap);
            } else {
                let new_cap = if chunks == 0 {
                    text
                } else {
                    text.max(CHUNK_BYTES)
                };
                chunks += 1;
                capacity += new_cap + 24;
                (len, cap) = (text, new_cap);
            }
        }
        (chunks, capacity)
    }

    fn push(&mut self, value: &str) -> Span {
        let fits_last = self
            .chunks
            .last()
            .is_some_and(|c| c.len() + value.len() <= CHUNK_BYTES);
        if !fits_last {
            // The first chunk grows as needed (small stores stay small); later ones
            // are allocated whole, once.
            let capacity = if self.chunks.is_empty() {
                value.len()
            } else {
                value.len().max(CHUNK_BYTES)
            };
            self.chunks.push(String::with_capacity(capacity));
        } else if self.chunks.len() == 1 {
            if let Some(first) = self.chunks.first_mut() {
                let target = grown(first.len(), first.capacity(), value.len()).min(CHUNK_BYTES);
                first.reserve_exact(target - first.len());
            }
        }
        let index = self.chunks.len() - 1;
        let Some(chunk) = self.chunks.last_mut() else {
            return Span::NULL;
        };
        let offset = chunk.len();
        chunk.push_str(value);
        self.bytes += value.len();
        Span {
            at: ((index as u32) << CHUNK_BITS) | offset as u32,
            len: value.len() as u32,
        }
    }

    fn push_opt(&mut self, value: Option<&str>) -> Span {
        value.map_or(Span::NULL, |v| self.push(v))
    }

    pub fn get(&self, span: Span) -> Option<&str> {
        if span.len == u32::MAX {
            return None;
        }
        let chunk = self.chunks.get((span.at >> CHUNK_BITS) as usize)?;
        let start = (span.at & (CHUNK_BYTES as u32 - 1)) as usize;
        chunk.get(start..start + span.len as usize)
    }

    pub fn len(&self) -> usize {
        self.bytes
    }

    pub fn is_empty(&self) -> bool {
        self.bytes == 0
    }

    fn heap_bytes(&self) -> usize {
        self.chunks.iter().map(String::capacity).sum::<usize>() + self.chunks.len() * 24
    }
}

/// Table slots per interned value (value list and hash map).
const INTERNED_OVERHEAD: usize = 40;

/// Edge request log entries (logs.all, usage.api-counts).
#[derive(Default)]
pub struct EdgeTable {
    pub timestamp: Vec<Micros>,
    pub id: Vec<Span>,
    pub event_message: Vec<Span>,
    pub project: Vec<Sym>,
    pub metadata: Vec<Span>,
    /// Each entry's requests: a range of `request_url` / `request_areas`.
    pub requests: Vec<(u32, u32)>,
    pub request_url: Vec<Sym>,
    pub request_areas: Vec<u8>,
    pub text: Arena,
    pub projects: Interner,
    pub urls: Interner,
}

/// Function invocation rows (functions.invocation-stats): one per (metadata, response).
#[derive(Default)]
pub struct FunctionTable {
    pub timestamp: Vec<Micros>,
    pub project: Vec<Sym>,
    pub function: Vec<Sym>,
    /// `NaN` where the execution time is null.
    pub execution_time_ms: Vec<f64>,
    /// `i32::MIN` where the status code is null.
    pub status_code: Vec<i32>,
    pub projects: Interner,
    pub functions: Interner,
}

pub const NO_STATUS: i32 = i32::MIN;

/// Reorders `column` so that position `i` holds what was at `order[i]`.
/// The capacity is kept, so the memory budget's prediction holds.
fn permute<T: Copy>(column: &mut Vec<T>, order: &[u32]) {
    let mut reordered = Vec::with_capacity(column.capacity());
    reordered.extend(
        order
            .iter()
            .filter_map(|&i| column.get(i as usize).copied()),
    );
    *column = reordered;
}

/// Stable order of the rows by timestamp, or `None` when they are already sorted.
fn sort_order(timestamps: &[Micros], first_new: usize) -> Option<Vec<u32>> {
    let boundary_sorted = first_new == 0
        || timestamps
            .get(first_new - 1)
            .zip(timestamps.get(first_new))
            .is_none_or(|(a, b)| a <= b);
    let tail_sorted = timestamps
        .get(first_new..)
        .is_none_or(<[Micros]>::is_sorted);
    if boundary_sorted && tail_sorted {
        return None;
    }
    let mut order: Vec<u32> = (0..timestamps.len() as u32).collect();
    order.sort_by_key(|&i| timestamps.get(i as usize).copied().unwrap_or(Micros::MAX));
    Some(order)
}

impl EdgeTable {
    pub fn len(&self) -> usize {
        self.timestamp.len()
    }

    pub fn is_empty(&self) -> bool {
        self.timestamp.is_empty()
    }

    fn texts<'e>(entries: &'e [StagedEdge]) -> impl Iterator<Item = usize> + 'e {
        entries.iter().flat_map(|e| {
            [
                Some(e.id.len()),
                e.event_message.as_ref().map(|m| m.len()),
                e.metadata.map(str::len),
            ]
            .into_iter()
            .flatten()
        })
    }

    /// Whether `entries` can be addressed: text chunks and request offsets are `u32`.
    pub(crate) fn fits(&self, entries: &[StagedEdge]) -> bool {
        self.text.after(Self::texts(entries)).0 <= MAX_CHUNKS
            && self.request_url.len() + entries.iter().map(|e| e.requests.len()).sum::<usize>()
                < u32::MAX as usize
    }

    /// What `heap_bytes` will be once `entries` are appended (an upper bound).
    pub(crate) fn heap_bytes_after(&self, entries: &[StagedEdge], names: NameCount) -> usize {
        let n = entries.len();
        let requests: usize = entries.iter().map(|e| e.requests.len()).sum();
        let interned: usize = entries
            .iter()
            .map(|e| {
                self.projects.bytes_to_intern(e.project.as_deref(), names)
                    + e.requests
                        .iter()
                        .map(|r| self.urls.bytes_to_intern(r.url.as_deref(), names))
                        .sum::<usize>()
            })
            .sum();
        let text_growth = self.text.after(Self::texts(entries)).1 - self.text.heap_bytes();
        self.heap_bytes()
            + growth(&self.timestamp, n)
            + growth(&self.id, n)
            + growth(&self.event_message, n)
            + growth(&self.project, n)
            + growth(&self.metadata, n)
            + growth(&self.requests, n)
            + growth(&self.request_url, requests)
            + growth(&self.request_areas, requests)
            + text_growth
            + interned
    }

    /// Appends a whole batch (the caller has checked `fits`) and restores time order.
    pub(crate) fn append(&mut self, entries: &[StagedEdge]) {
        let first_new = self.len();
        self.reserve(entries.len());
        for entry in entries {
            self.timestamp.push(entry.timestamp);
            self.id.push(self.text.push(&entry.id));
            self.event_message
                .push(self.text.push_opt(entry.event_message.as_deref()));
            self.project
                .push(self.projects.intern_opt(entry.project.as_deref()));
            self.metadata.push(self.text.push_opt(entry.metadata));
            let start = self.request_url.len() as u32;
            grow(&mut self.request_url, entry.requests.len());
            grow(&mut self.request_areas, entry.requests.len());
            for request in &entry.requests {
                self.request_url
                    .push(self.urls.intern_opt(request.url.as_deref()));
                self.request_areas.push(request.areas);
            }
            self.requests.push((start, entry.requests.len() as u32));
        }
        if let Some(order) = sort_order(&self.timestamp, first_new) {
            permute(&mut self.timestamp, &order);
            permute(&mut self.id, &order);
            permute(&mut self.event_message, &order);
            permute(&mut self.project, &order);
            permute(&mut self.metadata, &order);
            permute(&mut self.requests, &order);
        }
    }

    fn reserve(&mut self, n: usize) {
        grow(&mut self.timestamp, n);
        grow(&mut self.id, n);
        grow(&mut self.event_message, n);
        grow(&mut self.project, n);
        grow(&mut self.metadata, n);
        grow(&mut self.requests, n);
    }

    pub fn heap_bytes(&self) -> usize {
        self.timestamp.capacity() * 8
            + (self.id.capacity()
                + self.event_message.capacity()
                + self.metadata.capacity()
                + self.requests.capacity())
                * 8
            + self.project.capacity() * 4
            + self.request_url.capacity() * 4
            + self.request_areas.capacity()
            + self.text.heap_bytes()
            + self.projects.heap_bytes()
            + self.urls.heap_bytes()
    }
}

impl FunctionTable {
    pub fn len(&self) -> usize {
        self.timestamp.len()
    }

    pub fn is_empty(&self) -> bool {
        self.timestamp.is_empty()
    }

    /// What `heap_bytes` will be once `rows` are appended (an upper bound).
    pub(crate) fn heap_bytes_after(&self, rows: &[StagedInvocation], names: NameCount) -> usize {
        let n = rows.len();
        let interned: usize = rows
            .iter()
            .map(|r| {
                self.projects
                    .bytes_to_intern(r.project_ref.as_deref(), names)
                    + self
                        .functions
                        .bytes_to_intern(r.function_id.as_deref(), names)
            })
            .sum();
        self.heap_bytes()
            + growth(&self.timestamp, n)
            + growth(&self.project, n)
            + growth(&self.function, n)
            + growth(&self.execution_time_ms, n)
            + growth(&self.status_code, n)
            + interned
    }

    pub(crate) fn append(&mut self, rows: &[StagedInvocation]) {
        let first_new = self.len();
        grow(&mut self.timestamp, rows.len());
        grow(&mut self.project, rows.len());
        grow(&mut self.function, rows.len());
        grow(&mut self.execution_time_ms, rows.len());
        grow(&mut self.status_code, rows.len());
        for row in rows {
            self.timestamp.push(row.timestamp);
            self.project
                .push(self.projects.intern_opt(row.project_ref.as_deref()));
            self.function
                .push(self.functions.intern_opt(row.function_id.as_deref()));
            self.execution_time_ms
                .push(row.execution_time_ms.unwrap_or(f64::NAN));
            self.status_code
                .push(row.status_code.map_or(NO_STATUS, |s| {
                    s.clamp(i64::from(i32::MIN + 1), i64::from(i32::MAX)) as i32
                }));
        }
        if let Some(order) = sort_order(&self.timestamp, first_new) {
            permute(&mut self.timestamp, &order);
            permute(&mut self.project, &order);
            permute(&mut self.function, &order);
            permute(&mut self.execution_time_ms, &order);
            permute(&mut self.status_code, &order);
        }
    }

    pub fn heap_bytes(&self) -> usize {
        self.timestamp.capacity() * 8
            + self.execution_time_ms.capacity() * 8
            + (self.project.capacity() + self.function.capacity() + self.status_code.capacity()) * 4
            + self.projects.heap_bytes()
            + self.functions.heap_bytes()
    }
}

/// First index whose timestamp is `>= at` in a sorted column.
pub fn lower_bound(timestamps: &[Micros], at: Micros) -> usize {
    timestamps.partition_point(|&t| t < at)
}

/// First index whose timestamp is `> at` in a sorted column.
pub fn upper_bound(timestamps: &[Micros], at: Micros) -> usize {
    timestamps.partition_point(|&t| t <= at)
}
