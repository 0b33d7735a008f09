//! A table's free text (ids, messages, raw metadata, other sources' entries)
//! in LZ4 blocks, in lanes: each lane (a project's entries) fills a block of
//! its own, which is compressed once full (with one dictionary for the
//! arena), so memory holds about a fifth of the text's bytes and a project's
//! newest rows are in its last blocks.
//! Only logs.all reads text back, for the rows of one project it returns: a
//! `TextReader` decodes the few blocks those rows point into, each once, and
//! checks them. A snapshot stores the blocks as they are (restoring decodes
//! nothing).

use super::columns::{capacity_bound, grown};

/// A slice of a table's text: block index in the top bits of `at`, offset
/// within the block below; `len == u32::MAX` is null, `PACKED_UUID` an id
/// kept as its 16 bytes.
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
        let len = if self.len == PACKED_UUID {
            16
        } else {
            self.len
        };
        start..start.saturating_add(len as usize)
    }
}

const BLOCK_BITS: u32 = 13;
/// Text is compressed in blocks of this size: with the dictionary, LZ4 finds
/// most of the repetition between one project's entries within it, and
/// logs.all decodes one in microseconds. A text longer than a block gets a block of its own.
const BLOCK_BYTES: usize = 1 << BLOCK_BITS;
pub(crate) const MAX_BLOCKS: usize = 1 << (32 - BLOCK_BITS);
/// No block: a lane that has not opened one.
const NO_BLOCK: u32 = u32::MAX;
/// The `len` of a span holding a UUID as its 16 bytes (see `push_id`); a
/// text's length is never this long (a batch is far smaller).
const PACKED_UUID: u32 = u32::MAX - 1;

/// A block: being filled by its lane, or full and compressed (with its
/// decoded length).
enum Block {
    Open(Vec<u8>),
    Sealed { compressed: Box<[u8]>, len: u32 },
}

/// Bytes a block costs besides its text (its slot).
const BLOCK_SLOT: usize = std::mem::size_of::<Block>();

/// A block of a snapshot: `len` bytes decoded; `bytes` compressed when
/// `sealed`, else the open block's bytes (text, and ids as 16 bytes; each
/// span's text is checked as UTF-8 when it is read).
pub(crate) struct StoredBlock<'a> {
    pub sealed: bool,
    pub len: u32,
    pub bytes: std::borrow::Cow<'a, [u8]>,
}

/// Whether a text of `more` bytes goes to a new block rather than the open
/// one holding `len`: when it would pass a block, or the block is full (so
/// that every offset stays below a block, even an empty text's).
fn starts_a_block(len: usize, more: usize) -> bool {
    len > 0 && len + more.max(1) > BLOCK_BYTES
}

/// Capacity an open block grows to so that `more` bytes fit: by `grown`'s
/// rule, never past a block (unless one text is longer).
fn open_capacity(len: usize, capacity: usize, more: usize) -> usize {
    let needed = len + more;
    if needed <= capacity {
        capacity
    } else {
        grown(len, capacity, more).min(BLOCK_BYTES).max(needed)
    }
}

#[derive(Default)]
pub struct Arena {
    blocks: Vec<Block>,
    /// Per lane, the block it is filling (`NO_BLOCK`: none yet).
    open_of: Vec<u32>,
    /// LZ4's dictionary for every block: the first `DICTIONARY_BYTES` of
    /// text pushed (ids kept as bytes left out), fixed once a block is sealed.
    dictionary: Vec<u8>,
    /// Whether a block has been sealed, and so the dictionary is fixed.
    sealed_any: bool,
}

/// A dictionary of the first text seen lets a small block (one project's
/// few entries) refer to the keys, agents and hosts all entries share, so
/// blocks can be small and sealed early: 8 KiB blocks come to about 0.16 of
/// their text with it and 0.21 without, for hashing the dictionary again at
/// each seal (a longer one compressed no better on the benchmark's data).
const DICTIONARY_BYTES: usize = 8 << 10;

/// Open blocks may hold at most this share of an arena's text (decoded)…
const OPEN_SHARE: usize = 128;
/// … or this many bytes, whichever is more: past it, `compact` seals the
/// largest, so that many projects that send little leave little text
/// uncompressed.
const OPEN_FLOOR: usize = 64 << 10;

impl Arena {
    /// Every block, each lane's open block and the dictionary: what a
    /// snapshot stores.
    pub(crate) fn parts(&self) -> (Vec<StoredBlock<'_>>, &[u32], &[u8]) {
        let blocks = self
            .blocks
            .iter()
            .map(|block| match block {
                Block::Open(text) => StoredBlock {
                    sealed: false,
                    len: text.len() as u32,
                    bytes: (&text[..]).into(),
                },
                Block::Sealed { compressed, len } => StoredBlock {
                    sealed: true,
                    len: *len,
                    bytes: (&compressed[..]).into(),
                },
            })
            .collect();
        (blocks, &self.open_of, &self.dictionary)
    }

    /// The arena of these parts; `None` when spans cannot address them all,
    /// an open block is not of its length, a lane's block is not an open
    /// one, or the dictionary is too long (text is checked when a reader
    /// reads it).
    pub(crate) fn from_parts(
        blocks: Vec<StoredBlock<'_>>,
        open_of: Vec<u32>,
        dictionary: Vec<u8>,
    ) -> Option<Arena> {
        if blocks.len() > MAX_BLOCKS || dictionary.len() > DICTIONARY_BYTES {
            return None;
        }
        let sealed_any = blocks.iter().any(|block| block.sealed);
        let blocks = blocks
            .into_iter()
            .map(|block| {
                if block.sealed {
                    // LZ4 expands at most about 255 times: a longer claim
                    // would only make decoding allocate for nothing.
                    let possible = block.bytes.len().saturating_mul(255).saturating_add(16);
                    (block.len as usize <= possible).then(|| Block::Sealed {
                        compressed: block.bytes.into_owned().into_boxed_slice(),
                        len: block.len,
                    })
                } else {
                    (block.bytes.len() == block.len as usize)
                        .then(|| Block::Open(block.bytes.into_owned()))
                }
            })
            .collect::<Option<Vec<_>>>()?;
        let lanes_fit = open_of
            .iter()
            .all(|&b| b == NO_BLOCK || matches!(blocks.get(b as usize), Some(Block::Open(_))));
        lanes_fit.then_some(Arena {
            blocks,
            open_of,
            dictionary,
            sealed_any,
        })
    }

    /// Blocks and heap bytes after `texts` (each a lane and a length; a lane
    /// past the arena's is a new one) are pushed, by the rules of `push`: an
    /// upper bound, since each block to be sealed is counted at LZ4's largest
    /// output for it.
    pub(crate) fn after(&self, texts: impl Iterator<Item = (usize, usize)>) -> (usize, usize) {
        // Per lane touched: its open block's length and capacity.
        let mut lanes: std::collections::HashMap<usize, (usize, usize)> = Default::default();
        let mut new_blocks = 0usize;
        let mut bytes = self.heap_bytes();
        let mut pushed = 0usize;
        for (lane, text) in texts {
            pushed += text;
            let (len, capacity) = lanes.entry(lane).or_insert_with(|| {
                match self
                    .open_of
                    .get(lane)
                    .and_then(|&b| self.blocks.get(b as usize))
                {
                    Some(Block::Open(open)) => (open.len(), open.capacity()),
                    _ => (0, 0),
                }
            });
            if starts_a_block(*len, text) {
                bytes = bytes + lz4_flex::block::get_maximum_output_size(*len) - *capacity;
                (*len, *capacity) = (0, 0);
            }
            if *len == 0 && *capacity == 0 {
                new_blocks += 1;
            }
            let grown_to = open_capacity(*len, *capacity, text);
            bytes += grown_to - *capacity;
            (*len, *capacity) = (*len + text, grown_to);
        }
        let lanes_after = lanes
            .keys()
            .map(|&l| l + 1)
            .max()
            .unwrap_or(0)
            .max(self.open_of.len());
        let slots = capacity_bound(self.blocks.capacity(), self.blocks.len() + new_blocks)
            - self.blocks.capacity();
        let lane_slots =
            capacity_bound(self.open_of.capacity(), lanes_after) - self.open_of.capacity();
        // `compact` may then seal any open block: LZ4's bound over each.
        let open_lens = (0..lanes_after).map(|lane| match lanes.get(&lane) {
            Some(&(len, _)) => len,
            None => self.open_len(lane),
        });
        let seal_slack: usize = open_lens.map(|len| len / 255 + 16).sum();
        let dictionary = match self.sealed_any {
            true => 0,
            false => pushed.min(DICTIONARY_BYTES - self.dictionary.len()),
        };
        (
            self.blocks.len() + new_blocks,
            bytes + slots * BLOCK_SLOT + lane_slots * 4 + seal_slack + dictionary,
        )
    }

    /// How many bytes `lane`'s open block holds.
    fn open_len(&self, lane: usize) -> usize {
        match self
            .open_of
            .get(lane)
            .and_then(|&b| self.blocks.get(b as usize))
        {
            Some(Block::Open(open)) => open.len(),
            _ => 0,
        }
    }

    /// Seals the largest open blocks while open blocks hold more than their
    /// share of the text (see `OPEN_SHARE`); their lanes start new ones.
    pub(crate) fn compact(&mut self) {
        let mut text = 0usize;
        let mut open = Vec::new();
        for block in &self.blocks {
            match block {
                Block::Open(t) => text += t.len(),
                Block::Sealed { len, .. } => text += *len as usize,
            }
        }
        for (lane, &index) in self.open_of.iter().enumerate() {
            if let Some(Block::Open(t)) = self.blocks.get(index as usize) {
                open.push((t.len(), lane, index));
            }
        }
        let limit = (text / OPEN_SHARE).max(OPEN_FLOOR);
        let mut held: usize = open.iter().map(|&(len, ..)| len).sum();
        if held <= limit {
            return;
        }
        open.sort_unstable_by_key(|&(len, ..)| std::cmp::Reverse(len));
        for (len, lane, index) in open {
            if held <= limit {
                break;
            }
            self.seal(index as usize);
            if let Some(slot) = self.open_of.get_mut(lane) {
                *slot = NO_BLOCK;
            }
            held -= len;
        }
    }

    /// Compresses block `index` (a full open one), which fixes the dictionary.
    fn seal(&mut self, index: usize) {
        self.sealed_any = true;
        if let Some(block) = self.blocks.get_mut(index) {
            if let Block::Open(text) = block {
                let compressed = lz4_flex::block::compress_with_dict(text, &self.dictionary);
                *block = Block::Sealed {
                    compressed: compressed.into_boxed_slice(),
                    len: text.len() as u32,
                };
            }
        }
    }

    /// Appends `value` to `lane`'s block (a new one when it would pass a block).
    pub(crate) fn push(&mut self, lane: usize, value: &str) -> Span {
        self.push_bytes(lane, value.as_bytes(), value.len() as u32)
    }

    /// Appends an id: a UUID as written canonically (lowercase, hyphenated)
    /// is kept as its 16 bytes, which LZ4 cannot shorten as text (36 bytes
    /// of hex); any other id as its text.
    pub(crate) fn push_id(&mut self, lane: usize, id: &str) -> Span {
        match canonical_uuid(id) {
            Some(bytes) => self.push_bytes(lane, &bytes, PACKED_UUID),
            None => self.push(lane, id),
        }
    }

    fn push_bytes(&mut self, lane: usize, value: &[u8], span_len: u32) -> Span {
        if self.open_of.len() <= lane {
            let more = lane + 1 - self.open_of.len();
            super::columns::grow(&mut self.open_of, more);
            self.open_of.resize(lane + 1, NO_BLOCK);
        }
        let mut index = self.open_of.get(lane).copied().unwrap_or(NO_BLOCK);
        let open_len = match self.blocks.get(index as usize) {
            Some(Block::Open(text)) => Some(text.len()),
            _ => None,
        };
        if open_len.is_some_and(|len| starts_a_block(len, value.len())) {
            self.seal(index as usize);
            index = NO_BLOCK;
        }
        if index == NO_BLOCK || open_len.is_none() {
            super::columns::grow(&mut self.blocks, 1);
            self.blocks.push(Block::Open(Vec::new()));
            index = (self.blocks.len() - 1) as u32;
            if let Some(slot) = self.open_of.get_mut(lane) {
                *slot = index;
            }
        }
        if !self.sealed_any && span_len != PACKED_UUID {
            let take = value.len().min(DICTIONARY_BYTES - self.dictionary.len());
            self.dictionary.reserve_exact(take);
            self.dictionary
                .extend_from_slice(value.get(..take).unwrap_or_default());
        }
        let Some(Block::Open(text)) = self.blocks.get_mut(index as usize) else {
            return Span::NULL;
        };
        let capacity = open_capacity(text.len(), text.capacity(), value.len());
        text.reserve_exact(capacity - text.len());
        let offset = text.len();
        text.extend_from_slice(value);
        Span {
            at: (index << BLOCK_BITS) | offset as u32,
            len: span_len,
        }
    }

    pub(crate) fn push_opt(&mut self, lane: usize, value: Option<&str>) -> Span {
        value.map_or(Span::NULL, |v| self.push(lane, v))
    }

    /// Whether `span` lies within its block (a snapshot's check; a sealed
    /// block's text is checked when a reader decodes it).
    pub(crate) fn holds(&self, span: Span) -> bool {
        let len = match self.blocks.get(span.block()) {
            Some(Block::Open(text)) => text.len(),
            Some(Block::Sealed { len, .. }) => *len as usize,
            None => return false,
        };
        span.range().end <= len
    }

    /// A reader of this text.
    pub fn reader(&self) -> TextReader<'_> {
        TextReader {
            arena: self,
            decoded: Vec::new(),
            uuid: String::new(),
            damaged: false,
        }
    }

    pub(crate) fn heap_bytes(&self) -> usize {
        let text: usize = self
            .blocks
            .iter()
            .map(|block| match block {
                Block::Open(text) => text.capacity(),
                Block::Sealed { compressed, .. } => compressed.len(),
            })
            .sum();
        text + self.blocks.capacity() * BLOCK_SLOT
            + self.open_of.capacity() * 4
            + self.dictionary.capacity()
    }
}

/// Blocks a reader keeps decoded: logs.all's rows are one project's newest,
/// and so in its last few blocks.
const DECODED_BLOCKS: usize = 16;

/// Reads spans of an arena, decoding each block it needs once (the last
/// few kept). A block that does not decode into UTF-8 of its length (only a
/// damaged snapshot holds one) reads as nothing, and `damaged` says so.
pub struct TextReader<'a> {
    arena: &'a Arena,
    decoded: Vec<(usize, Vec<u8>)>,
    /// A packed UUID, written out.
    uuid: String,
    damaged: bool,
}

impl TextReader<'_> {
    pub fn get(&mut self, span: Span) -> Option<&str> {
        if span.is_null() {
            return None;
        }
        let index = span.block();
        let bytes = match self.arena.blocks.get(index) {
            Some(Block::Open(text)) => text.get(span.range()),
            Some(Block::Sealed { compressed, len }) => {
                let at = match self.decoded.iter().position(|(i, _)| *i == index) {
                    Some(at) => at,
                    None => {
                        let text = decode(compressed, *len, &self.arena.dictionary);
                        self.damaged |= text.is_none();
                        if self.decoded.len() == DECODED_BLOCKS {
                            self.decoded.remove(0);
                        }
                        self.decoded.push((index, text.unwrap_or_default()));
                        self.decoded.len() - 1
                    }
                };
                self.decoded
                    .get(at)
                    .and_then(|(_, text)| text.get(span.range()))
            }
            None => None,
        };
        let text = match bytes {
            Some(bytes) if span.len == PACKED_UUID => {
                self.uuid = uuid::Uuid::from_slice(bytes)
                    .ok()
                    .map(|id| id.hyphenated().to_string())
                    .unwrap_or_default();
                (!self.uuid.is_empty()).then_some(self.uuid.as_str())
            }
            Some(bytes) => simdutf8::basic::from_utf8(bytes).ok(),
            None => None,
        };
        self.damaged |= text.is_none();
        text
    }

    /// Whether a block read so far did not decode, or a span fell outside it.
    pub fn damaged(&self) -> bool {
        self.damaged
    }
}

fn decode(compressed: &[u8], len: u32, dictionary: &[u8]) -> Option<Vec<u8>> {
    let bytes = lz4_flex::block::decompress_with_dict(compressed, len as usize, dictionary).ok()?;
    (bytes.len() == len as usize).then_some(bytes)
}

/// The 16 bytes of `id` when it is a UUID written exactly as `Uuid`
/// writes one back (lowercase, hyphenated), so that it reads back the same.
fn canonical_uuid(id: &str) -> Option<[u8; 16]> {
    if id.len() != 36 || id.bytes().any(|b| b.is_ascii_uppercase()) {
        return None;
    }
    let parsed = uuid::Uuid::try_parse(id).ok()?;
    let mut written = [0u8; uuid::fmt::Hyphenated::LENGTH];
    (parsed.hyphenated().encode_lower(&mut written) == id).then(|| *parsed.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The arena made again from its parts (as a snapshot stores them) reads
    /// every text back.
    fn reads_back_from_its_parts(arena: &Arena, texts: &[(usize, String)], spans: &[Span]) {
        let (blocks, open_of, dictionary) = arena.parts();
        let restored = Arena::from_parts(blocks, open_of.to_vec(), dictionary.to_vec()).unwrap();
        let mut reader = restored.reader();
        for ((_, text), &span) in texts.iter().zip(spans) {
            assert_eq!(reader.get(span), Some(text.as_str()));
        }
    }

    #[test]
    fn text_reads_back_across_lanes_blocks_and_long_texts() {
        let mut arena = Arena::default();
        let long = "x".repeat(BLOCK_BYTES * 2 + 3);
        let texts: Vec<(usize, String)> = (0..5000)
            .map(|i| match i % 997 {
                0 => (i % 7, long.clone()),
                _ => (
                    i % 7,
                    format!("{{\"entry\":{i},\"é\":\"{}\"}}", "ab".repeat(i % 40)),
                ),
            })
            .collect();
        let (half, rest) = texts.split_at(2500);
        let mut spans = Vec::new();
        for part in [half, rest] {
            let predicted = arena.after(part.iter().map(|(lane, t)| (*lane, t.len())));
            spans.extend(part.iter().map(|(lane, t)| arena.push(*lane, t)));
            assert!(predicted.0 >= arena.blocks.len(), "{predicted:?}");
            assert!(
                predicted.1 >= arena.heap_bytes(),
                "{predicted:?} {}",
                arena.heap_bytes()
            );
        }
        assert!(arena.blocks.len() > 20, "{}", arena.blocks.len());
        let mut reader = arena.reader();
        for ((_, text), &span) in texts.iter().zip(&spans).rev() {
            assert!(arena.holds(span));
            assert_eq!(reader.get(span), Some(text.as_str()));
        }
        assert!(!reader.damaged());
        assert!(arena.heap_bytes() < texts.iter().map(|(_, t)| t.len()).sum::<usize>() / 2);

        reads_back_from_its_parts(&arena, &texts, &spans);
    }

    #[test]
    fn many_lanes_that_send_little_are_compacted() {
        let mut arena = Arena::default();
        let texts: Vec<(usize, String)> = (0..20_000)
            .map(|i| {
                (
                    i % 300,
                    format!(
                        "{{\"n\":{i},\"lane\":{},\"pad\":\"{}\"}}",
                        i % 300,
                        "p".repeat(i % 90)
                    ),
                )
            })
            .collect();
        let mut spans = Vec::new();
        for part in texts.chunks(5000) {
            let predicted = arena.after(part.iter().map(|(lane, t)| (*lane, t.len())));
            spans.extend(part.iter().map(|(lane, t)| arena.push(*lane, t)));
            arena.compact();
            assert!(
                predicted.1 >= arena.heap_bytes(),
                "{predicted:?} {}",
                arena.heap_bytes()
            );
        }
        let open: usize = arena
            .blocks
            .iter()
            .map(|b| match b {
                Block::Open(t) => t.len(),
                Block::Sealed { .. } => 0,
            })
            .sum();
        assert!(open <= OPEN_FLOOR, "{open} bytes left open");
        reads_back_from_its_parts(&arena, &texts, &spans);
    }

    #[test]
    fn ids_that_are_canonical_uuids_are_kept_as_16_bytes_and_read_back_the_same() {
        let ids = [
            "7f1c6a52-5d47-4e0a-9c61-2b1f0e4a8d93",
            "7F1C6A52-5D47-4E0A-9C61-2B1F0E4A8D93",
            "{7f1c6a52-5d47-4e0a-9c61-2b1f0e4a8d93}",
            "7f1c6a525d474e0a9c612b1f0e4a8d93",
            "urn:uuid:7f1c6a52-5d47-4e0a-9c61-2b1f0e4a8d93",
            "a",
            "",
        ];
        let mut arena = Arena::default();
        let spans: Vec<Span> = ids.iter().map(|id| arena.push_id(1, id)).collect();
        assert_eq!(spans[0].len, PACKED_UUID);
        assert!(spans[1..].iter().all(|s| s.len != PACKED_UUID));
        let mut reader = arena.reader();
        for (id, &span) in ids.iter().zip(&spans) {
            assert_eq!(reader.get(span), Some(*id));
        }
        for _ in 0..2000 {
            arena.push_id(1, ids[0]);
        }
        let mut reader = arena.reader();
        assert_eq!(reader.get(spans[0]), Some(ids[0]), "from a sealed block");
    }

    #[test]
    fn the_dictionary_is_the_first_text_until_a_block_is_sealed_even_across_a_restore() {
        let entry = |i: usize| (0, format!("{{\"user_agent\":\"Mozilla/5.0\",\"n\":{i}}}"));
        let texts: Vec<(usize, String)> = (0..3000).map(entry).collect();
        let mut arena = Arena::default();
        let mut spans: Vec<Span> = texts[..10].iter().map(|(l, t)| arena.push(*l, t)).collect();
        let first: String = texts[..10].iter().map(|(_, t)| t.as_str()).collect();
        assert_eq!(arena.dictionary, first.as_bytes());

        let (blocks, open_of, dictionary) = arena.parts();
        let mut arena = Arena::from_parts(blocks, open_of.to_vec(), dictionary.to_vec()).unwrap();
        spans.extend(texts[10..].iter().map(|(l, t)| arena.push(*l, t)));
        assert!(arena.sealed_any);
        // The one lane's first block was sealed before the dictionary filled.
        assert!(arena.dictionary.len() < DICTIONARY_BYTES);
        let all: String = texts.iter().map(|(_, t)| t.as_str()).collect();
        assert!(all.as_bytes().starts_with(&arena.dictionary));
        reads_back_from_its_parts(&arena, &texts, &spans);

        let (blocks, open_of, dictionary) = arena.parts();
        let other: Vec<u8> = dictionary.iter().map(|b| b ^ 1).collect();
        let wrong = Arena::from_parts(blocks, open_of.to_vec(), other).unwrap();
        let mut reader = wrong.reader();
        let read: Vec<Option<String>> = spans
            .iter()
            .map(|&s| reader.get(s).map(String::from))
            .collect();
        assert!(
            reader.damaged()
                || read
                    .iter()
                    .zip(&texts)
                    .any(|(r, (_, t))| r.as_ref() != Some(t))
        );
    }

    #[test]
    fn an_empty_text_after_a_full_block_reads_back() {
        let mut arena = Arena::default();
        let full = "f".repeat(BLOCK_BYTES);
        let spans = [arena.push(3, &full), arena.push(3, "")];
        // Its own block, not an offset past the full one (which would be the next block's).
        assert!(spans.iter().all(|&s| arena.holds(s)));
        assert_eq!(spans[1].block(), 1);
        let mut reader = arena.reader();
        assert_eq!(reader.get(spans[0]), Some(full.as_str()));
        assert_eq!(reader.get(spans[1]), Some(""));
        assert!(!reader.damaged());
    }

    #[test]
    fn the_prediction_holds_when_compaction_seals_a_long_text_it_cannot_shorten() {
        let mut arena = Arena::default();
        let noise: String = (0u64..300_000)
            .map(|i| {
                let x = i.wrapping_mul(0x9E37_79B9_7F4A_7C15).rotate_left(29) ^ (i >> 3);
                char::from(b'!' + (x % 90) as u8)
            })
            .collect();
        let texts = [(1, noise.as_str()), (2, "small")];
        let predicted = arena.after(texts.iter().map(|(lane, t)| (*lane, t.len())));
        for (lane, text) in texts {
            arena.push(lane, text);
        }
        arena.compact();
        assert!(matches!(arena.blocks.first(), Some(Block::Sealed { .. })));
        assert!(
            predicted.1 >= arena.heap_bytes(),
            "{predicted:?} {}",
            arena.heap_bytes()
        );
    }

    #[test]
    fn a_damaged_block_reads_as_nothing_and_says_so() {
        let mut arena = Arena::default();
        let spans: Vec<Span> = (0..9000)
            .map(|i| arena.push(0, &format!("entry {i} ")))
            .collect();
        let (mut blocks, open_of, dictionary) = arena.parts();
        let first = &mut blocks[0];
        assert!(first.sealed);
        first.bytes = first.bytes[..first.bytes.len() / 2].to_vec().into();
        let damaged = Arena::from_parts(blocks, open_of.to_vec(), dictionary.to_vec()).unwrap();
        let mut reader = damaged.reader();
        assert_eq!(reader.get(spans[8999]), Some("entry 8999 "));
        assert!(!reader.damaged());
        assert_eq!(reader.get(spans[0]), None);
        assert!(reader.damaged());
    }
}
