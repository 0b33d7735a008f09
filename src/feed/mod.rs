//! Feeding a log file that arrives in pieces (a file stream, a fetch body,
//! gzipped or not) into a service: framing across piece boundaries, routing each
//! entry to the edge or the function stream by its fields, ingesting each stream
//! in batches of about `batch_bytes`, and naming rejected entries by their
//! place in the whole input. The CLI and the browser page feed files through it.
//!
//! Files are NDJSON, a JSON array, objects pretty-printed one after another
//! (`jq .` of NDJSON: a first line of `{` alone), or CSV with a header row naming
//! `timestamp` (and `id`, which every entry needs), as Supabase Studio's Logs Explorer exports results
//! (`metadata` as a JSON text column, `null` written as the word). Each is
//! read entry by entry as it arrives, so a file of any size is read in the
//! memory of one batch, and a store that fills stops the reading there. Each
//! may be gzip-compressed (told by its first bytes).

mod array;
mod csv_records;
mod gunzip;

use std::sync::OnceLock;

use regex::bytes::Regex;
use serde::Serialize;

use crate::error::{Error, Result};
use crate::ingest::{
    is_blank, is_csv_header, BatchForm, EntryForm, Framing as IngestFraming, IngestReport,
    Rejection, Source, Stream, GZIP_MAGIC,
};
use crate::service::LogEndpoints;
use crate::words::counted;
use array::{ArrayReader, Progress};
use csv_records::CsvReader;
use gunzip::Gunzip;

/// How files that are not logs begin (once gzip is unpacked), and what each is.
const NOT_LOGS: [(&[u8], &str); 6] = [
    (
        &GZIP_MAGIC,
        "gzip inside gzip (compressed twice): unpack it once (`gunzip`) and give what comes out",
    ),
    (
        b"PK\x03\x04",
        "a zip archive: unzip it and give the files inside",
    ),
    (
        &[0x28, 0xb5, 0x2f, 0xfd],
        "zstd-compressed: unpack it (`zstd -d`) and give what comes out (gzip is read as it is)",
    ),
    (
        &[0xfd, b'7', b'z', b'X', b'Z', 0],
        "xz-compressed: unpack it (`xz -d`) and give what comes out (gzip is read as it is)",
    ),
    (
        &[0xff, 0xfe],
        "UTF-16 text (its byte order mark says so): save it as UTF-8",
    ),
    (
        &[0xfe, 0xff],
        "UTF-16 text (its byte order mark says so): save it as UTF-8",
    ),
];

/// How many rejections a feed describes (all are counted); hosts that sum
/// several files' reports describe as many (`constants().reportedReasons`).
pub const REPORTED_REASONS: usize = 5;

/// Default size of one ingested batch.
pub const DEFAULT_BATCH_BYTES: usize = 8 << 20;

/// Fields only function (edge-function invocation) log entries carry. The
/// pattern is a constant, so `None` (it failed to compile) cannot happen.
fn function_fields() -> Option<&'static Regex> {
    static FIELDS: OnceLock<Option<Regex>> = OnceLock::new();
    FIELDS
        .get_or_init(|| Regex::new(r#""(function_id|project_ref|execution_time_ms)"\s*:"#).ok())
        .as_ref()
}

/// The stream an entry belongs to, by its fields.
pub fn detect_stream(entry: &[u8]) -> Stream {
    if function_fields().is_some_and(|fields| fields.is_match(entry)) {
        Stream::Function
    } else {
        Stream::Edge
    }
}

/// What a finished feed says: how many entries the input held, and what
/// became of them (rejections by their 0-based place in the whole input, the
/// first few listed as `"<source>: entry <n>: <reason>"`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FeedReport {
    pub entries: usize,
    #[serde(flatten)]
    pub report: IngestReport,
    /// Where and why the input stopped being whole, in words: gzip cut
    /// off, damaged or followed by other bytes, a JSON array that stops
    /// before its `]` or objects one after another cut inside one, or
    /// `finish_cut`. The whole entries before were read.
    pub ends_early: Option<String>,
    /// Why reading stopped early: the store filled. The entries read until
    /// then are kept and answered; the rest of the input is not read.
    pub store_full: Option<String>,
}

/// Whether the input is gzip, once its first two bytes are seen.
enum Packing {
    /// Fewer than two bytes have come: those that have.
    Undecided(Vec<u8>),
    Plain,
    Gzip(Box<Gunzip>),
}

/// How the input is framed, once its first non-blank byte is seen.
enum Framing {
    Undecided,
    /// NDJSON: complete lines are routed as they arrive.
    Lines,
    /// A JSON array, or objects one after another (`ArrayReader::stream`): each element read once it is whole.
    Array(ArrayReader),
    /// CSV with a header row: each record made an entry once it is whole.
    Csv(CsvReader),
}

impl Framing {
    /// What a file read element by element is, for messages.
    fn what(&self) -> &'static str {
        match self {
            Framing::Array(reader) if reader.is_stream() => "stream of JSON objects",
            _ => "JSON array",
        }
    }
}

/// One stream's pending batch: NDJSON lines, or (for array input) a JSON array.
#[derive(Default)]
struct Pending {
    text: Vec<u8>,
    /// 1-based entry number in the whole input of each pending entry.
    numbers: Vec<usize>,
}

pub struct LogFeed {
    forced: Option<Stream>,
    source: String,
    batch_bytes: usize,
    packing: Packing,
    framing: Framing,
    /// Whether pending batches are JSON arrays (the input was one, or CSV,
    /// whose `metadata` cells may hold line ends) or NDJSON.
    arrays: bool,
    carry: Vec<u8>,
    /// Per stream (the feed detects the edge and function streams only).
    pending: [Pending; 3],
    report: FeedReport,
    /// Set by `finish`: more input, or a second finish, is a mistake said so.
    finished: bool,
    /// The first entries, read before (`skip_first`): counted, not kept again.
    skip: usize,
    /// Once the store filled: what it held of its budget (bytes), and how
    /// many entries read were not kept (the batch it refused, and any read
    /// after it).
    full: Option<Filled>,
}

#[derive(Debug, Clone, Copy)]
struct Filled {
    used: usize,
    budget: usize,
    not_kept: usize,
}

impl LogFeed {
    /// `stream`: put every entry in this stream instead of detecting it.
    pub fn new(stream: Option<&str>, source: &str, batch_bytes: usize) -> Result<LogFeed> {
        Ok(LogFeed {
            forced: stream.map(Stream::from_name).transpose()?,
            source: source.to_owned(),
            batch_bytes: batch_bytes.max(1),
            packing: Packing::Undecided(Vec::new()),
            framing: Framing::Undecided,
            arrays: false,
            carry: Vec::new(),
            pending: Default::default(),
            report: FeedReport {
                entries: 0,
                report: IngestReport::new(REPORTED_REASONS),
                ends_early: None,
                store_full: None,
            },
            finished: false,
            full: None,
            skip: 0,
        })
    }

    /// Goes on with an input whose first `entries` were read before (a
    /// reading stopped there): they are counted, so entries keep their
    /// numbers in the input, and not kept again.
    pub fn skip_first(mut self, entries: usize) -> LogFeed {
        self.skip = entries;
        self
    }

    /// Whether the next entry is one read before (`skip_first`): it is counted and passed over.
    fn passes_over(&mut self) -> bool {
        let skipped = self.report.entries < self.skip;
        if skipped {
            self.report.entries += 1;
        }
        skipped
    }

    fn refuse_if_finished(&self) -> Result<()> {
        match self.finished {
            true => Err(Error::invalid(
                "feed",
                "it has finished: its report is final (make a new LogFeed for more input)",
            )),
            false => Ok(()),
        }
    }

    /// Entries seen so far.
    pub fn entries(&self) -> usize {
        self.report.entries
    }

    /// Entries accepted so far.
    pub fn accepted(&self) -> usize {
        self.report.report.accepted
    }

    /// Entries refused so far (not those a full store left out).
    pub fn rejected_total(&self) -> usize {
        self.report.report.rejected_total
    }

    /// What a reading of several files says of the `later` files it did not
    /// come to ("2 later files were not read"); empty for none.
    pub fn later_files_not_read(later: usize) -> String {
        match later {
            0 => String::new(),
            _ => format!(
                "{} not read",
                crate::words::counted(later, "later file was", "later files were")
            ),
        }
    }

    /// Why reading stopped (the store filled), once it has, from the counts so far.
    pub fn store_full(&self) -> Option<String> {
        let Filled {
            used,
            budget,
            not_kept,
        } = self.full?;
        Some(format!(
            "the store is full ({:.1} of its {:.1} MiB held; limits.maxStoreBytes): {} entries of {} were kept, {not_kept} read after them were not, and the rest of it was not read",
            used as f64 / 1048576.0,
            budget as f64 / 1048576.0,
            self.report.report.accepted,
            self.source,
        ))
    }

    /// Whether the rest of the input need not be given: the store filled,
    /// or the gzip data broke (`finish` says so).
    pub fn reads_no_more(&self) -> bool {
        self.full.is_some() || matches!(&self.packing, Packing::Gzip(gunzip) if gunzip.broke())
    }

    /// Adds the next piece of input (any split, even inside a line or a
    /// character, or inside gzip data); once `reads_no_more`, the rest is not read.
    pub fn push(&mut self, service: &mut LogEndpoints, bytes: &[u8]) -> Result<()> {
        self.refuse_if_finished()?;
        if self.reads_no_more() {
            return Ok(());
        }
        match &mut self.packing {
            Packing::Plain => self.push_plain(service, bytes),
            Packing::Gzip(_) => self.push_gzip(service, bytes),
            Packing::Undecided(head) if head.is_empty() && bytes.len() >= GZIP_MAGIC.len() => {
                self.packing = Self::packing_of(bytes);
                self.push(service, bytes)
            }
            Packing::Undecided(head) => {
                head.extend_from_slice(bytes);
                if head.len() < GZIP_MAGIC.len() {
                    return Ok(());
                }
                let head = std::mem::take(head);
                self.packing = Self::packing_of(&head);
                self.push(service, &head)
            }
        }
    }

    fn packing_of(start: &[u8]) -> Packing {
        match start.starts_with(&GZIP_MAGIC) {
            true => Packing::Gzip(Box::new(Gunzip::new())),
            false => Packing::Plain,
        }
    }

    fn push_gzip(&mut self, service: &mut LogEndpoints, bytes: &[u8]) -> Result<()> {
        let Packing::Gzip(mut gunzip) = std::mem::replace(&mut self.packing, Packing::Plain) else {
            return self.push_plain(service, bytes);
        };
        // A store that fills wants no more: the rest of the piece is not unpacked.
        let unpacked = gunzip.unpack(bytes, &mut |text| {
            self.push_plain(service, text)?;
            Ok(self.full.is_none())
        });
        self.packing = Packing::Gzip(gunzip);
        unpacked
    }

    fn push_plain(&mut self, service: &mut LogEndpoints, bytes: &[u8]) -> Result<()> {
        if self.full.is_some() {
            return Ok(());
        }
        if let Framing::Undecided = self.framing {
            // The framing is decided on the first non-blank bytes: `[` at
            // once, anything else (`{`: one object a line, or pretty-printed?
            // a CSV header?) once its line is whole. Only the new bytes are
            // searched for the line's end.
            self.carry.extend_from_slice(bytes);
            self.refuse_if_not_logs()?;
            // UTF-16 is told by its first four bytes.
            if self.carry.len() < 4 && self.carry.contains(&0) {
                return Ok(());
            }
            let text = self
                .carry
                .strip_prefix("\u{feff}".as_bytes())
                .unwrap_or(&self.carry);
            let Some(first) = text.iter().position(|b| !b.is_ascii_whitespace()) else {
                return Ok(());
            };
            let start = text.get(first..).unwrap_or_default();
            // `start` and the new bytes both end the bytes held.
            let first_line_whole = memchr::memrchr(b'\n', bytes).is_some_and(|end| {
                self.carry.len() - bytes.len() + end >= self.carry.len() - start.len()
            });
            if start.first() != Some(&b'[') && !first_line_whole {
                return Ok(());
            }
            let start = start.to_vec();
            self.carry.clear();
            self.decide(&start);
            return self.push_plain(service, &start);
        }
        match &mut self.framing {
            Framing::Array(array) => {
                array.push(bytes);
                self.read_framed(service, None).map(drop)
            }
            Framing::Csv(csv) => {
                csv.push(bytes);
                self.read_framed(service, None).map(drop)
            }
            _ => {
                let mut rest = bytes;
                while let Some(end) = rest.iter().position(|&b| b == b'\n') {
                    let (line, after) = rest.split_at(end);
                    rest = after.get(1..).unwrap_or_default();
                    if self.carry.is_empty() {
                        self.add_line(service, line)?;
                    } else {
                        let mut whole = std::mem::take(&mut self.carry);
                        whole.extend_from_slice(line);
                        self.add_line(service, &whole)?;
                    }
                }
                self.carry.extend_from_slice(rest);
                Ok(())
            }
        }
    }

    /// Refuses an input that begins as a snapshot, an archive, other
    /// compression or UTF-16 text does (told by its first bytes, once gzip
    /// is unpacked): read as lines, its first line was refused as not UTF-8
    /// and the rest as not JSON, and nothing said what it was.
    fn refuse_if_not_logs(&self) -> Result<()> {
        let start = self.carry.as_slice();
        let what = if crate::snapshot::has_magic(start) {
            "a saved store (a snapshot), not logs: open it instead (`LogEndpoints.fromSnapshot`, the CLI's `--open`; the page opens it when it is dropped, unpacked)"
        } else if let Some((_, what)) = NOT_LOGS.iter().find(|(magic, _)| start.starts_with(magic))
        {
            what
        } else if matches!(start, [a, 0, b, 0, ..] | [0, a, 0, b, ..] if *a != 0 && *b != 0) {
            "UTF-16 text (every other byte zero), not UTF-8: save it as UTF-8"
        } else {
            return Ok(());
        };
        Err(Error::UnreadableFile {
            reason: format!("{}: it is {what}", self.source),
        })
    }

    /// Picks the framing from the input's first non-blank bytes.
    fn decide(&mut self, start: &[u8]) {
        let first_line = start.split(|&b| b == b'\n').next().unwrap_or_default();
        self.framing = if start.first() == Some(&b'[') {
            Framing::Array(ArrayReader::default())
        } else if first_line.trim_ascii() == b"{" {
            // Objects pretty-printed one after another, as `jq .` writes them.
            Framing::Array(ArrayReader::stream())
        } else if is_csv_header(start) {
            Framing::Csv(CsvReader::default())
        } else {
            Framing::Lines
        };
        self.arrays = !matches!(self.framing, Framing::Lines);
    }

    /// Ingests everything still pending and says what happened.
    pub fn finish(&mut self, service: &mut LogEndpoints) -> Result<FeedReport> {
        self.finish_input(service, false)
    }

    /// `finish` for an input that broke off (a cut download, a read that
    /// failed or was stopped): the whole entries before the break are kept, and the one it
    /// went through is left out, since what was read of it is not what was
    /// written (a cut number reads as another number). An array's elements
    /// and CSV records are read up to the break.
    pub fn finish_cut(&mut self, service: &mut LogEndpoints) -> Result<FeedReport> {
        self.finish_input(service, true)
    }

    fn finish_input(&mut self, service: &mut LogEndpoints, broke_off: bool) -> Result<FeedReport> {
        self.refuse_if_finished()?;
        if let Packing::Undecided(head) = &mut self.packing {
            let head = std::mem::take(head);
            self.packing = Packing::Plain;
            self.push_plain(service, &head)?;
        }
        // Where the input stopped being whole, in words; `cut`: inside an entry.
        let (mut ending, cut) = match (&self.packing, broke_off) {
            _ if self.full.is_some() => (None, false),
            (_, true) => (Some(Ending::BrokeOff), true),
            (Packing::Gzip(gunzip), false) => match gunzip.flaw(true) {
                Some(flaw) if !gunzip.unpacked_any() => {
                    self.finished = true;
                    return Err(Error::UnreadableFile {
                        reason: format!("{} is not valid gzip ({})", self.source, flaw.not_gzip()),
                    });
                }
                Some(flaw) => (Some(Ending::Gzip(flaw.clone())), flaw.cuts_an_entry()),
                None => (None, false),
            },
            _ => (None, false),
        };
        if let Framing::Undecided = self.framing {
            // A one-line input: decide on what there is.
            let text = std::mem::take(&mut self.carry);
            let text = text.strip_prefix("\u{feff}".as_bytes()).unwrap_or(&text);
            let start = text.trim_ascii_start();
            if !start.is_empty() {
                self.decide(start);
                self.push_plain(service, start)?;
            }
        }
        // Once the store is full, what the readers still hold is not read
        // (a partial element there is no sign of a cut file).
        let progress = match self.full {
            None => self.read_framed(service, Some(cut))?,
            Some(_) => Progress::Closed,
        };
        match progress {
            Progress::Closed => {}
            Progress::Open if matches!(self.framing, Framing::Array(_)) => {
                // An array that stops before its end (a plain file cut off):
                // its whole elements were read, as from a cut download; with
                // none, it is no more a cut file than a broken one.
                if self.report.entries == 0 && !cut {
                    return Err(Error::UnreadableFile {
                        reason: format!(
                            "{} is not a valid {}: it ends before its first entry is whole",
                            self.source,
                            self.framing.what()
                        ),
                    });
                }
                ending.get_or_insert(Ending::Cut(self.framing.what()));
            }
            Progress::Open | Progress::Broken(_) => {}
        }
        // NDJSON's last line has no line end; an array's or CSV's readers are done.
        if !matches!(self.framing, Framing::Array(_) | Framing::Csv(_)) {
            let last = std::mem::take(&mut self.carry);
            if !cut && self.full.is_none() {
                self.add_line(service, &last)?;
            }
        }
        self.flush_all(service)?;
        self.report.store_full = self.store_full();
        let (source, entries) = (&self.source, self.report.entries);
        self.report.ends_early = ending.map(|ending| match ending {
            Ending::Gzip(flaw) => flaw.said(source, entries),
            Ending::Cut(what) => {
                ends_early(source, &format!("a {what} cut off before its end"), entries)
            }
            Ending::BrokeOff => ends_early(source, "it broke off", entries),
        });
        self.finished = true;
        Ok(self.report.clone())
    }

    fn add_line(&mut self, service: &mut LogEndpoints, line: &[u8]) -> Result<()> {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        // Files joined with `cat` keep each one's byte order mark.
        let line = line.strip_prefix("\u{feff}".as_bytes()).unwrap_or(line);
        if is_blank(line) {
            return Ok(());
        }
        if self.full.is_some() {
            return self.add(service, line);
        }
        if self.passes_over() {
            return Ok(());
        }
        // Refused on its own: in a batch it would refuse the whole batch.
        // (An array's elements and CSV records are text already.)
        if let Err(e) = std::str::from_utf8(line) {
            self.report.entries += 1;
            let number = self.report.entries;
            let reason = format!("{}: entry {number}: not UTF-8 text ({e})", self.source);
            self.report.report.reject(number - 1, reason);
            return Ok(());
        }
        self.add(service, line)
    }

    fn add(&mut self, service: &mut LogEndpoints, entry: &[u8]) -> Result<()> {
        if let Some(full) = &mut self.full {
            self.report.entries += 1;
            full.not_kept += 1;
            return Ok(());
        }
        if self.passes_over() {
            return Ok(());
        }
        let array = self.arrays;
        let stream = self.forced.unwrap_or_else(|| detect_stream(entry));
        self.report.entries += 1;
        let pending = self.pending_mut(stream);
        let separator: &[u8] = match (pending.text.is_empty(), array) {
            (true, true) => b"[",
            (true, false) => b"",
            (false, true) => b",",
            (false, false) => b"\n",
        };
        pending.text.extend_from_slice(separator);
        pending.text.extend_from_slice(entry);
        let number = self.report.entries;
        let pending = self.pending_mut(stream);
        pending.numbers.push(number);
        if pending.text.len() >= service.feed_batch_bytes(self.batch_bytes) {
            self.flush(service, stream)?;
        }
        Ok(())
    }

    /// Reads the whole entries of an array or CSV input that have arrived.
    /// `end`: the input has ended (`Some(cut)`: it broke off, and a flaw at
    /// its end is the break). A flaw ends the reading: the entries before
    /// it are kept, and the error says so.
    fn read_framed(&mut self, service: &mut LogEndpoints, end: Option<bool>) -> Result<Progress> {
        let cut = end == Some(true);
        let mut framing = std::mem::replace(&mut self.framing, Framing::Undecided);
        let source = self.source.clone();
        let mut add = |entry: &[u8]| self.add(service, entry);
        let read = match &mut framing {
            Framing::Array(array) => array.read(end, &mut add),
            Framing::Csv(csv) => csv
                .read(&source, end.is_some(), cut, &mut add)
                .map(|()| Progress::Open),
            _ => Ok(Progress::Open),
        };
        self.framing = framing;
        match read {
            Ok(Progress::Broken(reason)) if !cut => Err(self.stopped_at(
                service,
                Error::UnreadableFile {
                    reason: format!("{source} is not a valid {} ({reason})", self.framing.what()),
                },
            )),
            Ok(progress) => Ok(progress),
            Err(error) => Err(self.stopped_at(service, error)),
        }
    }

    /// The error that ends the reading at a flaw in the input: the entries
    /// read before it are ingested, and the error says how many were kept.
    /// The feed takes nothing more (its readers stopped inside a piece).
    fn stopped_at(&mut self, service: &mut LogEndpoints, error: Error) -> Error {
        self.finished = true;
        let Error::UnreadableFile { reason } = error else {
            return error;
        };
        // Entries read before (`skip_first`) were not kept by this reading.
        let read = self.report.entries.saturating_sub(self.skip);
        if let Err(other) = self.flush_all(service) {
            return other;
        }
        Error::UnreadableFile {
            reason: match read {
                0 => reason,
                _ => format!(
                    "{reason}; {} of the {read} entries before it were kept",
                    self.report.report.accepted
                ),
            },
        }
    }

    fn pending_mut(&mut self, stream: Stream) -> &mut Pending {
        let [edge, function, other] = &mut self.pending;
        match stream {
            Stream::Edge => edge,
            Stream::Function => function,
            Stream::Other => other,
        }
    }

    /// Ingests both streams' pending batches.
    fn flush_all(&mut self, service: &mut LogEndpoints) -> Result<()> {
        self.flush(service, Stream::Edge)?;
        self.flush(service, Stream::Function)
    }

    fn flush(&mut self, service: &mut LogEndpoints, stream: Stream) -> Result<()> {
        let pending = std::mem::take(self.pending_mut(stream));
        if pending.numbers.is_empty() {
            return Ok(());
        }
        let mut text = pending.text;
        if self.arrays {
            text.push(b']');
        }
        // Entries as the feed framed them: lines, or an array of them.
        let form = BatchForm {
            framing: match self.arrays {
                true => IngestFraming::Json,
                false => IngestFraming::Lines,
            },
            entries: EntryForm::Contract,
            received_at: None,
        };
        let source = Source::stream(stream.name())?;
        let report = match service.ingest_source(&source, form, &text) {
            Ok(report) => report,
            // A full store ends the reading: what was read is kept and
            // answered (this batch, refused whole, is not), and the report says so.
            Err(Error::StoreFull { used, budget, .. }) => {
                let full = self.full.get_or_insert(Filled {
                    used,
                    budget,
                    not_kept: 0,
                });
                full.not_kept += pending.numbers.len();
                return Ok(());
            }
            Err(Error::UnreadableBatch { reason }) => {
                return Err(Error::UnreadableFile {
                    reason: format!("{}: {reason}", self.source),
                })
            }
            Err(other) => return Err(other),
        };
        let mut renamed = IngestReport::new(0);
        renamed.accepted = report.accepted;
        renamed.newest_timestamp = report.newest_timestamp;
        renamed.rejected_total = report.rejected_total - report.rejected.len();
        for rejection in report.rejected {
            let number = pending.numbers.get(rejection.index).copied().unwrap_or(0);
            // A pending batch has one entry per line, so a syntax error names
            // the batch's line; the entry's place in the input replaces it.
            let line = format!("line {}: ", rejection.index + 1);
            let reason = rejection
                .reason
                .strip_prefix(&line)
                .unwrap_or(&rejection.reason);
            renamed.rejected.push(Rejection {
                index: number.saturating_sub(1),
                reason: format!("{}: entry {number}: {reason}", self.source),
            });
            renamed.rejected_total += 1;
        }
        self.report.report.absorb(renamed);
        Ok(())
    }
}

/// Why an input stopped being whole before its end.
enum Ending {
    Gzip(gunzip::GzipFlaw),
    /// What was cut off before its end (`Framing::what`).
    Cut(&'static str),
    /// The host said so (`finish_cut`).
    BrokeOff,
}

/// `"{source} ends early ({why}); the N whole entries before the break were read"`.
fn ends_early(source: &str, why: &str, entries: usize) -> String {
    let read = counted(entries, "whole entry", "whole entries");
    let were = if entries == 1 { "was" } else { "were" };
    format!("{source} ends early ({why}); the {read} before the break {were} read")
}

#[cfg(test)]
mod tests {
    use super::gunzip::tests::gzip;
    use super::*;

    #[test]
    fn later_files_not_read_are_counted_in_words() {
        assert_eq!(LogFeed::later_files_not_read(0), "");
        assert_eq!(
            LogFeed::later_files_not_read(1),
            "1 later file was not read"
        );
        assert_eq!(
            LogFeed::later_files_not_read(1200),
            "1,200 later files were not read"
        );
    }
    use crate::{ApiKey, Config, Params};

    fn service() -> LogEndpoints {
        LogEndpoints::new(Config {
            api_keys: vec![ApiKey::new("k").unwrap()],
            ..Config::default()
        })
    }

    const EDGE: &str = r#"{"id":"e1","timestamp":1795177796000000,"project":"p","metadata":[{"request":[{"url":"https://p.supabase.co/rest/v1/x","path":"/rest/v1/x"}]}]}"#;
    const FUNCTION: &str = r#"{"id":"f1","timestamp":1795177796000000,"metadata":[{"project_ref":"p","function_id":"f","execution_time_ms":3,"response":[{"status_code":200}]}]}"#;

    /// `n` edge entries, `e0` … (ids told apart).
    fn edge_entries(n: usize) -> Vec<String> {
        (0..n)
            .map(|i| EDGE.replace("\"e1\"", &format!("\"e{i}\"")))
            .collect()
    }

    fn feed_in_pieces(input: &str, piece: usize, batch_bytes: usize) -> (FeedReport, LogEndpoints) {
        let mut svc = service();
        let mut feeder = LogFeed::new(None, "in.ndjson", batch_bytes).unwrap();
        for chunk in input.as_bytes().chunks(piece) {
            feeder.push(&mut svc, chunk).unwrap();
        }
        (feeder.finish(&mut svc).unwrap(), svc)
    }

    fn store_of_one_mib() -> LogEndpoints {
        LogEndpoints::new(Config {
            api_keys: vec![ApiKey::new("k").unwrap()],
            limits: crate::Limits {
                max_store_bytes: 1 << 20,
                ..crate::Limits::default()
            },
            ..Config::default()
        })
    }

    /// A store that fills while a file is fed: the entries read until then
    /// are kept and answered, the feed takes no more, and its report says why
    /// it stopped and how many read were not kept (it threw, losing the
    /// report, and the other stream's batch).
    #[test]
    fn a_store_that_fills_ends_the_reading_and_keeps_what_was_read() {
        let mut svc = store_of_one_mib();
        let mut feeder = LogFeed::new(None, "big.ndjson", 1 << 20).unwrap();
        let mut lines = String::new();
        for i in 0..40_000 {
            let entry = if i % 4 == 0 { FUNCTION } else { EDGE };
            lines.push_str(
                &entry
                    .replace("\"e1\"", &format!("\"e{i}\""))
                    .replace("\"f1\"", &format!("\"f{i}\"")),
            );
            lines.push('\n');
        }
        for piece in lines.as_bytes().chunks(64 << 10) {
            feeder.push(&mut svc, piece).unwrap();
        }
        assert!(feeder.store_full().is_some());
        let report = feeder.finish(&mut svc).unwrap();
        let stats = svc.stats();
        assert_eq!(
            report.report.accepted,
            stats.edge_entries + stats.function_rows
        );
        assert!(report.report.accepted > 0 && report.entries < 40_000);
        let why = report.store_full.unwrap_or_default();
        let not_kept = report.entries - report.report.accepted - report.report.rejected_total;
        assert!(not_kept > 0);
        assert!(
            why.starts_with("the store is full (")
                && why.ends_with(&format!(
                    "MiB held; limits.maxStoreBytes): {} entries of big.ndjson were kept, {not_kept} read after them were not, and the rest of it was not read",
                    report.report.accepted
                )),
            "{why}"
        );
        // An array, CSV and gzip are read as they arrive: the reading stops there too.
        let array = format!("[{}]", lines.trim_end().replace('\n', ","));
        let mut csv = String::from("id,timestamp,project,event_message\n");
        for i in 0..40_000 {
            csv.push_str(&format!("e{i},1795177796000000,p,\"GET /x{i}\"\n"));
        }
        let zipped = gzip(lines.as_bytes());
        for (name, input) in [
            ("big.json", array.as_bytes()),
            ("big.csv", csv.as_bytes()),
            ("big.ndjson.gz", &zipped),
        ] {
            let mut svc = store_of_one_mib();
            let mut feeder = LogFeed::new(None, name, 1 << 20).unwrap();
            let mut pushed = 0;
            // A gzip piece unpacks to many slices, and the store fills in one of the first.
            let pieces = if name.ends_with(".gz") { 4 } else { 40 };
            for piece in input.chunks(input.len() / pieces) {
                if feeder.reads_no_more() {
                    assert!(feeder.store_full().is_some(), "{name}");
                    break;
                }
                feeder.push(&mut svc, piece).unwrap();
                pushed += piece.len();
            }
            assert!(pushed < input.len(), "{name}: read whole");
            if let Packing::Gzip(gunzip) = &feeder.packing {
                let unpacked = gunzip.bytes_read();
                assert!(
                    unpacked < pushed as u64,
                    "{name}: the piece under way was unpacked to its end"
                );
            }
            let report = feeder.finish(&mut svc).unwrap();
            assert!(report.entries < 40_000, "{name}: {report:?}");
            // What the readers held when the store filled is not read: no cut, no error.
            assert!(report.ends_early.is_none(), "{name}: {report:?}");
            let why = report.store_full.unwrap_or_default();
            assert!(
                why.ends_with(" read after them were not, and the rest of it was not read"),
                "{why}"
            );
        }
    }

    /// An array or CSV file is read entry by entry as its pieces arrive,
    /// batches ingested on the way: a file of any size is read in the
    /// memory of a batch (it was gathered whole first).
    #[test]
    fn arrays_and_csv_are_ingested_as_they_arrive() {
        let mut csv = String::from("id,timestamp,project,event_message\n");
        let mut array = String::from("[");
        for i in 0..4_000 {
            csv.push_str(&format!("e{i},1795177796000000,p,\"GET /x{i}\"\n"));
            array.push_str(&EDGE.replace("\"e1\"", &format!("\"e{i}\"")));
            array.push_str(",\n");
        }
        array.push_str(EDGE);
        array.push(']');
        for input in [array, csv] {
            let mut svc = service();
            let mut feeder = LogFeed::new(None, "in", 64 << 10).unwrap();
            let half = input.len() / 2;
            for piece in input.as_bytes()[..half].chunks(1000) {
                feeder.push(&mut svc, piece).unwrap();
            }
            let early = feeder.accepted();
            assert!(early > 1_000, "{early} accepted from the first half");
            feeder.push(&mut svc, &input.as_bytes()[half..]).unwrap();
            let report = feeder.finish(&mut svc).unwrap();
            assert_eq!(
                (report.entries, report.report.accepted, report.ends_early),
                (
                    4_001 - usize::from(input.starts_with("id")),
                    report.entries,
                    None
                )
            );
        }
    }

    /// An array broken in its middle ends the reading there: the entries
    /// before it are kept, and the error says so and names where it broke.
    #[test]
    fn a_broken_array_keeps_the_entries_before_the_break() {
        let second = EDGE.replace("\"e1\"", "\"e2\"");
        let broken = format!("[{EDGE},\n{second}\n{{\"id\":\"e3\"}}]");
        for piece in [1, 50, broken.len()] {
            let mut svc = service();
            let mut feeder = LogFeed::new(None, "x.json", 1 << 20).unwrap();
            let error = broken
                .as_bytes()
                .chunks(piece)
                .try_for_each(|chunk| feeder.push(&mut svc, chunk))
                .and_then(|()| feeder.finish(&mut svc).map(drop))
                .unwrap_err();
            assert_eq!(
                error.to_string(),
                "x.json is not a valid JSON array (a `,` or `]` is missing after entry 2); 2 of the 2 entries before it were kept"
            );
            assert_eq!(svc.stats().edge_entries, 2);
        }
        // CSV that stops being text likewise; the feed then takes nothing
        // more (finishing again read its header and first records twice).
        let csv = b"id,timestamp,project\ne1,1795177796000000,p\ne2,1795177796000000,caf\xe9\n";
        let mut svc = service();
        let mut feeder = LogFeed::new(None, "x.csv", 1 << 20).unwrap();
        let error = feeder.push(&mut svc, csv).unwrap_err();
        assert_eq!(
            error.to_string(),
            "x.csv is not readable CSV (entry 2: not UTF-8 text: invalid utf-8: invalid UTF-8 in field 2 near byte index 3); 1 of the 1 entries before it were kept"
        );
        assert_eq!(
            feeder.finish(&mut svc).unwrap_err().parameter(),
            Some("feed")
        );
        assert_eq!(svc.stats().edge_entries, 1);
    }

    /// A snapshot fed as logs, gzipped or not, and gzip compressed twice,
    /// are refused saying what they are, however the bytes are split.
    #[test]
    fn a_snapshot_or_gzip_inside_gzip_given_as_logs_is_named() {
        let mut svc = service();
        let snapshot = svc.snapshot();
        let zipped = gzip(&snapshot);
        let twice = gzip(&gzip(format!("{EDGE}\n").as_bytes()));
        let utf16 = |text: &str| -> Vec<u8> { text.bytes().flat_map(|b| [b, 0]).collect() };
        let (object, array, csv) = (
            utf16(&format!("{EDGE}\n")),
            utf16(&format!("[{EDGE}]")),
            utf16("id,timestamp\ne1,1\n"),
        );
        let zip = b"PK\x03\x04\x14\x00\x00\x00\x08\x00 edge.ndjson\n";
        for (bytes, said) in [
            (&snapshot[..], "a saved store (a snapshot)"),
            (&zipped[..], "a saved store (a snapshot)"),
            (&twice[..], "gzip inside gzip"),
            (&object[..], "UTF-16 text (every other byte zero)"),
            (&array[..], "UTF-16 text (every other byte zero)"),
            (&csv[..], "UTF-16 text (every other byte zero)"),
            (&gzip(&array), "UTF-16 text (every other byte zero)"),
            (
                &[&[0xff, 0xfe][..], &object].concat()[..],
                "UTF-16 text (its byte order mark",
            ),
            (&zip[..], "a zip archive"),
        ] {
            for piece in [1, 3, bytes.len()] {
                let mut feeder = LogFeed::new(None, "x.log", 1 << 20).unwrap();
                let refused = bytes
                    .chunks(piece)
                    .try_for_each(|chunk| feeder.push(&mut svc, chunk))
                    .and_then(|()| feeder.finish(&mut svc).map(drop));
                let message = refused.map_err(|e| e.to_string()).unwrap_err();
                assert!(
                    message.starts_with(&format!("x.log: it is {said}")),
                    "{piece}: {message}"
                );
            }
        }
        // A log that copytruncate left beginning with zero bytes is read:
        // its first line is refused, the rest kept.
        let padded = [&[0u8; 64][..], format!("{EDGE}\n{EDGE}\n").as_bytes()].concat();
        let mut feeder = LogFeed::new(None, "x.log", 1 << 20).unwrap();
        feeder.push(&mut svc, &padded).unwrap();
        let report = feeder.finish(&mut svc).unwrap();
        assert_eq!(
            (report.report.accepted, report.report.rejected_total),
            (1, 1)
        );
    }

    /// Objects pretty-printed one after another (`jq .` of an NDJSON file)
    /// read as the NDJSON they came from, at any split (each line was an
    /// entry refused as not JSON); a cut one is left out and said.
    #[test]
    fn pretty_printed_objects_read_as_their_ndjson() {
        let entries: Vec<String> = (0..40)
            .map(|i| match i % 3 {
                0 => FUNCTION.replace("\"f1\"", &format!("\"f{i}\"")),
                _ => EDGE.replace("\"e1\"", &format!("\"e{i}\"")),
            })
            .collect();
        let pretty: String = entries
            .iter()
            .map(|entry| {
                let value: serde_json::Value = serde_json::from_str(entry).unwrap();
                serde_json::to_string_pretty(&value).unwrap() + "\n"
            })
            .collect();
        let (ndjson, ndjson_svc) = feed_in_pieces(&(entries.join("\n") + "\n"), 4096, 1 << 20);
        for text in [pretty.clone(), format!("\n\n{pretty}")] {
            for piece in [1, 13, 4096] {
                let (report, svc) = feed_in_pieces(&text, piece, 1 << 10);
                assert_eq!(
                    (
                        report.entries,
                        report.report.accepted,
                        report.ends_early.as_deref()
                    ),
                    (40, 40, None),
                    "pieces of {piece}"
                );
                assert_eq!(svc.stats().edge_entries, ndjson_svc.stats().edge_entries);
                assert_eq!(svc.stats().function_rows, ndjson_svc.stats().function_rows);
            }
        }
        assert_eq!(ndjson.report.accepted, 40);
        let (cut, _) = feed_in_pieces(&pretty[..pretty.len() - 30], 100, 1 << 10);
        assert_eq!(
            cut.ends_early.as_deref(),
            Some("in.ndjson ends early (a stream of JSON objects cut off before its end); the 39 whole entries before the break were read")
        );
    }

    /// An input gone on with after its first entries (`skip_first`) keeps
    /// only the rest, and names rejections by their place in the whole input.
    #[test]
    fn an_input_gone_on_with_keeps_only_the_entries_after_those_read() {
        let entries = edge_entries(10);
        let mut lines = entries.clone();
        lines[7] = "not json".to_owned();
        let ndjson = lines.join("\n") + "\n";
        let array = format!("[{}]", entries.join(",\n"));
        let mut csv = String::from("id,timestamp,project,event_message\n");
        for i in 0..10 {
            csv.push_str(&format!("c{i},1795177796000000,p,x\n"));
        }
        for (input, rejected) in [(&ndjson, 1), (&array, 0), (&csv, 0)] {
            for piece in [1, 17, input.len()] {
                let mut svc = service();
                let mut feeder = LogFeed::new(None, "in", 1 << 20).unwrap().skip_first(4);
                for chunk in input.as_bytes().chunks(piece) {
                    feeder.push(&mut svc, chunk).unwrap();
                }
                let report = feeder.finish(&mut svc).unwrap();
                assert_eq!(
                    (
                        report.entries,
                        report.report.accepted,
                        report.report.rejected_total
                    ),
                    (10, 6 - rejected, rejected),
                    "{input:.20} in pieces of {piece}"
                );
                assert_eq!(svc.stats().edge_entries, 6 - rejected);
                if rejected > 0 {
                    assert_eq!(report.report.rejected[0].index, 7);
                }
            }
        }
        // A flaw after the entries passed over counts only those this reading kept.
        let broken = format!("[{},\n{{]", entries[..6].join(",\n"));
        let mut svc = service();
        let mut feeder = LogFeed::new(None, "in", 1 << 20).unwrap().skip_first(4);
        let refused = feeder
            .push(&mut svc, broken.as_bytes())
            .and_then(|()| feeder.finish(&mut svc).map(drop))
            .unwrap_err()
            .to_string();
        assert!(
            refused.ends_with("; 2 of the 2 entries before it were kept"),
            "{refused}"
        );
    }

    /// Gzip input, in one member or several (`cat a.gz b.gz`), reads as
    /// the text it unpacks to, in each framing and at any split.
    #[test]
    fn gzip_input_reads_as_its_text() {
        let entries = edge_entries(300);
        let ndjson = entries.join("\n") + "\n";
        let array = format!("[{}]", entries.join(",\n"));
        for text in [&ndjson, &array] {
            let (first, second) = text.split_at(text.len() / 3);
            let mut members = gzip(first.as_bytes());
            members.extend(gzip(second.as_bytes()));
            for piece in [1, 100, members.len()] {
                let mut svc = service();
                let mut feeder = LogFeed::new(None, "x.gz", 4 << 10).unwrap();
                for chunk in members.chunks(piece) {
                    feeder.push(&mut svc, chunk).unwrap();
                }
                let report = feeder.finish(&mut svc).unwrap();
                assert_eq!(
                    (report.report.accepted, report.ends_early),
                    (300, None),
                    "pieces of {piece}"
                );
            }
        }
    }

    /// Gzip that breaks off, is damaged, or is followed by other bytes
    /// keeps what unpacked before the flaw, and the report says where
    /// reading ended; a file none of whose data unpacks is not gzip.
    #[test]
    fn a_gzip_flaw_ends_the_reading_there_and_says_so() {
        let entries: Vec<String> = (0..3000)
            .map(|i| EDGE.replace("\"e1\"", &format!("\"e{i:04}\"")))
            .collect();
        let whole = gzip((entries.join("\n") + "\n").as_bytes());
        let feed = |bytes: &[u8]| {
            let mut svc = service();
            let mut feeder = LogFeed::new(None, "x.gz", 64 << 10).unwrap();
            for chunk in bytes.chunks(4096) {
                if feeder.reads_no_more() {
                    break;
                }
                feeder.push(&mut svc, chunk).unwrap();
            }
            feeder.finish(&mut svc).map_err(|e| e.to_string())
        };
        let cut = feed(&whole[..whole.len() / 2]).unwrap();
        let kept = cut.report.accepted;
        assert!(kept > 100 && kept < 3000, "{cut:?}");
        assert_eq!(
            cut.ends_early.as_deref(),
            Some(format!("x.gz ends early (cut-off gzip); the {} whole entries before the break were read", crate::words::grouped(kept)).as_str())
        );
        assert_eq!(
            cut.report.rejected_total, 0,
            "the entry the cut went through is left out"
        );

        // Damage that breaks the deflate codes (a reserved block type, in a
        // second member), and damage that decodes to other bytes until
        // gzip's checksum at the member's end.
        let mut second = gzip((entries.join("\n") + "\n").as_bytes());
        second[10] = 0b111;
        let broken = [&whole[..], &second[..]].concat();
        let said = feed(&broken).unwrap().ends_early.unwrap_or_default();
        let at = whole.len() + 11;
        assert_eq!(said, format!("x.gz ends early (damaged gzip: invalid block type at byte {at}; the entries just before it may be damaged too); the 3,000 whole entries before the break were read"));
        let mut damaged = whole.clone();
        let middle = damaged.len() / 2;
        damaged[middle..middle + 200].fill(0xa5);
        let said = feed(&damaged).unwrap().ends_early.unwrap_or_default();
        assert!(
            said.starts_with("x.gz fails gzip's own check (incorrect data check at byte "),
            "{said}"
        );

        let mut trailed = whole.clone();
        trailed.extend(b"not gzip");
        let report = feed(&trailed).unwrap();
        assert_eq!(
            report.report.accepted, 3000,
            "every entry of the gzip data is whole"
        );
        assert_eq!(
            report.ends_early.as_deref(),
            Some(format!("x.gz ends early (bytes that are not gzip follow its gzip data at byte {}); the 3,000 whole entries before the break were read", whole.len()).as_str())
        );

        let refused = feed(&[0x1f, 0x8b, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]).unwrap_err();
        assert!(
            refused.contains("x.gz is not valid gzip (unknown compression method at byte "),
            "{refused}"
        );
        let refused = feed(&whole[..5]).unwrap_err();
        assert!(
            refused.ends_with("x.gz is not valid gzip (it stops before any data)"),
            "{refused}"
        );
    }

    /// An input cut at every byte keeps exactly the entries wholly before
    /// the cut, in each framing, and never one the cut went through.
    #[test]
    fn a_cut_input_keeps_the_whole_entries_before_the_cut() {
        let entry = |i: usize| EDGE.replace("\"e1\"", &format!("\"e{i}\""));
        let entries: Vec<String> = (0..4).map(entry).collect();
        let ndjson = entries.join("\n") + "\n";
        let array = format!("[{}]", entries.join(",\n "));
        let (csv, csv_ends) = {
            let mut text = String::from("id,timestamp,project,event_message,metadata\n");
            let mut ends = Vec::new();
            for i in 0..4 {
                // The third record's message holds a line end, inside quotes.
                let message = if i == 2 { "\"GET\nPOST\"" } else { "GET" };
                text.push_str(&format!(
                    "e{i},17951777960{i:05},p,{message},\"[{{\"\"request\"\":[]}}]\"\n"
                ));
                ends.push(text.len());
            }
            (text, ends)
        };
        for (name, input) in [("ndjson", &ndjson), ("array", &array), ("csv", &csv)] {
            // Where each entry's text ends in the input: it is whole from there on.
            let ends: Vec<usize> = match name {
                "csv" => csv_ends.clone(),
                _ => (0..4)
                    .map(|i| input.find(&entries[i]).unwrap() + entries[i].len())
                    .collect(),
            };
            for cut in 0..=input.len() {
                let mut svc = service();
                let mut feeder = LogFeed::new(None, "cut", 64).unwrap();
                feeder.push(&mut svc, &input.as_bytes()[..cut]).unwrap();
                let report = feeder.finish_cut(&mut svc).unwrap();
                let whole = ends
                    .iter()
                    .filter(|&&end| match name {
                        // A line is whole with its line end; an element with what follows it.
                        "ndjson" => end < cut,
                        "array" => input
                            .get(end..cut)
                            .is_some_and(|after| after.trim_start().starts_with([',', ']'])),
                        _ => end <= cut,
                    })
                    .count();
                assert_eq!(
                    (report.report.accepted, report.report.rejected_total),
                    (whole, 0),
                    "{name} cut at {cut}: {:?}",
                    &input[..cut]
                );
                assert!(report.ends_early.is_some());
                // A plain file cut off (no gzip to say so): an array that
                // stops before its end reads as far, and says it ended early.
                if name == "array" && cut > 0 {
                    let mut svc = service();
                    let mut feeder = LogFeed::new(None, "cut", 64).unwrap();
                    feeder.push(&mut svc, &input.as_bytes()[..cut]).unwrap();
                    let plain = feeder
                        .finish(&mut svc)
                        .map(|r| (r.report.accepted, r.ends_early.is_some()));
                    let expected = match whole {
                        0 => None,
                        _ => Some((whole, cut < input.len())),
                    };
                    assert_eq!(
                        plain.ok(),
                        expected,
                        "array cut at {cut}, finished as whole"
                    );
                }
            }
        }
    }

    /// A CSV `metadata` cell written over several lines (pretty-printed JSON)
    /// is one entry's metadata, kept as written.
    #[test]
    fn a_csv_metadata_cell_may_hold_line_ends() {
        let csv = "id,timestamp,project,metadata\n\
                   e1,1795177796000000,p,\"[\n  {\"\"request\"\": [{\"\"url\"\": \"\"https://p.supabase.co/x\"\"}]}\n]\"\n\
                   e2,1795177796000001,p,[]\n";
        for piece in [1, 7, 4096] {
            let (report, _) = feed_in_pieces(csv, piece, 1 << 20);
            assert_eq!(
                (
                    report.entries,
                    report.report.accepted,
                    report.report.rejected_total
                ),
                (2, 2, 0),
                "{:?}",
                report.report.rejected
            );
        }
    }

    /// A line that is not UTF-8, or that is an array, is one entry refused;
    /// the lines batched with it are kept, and the file reads to its end.
    #[test]
    fn a_line_that_is_not_text_or_is_an_array_is_refused_alone() {
        let second = EDGE.replace("\"e1\"", "\"e2\"");
        let input = [
            EDGE.as_bytes(),
            b"\n{\"id\":\"caf\xe9\"}\n[",
            FUNCTION.as_bytes(),
            b"]\n",
            second.as_bytes(),
            b"\n",
            FUNCTION.as_bytes(),
        ]
        .concat();
        let mut svc = service();
        let mut feeder = LogFeed::new(None, "in.ndjson", 1 << 20).unwrap();
        feeder.push(&mut svc, &input).unwrap();
        let report = feeder.finish(&mut svc).unwrap();
        assert_eq!(
            (
                report.entries,
                report.report.accepted,
                report.report.rejected_total
            ),
            (5, 3, 2)
        );
        let reasons: Vec<(usize, &str)> = report
            .report
            .rejected
            .iter()
            .map(|r| (r.index, r.reason.as_str()))
            .collect();
        assert!(
            matches!(&reasons[..], [(1, utf8), (2, array)]
                if utf8.starts_with("in.ndjson: entry 2: not UTF-8 text")
                    && array.starts_with("in.ndjson: entry 3: ")
                    && array.contains("not a JSON object")),
            "{reasons:?}"
        );
    }

    #[test]
    fn routes_by_fields_whatever_the_pieces() {
        // The last line as `cat` leaves a second file's first: after its byte order mark.
        let ndjson = format!("\u{feff}{EDGE}\r\n{FUNCTION}\n\nnot json\n\u{feff}{EDGE}");
        let array = format!("  [{EDGE},\n  {FUNCTION},\n  5]");
        for piece in [1, 3, 7, 64, 4096] {
            for batch_bytes in [1, 100, 1 << 20] {
                let (report, svc) = feed_in_pieces(&ndjson, piece, batch_bytes);
                assert_eq!(
                    (
                        report.entries,
                        report.report.accepted,
                        report.report.rejected_total
                    ),
                    (4, 3, 1)
                );
                assert_eq!(report.report.rejected.len(), 1);
                let rejection = &report.report.rejected[0];
                assert_eq!(rejection.index, 2);
                assert!(
                    rejection
                        .reason
                        .starts_with("in.ndjson: entry 3: not valid JSON"),
                    "{rejection:?}"
                );
                assert_eq!(
                    (svc.stats().edge_entries, svc.stats().function_rows),
                    (2, 1)
                );

                let (report, svc) = feed_in_pieces(&array, piece, batch_bytes);
                assert_eq!(
                    (
                        report.entries,
                        report.report.accepted,
                        report.report.rejected_total
                    ),
                    (3, 2, 1)
                );
                let rejection = &report.report.rejected[0];
                assert_eq!(rejection.index, 2);
                assert_eq!(
                    rejection.reason,
                    "in.ndjson: entry 3: entry is not a JSON object"
                );
                assert_eq!(
                    (svc.stats().edge_entries, svc.stats().function_rows),
                    (1, 1)
                );
            }
        }
        let (_, mut svc) = feed_in_pieces(&ndjson, 5, 64);
        let params = Params::from_pairs([("project", "p"), ("project_tier", "FREE")]).unwrap();
        let out = svc
            .query("logs.all", &params, Some("k"), 1_795_177_797_000_000)
            .unwrap();
        assert!(out.body.contains("\"e1\""));
    }

    #[test]
    fn studio_csv_exports_are_entries() {
        let csv = "id,timestamp,event_message,metadata\r\n\
            e1,1795177796000000,GET | 200 | /rest/v1/x,\"[{\"\"request\"\":[{\"\"url\"\":\"\"https://p.supabase.co/rest/v1/x\"\",\"\"path\"\":\"\"/rest/v1/x\"\"}]}]\"\r\n\
            f1,2026-11-20T12:29:56.000Z,null,\"[{\"\"project_ref\"\":\"\"p\"\",\"\"function_id\"\":\"\"f\"\",\"\"execution_time_ms\"\":3}]\"\r\n\
            bad,,x,null\r\n";
        for piece in [1, 7, 4096] {
            let (report, svc) = feed_in_pieces(csv, piece, 64);
            assert_eq!(
                (
                    report.entries,
                    report.report.accepted,
                    report.report.rejected_total
                ),
                (3, 2, 1),
                "{report:?}"
            );
            let rejection = &report.report.rejected[0];
            assert_eq!(
                (rejection.index, rejection.reason.as_str()),
                (2, "in.ndjson: entry 3: missing `timestamp`")
            );
            assert_eq!(
                (svc.stats().edge_entries, svc.stats().function_rows),
                (1, 1)
            );
        }
        // metadata is kept as written (key order, number forms); other cells are text.
        let exact = "id,timestamp,event_message,project,metadata\n\
            e9,1795177796000000,{not json,p,\"[{\"\"z\"\":1.50,\"\"a\"\":[]}]\"\n";
        let (report, mut svc) = feed_in_pieces(exact, 3, 64);
        assert_eq!(report.report.accepted, 1, "{report:?}");
        let params = Params::from_pairs([("project", "p"), ("project_tier", "FREE")]).unwrap();
        let body = svc
            .query("logs.all", &params, Some("k"), 1_795_177_797_000_000)
            .unwrap()
            .body;
        assert!(
            body.contains(r#""event_message":"{not json","metadata":[{"z":1.50,"a":[]}]"#),
            "{body}"
        );
        assert!(!is_csv_header(b"{\"id\":1}"));
        assert!(!is_csv_header(b"not,a,log"));
        assert!(is_csv_header(b"\"timestamp\",\"id\"\r\n1,2"));
        assert!(
            !is_csv_header(b"timestamp\n{\"id\":1}"),
            "one column is a stray line, not a header"
        );
    }

    /// A finished feed's report is final: more input, or finishing again,
    /// is refused naming the feed (it had answered zeros, or taken lines
    /// no report would count).
    #[test]
    fn a_finished_feed_takes_nothing_more() {
        let mut svc = service();
        let mut feed = LogFeed::new(None, "in.ndjson", 1 << 20).unwrap();
        feed.push(&mut svc, format!("{EDGE}\n").as_bytes()).unwrap();
        assert_eq!(feed.finish(&mut svc).unwrap().report.accepted, 1);
        for refused in [
            feed.push(&mut svc, b"{}\n").unwrap_err(),
            feed.finish(&mut svc).unwrap_err(),
            feed.finish_cut(&mut svc).unwrap_err(),
        ] {
            assert_eq!(
                (refused.status(), refused.parameter()),
                (400, Some("feed")),
                "{refused}"
            );
        }
    }

    /// Studio's default query selects no `id`: the file is refused once,
    /// naming the column, rather than read as JSON line by line.
    #[test]
    fn a_csv_export_without_ids_is_refused_naming_the_column() {
        let csv = "timestamp,event_message,metadata\n1795177796000000,GET /,[]\n";
        let mut svc = service();
        let mut feeder = LogFeed::new(None, "export.csv", 64).unwrap();
        let error = feeder
            .push(&mut svc, csv.as_bytes())
            .and_then(|()| feeder.finish(&mut svc).map(|_| ()))
            .unwrap_err();
        assert_eq!(error.code(), "unreadable_batch");
        let message = error.to_string();
        assert!(
            message.starts_with(
                "export.csv has no `id` column (its columns: timestamp, event_message, metadata)"
            ),
            "{message}"
        );
        // Names are read trimmed, as the header is recognised.
        let spaced = "timestamp, id ,project\n1795177796000000,e1,p\n";
        let (report, _) = feed_in_pieces(spaced, 5, 64);
        assert_eq!(report.report.accepted, 1, "{report:?}");
    }

    /// A plain array cut inside a character (a multi-byte one split) reads
    /// as cut there; a syntax error before the cut is still a broken file.
    #[test]
    fn an_array_cut_inside_a_character_reads_as_cut() {
        let entry = |id: &str, message: &str| {
            format!(
                r#"{{"id":"{id}","timestamp":1795177796000000,"project":"p","event_message":"{message}"}}"#
            )
        };
        let text = format!("[{},\n{}]", entry("a", "ok"), entry("b", "café"));
        let cut = text.find('é').unwrap() + 1;
        let finish = |bytes: &[u8]| {
            let mut svc = service();
            let mut feeder = LogFeed::new(None, "x.json", 1 << 20).unwrap();
            feeder
                .push(&mut svc, bytes)
                .and_then(|()| feeder.finish(&mut svc))
                .map(|r| (r.report.accepted, r.ends_early.is_some()))
                .map_err(|e| e.to_string())
        };
        assert_eq!(finish(&text.as_bytes()[..cut]), Ok((1, true)));
        let broken = format!("[{}}},\n{}]", entry("a", "ok"), entry("b", "café"));
        let cut = broken.find('é').unwrap() + 1;
        let refused = finish(&broken.as_bytes()[..cut]).unwrap_err();
        assert!(
            refused.contains("x.json is not a valid JSON array"),
            "{refused}"
        );
    }

    #[test]
    fn a_broken_array_is_an_error() {
        let mut svc = service();
        let mut feeder = LogFeed::new(None, "x.json", 100).unwrap();
        feeder.push(&mut svc, b"[{\"id\": 1,").unwrap();
        let error = feeder.finish(&mut svc).unwrap_err();
        assert_eq!(error.code(), "unreadable_batch");
        assert!(error
            .to_string()
            .contains("x.json is not a valid JSON array"));
        assert!(LogFeed::new(Some("postgres_logs"), "x", 1).is_err());
    }
}
