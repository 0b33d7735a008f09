//! Staged rows as bytes: what a batch's entries become once read (an edge
//! entry, a function invocation row, an entry of another source), written
//! once where the batch is read (the front of the sharded deployment, or the
//! one object) and appended where it is stored (a
//! shard), so that no entry is parsed twice. Rows follow one another, so two
//! runs of rows joined are one run. Strings are decoded back in place
//! (borrowed from the bytes), every one checked as UTF-8.
//!
//! A string is a `u32` length (`u32::MAX`: none) and its bytes; numbers are
//! little-endian. Between objects, runs of rows travel as blocks: a block is
//! its row count, its length and the run compressed with LZ4 (blocks follow
//! one another, so two runs of blocks joined are one run too).

use std::borrow::Cow;

use crate::error::{Error, Result};
use crate::ingest::{Repeated, StagedEdge, StagedInvocation, StagedOther, StagedRequest, Stream};

const NONE: u32 = u32::MAX;

fn unreadable() -> Error {
    Error::UnreadableBatch {
        reason: "staged rows that do not read (a delivery damaged between objects)".into(),
    }
}

fn put_str(out: &mut Vec<u8>, value: Option<&str>) {
    match value {
        Some(text) => {
            out.extend_from_slice(&(text.len() as u32).to_le_bytes());
            out.extend_from_slice(text.as_bytes());
        }
        None => out.extend_from_slice(&NONE.to_le_bytes()),
    }
}

/// Appends one edge entry's row.
pub fn write_edge(out: &mut Vec<u8>, entry: &StagedEdge) {
    out.extend_from_slice(&entry.timestamp.to_le_bytes());
    put_str(out, Some(&entry.id));
    put_str(out, entry.event_message.as_deref());
    put_str(out, entry.project.as_deref());
    put_str(out, entry.metadata);
    out.extend_from_slice(&(entry.requests.len() as u32).to_le_bytes());
    for request in &entry.requests {
        put_str(out, request.url.as_deref());
        out.push(request.areas);
    }
}

/// Appends one function invocation's row.
pub fn write_invocation(out: &mut Vec<u8>, row: &StagedInvocation) {
    out.extend_from_slice(&row.timestamp.to_le_bytes());
    put_str(out, row.project_ref.as_deref());
    put_str(out, row.function_id.as_deref());
    out.push(u8::from(row.execution_time_ms.is_some()));
    out.extend_from_slice(&row.execution_time_ms.unwrap_or(0.0).to_le_bytes());
    out.push(u8::from(row.status_code.is_some()));
    out.extend_from_slice(&row.status_code.unwrap_or(0).to_le_bytes());
}

/// Appends one entry of another source.
pub fn write_other(out: &mut Vec<u8>, entry: &StagedOther) {
    out.extend_from_slice(&entry.timestamp.to_le_bytes());
    put_str(out, Some(&entry.id));
    put_str(out, Some(entry.source));
    put_str(out, entry.project.as_deref());
    put_str(out, Some(entry.entry));
}

struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        let (head, rest) = self.0.split_at_checked(n).ok_or_else(unreadable)?;
        self.0 = rest;
        Ok(head)
    }
    fn array<const N: usize>(&mut self) -> Result<[u8; N]> {
        self.take(N)?.try_into().map_err(|_| unreadable())
    }
    fn u8(&mut self) -> Result<u8> {
        Ok(self.array::<1>()?[0])
    }
    fn u32(&mut self) -> Result<u32> {
        Ok(u32::from_le_bytes(self.array()?))
    }
    fn i64(&mut self) -> Result<i64> {
        Ok(i64::from_le_bytes(self.array()?))
    }
    fn f64(&mut self) -> Result<f64> {
        Ok(f64::from_le_bytes(self.array()?))
    }
    fn str(&mut self) -> Result<Option<&'a str>> {
        match self.u32()? {
            NONE => Ok(None),
            len => {
                let bytes = self.take(len as usize)?;
                simdutf8::basic::from_utf8(bytes)
                    .map(Some)
                    .map_err(|_| unreadable())
            }
        }
    }
}

/// `count` edge rows, read in place.
pub fn read_edges(bytes: &[u8], count: usize) -> Result<Vec<StagedEdge<'_>>> {
    let mut r = Reader(bytes);
    let mut rows = Vec::with_capacity(count.min(bytes.len() / 24));
    for _ in 0..count {
        let timestamp = r.i64()?;
        let id = r.str()?.ok_or_else(unreadable)?;
        let event_message = r.str()?;
        let project = r.str()?;
        let metadata = r.str()?;
        let mut requests = Repeated::None;
        for _ in 0..r.u32()? {
            requests.push(StagedRequest {
                url: r.str()?.map(Cow::Borrowed),
                areas: r.u8()?,
            });
        }
        rows.push(StagedEdge {
            timestamp,
            id: Cow::Borrowed(id),
            event_message: event_message.map(Cow::Borrowed),
            project: project.map(Cow::Borrowed),
            metadata,
            requests,
        });
    }
    if !r.0.is_empty() {
        return Err(unreadable());
    }
    Ok(rows)
}

/// `count` function invocation rows, read in place.
pub fn read_invocations(bytes: &[u8], count: usize) -> Result<Vec<StagedInvocation<'_>>> {
    let mut r = Reader(bytes);
    let mut rows = Vec::with_capacity(count.min(bytes.len() / 26));
    for _ in 0..count {
        let timestamp = r.i64()?;
        let project_ref = r.str()?.map(Cow::Borrowed);
        let function_id = r.str()?.map(Cow::Borrowed);
        let has_time = r.u8()? != 0;
        let time = r.f64()?;
        let has_status = r.u8()? != 0;
        let status = r.i64()?;
        rows.push(StagedInvocation {
            timestamp,
            project_ref,
            function_id,
            execution_time_ms: has_time.then_some(time),
            status_code: has_status.then_some(status),
        });
    }
    if !r.0.is_empty() {
        return Err(unreadable());
    }
    Ok(rows)
}

/// `count` entries of other sources, read in place.
pub fn read_others(bytes: &[u8], count: usize) -> Result<Vec<StagedOther<'_>>> {
    let mut r = Reader(bytes);
    let mut rows = Vec::with_capacity(count.min(bytes.len() / 24));
    for _ in 0..count {
        let timestamp = r.i64()?;
        let id = r.str()?.ok_or_else(unreadable)?;
        let source = r.str()?.ok_or_else(unreadable)?;
        let project = r.str()?;
        let entry = r.str()?.ok_or_else(unreadable)?;
        rows.push(StagedOther {
            timestamp,
            id: Cow::Borrowed(id),
            source,
            project: project.map(Cow::Borrowed),
            entry,
        });
    }
    if !r.0.is_empty() {
        return Err(unreadable());
    }
    Ok(rows)
}

/// Appends a block: `rows` staged rows (`raw`), compressed.
pub fn write_block(out: &mut Vec<u8>, rows: usize, raw: &[u8]) {
    let compressed = lz4_flex::block::compress(raw);
    out.extend_from_slice(&(rows as u32).to_le_bytes());
    out.extend_from_slice(&(raw.len() as u32).to_le_bytes());
    out.extend_from_slice(&(compressed.len() as u32).to_le_bytes());
    out.extend_from_slice(&compressed);
}

/// The rows of a run of blocks, decompressed and joined: how many, and their bytes.
pub fn read_blocks(bytes: &[u8]) -> Result<(usize, Vec<u8>)> {
    let mut r = Reader(bytes);
    let mut rows = 0usize;
    let mut raw = Vec::new();
    while !r.0.is_empty() {
        rows += r.u32()? as usize;
        let len = r.u32()? as usize;
        let compressed_len = r.u32()? as usize;
        let compressed = r.take(compressed_len)?;
        let at = raw.len();
        raw.resize(at + len, 0);
        let target = raw.get_mut(at..).ok_or_else(unreadable)?;
        match lz4_flex::block::decompress_into(compressed, target) {
            Ok(n) if n == len => {}
            _ => return Err(unreadable()),
        }
    }
    Ok((rows, raw))
}

/// The rows of `count` staged rows in `blocks`, decompressed and joined:
/// refused when the blocks do not hold that many.
pub fn read_counted_blocks(blocks: &[u8], count: usize) -> Result<Vec<u8>> {
    let (rows, raw) = read_blocks(blocks)?;
    if rows != count {
        return Err(Error::UnreadableBatch {
            reason: "stored or sent blocks that do not hold their rows".into(),
        });
    }
    Ok(raw)
}

/// One stream's staged rows, read back (borrowing from their decoded bytes).
pub enum StagedRows<'a> {
    Edge(Vec<StagedEdge<'a>>),
    Function(Vec<StagedInvocation<'a>>),
    Other(Vec<StagedOther<'a>>),
}

impl<'a> StagedRows<'a> {
    /// `count` rows of `stream` from `raw` (see `read_counted_blocks`).
    pub fn read(stream: Stream, raw: &'a [u8], count: usize) -> Result<StagedRows<'a>> {
        Ok(match stream {
            Stream::Edge => StagedRows::Edge(read_edges(raw, count)?),
            Stream::Function => StagedRows::Function(read_invocations(raw, count)?),
            Stream::Other => StagedRows::Other(read_others(raw, count)?),
        })
    }

    /// The rows as staged bytes, one after another (what `read` reads).
    pub fn write(&self, out: &mut Vec<u8>) {
        match self {
            StagedRows::Edge(rows) => rows.iter().for_each(|row| write_edge(out, row)),
            StagedRows::Function(rows) => rows.iter().for_each(|row| write_invocation(out, row)),
            StagedRows::Other(rows) => rows.iter().for_each(|row| write_other(out, row)),
        }
    }

    pub fn len(&self) -> usize {
        match self {
            StagedRows::Edge(rows) => rows.len(),
            StagedRows::Function(rows) => rows.len(),
            StagedRows::Other(rows) => rows.len(),
        }
    }

    /// The project a row names (`None`: none, or no such row).
    pub fn project(&self, row: usize) -> Option<&str> {
        match self {
            StagedRows::Edge(rows) => rows.get(row)?.project.as_deref(),
            StagedRows::Function(rows) => rows.get(row)?.project_ref.as_deref(),
            StagedRows::Other(rows) => rows.get(row)?.project.as_deref(),
        }
    }

    pub fn stream(&self) -> Stream {
        match self {
            StagedRows::Edge(_) => Stream::Edge,
            StagedRows::Function(_) => Stream::Function,
            StagedRows::Other(_) => Stream::Other,
        }
    }

    /// Takes out the rows whose project `take` picks (`None`: no project),
    /// in order, as rows of their own; the others stay, in order.
    pub fn take_where(&mut self, take: impl Fn(Option<&str>) -> bool) -> StagedRows<'a> {
        fn split<T>(rows: &mut Vec<T>, take: impl Fn(&T) -> bool) -> Vec<T> {
            let (taken, kept) = std::mem::take(rows).into_iter().partition(|row| take(row));
            *rows = kept;
            taken
        }
        match self {
            StagedRows::Edge(rows) => StagedRows::Edge(split(rows, |r| take(r.project.as_deref()))),
            StagedRows::Function(rows) => {
                StagedRows::Function(split(rows, |r| take(r.project_ref.as_deref())))
            }
            StagedRows::Other(rows) => {
                StagedRows::Other(split(rows, |r| take(r.project.as_deref())))
            }
        }
    }

    /// Rows `rows` (by index) written as staged rows again, after `out`.
    pub fn write_rows(&self, rows: impl IntoIterator<Item = usize>, out: &mut Vec<u8>) {
        for row in rows {
            match self {
                StagedRows::Edge(all) => all.get(row).map(|r| write_edge(out, r)),
                StagedRows::Function(all) => all.get(row).map(|r| write_invocation(out, r)),
                StagedRows::Other(all) => all.get(row).map(|r| write_other(out, r)),
            };
        }
    }

    /// The newest timestamp among rows `range`.
    pub fn newest_in(&self, range: std::ops::Range<usize>) -> Option<crate::timestamp::Micros> {
        fn newest<T>(
            rows: &[T],
            range: std::ops::Range<usize>,
            time: impl Fn(&T) -> i64,
        ) -> Option<i64> {
            rows.get(range).unwrap_or_default().iter().map(time).max()
        }
        match self {
            StagedRows::Edge(rows) => newest(rows, range, |r| r.timestamp),
            StagedRows::Function(rows) => newest(rows, range, |r| r.timestamp),
            StagedRows::Other(rows) => newest(rows, range, |r| r.timestamp),
        }
    }

    /// The newest timestamp among the rows.
    pub fn newest(&self) -> Option<crate::timestamp::Micros> {
        match self {
            StagedRows::Edge(rows) => rows.iter().map(|r| r.timestamp).max(),
            StagedRows::Function(rows) => rows.iter().map(|r| r.timestamp).max(),
            StagedRows::Other(rows) => rows.iter().map(|r| r.timestamp).max(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes_of_edges(edge: &StagedEdge) -> Vec<u8> {
        let mut bytes = Vec::new();
        write_edge(&mut bytes, edge);
        write_edge(&mut bytes, edge);
        bytes
    }

    #[test]
    fn rows_read_back_and_runs_join() {
        let edge = StagedEdge {
            timestamp: 7,
            id: Cow::Borrowed("a"),
            event_message: None,
            project: Some(Cow::Borrowed("p")),
            metadata: Some("{\"x\":\"é\"}"),
            requests: Repeated::One(StagedRequest {
                url: Some(Cow::Borrowed("https://p/x")),
                areas: 3,
            }),
        };
        let mut bytes = Vec::new();
        write_edge(&mut bytes, &edge);
        write_edge(&mut bytes, &edge);
        let rows = read_edges(&bytes, 2).unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!(
            (
                rows[1].timestamp,
                rows[1].metadata,
                rows[1].requests.as_slice()[0].areas
            ),
            (7, Some("{\"x\":\"é\"}"), 3)
        );
        assert!(read_edges(&bytes, 3).is_err());
        assert!(read_edges(&bytes[..bytes.len() - 1], 2).is_err());
        let row = StagedInvocation {
            timestamp: 1,
            project_ref: None,
            function_id: Some(Cow::Borrowed("f")),
            execution_time_ms: Some(2.5),
            status_code: None,
        };
        let mut blocks = Vec::new();
        write_block(&mut blocks, 2, &bytes_of_edges(&edge));
        write_block(&mut blocks, 2, &bytes_of_edges(&edge));
        let (rows, raw) = read_blocks(&blocks).unwrap();
        assert_eq!((rows, read_edges(&raw, rows).unwrap().len()), (4, 4));
        assert!(read_blocks(&blocks[..blocks.len() - 1]).is_err());
        let mut bytes = Vec::new();
        write_invocation(&mut bytes, &row);
        let back = read_invocations(&bytes, 1).unwrap();
        assert_eq!(
            (
                back[0].execution_time_ms,
                back[0].status_code,
                back[0].function_id.as_deref()
            ),
            (Some(2.5), None, Some("f"))
        );
        let other = StagedOther {
            timestamp: 3,
            id: Cow::Borrowed("o"),
            source: "gotrue.logs.prod",
            project: None,
            entry: "{\"msg\":\"ok\"}",
        };
        let mut bytes = Vec::new();
        write_other(&mut bytes, &other);
        let back = read_others(&bytes, 1).unwrap();
        assert_eq!(
            (back[0].source, back[0].entry, back[0].project.is_none()),
            ("gotrue.logs.prod", "{\"msg\":\"ok\"}", true)
        );
        assert!(read_others(&bytes[..bytes.len() - 1], 1).is_err());
    }
}
