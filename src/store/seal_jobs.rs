//! Seal jobs: a store's full text blocks handed to its host to compress
//! elsewhere (another thread, which runs `seal_blocks` in its own instance of
//! the module), and handed back sealed. Compressing is about 40% of edge
//! ingest; with jobs, ingest goes on while a second core compresses, and
//! a block is read as open text until its seal is installed. The sealed
//! bytes are what sealing in place writes, so the store comes out the same.
//!
//! Both frames are sections, one per text table:
//! - jobs: `J`, then per section the table (a byte), the arena's dictionary
//!   (its length as u32, its bytes), the number of blocks (u32), each
//!   block's index and length (u32 each) and the XXH3 of its text (u64),
//!   then the blocks' texts back to back (so that a host copies each
//!   block's text once, straight from the store: `JobsSink`);
//! - sealed: `S`, then per section the table, the number of blocks and
//!   each block's index and decoded length (u32 each), the XXH3 its job
//!   held, its compressed length (u32; 0 when deflate did not finish) and
//!   compressed bytes. The store installs a block only if its job's XXH3
//!   (of its text, seeded by the dictionary's) is the one it handed out for
//!   that block.
//!
//! Integers are little-endian. A frame that does not parse whole is refused.

use super::block_storage::TextTable;
use super::deflate;

const JOBS: u8 = b'J';
const SEALED: u8 = b'S';

/// Where a frame of jobs is written, in pieces: a `Vec`, or at the boundary
/// the host's buffer, so that a block's text is copied once on its way out.
pub(crate) trait JobsSink {
    fn put(&mut self, bytes: &[u8]);
}

impl JobsSink for Vec<u8> {
    fn put(&mut self, bytes: &[u8]) {
        self.extend_from_slice(bytes);
    }
}

/// The bytes of a frame of sections of `sections` bytes (`section_bytes`).
pub(crate) fn frame_bytes(sections: usize) -> usize {
    1 + sections
}

/// The bytes of a section of jobs of `texts` (their lengths) against a
/// dictionary of `dictionary` bytes.
pub(crate) fn section_bytes(dictionary: usize, texts: impl Iterator<Item = usize>) -> usize {
    1 + 4 + dictionary + 4 + texts.map(|len| 4 + 4 + 8 + len).sum::<usize>()
}

/// A block handed out as a job.
pub(crate) struct Job<'t> {
    pub block: u32,
    pub hash: u64,
    pub text: &'t [u8],
}

/// Seal jobs being written.
pub(crate) struct JobsWriter<S> {
    out: S,
    empty: bool,
}

impl<S: JobsSink> JobsWriter<S> {
    pub(crate) fn new(mut out: S) -> JobsWriter<S> {
        out.put(&[JOBS]);
        JobsWriter { out, empty: true }
    }

    /// Writes `table`'s section: `jobs`, compressed against `dictionary`
    /// (none for no jobs).
    pub(crate) fn section(&mut self, table: TextTable, dictionary: &[u8], jobs: &[Job<'_>]) {
        if jobs.is_empty() {
            return;
        }
        let mut head = Vec::with_capacity(1 + 4);
        head.push(table as u8);
        push_u32(&mut head, dictionary.len());
        self.out.put(&head);
        self.out.put(dictionary);
        head.clear();
        head.reserve(4 + jobs.len() * 16);
        push_u32(&mut head, jobs.len());
        for job in jobs {
            push_u32(&mut head, job.block as usize);
            push_u32(&mut head, job.text.len());
            head.extend_from_slice(&job.hash.to_le_bytes());
        }
        self.out.put(&head);
        for job in jobs {
            self.out.put(job.text);
        }
        self.empty = false;
    }

    /// The frame, or `None` when it holds no job.
    pub(crate) fn finish(self) -> Option<S> {
        (!self.empty).then_some(self.out)
    }
}

fn push_u32(out: &mut Vec<u8>, value: usize) {
    out.extend_from_slice(&(value as u32).to_le_bytes());
}

/// Reads a frame front to back.
struct Reader<'f> {
    rest: &'f [u8],
}

impl<'f> Reader<'f> {
    fn u8(&mut self) -> Option<u8> {
        let (&byte, rest) = self.rest.split_first()?;
        self.rest = rest;
        Some(byte)
    }

    fn u32(&mut self) -> Option<u32> {
        let (word, rest) = self.rest.split_first_chunk::<4>()?;
        self.rest = rest;
        Some(u32::from_le_bytes(*word))
    }

    fn u64(&mut self) -> Option<u64> {
        let (word, rest) = self.rest.split_first_chunk::<8>()?;
        self.rest = rest;
        Some(u64::from_le_bytes(*word))
    }

    fn bytes(&mut self, len: u32) -> Option<&'f [u8]> {
        let len = usize::try_from(len).ok()?;
        let bytes = self.rest.get(..len)?;
        self.rest = self.rest.get(len..)?;
        Some(bytes)
    }

    fn table(&mut self) -> Option<TextTable> {
        match self.u8()? {
            0 => Some(TextTable::Edge),
            1 => Some(TextTable::Other),
            _ => None,
        }
    }

    fn is_done(&self) -> bool {
        self.rest.is_empty()
    }
}

/// Compresses every block of a jobs frame: the sealed frame for it, or
/// `None` when `jobs` is not one.
pub(crate) fn seal_blocks(jobs: &[u8]) -> Option<Vec<u8>> {
    let (&JOBS, rest) = jobs.split_first()? else {
        return None;
    };
    let mut reader = Reader { rest };
    let mut out = vec![SEALED];
    while !reader.is_done() {
        let table = reader.table()?;
        let dictionary_len = reader.u32()?;
        let dictionary = reader.bytes(dictionary_len)?;
        let count = reader.u32()?;
        out.push(table as u8);
        push_u32(&mut out, count as usize);
        let mut heads = Reader {
            rest: reader.bytes(count.checked_mul(16)?)?,
        };
        for _ in 0..count {
            let block = heads.u32()?;
            // A store never hands out an empty block: a frame of them would
            // only cost a compressor each.
            let len = heads.u32().filter(|&len| len > 0)?;
            let hash = heads.u64()?;
            let text = reader.bytes(len)?;
            push_u32(&mut out, block as usize);
            push_u32(&mut out, text.len());
            out.extend_from_slice(&hash.to_le_bytes());
            match deflate::compress(text, dictionary) {
                Some(compressed) => {
                    push_u32(&mut out, compressed.len());
                    out.extend_from_slice(&compressed);
                }
                None => push_u32(&mut out, 0),
            }
        }
    }
    Some(out)
}

/// A block of a sealed frame.
#[derive(Clone, Copy)]
pub(crate) struct SealedBlock<'f> {
    pub table: TextTable,
    pub block: u32,
    pub len: u32,
    /// The XXH3 of the text its job held.
    pub hash: u64,
    /// `None`: deflate did not finish it.
    pub compressed: Option<&'f [u8]>,
}

/// The blocks of a sealed frame, or `None` when it does not parse whole.
pub(crate) fn sealed_blocks(sealed: &[u8]) -> Option<Vec<SealedBlock<'_>>> {
    let (&SEALED, rest) = sealed.split_first()? else {
        return None;
    };
    let mut reader = Reader { rest };
    let mut blocks = Vec::new();
    while !reader.is_done() {
        let table = reader.table()?;
        let count = reader.u32()?;
        for _ in 0..count {
            let block = reader.u32()?;
            let len = reader.u32()?;
            let hash = reader.u64()?;
            let compressed = match reader.u32()? {
                0 => None,
                bytes => Some(reader.bytes(bytes)?),
            };
            blocks.push(SealedBlock {
                table,
                block,
                len,
                hash,
                compressed,
            });
        }
    }
    Some(blocks)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(block: u32, hash: u64, text: &[u8]) -> Job<'_> {
        Job { block, hash, text }
    }

    fn jobs() -> Vec<u8> {
        let mut writer = JobsWriter::new(Vec::new());
        let edge = [
            job(3, 33, b"dictionary words, dictionary words"),
            job(9, 99, b"x"),
        ];
        writer.section(TextTable::Edge, b"dictionary", &edge);
        writer.section(TextTable::Other, b"", &[job(0, 0, b"other text")]);
        writer.finish().unwrap()
    }

    #[test]
    fn an_empty_frame_is_no_frame() {
        let mut writer = JobsWriter::new(Vec::new());
        writer.section(TextTable::Edge, b"dictionary", &[]);
        assert_eq!(writer.finish(), None);
    }

    #[test]
    fn a_frame_is_as_long_as_foreseen() {
        let texts = [34, 1, 10];
        let foreseen = frame_bytes(
            section_bytes(10, texts[..2].iter().copied())
                + section_bytes(0, texts[2..].iter().copied()),
        );
        assert_eq!(jobs().len(), foreseen);
    }

    #[test]
    fn each_job_comes_back_sealed_as_sealing_in_place_writes_it() {
        let sealed = seal_blocks(&jobs()).unwrap();
        let blocks = sealed_blocks(&sealed).unwrap();
        let got: Vec<_> = blocks
            .iter()
            .map(|b| {
                (
                    b.table as u8,
                    b.block,
                    b.len,
                    b.hash,
                    b.compressed.map(<[u8]>::to_vec),
                )
            })
            .collect();
        let seal =
            |text: &[u8], dictionary: &[u8]| deflate::compress(text, dictionary).map(Vec::from);
        assert_eq!(
            got,
            vec![
                (
                    0,
                    3,
                    34,
                    33,
                    seal(b"dictionary words, dictionary words", b"dictionary")
                ),
                (0, 9, 1, 99, seal(b"x", b"dictionary")),
                (1, 0, 10, 0, seal(b"other text", b"")),
            ]
        );
    }

    #[test]
    fn a_frame_cut_short_or_of_the_other_kind_is_refused() {
        let jobs = jobs();
        for cut in 0..jobs.len() {
            let Some(sealed) = seal_blocks(&jobs[..cut]) else {
                continue;
            };
            // A cut at a section's end is a whole frame of fewer sections.
            assert!(sealed_blocks(&sealed).is_some(), "cut at {cut}");
        }
        assert_eq!(seal_blocks(&jobs[..jobs.len() - 1]), None);
        let sealed = seal_blocks(&jobs).unwrap();
        assert!(sealed_blocks(&sealed[..sealed.len() - 1]).is_none());
        assert!(sealed_blocks(&jobs).is_none());
        assert!(seal_blocks(&sealed).is_none());
        let mut bad_table = sealed.clone();
        bad_table[1] = 7;
        assert!(sealed_blocks(&bad_table).is_none());
    }
}
