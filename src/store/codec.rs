//! Columns as bytes and back (little-endian): a column is its count, its
//! values' width and its values (narrowed where they fit fewer bytes), a
//! text its length and its UTF-8. What `table!` generates the
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

    /// Whether a column of these values is written narrowed when its codes
    /// fit fewer bytes than `WIDTH` (`Writer::column_of_pieces` says how). A
    /// type that narrows gives its own `code` and `decode`.
    const NARROWS: bool = false;

    /// Whether a value's `code` is its step from the value before it: a
    /// narrowed column then begins with its first value as it is.
    const STEPS: bool = false;

    /// The value as a narrowed column writes it (small for the values a
    /// store holds), given the value before it (the column's first value
    /// for the first).
    fn code(self, _before: Self) -> u64 {
        0
    }

    /// The value whose `code` after `before` is `code`.
    fn decode(_code: u64, before: Self) -> Self {
        before
    }

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
    ($($t:ty $({ $($narrowing:tt)* })?),+ $(,)?) => {$(
        impl Fixed for $t {
            $($($narrowing)*)?
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
// a column written as it is is read and written as one copy of its bytes,
// where a loop over its values ran, on a cold restore, in a wasm engine's
// baseline code. Ids (projects, functions, URLs) and status codes are far
// below u32::MAX, times in time order differ by far less than an i64 holds,
// and execution times are whole thousandths that fit a few bytes: written
// in the bytes their largest value or step needs (`Writer::column_of_pieces`), a full object's
// snapshot is about two fifths smaller, and a cold start reads it from
// storage that much sooner.
fixed_number!(
    u8,
    u32 {
        // One more than itself: no id (`NONE`, u32::MAX) is 0.
        const NARROWS: bool = true;
        fn code(self, _before: Self) -> u64 {
            u64::from(self.wrapping_add(1))
        }
        fn decode(code: u64, _before: Self) -> Self {
            (code as u32).wrapping_sub(1)
        }
    },
    i32 {
        // Rotated a bit left: a status code is twice itself, and the null
        // status (`i32::MIN`) is 1.
        const NARROWS: bool = true;
        fn code(self, _before: Self) -> u64 {
            u64::from((self as u32).rotate_left(1))
        }
        fn decode(code: u64, _before: Self) -> Self {
            (code as u32).rotate_right(1) as i32
        }
    },
    u64,
    i64 {
        const NARROWS: bool = true;
        const STEPS: bool = true;
        fn code(self, before: Self) -> u64 {
            self.wrapping_sub(before) as u64
        }
        fn decode(code: u64, before: Self) -> Self {
            before.wrapping_add(code as i64)
        }
    },
    f64 {
        // Execution times are whole thousandths of a millisecond (41, 67.8):
        // written as `thousandths` they take 3 or 4 bytes, not 8, and a full
        // object's snapshot is a tenth smaller (`docs/benchmarks.md`).
        const NARROWS: bool = true;
        fn code(self, _before: Self) -> u64 {
            thousandths(self)
        }
        fn decode(code: u64, _before: Self) -> Self {
            match code {
                0 => f64::NAN,
                // Below 2^53 as `thousandths` writes it: exact as an f64.
                n => (n - 1) as i64 as f64 / 1000.0,
            }
        }
    },
);

/// One more than the thousandths `value` is exactly (the nearest double to
/// that many thousandths is `value`, bit for bit), 0 for the NaN the store
/// holds for no value, and `u64::MAX` for any other value (negative, -0,
/// finer than a thousandth, past 2^53 thousandths): a column holding one is
/// written as it is.
fn thousandths(value: f64) -> u64 {
    const MOST: f64 = (1u64 << 53) as f64;
    if value.to_bits() == f64::NAN.to_bits() {
        return 0;
    }
    let scaled = (value * 1000.0).round();
    if !(0.0..MOST).contains(&scaled) {
        return u64::MAX;
    }
    let n = scaled as u64;
    match (n as f64 / 1000.0).to_bits() == value.to_bits() {
        true => n + 1,
        false => u64::MAX,
    }
}

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
    // One more than its block in the high word (the null span's is 0): a
    // store of fewer than 65,535 blocks writes 6 bytes a span.
    const NARROWS: bool = true;
    fn code(self, _before: Self) -> u64 {
        let (block, at) = self.to_parts();
        u64::from(block.wrapping_add(1)) << 32 | u64::from(at)
    }
    fn decode(code: u64, _before: Self) -> Self {
        Span::from_parts(((code >> 32) as u32).wrapping_sub(1), code as u32)
    }
}

/// The first of the values `pieces` hold.
fn first_of<'v, T: Fixed + 'v>(pieces: impl IntoIterator<Item = &'v [T]>) -> Option<T> {
    pieces.into_iter().find_map(|piece| piece.first().copied())
}

/// Bytes each value of a column of `pieces` is written in: the fewest that
/// hold every value's `code`, or `WIDTH` (the values as they are) when that
/// saves nothing, the first value a stepped column begins with included.
fn narrowed_width<'v, T: Fixed + 'v>(pieces: impl IntoIterator<Item = &'v [T]> + Clone) -> usize {
    let first = match T::NARROWS {
        true => first_of(pieces.clone()),
        false => None,
    };
    let Some(mut before) = first else {
        return T::WIDTH;
    };
    let (mut bits, mut count) = (0u64, 0usize);
    for piece in pieces {
        bits |= codes_or(piece, &mut before);
        count += piece.len();
    }
    let width = (u64::BITS - bits.leading_zeros()).div_ceil(8).max(1) as usize;
    let head = if T::STEPS { T::WIDTH } else { 0 };
    match head + count * width < count * T::WIDTH {
        true => width,
        false => T::WIDTH,
    }
}

/// Every value's `code` in `piece`, or-ed (`before` is the value before it, and
/// becomes its last): a piece at a time, in a function of its own, for the
/// engine's optimised code (`columns::PointsInto` says why).
#[inline(never)]
fn codes_or<T: Fixed>(piece: &[T], before: &mut T) -> u64 {
    let mut bits = 0;
    for &value in piece {
        bits |= value.code(*before);
        *before = value;
    }
    bits
}

/// Appends the low `W` bytes of each value's `code` (`before` as in `codes_or`).
#[inline(never)]
fn encode_into<T: Fixed, const W: usize>(values: &[T], out: &mut Vec<u8>, before: &mut T) {
    let from = out.len();
    out.resize(from + values.len() * W, 0);
    let room = out.get_mut(from..).unwrap_or_default();
    for (value, bytes) in values.iter().zip(room.chunks_exact_mut(W)) {
        bytes.copy_from_slice(
            value
                .code(*before)
                .to_le_bytes()
                .get(..W)
                .unwrap_or_default(),
        );
        *before = *value;
    }
}

/// Appends the values whose codes `bytes` holds, `W` bytes each (`before`
/// as in `codes_or`).
#[inline(never)]
fn decode_into<T: Fixed, const W: usize>(values: &mut Vec<T>, bytes: &[u8], before: &mut T) {
    values.extend(bytes.chunks_exact(W).map(|chunk| {
        let mut code = [0u8; 8];
        if let Some(low) = code.get_mut(..W) {
            low.copy_from_slice(chunk);
        }
        let value = T::decode(u64::from_le_bytes(code), *before);
        *before = value;
        value
    }));
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
    ///
    /// A column is its count, the bytes each value takes (`WIDTH`: the
    /// values as they are), then its values. In a narrowed one (fewer bytes,
    /// where `Fixed::NARROWS`) each value is the low bytes of its `code`
    /// after the value before it; a stepped one (`Fixed::STEPS`) begins with
    /// its first value as it is.
    pub fn column_of_pieces<'v, T: Fixed + 'v>(
        &mut self,
        len: usize,
        pieces: impl IntoIterator<Item = &'v [T]> + Clone,
    ) {
        let width = narrowed_width(pieces.clone());
        let mut before = first_of(pieces.clone()).unwrap_or(T::ZERO);
        (len as u64).put(&mut self.out);
        (width as u8).put(&mut self.out);
        if width != T::WIDTH && T::STEPS {
            before.put(&mut self.out);
        }
        self.spill();
        let per_step = (STEP_BYTES / T::WIDTH).max(1);
        for step in pieces.into_iter().flat_map(|piece| piece.chunks(per_step)) {
            self.out.reserve(step.len() * width);
            let before = &mut before;
            match width {
                _ if width == T::WIDTH => T::put_all(step, &mut self.out),
                1 => encode_into::<T, 1>(step, &mut self.out, before),
                2 => encode_into::<T, 2>(step, &mut self.out, before),
                3 => encode_into::<T, 3>(step, &mut self.out, before),
                4 => encode_into::<T, 4>(step, &mut self.out, before),
                5 => encode_into::<T, 5>(step, &mut self.out, before),
                6 => encode_into::<T, 6>(step, &mut self.out, before),
                _ => encode_into::<T, 7>(step, &mut self.out, before),
            }
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
/// allocated for a count before it is checked against the bytes left: at
/// most their size, or `WIDTH` times it for a column narrowed to a byte.
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
        self.checked_count(n, width, what)
    }

    /// `n` as a count of values of `width` bytes, when the bytes left hold them.
    fn checked_count(&self, n: u64, width: usize, what: &str) -> Result<usize> {
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
        let (n, mut narrowed) = self.column_head::<T>(what)?;
        let mut values = Self::room(n, what)?;
        self.values_into(&mut values, n, &mut narrowed, what)?;
        Ok(values)
    }

    /// A column's count, and how its values are written: as they are, or
    /// narrowed (their width and the value before the next).
    fn column_head<T: Fixed>(&mut self, what: &str) -> Result<(usize, Option<(usize, T)>)> {
        let n = u64::from_le_bytes(self.raw(what)?);
        let [width] = self.raw::<1>(what)?;
        let width = usize::from(width);
        if width == 0 || width > T::WIDTH || (width < T::WIDTH && !T::NARROWS) {
            let widths = match T::NARROWS {
                true => format!("1 to {}", T::WIDTH),
                false => T::WIDTH.to_string(),
            };
            return Err(invalid(format!(
                "{what} has values of {width} bytes, not {widths}"
            )));
        }
        let narrowed = match (width < T::WIDTH, T::STEPS) {
            (false, _) => None,
            (true, false) => Some((width, T::ZERO)),
            (true, true) => {
                let first = self.next(T::WIDTH, what)?;
                Some((width, T::take(&first).unwrap_or(T::ZERO)))
            }
        };
        Ok((self.checked_count(n, width, what)?, narrowed))
    }

    /// What `column_of_pieces` wrote, in chunks of `chunk_len` values (the
    /// last may be shorter), each given exactly its room.
    pub fn column_in_chunks<T: Fixed>(
        &mut self,
        what: &str,
        chunk_len: usize,
    ) -> Result<Vec<Vec<T>>> {
        let chunk_len = chunk_len.max(1);
        let (n, mut narrowed) = self.column_head::<T>(what)?;
        let mut chunks = Self::room(n.div_ceil(chunk_len), what)?;
        let mut read = 0;
        while read < n {
            let len = (n - read).min(chunk_len);
            let mut chunk = Self::room(len, what)?;
            self.values_into(&mut chunk, len, &mut narrowed, what)?;
            chunks.push(chunk);
            read += len;
        }
        Ok(chunks)
    }

    /// Reads `n` values onto `values`, as they are or `narrowed` (`column_head`).
    fn values_into<T: Fixed>(
        &mut self,
        values: &mut Vec<T>,
        n: usize,
        narrowed: &mut Option<(usize, T)>,
        what: &str,
    ) -> Result<()> {
        let target = values.len() + n;
        let width = narrowed.as_ref().map_or(T::WIDTH, |&(width, _)| width);
        // A step at a time: a source in parts never joins a large column.
        // Every step holds whole values.
        let per_step = (STEP_BYTES / width).max(1);
        while values.len() < target {
            let step = (target - values.len()).min(per_step);
            let bytes = self.next(step * width, what)?;
            match narrowed {
                None => T::extend_from(values, &bytes),
                Some((width, before)) => match width {
                    1 => decode_into::<T, 1>(values, &bytes, before),
                    2 => decode_into::<T, 2>(values, &bytes, before),
                    3 => decode_into::<T, 3>(values, &bytes, before),
                    4 => decode_into::<T, 4>(values, &bytes, before),
                    5 => decode_into::<T, 5>(values, &bytes, before),
                    6 => decode_into::<T, 6>(values, &bytes, before),
                    _ => decode_into::<T, 7>(values, &bytes, before),
                },
            }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// `values` written as a column and read back whole and in chunks, and
    /// the bytes each value took.
    fn round_trip<T: Fixed>(values: &[T]) -> usize {
        // Compared as the bytes each value is as it is.
        let raw = |values: &[T]| {
            let mut out = Vec::new();
            T::put_all(values, &mut out);
            out
        };
        let written = |pieces: &[&[T]]| {
            let mut w = Writer::new(Vec::new());
            w.column_of_pieces(values.len(), pieces.iter().copied());
            w.finish()
        };
        let bytes = written(&[values]);
        // In uneven pieces, an empty one first, as a chunked column may hand them on.
        let cut = values.len() / 3;
        assert_eq!(written(&[&[], &values[..cut], &values[cut..]]), bytes);
        let read: Vec<T> = Reader::new(&mut Bytes(&bytes)).column("column").unwrap();
        assert_eq!(raw(&read), raw(values));
        let chunks: Vec<Vec<T>> = Reader::new(&mut Bytes(&bytes))
            .column_in_chunks("column", 7)
            .unwrap();
        assert_eq!(raw(&chunks.concat()), raw(values));
        // The count, the width, and the first value when stepped.
        let width = usize::from(bytes[8]);
        let head = 9 + if width < T::WIDTH && T::STEPS {
            T::WIDTH
        } else {
            0
        };
        assert_eq!(bytes.len(), head + values.len() * width);
        width
    }

    #[test]
    fn ids_and_statuses_are_written_in_the_bytes_their_largest_needs() {
        use crate::store::{NONE, NO_STATUS};
        for (largest, width) in [
            (0u32, 1),
            (254, 1),
            (255, 2),
            (65_534, 2),
            (65_535, 3),
            (1 << 24, 4),
            (NONE - 1, 4),
        ] {
            let values: Vec<u32> = (0..100)
                .map(|i| i * 7 % (largest.max(1)))
                .chain([largest, 3])
                .collect();
            assert_eq!(round_trip(&values), width, "largest {largest}");
        }
        assert_eq!(round_trip(&[5u32, NONE, 7, NONE]), 1, "no id");
        assert_eq!(round_trip::<u32>(&[]), 4);
        assert_eq!(round_trip(&[7u32]), 1);
        assert_eq!(round_trip(&[200i32, 404, 503, NO_STATUS, 201]), 2);
        assert_eq!(round_trip(&[NO_STATUS, 0, 127, 5]), 1);
        assert_eq!(round_trip(&[-1i32, 200, 300]), 4);
        // Values that are not narrowed, even where they would fit fewer bytes.
        assert_eq!(round_trip(&[0u8, 2, 1, 255]), 1);
        assert_eq!(round_trip(&[0u64, 2, 1]), 8);
    }

    #[test]
    fn times_in_order_are_written_as_steps_and_out_of_order_as_they_are() {
        let start = 1_763_600_000_000_000i64;
        let steps = |step: i64| (0..50).map(move |i| start + i * step).collect::<Vec<_>>();
        assert_eq!(round_trip(&steps(0)), 1);
        assert_eq!(round_trip(&steps(200)), 1);
        assert_eq!(round_trip(&steps(300)), 2);
        assert_eq!(round_trip(&steps(280_000)), 3);
        assert_eq!(round_trip(&steps(1 << 40)), 6);
        assert_eq!(round_trip(&[start, start - 1, start + 5]), 8, "a step back");
        assert_eq!(round_trip(&[i64::MIN, i64::MAX, i64::MAX]), 8);
        // A lone value: its first value as it is would be more bytes, not fewer.
        assert_eq!(round_trip(&[start]), 8);
        // Far longer than a reader's step (and a chunk) at a time.
        let long: Vec<i64> = (0..200_000i64).map(|i| start + i * 3 + i / 7).collect();
        assert_eq!(round_trip(&long), 1);
    }

    #[test]
    fn execution_times_are_written_as_thousandths_and_any_other_number_as_it_is() {
        let times = [41.0, 67.8, 120.4, f64::NAN, 0.0, 0.001, 16_777.214];
        assert_eq!(round_trip(&times), 3);
        assert_eq!(round_trip(&[f64::NAN, 1.0, 2.5]), 2);
        assert_eq!(round_trip(&[f64::NAN, f64::NAN]), 1);
        assert_eq!(round_trip(&[41.0, 16_777.215]), 4);
        let most = (1u64 << 53) as f64;
        assert_eq!(round_trip(&[41.0, (most - 1.0) / 1000.0]), 7);
        for odd in [
            0.0001,
            -0.0,
            -1.0,
            1e300,
            f64::INFINITY,
            f64::MIN_POSITIVE / 2.0,
            most / 1000.0,
            f64::from_bits(f64::NAN.to_bits() + 1),
            0.1 + 0.2,
        ] {
            assert_eq!(round_trip(&[41.0, odd, 2.0]), 8, "{odd:e}");
        }
        // Random decimals of up to three places, written as the JSON reader reads them.
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let decimals: Vec<f64> = (0..20_000)
            .map(|_| {
                let random = crate::test_rng::xorshift(&mut state);
                let places = (random % 4) as usize;
                let digits = random >> 40;
                let text = format!("{digits}");
                let (int, frac) = text.split_at(text.len().saturating_sub(places));
                format!("{}.{}0", if int.is_empty() { "0" } else { int }, frac)
                    .parse()
                    .unwrap()
            })
            .collect();
        assert!(round_trip(&decimals) < 8);
    }

    #[test]
    fn spans_are_written_in_six_bytes_while_blocks_are_few() {
        let spans: Vec<Span> = (0..40u32)
            .map(|i| Span::from_parts(i * 1000, u32::MAX - i))
            .collect();
        assert_eq!(round_trip(&spans), 6);
        assert_eq!(
            round_trip(&[Span::from_parts(1, 2), Span::NULL, Span::from_parts(3, 4)]),
            5
        );
        assert_eq!(
            round_trip(&[Span::from_parts(70_000, 2), Span::from_parts(3, 4)]),
            7
        );
    }

    #[test]
    fn a_width_no_column_of_its_values_is_written_in_is_refused() {
        let refusal = |bytes: &[u8], read: &dyn Fn(&mut Reader) -> Result<()>| {
            read(&mut Reader::new(&mut Bytes(bytes)))
                .unwrap_err()
                .to_string()
        };
        let mut w = Writer::new(Vec::new());
        w.column(&[15u64, 25]);
        let mut sums = w.finish();
        for width in [0u8, 4, 9] {
            sums[8] = width;
            let error = refusal(&sums, &|r| r.column::<u64>("sums").map(drop));
            assert!(
                error.contains(&format!("sums has values of {width} bytes, not 8")),
                "{error}"
            );
        }
        let mut w = Writer::new(Vec::new());
        w.column(&[1u32, 2, 3]);
        let mut ids = w.finish();
        assert_eq!(ids[8], 1);
        ids[8] = 5;
        let error = refusal(&ids, &|r| r.column::<u32>("ids").map(drop));
        assert!(
            error.contains("ids has values of 5 bytes, not 1 to 4"),
            "{error}"
        );
        // A stepped column cut before its first value.
        let mut w = Writer::new(Vec::new());
        w.column(&[10i64, 11, 12]);
        let steps = w.finish();
        assert_eq!(steps.len(), 9 + 8 + 3);
        let error = refusal(&steps[..12], &|r| {
            r.column_in_chunks::<i64>("steps", 2).map(drop)
        });
        assert!(error.contains("it ends inside steps"), "{error}");
    }
}
