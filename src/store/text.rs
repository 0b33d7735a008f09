//! A table's free text (ids, messages, raw metadata, other sources' entries)
//! in deflate blocks (`deflate`), in lanes: each lane (a project's entries)
//! fills a block of its own, which is compressed once full (with one
//! dictionary for the arena), so memory holds about a tenth of the text's
//! bytes and a project's newest rows are in its last blocks. Given a host's
//! block storage (`block_storage`), sealed blocks go there and memory keeps
//! their lengths and hashes only.
//! Only logs.all reads text back, for the rows of one project it returns: a
//! `TextReader` decodes the few blocks those rows point into, each once, and
//! checks them. A snapshot stores the blocks as they are (restoring decodes
//! nothing), and a block in storage as its hash and length.

use std::borrow::Cow;
use std::collections::BTreeMap;

use super::block_storage::{block_key, BlockStorageRef, TextTable};
use super::columns::capacity_bound;
use super::deflate;
use super::seal_jobs::{self, Job, JobsSink, JobsWriter, SealedBlock};

/// A row's record in a table's text: its block, and in `at` its offset
/// within the block (the top `BLOCK_BITS`) and its length (the rest), or
/// `ALONE` for a record as long as its block (one longer than a block is
/// alone in one); `block == u32::MAX` is null. Blocks are numbered in a word
/// of their own so that many small ones (sealed by `compact`) never run out.
#[derive(Clone, Copy, Debug)]
pub struct Span {
    block: u32,
    at: u32,
}

/// Bits of a span's length.
const LEN_BITS: u32 = 32 - BLOCK_BITS;
/// The length of a record that runs to its block's end.
const ALONE: u32 = (1 << LEN_BITS) - 1;
/// The shortest record: a header byte and its id's length.
const MIN_RECORD_BYTES: usize = 2;
// A record of `ALONE` bytes or more leaves no room in its block for another
// (so "runs to the block's end" is its length), and every offset fits in the
// span's top `BLOCK_BITS`.
const _: () = assert!(BLOCK_BYTES - (ALONE as usize) < MIN_RECORD_BYTES);

impl Span {
    pub const NULL: Span = Span {
        block: u32::MAX,
        at: u32::MAX,
    };

    /// The span's two words, as a snapshot stores them.
    pub(crate) fn to_parts(self) -> (u32, u32) {
        (self.block, self.at)
    }

    pub(crate) fn from_parts(block: u32, at: u32) -> Span {
        Span { block, at }
    }

    /// The span of `len` bytes at `offset` (below a block) of `block`.
    fn new(block: u32, offset: usize, len: usize) -> Span {
        let len = u32::try_from(len).map_or(ALONE, |len| len.min(ALONE));
        Span {
            block,
            at: (offset as u32) << LEN_BITS | len,
        }
    }

    pub(crate) fn is_null(self) -> bool {
        self.block == u32::MAX
    }

    fn block(self) -> usize {
        self.block as usize
    }

    /// Its bytes within a block of `block_len` bytes.
    fn range(self, block_len: usize) -> std::ops::Range<usize> {
        let start = (self.at >> LEN_BITS) as usize;
        match self.at & ALONE {
            ALONE => start..block_len,
            len => start..start + len as usize,
        }
    }
}

/// A row's texts, kept together under one span: an id and `N` fields, each
/// text or null. Written as a header byte (bit 0: the id is a UUID kept as its
/// 16 bytes; bit 1 + i: field i is not null), the LEB128 lengths of the id
/// (unless kept as 16 bytes) and of each non-null field but the last, then
/// the id's and the fields' bytes. One span a row instead of one a text.
pub struct Record<'r, const N: usize> {
    pub id: &'r str,
    pub fields: [Option<&'r str>; N],
}

/// The header bit of a UUID kept as its 16 bytes.
const PACKED_ID: u8 = 1;

fn leb128_len(value: usize) -> usize {
    (usize::BITS - (value | 1).leading_zeros()).div_ceil(7) as usize
}

fn push_leb128(out: &mut Vec<u8>, mut value: usize) {
    while value >= 0x80 {
        out.push(value as u8 | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

fn take_leb128(bytes: &mut &[u8]) -> Option<usize> {
    let mut value = 0usize;
    for shift in (0..usize::BITS).step_by(7) {
        let (&byte, rest) = bytes.split_first()?;
        *bytes = rest;
        value |= usize::from(byte & 0x7f).checked_shl(shift)?;
        if byte < 0x80 {
            return Some(value);
        }
    }
    None
}

/// The bytes a record of `id` (`packed`: kept as 16 bytes) and `fields` takes.
fn record_len<const N: usize>(id: &str, packed: bool, fields: &[Option<&str>; N]) -> usize {
    let id = match packed {
        true => 16,
        false => leb128_len(id.len()) + id.len(),
    };
    // Every present field's bytes, and the length of each but the last.
    let (mut bytes, mut lengths, mut last) = (0, 0, None);
    for len in fields.iter().flatten().map(|f| f.len()) {
        lengths += last.map_or(0, leb128_len);
        bytes += len;
        last = Some(len);
    }
    1 + id + lengths + bytes
}

/// The bytes `push_record` will add for this row: what a table's
/// prediction of its text adds up.
pub(crate) fn record_bytes<const N: usize>(id: &str, fields: &[Option<&str>; N]) -> usize {
    record_len(id, canonical_uuid(id).is_some(), fields)
}

/// A bound of `record_bytes` from the lengths alone: the id as it is
/// written when it is not a canonical UUID, which takes more than packed.
pub(crate) fn record_bytes_bound<const N: usize>(id: &str, fields: &[Option<&str>; N]) -> usize {
    record_len(id, false, fields)
}

fn write_record<const N: usize>(
    out: &mut Vec<u8>,
    id: &str,
    packed: Option<[u8; 16]>,
    fields: &[Option<&str>; N],
) {
    let mut header = u8::from(packed.is_some()) * PACKED_ID;
    for (i, field) in fields.iter().enumerate() {
        if field.is_some() {
            header |= 2 << i;
        }
    }
    out.push(header);
    if packed.is_none() {
        push_leb128(out, id.len());
    }
    let present = fields.iter().flatten().count();
    for field in fields.iter().flatten().take(present.saturating_sub(1)) {
        push_leb128(out, field.len());
    }
    match packed {
        Some(bytes) => out.extend_from_slice(&bytes),
        None => out.extend_from_slice(id.as_bytes()),
    }
    for field in fields.iter().flatten() {
        out.extend_from_slice(field.as_bytes());
    }
}

/// A record's parts as bytes, before they are checked as UTF-8.
struct RawRecord<'b, const N: usize> {
    /// Whether `id` is a UUID's 16 bytes.
    packed: bool,
    id: &'b [u8],
    fields: [Option<&'b [u8]>; N],
}

/// The record `bytes` hold; `None` when they are not one record of `N` fields.
fn parse_record<const N: usize>(mut bytes: &[u8]) -> Option<RawRecord<'_, N>> {
    let (&header, rest) = bytes.split_first()?;
    bytes = rest;
    if usize::from(header) >> (N + 1) != 0 {
        return None;
    }
    let packed = header & PACKED_ID != 0;
    let id_len = match packed {
        true => 16,
        false => take_leb128(&mut bytes)?,
    };
    let present = (0..N).filter(|i| header & (2 << i) != 0).count();
    let mut lengths = [0usize; N];
    for length in lengths.iter_mut().take(present.saturating_sub(1)) {
        *length = take_leb128(&mut bytes)?;
    }
    let (id, mut rest) = bytes.split_at_checked(id_len)?;
    let mut fields = [None; N];
    let mut k = 0;
    for (i, field) in fields.iter_mut().enumerate() {
        if header & (2 << i) == 0 {
            continue;
        }
        k += 1;
        let len = match k == present {
            true => rest.len(),
            false => *lengths.get(k - 1)?,
        };
        let (text, after) = rest.split_at_checked(len)?;
        *field = Some(text);
        rest = after;
    }
    rest.is_empty().then_some(RawRecord { packed, id, fields })
}

const BLOCK_BITS: u32 = 16;
/// Text is compressed in blocks of this size: with the dictionary, deflate
/// finds most of the repetition between one project's entries within it
/// (its window is 32 KiB), and logs.all decodes one in tens of microseconds.
/// A text longer than a block gets a block of its own. Against 32 KiB blocks,
/// the dictionary is read half as often: wasm ingest 5–13% faster and the
/// store 0.9% smaller at 1M (`bench/ab.mjs`), logs.all within ±12%.
const BLOCK_BYTES: usize = 1 << BLOCK_BITS;
/// Whether an arena can number `blocks` blocks: up to `u32::MAX` (a null
/// span's), always where `usize` is 32 bits.
pub(crate) fn can_number(blocks: usize) -> bool {
    u32::try_from(blocks).is_ok()
}
/// No block: a lane that has not opened one.
const NO_BLOCK: u32 = u32::MAX;

/// A block: being filled by its lane, or full and compressed (with its
/// decoded length), in memory or handed to the host's storage (with the
/// length and XXH3 of its compressed bytes, checked when they are read back).
enum Block {
    Open(Vec<u8>),
    Sealed { compressed: Box<[u8]>, len: u32 },
    InStorage { len: u32, bytes: u32, hash: u64 },
}

/// What a snapshot says a block is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum BlockKind {
    Open = 0,
    Sealed = 1,
    InStorage = 2,
}

impl BlockKind {
    pub(crate) fn from_byte(byte: u8) -> Option<BlockKind> {
        [BlockKind::Open, BlockKind::Sealed, BlockKind::InStorage]
            .into_iter()
            .find(|kind| *kind as u8 == byte)
    }
}

/// A block in storage as a snapshot keeps it: the XXH3 and the length of
/// its compressed bytes.
const IN_STORAGE_BYTES: usize = 8 + 4;

/// Bytes a block costs besides its text (its slot).
const BLOCK_SLOT: usize = std::mem::size_of::<Block>();

/// A block of a snapshot: `len` bytes decoded; `bytes` compressed when
/// sealed, what the arena keeps of it (`IN_STORAGE_BYTES`) when in storage,
/// else the open block's bytes (text, and ids as 16 bytes; each span's text
/// is checked as UTF-8 when it is read).
pub(crate) struct StoredBlock<'a> {
    pub kind: BlockKind,
    pub len: u32,
    pub bytes: Cow<'a, [u8]>,
}

/// Whether a text of `more` bytes goes to a new block rather than the open
/// one holding `len`: when it would pass a block, or the block is full (so
/// that every offset stays below a block, even an empty text's).
fn starts_a_block(len: usize, more: usize) -> bool {
    len > 0 && len + more.max(1) > BLOCK_BYTES
}

/// Capacity a lane's new block starts with when the block before it
/// (holding `full`) was sealed because the next record would pass it: a
/// block's when that one held at least half a block, so that a busy lane,
/// which fills a block within a batch, writes its next one without growing
/// it record by record (realloc's copying was a twelfth of wasm edge
/// ingest's main thread); none otherwise, to grow as records come.
fn capacity_after_full(full: usize) -> usize {
    match full >= BLOCK_BYTES / 2 {
        true => BLOCK_BYTES,
        false => 0,
    }
}

/// Capacity an open block grows to so that `more` bytes fit: half again
/// (a block is small and fills record by record), never past a block
/// (unless one record is longer). Doubling instead copied less (realloc's
/// samples in wasm edge ingest 185 → 132 ms) but cost a full object 1.3% of
/// its entries (`bench/cold-start.mjs`: 909,000 against 921,000).
fn open_capacity(len: usize, capacity: usize, more: usize) -> usize {
    let needed = len + more;
    if needed <= capacity {
        capacity
    } else {
        needed
            .max(capacity + capacity / 2)
            .min(BLOCK_BYTES)
            .max(needed)
    }
}

#[derive(Default)]
pub struct Arena {
    blocks: Vec<Block>,
    /// Per lane, the block it is filling (`NO_BLOCK`: none yet).
    open_of: Vec<u32>,
    /// The dictionary of every block: the first `DICTIONARY_BYTES` of the
    /// records pushed (as written: header, lengths, ids, fields), fixed once
    /// a block is sealed.
    dictionary: Vec<u8>,
    /// Whether a block has been sealed, and so the dictionary is fixed.
    sealed_any: bool,
    /// Where sealed blocks go (none: they stay in memory), and the table
    /// whose text this is.
    storage: Option<(BlockStorageRef, TextTable)>,
    /// Whether full blocks wait for the host to compress them elsewhere
    /// (`seal_jobs`) rather than being compressed as they fill.
    defers_seals: bool,
    /// Full blocks not yet compressed (still open, and read as such), each
    /// with whether it was handed to the host as a seal job, and then the
    /// XXH3 of its text (seeded by the dictionary's), which the job's answer
    /// must bring back. A snapshot keeps them open; after a restore they
    /// wait again.
    unsealed: BTreeMap<u32, Handed>,
}

/// Whether a full block waiting for its seal went out in a seal job.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Handed {
    No,
    Out { hash: u64 },
}

/// A dictionary of the first text seen lets a small block (one project's
/// few entries) refer to the keys, agents and hosts all entries share, so
/// blocks can be sealed early: 32 KiB blocks of the benchmark's logs deflated
/// to about 0.08 of their text with it and 0.10 without (a 32 KiB one saved
/// 1% more and took four times as long to read before a seal; with 64 KiB
/// blocks, a 4 KiB one added 1.1% and a 16 KiB one saved 0.6%).
const DICTIONARY_BYTES: usize = 8 << 10;

/// Open blocks may hold at most this share of an arena's text (decoded)…
const OPEN_SHARE: usize = 256;
/// … or this many bytes, whichever is more: past it, `compact` seals the
/// largest, so that many projects that send little leave little text
/// uncompressed.
const OPEN_FLOOR: usize = 2 * BLOCK_BYTES;

impl Arena {
    /// Every block, each lane's open block and the dictionary: what a
    /// snapshot stores.
    pub(crate) fn parts(&self) -> (Vec<StoredBlock<'_>>, &[u32], &[u8]) {
        let blocks = self
            .blocks
            .iter()
            .map(|block| match block {
                Block::Open(text) => StoredBlock {
                    kind: BlockKind::Open,
                    len: text.len() as u32,
                    bytes: (&text[..]).into(),
                },
                Block::Sealed { compressed, len } => StoredBlock {
                    kind: BlockKind::Sealed,
                    len: *len,
                    bytes: (&compressed[..]).into(),
                },
                Block::InStorage { len, bytes, hash } => {
                    let mut kept = Vec::with_capacity(IN_STORAGE_BYTES);
                    kept.extend_from_slice(&hash.to_le_bytes());
                    kept.extend_from_slice(&bytes.to_le_bytes());
                    StoredBlock {
                        kind: BlockKind::InStorage,
                        len: *len,
                        bytes: kept.into(),
                    }
                }
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
        if !can_number(blocks.len()) || dictionary.len() > DICTIONARY_BYTES {
            return None;
        }
        // A longer claim than deflate can expand to would only make decoding
        // allocate for nothing.
        let possible = |compressed: usize| compressed.saturating_mul(deflate::MAX_EXPANSION);
        let blocks = blocks
            .into_iter()
            .map(|block| match block.kind {
                BlockKind::Sealed => {
                    (block.len as usize <= possible(block.bytes.len())).then(|| Block::Sealed {
                        compressed: block.bytes.into_owned().into_boxed_slice(),
                        len: block.len,
                    })
                }
                BlockKind::InStorage => {
                    let (hash, bytes) = block.bytes.split_first_chunk::<8>()?;
                    let bytes = u32::from_le_bytes(*<&[u8; 4]>::try_from(bytes).ok()?);
                    (block.len as usize <= possible(bytes as usize)).then_some(Block::InStorage {
                        len: block.len,
                        bytes,
                        hash: u64::from_le_bytes(*hash),
                    })
                }
                BlockKind::Open => (block.bytes.len() == block.len as usize)
                    .then(|| Block::Open(block.bytes.into_owned())),
            })
            .collect::<Option<Vec<_>>>()?;
        let lanes_fit = open_of
            .iter()
            .all(|&b| b == NO_BLOCK || matches!(blocks.get(b as usize), Some(Block::Open(_))));
        // An open block no lane fills was waiting for its seal.
        let mut unsealed: BTreeMap<u32, Handed> = (0..blocks.len() as u32)
            .filter(|&b| matches!(blocks.get(b as usize), Some(Block::Open(_))))
            .map(|b| (b, Handed::No))
            .collect();
        for lane_block in &open_of {
            unsealed.remove(lane_block);
        }
        // A block waiting for its seal fixed the dictionary as a seal does.
        let sealed_any =
            !unsealed.is_empty() || blocks.iter().any(|block| !matches!(block, Block::Open(_)));
        lanes_fit.then_some(Arena {
            blocks,
            open_of,
            dictionary,
            sealed_any,
            storage: None,
            defers_seals: false,
            unsealed,
        })
    }

    /// Hands this arena's sealed blocks, those sealed from now on included,
    /// to `storage` as `table`'s text; a block storage does not take stays
    /// in memory (and is offered again by the next call).
    pub(crate) fn keep_in(&mut self, storage: BlockStorageRef, table: TextTable) {
        self.storage = Some((storage, table));
        for index in 0..self.blocks.len() {
            self.offload(index);
        }
    }

    /// Whether some block is in storage (such an arena reads only with it).
    pub(crate) fn uses_storage(&self) -> bool {
        self.blocks
            .iter()
            .any(|block| matches!(block, Block::InStorage { .. }))
    }

    /// Bytes of compressed text in storage rather than in memory.
    pub(crate) fn storage_bytes(&self) -> usize {
        self.blocks
            .iter()
            .map(|block| match block {
                Block::InStorage { bytes, .. } => *bytes as usize,
                _ => 0,
            })
            .sum()
    }

    /// Hands block `index`, if sealed, to the storage (if any).
    fn offload(&mut self, index: usize) {
        let Some((storage, table)) = &self.storage else {
            return;
        };
        let Some(block) = self.blocks.get_mut(index) else {
            return;
        };
        let Block::Sealed { compressed, len } = block else {
            return;
        };
        if storage.0.put(block_key(*table, index as u32), compressed) {
            *block = Block::InStorage {
                len: *len,
                bytes: compressed.len() as u32,
                hash: xxhash_rust::xxh3::xxh3_64(compressed),
            };
        }
    }

    /// Blocks and heap bytes after `texts` (each a lane and a length; a lane
    /// past the arena's is a new one) are pushed, by the rules of `push`: an
    /// upper bound, since each block to be sealed is counted at deflate's
    /// largest output for it.
    pub(crate) fn after(&self, texts: impl Iterator<Item = (usize, usize)>) -> (usize, usize) {
        // Per lane touched: its open block's length and capacity.
        let mut lanes: super::IntKeyMap<usize, (usize, usize)> = Default::default();
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
                // A block left to a seal job stays as it is until the job
                // comes back, counted as `unsealed_bytes` counts it: never
                // less than sealing it in place would be.
                bytes = match self.defers_seals {
                    true => {
                        bytes
                            + UNSEALED_ENTRY
                            + deflate::compressed_bound(*len).saturating_sub(*capacity)
                    }
                    false => bytes + deflate::compressed_bound(*len) - *capacity,
                };
                let started = capacity_after_full(*len);
                bytes += started;
                (*len, *capacity) = (0, started);
                new_blocks += 1;
            } else if *len == 0 && *capacity == 0 {
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
        // `compact` may then seal any open block: deflate's bound over each.
        let open_lens = (0..lanes_after).map(|lane| match lanes.get(&lane) {
            Some(&(len, _)) => len,
            None => self.open_len(lane),
        });
        let seal_slack: usize = open_lens
            .filter(|&len| len > 0)
            .map(|len| self.waiting_entry_bytes() + deflate::compressed_bound(len) - len)
            .sum();
        let blocks_after = self.blocks.len() + new_blocks;
        (
            blocks_after,
            bytes + seal_slack + self.room_after(blocks_after, lanes_after, pushed),
        )
    }

    /// An upper bound of `after` from the texts' lengths alone, for lanes
    /// numbered below `lanes_at_most` (or the arena's): no text needs its
    /// lane, so a batch's entries are not read for it. Each text may start a
    /// block; each block the batch leaves sealed or open (a new one, or one
    /// open before) adds at most deflate's slack over its text, as `after`
    /// counts it; and an open block's capacity is at most half again its text
    /// after growing (`open_capacity`), so a batch grows open blocks by at
    /// most half again its text and half the text they held, and by a block
    /// for each one started after a full one. Sums saturate:
    /// a bound never wraps below the exact count.
    pub(crate) fn after_bound(
        &self,
        texts: impl Iterator<Item = usize>,
        lanes_at_most: usize,
    ) -> (usize, usize) {
        let (count, pushed) = texts.fold((0usize, 0usize), |(n, sum), len| {
            (n + 1, sum.saturating_add(len))
        });
        let (open_blocks, open) = (0..self.open_of.len())
            .map(|lane| self.open_len(lane))
            .filter(|&len| len > 0)
            .fold((0usize, 0usize), |(n, sum), len| (n + 1, sum + len));
        let blocks_after = self.blocks.len().saturating_add(count);
        let lanes_after = lanes_at_most.max(self.open_of.len());
        let per_block = self.waiting_entry_bytes() + deflate::compressed_bound(0);
        let slack = count
            .saturating_add(open_blocks)
            .saturating_mul(per_block)
            .saturating_add(open.saturating_add(pushed) / 1024);
        // A block started after a full one (`capacity_after_full`) follows
        // one sealed with half a block of the open or pushed text at least,
        // and holds a block more than growing would have made it at most.
        let started = open.saturating_add(pushed).saturating_mul(2);
        let growth = pushed
            .saturating_add(pushed.div_ceil(2))
            .saturating_add(open.div_ceil(2))
            .saturating_add(started);
        (
            blocks_after,
            self.heap_bytes()
                .saturating_add(growth)
                .saturating_add(slack)
                .saturating_add(self.room_after(blocks_after, lanes_after, pushed)),
        )
    }

    /// What a block left to a seal job costs in the list of those waiting,
    /// besides its text (`unsealed_bytes`; 0 when blocks are sealed in
    /// place).
    fn waiting_entry_bytes(&self) -> usize {
        match self.defers_seals {
            true => UNSEALED_ENTRY,
            false => 0,
        }
    }

    /// Bytes `after` and `after_bound` add for the arena's own lists once
    /// it has `blocks_after` blocks and `lanes_after` lanes, and the
    /// dictionary `pushed` more bytes may fill.
    fn room_after(&self, blocks_after: usize, lanes_after: usize, pushed: usize) -> usize {
        let slots = capacity_bound(self.blocks.capacity(), blocks_after) - self.blocks.capacity();
        let lane_slots =
            capacity_bound(self.open_of.capacity(), lanes_after) - self.open_of.capacity();
        let unsealed_root = match self.defers_seals && self.unsealed.is_empty() {
            true => UNSEALED_ROOT,
            false => 0,
        };
        let dictionary = match self.sealed_any {
            true => 0,
            false => pushed.min(DICTIONARY_BYTES - self.dictionary.len()),
        };
        slots
            .saturating_mul(BLOCK_SLOT)
            .saturating_add(lane_slots.saturating_mul(4))
            .saturating_add(dictionary)
            .saturating_add(unsealed_root)
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
    /// Then trims the others' room (`trim_open_blocks`).
    pub(crate) fn compact(&mut self) {
        let mut text = 0usize;
        let mut open = Vec::new();
        for block in &self.blocks {
            match block {
                Block::Open(t) => text += t.len(),
                Block::Sealed { len, .. } | Block::InStorage { len, .. } => text += *len as usize,
            }
        }
        for (lane, &index) in self.open_of.iter().enumerate() {
            if let Some(Block::Open(t)) = self.blocks.get(index as usize) {
                open.push((t.len(), lane, index));
            }
        }
        let limit = (text / OPEN_SHARE).max(OPEN_FLOOR);
        let mut held: usize = open.iter().map(|&(len, ..)| len).sum();
        if held > limit {
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
        self.trim_open_blocks();
    }

    /// Gives back what an open block holds past half again its text: one
    /// started whole (`capacity_after_full`) whose lane sent little after.
    /// Between batches, open blocks then hold what growing record by record
    /// would have made them, so quiet lanes keep little room.
    fn trim_open_blocks(&mut self) {
        for &index in &self.open_of {
            if let Some(Block::Open(text)) = self.blocks.get_mut(index as usize) {
                let most = text.len() + text.len() / 2;
                if text.capacity() > most {
                    text.shrink_to(most);
                }
            }
        }
    }

    /// Compresses block `index` (a full open one), or leaves it to a seal
    /// job; either fixes the dictionary.
    fn seal(&mut self, index: usize) {
        if self.defers_seals {
            self.sealed_any = true;
            self.unsealed.insert(index as u32, Handed::No);
            return;
        }
        self.seal_here(index);
    }

    /// Compresses block `index` now.
    fn seal_here(&mut self, index: usize) {
        self.sealed_any = true;
        if let Some(block) = self.blocks.get_mut(index) {
            if let Block::Open(text) = block {
                // A block deflate did not finish stays as it is, open.
                if let Some(compressed) = deflate::compress(text, &self.dictionary) {
                    *block = Block::Sealed {
                        compressed,
                        len: text.len() as u32,
                    };
                }
            }
        }
        self.offload(index);
    }

    /// Appends a row's record to `lane`'s block (a new one when it would
    /// pass a block). An id that is a UUID written canonically (lowercase,
    /// hyphenated) is kept as its 16 bytes, which deflate cannot shorten as text
    /// (36 bytes of hex); any other id as its text.
    pub(crate) fn push_record<const N: usize>(
        &mut self,
        lane: usize,
        id: &str,
        fields: [Option<&str>; N],
    ) -> Span {
        let packed = canonical_uuid(id);
        let len = record_len(id, packed.is_some(), &fields);
        let Some(index) = self.room_for(lane, len) else {
            return Span::NULL;
        };
        let Some(Block::Open(text)) = self.blocks.get_mut(index as usize) else {
            return Span::NULL;
        };
        let offset = text.len();
        write_record(text, id, packed, &fields);
        if !self.sealed_any {
            let record = text.get(offset..).unwrap_or_default();
            let take = record.len().min(DICTIONARY_BYTES - self.dictionary.len());
            self.dictionary.reserve_exact(take);
            self.dictionary
                .extend_from_slice(record.get(..take).unwrap_or_default());
        }
        Span::new(index, offset, len)
    }

    /// The block `len` more bytes of `lane` go to, with room for them: its
    /// open block, or a new one when they would pass it.
    fn room_for(&mut self, lane: usize, len: usize) -> Option<u32> {
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
        let mut started = 0;
        if let Some(open) = open_len.filter(|&open| starts_a_block(open, len)) {
            self.seal(index as usize);
            index = NO_BLOCK;
            started = capacity_after_full(open);
        }
        if index == NO_BLOCK || open_len.is_none() {
            super::columns::grow(&mut self.blocks, 1);
            let room = open_capacity(0, started, len);
            self.blocks.push(Block::Open(Vec::with_capacity(room)));
            index = (self.blocks.len() - 1) as u32;
            if let Some(slot) = self.open_of.get_mut(lane) {
                *slot = index;
            }
        }
        let Some(Block::Open(text)) = self.blocks.get_mut(index as usize) else {
            return None;
        };
        let capacity = open_capacity(text.len(), text.capacity(), len);
        text.reserve_exact(capacity - text.len());
        Some(index)
    }

    /// Whether `span` lies within its block (a snapshot's check; a sealed
    /// block's text is checked when a reader decodes it).
    pub(crate) fn holds(&self, span: Span) -> bool {
        let len = match self.blocks.get(span.block()) {
            Some(Block::Open(text)) => text.len(),
            Some(Block::Sealed { len, .. } | Block::InStorage { len, .. }) => *len as usize,
            None => return false,
        };
        let range = span.range(len);
        range.start <= range.end && range.end <= len
    }

    /// A reader of this text.
    pub fn reader(&self) -> TextReader<'_> {
        TextReader {
            arena: self,
            decoded: Decoded::default(),
            uuid: String::new(),
            damaged: false,
            storage_failed: false,
        }
    }

    pub(crate) fn heap_bytes(&self) -> usize {
        let text: usize = self
            .blocks
            .iter()
            .map(|block| match block {
                Block::Open(text) => text.capacity(),
                Block::Sealed { compressed, .. } => compressed.len(),
                Block::InStorage { .. } => 0,
            })
            .sum();
        text + self.blocks.capacity() * BLOCK_SLOT
            + self.open_of.capacity() * 4
            + self.dictionary.capacity()
            + self.unsealed_bytes()
    }

    /// What the blocks waiting for their seal cost besides their open text:
    /// their entries, and as much more as their seal in place could take.
    /// (A deferring store is then never smaller than one sealing in place.)
    fn unsealed_bytes(&self) -> usize {
        if self.unsealed.is_empty() {
            return 0;
        }
        let past_capacity: usize = self
            .unsealed
            .keys()
            .filter_map(|&index| match self.blocks.get(index as usize) {
                Some(Block::Open(text)) => {
                    Some(deflate::compressed_bound(text.len()).saturating_sub(text.capacity()))
                }
                _ => None,
            })
            .sum();
        UNSEALED_ROOT + self.unsealed.len() * UNSEALED_ENTRY + past_capacity
    }

    /// From now on, full blocks wait for seal jobs (`on`), or are
    /// compressed as they fill, those waiting now included (`!on`).
    pub(crate) fn defer_seals(&mut self, on: bool) {
        self.defers_seals = on;
        if !on {
            self.seal_waiting();
        }
    }

    /// Compresses here every full block still waiting for its seal; a seal
    /// job that comes back for one later is stale.
    fn seal_waiting(&mut self) {
        for index in std::mem::take(&mut self.unsealed).into_keys() {
            self.seal_here(index as usize);
        }
    }

    /// Bytes `write_seal_jobs` would write (so that a frame is allocated once).
    pub(crate) fn seal_jobs_bytes(&self) -> usize {
        let mut texts = self
            .unsealed
            .iter()
            .filter(|(_, &handed)| handed == Handed::No)
            .filter_map(|(&index, _)| match self.blocks.get(index as usize) {
                Some(Block::Open(text)) => Some(text.len()),
                _ => None,
            })
            .peekable();
        match texts.peek() {
            None => 0,
            Some(_) => seal_jobs::section_bytes(self.dictionary.len(), texts),
        }
    }

    /// Writes the full blocks not yet handed out as seal jobs of `table`,
    /// and counts them as handed out.
    pub(crate) fn write_seal_jobs<S: JobsSink>(
        &mut self,
        table: TextTable,
        jobs: &mut JobsWriter<S>,
    ) {
        if !self.unsealed.values().any(|&handed| handed == Handed::No) {
            return;
        }
        let dictionary = xxhash_rust::xxh3::xxh3_64(&self.dictionary);
        let blocks = &self.blocks;
        let mut handed_out = Vec::new();
        for (&index, handed) in self.unsealed.iter_mut() {
            if let (Handed::No, Some(Block::Open(text))) = (*handed, blocks.get(index as usize)) {
                let hash = xxhash_rust::xxh3::xxh3_64_with_seed(text, dictionary);
                *handed = Handed::Out { hash };
                handed_out.push(Job {
                    block: index,
                    hash,
                    text,
                });
            }
        }
        jobs.section(table, &self.dictionary, &handed_out);
    }

    /// Puts in place block `index`'s seal as a job came back with it: `len`
    /// bytes decoded, the XXH3 of the text the job held, and its compressed
    /// bytes (`None`: deflate did not finish, so it stays open, as a block
    /// sealed here would). A job's answer for other text (another store's,
    /// or one handed out before the block was sealed here) is stale.
    pub(crate) fn install_sealed(&mut self, sealed: &SealedBlock<'_>) -> Installed {
        let SealedBlock {
            block: index,
            len,
            hash,
            compressed,
            ..
        } = *sealed;
        if self.unsealed.get(&index) != Some(&Handed::Out { hash }) {
            return Installed::Stale;
        }
        let Some(block) = self.blocks.get_mut(index as usize) else {
            return Installed::Wrong("a block the text does not have");
        };
        let Block::Open(text) = block else {
            return Installed::Stale;
        };
        if text.len() != len as usize {
            return Installed::Wrong("a block's length is not its text's");
        }
        if let Some(compressed) = compressed {
            let fits = compressed.len() <= deflate::compressed_bound(text.len())
                && text.len() <= compressed.len().saturating_mul(deflate::MAX_EXPANSION);
            if !fits {
                return Installed::Wrong("a block's compressed length cannot be deflate's");
            }
            *block = Block::Sealed {
                compressed: compressed.into(),
                len,
            };
        }
        self.unsealed.remove(&index);
        if self.unsealed.is_empty() {
            // Its emptied root is freed, as `unsealed_bytes` counts none.
            self.unsealed = BTreeMap::new();
        }
        self.offload(index as usize);
        Installed::Yes
    }

    pub(crate) fn defers_seals(&self) -> bool {
        self.defers_seals
    }

    /// Full blocks waiting for their seal (handed out or not).
    pub(crate) fn unsealed_blocks(&self) -> usize {
        self.unsealed.len()
    }
}

/// What installing a seal job's block did.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Installed {
    Yes,
    /// The block no longer waits (sealed here since), was never handed
    /// out, or was handed out for other text.
    Stale,
    /// The job's answer cannot be this arena's block (a host's mistake).
    Wrong(&'static str),
}

/// What memory counts for a full block waiting for its seal job: its share
/// of the `BTreeMap`'s nodes (a node holds up to 11 entries of 20 bytes
/// and, but for the root, at least 5), and once the root node.
const UNSEALED_ENTRY: usize = 64;
const UNSEALED_ROOT: usize = 512;

/// Blocks a reader keeps decoded (1 MiB, while a query runs): logs.all's
/// rows are one project's newest, in its last blocks, but blocks filled by
/// batches that overlap in time hold rows of the same hours. 16 against 8
/// made logs.all 17–24% faster for a median project at 1M (`bench/ab.mjs`),
/// and each block missed is read from the host's storage again.
const DECODED_BLOCKS: usize = 16;

/// Reads records of an arena, decoding each block it needs once (the last
/// few kept). A block that does not decode, or a record that does not parse
/// into UTF-8 (only a damaged snapshot holds one), reads as nothing, and
/// `damaged` says so.
pub struct TextReader<'a> {
    arena: &'a Arena,
    decoded: Decoded,
    /// A packed UUID, written out.
    uuid: String,
    damaged: bool,
    /// A block in storage was missing there, or not as it was handed over.
    storage_failed: bool,
}

impl TextReader<'_> {
    /// The record `span` points to; `None` (and `damaged`) when its block
    /// does not decode or it is not a record of `N` fields in UTF-8.
    pub fn record<const N: usize>(&mut self, span: Span) -> Option<Record<'_, N>> {
        let TextReader {
            arena,
            decoded,
            uuid,
            damaged,
            storage_failed,
        } = self;
        let record = read_bytes(arena, decoded, storage_failed, span)
            .and_then(parse_record::<N>)
            .and_then(|RawRecord { packed, id, fields }| {
                let id = match packed {
                    true => {
                        let id = uuid::Uuid::from_slice(id).ok()?;
                        uuid.clear();
                        uuid.push_str(id.hyphenated().encode_lower(&mut [0; 36]));
                        uuid.as_str()
                    }
                    false => simdutf8::basic::from_utf8(id).ok()?,
                };
                let mut texts = [None; N];
                for (text, field) in texts.iter_mut().zip(fields) {
                    *text = match field {
                        Some(bytes) => Some(simdutf8::basic::from_utf8(bytes).ok()?),
                        None => None,
                    };
                }
                Some(Record { id, fields: texts })
            });
        *damaged |= record.is_none();
        record
    }

    /// Whether a block read so far did not decode, or a span fell outside it.
    pub fn damaged(&self) -> bool {
        self.damaged
    }

    /// Whether the fault was the host's storage: a block was missing there,
    /// or not the bytes handed over (then `damaged` is set too).
    pub fn storage_failed(&self) -> bool {
        self.storage_failed
    }
}

/// A reader's decoded blocks (the last `DECODED_BLOCKS`, each its block
/// number and its text) and the decoder that fills them, reused from block
/// to block.
#[derive(Default)]
struct Decoded {
    blocks: Vec<(usize, Vec<u8>)>,
    decoder: deflate::Decoder,
}

/// The bytes of `span`, from `arena`'s open block or from its sealed block
/// decoded (kept in `decoded`).
fn read_bytes<'d>(
    arena: &'d Arena,
    decoded: &'d mut Decoded,
    storage_failed: &mut bool,
    span: Span,
) -> Option<&'d [u8]> {
    // After one block could not be read back, the answer is a storage fault:
    // storage is not asked again for each of the rows left.
    if span.is_null() || *storage_failed {
        return None;
    }
    let index = span.block();
    let len = match arena.blocks.get(index)? {
        Block::Open(text) => return text.get(span.range(text.len())),
        Block::Sealed { len, .. } | Block::InStorage { len, .. } => *len as usize,
    };
    let Decoded { blocks, decoder } = decoded;
    let at = match blocks.iter().position(|(i, _)| *i == index) {
        Some(at) => at,
        None => {
            let compressed = compressed_bytes(arena, index);
            *storage_failed |= compressed.is_none();
            let compressed = compressed?;
            let mut buffer = if blocks.len() == DECODED_BLOCKS {
                blocks.remove(0).1
            } else {
                Vec::new()
            };
            if !decoder.decode_into(&compressed, len, &arena.dictionary, &mut buffer) {
                return None;
            }
            blocks.push((index, buffer));
            blocks.len() - 1
        }
    };
    blocks.get(at)?.1.get(span.range(len))
}

/// The compressed bytes of sealed block `index`: in memory, or read back
/// from storage and checked against the length and hash kept for them.
fn compressed_bytes(arena: &Arena, index: usize) -> Option<Cow<'_, [u8]>> {
    match arena.blocks.get(index)? {
        Block::Sealed { compressed, .. } => Some(Cow::Borrowed(compressed)),
        Block::InStorage { bytes, hash, .. } => {
            let (storage, table) = arena.storage.as_ref()?;
            let stored = storage.0.get(block_key(*table, index as u32))?;
            let intact =
                stored.len() == *bytes as usize && xxhash_rust::xxh3::xxh3_64(&stored) == *hash;
            intact.then_some(Cow::Owned(stored))
        }
        Block::Open(_) => None,
    }
}

/// The 16 bytes of `id` when it is a UUID written exactly as `Uuid`
/// writes one back (lowercase, hyphenated), so that it reads back the same.
fn canonical_uuid(id: &str) -> Option<[u8; 16]> {
    // Read by hand: parsing with `uuid` and writing it back to compare took
    // 2% of edge ingest, for a check made for every entry. A table and one
    // test at the end, instead of a branch per character, read a million
    // ids natively in 31 ms against 114.
    const PAIRS: [usize; 16] = [0, 2, 4, 6, 9, 11, 14, 16, 19, 21, 24, 26, 28, 30, 32, 34];
    let text: &[u8; 36] = id.as_bytes().try_into().ok()?;
    let mut bytes = [0u8; 16];
    let nibble = |at: usize| {
        let char = text.get(at).copied().unwrap_or_default();
        NIBBLE.get(usize::from(char)).copied().unwrap_or(0xff)
    };
    let mut invalid = 0u8;
    for (byte, at) in bytes.iter_mut().zip(PAIRS) {
        let (high, low) = (nibble(at), nibble(at + 1));
        invalid |= high | low;
        *byte = high << 4 | low & 15;
    }
    let dashes = [8, 13, 18, 23]
        .iter()
        .all(|&at| text.get(at) == Some(&b'-'));
    (invalid & 0xf0 == 0 && dashes).then_some(bytes)
}

/// Each byte's value as a lowercase hex digit, or 0xff for any other.
// Indexing in a constant fails the build, never a run.
#[allow(clippy::indexing_slicing)]
static NIBBLE: [u8; 256] = {
    let mut table = [0xffu8; 256];
    let mut digit = 0;
    while digit < 16 {
        table[b"0123456789abcdef"[digit] as usize] = digit as u8;
        digit += 1;
    }
    table
};

#[cfg(test)]
mod tests {
    use super::*;

    impl Span {
        /// Its length as written (`ALONE` for one as long as its block).
        fn len(self) -> u32 {
            self.at & ALONE
        }
    }

    /// A text kept as a record of one field (with an empty id), as most
    /// tests here push them.
    impl Arena {
        fn push(&mut self, lane: usize, text: &str) -> Span {
            self.push_record(lane, "", [Some(text)])
        }
    }

    impl TextReader<'_> {
        fn get(&mut self, span: Span) -> Option<&str> {
            self.record::<1>(span).and_then(|r| r.fields[0])
        }
    }

    /// What `push` adds for each of `texts`, by lane: `after`'s input.
    fn pushed<'t>(
        texts: &'t [(usize, impl AsRef<str>)],
    ) -> impl Iterator<Item = (usize, usize)> + 't {
        texts
            .iter()
            .map(|(lane, t)| (*lane, record_bytes("", &[Some(t.as_ref())])))
    }

    /// `after` for `texts`, which `after_bound` never counts below.
    fn predicted(arena: &Arena, texts: &[(usize, impl AsRef<str>)]) -> (usize, usize) {
        let exact = arena.after(pushed(texts));
        let lanes = texts.iter().map(|(lane, _)| lane + 1).max().unwrap_or(0);
        let bound = arena.after_bound(pushed(texts).map(|(_, len)| len), lanes);
        assert!(
            bound.0 >= exact.0 && bound.1 >= exact.1,
            "{bound:?} {exact:?}"
        );
        exact
    }

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
            let predicted = predicted(&arena, part);
            spans.extend(part.iter().map(|(lane, t)| arena.push(*lane, t)));
            assert_within(predicted, &arena);
        }
        assert!(arena.blocks.len() > 12, "{}", arena.blocks.len());
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
    fn the_bound_holds_where_open_blocks_grow_most() {
        for defer in [false, true] {
            let mut arena = Arena::default();
            arena.defer_seals(defer);
            let lanes = 300;
            // Each lane's first record sets its capacity, a short one after
            // grows it by half: growth half again the text pushed.
            let first: Vec<(usize, String)> = (0..lanes)
                .flat_map(|lane| [(lane, "a".repeat(1000)), (lane, String::new())])
                .collect();
            push_predicted(&mut arena, &first);
            // Blocks filled to their capacity (a record of one field takes
            // two bytes more than its text)…
            let fill: Vec<(usize, String)> = (0..lanes)
                .map(|lane| {
                    let room = arena_open(&arena, lane).map_or(0, |(len, cap)| cap - len);
                    (lane, "f".repeat(room - 2))
                })
                .collect();
            push_predicted(&mut arena, &fill);
            // … then a record more each: growth half the open text.
            let more: Vec<(usize, String)> = (0..lanes).map(|lane| (lane, "m".into())).collect();
            assert!(arena_open(&arena, 7).is_some_and(|(len, capacity)| len == capacity));
            predicted(&arena, &more);
            // Many lanes left open for `compact` to seal.
            let wide: Vec<(usize, String)> = (0..5000).map(|lane| (lane, String::new())).collect();
            predicted(&arena, &wide);
        }
    }

    #[test]
    fn busy_lanes_start_blocks_whole_and_the_predictions_count_them() {
        for defer in [false, true] {
            let mut arena = Arena::default();
            arena.defer_seals(defer);
            // Lanes 0..8 fill a block and a half within each batch, lane 8
            // sends little, lane 9's records alternate between under and
            // over half a block (its block of the shorter one is full with
            // less than half a block, and the next starts empty), and lane
            // 10's longer than a block follows a full one.
            let batch: Vec<(usize, String)> = (0..8)
                .flat_map(|lane| {
                    (0..100).map(move |i| (lane, format!("{lane}:{i}:{}", "x".repeat(1000))))
                })
                .chain((0..3).map(|i| (8, format!("quiet {i}"))))
                .chain([30_000, 40_000].map(|len| (9, "h".repeat(len))))
                .chain([40_000, BLOCK_BYTES + 10].map(|len| (10, "l".repeat(len))))
                .collect();
            for _ in 0..3 {
                let predicted = predicted(&arena, &batch);
                for (lane, text) in &batch {
                    arena.push(*lane, text);
                }
                for lane in 0..8 {
                    let open = arena_open(&arena, lane);
                    assert_eq!(open.map(|(_, cap)| cap), Some(BLOCK_BYTES));
                }
                assert!(arena_open(&arena, 8).is_some_and(|(_, cap)| cap < 1000));
                assert!(arena_open(&arena, 9).is_some_and(|(_, cap)| cap < BLOCK_BYTES));
                assert!(arena_open(&arena, 10).is_some_and(|(len, cap)| cap == len));
                arena.compact();
                assert_within(predicted, &arena);
                // Between batches, open blocks hold half again their text at most.
                for lane in 0..11 {
                    if let Some((len, capacity)) = arena_open(&arena, lane) {
                        assert!(capacity <= len + len / 2, "lane {lane}: {len} {capacity}");
                    }
                }
            }
            // Blocks all but full, then a short record each: blocks started
            // whole hold little text, where `after_bound` grows least.
            let mut tight = Arena::default();
            tight.defer_seals(defer);
            let lanes = 50;
            let full: Vec<(usize, String)> = (0..lanes)
                .flat_map(|lane| (0..64).map(move |_| (lane, "f".repeat(BLOCK_BYTES / 64 - 3))))
                .collect();
            push_predicted(&mut tight, &full);
            assert!(arena_open(&tight, 0).is_some_and(|(len, _)| len > BLOCK_BYTES - 100));
            let short: Vec<(usize, String)> =
                (0..lanes).map(|lane| (lane, "s".repeat(100))).collect();
            push_predicted(&mut tight, &short);
            assert_eq!(arena_open(&tight, 0).map(|(_, cap)| cap), Some(BLOCK_BYTES));
        }
    }

    /// Pushes `texts` after checking `predicted`, and that it counts no
    /// fewer blocks and bytes than they take.
    fn push_predicted(arena: &mut Arena, texts: &[(usize, String)]) {
        let predicted = predicted(arena, texts);
        for (lane, text) in texts {
            arena.push(*lane, text);
        }
        assert_within(predicted, arena);
    }

    /// That `predicted` (blocks, heap bytes) counts no fewer than `arena` holds.
    fn assert_within(predicted: (usize, usize), arena: &Arena) {
        assert!(predicted.0 >= arena.blocks.len(), "{predicted:?}");
        assert!(
            predicted.1 >= arena.heap_bytes(),
            "{predicted:?} {}",
            arena.heap_bytes()
        );
    }

    /// A lane's open block's length and capacity.
    fn arena_open(arena: &Arena, lane: usize) -> Option<(usize, usize)> {
        match arena.blocks.get(*arena.open_of.get(lane)? as usize)? {
            Block::Open(text) => Some((text.len(), text.capacity())),
            _ => None,
        }
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
            let predicted = predicted(&arena, part);
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
                Block::Sealed { .. } | Block::InStorage { .. } => 0,
            })
            .sum();
        assert!(open <= OPEN_FLOOR, "{open} bytes left open");
        reads_back_from_its_parts(&arena, &texts, &spans);
    }

    /// 20,000 texts of 300 lanes; every tenth, a long one of lane 0, which
    /// fills blocks.
    fn many_lanes() -> Vec<(usize, String)> {
        (0..20_000)
            .map(|i| match i % 10 {
                0 => (
                    0,
                    format!("{{\"n\":{i},\"pad\":\"{}\"}}", "q".repeat(2000 + i % 7)),
                ),
                _ => (
                    i % 300,
                    format!("{{\"n\":{i},\"pad\":\"{}\"}}", "p".repeat(i % 90)),
                ),
            })
            .collect()
    }

    /// Hands `arena`'s waiting blocks out as seal jobs, and seals them as
    /// another instance would: the sealed frame.
    fn seal_elsewhere(arena: &mut Arena) -> Vec<u8> {
        let room = arena.seal_jobs_bytes();
        let mut jobs = JobsWriter::new(Vec::new());
        arena.write_seal_jobs(TextTable::Edge, &mut jobs);
        let jobs = jobs.finish();
        // The frame's room was foreseen exactly.
        assert_eq!(jobs.as_ref().map_or(0, |jobs| jobs.len() - 1), room);
        jobs.and_then(|jobs| super::super::seal_jobs::seal_blocks(&jobs))
            .unwrap_or_else(|| b"S".to_vec())
    }

    /// Installs a sealed frame's blocks: how many went in.
    fn install(arena: &mut Arena, sealed: &[u8]) -> usize {
        let blocks = super::super::seal_jobs::sealed_blocks(sealed).unwrap();
        blocks
            .iter()
            .filter(|b| arena.install_sealed(b) == Installed::Yes)
            .count()
    }

    fn same_parts(a: &Arena, b: &Arena) {
        let (a_blocks, a_lanes, a_dictionary) = a.parts();
        let (b_blocks, b_lanes, b_dictionary) = b.parts();
        assert_eq!(a_blocks.len(), b_blocks.len());
        for (x, y) in a_blocks.iter().zip(&b_blocks) {
            assert_eq!((x.kind, x.len, &x.bytes), (y.kind, y.len, &y.bytes));
        }
        assert_eq!((a_lanes, a_dictionary), (b_lanes, b_dictionary));
    }

    #[test]
    fn blocks_sealed_by_jobs_come_out_as_blocks_sealed_in_place() {
        let texts = many_lanes();
        let mut in_place = Arena::default();
        let mut by_jobs = Arena::default();
        by_jobs.defer_seals(true);
        let mut spans = Vec::new();
        let mut waiting = Vec::new();
        for (part, texts) in texts.chunks(4000).enumerate() {
            // Deferring never predicts less than sealing in place: with
            // nothing waiting, both hold the same, and it counts what its
            // seals could take in place as well as what waiting costs.
            let predicted = predicted(&by_jobs, texts);
            if by_jobs.unsealed_blocks() == 0 {
                assert_eq!(by_jobs.heap_bytes(), in_place.heap_bytes());
                assert!(predicted.1 >= self::predicted(&in_place, texts).1);
            }
            for (lane, text) in texts {
                in_place.push(*lane, text);
            }
            in_place.compact();
            spans.extend(texts.iter().map(|(lane, t)| by_jobs.push(*lane, t)));
            by_jobs.compact();
            assert!(
                predicted.1 >= by_jobs.heap_bytes(),
                "{predicted:?} {}",
                by_jobs.heap_bytes()
            );
            // Jobs come back a part late, or (the last part's) not yet.
            waiting.push(seal_elsewhere(&mut by_jobs));
            if part % 2 == 1 {
                for sealed in waiting.drain(..) {
                    assert!(install(&mut by_jobs, &sealed) > 0);
                }
            }
        }
        assert!(by_jobs.unsealed_blocks() > 0);
        // Waiting blocks read as open text.
        let mut reader = by_jobs.reader();
        for ((_, text), &span) in texts.iter().zip(&spans) {
            assert_eq!(reader.get(span), Some(text.as_str()));
        }
        // A snapshot keeps them open; restored, they wait again, and are
        // compressed when the store does not defer (as a restore leaves it).
        let (blocks, open_of, dictionary) = by_jobs.parts();
        let mut restored =
            Arena::from_parts(blocks, open_of.to_vec(), dictionary.to_vec()).unwrap();
        assert_eq!(restored.unsealed_blocks(), by_jobs.unsealed_blocks());
        restored.defer_seals(false);
        assert_eq!(restored.unsealed_blocks(), 0);
        same_parts(&restored, &in_place);

        for sealed in waiting {
            assert!(install(&mut by_jobs, &sealed) > 0);
        }
        assert_eq!(by_jobs.unsealed_blocks(), 0);
        same_parts(&by_jobs, &in_place);
        reads_back_from_its_parts(&by_jobs, &texts, &spans);
    }

    #[test]
    fn a_seal_job_back_for_other_text_or_after_its_block_was_sealed_here_is_not_installed() {
        let mut arena = Arena::default();
        arena.defer_seals(true);
        for (lane, text) in many_lanes() {
            arena.push(lane, &text);
        }
        arena.compact();
        let sealed = seal_elsewhere(&mut arena);
        let blocks = super::super::seal_jobs::sealed_blocks(&sealed).unwrap();
        let first = blocks[0];
        let wrong_len = arena.install_sealed(&SealedBlock {
            len: first.len + 1,
            ..first
        });
        assert_eq!(
            wrong_len,
            Installed::Wrong("a block's length is not its text's")
        );
        let too_short = arena.install_sealed(&SealedBlock {
            compressed: Some(&[1]),
            ..first
        });
        assert_eq!(
            too_short,
            Installed::Wrong("a block's compressed length cannot be deflate's")
        );
        // Made from other text (another store's block of that number), not
        // handed out (a lane's open block), or past the arena's blocks.
        let other_text = SealedBlock {
            hash: first.hash ^ 1,
            ..first
        };
        let not_handed_out = SealedBlock {
            block: arena.open_of[0],
            ..first
        };
        let past = SealedBlock {
            block: u32::MAX - 1,
            ..first
        };
        for stale in [other_text, not_handed_out, past] {
            assert_eq!(arena.install_sealed(&stale), Installed::Stale);
        }
        assert_eq!(arena.unsealed_blocks(), blocks.len());
        // Sealed here since: the job's answer is passed over.
        arena.defer_seals(false);
        assert_eq!(arena.unsealed_blocks(), 0);
        assert_eq!(install(&mut arena, &sealed), 0);
    }

    /// The `uuid` crate's reading: parsed, and written back the same.
    fn canonical_by_uuid(id: &str) -> Option<[u8; 16]> {
        let parsed = uuid::Uuid::try_parse(id).ok()?;
        let mut written = [0u8; uuid::fmt::Hyphenated::LENGTH];
        (parsed.hyphenated().encode_lower(&mut written) == id).then(|| *parsed.as_bytes())
    }

    #[test]
    fn a_canonical_uuid_is_what_the_uuid_crate_writes_back() {
        let id = "7f1c6a52-5d47-4e0a-9c61-2b1f0e4a8d93";
        assert_eq!(canonical_uuid(id), canonical_by_uuid(id));
        assert!(canonical_uuid(id).is_some());
        // Every one-character change, at every place.
        for at in 0..id.len() {
            for char in "09afgAF-{}: é".chars() {
                let changed = format!("{}{char}{}", &id[..at], &id[at + 1..]);
                assert_eq!(
                    canonical_uuid(&changed),
                    canonical_by_uuid(&changed),
                    "{changed}"
                );
            }
        }
        for other in [
            "",
            "a",
            "7f1c6a525d474e0a9c612b1f0e4a8d93",
            "7f1c6a52-5d47-4e0a-9c61-2b1f0e4a8d9",
        ] {
            assert_eq!(canonical_uuid(other), None, "{other}");
        }
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
        let spans: Vec<Span> = ids.iter().map(|id| arena.push_record(1, id, [])).collect();
        assert_eq!(spans[0].len(), 17, "a header byte and 16");
        assert!(spans[1..]
            .iter()
            .zip(&ids[1..])
            .all(|(s, id)| s.len() as usize == 2 + id.len()));
        let mut reader = arena.reader();
        for (id, &span) in ids.iter().zip(&spans) {
            assert_eq!(reader.record::<0>(span).map(|r| r.id), Some(*id));
        }
        for _ in 0..BLOCK_BYTES / 17 + 1 {
            arena.push_record(1, ids[0], []);
        }
        assert!(matches!(arena.blocks[0], Block::Sealed { .. }));
        let mut reader = arena.reader();
        let id = reader.record::<0>(spans[0]).map(|r| r.id);
        assert_eq!(id, Some(ids[0]), "from a sealed block");
    }

    #[test]
    fn records_keep_every_field_null_or_empty_or_long_and_refuse_what_they_are_not() {
        let long = "é".repeat(200);
        let uuid = "7f1c6a52-5d47-4e0a-9c61-2b1f0e4a8d93";
        let mut arena = Arena::default();
        let mut rows = Vec::new();
        for id in ["", "id-1", uuid, long.as_str()] {
            for mask in 0..8u8 {
                let texts = ["", "GET | 200", long.as_str()];
                let fields: [Option<&str>; 3] =
                    std::array::from_fn(|i| (mask & (1 << i) != 0).then_some(texts[i]));
                let span = arena.push_record(2, id, fields);
                let len = record_bytes(id, &fields);
                assert_eq!(
                    span.range(usize::MAX),
                    span.range(0).start..span.range(0).start + len
                );
                rows.push((span, id, fields));
            }
        }
        let mut reader = arena.reader();
        for &(span, id, fields) in &rows {
            let record = reader.record::<3>(span).unwrap();
            assert_eq!((record.id, record.fields), (id, fields));
        }
        assert!(!reader.damaged());

        let mut bytes = Vec::new();
        write_record(&mut bytes, "id", None, &[Some("ab"), Some("cd")]);
        assert!(parse_record::<2>(&bytes).is_some());
        // The last field runs to the span's end: a cut into it is a shorter text.
        for cut in 0..bytes.len() - "cd".len() {
            assert!(parse_record::<2>(&bytes[..cut]).is_none(), "cut at {cut}");
        }
        assert!(
            parse_record::<1>(&bytes).is_none(),
            "a field more than the table's"
        );
        let mut longer = bytes.clone();
        longer[1] = 200;
        assert!(
            parse_record::<2>(&longer).is_none(),
            "an id longer than the record"
        );
    }

    #[test]
    fn the_dictionary_is_the_first_text_until_a_block_is_sealed_even_across_a_restore() {
        let entry = |i: usize| (0, format!("{{\"user_agent\":\"Mozilla/5.0\",\"n\":{i}}}"));
        let mut texts: Vec<(usize, String)> = (0..3000).map(entry).collect();
        // Longer than a block: it seals the lane's first block.
        texts[10].1 = format!("{{\"pad\":\"{}\"}}", "x".repeat(BLOCK_BYTES));
        let mut arena = Arena::default();
        let mut spans: Vec<Span> = texts[..10].iter().map(|(l, t)| arena.push(*l, t)).collect();
        let mut records = Vec::new();
        for (_, text) in &texts {
            write_record(&mut records, "", None, &[Some(text.as_str())]);
        }
        let first: usize = spans.iter().map(|s| s.len() as usize).sum();
        assert_eq!(arena.dictionary, records[..first]);

        let (blocks, open_of, dictionary) = arena.parts();
        let mut arena = Arena::from_parts(blocks, open_of.to_vec(), dictionary.to_vec()).unwrap();
        spans.extend(texts[10..].iter().map(|(l, t)| arena.push(*l, t)));
        assert!(arena.sealed_any);
        // The one lane's first block was sealed before the dictionary filled.
        assert!(arena.dictionary.len() < DICTIONARY_BYTES);
        assert!(records.starts_with(&arena.dictionary));
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
    fn a_block_left_waiting_fixes_the_dictionary_across_a_restore() {
        let entry = |i: usize| (0, format!("{{\"user_agent\":\"Mozilla/5.0\",\"n\":{i}}}"));
        let mut texts: Vec<(usize, String)> = (0..3000).map(entry).collect();
        // Longer than a block: the lane's first block fills before the
        // dictionary does, and waits for its seal job.
        texts[10].1 = format!("{{\"pad\":\"{}\"}}", "x".repeat(BLOCK_BYTES));
        let mut in_place = Arena::default();
        let mut by_jobs = Arena::default();
        by_jobs.defer_seals(true);
        let (first, later) = texts.split_at(12);
        let mut spans = Vec::new();
        for (lane, text) in first {
            in_place.push(*lane, text);
            spans.push(by_jobs.push(*lane, text));
        }
        // The small records' block and the long record's.
        assert_eq!(by_jobs.unsealed_blocks(), 2);
        let (blocks, open_of, dictionary) = by_jobs.parts();
        let mut restored =
            Arena::from_parts(blocks, open_of.to_vec(), dictionary.to_vec()).unwrap();
        assert!(restored.sealed_any);
        for (lane, text) in later {
            in_place.push(*lane, text);
            spans.push(restored.push(*lane, text));
        }
        restored.defer_seals(false);
        same_parts(&restored, &in_place);
        reads_back_from_its_parts(&restored, &texts, &spans);
    }

    #[test]
    fn a_record_longer_than_a_span_can_say_reads_back_whole() {
        let mut arena = Arena::default();
        let longest = "y".repeat(ALONE as usize + 10);
        let texts = [(0, "a".to_string()), (0, longest), (0, "b".to_string())];
        let spans: Vec<Span> = texts.iter().map(|(l, t)| arena.push(*l, t)).collect();
        assert_eq!(spans[1].at & ALONE, ALONE);
        reads_back_from_its_parts(&arena, &texts, &spans);
        // Block numbers have a word of their own.
        let far = Span::new(1 << 20, 5, 7);
        assert_eq!((far.block(), far.range(0)), (1 << 20, 5..12));
        assert!(!arena.holds(far));
    }

    #[test]
    fn records_about_a_block_long_read_back_with_the_one_after() {
        for len in BLOCK_BYTES - 6..=BLOCK_BYTES + 1 {
            let mut arena = Arena::default();
            let texts = [
                (0, "z".repeat(len)),
                (0, String::new()),
                (0, "after".to_string()),
            ];
            let spans: Vec<Span> = texts.iter().map(|(l, t)| arena.push(*l, t)).collect();
            assert!(spans.iter().all(|&s| arena.holds(s)), "{len}");
            reads_back_from_its_parts(&arena, &texts, &spans);
        }
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
        let predicted = predicted(&arena, &texts);
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
        let (arena, spans) = filled(None);
        let (mut blocks, open_of, dictionary) = arena.parts();
        let first = &mut blocks[0];
        assert_eq!(first.kind, BlockKind::Sealed);
        first.bytes = first.bytes[..first.bytes.len() / 2].to_vec().into();
        let damaged = Arena::from_parts(blocks, open_of.to_vec(), dictionary.to_vec()).unwrap();
        let mut reader = damaged.reader();
        assert_eq!(reader.get(spans[8999]), Some("entry 8999 "));
        assert!(!reader.damaged());
        assert_eq!(reader.get(spans[0]), None);
        assert!(reader.damaged());
    }

    /// Storage that refuses every block.
    struct Refusing;

    impl super::super::block_storage::BlockStorage for Refusing {
        fn put(&self, _: u64, _: &[u8]) -> bool {
            false
        }
        fn get(&self, _: u64) -> Option<Vec<u8>> {
            None
        }
    }

    /// 9,000 short texts in one lane: one sealed block and an open one.
    fn filled(storage: Option<BlockStorageRef>) -> (Arena, Vec<Span>) {
        let mut arena = Arena::default();
        if let Some(storage) = storage {
            arena.keep_in(storage, TextTable::Other);
        }
        let spans = (0..9000)
            .map(|i| arena.push(0, &format!("entry {i} ")))
            .collect();
        (arena, spans)
    }

    #[test]
    fn sealed_blocks_go_to_storage_and_read_back_from_it() {
        use super::super::block_storage::MemoryBlocks;
        let (in_memory, _) = filled(None);
        let blocks = std::sync::Arc::new(MemoryBlocks::default());
        let (mut arena, spans) = filled(Some(BlockStorageRef(blocks.clone())));
        assert_eq!(blocks.len(), 1);
        assert_eq!(blocks.keys(), [block_key(TextTable::Other, 0)]);
        assert_eq!(
            arena.storage_bytes(),
            in_memory.heap_bytes() - arena.heap_bytes()
        );
        let mut reader = arena.reader();
        assert_eq!(reader.get(spans[0]), Some("entry 0 "));
        assert_eq!(reader.get(spans[8999]), Some("entry 8999 "));
        assert!(!reader.damaged());
        // A block changed in storage, or gone from it, is a storage fault.
        blocks.change(block_key(TextTable::Other, 0), |bytes| bytes[3] ^= 1);
        let mut reader = arena.reader();
        assert_eq!(reader.get(spans[0]), None);
        assert!(reader.damaged() && reader.storage_failed());
        arena.storage = None;
        let mut reader = arena.reader();
        assert_eq!(reader.get(spans[0]), None);
        assert!(reader.storage_failed());
    }

    #[test]
    fn a_block_storage_refuses_stays_in_memory() {
        let (in_memory, _) = filled(None);
        let (arena, spans) = filled(Some(BlockStorageRef(std::sync::Arc::new(Refusing))));
        assert_eq!(arena.storage_bytes(), 0);
        assert_eq!(arena.heap_bytes(), in_memory.heap_bytes());
        let mut reader = arena.reader();
        assert_eq!(reader.get(spans[0]), Some("entry 0 "));
        assert!(!reader.damaged());
    }

    #[test]
    fn a_snapshot_keeps_a_stored_blocks_hash_and_length() {
        use super::super::block_storage::MemoryBlocks;
        let blocks = std::sync::Arc::new(MemoryBlocks::default());
        let (arena, spans) = filled(Some(BlockStorageRef(blocks.clone())));
        let (parts, open_of, dictionary) = arena.parts();
        assert_eq!(parts[0].kind, BlockKind::InStorage);
        assert_eq!(parts[0].bytes.len(), IN_STORAGE_BYTES);
        let again = |parts: Vec<StoredBlock>| {
            Arena::from_parts(parts, open_of.to_vec(), dictionary.to_vec())
        };
        let mut restored = again(arena.parts().0).unwrap();
        assert!(restored.uses_storage());
        restored.keep_in(BlockStorageRef(blocks), TextTable::Other);
        assert_eq!(restored.reader().get(spans[0]), Some("entry 0 "));
        let mut short = arena.parts().0;
        short[0].bytes = short[0].bytes[..IN_STORAGE_BYTES - 1].to_vec().into();
        assert!(again(short).is_none());
    }
}
