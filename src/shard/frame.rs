//! The bytes the ingest partitions keep and send, read back whole or refused:
//! - a record: one batch split by shard (`ShardPart`s), kept from the
//!   acknowledgement until every shard has its part;
//! - a delivery: one round's entries for one shard (a section per stream),
//!   with the partition and round that make a resend recognisable.
//!
//! Little-endian; texts and bodies as a `u32` length and their bytes.

use super::shard_name;
use super::split::{ProjectUrls, ShardPart};
use crate::error::{Error, Result};
use crate::ingest::Stream;

const RECORD_MAGIC: &[u8; 8] = b"LEREC001";
const DELIVERY_MAGIC: &[u8; 8] = b"LEDLV001";

fn unreadable(what: &str) -> Error {
    Error::BadShardAnswer {
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
    }
}

/// A split batch as the bytes an ingest partition keeps.
pub fn write_record(parts: &[ShardPart]) -> Vec<u8> {
    let size: usize = parts.iter().map(|p| p.body.len() + 64).sum();
    let mut out = Out(Vec::with_capacity(size + 12));
    out.0.extend_from_slice(RECORD_MAGIC);
    out.u32(parts.len() as u32);
    for part in parts {
        out.u32(part.group);
        out.bytes(part.day.as_bytes());
        out.u8(stream_byte(part.stream));
        out.u32(part.entries as u32);
        out.bytes(part.body.as_bytes());
        out.u32(part.projects.len() as u32);
        for project in &part.projects {
            out.bytes(project.project_key.as_bytes());
            out.u32(project.url_bits.len() as u32);
            for &bit in &project.url_bits {
                out.u32(bit);
            }
        }
    }
    out.0
}

/// The parts a record holds.
pub fn read_record(bytes: &[u8]) -> Result<Vec<ShardPart>> {
    let mut input = In(bytes);
    input.magic(RECORD_MAGIC, "a stored batch")?;
    let count = input.u32("a part count")?;
    let mut parts = Vec::new();
    for _ in 0..count {
        let group = input.u32("a group")?;
        let day = input.text("a day")?.to_owned();
        let stream = input.stream()?;
        let entries = input.u32("an entry count")? as usize;
        let body = input.text("a part")?.to_owned();
        let projects = (0..input.u32("a project count")?)
            .map(|_| {
                let project_key = input.text("a project key")?.to_owned();
                let url_bits = (0..input.u32("a bit count")?)
                    .map(|_| input.u32("a bit"))
                    .collect::<Result<Vec<u32>>>()?;
                Ok(ProjectUrls {
                    project_key,
                    url_bits,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        parts.push(ShardPart {
            shard: shard_name(group, &day),
            group,
            day,
            stream,
            body,
            entries,
            projects,
        });
    }
    if !input.0.is_empty() {
        return Err(unreadable("bytes after the last part"));
    }
    Ok(parts)
}

/// One stream's entries of a delivery: a JSON array of them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Section {
    pub stream: Stream,
    pub entries: usize,
    pub body: String,
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
            out.bytes(section.body.as_bytes());
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
                    body: input.text("a section")?.to_owned(),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_and_deliveries_read_back() {
        let parts = vec![ShardPart {
            shard: shard_name(3, "2026-11-20"),
            group: 3,
            day: "2026-11-20".into(),
            stream: Stream::Function,
            body: "[{\"a\":\"é\"}]".into(),
            entries: 1,
            projects: vec![ProjectUrls {
                project_key: "p/x".into(),
                url_bits: vec![1, 7],
            }],
        }];
        let record = write_record(&parts);
        assert_eq!(read_record(&record).unwrap(), parts);
        for cut in 0..record.len() {
            assert!(read_record(&record[..cut]).is_err(), "cut at {cut}");
        }
        let delivery = Delivery {
            partition: "ingest/2".into(),
            round: 9,
            sections: vec![Section {
                stream: Stream::Edge,
                entries: 2,
                body: "[1,2]".into(),
            }],
        };
        assert_eq!(Delivery::read(&delivery.write()).unwrap(), delivery);
        assert!(Delivery::read(&record).is_err());
    }
}
