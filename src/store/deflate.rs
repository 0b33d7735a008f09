//! A text block compressed against an arena's dictionary: a raw deflate
//! stream (RFC 1951) that may refer back into the dictionary, as a preset
//! dictionary does in zlib. The compressor reads the dictionary, flushes to
//! a byte boundary and keeps only what the block adds; the decoder starts
//! with the dictionary already in its window. Deflate's Huffman stage codes
//! the hex ids, addresses and numbers that LZ4 keeps as literals: a block
//! comes to about half of LZ4's bytes.

use std::cell::RefCell;

use miniz_oxide::deflate::core::{
    compress_to_output, create_comp_flags_from_zip_params, CompressorOxide, TDEFLFlush, TDEFLStatus,
};
use miniz_oxide::inflate::core::{decompress as inflate, inflate_flags, DecompressorOxide};
use miniz_oxide::inflate::TINFLStatus;

/// miniz's level 3: on the benchmark's logs, 0.55 of LZ4's bytes for 5×
/// its time to seal a block; higher levels save a few % more for twice that.
const LEVEL: i32 = 3;

/// Deflate codes a 258-byte match in as little as two bits: no block
/// decodes to more than this many times its compressed bytes.
pub(crate) const MAX_EXPANSION: usize = 1032;

/// The most bytes `compress` writes for `len` bytes: a block that does not
/// compress is stored, at 5 bytes per stored block of up to 32 KiB.
pub(crate) fn compressed_bound(len: usize) -> usize {
    len + len / 1024 + 64
}

thread_local! {
    /// A compressor that has read the last dictionary `compress` was given,
    /// with a copy of it: each seal starts from a clone of its state instead
    /// of reading the dictionary again (a third of a seal's time). A fixed
    /// 310 KiB (and as much again while a seal runs), held by the engine as
    /// its code is, not by a store.
    static PRIMED: RefCell<Option<Primed>> = const { RefCell::new(None) };
}

struct Primed {
    dictionary: Vec<u8>,
    compressor: Box<CompressorOxide>,
}

impl Primed {
    fn new(dictionary: &[u8]) -> Primed {
        // A raw stream (negative window bits): no zlib header or checksum.
        let flags = create_comp_flags_from_zip_params(LEVEL, -15, 0);
        let mut compressor = Box::new(CompressorOxide::new(flags));
        if !dictionary.is_empty() {
            // A sync flush ends the dictionary's output on a byte boundary,
            // which is dropped: what follows is a stream of its own.
            let (status, _) =
                compress_to_output(&mut compressor, dictionary, TDEFLFlush::Sync, |_| true);
            debug_assert_eq!(status, TDEFLStatus::Okay);
        }
        Primed {
            dictionary: dictionary.to_vec(),
            compressor,
        }
    }
}

/// `block` deflated against `dictionary` (whose bytes the stream may refer
/// to); `None` if miniz did not finish the stream (never seen).
pub(crate) fn compress(block: &[u8], dictionary: &[u8]) -> Option<Box<[u8]>> {
    let mut compressor = PRIMED.with_borrow_mut(|primed| {
        let primed = match primed {
            Some(p) if p.dictionary == dictionary => p,
            _ => primed.insert(Primed::new(dictionary)),
        };
        primed.compressor.clone()
    });
    let mut out = Vec::with_capacity(compressed_bound(block.len()));
    let (status, _) = compress_to_output(&mut compressor, block, TDEFLFlush::Finish, |bytes| {
        out.extend_from_slice(bytes);
        true
    });
    (status == TDEFLStatus::Done).then(|| out.into_boxed_slice())
}

/// Output a decoder starts with: a block's claimed length is only trusted
/// as far as its stream bears it out.
const FIRST_OUTPUT: usize = 64 << 10;

/// Decodes blocks one after another, reusing its state (11 KiB) and the
/// caller's buffers: logs.all decodes a few blocks a query.
#[derive(Default)]
pub(crate) struct Decoder {
    state: Option<Box<DecompressorOxide>>,
}

impl Decoder {
    /// Leaves in `out` the dictionary followed by the `len` bytes
    /// `compressed` decodes to; false when it is not one whole stream of
    /// exactly that length.
    pub(crate) fn decode_into(
        &mut self,
        compressed: &[u8],
        len: usize,
        dictionary: &[u8],
        out: &mut Vec<u8>,
    ) -> bool {
        let start = dictionary.len();
        let Some(end) = start.checked_add(len) else {
            return false;
        };
        out.clear();
        out.extend_from_slice(dictionary);
        out.resize(end.min(start + FIRST_OUTPUT), 0);
        let state = self.state.get_or_insert_with(Default::default);
        state.init();
        let (mut read, mut at) = (0, start);
        loop {
            let (status, more_read, written) = inflate(
                state,
                compressed.get(read..).unwrap_or_default(),
                out,
                at,
                inflate_flags::TINFL_FLAG_USING_NON_WRAPPING_OUTPUT_BUF,
            );
            read += more_read;
            at += written;
            match status {
                TINFLStatus::Done => break,
                TINFLStatus::HasMoreOutput if out.len() < end => {
                    let grown = out.len().saturating_mul(2).min(end);
                    out.resize(grown, 0);
                }
                _ => return false,
            }
        }
        read == compressed.len() && at == end
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The block `compressed` decodes to, with a decoder of its own.
    fn decompress(compressed: &[u8], len: usize, dictionary: &[u8]) -> Option<Vec<u8>> {
        let mut out = Vec::new();
        Decoder::default()
            .decode_into(compressed, len, dictionary, &mut out)
            .then(|| out.split_off(dictionary.len()))
    }

    fn noise(len: usize, mut seed: u64) -> Vec<u8> {
        (0..len)
            .map(|_| {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                seed as u8
            })
            .collect()
    }

    #[test]
    fn a_block_decodes_to_itself_with_or_without_a_dictionary() {
        let dictionary = br#"{"request":[{"method":"GET","path":"/rest/v1/"#.repeat(20);
        let block = br#"{"request":[{"method":"POST","path":"/rest/v1/todos"}]}"#.repeat(300);
        for dictionary in [&dictionary[..], &[]] {
            let compressed = compress(&block, dictionary).unwrap();
            assert!(compressed.len() < block.len() / 10);
            assert_eq!(
                decompress(&compressed, block.len(), dictionary).as_deref(),
                Some(&block[..])
            );
        }
    }

    #[test]
    fn a_block_refers_back_into_the_dictionary() {
        let dictionary = noise(8 << 10, 7);
        let block = dictionary[100..4100].to_vec();
        let compressed = compress(&block, &dictionary).unwrap();
        assert!(compressed.len() < 64, "{} bytes", compressed.len());
        assert_eq!(
            decompress(&compressed, block.len(), &dictionary),
            Some(block.clone())
        );
        assert_eq!(decompress(&compressed, block.len(), &[]), None);
    }

    #[test]
    fn noise_stays_within_the_bound() {
        for len in [0, 1, 100, 32 << 10, (1 << 20) + 7] {
            let block = noise(len, len as u64 + 1);
            let compressed = compress(&block, b"dictionary").unwrap();
            assert!(
                compressed.len() <= compressed_bound(len),
                "{len}: {}",
                compressed.len()
            );
            assert_eq!(decompress(&compressed, len, b"dictionary"), Some(block));
        }
    }

    #[test]
    fn a_damaged_or_misdescribed_block_does_not_decode() {
        let block = b"abcabcabc hello hello hello".repeat(50);
        let compressed = compress(&block, b"abc").unwrap();
        assert_eq!(decompress(&compressed, block.len() - 1, b"abc"), None);
        assert_eq!(decompress(&compressed, block.len() + 1, b"abc"), None);
        assert_eq!(
            decompress(&compressed[..compressed.len() - 1], block.len(), b"abc"),
            None
        );
        // A claim far past what the stream holds is refused without
        // allocating it.
        assert_eq!(decompress(&compressed, usize::MAX / 4, b"abc"), None);
        let mut longer = compressed.to_vec();
        longer.push(0);
        assert_eq!(decompress(&longer, block.len(), b"abc"), None);
        for at in 0..compressed.len() {
            let mut damaged = compressed.to_vec();
            damaged[at] ^= 0x5a;
            // Never a panic; a flip the stream cannot notice may still decode.
            let _ = decompress(&damaged, block.len(), b"abc");
        }
    }
}
