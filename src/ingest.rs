//! Reading batches: framing (JSON array or NDJSON, as UTF-8 bytes), per-entry
//! validation with index and reason, and extraction of the fields the endpoints
//! read. Output is a list of staged rows borrowing from the input; the store
//! copies them in only once the whole batch has been read.

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::error::{Error, Result};
use crate::limits::Limits;
use crate::timestamp::{self, Micros};
use scan::Scan;

mod scan;

/// Where a batch's entries are kept: the two log streams the endpoints read
/// (docs/contract.md, "Entries"), and the entries of every other source,
/// kept under their source's name for the day an endpoint reads them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Stream {
    #[serde(rename = "edge_logs")]
    Edge,
    #[serde(rename = "function_edge_logs")]
    Function,
    #[serde(rename = "other_sources")]
    Other,
}

impl Stream {
    /// One of the two streams the endpoints read, by name or alias.
    pub fn from_name(name: &str) -> Result<Stream> {
        match name {
            "edge_logs" | "cloudflare.logs.prod" => Ok(Stream::Edge),
            "function_edge_logs" | "deno-relay-logs" => Ok(Stream::Function),
            _ => Err(Error::UnknownStream {
                name: name.chars().take(100).collect(),
            }),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Stream::Edge => "edge_logs",
            Stream::Function => "function_edge_logs",
            Stream::Other => "other_sources",
        }
    }
}

/// Longest source name taken (Logflare's names are short; this bounds what a
/// name costs in every row that carries it).
pub const MAX_SOURCE_NAME_BYTES: usize = 256;

/// A batch's source: the stream its entries go to, and the name they are kept
/// under (the stream's own name for the two the endpoints read, whatever the
/// sender named it for any other).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Source {
    pub stream: Stream,
    pub name: String,
}

impl Source {
    /// A stream the endpoints read, by name or alias (`/api/logs/{stream}`,
    /// `ingest`): any other name is 400 `unknown_stream`.
    pub fn stream(name: &str) -> Result<Source> {
        let stream = Stream::from_name(name)?;
        Ok(Source {
            stream,
            name: stream.name().to_owned(),
        })
    }

    /// A source as Logflare's ingest API names it (`source_name`): the two
    /// streams by name or alias, and any other name kept under that name.
    /// `parameter` is where the name came from, for the error of a bad one.
    pub fn logflare(name: &str, parameter: &str) -> Result<Source> {
        if let Ok(source) = Source::stream(name) {
            return Ok(source);
        }
        let problem = if name.trim().is_empty() {
            Some("is empty".to_owned())
        } else if name.len() > MAX_SOURCE_NAME_BYTES {
            Some(format!(
                "is {} bytes long, longer than the limit of {MAX_SOURCE_NAME_BYTES} bytes",
                name.len()
            ))
        } else if name.chars().any(char::is_control) {
            Some("holds control characters".to_owned())
        } else {
            None
        };
        match problem {
            Some(problem) => Err(Error::invalid(
                parameter,
                format!("the source name {problem}"),
            )),
            None => Ok(Source {
                stream: Stream::Other,
                name: name.to_owned(),
            }),
        }
    }
}

/// How a body frames its entries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Framing {
    /// A JSON array, `{"batch": [...]}`, one object, or NDJSON, told apart by the body.
    #[default]
    Detect,
    /// One JSON value (a body sent as `application/json`): an array,
    /// `{"batch": [...]}` or one object; anything else is an unreadable body.
    Json,
    /// NDJSON only: one entry per line, whatever a line holds (a file fed in
    /// pieces, whose lines are framed already: a line that is an array is
    /// one entry, refused as not an object, not the batch's framing).
    Lines,
}

/// How a batch reads: its framing and its entries, and, for a deployment's
/// batch, when its clock received it: entries past the retention then are
/// refused (`shard::Split`), not acknowledged and dropped later unseen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchForm {
    pub framing: Framing,
    pub entries: EntryForm,
    pub received_at: Option<Micros>,
}

impl From<EntryForm> for BatchForm {
    fn from(entries: EntryForm) -> BatchForm {
        BatchForm {
            framing: Framing::Detect,
            entries,
            received_at: None,
        }
    }
}

/// How a batch's entries read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryForm {
    /// As docs/contract.md, "Entries", says: an entry lacking `id` or a
    /// valid `timestamp` is refused.
    Contract,
    /// As Logflare's ingest API normalises them (docs/contract.md,
    /// "Logflare's ingest API"): a missing `id` is generated from `seed` (the batch's
    /// content) and the entry's place, so a batch sent again gets the same
    /// ids; a missing timestamp is `received`; `message` is the event message.
    Logflare { received: Micros, seed: u128 },
}

impl EntryForm {
    /// The id of the entry at `index` that has none; `None` where ids are required.
    fn generated_id(&self, index: usize) -> Option<String> {
        let EntryForm::Logflare { seed, .. } = self else {
            return None;
        };
        let mut bytes = [0u8; 24];
        bytes[..16].copy_from_slice(&seed.to_le_bytes());
        bytes[16..].copy_from_slice(&(index as u64).to_le_bytes());
        let hash = xxhash_rust::xxh3::xxh3_128(&bytes).to_le_bytes();
        Some(
            uuid::Builder::from_random_bytes(hash)
                .into_uuid()
                .hyphenated()
                .to_string(),
        )
    }

    /// The timestamp of an entry that has none; `None` where it is required.
    fn received(&self) -> Option<Micros> {
        match self {
            EntryForm::Contract => None,
            EntryForm::Logflare { received, .. } => Some(*received),
        }
    }
}

/// An entry that was not kept: its 0-based position in the batch (or file) and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rejection {
    pub index: usize,
    pub reason: String,
}

/// What became of a batch's entries: how many were kept, and those that were
/// not, listed up to a cap and all counted. One type for a store's ingest, a
/// split batch, and a file fed in pieces.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct IngestReport {
    pub accepted: usize,
    pub rejected: Vec<Rejection>,
    pub rejected_total: usize,
    /// Newest timestamp among the accepted entries (µs), `None` when none were.
    #[serde(default)]
    pub newest_timestamp: Option<Micros>,
    /// How many rejections are listed (all are counted).
    #[serde(skip, default = "no_cap")]
    cap: usize,
}

fn no_cap() -> usize {
    usize::MAX
}

impl IngestReport {
    /// An empty report listing at most `cap` rejections.
    pub fn new(cap: usize) -> IngestReport {
        IngestReport {
            accepted: 0,
            rejected: Vec::new(),
            rejected_total: 0,
            newest_timestamp: None,
            cap,
        }
    }

    /// Counts a rejection, and lists it while under the cap.
    pub fn reject(&mut self, index: usize, reason: impl fmt::Display) {
        self.rejected_total += 1;
        if self.rejected.len() < self.cap {
            self.rejected.push(Rejection {
                index,
                reason: reason.to_string(),
            });
        }
    }

    /// Adds what another report counted (its rejections keep their indexes).
    pub(crate) fn absorb(&mut self, other: IngestReport) {
        self.accepted += other.accepted;
        let unlisted = other.rejected_total - other.rejected.len();
        for rejection in other.rejected {
            self.reject(rejection.index, rejection.reason);
        }
        self.rejected_total += unlisted;
        self.newest_timestamp = self.newest_timestamp.max(other.newest_timestamp);
    }
}

/// Why one entry of a batch was not kept. Shown to callers as its message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RejectReason {
    /// The entry's text is not JSON; `line` is its NDJSON line.
    NotJson {
        line: Option<usize>,
        detail: String,
    },
    NotAnObject,
    /// JSON, but not readable as an entry.
    Unreadable(String),
    TooDeep,
    Missing(&'static str),
    /// A string field whose JSON string cannot be read.
    InvalidString {
        field: &'static str,
        detail: String,
    },
    WrongType {
        field: &'static str,
        expected: &'static str,
        found: &'static str,
    },
    EmptyId,
    InvalidTimestamp(String),
    NegativeTimestamp(String),
    TimestampOutOfRange(String),
    /// Outside the times a JS number holds exactly (`late`: after them).
    TimestampNotKept {
        text: String,
        late: bool,
    },
    UnreadableMetadata(String),
    /// Readable, but holding nothing any endpoint of its stream reads by:
    /// kept, it would never be found (an entry sent to the other stream).
    Unfindable(Stream),
    /// Older than a deployment keeps logs (`Retention`).
    PastRetention {
        days: i64,
    },
}

impl fmt::Display for RejectReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RejectReason::NotJson {
                line: Some(line),
                detail,
            } => write!(f, "line {line}: not valid JSON ({detail})"),
            RejectReason::NotJson { line: None, detail } => {
                write!(f, "not valid JSON ({detail})")
            }
            RejectReason::NotAnObject => f.write_str("entry is not a JSON object"),
            RejectReason::Unreadable(detail) => write!(f, "unreadable entry ({detail})"),
            RejectReason::TooDeep => write!(
                f,
                "entry nests arrays/objects deeper than {MAX_JSON_DEPTH} levels"
            ),
            RejectReason::Missing(field) => write!(f, "missing `{field}`"),
            RejectReason::InvalidString { field, detail } => {
                write!(f, "`{field}` is not a valid string ({detail})")
            }
            RejectReason::WrongType {
                field,
                expected,
                found,
            } => write!(f, "`{field}` must be {expected}, not {found}"),
            RejectReason::EmptyId => f.write_str("`id` is empty"),
            RejectReason::InvalidTimestamp(detail) => write!(f, "invalid `timestamp`: {detail}"),
            RejectReason::NegativeTimestamp(text) => write!(
                f,
                "invalid `timestamp`: {text} is negative (before the Unix epoch)"
            ),
            RejectReason::TimestampOutOfRange(text) => write!(
                f,
                "invalid `timestamp`: {text} is outside the times kept ({} to {})",
                timestamp::format_rfc3339(timestamp::MIN_ENTRY_MICROS),
                timestamp::format_rfc3339(timestamp::MAX_ENTRY_MICROS)
            ),
            RejectReason::TimestampNotKept { text, late: true } => write!(
                f,
                "invalid `timestamp`: {text} is after {}, the latest time kept (the largest a JS number holds to the microsecond)",
                timestamp::format_rfc3339(timestamp::MAX_ENTRY_MICROS)
            ),
            RejectReason::TimestampNotKept { text, late: false } => write!(
                f,
                "invalid `timestamp`: {text} is before {}, the earliest time kept (the smallest a JS number holds to the microsecond)",
                timestamp::format_rfc3339(timestamp::MIN_ENTRY_MICROS)
            ),
            RejectReason::UnreadableMetadata(detail) => {
                write!(f, "unreadable `metadata` ({detail})")
            }
            RejectReason::Unfindable(Stream::Edge) => f.write_str(
                "no `project` and no request URL in `metadata`, so no endpoint could find it (an edge function log entry? those go to function_edge_logs)",
            ),
            RejectReason::Unfindable(_) => f.write_str(
                "no `metadata[].project_ref`, so no endpoint could find it (an edge request log entry? those go to edge_logs)",
            ),
            RejectReason::PastRetention { days } => write!(
                f,
                "its `timestamp` is older than the {days} days logs are kept, so no endpoint could find it"
            ),
        }
    }
}

type Reading<T> = std::result::Result<T, RejectReason>;

/// Deepest nesting of arrays and objects an entry may have. Real log entries are a
/// handful of levels deep; the limit keeps every later reader of the stored text
/// (a browser's JSON.parse, a recursive viewer) safe from hostile nesting.
pub const MAX_JSON_DEPTH: usize = 64;

/// Whether `json` nests arrays/objects deeper than `limit` (strings are skipped).
fn nests_deeper_than(json: &str, limit: usize) -> bool {
    // Each level opens with `[` or `{` (0x5B, 0x7B: one compare after OR 0x20):
    // with no more of them than `limit`, inside strings or not, none goes
    // deeper. The count, in byte-wide lanes over chunks short enough not to
    // overflow them, is a loop the compiler vectorises; the walk below, a byte
    // at a time, is for the rare entry with more.
    let opening: usize = json
        .as_bytes()
        .chunks(255)
        .map(|chunk| {
            chunk
                .iter()
                .fold(0u8, |n, &b| n + u8::from(b | 0x20 == b'{')) as usize
        })
        .sum();
    if opening <= limit {
        return false;
    }
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    for &byte in json.as_bytes() {
        if in_string {
            if escaped {
                escaped = false;
            } else if byte == b'\\' {
                escaped = true;
            } else if byte == b'"' {
                in_string = false;
            }
            continue;
        }
        match byte {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                if depth > limit {
                    return true;
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    false
}

fn check_depth(entry: &str) -> Reading<&str> {
    if nests_deeper_than(entry, MAX_JSON_DEPTH) {
        Err(RejectReason::TooDeep)
    } else {
        Ok(entry)
    }
}

/// One entry of a batch as framed: its JSON text (not yet validated for NDJSON:
/// the entry's own parse does that, in the same pass), and for NDJSON its line.
pub(crate) struct Framed<'a> {
    pub text: Reading<&'a str>,
    pub line: Option<usize>,
}

impl Framed<'_> {
    /// Gives a syntax error the entry's line number, where it has one.
    pub fn reason(&self, reason: RejectReason) -> RejectReason {
        match reason {
            RejectReason::NotJson { detail, .. } => RejectReason::NotJson {
                line: self.line,
                detail,
            },
            other => other,
        }
    }
}

/// Whether the input's first line reads as a CSV header: not JSON, and
/// naming `timestamp`, as every log export does (`LogFeed` reads such a
/// file, and asks for `id`; a batch is refused saying so).
pub(crate) fn is_csv_header(start: &[u8]) -> bool {
    let line = start.split(|&b| b == b'\n').next().unwrap_or_default();
    // A header names columns: one line naming only `timestamp` (a stray
    // line of an NDJSON file) is that line's entry, refused on its own.
    if matches!(line.first(), Some(b'{' | b'[') | None) || !line.contains(&b',') {
        return false;
    }
    line.split(|&b| b == b',').any(|name| {
        String::from_utf8_lossy(name)
            .trim()
            .trim_matches('"')
            .eq("timestamp")
    })
}

/// `bytes` as text: checked with SIMD (in wasm too), and again by std only
/// when they are not UTF-8, for its error's detail.
pub(crate) fn utf8(bytes: &[u8]) -> std::result::Result<&str, std::str::Utf8Error> {
    simdutf8::basic::from_utf8(bytes).or_else(|_| std::str::from_utf8(bytes))
}

/// How a gzip stream begins (RFC 1952): a batch or file given still compressed.
pub(crate) const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];

/// Batch framing: the raw JSON text of each entry, in order. A batch is a
/// JSON array of entries, an object whose one field `batch` is that array
/// (Logflare's form), a single entry object, or (`Framing::Detect`) NDJSON.
pub(crate) fn split_entries(bytes: &[u8], framing: Framing) -> Result<Vec<Framed<'_>>> {
    let text = utf8(bytes).map_err(|e| Error::UnreadableBatch {
        reason: match bytes.starts_with(&GZIP_MAGIC) {
            true => "it is gzip-compressed: decompress it first (over HTTP, send it with `Content-Encoding: gzip`)".into(),
            false => format!("not valid UTF-8 ({e})"),
        },
    })?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    if framing == Framing::Lines {
        return Ok(ndjson_lines(text));
    }
    let trimmed = text.trim_start();
    if trimmed.starts_with('[') {
        return split_array(trimmed);
    }
    if trimmed.is_empty() {
        return Ok(Vec::new());
    }
    if trimmed.starts_with('{') {
        if let Some(whole) = one_value(trimmed) {
            return match Envelope::read(whole).and_then(|envelope| envelope.batch()) {
                Some(array) => split_array(array),
                None => Ok(vec![Framed {
                    text: check_depth(whole),
                    line: None,
                }]),
            };
        }
    }
    if framing == Framing::Json {
        let detail = serde_json::from_str::<de::IgnoredAny>(trimmed)
            .err()
            .map_or_else(|| "not an array or an object".to_owned(), |e| e.to_string());
        return Err(Error::UnreadableBatch {
            reason: format!(
                "the body is not JSON ({detail}); it was sent as application/json (send NDJSON as application/x-ndjson)"
            ),
        });
    }
    if is_csv_header(trimmed.as_bytes()) {
        return Err(Error::UnreadableBatch {
            reason: "it is CSV (its first line is a header naming `timestamp`): a batch is JSON or NDJSON; CSV exports are read as files (`LogFeed`, the CLI, the page)".into(),
        });
    }
    Ok(ndjson_lines(text))
}

/// NDJSON: one entry per non-blank line; a line that is not JSON is rejected on its own.
fn ndjson_lines(text: &str) -> Vec<Framed<'_>> {
    // The newlines found by memchr (SIMD in wasm too), where `str::lines`
    // looks a word at a time; a line's `\r` goes with its other trimmed space.
    let bytes = text.as_bytes();
    let ends = memchr::memchr_iter(b'\n', bytes).chain(std::iter::once(bytes.len()));
    let mut start = 0;
    ends.enumerate()
        .filter_map(|(line_no, end)| {
            let line = text.get(start..end).unwrap_or_default();
            start = end + 1;
            (!is_blank_text(line)).then(|| Framed {
                text: check_depth(line.trim()),
                line: Some(line_no + 1),
            })
        })
        .collect()
}

fn split_array(text: &str) -> Result<Vec<Framed<'_>>> {
    let entries: Vec<&RawValue> =
        serde_json::from_str(text).map_err(|e| Error::UnreadableBatch {
            reason: format!("not a valid JSON array ({e})"),
        })?;
    Ok(entries
        .into_iter()
        .map(|raw| Framed {
            text: check_depth(raw.get()),
            line: None,
        })
        .collect())
}

/// `text` when it is one JSON value and nothing more (white space aside): a
/// body of one object, not NDJSON's first line. Only that first value is parsed.
fn one_value(text: &str) -> Option<&str> {
    let mut values = serde_json::Deserializer::from_str(text).into_iter::<de::IgnoredAny>();
    values.next()?.ok()?;
    let end = values.byte_offset();
    text.get(end..)?
        .trim()
        .is_empty()
        .then(|| text.get(..end).map(str::trim_end))
        .flatten()
}

/// A batch envelope: an object with a field `batch` that is an array, which
/// Logflare reads as its batch whatever else the object holds, and its other
/// fields (`logflare-transport-core-js` puts its `source` beside the batch).
/// Field names are read with their escapes; a name given twice counts as
/// its last, as in Logflare's JSON parser.
struct Envelope<'a> {
    fields: Vec<(Cow<'a, str>, &'a RawValue)>,
}

impl<'a> Envelope<'a> {
    /// `object` as an envelope, if it is one.
    fn read(object: &'a str) -> Option<Envelope<'a>> {
        let fields = serde_json::from_str::<crate::json::Fields<Cow<str>>>(object)
            .ok()?
            .0;
        let envelope = Envelope { fields };
        envelope.batch().map(|_| envelope)
    }

    fn field(&self, name: &str) -> Option<&'a RawValue> {
        self.fields
            .iter()
            .rev()
            .find(|(field, _)| field == name)
            .map(|(_, value)| *value)
    }

    /// The batch array's text.
    fn batch(&self) -> Option<&'a str> {
        self.field("batch")
            .map(RawValue::get)
            .filter(|value| value.starts_with('['))
    }
}

/// The string fields of a body that is a batch envelope (a BOM and white
/// space before it aside), each name once, with its last value: Logflare
/// reads its parameters from the body as from the query string. None when
/// the body is no envelope.
pub(crate) fn envelope_strings(body: &[u8]) -> Vec<(String, String)> {
    let Some(text) = utf8(body)
        .ok()
        .map(|text| text.strip_prefix('\u{feff}').unwrap_or(text).trim_start())
        .filter(|text| text.starts_with('{'))
    else {
        return Vec::new();
    };
    let Some(envelope) = Envelope::read(text) else {
        return Vec::new();
    };
    let mut strings: Vec<(String, String)> = Vec::new();
    for (name, value) in &envelope.fields {
        strings.retain(|(seen, _)| seen != name);
        if let Ok(text) = serde_json::from_str::<String>(value.get()) {
            strings.push((name.to_string(), text));
        }
    }
    strings
}

/// A batch's entries as framed, once the batch as a whole passes the limits
/// (size, entry count): what ingesting and splitting by shard share.
pub(crate) fn frame_batch<'a>(
    batch: &'a [u8],
    framing: Framing,
    limits: &Limits,
) -> Result<Vec<Framed<'a>>> {
    let too_large = |what: String| Error::BatchTooLarge {
        reason: format!("{what}; split it into smaller batches"),
    };
    if batch.len() > limits.max_batch_bytes {
        return Err(too_large(format!(
            "{} bytes, more than the limit of {} bytes",
            batch.len(),
            limits.max_batch_bytes
        )));
    }
    let entries = split_entries(batch, framing)?;
    if entries.len() > limits.max_batch_entries {
        return Err(too_large(format!(
            "{} entries, more than the limit of {}",
            entries.len(),
            limits.max_batch_entries
        )));
    }
    Ok(entries)
}

/// Whether an NDJSON line holds no entry (only white space): one rule for
/// batches and for files fed in pieces, so entry numbers agree.
pub(crate) fn is_blank(line: &[u8]) -> bool {
    std::str::from_utf8(line).is_ok_and(is_blank_text)
}

/// `is_blank` for a line already read as text.
fn is_blank_text(line: &str) -> bool {
    line.trim().is_empty()
}

/// The top-level fields common to every stream, with `metadata` as its raw
/// text (`M`'s default) or read as records in the same pass.
#[derive(Deserialize, Default)]
#[serde(bound(deserialize = "M: Deserialize<'de> + Default"))]
struct EntryHead<'a, M = Option<&'a RawValue>> {
    #[serde(borrow, default, deserialize_with = "raw_text")]
    id: Option<&'a str>,
    #[serde(borrow, default, deserialize_with = "raw_text")]
    timestamp: Option<&'a str>,
    #[serde(borrow, default, deserialize_with = "raw_text")]
    event_message: Option<&'a str>,
    /// Logflare's other name of `event_message` (it wins where both are).
    #[serde(borrow, default, deserialize_with = "raw_text")]
    message: Option<&'a str>,
    #[serde(borrow, default, deserialize_with = "raw_text")]
    project: Option<&'a str>,
    #[serde(default)]
    metadata: M,
}

/// A value's JSON text as it was handed in (`RawValue`'s), `None` for null.
fn raw_text<'de, D: Deserializer<'de>>(d: D) -> std::result::Result<Option<&'de str>, D::Error> {
    Option::<&RawValue>::deserialize(d).map(|raw| raw.map(RawValue::get))
}

/// `metadata`, `request` and `response` are REPEATED records: an array, or a single
/// object standing for a one-element array, or null/absent for none. Nearly
/// every entry has one of each, so one is held inline: reading an entry
/// allocates nothing for them.
#[derive(Default)]
pub(crate) enum Repeated<T> {
    #[default]
    None,
    One(T),
    Many(Vec<T>),
}

impl<T> Repeated<T> {
    pub(crate) fn as_slice(&self) -> &[T] {
        match self {
            Repeated::None => &[],
            Repeated::One(one) => std::slice::from_ref(one),
            Repeated::Many(many) => many,
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.as_slice().len()
    }

    pub(crate) fn is_empty(&self) -> bool {
        matches!(self, Repeated::None)
    }

    pub(crate) fn iter(&self) -> std::slice::Iter<'_, T> {
        self.as_slice().iter()
    }

    pub(crate) fn push(&mut self, item: T) {
        *self = match std::mem::take(self) {
            Repeated::None => Repeated::One(item),
            Repeated::One(one) => Repeated::Many(vec![one, item]),
            Repeated::Many(mut many) => {
                many.push(item);
                Repeated::Many(many)
            }
        };
    }
}

impl<'r, T> IntoIterator for &'r Repeated<T> {
    type Item = &'r T;
    type IntoIter = std::slice::Iter<'r, T>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl<T> IntoIterator for Repeated<T> {
    type Item = T;
    type IntoIter = std::iter::Chain<std::option::IntoIter<T>, std::vec::IntoIter<T>>;

    fn into_iter(self) -> Self::IntoIter {
        let (one, many) = match self {
            Repeated::None => (None, Vec::new()),
            Repeated::One(one) => (Some(one), Vec::new()),
            Repeated::Many(many) => (None, many),
        };
        one.into_iter().chain(many)
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Repeated<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> std::result::Result<Self, D::Error> {
        struct RepeatedVisitor<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for RepeatedVisitor<T> {
            type Value = Repeated<T>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an array of records, a record, or null")
            }
            fn visit_unit<E: de::Error>(self) -> std::result::Result<Self::Value, E> {
                Ok(Repeated::None)
            }
            fn visit_none<E: de::Error>(self) -> std::result::Result<Self::Value, E> {
                Ok(Repeated::None)
            }
            fn visit_seq<A: SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> std::result::Result<Self::Value, A::Error> {
                let mut items = Repeated::None;
                while let Some(item) = seq.next_element()? {
                    items.push(item);
                }
                Ok(items)
            }
            fn visit_map<A: MapAccess<'de>>(
                self,
                map: A,
            ) -> std::result::Result<Self::Value, A::Error> {
                T::deserialize(de::value::MapAccessDeserializer::new(map)).map(Repeated::One)
            }
        }
        deserializer.deserialize_any(RepeatedVisitor(PhantomData))
    }
}

/// A string field or null, borrowed from the batch when it holds no escape:
/// serde's own `Option<Cow<str>>` copies every one. Errors read as serde's.
fn borrowed_string<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> std::result::Result<Option<Cow<'de, str>>, D::Error> {
    struct StringVisitor;
    impl<'de> Visitor<'de> for StringVisitor {
        type Value = Option<Cow<'de, str>>;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a string")
        }
        fn visit_none<E: de::Error>(self) -> std::result::Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_unit<E: de::Error>(self) -> std::result::Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_some<D: Deserializer<'de>>(
            self,
            deserializer: D,
        ) -> std::result::Result<Self::Value, D::Error> {
            deserializer.deserialize_str(self)
        }
        fn visit_borrowed_str<E: de::Error>(
            self,
            text: &'de str,
        ) -> std::result::Result<Self::Value, E> {
            Ok(Some(Cow::Borrowed(text)))
        }
        fn visit_str<E: de::Error>(self, text: &str) -> std::result::Result<Self::Value, E> {
            Ok(Some(Cow::Owned(text.to_owned())))
        }
        fn visit_string<E: de::Error>(self, text: String) -> std::result::Result<Self::Value, E> {
            Ok(Some(Cow::Owned(text)))
        }
    }
    deserializer.deserialize_option(StringVisitor)
}

#[derive(Deserialize)]
struct EdgeMetadata<'a> {
    #[serde(borrow, default)]
    request: Repeated<EdgeRequest<'a>>,
}

#[derive(Deserialize)]
struct EdgeRequest<'a> {
    #[serde(borrow, default, deserialize_with = "borrowed_string")]
    url: Option<Cow<'a, str>>,
    #[serde(borrow, default, deserialize_with = "borrowed_string")]
    path: Option<Cow<'a, str>>,
}

#[derive(Deserialize, Default)]
struct FunctionMetadata<'a> {
    #[serde(borrow, default, deserialize_with = "borrowed_string")]
    project_ref: Option<Cow<'a, str>>,
    #[serde(borrow, default, deserialize_with = "borrowed_string")]
    function_id: Option<Cow<'a, str>>,
    #[serde(default)]
    execution_time_ms: Option<f64>,
    #[serde(default)]
    response: Repeated<FunctionResponse>,
}

#[derive(Deserialize)]
struct FunctionResponse {
    #[serde(default, deserialize_with = "status_code")]
    status_code: Option<i64>,
}

/// Status codes are integers; an integral float (`404.0`) is accepted as BigQuery would cast it.
fn status_code<'de, D: Deserializer<'de>>(d: D) -> std::result::Result<Option<i64>, D::Error> {
    match Option::<f64>::deserialize(d)? {
        None => Ok(None),
        Some(v) => integral_status(v)
            .map(Some)
            .ok_or_else(|| de::Error::custom(format!("status_code {v} is not an integer"))),
    }
}

/// A status code read as a number, if it is an integer.
fn integral_status(value: f64) -> Option<i64> {
    (value.fract() == 0.0 && value.abs() < 1e15).then_some(value as i64)
}

/// Which API areas a request path touches (usage.api-counts).
pub mod area {
    pub const REST: u8 = 1;
    pub const STORAGE: u8 = 2;
    pub const AUTH: u8 = 4;
    pub const REALTIME: u8 = 8;

    const NAMES: [(&[u8], u8); 4] = [
        (b"rest", REST),
        (b"storage", STORAGE),
        (b"auth", AUTH),
        (b"realtime", REALTIME),
    ];

    /// The areas whose `/name` the path contains anywhere (as the
    /// reference's `LIKE '%/rest%'` and so on), in one pass over its slashes.
    pub fn of_path(path: &str) -> u8 {
        let bytes = path.as_bytes();
        let mut bits = 0;
        for slash in memchr::memchr_iter(b'/', bytes) {
            let after = bytes.get(slash + 1..).unwrap_or(&[]);
            for (name, bit) in NAMES {
                if after.starts_with(name) {
                    bits |= bit;
                }
            }
        }
        bits
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn a_path_has_the_areas_whose_names_it_contains_after_a_slash() {
            let contains = |path: &str| {
                NAMES
                    .iter()
                    .filter(|(name, _)| {
                        path.contains(&format!("/{}", std::str::from_utf8(name).unwrap()))
                    })
                    .fold(0, |bits, (_, bit)| bits | bit)
            };
            for path in [
                "",
                "/",
                "/rest",
                "/rest/v1/todos",
                "/storage/v1/object",
                "/auth/v1/token",
                "/realtime/v1/websocket",
                "/graphql/v1",
                "rest/v1",
                "/x/restore/authz",
                "//rest//auth",
                "/functions/v1/storage-sync",
                "/a/b/c/realtime",
                "/résté/rest",
                "/rest/storage/auth/realtime",
                "/res",
                "/stor",
                "/auth",
            ] {
                assert_eq!(of_path(path), contains(path), "{path}");
            }
            assert_eq!(of_path("/rest/v1/t"), REST);
            assert_eq!(of_path("/x/restore/authz"), REST | AUTH);
        }
    }
}

pub(crate) struct StagedRequest<'a> {
    pub url: Option<Cow<'a, str>>,
    pub areas: u8,
}

/// One accepted edge entry, borrowing from the batch.
pub(crate) struct StagedEdge<'a> {
    pub timestamp: Micros,
    pub id: Cow<'a, str>,
    pub event_message: Option<Cow<'a, str>>,
    pub project: Option<Cow<'a, str>>,
    /// The raw JSON text of `metadata`, exactly as handed in.
    pub metadata: Option<&'a str>,
    pub requests: Repeated<StagedRequest<'a>>,
}

/// One row of a function entry: a (metadata, response) pair, as the reference's
/// `CROSS JOIN UNNEST(metadata) … UNNEST(response)` sees it. A metadata record with
/// no response still gives one row (with no status), so no entry goes uncounted.
pub(crate) struct StagedInvocation<'a> {
    pub timestamp: Micros,
    pub project_ref: Option<Cow<'a, str>>,
    pub function_id: Option<Cow<'a, str>>,
    pub execution_time_ms: Option<f64>,
    pub status_code: Option<i64>,
}

/// One entry of another source, borrowing from the batch: the entry's text
/// as it arrived, with the id, time and project it is kept by.
pub(crate) struct StagedOther<'a> {
    pub timestamp: Micros,
    pub id: Cow<'a, str>,
    pub source: &'a str,
    pub project: Option<Cow<'a, str>>,
    pub entry: &'a str,
}

struct Head<'a> {
    timestamp: Micros,
    id: Cow<'a, str>,
    event_message: Option<Cow<'a, str>>,
    project: Option<Cow<'a, str>>,
}

fn not_json(e: serde_json::Error) -> RejectReason {
    RejectReason::NotJson {
        line: None,
        detail: e.to_string(),
    }
}

/// The entry's top-level fields, the whole entry checked as JSON (NDJSON
/// lines are not parsed before).
fn parse_head<'a, M: Deserialize<'a> + Default>(raw: &'a str) -> Reading<EntryHead<'a, M>> {
    if !raw.starts_with('{') {
        return Err(match serde_json::from_str::<de::IgnoredAny>(raw) {
            Err(e) => not_json(e),
            Ok(_) => RejectReason::NotAnObject,
        });
    }
    serde_json::from_str(raw).map_err(|e| match e.classify() {
        serde_json::error::Category::Syntax | serde_json::error::Category::Eof => not_json(e),
        _ => RejectReason::Unreadable(e.to_string()),
    })
}

/// A JSON value that is absent: missing, `null`, or (Logflare drops them) `""`.
fn absent(value: Option<&str>, form: &EntryForm) -> bool {
    match value {
        None | Some("null") => true,
        Some("\"\"") => matches!(form, EntryForm::Logflare { .. }),
        Some(_) => false,
    }
}

/// The entry's top-level fields, and its `metadata` as its raw text (`null`
/// reads as `None`, as `Option` reads it).
fn read_head<'a>(
    raw: &'a str,
    form: &EntryForm,
    index: usize,
) -> Reading<(Head<'a>, Option<&'a str>)> {
    let (head, metadata) = checked_head(parse_head::<Option<&RawValue>>(raw)?, form, index)?;
    Ok((head, metadata.map(RawValue::get)))
}

/// The top-level fields' values, checked, and `metadata` as it was read.
fn checked_head<'a, M>(
    head: EntryHead<'a, M>,
    form: &EntryForm,
    index: usize,
) -> Reading<(Head<'a>, M)> {
    let id = match head.id {
        value if absent(value, form) => form
            .generated_id(index)
            .map(Cow::Owned)
            .ok_or(RejectReason::Missing("id"))?,
        value => read_id(value.unwrap_or("null"))?,
    };
    let timestamp = match head.timestamp {
        value if absent(value, form) => {
            form.received().ok_or(RejectReason::Missing("timestamp"))?
        }
        value => read_timestamp(value.unwrap_or("null"))?,
    };
    let message = match form {
        EntryForm::Logflare { .. } => optional_string(head.message, "message")?,
        EntryForm::Contract => None,
    };
    let event_message = match message {
        Some(message) => Some(message),
        None => optional_string(head.event_message, "event_message")?,
    };
    let project = optional_string(head.project, "project")?;
    let head_values = Head {
        timestamp,
        id,
        event_message,
        project,
    };
    Ok((head_values, head.metadata))
}

/// An entry of another source: kept as it arrived, so only what cannot be
/// an entry at all (not a JSON object, nested too deep) is refused. Its id
/// and time are read as for the other streams where they read, and are
/// generated and the time of receipt where they do not (the entry's own
/// text keeps what it said); its project is its top-level `project` string.
pub(crate) fn read_other<'a>(
    raw: &'a str,
    source: &'a str,
    form: &EntryForm,
    index: usize,
) -> Reading<StagedOther<'a>> {
    let head = parse_head::<Option<&RawValue>>(raw)?;
    let id = match head.id.map(read_id) {
        Some(Ok(id)) => id,
        _ => form
            .generated_id(index)
            .map(Cow::Owned)
            .ok_or(RejectReason::Missing("id"))?,
    };
    let timestamp = match head.timestamp.map(read_timestamp) {
        Some(Ok(timestamp)) => timestamp,
        Some(Err(reason)) => form.received().ok_or(reason)?,
        None => form.received().ok_or(RejectReason::Missing("timestamp"))?,
    };
    Ok(StagedOther {
        timestamp,
        id,
        source,
        project: optional_string(head.project, "project").ok().flatten(),
        entry: raw,
    })
}

/// The string a JSON string literal (`text`, which the entry's parse has
/// checked) stands for: its own bytes between the quotes when it holds no
/// escape, else decoded.
fn json_string<'a>(text: &'a str, field: &'static str) -> Reading<Cow<'a, str>> {
    if let Some(inner) = text.strip_prefix('"').and_then(|t| t.strip_suffix('"')) {
        if memchr::memchr(b'\\', inner.as_bytes()).is_none() {
            return Ok(Cow::Borrowed(inner));
        }
    }
    serde_json::from_str(text).map_err(|e| RejectReason::InvalidString {
        field,
        detail: e.to_string(),
    })
}

fn read_id(text: &str) -> Reading<Cow<'_, str>> {
    if text.starts_with('"') {
        let id = json_string(text, "id")?;
        if id.is_empty() {
            return Err(RejectReason::EmptyId);
        }
        Ok(id)
    } else if text.bytes().all(|b| b.is_ascii_digit() || b == b'-') {
        Ok(Cow::Borrowed(text))
    } else {
        Err(RejectReason::WrongType {
            field: "id",
            expected: "a string",
            found: describe(text),
        })
    }
}

/// An entry's time, within `MIN_ENTRY_MICROS..=MAX_ENTRY_MICROS`.
fn read_timestamp(text: &str) -> Reading<Micros> {
    let timestamp = read_any_timestamp(text)?;
    if !(timestamp::MIN_ENTRY_MICROS..=timestamp::MAX_ENTRY_MICROS).contains(&timestamp) {
        return Err(RejectReason::TimestampNotKept {
            text: text.to_owned(),
            late: timestamp > 0,
        });
    }
    Ok(timestamp)
}

/// `text` read as a number of at most 18 digits, which cannot overflow
/// `i64`. A time in microseconds has 16: past 15 digits std checks every
/// digit for overflow, and in wasm each check is a 128-bit multiply (a call).
fn short_digits(text: &str) -> Option<i64> {
    let digits = text.as_bytes();
    let short = (1..=18).contains(&digits.len()) && digits.iter().all(u8::is_ascii_digit);
    short.then(|| {
        digits
            .iter()
            .fold(0, |number, &digit| number * 10 + i64::from(digit - b'0'))
    })
}

fn read_any_timestamp(text: &str) -> Reading<Micros> {
    if text.starts_with('"') {
        let s = json_string(text, "timestamp")?;
        // Digits are read as a number, and a negative one is refused as a number is.
        if s.trim()
            .strip_prefix('-')
            .is_some_and(|digits| !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()))
        {
            return Err(RejectReason::NegativeTimestamp(s.trim().to_owned()));
        }
        return timestamp::parse_iso(&s).map_err(RejectReason::InvalidTimestamp);
    }
    if text.starts_with('-') {
        return Err(RejectReason::NegativeTimestamp(text.to_owned()));
    }
    let out_of_range = || RejectReason::TimestampOutOfRange(text.to_owned());
    // Nearly every time fits 64 bits, which wasm parses several times faster
    // than 128 (each digit's multiply is one instruction, not a call).
    if let Some(int) = short_digits(text) {
        return timestamp::from_integer(i128::from(int)).ok_or_else(out_of_range);
    }
    if let Ok(int) = text.parse::<i64>() {
        return timestamp::from_integer(i128::from(int)).ok_or_else(out_of_range);
    }
    if let Ok(int) = text.parse::<i128>() {
        return timestamp::from_integer(int).ok_or_else(out_of_range);
    }
    match text.parse::<f64>() {
        Ok(float) => timestamp::from_float(float).ok_or_else(out_of_range),
        Err(_) => Err(RejectReason::WrongType {
            field: "timestamp",
            expected: "a number or an ISO 8601 string",
            found: describe(text),
        }),
    }
}

fn optional_string<'a>(raw: Option<&'a str>, field: &'static str) -> Reading<Option<Cow<'a, str>>> {
    match raw {
        None | Some("null") => Ok(None),
        Some(text) if text.starts_with('"') => json_string(text, field).map(Some),
        Some(text) => Err(RejectReason::WrongType {
            field,
            expected: "a string",
            found: describe(text),
        }),
    }
}

fn describe(json: &str) -> &'static str {
    match json.as_bytes().first() {
        Some(b'{') => "an object",
        Some(b'[') => "an array",
        Some(b'"') => "a string",
        Some(b't' | b'f') => "a boolean",
        Some(b'n') => "null",
        _ => "a number",
    }
}

fn unreadable_metadata(e: serde_json::Error) -> RejectReason {
    RejectReason::UnreadableMetadata(e.to_string())
}

/// `EntryHead`'s fields (keep in step: a field missing here would be read
/// as one not known).
const HEAD_FIELDS: [&str; 6] = [
    "id",
    "timestamp",
    "event_message",
    "message",
    "project",
    "metadata",
];

/// An edge entry's metadata: its text, kept as handed in, and its records.
type EdgeMetadataRead<'a> = (Option<&'a str>, Repeated<EdgeMetadata<'a>>);

/// An entry's top-level fields, and its metadata read in the same pass by
/// `metadata`, by a cursor that checks the JSON as it goes (`scan`); `None`
/// for an entry that does not read so, which serde_json then reads (and
/// says what is wrong). serde_json's reader took most of ingest's reading
/// in wasm.
fn entry_in_one_pass<'a, M: Default>(
    raw: &'a str,
    mut metadata: impl FnMut(&mut Scan<'a>) -> Option<M>,
) -> Option<EntryHead<'a, M>> {
    // An entry that does not start as an object is refused as not one.
    if !raw.starts_with('{') {
        return None;
    }
    let mut scan = Scan::new(raw);
    scan.eat(b'{');
    let mut head = EntryHead::<M>::default();
    let mut seen = [false; HEAD_FIELDS.len()];
    let mut first = true;
    while let Some(key) = scan.next_member(std::mem::take(&mut first))? {
        let Some(field) = HEAD_FIELDS.iter().position(|&name| name == key) else {
            scan.skip()?;
            continue;
        };
        // A field named twice is refused by the whole-entry parse.
        if std::mem::replace(seen.get_mut(field)?, true) {
            return None;
        }
        let slot = match *HEAD_FIELDS.get(field)? {
            "id" => &mut head.id,
            "timestamp" => &mut head.timestamp,
            "event_message" => &mut head.event_message,
            "message" => &mut head.message,
            "project" => &mut head.project,
            "metadata" => {
                head.metadata = metadata(&mut scan)?;
                continue;
            }
            _ => return None,
        };
        *slot = match scan.null() {
            true => None,
            false => Some(scan.skip()?),
        };
    }
    scan.at_end().then_some(head)
}

/// An edge entry's top-level fields, and its metadata's text and records,
/// in one pass (`entry_in_one_pass`); `None` for an entry that
/// `edge_entry_in_two_passes` then reads.
fn edge_entry_in_one_pass(raw: &str) -> Option<EntryHead<'_, EdgeMetadataRead<'_>>> {
    entry_in_one_pass(raw, edge_metadata)
}

/// `metadata` as `Option<Repeated<EdgeMetadata>>` reads it, with its text.
fn edge_metadata<'a>(scan: &mut Scan<'a>) -> Option<EdgeMetadataRead<'a>> {
    let start = scan.here();
    if scan.null() {
        return Some((None, Repeated::None));
    }
    let records = repeated(scan, edge_record)?;
    Some((Some(scan.since(start)?), records))
}

/// A REPEATED record as `Repeated<T>` reads it: null, one object, or an
/// array of objects, each read by `read` (at its `{`).
fn repeated<'a, T>(
    scan: &mut Scan<'a>,
    mut read: impl FnMut(&mut Scan<'a>) -> Option<T>,
) -> Option<Repeated<T>> {
    match scan.peek()? {
        b'n' => scan.null().then_some(Repeated::None),
        b'{' => read(scan).map(Repeated::One),
        b'[' => {
            scan.eat(b'[');
            let mut items = Repeated::None;
            let mut first = true;
            while scan.next_element(std::mem::take(&mut first))? {
                // serde reads a record from an array too, by position.
                if scan.peek()? != b'{' {
                    return None;
                }
                items.push(read(scan)?);
            }
            Some(items)
        }
        _ => None,
    }
}

/// One `EdgeMetadata` record, the scan at its `{`.
fn edge_record<'a>(scan: &mut Scan<'a>) -> Option<EdgeMetadata<'a>> {
    scan.eat(b'{');
    let mut request = None;
    let mut first = true;
    while let Some(key) = scan.next_member(std::mem::take(&mut first))? {
        match key == "request" {
            // serde refuses a field named twice.
            true if request.is_some() => return None,
            true => request = Some(repeated(scan, edge_request)?),
            false => {
                scan.skip()?;
            }
        }
    }
    Some(EdgeMetadata {
        request: request.unwrap_or_default(),
    })
}

/// One `EdgeRequest` record, the scan at its `{`.
fn edge_request<'a>(scan: &mut Scan<'a>) -> Option<EdgeRequest<'a>> {
    scan.eat(b'{');
    let (mut url, mut path) = (None, None);
    let mut first = true;
    while let Some(key) = scan.next_member(std::mem::take(&mut first))? {
        let slot = if key == "url" {
            &mut url
        } else if key == "path" {
            &mut path
        } else {
            scan.skip()?;
            continue;
        };
        if slot.is_some() {
            return None;
        }
        *slot = Some(optional_text(scan)?);
    }
    Some(EdgeRequest {
        url: url.flatten(),
        path: path.flatten(),
    })
}

/// An edge entry read in two passes: the top-level fields with the
/// metadata's text, then the text's records (as `edge_entry_in_one_pass`
/// reads them, for the entries it gives up on).
fn edge_entry_in_two_passes<'a>(
    raw: &'a str,
    form: &EntryForm,
    index: usize,
) -> Reading<(Head<'a>, EdgeMetadataRead<'a>)> {
    let (head, metadata) = read_head(raw, form, index)?;
    let records = match metadata {
        Some(metadata) => serde_json::from_str(metadata).map_err(unreadable_metadata)?,
        None => Repeated::None,
    };
    Ok((head, (metadata, records)))
}

pub(crate) fn read_edge<'a>(
    raw: &'a str,
    form: &EntryForm,
    index: usize,
) -> Reading<StagedEdge<'a>> {
    let (head, (metadata, records)) = match edge_entry_in_one_pass(raw) {
        Some(entry) => checked_head(entry, form, index)?,
        None => edge_entry_in_two_passes(raw, form, index)?,
    };
    let mut requests = Repeated::None;
    for record in records {
        for request in record.request {
            requests.push(StagedRequest {
                areas: request.path.as_deref().map_or(0, area::of_path),
                url: request.url,
            });
        }
    }
    // logs.all and the request counts find an entry by its project, the
    // URL patterns by its URLs: with neither, nothing ever reads it.
    if head.project.is_none() && requests.iter().all(|r| r.url.is_none()) {
        return Err(RejectReason::Unfindable(Stream::Edge));
    }
    Ok(StagedEdge {
        timestamp: head.timestamp,
        id: head.id,
        event_message: head.event_message,
        project: head.project,
        metadata,
        requests,
    })
}

/// A function entry's top-level fields and its metadata records. Its
/// metadata's text is not kept, so the records are read in the same pass as
/// the rest (a second pass over the text took a fifth of a function entry's
/// time); an entry that does not read so is read in two passes, which say
/// what is wrong as they always did.
fn function_entry<'a>(
    raw: &'a str,
    form: &EntryForm,
    index: usize,
) -> Reading<(Head<'a>, Repeated<FunctionMetadata<'a>>)> {
    if let Some(entry) = function_entry_in_one_pass(raw) {
        return checked_head(entry, form, index);
    }
    match parse_head::<Repeated<FunctionMetadata>>(raw) {
        Ok(entry) => checked_head(entry, form, index),
        Err(_) => function_entry_in_two_passes(raw, form, index),
    }
}

/// A function entry's top-level fields and its metadata's records, in one
/// pass (`entry_in_one_pass`); `None` for an entry serde_json then reads.
fn function_entry_in_one_pass(raw: &str) -> Option<EntryHead<'_, Repeated<FunctionMetadata<'_>>>> {
    entry_in_one_pass(raw, |scan| repeated(scan, function_record))
}

/// One `FunctionMetadata` record, the scan at its `{`.
fn function_record<'a>(scan: &mut Scan<'a>) -> Option<FunctionMetadata<'a>> {
    scan.eat(b'{');
    let mut record = FunctionMetadata::default();
    let mut seen = [false; 4];
    let mut first = true;
    while let Some(key) = scan.next_member(std::mem::take(&mut first))? {
        let field = match &*key {
            "project_ref" => 0,
            "function_id" => 1,
            "execution_time_ms" => 2,
            "response" => 3,
            _ => {
                scan.skip()?;
                continue;
            }
        };
        // serde refuses a field named twice.
        if std::mem::replace(seen.get_mut(field)?, true) {
            return None;
        }
        match field {
            0 => record.project_ref = optional_text(scan)?,
            1 => record.function_id = optional_text(scan)?,
            2 => record.execution_time_ms = optional_number(scan)?,
            _ => record.response = repeated(scan, function_response)?,
        }
    }
    Some(record)
}

/// One `FunctionResponse` record, the scan at its `{`.
fn function_response(scan: &mut Scan<'_>) -> Option<FunctionResponse> {
    scan.eat(b'{');
    let mut status_code = None;
    let mut first = true;
    while let Some(key) = scan.next_member(std::mem::take(&mut first))? {
        if key != "status_code" {
            scan.skip()?;
            continue;
        }
        if status_code.is_some() {
            return None;
        }
        status_code = Some(match optional_number(scan)? {
            Some(value) => Some(integral_status(value)?),
            None => None,
        });
    }
    Some(FunctionResponse {
        status_code: status_code.flatten(),
    })
}

/// A string or null, as `borrowed_string` reads it.
fn optional_text<'a>(scan: &mut Scan<'a>) -> Option<Option<Cow<'a, str>>> {
    match scan.null() {
        true => Some(None),
        false => scan.string()?.decoded().map(Some),
    }
}

/// A number or null, as `Option<f64>` reads it (`json_f64`).
fn optional_number(scan: &mut Scan<'_>) -> Option<Option<f64>> {
    if scan.null() {
        return Some(None);
    }
    let text = scan.skip()?;
    match text.as_bytes().first()? {
        b'-' | b'0'..=b'9' => json_f64(text).map(Some),
        _ => None,
    }
}

/// A JSON number (`text` is one, as the scan checked) as serde_json reads
/// it into an `f64`. Plain decimals of at most 15 digits (`41`, `67.8`) are
/// their digits divided by a power of ten, as serde_json works them out
/// (both exact, so one rounding); others (negative ones, exponents, more
/// digits) are read by serde_json itself.
fn json_f64(text: &str) -> Option<f64> {
    const POW10: [f64; 16] = [
        1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
    ];
    let bytes = text.as_bytes();
    let (mut digits, mut significand, mut point) = (0usize, 0u64, None);
    for (at, &byte) in bytes.iter().enumerate() {
        match byte {
            b'0'..=b'9' if digits < 15 => {
                significand = significand * 10 + u64::from(byte - b'0');
                digits += 1;
            }
            b'.' if point.is_none() && at > 0 => point = Some(at),
            _ => return serde_json::from_str(text).ok(),
        }
    }
    let fraction = point.map_or(0, |point| bytes.len() - point - 1);
    match (digits, POW10.get(fraction)) {
        (1.., Some(&scale)) if fraction > 0 || point.is_none() => Some(significand as f64 / scale),
        _ => serde_json::from_str(text).ok(),
    }
}

/// `function_entry` read as an edge entry is: the top-level fields with the
/// metadata's text, then the text.
fn function_entry_in_two_passes<'a>(
    raw: &'a str,
    form: &EntryForm,
    index: usize,
) -> Reading<(Head<'a>, Repeated<FunctionMetadata<'a>>)> {
    let (head, metadata) = read_head(raw, form, index)?;
    let records = match metadata {
        Some(metadata) => serde_json::from_str(metadata).map_err(unreadable_metadata)?,
        None => Repeated::default(),
    };
    Ok((head, records))
}

pub(crate) fn read_function<'a>(
    raw: &'a str,
    form: &EntryForm,
    index: usize,
    rows: &mut Vec<StagedInvocation<'a>>,
) -> Reading<()> {
    let (head, records) = function_entry(raw, form, index)?;
    // Every function endpoint reads by `project_ref`: without one, nothing ever reads the entry.
    if records.iter().all(|record| record.project_ref.is_none()) {
        return Err(RejectReason::Unfindable(Stream::Function));
    }
    for record in records {
        let no_response = record.response.is_empty().then_some(None);
        let statuses = record.response.iter().map(|r| r.status_code);
        for status_code in no_response.into_iter().chain(statuses) {
            rows.push(StagedInvocation {
                timestamp: head.timestamp,
                project_ref: record.project_ref.clone(),
                function_id: record.function_id.clone(),
                execution_time_ms: record.execution_time_ms,
                status_code,
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What `function_entry` read, as text: its values, or why it refused.
    fn function_entry_text(read: Reading<(Head<'_>, Repeated<FunctionMetadata<'_>>)>) -> String {
        match read {
            Ok((head, records)) => {
                let records: Vec<String> = records
                    .iter()
                    .map(|r| {
                        let statuses: Vec<_> = r.response.iter().map(|s| s.status_code).collect();
                        format!(
                            "{:?} {:?} {:?} {statuses:?}",
                            r.project_ref, r.function_id, r.execution_time_ms
                        )
                    })
                    .collect();
                format!(
                    "{} {} {:?} {:?} {records:?}",
                    head.timestamp, head.id, head.event_message, head.project
                )
            }
            Err(reason) => format!("refused: {reason}"),
        }
    }

    #[test]
    fn ndjson_lines_are_the_lines_str_lines_finds() {
        let by_str_lines = |text: &str| -> Vec<(Option<usize>, String)> {
            text.lines()
                .enumerate()
                .filter(|(_, line)| !is_blank_text(line))
                .map(|(n, line)| (Some(n + 1), line.trim().to_owned()))
                .collect()
        };
        for text in [
            "",
            "\n",
            "\n\n",
            "{\"a\":1}",
            "{\"a\":1}\n",
            "{\"a\":1}\r\n\r\n {\"b\":2} \r\n",
            "\r\n\t\n{\"a\":1}\n\r\n",
            "{\"a\":1}\r",
            "\r{\"a\":\"\u{2028}\"}\u{2028}\n\u{85}\n{}",
            "x\ny\n\nz",
        ] {
            let framed: Vec<(Option<usize>, String)> = ndjson_lines(text)
                .into_iter()
                .map(|f| (f.line, f.text.unwrap_or_default().to_owned()))
                .collect();
            assert_eq!(framed, by_str_lines(text), "{text:?}");
        }
    }

    #[test]
    fn a_function_entry_read_in_one_pass_is_read_as_in_two() {
        let lines = [
            r#"{"id":"a","timestamp":1700000000000000,"event_message":"POST","metadata":[{"project_ref":"p","function_id":"f","execution_time_ms":12.5,"response":[{"status_code":200},{"status_code":404.0}]}]}"#,
            r#"{"id":"a","timestamp":"2023-11-14T22:13:20Z","metadata":{"project_ref":"p\u0031","response":{"status_code":null}}}"#,
            r#"{"id":"a","timestamp":1700000000000000,"metadata":[{"project_ref":"p"},{"project_ref":"q","response":[]}],"extra":{"x":[1,2]}}"#,
            r#"{"id":"a","timestamp":1700000000000000,"metadata":null}"#,
            r#"{"id":"a","timestamp":1700000000000000,"metadata":  null , "x":"\ud800"}"#,
            r#"{"id":"a","timestamp":1700000000000000,"metad\u0061ta":[{"project\u005fref":"p"}]}"#,
            r#"{"id":"a","timestamp":1700000000000000}"#,
            // Refused: by the metadata, by the head before the metadata, by both.
            r#"{"id":"a","timestamp":1700000000000000,"metadata":[{"project_ref":"p","response":[{"status_code":4.5}]}]}"#,
            r#"{"id":"a","timestamp":1700000000000000,"metadata":[{"project_ref":5}]}"#,
            r#"{"id":"a","timestamp":1700000000000000,"metadata":"text"}"#,
            r#"{"id":"a","timestamp":1700000000000000,"metadata":""}"#,
            r#"{"id":"a","timestamp":1700000000000000,"metadata":[{"project_ref":"p","execution_time_ms":1e400}]}"#,
            r#"{"id":"a","timestamp":1700000000000000,"metadata":[{"project_ref":"p","project_ref":"q"}]}"#,
            r#"{"timestamp":1700000000000000,"metadata":[{"project_ref":"p"}]}"#,
            r#"{"id":"","timestamp":1700000000000000,"metadata":[{"project_ref":5}]}"#,
            r#"{"id":"a","timestamp":-5,"metadata":[{"project_ref":"p"}]}"#,
            r#"{"id":"a","id":"b","timestamp":1700000000000000,"metadata":[{"project_ref":"p"}]}"#,
            r#"{"id":"a","timestamp":1700000000000000,"metadata":[{"project_ref":"p"}],"metadata":null}"#,
            r#"{"id":"a","timestamp":1700000000000000,"metadata":[{"project_ref":"p"}]"#,
            r#"[{"id":"a"}]"#,
        ];
        let forms = [
            EntryForm::Contract,
            EntryForm::Logflare {
                received: 1_700_000_000_000_000,
                seed: 7,
            },
        ];
        // What serde_json reads: the whole entry, else the head then the metadata.
        fn by_serde<'a>(
            line: &'a str,
            form: &EntryForm,
        ) -> Reading<(Head<'a>, Repeated<FunctionMetadata<'a>>)> {
            match parse_head::<Repeated<FunctionMetadata>>(line) {
                Ok(entry) => checked_head(entry, form, 3),
                Err(_) => function_entry_in_two_passes(line, form, 3),
            }
        }
        for form in &forms {
            for line in lines {
                assert_eq!(
                    function_entry_text(function_entry(line, form, 3)),
                    function_entry_text(by_serde(line, form)),
                    "{line}"
                );
            }
        }
        // The lines refused are refused (so the comparison above compares reasons too).
        let refused = lines
            .iter()
            .filter(|line| function_entry(line, &EntryForm::Contract, 0).is_err())
            .count();
        assert_eq!(refused, 13);
        // Those read whole are read in one pass, as are lines with one byte
        // of JSON's syntax put in or taken out at each place where the one
        // pass reads them at all.
        let one_pass = function_entry_in_one_pass;
        assert!(lines[..7].iter().all(|line| one_pass(line).is_some()));
        let mut variants = 0;
        for line in &lines[..3] {
            for at in (0..line.len()).filter(|&at| line.is_char_boundary(at)) {
                let mut cut = (*line).to_owned();
                cut.remove(at);
                let put =
                    ["{", "}", "[", "]", "\"", ",", ":", "0", ".", "-", "e", "n"].map(|byte| {
                        let mut put = (*line).to_owned();
                        put.insert_str(at, byte);
                        put
                    });
                for variant in std::iter::once(cut).chain(put) {
                    for form in &forms {
                        if let Some(entry) = one_pass(&variant) {
                            variants += 1;
                            assert_eq!(
                                function_entry_text(checked_head(entry, form, 3)),
                                function_entry_text(by_serde(&variant, form)),
                                "{variant}"
                            );
                        }
                    }
                }
            }
        }
        assert!(variants > 1000, "{variants}");
    }

    #[test]
    fn numbers_read_as_serde_json_reads_them() {
        let mut seed = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = move || crate::test_rng::xorshift(&mut seed);
        let mut texts: Vec<String> = [
            "0",
            "-0",
            "0.0",
            "41",
            "67.8",
            "120.4",
            "0.1",
            "0.3",
            "999999999999999",
            "9999999999999999",
            "123456789012345.6",
            "1.000000000000001",
            "1e2",
            "1E-7",
            "-12.5",
            "1.5e400",
            "0.000000000000001",
        ]
        .map(str::to_owned)
        .to_vec();
        for _ in 0..20_000 {
            let digits = 1 + next() % 18;
            let mut text: String = (0..digits)
                .map(|_| char::from(b'0' + (next() % 10) as u8))
                .collect();
            if text.len() > 1 {
                text = text.trim_start_matches('0').to_owned();
                if text.is_empty() {
                    text.push('0');
                }
            }
            let point = next() as usize % (text.len() + 2);
            if point > 0 && point < text.len() {
                text.insert(point, '.');
            } else if point > text.len() {
                text.insert_str(0, "0.");
            }
            texts.push(text);
        }
        for text in &texts {
            let serde = serde_json::from_str::<f64>(text).ok();
            assert_eq!(
                json_f64(text).map(f64::to_bits),
                serde.map(f64::to_bits),
                "{text}"
            );
        }
    }

    /// What an edge entry read to, as text: its values, its metadata's text
    /// and requests, or why it was refused.
    fn edge_entry_text(read: Reading<(Head<'_>, EdgeMetadataRead<'_>)>) -> String {
        match read {
            Ok((head, (text, records))) => {
                let requests: Vec<String> = records
                    .iter()
                    .flat_map(|r| r.request.iter())
                    .map(|r| format!("{:?} {:?}", r.url, r.path))
                    .collect();
                format!(
                    "{} {} {:?} {:?} {text:?} {requests:?}",
                    head.timestamp, head.id, head.event_message, head.project
                )
            }
            Err(reason) => format!("refused: {reason}"),
        }
    }

    /// Lines with a value nested `levels` deep: in `metadata`, and in a
    /// field not read.
    fn nested_lines(levels: usize) -> [String; 2] {
        let nested = |levels: usize| format!("{}{}", "[".repeat(levels), "]".repeat(levels));
        let metadata = format!(
            r#"[{{"request":[{{"url":"u","h":{}}}]}}]"#,
            nested(levels - 4)
        );
        [
            format!(r#"{{"id":"a","timestamp":1,"project":"p","metadata":{metadata}}}"#),
            format!(
                r#"{{"id":"a","timestamp":1,"project":"p","x":{}}}"#,
                nested(levels)
            ),
        ]
    }

    #[test]
    fn an_edge_entry_read_in_one_pass_is_read_as_in_two() {
        let base = [
            r#"{"id":"a","timestamp":1700000000000000,"event_message":"GET","project":"p","metadata":[{"request":[{"url":"https://p.supabase.co/rest/v1/t?x=1","path":"/rest/v1/t","headers":[{"a":1}]}],"response":[{"status_code":200}]}]}"#,
            r#"{"id":"a","timestamp":"2023-11-14T22:13:20Z","message":"m","event_message":"e","metadata":{"request":{"url":"u\u0031"}}} "#,
            r#"{ "id" : "a" , "timestamp" : 1700000000000000 , "metadata" : [ { "request" : [ ] } , { } ] , "extra" : { "x" : [ 1 , 2e400 ] } }"#,
            r#"{"id":"a","timestamp":1700000000000000,"project":"p","metadata":null}"#,
            r#"{"id":"a","timestamp":1700000000000000,"project":null,"metadata":[{"request":[{"url":null,"path":"/auth/v1/x"}]}],"y":"\ud800"}"#,
            r#"{"id":"a","timestamp":1700000000000000,"proj\u0065ct":"p","metad\u0061ta":[{"requ\u0065st":[{"url":"u"}]}]}"#,
            r#"{"id":"a","timestamp":1700000000000000,"project":"p"}"#,
            r#"{}"#,
            // Refused: by the metadata, by the head, by both, or not an entry.
            r#"{"id":"a","timestamp":1700000000000000,"project":"p","metadata":[{"request":[{"url":5}]}]}"#,
            r#"{"id":"a","timestamp":1700000000000000,"project":"p","metadata":"text"}"#,
            r#"{"id":"a","timestamp":1700000000000000,"project":"p","metadata":5}"#,
            r#"{"id":"a","timestamp":1700000000000000,"project":"p","metadata":[{"request":[{"url":"u","url":"v"}]}]}"#,
            r#"{"id":"","timestamp":1700000000000000,"metadata":[{"request":[{"url":5}]}]}"#,
            r#"{"id":"a","id":"b","timestamp":1700000000000000,"project":"p"}"#,
            r#"{"id":"a","timestamp":1700000000000000,"project":"p","metadata":null,"metadata":null}"#,
            r#"{"id":"a","timestamp":1700000000000000,"project":"p","metadata":[{"request":[]}]"#,
            r#"{"id":"a","timestamp":1700000000000000,"project":"p",}"#,
            r#"{"id":"a","timestamp":1700000000000000 "project":"p"}"#,
            r#"{"id":"a","timestamp":17000x,"project":"p"}"#,
            r#"{"id":"a","timestamp":1700000000000000,"project":"p"} x"#,
            r#"{"id":"a","timestamp":1700000000000000,"project":"p"}}"#,
            r#"{"id":"a","timestamp":1700000000000000,"project":"p","x":tru}"#,
            r#"{"id":"a","timestamp":1700000000000000,"project":"p","x" 1}"#,
            r#"{"id":"a","timestamp":1700000000000000,"project":"p",x:1}"#,
            r#"{,"id":"a"}"#,
            r#"[{"id":"a"}]"#,
        ];
        // Read in one pass too: escapes and numbers of every form, in
        // fields read and skipped, and strings long enough for SIMD steps.
        let more = [
            r#"{"id":"a\"b","timestamp":1700000000000000,"project":"p\u00e9","metadata":[{"request":[{"url":"https://p.supabase.co/rest/v1/a\/b?q=\"x\"&r=\\","path":"/rest/v1/\u0061"}],"n":[-0.5e+3,0,-0,1E9,12.25E-2,true,false,null,{"":{}},[[]]],"s":"\b\f\n\r\t\u00E9\udc00"}]}"#,
            r#"{"event_message":"a long message that runs past sixteen bytes \" and on","timestamp":"2023-11-14T22:13:20Z","id":"b","metadata":{"request":null,"x":"0123456789abcdef0123456789abcdef"},"project":"p"}"#,
        ];
        // Every line with one byte of JSON's syntax put in, or one taken
        // out, at each place: entries a parse might read differently.
        let mut lines: Vec<String> = base.iter().chain(&more).map(|&l| l.to_owned()).collect();
        for line in base[..3].iter().chain(&more) {
            for at in (0..line.len()).filter(|&at| line.is_char_boundary(at)) {
                let mut cut = (*line).to_owned();
                cut.remove(at);
                lines.push(cut);
                for byte in ["{", "}", "[", "]", "\"", ",", ":", " ", "\\", "0", "n"] {
                    let mut put = (*line).to_owned();
                    put.insert_str(at, byte);
                    lines.push(put);
                }
            }
        }
        // serde_json skips a value not read into a type at any depth, in a
        // whole entry as alone (its limit, 128 levels, is for typed reads).
        let nested: Vec<String> = [126, 127, 128, 1000]
            .into_iter()
            .flat_map(nested_lines)
            .collect();
        lines.extend(nested.iter().cloned());
        let forms = [
            EntryForm::Contract,
            EntryForm::Logflare {
                received: 1_700_000_000_000_000,
                seed: 7,
            },
        ];
        let mut in_one_pass = 0;
        for form in &forms {
            for line in &lines {
                if let Some(entry) = edge_entry_in_one_pass(line) {
                    in_one_pass += 1;
                    assert_eq!(
                        edge_entry_text(checked_head(entry, form, 3)),
                        edge_entry_text(edge_entry_in_two_passes(line, form, 3)),
                        "{line}"
                    );
                }
            }
        }
        // Entries read whole are read in one pass, but for those refused for
        // their metadata's records.
        let one_pass = |line: &str| edge_entry_in_one_pass(line).is_some();
        assert!(base[..8].iter().chain(&more).all(|line| one_pass(line)));
        assert!(base[8..].iter().all(|line| !one_pass(line)));
        assert!(nested.iter().all(|line| one_pass(line)));
        let read = forms.len() * lines.len();
        assert!(in_one_pass * 3 > read, "{in_one_pass} of {read}");
        // Each of HEAD_FIELDS is one of EntryHead's: the whole-entry parse
        // refuses it named twice.
        for name in HEAD_FIELDS {
            let line = format!(r#"{{"{name}":null,"{name}":null}}"#);
            let read = edge_entry_in_two_passes(&line, &EntryForm::Contract, 0);
            let refused = read.err().map(|r| r.to_string()).unwrap_or_default();
            assert!(refused.contains("duplicate field"), "{name}: {refused}");
        }
    }

    #[test]
    fn short_digits_read_as_std_reads_them_or_not_at_all() {
        for text in ["0", "007", "1794571200379254", "999999999999999999"] {
            assert_eq!(short_digits(text), text.parse::<i64>().ok(), "{text}");
            assert!(short_digits(text).is_some(), "{text}");
        }
        // Past 18 digits, signed, or not a number: std's parse reads them.
        for text in [
            "1000000000000000000",
            "",
            "+1",
            "-1",
            "1e5",
            "12a",
            "1.5",
            " 1",
        ] {
            assert_eq!(short_digits(text), None, "{text}");
        }
    }

    #[test]
    fn frames_arrays_and_ndjson() {
        let array =
            split_entries(br#" [{"a":1}, 2, {"b":[1,2]}] "#, Framing::Detect).unwrap_or_default();
        assert_eq!(array.len(), 3);
        let nd =
            split_entries(b"{\"a\":1}\n\n{oops\n{\"c\":3}\n", Framing::Detect).unwrap_or_default();
        assert_eq!(nd.len(), 3);
        assert_eq!(nd[1].line, Some(3));
        let reason = nd[1]
            .text
            .clone()
            .and_then(|raw| read_edge(raw, &EntryForm::Contract, 0))
            .err();
        let reason = reason.map(|r| nd[1].reason(r).to_string());
        assert!(reason.is_some_and(|r| r.starts_with("line 3: not valid JSON")));
        assert!(split_entries(b"[1, 2", Framing::Detect).is_err());
        assert!(split_entries(&[0xff, 0xfe], Framing::Detect).is_err());
        assert_eq!(
            split_entries(b"  \n ", Framing::Detect).map(|v| v.len()),
            Ok(0)
        );
    }

    #[test]
    fn nesting_is_bounded() {
        let deep = |n: usize| format!("{{\"m\":{}{}}}", "[".repeat(n), "]".repeat(n));
        assert!(!nests_deeper_than(
            &deep(MAX_JSON_DEPTH - 1),
            MAX_JSON_DEPTH
        ));
        assert!(nests_deeper_than(&deep(MAX_JSON_DEPTH), MAX_JSON_DEPTH));
        // Brackets inside strings (escaped quotes too) do not count.
        let in_string = format!("{{\"m\":\"\\\"{}\"}}", "[".repeat(500));
        assert!(!nests_deeper_than(&in_string, MAX_JSON_DEPTH));
        let batch = format!("{}\n{{\"id\":\"b\",\"timestamp\":1}}\n", deep(1_000_000));
        let entries = split_entries(batch.as_bytes(), Framing::Detect).unwrap_or_default();
        assert!(entries[0]
            .text
            .as_ref()
            .is_err_and(|e| e.to_string().contains("deeper than 64")));
        assert!(entries[1].text.is_ok());
    }

    #[test]
    fn edge_entry_fields() {
        let raw = r#"{"id":"a","timestamp":"2026-11-20T10:00:00Z","event_message":"GET","project":"p","metadata":{"request":{"url":"https://p.supabase.co/rest/v1/x","path":"/rest/v1/x"}}}"#;
        let entry = read_edge(raw, &EntryForm::Contract, 0).map_err(|e| e.to_string());
        let entry = entry.as_ref().map_err(Clone::clone);
        assert!(entry.is_ok(), "{entry:?}", entry = entry.err());
        if let Ok(entry) = entry {
            assert_eq!(entry.requests.len(), 1);
            assert_eq!(entry.requests.as_slice()[0].areas, area::REST);
            assert_eq!(
                entry.metadata,
                Some(
                    r#"{"request":{"url":"https://p.supabase.co/rest/v1/x","path":"/rest/v1/x"}}"#
                )
            );
        }
    }

    #[test]
    fn the_latest_time_kept_is_the_largest_a_js_number_holds() {
        for raw in ["9007199254740991", r#""2255-06-05T23:47:34.740991Z""#] {
            assert_eq!(
                read_timestamp(raw),
                Ok(timestamp::MAX_ENTRY_MICROS),
                "{raw}"
            );
        }
        assert_eq!(
            read_timestamp(r#""1684-07-28T00:12:25.259009Z""#),
            Ok(timestamp::MIN_ENTRY_MICROS)
        );
    }

    #[test]
    fn rejections_name_the_field() {
        let cases = [
            ("5", "not a JSON object"),
            (r#"{"timestamp":1}"#, "missing `id`"),
            (r#"{"id":"a"}"#, "missing `timestamp`"),
            (r#"{"id":"a","timestamp":"soon"}"#, "invalid `timestamp`"),
            (r#"{"id":"a","timestamp":1e300}"#, "outside the times kept"),
            (
                r#"{"id":"a","timestamp":9007199254740992}"#,
                "is after 2255-06-05T23:47:34.740991Z",
            ),
            (
                r#"{"id":"a","timestamp":"2255-06-05T23:47:34.740992Z"}"#,
                "is after 2255-06-05T23:47:34.740991Z",
            ),
            (
                r#"{"id":"a","timestamp":"1000-01-01"}"#,
                "is before 1684-07-28T00:12:25.259009Z",
            ),
            (
                r#"{"id":"a","timestamp":true}"#,
                "must be a number or an ISO 8601 string",
            ),
            (r#"{"id":"a","timestamp":-1}"#, "is negative"),
            (r#"{"id":"a","timestamp":-1.5e300}"#, "is negative"),
            // Digits in a string read as a number, a negative one too (a CSV cell is a string).
            (r#"{"id":"a","timestamp":"-1"}"#, "is negative"),
            (
                r#"{"id":"a","timestamp":" -1795177796000000"}"#,
                "is negative",
            ),
            (r#"{"id":{},"timestamp":1}"#, "`id` must be a string"),
            (
                r#"{"id":"a","timestamp":1,"event_message":5}"#,
                "`event_message` must be a string",
            ),
        ];
        for (raw, expected) in cases {
            match read_edge(raw, &EntryForm::Contract, 0) {
                Ok(_) => panic!("{raw} should be rejected"),
                Err(reason) => assert!(reason.to_string().contains(expected), "{raw}: {reason}"),
            }
        }
    }

    #[test]
    fn function_rows_follow_the_cross_join() {
        let raw = r#"{"id":"a","timestamp":1,"metadata":[{"project_ref":"p","function_id":"f","execution_time_ms":null,"response":[{"status_code":200},{"status_code":500}]},{"project_ref":"p"}]}"#;
        let mut rows = Vec::new();
        assert!(read_function(raw, &EntryForm::Contract, 0, &mut rows).is_ok());
        assert_eq!(rows.len(), 3);
        assert_eq!(rows[1].status_code, Some(500));
        assert_eq!(rows[2].status_code, None);
        let bad = r#"{"id":"a","timestamp":1,"metadata":{"response":{"status_code":"200"}}}"#;
        assert!(read_function(bad, &EntryForm::Contract, 0, &mut Vec::new()).is_err());
    }
}
