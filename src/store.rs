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

    fn heap_bytes(&self) -> usize {
        let text: usize = self.values.iter().map(|v| v.len()).sum();
        // Each string is held twice (map key and value list) plus the table slots.
        2 * text + self.values.capacity() * 16 + self.ids.capacity() * 24
    }
}

/// A slice of a table's text arena; `len == u32::MAX` is null.
#[derive(Clone, Copy, Debug)]
pub struct Span {
    start: u32,
    len: u32,
}

impl Span {
    pub const NULL: Span = Span {
        start: 0,
        len: u32::MAX,
    };
}

#[derive(Default)]
pub struct Arena {
    text: String,
}

impl Arena {
    fn push(&mut self, value: &str) -> Span {
        let start = self.text.len() as u32;
        self.text.push_str(value);
        Span {
            start,
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
        let start = span.start as usize;
        self.text.get(start..start + span.len as usize)
    }
}

/// Largest arena a table may hold: spans are `u32` offsets.
pub const ARENA_LIMIT: usize = u32::MAX as usize - 1;

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
fn permute<T: Copy>(column: &mut Vec<T>, order: &[u32]) {
    let reordered: Vec<T> = order
        .iter()
        .filter_map(|&i| column.get(i as usize).copied())
        .collect();
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

    /// Text bytes `entries` would add to the arena (for the size check before commit).
    pub(crate) fn text_needed(entries: &[StagedEdge]) -> usize {
        entries
            .iter()
            .map(|e| {
                e.id.len()
                    + e.event_message.as_ref().map_or(0, |m| m.len())
                    + e.metadata.map_or(0, str::len)
            })
            .sum()
    }

    pub(crate) fn fits(&self, entries: &[StagedEdge]) -> bool {
        self.text
            .text
            .len()
            .saturating_add(Self::text_needed(entries))
            <= ARENA_LIMIT
            && self.request_url.len() + entries.iter().map(|e| e.requests.len()).sum::<usize>()
                < u32::MAX as usize
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
        self.timestamp.reserve(n);
        self.id.reserve(n);
        self.event_message.reserve(n);
        self.project.reserve(n);
        self.metadata.reserve(n);
        self.requests.reserve(n);
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
            + self.text.text.capacity()
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

    pub(crate) fn append(&mut self, rows: &[StagedInvocation]) {
        let first_new = self.len();
        self.timestamp.reserve(rows.len());
        self.project.reserve(rows.len());
        self.function.reserve(rows.len());
        self.execution_time_ms.reserve(rows.len());
        self.status_code.reserve(rows.len());
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
