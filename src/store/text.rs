//! A table's free text (ids, messages, raw metadata, other sources' entries)
//! in LZ4 blocks: text is appended to an open block, which is compressed
//! once it is full, so memory holds about a quarter of the text's bytes.
//! Only logs.all reads text back, for the rows it returns: a `TextReader`
//! decodes the blocks those rows point into, each once, and checks them.
//! A snapshot stores the blocks as they are (restoring decodes nothing).

use super::columns::grown;

/// A slice of a table's text: block index in the top bits of `at`, offset
/// within the block below; `len == u32::MAX` is null.
#[derive(Clone, Copy, Debug)]
pub struct Span {
    at: u32,
    len: u32,
}

impl Span {
    pub const NULL: Span = Span {
        at: 0,
        len: u32::MAX,
    };

    /// The span's two words, as a snapshot stores them.
    pub(crate) fn to_parts(self) -> (u32, u32) {
        (self.at, self.len)
    }

    pub(crate) fn from_parts(at: u32, len: u32) -> Span {
        Span { at, len }
    }

    pub(crate) fn is_null(self) -> bool {
        self.len == u32::MAX
    }

    fn block(self) -> usize {
        (self.at >> BLOCK_BITS) as usize
    }

    fn range(self) -> std::ops::Range<usize> {
        let start = (self.at & (BLOCK_BYTES as u32 - 1)) as usize;
        start..start + self.len as usize
    }
}

const BLOCK_BITS: u32 = 16;
/// Text is compressed in blocks of this size: LZ4 finds most of the
/// repetition between log entries within it (0.24 of the text's bytes on
/// the benchmark's logs), and logs.all decodes one in tens of microseconds.
/// A text longer than a block gets a block of its own.
const BLOCK_BYTES: usize = 1 << BLOCK_BITS;
pub(crate) const MAX_BLOCKS: usize = 1 << (32 - BLOCK_BITS);

/// One full block: its text compressed, and how long it is decoded.
struct Block {
    compressed: Box<[u8]>,
    len: u32,
}

/// Bytes a block costs besides its compressed text (its slot).
const BLOCK_SLOT: usize = std::mem::size_of::<Block>();

#[derive(Default)]
pub struct Arena {
    blocks: Vec<Block>,
    /// The block being filled (index `blocks.len()`), not compressed yet.
    open: String,
}

impl Arena {
    /// Blocks (`len` of each decoded, and its compressed bytes) and the open
    /// block: what a snapshot stores.
    pub(crate) fn parts(&self) -> (Vec<u32>, Vec<&[u8]>, &str) {
        let lens = self.blocks.iter().map(|b| b.len).collect();
        let compressed = self.blocks.iter().map(|b| &b.compressed[..]).collect();
        (lens, compressed, &self.open)
    }

    /// The arena of these parts; `None` when spans cannot address them all.
    pub(crate) fn from_parts(
        lens: Vec<u32>,
        compressed: Vec<Box<[u8]>>,
        open: String,
    ) -> Option<Arena> {
        (lens.len() == compressed.len() && lens.len() < MAX_BLOCKS).then(|| Arena {
            blocks: lens
                .into_iter()
                .zip(compressed)
                .map(|(len, compressed)| Block { compressed, len })
                .collect(),
            open,
        })
    }

    /// Blocks and heap bytes after `texts` are pushed, by the rules of
    /// `push`: an upper bound, since each block to be sealed is counted at
    /// LZ4's largest output for it.
    pub(crate) fn after(&self, texts: impl Iterator<Item = usize>) -> (usize, usize) {
        let mut open = self.open.len();
        let mut sealed = Vec::new();
        for text in texts {
            if open > 0 && open + text > BLOCK_BYTES {
                sealed.push(open);
                open = 0;
            }
            open += text;
        }
        let blocks = self.blocks.len() + sealed.len();
        let slots = grown(self.blocks.len(), self.blocks.capacity(), sealed.len());
        let compressed: usize = sealed
            .iter()
            .map(|&len| lz4_flex::block::get_maximum_output_size(len))
            .sum();
        let bytes = self.compressed_bytes()
            + compressed
            + slots * BLOCK_SLOT
            + open.max(BLOCK_BYTES).max(self.open.capacity());
        (blocks + 1, bytes)
    }

    fn compressed_bytes(&self) -> usize {
        self.blocks.iter().map(|b| b.compressed.len()).sum()
    }

    /// Compresses the open block and starts the next.
    fn seal(&mut self) {
        let compressed = lz4_flex::block::compress(self.open.as_bytes());
        self.blocks.push(Block {
            compressed: compressed.into_boxed_slice(),
            len: self.open.len() as u32,
        });
        self.open.clear();
        // After a text longer than a block, the open block is one block again.
        self.open.shrink_to(BLOCK_BYTES);
    }

    pub(crate) fn push(&mut self, value: &str) -> Span {
        if !self.open.is_empty() && self.open.len() + value.len() > BLOCK_BYTES {
            self.seal();
        }
        let needed = self.open.len() + value.len();
        if needed > self.open.capacity() {
            // Exactly one block (or the one long text), as `after` predicts.
            self.open
                .reserve_exact(needed.max(BLOCK_BYTES) - self.open.len());
        }
        let offset = self.open.len();
        self.open.push_str(value);
        Span {
            at: ((self.blocks.len() as u32) << BLOCK_BITS) | offset as u32,
            len: value.len() as u32,
        }
    }

    pub(crate) fn push_opt(&mut self, value: Option<&str>) -> Span {
        value.map_or(Span::NULL, |v| self.push(v))
    }

    /// Whether `span` lies within its block (a snapshot's check; its text is
    /// checked when a reader decodes the block).
    pub(crate) fn holds(&self, span: Span) -> bool {
        let len = match self.blocks.get(span.block()) {
            Some(block) => block.len as usize,
            None if span.block() == self.blocks.len() => self.open.len(),
            None => return false,
        };
        span.range().end <= len
    }

    /// A reader of this text.
    pub fn reader(&self) -> TextReader<'_> {
        TextReader {
            arena: self,
            decoded: Vec::new(),
            damaged: false,
        }
    }

    pub(crate) fn heap_bytes(&self) -> usize {
        self.compressed_bytes() + self.blocks.capacity() * BLOCK_SLOT + self.open.capacity()
    }
}

/// Blocks a reader keeps decoded: logs.all's rows are close in time, and so
/// mostly in a few neighbouring blocks.
const DECODED_BLOCKS: usize = 8;

/// Reads spans of an arena, decoding each block it needs once (the last
/// few kept). A block that does not decode into UTF-8 of its length (only a
/// damaged snapshot holds one) reads as nothing, and `damaged` says so.
pub struct TextReader<'a> {
    arena: &'a Arena,
    decoded: Vec<(usize, String)>,
    damaged: bool,
}

impl TextReader<'_> {
    pub fn get(&mut self, span: Span) -> Option<&str> {
        if span.is_null() {
            return None;
        }
        let index = span.block();
        let Some(block) = self.arena.blocks.get(index) else {
            return self.arena.open.get(span.range());
        };
        let at = match self.decoded.iter().position(|(i, _)| *i == index) {
            Some(at) => at,
            None => {
                let text = decode(block);
                self.damaged |= text.is_none();
                if self.decoded.len() == DECODED_BLOCKS {
                    self.decoded.remove(0);
                }
                self.decoded.push((index, text.unwrap_or_default()));
                self.decoded.len() - 1
            }
        };
        let text = self
            .decoded
            .get(at)
            .and_then(|(_, text)| text.get(span.range()));
        self.damaged |= text.is_none();
        text
    }

    /// Whether a block read so far did not decode, or a span fell outside it.
    pub fn damaged(&self) -> bool {
        self.damaged
    }
}

fn decode(block: &Block) -> Option<String> {
    let bytes = lz4_flex::block::decompress(&block.compressed, block.len as usize).ok()?;
    (bytes.len() == block.len as usize)
        .then(|| String::from_utf8(bytes).ok())
        .flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_reads_back_across_blocks_and_after_long_texts() {
        let mut arena = Arena::default();
        let long = "x".repeat(BLOCK_BYTES * 2 + 3);
        let texts: Vec<String> = (0..5000)
            .map(|i| match i % 997 {
                0 => long.clone(),
                _ => format!("{{\"entry\":{i},\"é\":\"{}\"}}", "ab".repeat(i % 40)),
            })
            .collect();
        let predicted = arena.after(texts.iter().map(String::len));
        let spans: Vec<Span> = texts.iter().map(|t| arena.push(t)).collect();
        assert!(arena.blocks.len() > 10);
        assert!(predicted.0 > arena.blocks.len() && predicted.1 >= arena.heap_bytes());
        let mut reader = arena.reader();
        for (text, &span) in texts.iter().zip(&spans).rev() {
            assert!(arena.holds(span));
            assert_eq!(reader.get(span), Some(text.as_str()));
        }
        assert!(!reader.damaged());
        assert!(arena.heap_bytes() < texts.iter().map(String::len).sum::<usize>() / 2);
    }

    #[test]
    fn a_damaged_block_reads_as_nothing_and_says_so() {
        let mut arena = Arena::default();
        let spans: Vec<Span> = (0..9000)
            .map(|i| arena.push(&format!("entry {i} ")))
            .collect();
        let (lens, compressed, open) = arena.parts();
        let mut blocks: Vec<Box<[u8]>> = compressed.iter().map(|b| (*b).into()).collect();
        blocks[0] = blocks[0][..blocks[0].len() / 2].into();
        let damaged = Arena::from_parts(lens, blocks, open.to_owned()).unwrap();
        let mut reader = damaged.reader();
        assert_eq!(reader.get(spans[8999]), Some("entry 8999 "));
        assert!(!reader.damaged());
        assert_eq!(reader.get(spans[0]), None);
        assert!(reader.damaged());
    }
}
