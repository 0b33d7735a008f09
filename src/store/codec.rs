//! Columns as bytes and back (little-endian): a column is its count and its
//! values, a text its length and its UTF-8. What `table!` generates the
//! snapshot's column writer and reader from; the snapshot (`crate::snapshot`)
//! adds the header and the checksum.

use crate::error::{Error, Result};

use super::Span;

fn invalid(reason: impl Into<String>) -> Error {
    Error::InvalidSnapshot {
        reason: reason.into(),
    }
}

/// A value of fixed width in a column.
pub trait Fixed: Sized + Copy {
    const WIDTH: usize;
    const ZERO: Self;
    fn put(self, out: &mut Vec<u8>);
    fn take(bytes: &[u8]) -> Option<Self>;
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
        }
    )+};
}
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
    pub out: Vec<u8>,
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
        out.reserve_exact((part_bytes + 2 * STEP_BYTES).saturating_sub(out.len()));
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
        (values.len() as u64).put(&mut self.out);
        for step in values.chunks((STEP_BYTES / T::WIDTH).max(1)) {
            self.out.reserve(step.len() * T::WIDTH);
            for &v in step {
                v.put(&mut self.out);
            }
            self.spill();
        }
    }

    fn bytes(&mut self, bytes: &[u8]) {
        (bytes.len() as u64).put(&mut self.out);
        for step in bytes.chunks(STEP_BYTES) {
            self.out.extend_from_slice(step);
            self.spill();
        }
    }

    /// Byte strings, as `texts` writes text.
    pub fn blobs(&mut self, blobs: &[&[u8]]) {
        (blobs.len() as u64).put(&mut self.out);
        for blob in blobs {
            self.bytes(blob);
        }
    }

    pub fn texts<S: AsRef<str>>(&mut self, texts: &[S]) {
        (texts.len() as u64).put(&mut self.out);
        for text in texts {
            self.bytes(text.as_ref().as_bytes());
        }
    }
}

/// Where a reader's bytes come from: one slice (`Bytes`), or parts that
/// arrive one after another (`crate::snapshot::Parts`).
pub trait Source {
    /// Bytes not read yet.
    fn left(&self) -> usize;

    /// Hands `f` the next `n` bytes (at most `left`) as one slice; false
    /// when they are not there.
    fn with_next(&mut self, n: usize, f: &mut dyn FnMut(&[u8])) -> bool;
}

/// Bytes held whole.
pub struct Bytes<'a>(pub &'a [u8]);

impl Source for Bytes<'_> {
    fn left(&self) -> usize {
        self.0.len()
    }

    fn with_next(&mut self, n: usize, f: &mut dyn FnMut(&[u8])) -> bool {
        let Some((head, rest)) = self.0.split_at_checked(n) else {
            return false;
        };
        f(head);
        self.0 = rest;
        true
    }
}

/// Bytes being read, each value checked: anything that does not read back is
/// an `invalid_snapshot` error naming `what` it was reading.
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

    /// What `f` makes of the next `n` bytes.
    fn with_next<R>(&mut self, n: usize, what: &str, f: impl FnOnce(&[u8]) -> R) -> Result<R> {
        let mut f = Some(f);
        let mut made = None;
        let read = self.source.with_next(n, &mut |bytes| {
            made = f.take().map(|f| f(bytes));
        });
        made.filter(|_| read)
            .ok_or_else(|| invalid(format!("it ends inside {what}")))
    }

    /// The next `N` bytes as they are (a header's fields).
    pub fn raw<const N: usize>(&mut self, what: &str) -> Result<[u8; N]> {
        self.with_next(N, what, |bytes| bytes.try_into().unwrap_or([0; N]))
    }

    fn count(&mut self, what: &str) -> Result<usize> {
        let n = u64::from_le_bytes(self.raw(what)?);
        // A count can never exceed the bytes left (every value takes one at least).
        usize::try_from(n)
            .ok()
            .filter(|&n| n <= self.left())
            .ok_or_else(|| {
                invalid(format!(
                    "{what} claims {n} values, more than the bytes left"
                ))
            })
    }

    pub fn column<T: Fixed>(&mut self, what: &str) -> Result<Vec<T>> {
        let n = self.count(what)?;
        if n.checked_mul(T::WIDTH)
            .is_none_or(|width| width > self.left())
        {
            return Err(invalid(format!("it ends inside {what}")));
        }
        // Allocated once; read a step at a time, so a source in parts never
        // joins a large column. Every chunk has the width `take` reads.
        let mut values = Vec::with_capacity(n);
        let per_step = (STEP_BYTES / T::WIDTH).max(1);
        while values.len() < n {
            let step = (n - values.len()).min(per_step);
            self.with_next(step * T::WIDTH, what, |bytes| {
                values.extend(
                    bytes
                        .chunks_exact(T::WIDTH)
                        .map(|chunk| T::take(chunk).unwrap_or(T::ZERO)),
                );
            })?;
        }
        Ok(values)
    }

    /// What `blobs` wrote.
    pub fn blobs(&mut self, what: &str) -> Result<Vec<Box<[u8]>>> {
        let n = self.count(what)?;
        let mut blobs = Vec::with_capacity(n);
        for _ in 0..n {
            let len = self.count(what)?;
            blobs.push(self.with_next(len, what, |bytes| Box::<[u8]>::from(bytes))?);
        }
        Ok(blobs)
    }

    pub fn texts(&mut self, what: &str) -> Result<Vec<String>> {
        let n = self.count(what)?;
        let mut texts = Vec::with_capacity(n);
        for _ in 0..n {
            let len = self.count(what)?;
            let text = self.with_next(len, what, |bytes| {
                simdutf8::basic::from_utf8(bytes).map(str::to_owned).ok()
            })?;
            texts
                .push(text.ok_or_else(|| invalid(format!("{what} holds text that is not UTF-8")))?);
        }
        Ok(texts)
    }
}
