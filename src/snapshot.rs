//! Snapshots: the whole store (both tables, their text and their names) as
//! versioned, checksummed bytes, and back. Restoring copies columns instead of
//! parsing JSON, so a large store is read once and reopened fast. Anything that
//! is not a snapshot this version wrote (foreign, truncated or corrupted bytes)
//! is an `invalid_snapshot` error, never a panic or a half-built store.
//!
//! Layout (little-endian): magic `LGENDSNP`, version `u32`, payload length
//! `u64`, XXH3-64 of the payload `u64`, payload. The payload is the edge table,
//! the function table, then the other sources' table, each column as a count,
//! its values' width and its values (ids, status codes, spans, times in
//! time order and execution times in thousandths narrowed to the bytes they
//! need: `store::codec`), each text as
//! a length and its UTF-8. A table's free text is
//! stored as its deflate blocks are held (restoring decodes none of them),
//! and a block the host's block storage holds as its hash and length (such a
//! snapshot reopens only with that storage).
//! Each project's rows are rebuilt in one pass over a column, from how many
//! each project has (stored, and checked against the column); the URL index
//! is stored (rebuilding it hashes every URL). Version 17 (columns narrowed;
//! URLs as their origin's and directory's markers then the tail, directories
//! held once per table; each block's kind: open, sealed, or in storage; text
//! in 64 KiB deflate blocks against the arena's dictionary; an edge entry's
//! one request in its own row, and request columns only for entries with
//! none or several; execution times as thousandths; each table's rows per
//! project) reads no older
//! version: the edge worker replays its stored batches when its snapshot is
//! refused, and a saved file is made again from its logs.
//!
//! Restoring is meant to cost little more than copying the bytes: XXH3 and the
//! UTF-8 check (simdutf8) use wasm's 128-bit SIMD; the name maps are built on
//! first use (`Interner`). Version 1 (CRC-32) is no longer read.
//!
//! A large store's snapshot is never held whole by the engine: `write_parts`
//! hands it on in numbered parts (`PART_BYTES`) as it is written, part 0,
//! which begins with the header, last; `read_parts` reads parts as they come
//! (`Parts`), hashing the payload on the way and checking the checksum once
//! it is read.

use crate::error::{Error, Result};
use std::borrow::Cow;

use xxhash_rust::xxh3::Xxh3;

use crate::store::codec::{Bytes, Fixed, Reader, Source, Writer};
use crate::store::text::{BlockKind, StoredBlock};
use crate::store::{
    Arena, EdgeTable, FunctionTable, Interner, OtherTable, ProjectRows, Span, Store, Sym, UrlNames,
    UrlTrigrams, NONE, SOLE, SOLE_URL,
};

const MAGIC: &[u8; 8] = b"LGENDSNP";
const VERSION: u32 = 17;
/// Bytes before the payload.
pub const HEADER_BYTES: usize = 8 + 4 + 8 + 8;

fn checksum(payload: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(payload)
}

/// Whether `bytes` begin as a snapshot does.
pub fn has_magic(bytes: &[u8]) -> bool {
    bytes.starts_with(MAGIC)
}

/// `payload` under a right header: how `write` seals its payload (and what the
/// fuzz target uses to put the structural checks to work).
pub fn seal(payload: &[u8]) -> Vec<u8> {
    let mut out = vec![0; HEADER_BYTES];
    out.extend_from_slice(payload);
    seal_in_place(&mut out, VERSION);
    out
}

/// Writes the header into the first `HEADER_BYTES` of `out`, which holds the
/// payload after them: no second copy of a large payload.
fn seal_in_place(out: &mut [u8], version: u32) {
    let payload = out.get(HEADER_BYTES..).unwrap_or_default();
    let (len, sum) = (payload.len(), checksum(payload));
    write_header(out, version, len, sum);
}

/// The header of a payload of `len` bytes whose checksum is `sum`, into the
/// first `HEADER_BYTES` of `out`.
fn write_header(out: &mut [u8], version: u32, len: usize, sum: u64) {
    let mut header = Vec::with_capacity(HEADER_BYTES);
    header.extend_from_slice(MAGIC);
    version.put(&mut header);
    (len as u64).put(&mut header);
    sum.put(&mut header);
    if let Some(head) = out.get_mut(..HEADER_BYTES) {
        head.copy_from_slice(&header);
    }
}

fn invalid(reason: impl Into<String>) -> Error {
    Error::InvalidSnapshot {
        reason: reason.into(),
    }
}

/// The store as snapshot bytes.
pub fn write(store: &Store) -> Vec<u8> {
    let mut w = Writer::new(vec![0; HEADER_BYTES]);
    write_payload(&mut w, store);
    let mut out = w.finish();
    seal_in_place(&mut out, VERSION);
    out
}

/// Bytes of each part `write_parts` hands on but the last: under the 2 MB
/// a Durable Object's SQLite value may hold.
pub const PART_BYTES: usize = 1 << 20;

/// The bytes `write` returns, handed to `emit` as numbered parts of
/// `part_bytes` (the last one shorter) as they are written: a host storing
/// them needs no copy of the whole snapshot, and neither does the engine.
/// Part 0 holds the header, whose length and checksum are known only at the
/// end, so it comes last. Returns the snapshot's length.
pub fn write_parts(store: &Store, part_bytes: usize, emit: &mut dyn FnMut(usize, &[u8])) -> usize {
    let part_bytes = part_bytes.max(HEADER_BYTES);
    let mut first: Option<Vec<u8>> = None;
    let mut hasher = Xxh3::new();
    let (mut parts, mut total) = (0usize, 0usize);
    // Every part but the first is handed on as it comes; the first, which
    // begins with the header's room, is kept until the checksum is known.
    let mut take = |part: &[u8]| {
        match first {
            None => {
                hasher.update(part.get(HEADER_BYTES..).unwrap_or_default());
                first = Some(part.to_vec());
            }
            Some(_) => {
                hasher.update(part);
                emit(parts, part);
            }
        }
        total += part.len();
        parts += 1;
    };
    let rest = {
        let mut w = Writer::spilling(vec![0; HEADER_BYTES], part_bytes, &mut take);
        write_payload(&mut w, store);
        w.finish()
    };
    // What follows the last whole part (at least the header's room when
    // nothing was handed on).
    if !rest.is_empty() {
        take(&rest);
    }
    let mut first = first.unwrap_or_default();
    write_header(&mut first, VERSION, total - HEADER_BYTES, hasher.digest());
    emit(0, &first);
    total
}

fn write_payload(w: &mut Writer, store: &Store) {
    let edge = &store.edge;
    edge.write_columns(w);
    write_arena(w, &edge.text);
    write_interner(w, &edge.projects);
    for names in edge.urls.parts() {
        write_interner(w, names);
    }
    let (filter_words, url_project, origin_words) = edge.url_trigrams.parts();
    w.column(&filter_words);
    w.column(url_project);
    w.column(&origin_words);
    let (wide_index, wide_words) = edge.url_trigrams.wide_parts();
    w.column(&wide_index);
    w.column(&wide_words);
    w.column(&ProjectRows::slot_counts(&edge.project));
    let functions = &store.functions;
    functions.write_columns(w);
    write_interner(w, &functions.projects);
    write_interner(w, &functions.functions);
    w.column(&ProjectRows::slot_counts(&functions.project));
    write_other(w, &store.other);
}

fn write_other(w: &mut Writer, other: &OtherTable) {
    other.write_columns(w);
    write_arena(w, &other.text);
    write_interner(w, &other.sources);
    write_interner(w, &other.projects);
}

/// A text arena: per block its kind (`BlockKind`) and its decoded length,
/// the blocks' bytes (compressed, an open block's text, or the hash and
/// length of a block in the host's storage), and each lane's open block.
fn write_arena(w: &mut Writer, text: &Arena) {
    let (blocks, open_of, dictionary) = text.parts();
    let kinds: Vec<u8> = blocks.iter().map(|b| b.kind as u8).collect();
    let lens: Vec<u32> = blocks.iter().map(|b| b.len).collect();
    let bytes: Vec<&[u8]> = blocks.iter().map(|b| &b.bytes[..]).collect();
    w.column(&kinds);
    w.column(&lens);
    w.blobs(&bytes);
    w.column(open_of);
    w.column(dictionary);
}

fn read_arena(r: &mut Reader, what: &str) -> Result<Arena> {
    let kinds: Vec<u8> = r.column(what)?;
    let lens: Vec<u32> = r.column(what)?;
    let bytes = r.blobs(what)?;
    let open_of: Vec<u32> = r.column(what)?;
    let dictionary: Vec<u8> = r.column(what)?;
    if kinds.len() != lens.len() || lens.len() != bytes.len() {
        return Err(invalid(format!("{what} has blocks of different counts")));
    }
    let blocks = kinds
        .iter()
        .zip(lens)
        .zip(bytes)
        .map(|((&kind, len), bytes)| {
            Some(StoredBlock {
                kind: BlockKind::from_byte(kind)?,
                len,
                bytes: bytes.into_vec().into(),
            })
        })
        .collect::<Option<Vec<_>>>()
        .ok_or_else(|| invalid(format!("{what} has a block of no known kind")))?;
    Arena::from_parts(blocks, open_of, dictionary).ok_or_else(|| {
        invalid(format!(
            "{what} has more blocks than spans address, an open block that is not UTF-8 of its length, a lane without an open block, or too long a dictionary"
        ))
    })
}

fn write_interner(w: &mut Writer, names: &Interner) {
    let (text, ends) = names.parts();
    w.text_of_pieces(text.len(), text.pieces());
    w.column(ends);
}

fn read_interner(r: &mut Reader, what: &str) -> Result<Interner> {
    let mut text = r.texts(what)?;
    let ends = r.column(what)?;
    let text = match (text.pop(), text.is_empty()) {
        (Some(text), true) => text,
        _ => return Err(invalid(format!("{what} is not one text"))),
    };
    Interner::from_parts(text, ends)
        .ok_or_else(|| invalid(format!("{what} are not cut where their text allows")))
}

/// The store a snapshot holds, checked whole before it is used. `on_checked`
/// runs once the header and checksum agree, before the payload is read (the
/// engine grows its memory there, not for bytes that are no snapshot).
pub fn read(bytes: &[u8], on_checked: impl FnOnce()) -> Result<Store> {
    let mut whole = Bytes(bytes);
    let header = read_header(&mut Reader::new(&mut whole))?;
    let payload = whole.0;
    if header.len != payload.len() as u64 {
        return Err(invalid("truncated: its length does not match its header"));
    }
    if header.sum != checksum(payload) {
        return Err(invalid("corrupted: its checksum does not match"));
    }
    on_checked();
    read_payload(&mut Reader::new(&mut whole))
}

/// A snapshot's header: its payload's length and checksum.
struct Header {
    len: u64,
    sum: u64,
}

fn read_header(r: &mut Reader) -> Result<Header> {
    const SHORT: &str = "too short to be a snapshot";
    if r.left() < HEADER_BYTES {
        return Err(invalid(SHORT));
    }
    if &r.raw::<8>(SHORT)? != MAGIC {
        return Err(invalid("not a log-endpoints snapshot (wrong magic bytes)"));
    }
    let version = u32::from_le_bytes(r.raw(SHORT)?);
    if version != VERSION {
        return Err(invalid(format!(
            "snapshot version {version}; this build reads version {VERSION}"
        )));
    }
    Ok(Header {
        len: u64::from_le_bytes(r.raw(SHORT)?),
        sum: u64::from_le_bytes(r.raw(SHORT)?),
    })
}

/// A snapshot arriving in parts, `total` bytes in all (a host reading it
/// from storage a part at a time): each part is read as it comes and then
/// dropped; only a value that straddles parts is joined. The payload's
/// checksum is taken on the way. A part that cannot be read is `Err` with
/// the reason.
pub struct Parts<I> {
    parts: I,
    part: Vec<u8>,
    at: usize,
    total: usize,
    /// Bytes handed to the reader so far.
    read: usize,
    /// Bytes of the parts taken so far.
    held: usize,
    /// The iterator has no more parts.
    ended: bool,
    /// The checksum of what the reader took after the header.
    hasher: Option<Xxh3>,
    /// Why the parts cannot be read (a part that is not bytes, too many bytes).
    broken: Option<String>,
}

/// Empty parts in a row after which an iterable is taken to be broken.
const MOST_EMPTY_PARTS: usize = 1 << 16;

impl<I: Iterator<Item = std::result::Result<Vec<u8>, String>>> Parts<I> {
    pub fn new(parts: I, total: usize) -> Parts<I> {
        Parts {
            parts,
            part: Vec::new(),
            at: 0,
            total,
            read: 0,
            held: 0,
            ended: false,
            hasher: None,
            broken: None,
        }
    }

    /// Takes the next part that holds a byte; false at the end or when broken.
    fn next_part(&mut self) -> bool {
        let mut empty = 0;
        while self.broken.is_none() && !self.ended {
            match self.parts.next() {
                None => self.ended = true,
                Some(Err(reason)) => self.broken = Some(reason),
                Some(Ok(part)) if self.held + part.len() > self.total => {
                    self.broken = Some(format!("its parts hold more than {} bytes", self.total));
                }
                Some(Ok(part)) if part.is_empty() => {
                    empty += 1;
                    if empty > MOST_EMPTY_PARTS {
                        self.broken = Some(format!("it gave {empty} empty parts in a row"));
                    }
                }
                Some(Ok(part)) => {
                    self.held += part.len();
                    (self.part, self.at) = (part, 0);
                    return true;
                }
            }
        }
        false
    }

    /// Reads what is left, for its checksum (a payload that did not read).
    fn skip_rest(&mut self) {
        const STEP: usize = 64 << 10;
        while self.left() > 0 && self.next(self.left().min(STEP)).is_some() {}
    }

    /// Why reading stopped short, if the parts are at fault.
    fn fault(&self) -> Option<String> {
        match &self.broken {
            Some(reason) => Some(reason.clone()),
            None if self.ended && self.held < self.total => Some(format!(
                "its parts hold {} bytes, not {}",
                self.held, self.total
            )),
            None => None,
        }
    }
}

impl<I: Iterator<Item = std::result::Result<Vec<u8>, String>>> Source for Parts<I> {
    fn left(&self) -> usize {
        self.total - self.read
    }

    fn next(&mut self, n: usize) -> Option<Cow<'_, [u8]>> {
        if n > self.left() {
            return None;
        }
        let here = self.part.len() - self.at;
        let bytes = if n <= here {
            let bytes = self.part.get(self.at..self.at + n)?;
            self.at += n;
            Cow::Borrowed(bytes)
        } else {
            // Room for a damaged length is refused, not a trap.
            let mut joined = Vec::new();
            joined.try_reserve_exact(n).ok()?;
            while joined.len() < n {
                let rest = self.part.get(self.at..).unwrap_or_default();
                let take = (n - joined.len()).min(rest.len());
                joined.extend_from_slice(rest.get(..take).unwrap_or_default());
                self.at += take;
                if joined.len() < n && !self.next_part() {
                    return None;
                }
            }
            Cow::Owned(joined)
        };
        if let Some(hasher) = self.hasher.as_mut() {
            hasher.update(&bytes);
        }
        self.read += n;
        Some(bytes)
    }
}

/// The store a snapshot in parts holds (`Parts`), checked as `read` checks
/// one held whole; the checksum is compared once the payload is read.
/// `on_header` runs once the header agrees with `total`, before the payload
/// is read (the engine grows its memory there, not on a claim alone).
pub fn read_parts<I>(parts: I, total: usize, on_header: impl FnOnce()) -> Result<Store>
where
    I: Iterator<Item = std::result::Result<Vec<u8>, String>>,
{
    let mut source = Parts::new(parts, total);
    let read = read_parts_from(&mut source, on_header);
    match source.fault() {
        Some(fault) => Err(invalid(fault)),
        None => read,
    }
}

fn read_parts_from<I>(source: &mut Parts<I>, on_header: impl FnOnce()) -> Result<Store>
where
    I: Iterator<Item = std::result::Result<Vec<u8>, String>>,
{
    let header = read_header(&mut Reader::new(source))?;
    if header.len != (source.total - HEADER_BYTES) as u64 {
        return Err(invalid(format!(
            "{} bytes were given for a snapshot of {}",
            source.total,
            header.len.saturating_add(HEADER_BYTES as u64)
        )));
    }
    on_header();
    source.hasher = Some(Xxh3::new());
    let store = read_payload(&mut Reader::new(source));
    // A payload that does not read may be a damaged one: the rest is hashed
    // too, so that damage is named as it is for a snapshot held whole.
    if store.is_err() {
        source.skip_rest();
    }
    let sum = source.hasher.take().map(|h| h.digest());
    if source.left() == 0 && sum != Some(header.sum) {
        return Err(invalid("corrupted: its checksum does not match"));
    }
    let store = store?;
    // Nothing may follow: a part after the last byte breaks the parts
    // (`fault`), as one that is not bytes does.
    source.next_part();
    Ok(store)
}

/// The tables a snapshot's payload holds, with every check.
fn read_payload(r: &mut Reader) -> Result<Store> {
    let mut edge = EdgeTable::read_columns(r)?;
    edge.text = read_arena(r, "edge text")?;
    edge.projects = read_interner(r, "edge project names")?;
    let origins = read_interner(r, "url origins")?;
    let directories = read_interner(r, "url directories")?;
    let urls = read_interner(r, "url names")?;
    edge.urls = UrlNames::from_parts(origins, directories, urls)
        .ok_or_else(|| invalid("a url name does not begin with an origin and a directory held"))?;
    let filter_words: Vec<u64> = r.column("url trigram filters")?;
    let url_project: Vec<Sym> = r.column("url projects")?;
    let origin_words: Vec<u32> = r.column("project origins")?;
    let wide_index: Vec<u32> = r.column("wide url filters")?;
    let wide_words: Vec<u64> = r.column("wide url filters' words")?;
    edge.url_trigrams = UrlTrigrams::from_parts(
        &filter_words,
        url_project,
        &origin_words,
        (&wide_index, &wide_words),
        (
            edge.projects.len(),
            edge.urls.len(),
            edge.urls.origins().len(),
        ),
    )
    .ok_or_else(|| invalid("the URL index does not fit the table's projects and URLs"))?;
    let edge_counts: Vec<u32> = r.column("edge rows per project")?;
    let mut functions = FunctionTable::read_columns(r)?;
    functions.projects = read_interner(r, "function project names")?;
    functions.functions = read_interner(r, "function names")?;
    let function_counts: Vec<u32> = r.column("function rows per project")?;
    let mut other = OtherTable::read_columns(r)?;
    other.text = read_arena(r, "other sources' text")?;
    other.sources = read_interner(r, "source names")?;
    other.projects = read_interner(r, "other sources' project names")?;
    if r.left() != 0 {
        return Err(invalid("bytes follow the last table"));
    }
    check_edge(&edge)?;
    check_functions(&functions)?;
    check_other(&other)?;
    // The project column is checked: each slot is a held project's or none's.
    edge.by_project =
        ProjectRows::from_counted_column(&edge.project, &edge_counts, edge.projects.len() + 1)
            .ok_or_else(|| invalid("edge rows per project are not the project column's"))?;
    functions.by_project = ProjectRows::from_counted_column(
        &functions.project,
        &function_counts,
        functions.projects.len() + 1,
    )
    .ok_or_else(|| invalid("function rows per project are not the project column's"))?;
    Ok(Store {
        edge,
        functions,
        other,
    })
}

/// What the columns' declarations check (lengths, names and text in
/// range), and what only the table knows: time order, request ranges, ids.
fn check_edge(t: &EdgeTable) -> Result<()> {
    t.check_columns()
        .map_err(|e| invalid(format!("edge table: {e}")))?;
    if !t.timestamp.is_sorted() {
        return Err(invalid("edge entries out of time order"));
    }
    // Every request row is some listed entry's: a row past the last end
    // would become the next listed entry's after a restore.
    let ends = &t.listed_end;
    if !ends.is_sorted() || ends.last().map_or(0, |&end| end as usize) != t.request_url.len() {
        return Err(invalid(
            "an edge entry's requests lie outside the request columns",
        ));
    }
    let (urls, listed) = (t.urls.len() as u64, ends.len() as u64);
    let mut pieces = t.request.pieces().zip(t.sole_request.pieces());
    if !pieces.all(|(requests, soles)| requests_fit(requests, soles, urls, listed)) {
        return Err(invalid(
            "an edge entry's request does not fit its sole_request, URLs or listed requests",
        ));
    }
    if !t.record.pieces().all(no_null_spans) {
        return Err(invalid("an edge entry's text lies outside the text chunks"));
    }
    Ok(())
}

/// Whether each entry's `request` fits its `sole_request` byte: a URL id
/// below `urls` (or `NONE`, exactly when the URL bit is clear) for a sole
/// request, a row below `listed` otherwise. As a fold without branches, a
/// piece at a time (`PointsInto` says why).
#[inline(never)]
fn requests_fit(requests: &[u32], soles: &[u8], urls: u64, listed: u64) -> bool {
    requests.len() == soles.len()
        && requests
            .iter()
            .zip(soles)
            .fold(true, |ok, (&request, &sole)| {
                let fits = match sole & SOLE {
                    0 => u64::from(request) < listed,
                    _ => {
                        (request == NONE || u64::from(request) < urls)
                            && (sole & SOLE_URL != 0) == (request != NONE)
                    }
                };
                ok & fits
            })
}

/// Whether every span of `piece` is some text's (a piece at a time, as
/// `PointsInto` says).
#[inline(never)]
fn no_null_spans(piece: &[Span]) -> bool {
    piece.iter().fold(true, |ok, s| ok & !s.is_null())
}

fn check_functions(t: &FunctionTable) -> Result<()> {
    t.check_columns()
        .map_err(|e| invalid(format!("function table: {e}")))?;
    if !t.timestamp.is_sorted() {
        return Err(invalid("function rows out of time order"));
    }
    Ok(())
}

fn check_other(t: &OtherTable) -> Result<()> {
    t.check_columns()
        .map_err(|e| invalid(format!("other sources' table: {e}")))?;
    if !t.timestamp.is_sorted() {
        return Err(invalid("other sources' entries out of time order"));
    }
    if t.source.iter().any(|&s| s == crate::store::NONE) || !t.record.pieces().all(no_null_spans) {
        return Err(invalid(
            "an other source's entry lacks its source, id or text",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(bytes: &[u8]) -> Result<Store> {
        super::read(bytes, || {})
    }
    use crate::store::Span;
    use crate::{ApiKey, Config, LogEndpoints};

    fn service_with_logs() -> LogEndpoints {
        let mut svc = LogEndpoints::new(Config {
            api_keys: vec![ApiKey::new("k").unwrap()],
            ..Config::default()
        });
        let edge = r#"{"id":"e1","timestamp":1795177796000000,"project":"p","event_message":"GET","metadata":[{"request":[{"url":"https://p.supabase.co/rest/v1/x","path":"/rest/v1/x"}]}]}"#;
        let function = r#"{"id":"f1","timestamp":1795177796000000,"metadata":[{"project_ref":"p","function_id":"f","execution_time_ms":3,"response":[{"status_code":200}]}]}"#;
        svc.ingest("edge_logs", edge.as_bytes()).unwrap();
        svc.ingest("function_edge_logs", function.as_bytes())
            .unwrap();
        let other = r#"[{"event_message":"login","metadata":{"level":"info"}}]"#;
        let source = crate::ingest::Source::logflare("gotrue.logs.prod", "source_name").unwrap();
        let form = crate::ingest::EntryForm::Logflare {
            received: 1795177796000000,
            seed: 7,
        };
        svc.ingest_source(&source, form, other.as_bytes()).unwrap();
        svc
    }

    #[test]
    fn an_empty_store_round_trips() {
        let empty = Store::default();
        let restored = read(&write(&empty)).unwrap();
        assert_eq!(write(&restored), write(&empty));
    }

    #[test]
    fn every_damaged_snapshot_is_refused() {
        let bytes = service_with_logs().snapshot();
        assert!(read(&bytes).is_ok());
        // Every truncation, and a flipped bit at every position.
        for len in 0..bytes.len() {
            let error = read(&bytes[..len]).err().map(|e| e.code());
            assert_eq!(error, Some("invalid_snapshot"), "cut at {len}");
        }
        for at in 0..bytes.len() {
            let mut damaged = bytes.clone();
            damaged[at] ^= 0x10;
            assert!(read(&damaged).is_err(), "bit flipped at {at}");
        }
        assert!(read(b"{\"id\":1}").is_err());
        let mut newer = bytes.clone();
        newer[8] = VERSION as u8 + 1;
        assert!(read(&newer)
            .err()
            .is_some_and(|e| e.to_string().contains(&format!("version {}", VERSION + 1))));
    }

    #[test]
    fn an_older_version_is_refused_by_its_number() {
        let mut v3 = service_with_logs().snapshot();
        v3[8..12].copy_from_slice(&3u32.to_le_bytes());
        let error = read(&v3).err().map(|e| e.to_string());
        assert!(error.is_some_and(|e| e.contains(&format!(
            "snapshot version 3; this build reads version {VERSION}"
        ))));
    }

    #[test]
    fn structure_is_checked_even_with_a_right_checksum() {
        let refused = |change: fn(&mut Store), expected: &str| {
            let mut store = read(&service_with_logs().snapshot()).unwrap();
            change(&mut store);
            let error = read(&write(&store)).err().map(|e| e.to_string());
            assert!(
                error.as_deref().is_some_and(|e| e.contains(expected)),
                "{error:?} lacks {expected}"
            );
        };
        refused(|s| s.edge.timestamp.push(0), "different lengths");
        refused(
            |s| {
                let f = &mut s.functions;
                f.timestamp.push(0);
                f.project.push(0);
                f.function.push(0);
                f.execution_time_ms.push(1.0);
                f.status_code.push(200);
            },
            "out of time order",
        );
        refused(
            |s| s.edge.project[0] = 7,
            "project points outside its projects",
        );
        refused(|s| s.edge.request[0] = 9, "does not fit its sole_request");
        refused(
            |s| s.edge.sole_request[0] ^= SOLE_URL,
            "does not fit its sole_request",
        );
        // Listed as an entry with no request or several, but none are.
        refused(
            |s| s.edge.sole_request[0] = 0,
            "does not fit its sole_request",
        );
        refused(|s| s.edge.listed_end.push(1), "outside the request columns");
        refused(
            |s| {
                s.edge.request_url.push(NONE);
                s.edge.request_areas.push(0);
            },
            "outside the request columns",
        );
        refused(
            |s| s.edge.record[0] = Span::from_parts(1 << 20, 0),
            "record points outside its text",
        );
        // Past the end of a block the store holds: a record running to the
        // end from past it, and one longer than what is left.
        refused(
            |s| s.edge.record[0] = Span::from_parts(0, u32::MAX),
            "record points outside its text",
        );
        refused(
            |s| s.edge.record[0] = Span::from_parts(0, (1 << 16) - 2),
            "record points outside its text",
        );
        refused(|s| s.edge.record[0] = Span::NULL, "text lies outside");
    }

    /// A store whose snapshot spans many parts: sealed text blocks, long
    /// columns and interned names.
    fn service_with_many_logs() -> LogEndpoints {
        let mut svc = service_with_logs();
        let edge: String = (0..3000)
            .map(|i| {
                format!(
                    r#"{{"id":"e{i}","timestamp":{},"project":"tenant-{}","event_message":"GET /rest/v1/t{}","metadata":[{{"request":[{{"url":"https://tenant-{}.supabase.co/rest/v1/t{}?id=eq.{i}","path":"/rest/v1/t{}"}}]}}]}}"#,
                    1795177796000000u64 + i * 1000,
                    i % 37,
                    i % 11,
                    i % 37,
                    i % 11,
                    i % 11
                ) + "\n"
            })
            .collect();
        svc.ingest("edge_logs", edge.as_bytes()).unwrap();
        svc
    }

    /// The parts `write_parts` hands on, in their order.
    fn parts_of(store: &Store, part_bytes: usize) -> (Vec<Vec<u8>>, usize) {
        let mut parts: Vec<Option<Vec<u8>>> = Vec::new();
        let total = write_parts(store, part_bytes, &mut |index, part| {
            if parts.len() <= index {
                parts.resize(index + 1, None);
            }
            assert!(
                parts[index].replace(part.to_vec()).is_none(),
                "part {index} twice"
            );
        });
        (parts.into_iter().map(Option::unwrap).collect(), total)
    }

    #[test]
    fn parts_join_to_the_whole_snapshot() {
        let svc = service_with_many_logs();
        let whole = svc.snapshot();
        let store = read(&whole).unwrap();
        assert!(whole.len() > 40_000, "{} bytes", whole.len());
        for part_bytes in [
            1,
            HEADER_BYTES,
            29,
            1000,
            4096,
            40_000,
            whole.len(),
            1 << 20,
        ] {
            let (parts, total) = parts_of(&store, part_bytes);
            assert_eq!(total, whole.len());
            let size = part_bytes.max(HEADER_BYTES);
            let (last, full) = parts.split_last().unwrap();
            assert!(full.iter().all(|p| p.len() == size), "{part_bytes}");
            assert!(
                !last.is_empty() && last.len() <= size,
                "{part_bytes}: last {} of {}",
                last.len(),
                parts.len()
            );
            assert_eq!(parts.concat(), whole, "parts of {part_bytes}");
        }
        // A snapshot of whole parts only: nothing is left after the last.
        let exact = (HEADER_BYTES..whole.len() / 2)
            .find(|size| whole.len() % size == 0)
            .unwrap();
        let (parts, _) = parts_of(&store, exact);
        assert!(parts.len() >= 2 && parts.iter().all(|p| p.len() == exact));
        assert_eq!(parts.concat(), whole);
        let (parts, _) = parts_of(&Store::default(), 1 << 20);
        assert_eq!(parts.concat(), write(&Store::default()));
    }

    fn cut(bytes: &[u8], sizes: &[usize]) -> Vec<Vec<u8>> {
        let (mut parts, mut at, mut i) = (Vec::new(), 0, 0);
        while at < bytes.len() {
            let end = (at + sizes[i % sizes.len()]).min(bytes.len());
            parts.push(bytes[at..end].to_vec());
            (at, i) = (end, i + 1);
        }
        parts
    }

    fn from_parts(parts: Vec<Vec<u8>>, total: usize) -> Result<Store> {
        read_parts(parts.into_iter().map(Ok), total, || {})
    }

    #[test]
    fn parts_read_as_the_whole_snapshot_does() {
        let whole = service_with_many_logs().snapshot();
        for sizes in [
            &[1 << 20][..],
            &[1],
            &[7, 3, 4096],
            &[28, 0, 50_000],
            &[33_000],
        ] {
            let store = from_parts(cut(&whole, sizes), whole.len()).unwrap();
            assert_eq!(write(&store), whole, "parts of {sizes:?}");
        }
    }

    #[test]
    fn parts_that_do_not_hold_the_snapshot_are_refused() {
        let whole = service_with_many_logs().snapshot();
        let parts = cut(&whole, &[4096]);
        let refused = |parts: Vec<std::result::Result<Vec<u8>, String>>, total: usize| {
            read_parts(parts.into_iter(), total, || {})
                .err()
                .map(|e| (e.code(), e.to_string()))
                .filter(|(code, _)| *code == "invalid_snapshot")
                .map(|(_, message)| message)
                .unwrap_or_default()
        };
        let ok = |parts: &[Vec<u8>]| parts.iter().cloned().map(Ok).collect::<Vec<_>>();
        let n = whole.len();
        assert!(refused(ok(&parts[..parts.len() - 1]), n).contains("its parts hold"));
        let mut more = ok(&parts);
        more.push(Ok(vec![0]));
        assert!(refused(more, n).contains(&format!("more than {n} bytes")));
        let mut odd = ok(&parts);
        odd.insert(3, Err("a part is not a Uint8Array but a string".into()));
        assert!(refused(odd, n).contains("not a Uint8Array but a string"));
        assert!(refused(ok(&parts), n + 1)
            .contains(&format!("{} bytes were given for a snapshot of {n}", n + 1)));
        assert!(refused(ok(&parts), n - 1).contains("were given for a snapshot of"));
        // A flipped bit anywhere: refused with the reason a whole snapshot
        // gets (past the header, its checksum).
        for at in (0..n).step_by(97) {
            let mut damaged = whole.clone();
            damaged[at] ^= 0x10;
            let reason = refused(ok(&cut(&damaged, &[4096])), n);
            let whole_reason = read(&damaged)
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
            assert!(
                !reason.is_empty() && whole_reason.contains(&reason),
                "bit flipped at {at}: {reason} / {whole_reason}"
            );
            if at >= HEADER_BYTES {
                assert!(reason.contains("checksum"), "bit flipped at {at}: {reason}");
            }
        }
    }

    #[test]
    fn a_count_past_what_memory_holds_is_refused_not_allocated() {
        // A header and a claim that agree on far more bytes than the parts
        // hold, and a first count to match: refused, not a trap.
        let whole = service_with_many_logs().snapshot();
        let claim = usize::MAX / 2;
        let mut damaged = whole.clone();
        damaged[12..20].copy_from_slice(&((claim - HEADER_BYTES) as u64).to_le_bytes());
        damaged[HEADER_BYTES..HEADER_BYTES + 8].copy_from_slice(&(claim as u64 / 16).to_le_bytes());
        let error = read_parts(cut(&damaged, &[4096]).into_iter().map(Ok), claim, || {}).err();
        assert_eq!(error.map(|e| e.code()), Some("invalid_snapshot"));
    }

    #[test]
    fn memory_is_grown_only_for_a_header_that_agrees() {
        let whole = service_with_many_logs().snapshot();
        let mut grown = false;
        let parts = cut(&whole, &[4096]).into_iter().map(Ok);
        assert!(read_parts(parts, whole.len() + 5, || grown = true).is_err());
        assert!(!grown);
        let parts = cut(&whole, &[4096]).into_iter().map(Ok);
        assert!(read_parts(parts, whole.len(), || grown = true).is_ok());
        assert!(grown);
    }
}
