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

/// Bytes being written: columns and texts one after another.
pub struct Writer {
    pub out: Vec<u8>,
}

impl Writer {
    pub fn column<T: Fixed>(&mut self, values: &[T]) {
        (values.len() as u64).put(&mut self.out);
        self.out.reserve(values.len() * T::WIDTH);
        for &v in values {
            v.put(&mut self.out);
        }
    }

    /// Byte strings, as `texts` writes text.
    pub fn blobs(&mut self, blobs: &[&[u8]]) {
        (blobs.len() as u64).put(&mut self.out);
        for blob in blobs {
            (blob.len() as u64).put(&mut self.out);
            self.out.extend_from_slice(blob);
        }
    }

    pub fn texts<S: AsRef<str>>(&mut self, texts: &[S]) {
        (texts.len() as u64).put(&mut self.out);
        for text in texts {
            (text.as_ref().len() as u64).put(&mut self.out);
            self.out.extend_from_slice(text.as_ref().as_bytes());
        }
    }
}

/// Bytes being read, each value checked: anything that does not read back is
/// an `invalid_snapshot` error naming `what` it was reading.
pub struct Reader<'a> {
    pub rest: &'a [u8],
}

impl<'a> Reader<'a> {
    fn bytes(&mut self, n: usize, what: &str) -> Result<&'a [u8]> {
        let (head, rest) = self
            .rest
            .split_at_checked(n)
            .ok_or_else(|| invalid(format!("it ends inside {what}")))?;
        self.rest = rest;
        Ok(head)
    }

    fn count(&mut self, what: &str) -> Result<usize> {
        let n = u64::take(self.bytes(8, what)?).unwrap_or(u64::MAX);
        // A count can never exceed the bytes left (every value takes one at least).
        usize::try_from(n)
            .ok()
            .filter(|&n| n <= self.rest.len())
            .ok_or_else(|| {
                invalid(format!(
                    "{what} claims {n} values, more than the bytes left"
                ))
            })
    }

    pub fn column<T: Fixed>(&mut self, what: &str) -> Result<Vec<T>> {
        let n = self.count(what)?;
        let width = n
            .checked_mul(T::WIDTH)
            .ok_or_else(|| invalid(format!("{what} is too long")))?;
        let bytes = self.bytes(width, what)?;
        // Every chunk has the width `take` reads; `map` (not `filter_map`) keeps
        // the length known, so the column is allocated once.
        Ok(bytes
            .chunks_exact(T::WIDTH)
            .map(|chunk| T::take(chunk).unwrap_or(T::ZERO))
            .collect())
    }

    /// What `blobs` wrote.
    pub fn blobs(&mut self, what: &str) -> Result<Vec<Box<[u8]>>> {
        let n = self.count(what)?;
        let mut blobs = Vec::with_capacity(n);
        for _ in 0..n {
            let len = self.count(what)?;
            blobs.push(self.bytes(len, what)?.into());
        }
        Ok(blobs)
    }

    pub fn texts(&mut self, what: &str) -> Result<Vec<String>> {
        let n = self.count(what)?;
        let mut texts = Vec::with_capacity(n);
        for _ in 0..n {
            let len = self.count(what)?;
            let bytes = self.bytes(len, what)?;
            let text = simdutf8::basic::from_utf8(bytes)
                .map_err(|_| invalid(format!("{what} holds text that is not UTF-8")))?;
            texts.push(text.to_owned());
        }
        Ok(texts)
    }
}
