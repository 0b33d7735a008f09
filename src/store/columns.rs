//! Columns and the tables made of them. A table is declared once with
//! `table!`: each group of columns (the values a group's row gives each
//! column, and for names the part they point into), and its other parts. That
//! one list gives the struct, the append of a row, and each group's list of
//! columns, which reserving, permuting, sizing and the snapshot's writer,
//! reader and checks walk: a new column is one line of a table's declaration.
//! A group's columns are `Vec`s or, where they grow large, `Chunked`: chunks
//! of a fixed number of rows that never move as the column grows.

use std::ops::Range;

use super::codec::{Fixed, Reader, Writer};
use crate::error::{Error, Result};

/// Capacity a column grows to so that `additional` more fit: an eighth again,
/// or exactly what is needed. One rule for
/// growing and for predicting growth, so the memory budget is checked
/// against what the store will really hold. An eighth leaves about 6% of a
/// store spare on average, where half again left 25%, for copying each value
/// about eight times as its column grows: a memcpy, cheap beside parsing it.
pub(crate) fn grown(len: usize, capacity: usize, additional: usize) -> usize {
    let needed = len.saturating_add(additional);
    if needed <= capacity {
        capacity
    } else {
        needed.max(capacity + capacity / 8)
    }
}

/// Capacity a vector (or string) of capacity `capacity` may reach when it
/// grows to `needed` one push at a time by `grown`'s rule: at most an eighth
/// more than it held when it last grew.
pub(crate) fn capacity_bound(capacity: usize, needed: usize) -> usize {
    if needed <= capacity {
        capacity
    } else {
        capacity.max(needed + needed / 8 + 1)
    }
}

pub(crate) fn grow<T>(column: &mut Vec<T>, additional: usize) {
    let target = grown(column.len(), column.capacity(), additional);
    column.reserve_exact(target - column.len());
}

/// Bytes by which `column` grows for `additional` more values.
fn growth<T>(column: &Vec<T>, additional: usize) -> usize {
    (grown(column.len(), column.capacity(), additional) - column.capacity())
        * std::mem::size_of::<T>()
}

/// Values a reordering reads and writes by position: a slice, or a
/// `Chunked` column.
trait Positions<T: Copy> {
    fn value(&self, at: usize) -> Option<T>;
    fn set(&mut self, at: usize, value: T);
    fn count(&self) -> usize;
}

impl<T: Copy> Positions<T> for [T] {
    fn value(&self, at: usize) -> Option<T> {
        self.get(at).copied()
    }
    fn set(&mut self, at: usize, value: T) {
        if let Some(slot) = self.get_mut(at) {
            *slot = value;
        }
    }
    fn count(&self) -> usize {
        self.len()
    }
}

/// Reorders `column` from position `from` on, so that `from + k` holds what
/// was at `order[k]` (every `order[k]` is `from` or more), in place: the
/// capacity is kept, so the memory budget's prediction holds.
///
/// `merged_from`: `order` merges the rows before it, in their order, with
/// the rows from it on. Each old row then moves only back, so the column is
/// written from its end with the new rows' values alone copied aside (a
/// batch, not the column: a copy of a large column left a hole as large in
/// memory at each reordering batch). Otherwise the tail is copied.
fn permute<T: Copy, C: Positions<T> + ?Sized>(
    column: &mut C,
    from: usize,
    order: &[u32],
    merged_from: Option<usize>,
) {
    let aside_from = merged_from.unwrap_or(from).max(from);
    let aside: Vec<T> = (aside_from..column.count())
        .filter_map(|at| column.value(at))
        .collect();
    for (k, &i) in order.iter().enumerate().rev() {
        let i = i as usize;
        let value = match i.checked_sub(aside_from) {
            Some(at) => aside.get(at).copied(),
            None => column.value(i),
        };
        if let Some(value) = value {
            column.set(from + k, value);
        }
    }
}

/// Rows of a chunk of a `Chunked` column: a power of two, so that a row's
/// chunk is a shift and its place in it a mask.
pub(crate) const CHUNK_SHIFT: u32 = 16;
pub(crate) const CHUNK_ROWS: usize = 1 << CHUNK_SHIFT;
const CHUNK_MASK: usize = CHUNK_ROWS - 1;
/// Bytes of a `Vec` (or `String`) header held in a list (a column's chunks,
/// a project's rows, a text's pieces), counted as on a 64-bit host, so that a
/// store's size is the same natively and in wasm (12 there).
pub(crate) const VEC_BYTES: usize = 24;

/// Whether `piece` is sorted; not inlined, as a restore checks a piece at a
/// time (`PointsInto`).
#[inline(never)]
fn piece_is_sorted<T: PartialOrd>(piece: &[T]) -> bool {
    piece.is_sorted()
}

/// A column held in chunks of `CHUNK_ROWS` values, every chunk but the last
/// full. A large column then grows by a chunk, never by moving: wasm memory
/// never shrinks, and each move of a whole column left a hole as large as
/// the column that later columns were too large to fill. Filling a 52 MiB
/// store took 84–86 MiB of wasm memory with one `Vec` a column, and 69.8 MiB
/// with chunks (`docs/benchmarks.md`).
/// Every column of a table has the same chunk boundaries, so a range split
/// at them (`chunk_ranges`) is a slice of each.
pub struct Chunked<T> {
    chunks: Vec<Vec<T>>,
    len: usize,
}

impl<T> Default for Chunked<T> {
    fn default() -> Self {
        Chunked {
            chunks: Vec::new(),
            len: 0,
        }
    }
}

/// `range` cut where chunks begin: each piece lies in one chunk.
pub fn chunk_ranges(range: Range<usize>) -> impl Iterator<Item = Range<usize>> + Clone {
    let mut at = range.start;
    std::iter::from_fn(move || {
        (at < range.end).then(|| {
            let end = (at | CHUNK_MASK).saturating_add(1).min(range.end);
            let piece = at..end;
            at = end;
            piece
        })
    })
}

/// Ascending `rows` cut into runs that each lie in one chunk, with the
/// chunk's index: a gather reads each run from one chunk's slice (`chunk`)
/// at `row & CHUNK_MASK`, one bounds check a value as with a `Vec`, where
/// `get` costs two (measured: usage.api-counts daily for the largest
/// project, 1.2–1.5× slower through `get`).
pub fn runs_by_chunk(rows: &[u32]) -> impl Iterator<Item = (usize, &[u32])> {
    let mut rest = rows;
    std::iter::from_fn(move || {
        let chunk = (*rest.first()? as usize) >> CHUNK_SHIFT;
        let next_chunk = (chunk as u64 + 1) << CHUNK_SHIFT;
        let (run, after) = rest.split_at(rest.partition_point(|&r| u64::from(r) < next_chunk));
        rest = after;
        Some((chunk, run))
    })
}

/// Position of `row` in its chunk.
pub fn in_chunk(row: u32) -> usize {
    row as usize & CHUNK_MASK
}

impl<T: Copy> Chunked<T> {
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn get(&self, at: usize) -> Option<&T> {
        self.chunks.get(at >> CHUNK_SHIFT)?.get(at & CHUNK_MASK)
    }

    pub fn first(&self) -> Option<&T> {
        self.get(0)
    }

    pub fn last(&self) -> Option<&T> {
        self.get(self.len.checked_sub(1)?)
    }

    /// Chunk `index`'s values (none past the last).
    pub fn chunk(&self, index: usize) -> &[T] {
        self.chunks.get(index).map_or(&[], Vec::as_slice)
    }

    /// The values of `range`, when it lies in one chunk (`chunk_ranges`).
    pub fn piece(&self, range: Range<usize>) -> Option<&[T]> {
        let chunk = self.chunks.get(range.start >> CHUNK_SHIFT)?;
        let start = range.start & CHUNK_MASK;
        chunk.get(start..start.checked_add(range.len())?)
    }

    /// The chunks, in order: the whole column as slices.
    pub fn pieces(&self) -> impl Iterator<Item = &[T]> + Clone {
        self.chunks.iter().map(Vec::as_slice)
    }

    pub fn iter(&self) -> impl Iterator<Item = &T> + Clone {
        self.chunks.iter().flatten()
    }

    /// Appends `value` to the chunk that is not full (chunks `reserve_for`
    /// made may follow it, empty); where no room was reserved, a chunk grows
    /// as a `Vec` does.
    pub fn push(&mut self, value: T) {
        match self.chunks.get_mut(self.len >> CHUNK_SHIFT) {
            Some(chunk) => chunk.push(value),
            None => self.chunks.push(vec![value]),
        }
        self.len += 1;
    }

    /// Whether the values never fall, across chunks too.
    pub fn is_sorted(&self) -> bool
    where
        T: PartialOrd,
    {
        let joins_sorted = (CHUNK_ROWS..self.len)
            .step_by(CHUNK_ROWS)
            .all(|at| self.get(at - 1) <= self.get(at));
        joins_sorted && self.pieces().all(piece_is_sorted)
    }

    /// The first position whose value fails `holds` (values that hold come first).
    pub fn partition_point(&self, holds: impl Fn(&T) -> bool) -> usize {
        self.partition_point_in(0..self.len, holds)
    }

    /// `partition_point` among the positions of `range`.
    pub fn partition_point_in(&self, range: Range<usize>, holds: impl Fn(&T) -> bool) -> usize {
        let (mut low, mut high) = (range.start, range.end.min(self.len));
        while low < high {
            let middle = low + (high - low) / 2;
            if self.get(middle).is_some_and(&holds) {
                low = middle + 1;
            } else {
                high = middle;
            }
        }
        low
    }

    /// The values of `range`, in order.
    pub fn values(&self, range: Range<usize>) -> impl Iterator<Item = &T> + Clone {
        chunk_ranges(range.start..range.end.min(self.len))
            .flat_map(|piece| self.piece(piece).unwrap_or_default())
    }

    /// A column of `chunks`, which must be full but for the last (`None` if not).
    pub(crate) fn from_chunks(chunks: Vec<Vec<T>>) -> Option<Chunked<T>> {
        let full = chunks
            .split_last()
            .is_none_or(|(_, before)| before.iter().all(|c| c.len() == CHUNK_ROWS));
        let last_fits = chunks.last().is_none_or(|c| c.len() <= CHUNK_ROWS);
        let len = chunks.iter().map(Vec::len).sum();
        (full && last_fits).then_some(Chunked { chunks, len })
    }

    /// Index of the chunk the next value goes to (`push`).
    fn filling(&self) -> usize {
        self.len >> CHUNK_SHIFT
    }

    /// The room of each chunk from the one filling on once `additional` more
    /// values fit: that one grows by `grown`'s rule up to a chunk, and new
    /// chunks hold what is left. One plan for reserving and for predicting.
    fn planned(&self, additional: usize) -> impl Iterator<Item = usize> + '_ {
        let filling = self.chunks.get(self.filling());
        let (held, capacity) = filling.map_or((CHUNK_ROWS, 0), |c| (c.len(), c.capacity()));
        let into_filling = additional.min(CHUNK_ROWS.saturating_sub(held));
        let grown_room = filling.map(move |_| {
            grown(held, capacity, into_filling)
                .min(CHUNK_ROWS)
                .max(capacity)
        });
        let mut left = additional - into_filling;
        grown_room.into_iter().chain(std::iter::from_fn(move || {
            (left > 0).then(|| {
                let room = left.min(CHUNK_ROWS);
                left -= room;
                room
            })
        }))
    }

    /// Chunks `reserve_for(additional)` adds (at most).
    fn new_chunks(&self, additional: usize) -> usize {
        let filling = usize::from(self.chunks.get(self.filling()).is_some());
        self.planned(additional).count() - filling
    }

    fn capacity(&self) -> usize {
        self.chunks.iter().map(Vec::capacity).sum()
    }
}

/// For tests' edits; the store's code reads with `get`, which cannot panic.
#[cfg(test)]
impl<T: Copy> std::ops::Index<usize> for Chunked<T> {
    type Output = T;
    fn index(&self, at: usize) -> &T {
        self.get(at).expect("a position in the column")
    }
}

#[cfg(test)]
impl<T: Copy> std::ops::IndexMut<usize> for Chunked<T> {
    fn index_mut(&mut self, at: usize) -> &mut T {
        self.chunks
            .get_mut(at >> CHUNK_SHIFT)
            .and_then(|chunk| chunk.get_mut(at & CHUNK_MASK))
            .expect("a position in the column")
    }
}

impl<T: Copy> FromIterator<T> for Chunked<T> {
    fn from_iter<I: IntoIterator<Item = T>>(values: I) -> Self {
        let mut column = Chunked::default();
        for value in values {
            column.push(value);
        }
        column
    }
}

impl<T: Copy> Positions<T> for Chunked<T> {
    fn value(&self, at: usize) -> Option<T> {
        self.get(at).copied()
    }
    fn set(&mut self, at: usize, value: T) {
        if let Some(slot) = self
            .chunks
            .get_mut(at >> CHUNK_SHIFT)
            .and_then(|chunk| chunk.get_mut(at & CHUNK_MASK))
        {
            *slot = value;
        }
    }
    fn count(&self) -> usize {
        self.len
    }
}

/// What a table does with every column alike, whatever its element type.
pub(crate) trait Column {
    /// Grows the capacity so that `additional` more fit (by `grown`'s rule).
    fn reserve_for(&mut self, additional: usize);
    /// Bytes by which the column grows for `additional` more values.
    fn growth_for(&self, additional: usize) -> usize;
    fn heap_bytes(&self) -> usize;
    /// Reorders the column from position `from` on, so that `from + k` holds
    /// what was at `order[k]`.
    fn permute(&mut self, from: usize, order: &[u32], merged_from: Option<usize>);
    fn len(&self) -> usize;
}

impl<T: Copy> Column for Vec<T> {
    fn reserve_for(&mut self, additional: usize) {
        grow(self, additional);
    }

    fn growth_for(&self, additional: usize) -> usize {
        growth(self, additional)
    }

    fn heap_bytes(&self) -> usize {
        self.capacity() * std::mem::size_of::<T>()
    }

    fn permute(&mut self, from: usize, order: &[u32], merged_from: Option<usize>) {
        permute(self.as_mut_slice(), from, order, merged_from);
    }

    fn len(&self) -> usize {
        Vec::len(self)
    }
}

impl<T: Copy> Column for Chunked<T> {
    fn reserve_for(&mut self, additional: usize) {
        let first = self.filling();
        let plan: Vec<usize> = self.planned(additional).collect();
        let target = grown(
            self.chunks.len(),
            self.chunks.capacity(),
            self.new_chunks(additional),
        );
        self.chunks.reserve_exact(target - self.chunks.len());
        for (k, room) in plan.into_iter().enumerate() {
            match self.chunks.get_mut(first + k) {
                Some(chunk) => chunk.reserve_exact(room.saturating_sub(chunk.len())),
                None => self.chunks.push(Vec::with_capacity(room)),
            }
        }
    }

    fn growth_for(&self, additional: usize) -> usize {
        let filling = self.chunks.get(self.filling()).map_or(0, Vec::capacity);
        let planned: usize = self.planned(additional).sum();
        let list = self.chunks.capacity();
        let grown_list = grown(self.chunks.len(), list, self.new_chunks(additional));
        (planned - filling) * std::mem::size_of::<T>() + (grown_list - list) * VEC_BYTES
    }

    fn heap_bytes(&self) -> usize {
        self.capacity() * std::mem::size_of::<T>() + self.chunks.capacity() * VEC_BYTES
    }

    fn permute(&mut self, from: usize, order: &[u32], merged_from: Option<usize>) {
        permute(self, from, order, merged_from);
    }

    fn len(&self) -> usize {
        self.len
    }
}

/// What a table's declaration needs of a column of `T`, whichever way it is
/// held (`Vec`, or `Chunked` where a column grows large).
pub(crate) trait ColumnOf<T: Fixed>: Column + Default + Sized {
    fn write_to(&self, w: &mut Writer);
    fn read_from(r: &mut Reader, what: &str) -> Result<Self>;
    /// Whether `holds` holds for every piece of the column.
    fn all_pieces(&self, holds: impl Fn(&[T]) -> bool) -> bool;
}

impl<T: Fixed> ColumnOf<T> for Vec<T> {
    fn write_to(&self, w: &mut Writer) {
        w.column(self);
    }
    fn read_from(r: &mut Reader, what: &str) -> Result<Self> {
        r.column(what)
    }
    fn all_pieces(&self, holds: impl Fn(&[T]) -> bool) -> bool {
        holds(self)
    }
}

impl<T: Fixed> ColumnOf<T> for Chunked<T> {
    fn write_to(&self, w: &mut Writer) {
        w.column_of_pieces(self.len, self.pieces());
    }
    fn read_from(r: &mut Reader, what: &str) -> Result<Self> {
        let chunks = r.column_in_chunks(what, CHUNK_ROWS)?;
        Chunked::from_chunks(chunks).ok_or_else(|| Error::InvalidSnapshot {
            reason: format!("{what}: uneven chunks"),
        })
    }
    fn all_pieces(&self, holds: impl Fn(&[T]) -> bool) -> bool {
        self.pieces().all(holds)
    }
}

/// Sum of `f` over `columns`.
pub(crate) fn sum_columns(columns: Vec<&dyn Column>, f: impl Fn(&dyn Column) -> usize) -> usize {
    columns.into_iter().map(f).sum()
}

/// Whether every value of a column points into `part` (an id into its
/// interner, a span into its text); checked as a fold without branches,
/// since a snapshot is almost always valid, and a piece at a time in a
/// function that is not inlined: a wasm engine (V8) runs a function with its
/// optimised code only from its next call after it has run a while, so a
/// restore's loop over every row in one call ran all in baseline code.
pub(crate) trait PointsInto<Part> {
    fn all_point_into(values: &[Self], part: &Part) -> bool
    where
        Self: Sized;
}

/// Declares a table: `group` blocks list columns with the value a row of
/// that group gives each (`$t` is the table, `$row` the staged row) and, with
/// `[part]`, the part its values point into; `parts` lists the table's
/// other fields, declared as they are.
macro_rules! table {
    (
        $(#[$meta:meta])*
        pub struct $table:ident {
            $(
                group $list:ident, $list_mut:ident, $holder:ident,
                    fn $push:ident($t:ident, $row:ident: &$staged:ty $(, $arg:ident: $argty:ty)*) {
                    $( $(#[$cmeta:meta])* $col:ident: $ty:ty $([$part:ident])? = $value:expr; )+
                }
            )+
            parts {
                $( $(#[$fmeta:meta])* $field:ident: $fty:ty, )*
            }
        }
    ) => {
        $(#[$meta])*
        #[derive(Default)]
        pub struct $table {
            $( $( $(#[$cmeta])* pub $col: $holder<$ty>, )+ )+
            $( $(#[$fmeta])* pub $field: $fty, )*
        }

        impl $table {
            $(
                fn $list(&self) -> Vec<&dyn $crate::store::columns::Column> {
                    vec![$(&self.$col),+]
                }

                fn $list_mut(&mut self) -> Vec<&mut dyn $crate::store::columns::Column> {
                    vec![$(&mut self.$col),+]
                }

                /// Appends one row of the group.
                fn $push($t: &mut Self, $row: &$staged $(, $arg: $argty)*) {
                    $(
                        let value = $value;
                        $t.$col.push(value);
                    )+
                }
            )+

            /// Writes every column, group by group, in declaration order.
            pub(crate) fn write_columns(&self, w: &mut $crate::store::codec::Writer) {
                use $crate::store::columns::ColumnOf;
                $( $( self.$col.write_to(w); )+ )+
            }

            /// Reads what `write_columns` wrote; the other parts are left empty.
            pub(crate) fn read_columns(
                r: &mut $crate::store::codec::Reader,
            ) -> $crate::error::Result<Self> {
                use $crate::store::columns::ColumnOf;
                Ok($table {
                    $( $(
                        $col: <$holder<$ty> as ColumnOf<$ty>>::read_from(
                            r,
                            concat!(stringify!($table), " column ", stringify!($col)),
                        )?,
                    )+ )+
                    ..Default::default()
                })
            }

            /// Whether each group's columns have one length and every value
            /// points into its part; what is wrong, if not.
            pub(crate) fn check_columns(&self) -> std::result::Result<(), String> {
                use $crate::store::columns::{ColumnOf, PointsInto};
                $(
                    let columns = self.$list();
                    let first = columns.first().map_or(0, |c| c.len());
                    if columns.iter().any(|c| c.len() != first) {
                        return Err(format!("{} of different lengths", stringify!($list)));
                    }
                    $( $(
                        let points_into =
                            |piece: &[$ty]| <$ty as PointsInto<_>>::all_point_into(piece, &self.$part);
                        if !self.$col.all_pieces(points_into) {
                            return Err(format!(
                                "{} points outside its {}",
                                stringify!($col),
                                stringify!($part)
                            ));
                        }
                    )? )+
                )+
                Ok(())
            }
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_permutation_puts_each_value_where_the_order_says_merged_or_not() {
        let mut seed = 0x9E37_79B9_7F4A_7C15u64;
        for len in [0usize, 1, 2, 3, 63, 64, 65, 1000] {
            for from in [0, len / 3, len] {
                let column: Vec<u64> = (0..len as u64).map(|v| v * 10).collect();
                let mut order: Vec<u32> = (from as u32..len as u32).collect();
                for i in (1..order.len()).rev() {
                    let pick = crate::test_rng::xorshift(&mut seed) % (i as u64 + 1);
                    order.swap(i, pick as usize);
                }
                // `order` applied to the column, as `permute` should leave it.
                let check = |order: &[u32], merged_from: Option<usize>| {
                    let expected: Vec<u64> = column[..from]
                        .iter()
                        .copied()
                        .chain(order.iter().map(|&i| column[i as usize]))
                        .collect();
                    let mut permuted = column.clone();
                    permute(permuted.as_mut_slice(), from, order, merged_from);
                    assert_eq!(permuted, expected, "len {len} from {from}, {merged_from:?}");
                };
                check(&order, None);
                // As a merge: the old rows (before `first_new`) in their order.
                let first_new = from + (len - from) / 2;
                let (mut old, mut new): (Vec<u32>, Vec<u32>) =
                    order.iter().partition(|&&i| (i as usize) < first_new);
                old.sort_unstable();
                let merged: Vec<u32> = order
                    .iter()
                    .map(|&i| match (i as usize) < first_new {
                        true => old.remove(0),
                        false => new.remove(0),
                    })
                    .collect();
                check(&merged, Some(first_new));
            }
        }
    }

    /// A column past two chunk boundaries, batch by batch as a table grows.
    fn grown_in_batches(len: u64, batch: usize) -> Chunked<u64> {
        let mut column = Chunked::default();
        let mut next = 0;
        while next < len {
            let n = batch.min((len - next) as usize);
            let predicted = column.heap_bytes() + column.growth_for(n);
            column.reserve_for(n);
            assert_eq!(column.heap_bytes(), predicted, "growth for {n} at {next}");
            for _ in 0..n {
                column.push(next * 3);
                next += 1;
            }
            assert_eq!(
                column.heap_bytes(),
                predicted,
                "no growth past the reserved room"
            );
        }
        column
    }

    #[test]
    fn a_chunked_column_reads_across_chunks_as_a_vec_does() {
        let len = 2 * CHUNK_ROWS as u64 + 7;
        let column = grown_in_batches(len, 3_000);
        let values: Vec<u64> = (0..len).map(|v| v * 3).collect();
        assert_eq!(column.len(), values.len());
        assert_eq!(column.iter().copied().collect::<Vec<_>>(), values);
        assert_eq!(
            (column.first(), column.last()),
            (values.first(), values.last())
        );
        assert!(column.is_sorted());
        for at in [
            0,
            1,
            CHUNK_ROWS - 1,
            CHUNK_ROWS,
            CHUNK_ROWS + 1,
            2 * CHUNK_ROWS + 6,
        ] {
            assert_eq!(column.get(at), values.get(at), "get {at}");
            let limit = values[at];
            assert_eq!(column.partition_point(|&v| v < limit), at, "partition {at}");
            assert_eq!(
                column.partition_point_in(at / 2..at + 3, |&v| v < limit),
                at
            );
        }
        assert_eq!(column.get(values.len()), None);
        let range = CHUNK_ROWS - 5..2 * CHUNK_ROWS + 2;
        let pieces: Vec<Range<usize>> = chunk_ranges(range.clone()).collect();
        assert_eq!(
            pieces,
            [
                CHUNK_ROWS - 5..CHUNK_ROWS,
                CHUNK_ROWS..2 * CHUNK_ROWS,
                2 * CHUNK_ROWS..2 * CHUNK_ROWS + 2
            ]
        );
        let joined: Vec<u64> = pieces
            .into_iter()
            .flat_map(|piece| column.piece(piece).unwrap().to_vec())
            .collect();
        assert_eq!(joined, values[range.clone()]);
        assert_eq!(
            column.values(range.clone()).copied().collect::<Vec<_>>(),
            values[range]
        );
        assert_eq!(column.piece(CHUNK_ROWS - 1..CHUNK_ROWS + 1), None);

        let mut bytes = Writer::new(Vec::new());
        column.write_to(&mut bytes);
        let bytes = bytes.finish();
        let mut plain = Writer::new(Vec::new());
        plain.column(&values);
        assert_eq!(bytes, plain.finish(), "written as one slice is");
        let mut source = super::super::codec::Bytes(&bytes);
        let read = Chunked::<u64>::read_from(&mut Reader::new(&mut source), "column").unwrap();
        assert_eq!(read.iter().copied().collect::<Vec<_>>(), values);
        assert_eq!(read.get(CHUNK_ROWS), values.get(CHUNK_ROWS));

        // Times three apart, narrowed to a byte a step, read back across chunks.
        let times: Chunked<i64> = values
            .iter()
            .map(|&v| 1_763_600_000_000_000 + v as i64)
            .collect();
        let mut bytes = Writer::new(Vec::new());
        times.write_to(&mut bytes);
        let bytes = bytes.finish();
        assert_eq!((bytes[8], bytes.len()), (1, 9 + 8 + values.len()));
        let mut source = super::super::codec::Bytes(&bytes);
        let read = Chunked::<i64>::read_from(&mut Reader::new(&mut source), "times").unwrap();
        assert!(read.iter().eq(times.iter()));
    }

    #[test]
    fn a_chunked_column_permutes_across_chunks() {
        let len = 2 * CHUNK_ROWS + 7;
        let values: Vec<u64> = (0..len as u64).collect();
        for from in [0, CHUNK_ROWS - 3, 2 * CHUNK_ROWS] {
            // The tail reversed, and as a merge of two halves interleaved.
            let reversed: Vec<u32> = (from as u32..len as u32).rev().collect();
            let first_new = from + (len - from) / 2;
            let merged: Vec<u32> = (from as u32..first_new as u32)
                .zip(first_new as u32..len as u32)
                .flat_map(|(old, new)| [new, old])
                .chain((first_new + (first_new - from)) as u32..len as u32)
                .collect();
            for (order, merged_from) in [(reversed, None), (merged, Some(first_new))] {
                let mut column: Chunked<u64> = values.iter().copied().collect();
                let mut expected = values.clone();
                permute(expected.as_mut_slice(), from, &order, merged_from);
                Column::permute(&mut column, from, &order, merged_from);
                assert!(
                    column.iter().eq(expected.iter()),
                    "from {from}, {merged_from:?}"
                );
            }
        }
    }
}
