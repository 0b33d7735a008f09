//! Snapshots: the whole store (both tables, their text and their names) as
//! versioned, checksummed bytes, and back. Restoring copies columns instead of
//! parsing JSON, so a large store is read once and reopened fast. Anything that
//! is not a snapshot this version wrote (foreign, truncated or corrupted bytes)
//! is an `invalid_snapshot` error, never a panic or a half-built store.
//!
//! Layout (little-endian): magic `LGENDSNP`, version `u32`, payload length
//! `u64`, XXH3-64 of the payload `u64`, payload. The payload is the edge table,
//! the function table, then the other sources' table, each column as a count
//! and its values, each text as a length and its UTF-8. A table's free text is
//! stored as its deflate blocks are held (restoring decodes none of them).
//! Each project's rows are rebuilt (a pass over a column); the URL index is
//! stored (rebuilding it hashes every URL). Version 10 (text in deflate blocks
//! against the arena's dictionary) reads no older version: the edge worker replays its stored batches when
//! its snapshot is refused, and a saved file is made again from its logs.
//!
//! Restoring is meant to cost little more than copying the bytes: XXH3 and the
//! UTF-8 check (simdutf8) use wasm's 128-bit SIMD; the name maps are built on
//! first use (`Interner`). Version 1 (CRC-32) is no longer read.

use crate::error::{Error, Result};
use crate::store::codec::{Fixed, Reader, Writer};
use crate::store::text::StoredBlock;
use crate::store::{
    Arena, EdgeTable, FunctionTable, Interner, OtherTable, ProjectRows, Store, Sym, UrlNames,
    UrlTrigrams,
};

const MAGIC: &[u8; 8] = b"LGENDSNP";
const VERSION: u32 = 10;
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
    let (head, payload) = out.split_at_mut(HEADER_BYTES);
    let mut header = Vec::with_capacity(HEADER_BYTES);
    header.extend_from_slice(MAGIC);
    version.put(&mut header);
    (payload.len() as u64).put(&mut header);
    checksum(payload).put(&mut header);
    head.copy_from_slice(&header);
}

fn invalid(reason: impl Into<String>) -> Error {
    Error::InvalidSnapshot {
        reason: reason.into(),
    }
}

/// The store as snapshot bytes.
pub fn write(store: &Store) -> Vec<u8> {
    let mut w = Writer {
        out: vec![0; HEADER_BYTES],
    };
    let edge = &store.edge;
    edge.write_columns(&mut w);
    write_arena(&mut w, &edge.text);
    write_interner(&mut w, &edge.projects);
    for names in edge.urls.parts() {
        write_interner(&mut w, names);
    }
    let (filter_words, url_project, origin_words) = edge.url_trigrams.parts();
    w.column(&filter_words);
    w.column(url_project);
    w.column(&origin_words);
    let (wide_index, wide_words) = edge.url_trigrams.wide_parts();
    w.column(&wide_index);
    w.column(&wide_words);
    let functions = &store.functions;
    functions.write_columns(&mut w);
    write_interner(&mut w, &functions.projects);
    write_interner(&mut w, &functions.functions);
    write_other(&mut w, &store.other);
    seal_in_place(&mut w.out, VERSION);
    w.out
}

fn write_other(w: &mut Writer, other: &OtherTable) {
    other.write_columns(w);
    write_arena(w, &other.text);
    write_interner(w, &other.sources);
    write_interner(w, &other.projects);
}

/// A text arena: per block whether it is sealed and its decoded length,
/// the blocks' bytes (compressed, or an open block's text), and each lane's
/// open block.
fn write_arena(w: &mut Writer, text: &Arena) {
    let (blocks, open_of, dictionary) = text.parts();
    let sealed: Vec<u8> = blocks.iter().map(|b| u8::from(b.sealed)).collect();
    let lens: Vec<u32> = blocks.iter().map(|b| b.len).collect();
    let bytes: Vec<&[u8]> = blocks.iter().map(|b| &b.bytes[..]).collect();
    w.column(&sealed);
    w.column(&lens);
    w.blobs(&bytes);
    w.column(open_of);
    w.column(dictionary);
}

fn read_arena(r: &mut Reader, what: &str) -> Result<Arena> {
    let sealed: Vec<u8> = r.column(what)?;
    let lens: Vec<u32> = r.column(what)?;
    let bytes = r.blobs(what)?;
    let open_of: Vec<u32> = r.column(what)?;
    let dictionary: Vec<u8> = r.column(what)?;
    let blocks = (sealed.len() == lens.len() && lens.len() == bytes.len())
        .then(|| {
            sealed
                .iter()
                .zip(lens)
                .zip(bytes)
                .map(|((&sealed, len), bytes)| StoredBlock {
                    sealed: sealed != 0,
                    len,
                    bytes: bytes.into_vec().into(),
                })
                .collect()
        })
        .ok_or_else(|| invalid(format!("{what} has blocks of different counts")))?;
    Arena::from_parts(blocks, open_of, dictionary).ok_or_else(|| {
        invalid(format!(
            "{what} has more blocks than spans address, an open block that is not UTF-8 of its length, a lane without an open block, or too long a dictionary"
        ))
    })
}

fn write_interner(w: &mut Writer, names: &Interner) {
    let (text, ends) = names.parts();
    w.texts(&[text]);
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

/// The store a snapshot holds, checked whole before it is used.
pub fn read(bytes: &[u8]) -> Result<Store> {
    let (header, payload) = bytes
        .split_at_checked(HEADER_BYTES)
        .ok_or_else(|| invalid("too short to be a snapshot"))?;
    let (magic, rest) = header.split_at(8);
    if magic != MAGIC {
        return Err(invalid("not a log-endpoints snapshot (wrong magic bytes)"));
    }
    let (version, rest) = rest.split_at(4);
    let (length, sum) = rest.split_at(8);
    let version = u32::take(version).unwrap_or(0);
    if version != VERSION {
        return Err(invalid(format!(
            "snapshot version {version}; this build reads version {VERSION}"
        )));
    }
    if u64::take(length) != Some(payload.len() as u64) {
        return Err(invalid("truncated: its length does not match its header"));
    }
    if u64::take(sum) != Some(checksum(payload)) {
        return Err(invalid("corrupted: its checksum does not match"));
    }
    let mut r = Reader { rest: payload };
    let mut edge = EdgeTable::read_columns(&mut r)?;
    edge.text = read_arena(&mut r, "edge text")?;
    edge.projects = read_interner(&mut r, "edge project names")?;
    let origins = read_interner(&mut r, "url origins")?;
    let urls = read_interner(&mut r, "url names")?;
    edge.urls = UrlNames::from_parts(origins, urls)
        .ok_or_else(|| invalid("a url name does not begin with an origin held"))?;
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
    let mut functions = FunctionTable::read_columns(&mut r)?;
    functions.projects = read_interner(&mut r, "function project names")?;
    functions.functions = read_interner(&mut r, "function names")?;
    let mut other = OtherTable::read_columns(&mut r)?;
    other.text = read_arena(&mut r, "other sources' text")?;
    other.sources = read_interner(&mut r, "source names")?;
    other.projects = read_interner(&mut r, "other sources' project names")?;
    if !r.rest.is_empty() {
        return Err(invalid("bytes follow the last table"));
    }
    check_edge(&edge)?;
    check_functions(&functions)?;
    check_other(&other)?;
    edge.by_project = ProjectRows::from_column(&edge.project);
    functions.by_project = ProjectRows::from_column(&functions.project);
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
    let requests = t.request_url.len() as u64;
    if !t.requests.iter().fold(true, |ok, &(first, count)| {
        ok & (u64::from(first) + u64::from(count) <= requests)
    }) {
        return Err(invalid(
            "an edge entry's requests lie outside the request columns",
        ));
    }
    if t.record.iter().any(|s| s.is_null()) {
        return Err(invalid("an edge entry's text lies outside the text chunks"));
    }
    Ok(())
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
    if t.source.contains(&crate::store::NONE) || t.record.iter().any(|s| s.is_null()) {
        return Err(invalid(
            "an other source's entry lacks its source, id or text",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
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
        refused(
            |s| s.edge.requests[0] = (0, 9),
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
            |s| s.edge.record[0] = Span::from_parts(0, (1 << 17) - 2),
            "record points outside its text",
        );
        refused(|s| s.edge.record[0] = Span::NULL, "text lies outside");
    }
}
