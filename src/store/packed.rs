//! The function rows of the busiest projects, packed together: what MergeTree
//! gets from ordering a table by `(project, ts)`. The function table stays in
//! time order (every window is a binary search on it), and a project holding
//! a large share of it gets a copy of the columns the function endpoints
//! (invocation-stats, combined-stats) read (function, execution time, status) in its own rows' order, so that its
//! queries read those columns contiguously instead of gathering every cache
//! line of the table.
//!
//! The copies are derived (a snapshot does not store them) and optional: a
//! store makes and extends them only with room its budget leaves, after an
//! append or, after a restore or a replay, at the first query of function
//! rows (`sync`), and drops one it has no room to extend, so they never take
//! room from rows. Copies grow in fixed chunks, so extending one never
//! moves what it holds, and its size is known before it is allocated.

use super::project_index::{slot, ProjectRows};
use super::{Chunked, Sym};

/// Rows per chunk of a copy.
const CHUNK_ROWS: usize = 4096;
/// Bytes a chunk holds: a function (4), an execution time (8) and a status (4) a row.
const CHUNK_BYTES: usize = CHUNK_ROWS * 16;
/// A project is packed once it holds this share of the table's rows…
const PACKED_SHARE: usize = 16;
/// …and at least this many (a smaller project's rows are gathered quickly),
/// but not half of them or more: those are read as fast by a scan of the
/// window (a split of one project-day holds only one).
const MIN_PACKED_ROWS: usize = 1 << 14;

/// One chunk of a project's copy.
pub struct Chunk {
    pub function: Vec<Sym>,
    pub execution_time_ms: Vec<f64>,
    pub status_code: Vec<i32>,
}

impl Chunk {
    fn new() -> Chunk {
        Chunk {
            function: Vec::with_capacity(CHUNK_ROWS),
            execution_time_ms: Vec::with_capacity(CHUNK_ROWS),
            status_code: Vec::with_capacity(CHUNK_ROWS),
        }
    }

    fn len(&self) -> usize {
        self.function.len()
    }
}

/// A project's rows' columns, in the order of its `ProjectRows` list.
#[derive(Default)]
pub struct Packed {
    chunks: Vec<Chunk>,
    len: usize,
}

impl Packed {
    /// The chunks' slices holding entries `range` of the project's list, in order.
    pub fn runs(
        &self,
        range: std::ops::Range<usize>,
    ) -> impl Iterator<Item = (&[Sym], &[f64], &[i32])> + '_ {
        let last = range.end.div_ceil(CHUNK_ROWS).min(self.chunks.len());
        let first = (range.start / CHUNK_ROWS).min(last);
        let chunks = self.chunks.get(first..last).unwrap_or(&[]);
        chunks.iter().enumerate().map(move |(i, chunk)| {
            let base = (first + i) * CHUNK_ROWS;
            let from = range.start.saturating_sub(base).min(chunk.len());
            let to = (range.end - base).min(chunk.len());
            (
                chunk.function.get(from..to).unwrap_or(&[]),
                chunk.execution_time_ms.get(from..to).unwrap_or(&[]),
                chunk.status_code.get(from..to).unwrap_or(&[]),
            )
        })
    }

    fn truncate(&mut self, len: usize) {
        if len >= self.len {
            return;
        }
        let chunks = len.div_ceil(CHUNK_ROWS);
        self.chunks.truncate(chunks);
        if let Some(last) = self.chunks.last_mut() {
            let keep = len - (chunks - 1) * CHUNK_ROWS;
            last.function.truncate(keep);
            last.execution_time_ms.truncate(keep);
            last.status_code.truncate(keep);
        }
        self.len = len;
    }

    /// Chunks to add for the copy to hold `len` entries.
    fn chunks_for(&self, len: usize) -> usize {
        len.div_ceil(CHUNK_ROWS).saturating_sub(self.chunks.len())
    }

    fn push(&mut self, function: Sym, time: f64, status: i32) {
        if self.chunks.last().is_none_or(|c| c.len() == CHUNK_ROWS) {
            self.chunks.push(Chunk::new());
        }
        if let Some(chunk) = self.chunks.last_mut() {
            chunk.function.push(function);
            chunk.execution_time_ms.push(time);
            chunk.status_code.push(status);
            self.len += 1;
        }
    }

    fn heap_bytes(&self) -> usize {
        self.chunks.capacity() * std::mem::size_of::<Chunk>() + self.chunks.len() * CHUNK_BYTES
    }
}

/// The columns a copy is made from.
pub struct Source<'a> {
    pub rows: &'a ProjectRows,
    pub function: &'a Chunked<Sym>,
    pub execution_time_ms: &'a Chunked<f64>,
    pub status_code: &'a Chunked<i32>,
}

/// The packed copies of a table's busiest projects, by slot.
#[derive(Default)]
pub struct PackedRows {
    by_slot: Vec<Option<Packed>>,
    /// Table rows from this one on may have moved or be new since the copies
    /// were last brought up to date (`stale_from`, `sync`).
    stale_from: usize,
    /// A copy was dropped for want of room: the store is nearly full, and
    /// no copy is made again (it would be dropped again, and remade, at
    /// every append).
    out_of_room: bool,
}

impl PackedRows {
    /// `project`'s copy, when it has one and it is up to date with the
    /// table's `table_len` rows.
    pub fn of(&self, project: Sym, table_len: usize) -> Option<&Packed> {
        if self.is_stale(table_len) {
            return None;
        }
        self.by_slot.get(slot(project))?.as_ref()
    }

    /// Whether rows of the table's `table_len` are new or moved since the
    /// copies were last brought up to date (`sync`).
    pub(crate) fn is_stale(&self, table_len: usize) -> bool {
        self.stale_from < table_len
    }

    /// Notes that the table's rows from `row` on are new or were reordered.
    pub(crate) fn stale_from(&mut self, row: usize) {
        self.stale_from = self.stale_from.min(row);
    }

    /// Drops every copy, to make room for rows, and makes no more.
    pub(crate) fn give_way(&mut self) {
        self.by_slot = Vec::new();
        self.out_of_room = true;
    }

    pub(crate) fn heap_bytes(&self) -> usize {
        self.by_slot.capacity() * std::mem::size_of::<Option<Packed>>()
            + self
                .by_slot
                .iter()
                .flatten()
                .map(Packed::heap_bytes)
                .sum::<usize>()
    }

    /// Brings every copy up to date with the table (`rows` of `table_len`
    /// rows), and makes copies of projects that have come to hold their
    /// share, with at most `room` more bytes: a copy there is no room to
    /// extend is dropped (queries then gather that project's rows).
    pub(crate) fn sync(&mut self, source: &Source, table_len: usize, room: usize) {
        let mut room = room;
        let stale_from = std::mem::replace(&mut self.stale_from, table_len);
        let slots = source.rows.slot_count();
        if self.by_slot.len() < slots {
            let more = (slots - self.by_slot.len()) * std::mem::size_of::<Option<Packed>>();
            if more > room {
                // No room for the list: every copy goes, and none is made.
                *self = PackedRows {
                    by_slot: Vec::new(),
                    stale_from: table_len,
                    out_of_room: true,
                };
                return;
            }
            room -= more;
            self.by_slot.reserve_exact(slots - self.by_slot.len());
            self.by_slot.resize_with(slots, || None);
        }
        let threshold = (table_len / PACKED_SHARE).max(MIN_PACKED_ROWS);
        // Slot 0 holds the rows with no project, which no query asks for by themselves.
        for (index, packed) in self.by_slot.iter_mut().enumerate().skip(1) {
            let rows = source.rows.of((index - 1) as Sym);
            let packs = rows.len() >= threshold && rows.len() * 2 < table_len;
            // A copy is kept while its project stays near its share.
            let keeps = rows.len() * 2 >= threshold && rows.len() * 3 < table_len * 2;
            if packed.as_ref().is_some_and(|_| !keeps) {
                room = room.saturating_add(packed.as_ref().map_or(0, Packed::heap_bytes));
                *packed = None;
            }
            if packed.is_none() && (self.out_of_room || !packs) {
                continue;
            }
            let copy = packed.get_or_insert_with(Packed::default);
            // The entries of rows before `stale_from` are still right.
            let held = copy.heap_bytes();
            copy.truncate(rows.partition_point(|&r| (r as usize) < stale_from));
            room = room.saturating_add(held - copy.heap_bytes());
            let chunks = copy.chunks_for(rows.len());
            let more_slots = (copy.chunks.len() + chunks).saturating_sub(copy.chunks.capacity());
            let needed = chunks * CHUNK_BYTES + more_slots * std::mem::size_of::<Chunk>();
            if needed > room {
                room = room.saturating_add(copy.heap_bytes());
                *packed = None;
                self.out_of_room = true;
                continue;
            }
            room -= needed;
            copy.chunks.reserve_exact(chunks);
            for &row in rows.get(copy.len..).unwrap_or(&[]) {
                let row = row as usize;
                if let (Some(&function), Some(&time), Some(&status)) = (
                    source.function.get(row),
                    source.execution_time_ms.get(row),
                    source.status_code.get(row),
                ) {
                    copy.push(function, time, status);
                }
            }
        }
    }
}
