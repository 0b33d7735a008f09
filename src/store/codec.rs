//! Columns as bytes and back (little-endian): a column is its count and its
//! values, a text its length and its UTF-8. What `table!` generates the
//! snapshot's column writer and reader from; the snapshot (`crate::snapshot`)
//! adds the header and the checksum. A writer may hand its bytes on in parts
//! as they fill (`Writer::spilling`), and a reader take them from parts as
//! they arrive (`Source`), so a large store is neither written nor read whole.

use std::borrow::Cow;

use crate::error::{Error, Result};

use super::Span;

fn invalid(reason: impl Into<String>) -> Error {
    Error::InvalidSnapshot {
        reason: reason.into(),
    }
}

/// A value of fixed width in a column, written little-endian.
pub trait Fixed: Sized + Copy {
    const WIDTH: usize;
    const ZERO: Self;
    fn put(self, out: &mut Vec<u8>);
    fn take(bytes: &[u8]) -> Option<Self>;

    /// `put` of each of `values`, in order.
    fn put_all(values: &[Self], out: &mut Vec<u8>) {
        for &v in values {
            v.put(out);
        }
    }

    /// Appends the values `bytes` holds (`take` of each `WIDTH` bytes; a
    /// shorter rest is not read).
    fn extend_from(values: &mut Vec<Self>, bytes: &[u8]) {
        values.extend(
            bytes
                .chunks_exact(Self::WIDTH)
                .map(|chunk| Self::take(chunk).unwrap_or(Self::ZERO)),
        );
    }
}

macro_rules! fixed_number {
    ($($t:ty),+) => {$(
        impl Fixed for $t {
            const WIDTH: usize = std::mem::size_of::<$t>();
            const ZERO: Self = 0 as $t;
            fn put(self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_le_bytes());
            }
            fn take(bytes: &[u8]) -> Option<Self> {
                bytes.try_into().ok().map(<$t>::from_le_bytes)
            }
            #[cfg(target_endian = "little")]
            fn put_all(values: &[Self], out: &mut Vec<u8>) {
                out.extend_from_slice(bytemuck::cast_slice(values));
            }
            #[cfg(target_endian = "little")]
            fn extend_from(values: &mut Vec<Self>, bytes: &[u8]) {
                let whole = bytes.get(..bytes.len() / Self::WIDTH * Self::WIDTH).unwrap_or_default();
                let from = values.len();
                values.resize(from + whole.len() / Self::WIDTH, Self::ZERO);
                if let Some(added) = values.get_mut(from..) {
                    bytemuck::cast_slice_mut::<Self, u8>(added).copy_from_slice(whole);
                }
            }
        }
    )+};
}
// In memory as in the snapshot on a little-endian host (wasm32, x86-64, ARM):
// a column is read and written as one copy of its bytes, where a loop over
// its values ran, on a cold restore, in a wasm engine's baseline code.
fixed_number!(u8, u32, i32, u64, i64, f64);

impl Fixed for (u32, u32) {
    const WIDTH: usize = 8;
    const ZERO: Self = (0, 0);
    fn put(self, out: &mut Vec<u8>) {
        self.0.put(out);
        self.1.put(out);
    }
    fn take(bytes: &[u8]) -> Option<Self> {
        let (a, b) = bytes.split_at_checked(4)?;
        Some((u32::take(a)?, u32::take(b)?))
    }
}

impl Fixed for Span {
    const WIDTH: usize = 8;
    const ZERO: Self = Span::NULL;
    fn put(self, out: &mut Vec<u8>) {
        self.to_parts().put(out);
    }
    fn take(bytes: &[u8]) -> Option<Self> {
        <(u32, u32)>::take(bytes).map(|(block, at)| Span::from_parts(block, at))
    }
}

/// Bytes a writer gathers before it hands a whole part on, and a reader's
/// largest step through a column: a large column or text is written and read
/// a piece at a time.
const STEP_BYTES: usize = 32 << 10;

/// Bytes being written: columns and texts one after another. A spilling
/// writer hands them on in parts as they fill (`Writer::spilling`), so a
/// large store is written without a copy of it whole in memory.
pub struct Writer<'s> {
    out: Vec<u8>,
    spill: Option<Spill<'s>>,
}

/// Where a spilling writer hands its parts, and their size.
type Spill<'s> = (usize, &'s mut dyn FnMut(&[u8]));

impl<'s> Writer<'s> {
    /// A writer that keeps every byte in `out`, after what it holds.
    pub fn new(out: Vec<u8>) -> Writer<'static> {
        Writer { out, spill: None }
    }

    /// A writer that hands `to` each whole part of `part_bytes` (counted
    /// from the start of `out`) as soon as it is written; `out` keeps the rest.
    pub fn spilling(
        mut out: Vec<u8>,
        part_bytes: usize,
        to: &'s mut dyn FnMut(&[u8]),
    ) -> Writer<'s> {
        // A part and the steps that fill it past its end: `out` never grows
        // (doubling would hold twice a part for a moment).
        let room = part_bytes.saturating_add(2 * STEP_BYTES);
        out.reserve_exact(room.saturating_sub(out.len()));
        Writer {
            out,
            spill: Some((part_bytes.max(1), to)),
        }
    }

    /// What is left after the last whole part (a writer that does not spill: everything).
    pub fn finish(mut self) -> Vec<u8> {
        self.spill();
        self.out
    }

    fn spill(&mut self) {
        let Some((part_bytes, to)) = self.spill.as_mut() else {
            return;
        };
        let whole = self.out.len() / *part_bytes * *part_bytes;
        if whole == 0 {
            return;
        }
        for part in self
            .out
            .get(..whole)
            .unwrap_or_default()
            .chunks(*part_bytes)
        {
            to(part);
        }
        self.out.drain(..whole);
    }

    pub fn column<T: Fixed>(&mut self, values: &[T]) {
        self.column_of_pieces(values.len(), [values]);
    }

    /// A column of `len` values held in `pieces`, one after another: written
    /// as `column` writes one slice of them.
    pub fn column_of_pieces<'v, T: Fixed + 'v>(
        &mut self,
        len: usize,
        pieces: impl IntoIterator<Item = &'v [T]>,
    ) {
        (len as u64).put(&mut self.out);
        self.spill();
        let per_step = (STEP_BYTES / T::WIDTH).max(1);
        for step in pieces.into_iter().flat_map(|piece| piece.chunks(per_step)) {
            self.out.reserve(step.len() * T::WIDTH);
            T::put_all(step, &mut self.out);
            self.spill();
        }
    }

    fn bytes(&mut self, bytes: &[u8]) {
        self.bytes_of_pieces(bytes.len(), [bytes]);
    }

    /// Bytes of `len` in all, held in `pieces` one after another.
    fn bytes_of_pieces<'b>(&mut self, len: usize, pieces: impl IntoIterator<Item = &'b [u8]>) {
        (len as u64).put(&mut self.out);
        self.spill();
        for step in pieces
            .into_iter()
            .flat_map(|piece| piece.chunks(STEP_BYTES))
        {
            self.out.extend_from_slice(step);
            self.spill();
        }
    }

    /// A list of one text, of `len` bytes held in `pieces` (`Reader::texts`).
    pub fn text_of_pieces<'t>(&mut self, len: usize, pieces: impl IntoIterator<Item = &'t str>) {
        1u64.put(&mut self.out);
        self.bytes_of_pieces(len, pieces.into_iter().map(str::as_bytes));
    }

    /// Byte strings, as `text_of_pieces` writes a text.
    pub fn blobs(&mut self, blobs: &[&[u8]]) {
        (blobs.len() as u64).put(&mut self.out);
        self.spill();
        for blob in blobs {
            self.bytes(blob);
        }
    }
}

/// Where a reader's bytes come from: one slice (`Bytes`), or parts that
/// arrive one after another (`crate::snapshot::Parts`).
pub trait Source {
    /// Bytes not read yet.
    fn left(&self) -> usize;

    /// The next `n` bytes (at most `left`): borrowed where they lie in one
    /// piece, joined into a vector of their own where they straddle parts;
    /// `None` when they are not there.
    fn next(&mut self, n: usize) -> Option<Cow<'_, [u8]>>;
}

/// Bytes held whole.
pub struct Bytes<'a>(pub &'a [u8]);

impl Source for Bytes<'_> {
    fn left(&self) -> usize {
        self.0.len()
    }

    fn next(&mut self, n: usize) -> Option<Cow<'_, [u8]>> {
        let (head, rest) = self.0.split_at_checked(n)?;
        self.0 = rest;
        Some(Cow::Borrowed(head))
    }
}

/// Bytes being read, each value checked: anything that does not read back is
/// an `invalid_snapshot` error naming `what` it was reading. Nothing is
/// allocated for a count before it is checked against the bytes left.
pub struct Reader<'a> {
    source: &'a mut dyn Source,
}

impl<'a> Reader<'a> {
    pub fn new(source: &'a mut dyn Source) -> Reader<'a> {
        Reader { source }
    }

    /// Bytes not read yet.
    pub fn left(&self) -> usize {
        self.source.left()
    }

    fn next(&mut self, n: usize, what: &str) -> Result<Cow<'_, [u8]>> {
        self.source
            .next(n)
            .ok_or_else(|| invalid(format!("it ends inside {what}")))
    }

    /// The next `N` bytes as they are (a header's fields).
    pub fn raw<const N: usize>(&mut self, what: &str) -> Result<[u8; N]> {
        let bytes = self.next(N, what)?;
        Ok((*bytes).try_into().unwrap_or([0; N]))
    }

    /// A count of values of at least `width` bytes each: never more than the
    /// bytes left hold.
    fn count(&mut self, width: usize, what: &str) -> Result<usize> {
        let n = u64::from_le_bytes(self.raw(what)?);
        usize::try_from(n)
            .ok()
            .filter(|&n| {
                n.checked_mul(width)
                    .is_some_and(|bytes| bytes <= self.left())
            })
            .ok_or_else(|| {
                invalid(format!(
                    "{what} claims {n} values, more than the bytes left"
                ))
            })
    }

    /// Room for `n` values, or `invalid_snapshot` (not a trap) when memory
    /// has none: a damaged count is only found out later, by the checksum.
    fn room<T>(n: usize, what: &str) -> Result<Vec<T>> {
        let mut values = Vec::new();
        values
            .try_reserve_exact(n)
            .map_err(|_| invalid(format!("{what} claims more values than memory holds")))?;
        Ok(values)
    }

    pub fn column<T: Fixed>(&mut self, what: &str) -> Result<Vec<T>> {
        let n = self.count(T::WIDTH, what)?;
        let mut values = Self::room(n, what)?;
        self.values_into(&mut values, n, what)?;
        Ok(values)
    }

    /// What `column_of_pieces` wrote, in chunks of `chunk_len` values (the
    /// last may be shorter), each given exactly its room.
    pub fn column_in_chunks<T: Fixed>(
        &mut self,
        what: &str,
        chunk_len: usize,
    ) -> Result<Vec<Vec<T>>> {
        let chunk_len = chunk_len.max(1);
        let n = self.count(T::WIDTH, what)?;
        let mut chunks = Self::room(n.div_ceil(chunk_len), what)?;
        let mut read = 0;
        while read < n {
            let len = (n - read).min(chunk_len);
            let mut chunk = Self::room(len, what)?;
            self.values_into(&mut chunk, len, what)?;
            chunks.push(chunk);
            read += len;
        }
        Ok(chunks)
    }

    /// Reads `n` values onto `values`.
    fn values_into<T: Fixed>(&mut self, values: &mut Vec<T>, n: usize, what: &str) -> Result<()> {
        let target = values.len() + n;
        // A step at a time: a source in parts never joins a large column.
        // Every chunk has the width `take` reads.
        let per_step = (STEP_BYTES / T::WIDTH).max(1);
        while values.len() < target {
            let step = (target - values.len()).min(per_step);
            let bytes = self.next(step * T::WIDTH, what)?;
            T::extend_from(values, &bytes);
        }
        Ok(())
    }

    /// What `blobs` wrote.
    pub fn blobs(&mut self, what: &str) -> Result<Vec<Box<[u8]>>> {
        // Each blob has its length before it.
        let n = self.count(8, what)?;
        let mut blobs = Self::room(n, what)?;
        for _ in 0..n {
            let len = self.count(1, what)?;
            blobs.push(match self.next(len, what)? {
                Cow::Borrowed(bytes) => Box::from(bytes),
                Cow::Owned(bytes) => bytes.into_boxed_slice(),
            });
        }
        Ok(blobs)
    }

    pub fn texts(&mut self, what: &str) -> Result<Vec<String>> {
        let n = self.count(8, what)?;
        let mut texts = Self::room(n, what)?;
        let not_utf8 = || invalid(format!("{what} holds text that is not UTF-8"));
        for _ in 0..n {
            let len = self.count(1, what)?;
            let text = match self.next(len, what)? {
                Cow::Borrowed(bytes) => simdutf8::basic::from_utf8(bytes)
                    .map_err(|_| not_utf8())?
                    .to_owned(),
                // Joined from parts: it becomes the string, not copied again.
                Cow::Owned(bytes) => String::from_utf8(bytes).map_err(|_| not_utf8())?,
            };
            texts.push(text);
        }
        Ok(texts)
    }
}
