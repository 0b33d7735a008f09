//! The bytes the ingest partitions keep and send, read back whole or refused:
//! - a record: one batch split by shard (each shard's staged rows), kept from
//!   the acknowledgement until every shard has its part;
//! - a delivery: one round's rows for one shard (a section per stream), with
//!   the partition and round that make a resend recognisable.
//!
//! Little-endian; texts and bodies as a `u32` length and their bytes.

use super::round::Registered;
use crate::error::{Error, Result};
use crate::ingest::Stream;

const RECORD_MAGIC: &[u8; 8] = b"LEREC001";
const DELIVERY_MAGIC: &[u8; 8] = b"LEDLV001";
/// Registrations name each project-day's split; `LEREG001` (no split: 0) still reads.
const REGISTRATION_MAGIC: &[u8; 8] = b"LEREG002";
const REGISTRATION_MAGIC_1: &[u8; 8] = b"LEREG001";

/// Bytes that do not read never will: a refusal a retry cannot change.
fn unreadable(what: &str) -> Error {
    Error::UnreadableBatch {
        reason: format!("stored or sent bytes do not read: {what}"),
    }
}

struct Out(Vec<u8>);

impl Out {
    fn u8(&mut self, v: u8) {
        self.0.push(v);
    }
    fn u32(&mut self, v: u32) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn u64(&mut self, v: u64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn bytes(&mut self, v: &[u8]) {
        self.u32(v.len() as u32);
        self.0.extend_from_slice(v);
    }
}

struct In<'a>(&'a [u8]);

impl<'a> In<'a> {
    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8]> {
        let (head, rest) = self.0.split_at_checked(n).ok_or_else(|| unreadable(what))?;
        self.0 = rest;
        Ok(head)
    }
    fn u8(&mut self, what: &str) -> Result<u8> {
        Ok(self.take(1, what)?.first().copied().unwrap_or(0))
    }
    fn u32(&mut self, what: &str) -> Result<u32> {
        let bytes = self
            .take(4, what)?
            .try_into()
            .map_err(|_| unreadable(what))?;
        Ok(u32::from_le_bytes(bytes))
    }
    fn u64(&mut self, what: &str) -> Result<u64> {
        let bytes = self
            .take(8, what)?
            .try_into()
            .map_err(|_| unreadable(what))?;
        Ok(u64::from_le_bytes(bytes))
    }
    fn bytes(&mut self, what: &str) -> Result<&'a [u8]> {
        let n = self.u32(what)? as usize;
        self.take(n, what)
    }
    fn text(&mut self, what: &str) -> Result<&'a str> {
        std::str::from_utf8(self.bytes(what)?).map_err(|_| unreadable(what))
    }
    fn stream(&mut self) -> Result<Stream> {
        match self.u8("a stream")? {
            0 => Ok(Stream::Edge),
            1 => Ok(Stream::Function),
            2 => Ok(Stream::Other),
            _ => Err(unreadable("a stream")),
        }
    }
    fn magic(&mut self, magic: &[u8; 8], what: &str) -> Result<()> {
        (self.take(8, what)? == magic)
            .then_some(())
            .ok_or_else(|| unreadable(what))
    }
}

fn stream_byte(stream: Stream) -> u8 {
    match stream {
        Stream::Edge => 0,
        Stream::Function => 1,
        Stream::Other => 2,
    }
}

/// Writes a record: a split batch as the bytes an ingest partition keeps.
pub struct RecordWriter(Out);

impl RecordWriter {
    pub fn new(parts: usize, size: usize) -> RecordWriter {
        let mut out = Out(Vec::with_capacity(size + 12));
        out.0.extend_from_slice(RECORD_MAGIC);
        out.u32(parts as u32);
        RecordWriter(out)
    }

    /// One shard's part: its staged rows (`rows` of them) and its projects'
    /// URL trigram bits.
    pub fn part(
        &mut self,
        group: u32,
        day: &str,
        stream: Stream,
        rows: usize,
        staged: &[u8],
        projects: &[(&str, Vec<u32>)],
    ) {
        let out = &mut self.0;
        out.u32(group);
        out.bytes(day.as_bytes());
        out.u8(stream_byte(stream));
        out.u32(rows as u32);
        out.bytes(staged);
        out.u32(projects.len() as u32);
        for (key, bits) in projects {
            out.bytes(key.as_bytes());
            out.u32(bits.len() as u32);
            for &bit in bits {
                out.u32(bit);
            }
        }
    }

    pub fn finish(self) -> Vec<u8> {
        self.0 .0
    }
}

/// One part of a record, read in place.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordPart<'a> {
    pub group: u32,
    pub day: &'a str,
    pub stream: Stream,
    /// How many staged rows `body` holds.
    pub entries: usize,
    /// The part's staged rows, as blocks (`staged`).
    pub body: &'a [u8],
    pub projects: Vec<(&'a str, Vec<u32>)>,
}

/// The parts a record holds.
pub fn read_record(bytes: &[u8]) -> Result<Vec<RecordPart<'_>>> {
    let mut input = In(bytes);
    input.magic(RECORD_MAGIC, "a stored batch")?;
    let count = input.u32("a part count")?;
    let mut parts = Vec::new();
    for _ in 0..count {
        let group = input.u32("a group")?;
        let day = input.text("a day")?;
        let stream = input.stream()?;
        let entries = input.u32("an entry count")? as usize;
        let body = input.bytes("a part")?;
        let projects = (0..input.u32("a project count")?)
            .map(|_| {
                let key = input.text("a project key")?;
                let bits = (0..input.u32("a bit count")?)
                    .map(|_| input.u32("a bit"))
                    .collect::<Result<Vec<u32>>>()?;
                Ok((key, bits))
            })
            .collect::<Result<Vec<_>>>()?;
        parts.push(RecordPart {
            group,
            day,
            stream,
            entries,
            body,
            projects,
        });
    }
    if !input.0.is_empty() {
        return Err(unreadable("bytes after the last part"));
    }
    Ok(parts)
}

/// One stream's rows of a delivery, staged and in blocks (`staged`): `entries` of them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Section {
    pub stream: Stream,
    pub entries: usize,
    pub body: Vec<u8>,
}

/// What a shard receives from an ingest partition in one round.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivery {
    /// The ingest partition that sends it …
    pub partition: String,
    /// … and its round: a shard applies each (partition, round) once.
    pub round: u64,
    pub sections: Vec<Section>,
}

impl Delivery {
    pub fn write(&self) -> Vec<u8> {
        let size: usize = self.sections.iter().map(|s| s.body.len() + 9).sum();
        let mut out = Out(Vec::with_capacity(size + 32));
        out.0.extend_from_slice(DELIVERY_MAGIC);
        out.bytes(self.partition.as_bytes());
        out.u64(self.round);
        out.u32(self.sections.len() as u32);
        for section in &self.sections {
            out.u8(stream_byte(section.stream));
            out.u32(section.entries as u32);
            out.bytes(&section.body);
        }
        out.0
    }

    /// The partition and round of a delivery, read without its sections.
    pub fn header(bytes: &[u8]) -> Result<(String, u64)> {
        let mut input = In(bytes);
        input.magic(DELIVERY_MAGIC, "a delivery")?;
        let partition = input.text("a partition")?.to_owned();
        Ok((partition, input.u64("a round")?))
    }

    pub fn read(bytes: &[u8]) -> Result<Delivery> {
        let mut input = In(bytes);
        input.magic(DELIVERY_MAGIC, "a delivery")?;
        let partition = input.text("a partition")?.to_owned();
        let round = input.u64("a round")?;
        let sections = (0..input.u32("a section count")?)
            .map(|_| {
                Ok(Section {
                    stream: input.stream()?,
                    entries: input.u32("an entry count")? as usize,
                    body: input.bytes("a section")?.to_vec(),
                })
            })
            .collect::<Result<Vec<_>>>()?;
        if !input.0.is_empty() {
            return Err(unreadable("bytes after the last section"));
        }
        Ok(Delivery {
            partition,
            round,
            sections,
        })
    }
}

/// A registration as bytes: each project-day and its new URL bits.
pub fn write_registration(entries: &[Registered]) -> Vec<u8> {
    let mut out = Out(Vec::with_capacity(16 + entries.len() * 48));
    out.0.extend_from_slice(REGISTRATION_MAGIC);
    out.u32(entries.len() as u32);
    for entry in entries {
        out.bytes(entry.project_key.as_bytes());
        out.bytes(entry.day.as_bytes());
        out.u32(entry.url_bits.len() as u32);
        for &bit in &entry.url_bits {
            out.u32(bit);
        }
        out.u32(entry.split);
    }
    out.0
}

/// The entries of a registration.
pub fn read_registration(bytes: &[u8]) -> Result<Vec<Registered>> {
    let mut input = In(bytes);
    let with_splits = bytes.starts_with(REGISTRATION_MAGIC);
    let magic = if with_splits {
        REGISTRATION_MAGIC
    } else {
        REGISTRATION_MAGIC_1
    };
    input.magic(magic, "a registration")?;
    let entries = (0..input.u32("an entry count")?)
        .map(|_| {
            Ok(Registered {
                project_key: input.text("a project key")?.to_owned(),
                day: input.text("a day")?.to_owned(),
                url_bits: (0..input.u32("a bit count")?)
                    .map(|_| input.u32("a bit"))
                    .collect::<Result<Vec<u32>>>()?,
                split: if with_splits {
                    input.u32("a split")?
                } else {
                    0
                },
            })
        })
        .collect::<Result<Vec<_>>>()?;
    if !input.0.is_empty() {
        return Err(unreadable("bytes after the last entry"));
    }
    Ok(entries)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_and_deliveries_read_back() {
        let mut writer = RecordWriter::new(1, 64);
        writer.part(
            3,
            "2026-11-20",
            Stream::Function,
            2,
            "rows é".as_bytes(),
            &[("p/x", vec![1, 7])],
        );
        let record = writer.finish();
        let parts = read_record(&record).unwrap();
        assert_eq!(
            parts,
            [RecordPart {
                group: 3,
                day: "2026-11-20",
                stream: Stream::Function,
                entries: 2,
                body: "rows é".as_bytes(),
                projects: vec![("p/x", vec![1, 7])],
            }]
        );
        for cut in 0..record.len() {
            assert!(read_record(&record[..cut]).is_err(), "cut at {cut}");
        }
        let delivery = Delivery {
            partition: "ingest/2".into(),
            round: 9,
            sections: vec![Section {
                stream: Stream::Edge,
                entries: 2,
                body: b"rows".to_vec(),
            }],
        };
        assert_eq!(Delivery::read(&delivery.write()).unwrap(), delivery);
        assert_eq!(
            Delivery::header(&delivery.write()).unwrap(),
            ("ingest/2".to_owned(), 9)
        );
        assert!(Delivery::read(&record).is_err());
    }
}
