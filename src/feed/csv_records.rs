//! CSV with a header row read record by record as its bytes arrive, each
//! record made one JSON entry. The bytes up to the last line end outside a
//! quoted cell are whole records; they are parsed by the `csv` crate as the
//! whole file would be, and the bytes held are those of the record still
//! arriving.

use csv::{ReaderBuilder, StringRecord, Trim};

use crate::error::{Error, Result};
use crate::json;

/// Where a byte stands in a CSV record, as the `csv` crate reads it (`"`
/// quotes, doubled inside a quoted cell; a quote inside an unquoted cell is
/// a character).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum Cell {
    #[default]
    Start,
    Unquoted,
    Quoted,
    QuoteInQuoted,
}

#[derive(Default)]
pub(super) struct CsvReader {
    unread: Vec<u8>,
    /// How far `unread` has been scanned, and where the scan stands there.
    scanned: usize,
    cell: Cell,
    /// The end of the whole records in `unread`: just after a line end outside quotes.
    whole: usize,
    headers: Option<StringRecord>,
    /// Records handed on so far.
    records: usize,
    record: StringRecord,
    entry: String,
}

impl CsvReader {
    pub(super) fn push(&mut self, bytes: &[u8]) {
        self.unread.extend_from_slice(bytes);
        let new = self.unread.get(self.scanned..).unwrap_or_default();
        for (at, &byte) in new.iter().enumerate() {
            self.cell = match (self.cell, byte) {
                (Cell::Quoted, b'"') => Cell::QuoteInQuoted,
                (Cell::Quoted, _) => Cell::Quoted,
                (Cell::Start, b'"') | (Cell::QuoteInQuoted, b'"') => Cell::Quoted,
                (_, b',' | b'\r') => Cell::Start,
                (_, b'\n') => {
                    self.whole = self.scanned + at + 1;
                    Cell::Start
                }
                _ => Cell::Unquoted,
            };
        }
        self.scanned = self.unread.len();
    }

    /// Hands each whole record that has arrived to `each`, as a JSON entry.
    /// `at_end`: no more bytes arrive, and the last record needs no line
    /// end; `cut`: the input broke off, and a record the break went through
    /// is left out. `source` names the input in errors.
    pub(super) fn read(
        &mut self,
        source: &str,
        at_end: bool,
        cut: bool,
        each: &mut dyn FnMut(&[u8]) -> Result<()>,
    ) -> Result<()> {
        // A quote left open at the end would make the rest of the file one
        // cell (the crate reads it so): the records before it are read, and it is refused.
        let open_quote = at_end && !cut && matches!(self.cell, Cell::Quoted);
        let end = match at_end && !cut && !open_quote {
            true => self.unread.len(),
            false => self.whole,
        };
        // A header cut off names no columns: there is nothing to read.
        if end == 0 {
            return self.refuse_open_quote(source, open_quote);
        }
        let Self {
            unread,
            headers,
            records,
            record,
            entry,
            ..
        } = self;
        // The crate's positions count from the piece read: the entry is named instead.
        let unreadable = |e: csv::Error, entry: Option<usize>| Error::UnreadableFile {
            reason: match (e.kind(), entry) {
                (csv::ErrorKind::Utf8 { err, .. }, Some(entry)) => {
                    format!("{source} is not readable CSV (entry {entry}: not UTF-8 text: {err})")
                }
                _ => format!("{source} is not readable CSV ({e})"),
            },
        };
        // Header names are read trimmed, as `is_csv_header` reads them.
        let mut reader = ReaderBuilder::new()
            .flexible(true)
            .trim(Trim::Headers)
            .has_headers(headers.is_none())
            .from_reader(unread.get(..end).unwrap_or_default());
        let headers = match headers {
            Some(headers) => headers,
            None => headers.insert(with_ids(
                source,
                reader.headers().map_err(|e| unreadable(e, None))?,
            )?),
        };
        while reader
            .read_record(record)
            .map_err(|e| unreadable(e, Some(*records + 1)))?
        {
            entry.clear();
            entry.push('{');
            for (i, (column, cell)) in headers.iter().zip(record.iter()).enumerate() {
                if i > 0 {
                    entry.push(',');
                }
                json::push_str(entry, column);
                entry.push(':');
                push_cell(entry, column, cell);
            }
            entry.push('}');
            each(entry.as_bytes())?;
            *records += 1;
        }
        unread.drain(..end);
        self.scanned -= end;
        self.whole = 0;
        self.refuse_open_quote(source, open_quote)
    }

    fn refuse_open_quote(&self, source: &str, open_quote: bool) -> Result<()> {
        match open_quote {
            true => Err(Error::UnreadableFile {
                reason: format!(
                    "{source} is not readable CSV (entry {}: a quoted cell opens and never closes)",
                    self.records + 1
                ),
            }),
            false => Ok(()),
        }
    }
}

/// The header row, if it names `id`: every entry would be refused for its
/// lack, so the file is refused once, naming the column.
fn with_ids(source: &str, headers: &StringRecord) -> Result<StringRecord> {
    match headers.iter().any(|column| column == "id") {
        true => Ok(headers.clone()),
        false => Err(Error::UnreadableFile {
            reason: format!(
                "{source} has no `id` column (its columns: {}); export with `id` \
                 in the query's select list, e.g. `select id, timestamp, \
                 event_message, metadata from edge_logs`",
                headers.iter().collect::<Vec<_>>().join(", ")
            ),
        }),
    }
}

/// Writes one CSV cell as the JSON value of its column: `metadata` is kept as
/// the JSON text it is (as Studio wrote it); `null` and an empty cell are
/// null; a `timestamp` of digits is a number; every other cell is a string.
fn push_cell(entry: &mut String, column: &str, cell: &str) {
    let is_json = |cell: &str| serde_json::from_str::<serde::de::IgnoredAny>(cell).is_ok();
    let is_micros = |cell: &str| cell.len() < 20 && cell.bytes().all(|b| b.is_ascii_digit());
    if cell.is_empty() || cell == "null" {
        entry.push_str("null");
    } else if (column == "metadata" && is_json(cell)) || (column == "timestamp" && is_micros(cell))
    {
        entry.push_str(cell);
    } else {
        json::push_str(entry, cell);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries_in_pieces(text: &[u8], cuts: &[usize]) -> Vec<String> {
        let mut reader = CsvReader::default();
        let mut entries = Vec::new();
        let mut each = |entry: &[u8]| {
            entries.push(String::from_utf8_lossy(entry).into_owned());
            Ok(())
        };
        let mut from = 0;
        for &to in cuts.iter().chain([&text.len()]) {
            reader.push(&text[from..to]);
            reader.read("x.csv", false, false, &mut each).unwrap();
            from = to;
        }
        reader.read("x.csv", true, false, &mut each).unwrap();
        entries
    }

    /// Split anywhere, in two or three pieces, a file reads as it does
    /// whole: quoted line ends, doubled quotes, a quote inside an unquoted
    /// cell (not a quoted cell's start), CRLF, a blank line.
    #[test]
    fn records_read_alike_however_the_bytes_arrive() {
        let text = "id,timestamp,event_message,metadata\r\n\
                    a,1,ab\"c,\"x\ny\"\r\n\
                    b,2,\"say \"\"hi\"\"\n, twice\",[]\n\
                    \n\
                    c,3,\"\",\"[{\"\"k\"\":\"\"v\"\"}]\"\n\
                    d,4,end"
            .as_bytes();
        let whole = entries_in_pieces(text, &[]);
        assert_eq!(whole.len(), 4, "{whole:?}");
        assert_eq!(
            whole[0],
            r#"{"id":"a","timestamp":1,"event_message":"ab\"c","metadata":"x\ny"}"#
        );
        for one in 0..=text.len() {
            assert_eq!(entries_in_pieces(text, &[one]), whole, "cut at {one}");
            for two in (one..=text.len()).step_by(7) {
                assert_eq!(
                    entries_in_pieces(text, &[one, two]),
                    whole,
                    "cut at {one}, {two}"
                );
            }
        }
    }

    /// A quote that opens and never closes would make the rest of the file
    /// one cell: the records before it are read, and the file is refused
    /// there, naming the entry (it was read as one entry, silently).
    #[test]
    fn a_quote_left_open_is_refused_after_the_records_before_it() {
        let text = b"id,timestamp,event_message\na,1,ok\nb,2,\"never closed\nc,3,lost\nd,4,lost\n";
        let mut reader = CsvReader::default();
        let mut read = Vec::new();
        reader.push(text);
        let mut each = |entry: &[u8]| {
            read.push(String::from_utf8_lossy(entry).into_owned());
            Ok(())
        };
        reader.read("x.csv", false, false, &mut each).unwrap();
        let error = reader.read("x.csv", true, false, &mut each).unwrap_err();
        assert_eq!(
            error.to_string(),
            "x.csv is not readable CSV (entry 2: a quoted cell opens and never closes)"
        );
        assert_eq!(read, [r#"{"id":"a","timestamp":1,"event_message":"ok"}"#]);
    }

    #[test]
    fn a_file_without_ids_is_refused_naming_the_column() {
        let mut reader = CsvReader::default();
        reader.push(b"timestamp,event_message\n1,x\n");
        let error = reader
            .read("x.csv", false, false, &mut |_| Ok(()))
            .unwrap_err();
        assert!(
            error
                .to_string()
                .starts_with("x.csv has no `id` column (its columns: timestamp, event_message)"),
            "{error}"
        );
    }
}
