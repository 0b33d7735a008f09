//! A text block compressed against an arena's dictionary: a raw deflate
//! stream (RFC 1951) that may refer back into the dictionary, as a preset
//! dictionary does in zlib. Deflate's Huffman stage codes the hex ids,
//! addresses and numbers that LZ4 keeps as literals: a block comes to about
//! half of LZ4's bytes. zlib-rs (a pure-Rust port of zlib-ng, with a safe
//! API) compresses (at `LEVEL`, small blocks at `QUICK_LEVEL`) and decodes:
//! logs.all decodes its blocks a third faster than with miniz_oxide. Any
//! level's stream decodes alike, so the level can change without a new
//! snapshot version.

use std::cell::RefCell;

use zlib_rs::{Deflate, DeflateFlush, Inflate, InflateFlush, Status};

/// zlib's level 2 (zlib-ng's fast strategy) for blocks of `QUICK_BELOW`
/// bytes or more. Level 3 for blocks of 16 KiB or more made a smaller
/// store, but once the main thread copied less, the second core's sealing
/// bounded wasm edge ingest of the benchmark's 1M shard: level 2 took
/// 2,907-2,975 ms against 3,105-3,194 (four alternated runs of each), for
/// `storeBytes` of the edge entries of 124.8 MB against 121.0 (3.1% more;
/// 0.20 of their NDJSON either way). In the edge worker, a full object's
/// sealed text in SQLite grew 5.3% (`bench/cold-start.mjs`: 66.5 MB against
/// 63.2), its entries per object the same. Natively, on 64 KiB of the
/// benchmark's NDJSON, level 3 deflates 1.3× as fast as 4 for 8% more
/// bytes, level 2 1.6× for 16% more.
const LEVEL: i32 = 2;

/// Level 1 (zlib-ng's quick strategy: one match probe, fixed Huffman codes)
/// for blocks below this many bytes: those `compact` seals as a lane goes
/// quiet, three quarters of the seals of the benchmark's 1M shard but a
/// fifth of its text. Each seal builds its own Huffman trees and primes the
/// dictionary, so a small block cost far more time for its bytes; fixed
/// codes lose little where a block's trees took much of its bytes. Sealing
/// the shard's edge entries in place took 4.36-4.44 s against 4.96-5.05
/// (`bench/ingest-threads.mjs --in-place`, alternated builds), for a store
/// 1.2% larger (126.3 MB against 124.8); level 1 for every block took 3.88 s
/// but made it 8% larger.
const QUICK_BELOW: usize = 16 << 10;
const QUICK_LEVEL: i32 = 1;

// Levels 2 and up store a block that does not shrink, within
// `compressed_bound`; level 1's fixed codes may not fit it.
const _: () = assert!(LEVEL >= 2);

/// Raw deflate (no zlib header or checksum) with deflate's largest window,
/// 32 KiB, half a block: a block's first 24 KiB can refer into the part of
/// the 8 KiB dictionary it was compressed against (`primed_part`), the rest
/// back within the block. (`Inflate::reset` takes zlib's default window,
/// which is this one.)
const WINDOW_BITS: u8 = 15;

/// Deflate codes a 258-byte match in as little as two bits: no block
/// decodes to more than this many times its compressed bytes.
pub(crate) const MAX_EXPANSION: usize = 1032;

/// The most bytes `compress` writes for `len` bytes: a block that does not
/// compress is stored, at 5 bytes per stored block of up to 32 KiB.
pub(crate) const fn compressed_bound(len: usize) -> usize {
    len + len / 1024 + 64
}

/// The output buffer a compressor keeps: room for a block's bound (text
/// blocks are 64 KiB); a longer record's block gets a buffer of its own.
const KEPT_OUTPUT: usize = compressed_bound(64 << 10);

thread_local! {
    /// The buffer compressors write to (a block's bound), reused from seal to
    /// seal and held by the engine as its code is, not by a store.
    static OUTPUT: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// The end of `dictionary` a block of `len` bytes is compressed against:
/// twice its length at most. Priming deflate costs time for every byte
/// (hashing it into the match chains), and a small block finds most of its
/// matches near its own size back; the stream's distances are the same
/// whatever the decoder holds before them, so it decodes against the whole.
fn primed_part(dictionary: &[u8], len: usize) -> &[u8] {
    let from = dictionary.len().saturating_sub(len.saturating_mul(2));
    dictionary.get(from..).unwrap_or(dictionary)
}

/// `block` deflated against `dictionary` (whose bytes the stream may refer
/// to); `None` if the stream did not end within `compressed_bound` bytes
/// (never seen).
///
/// Each attempt gets a compressor of its own (about 370 KiB, zeroed; a small
/// block that does not fit level 1's codes takes two): zlib's
/// reset clears the hash heads but keeps the window and the chain links, and
/// a reused compressor sealed the same text to other bytes after other
/// blocks (found by the snapshot property test). Two stores given the same
/// batches then wrote different snapshots.
pub(crate) fn compress(block: &[u8], dictionary: &[u8]) -> Option<Box<[u8]>> {
    let quick = (block.len() < QUICK_BELOW)
        .then(|| compress_at(QUICK_LEVEL, block, dictionary))
        .flatten();
    // Fixed codes can pass the bound (9 bits for a byte from 144 up that
    // does not repeat): such a block is compressed at `LEVEL`, which
    // stores it.
    quick.or_else(|| compress_at(LEVEL, block, dictionary))
}

/// `block` deflated at `level`; `None` if the stream did not end within
/// `compressed_bound` bytes.
fn compress_at(level: i32, block: &[u8], dictionary: &[u8]) -> Option<Box<[u8]>> {
    let mut deflate = Deflate::new(level, false, WINDOW_BITS);
    let dictionary = primed_part(dictionary, block.len());
    if !dictionary.is_empty() {
        deflate.set_dictionary(dictionary).ok()?;
    }
    OUTPUT.with_borrow_mut(|out| {
        // Zeroed once, not at every seal; only what a seal writes is copied
        // out. A record longer than a block gets a buffer of its own.
        let bound = compressed_bound(block.len());
        let mut own = Vec::new();
        let out = match bound <= KEPT_OUTPUT {
            true => {
                out.resize(KEPT_OUTPUT, 0);
                out
            }
            false => {
                own.resize(bound, 0);
                &mut own
            }
        };
        match deflate.compress(block, out.get_mut(..bound)?, DeflateFlush::Finish) {
            Ok(Status::StreamEnd) => {}
            _ => return None,
        }
        let written = usize::try_from(deflate.total_out()).ok()?;
        out.get(..written).map(Box::from)
    })
}

/// Output a decoder starts with: a block's claimed length is only trusted
/// as far as its stream bears it out.
const FIRST_OUTPUT: usize = 64 << 10;

/// Decodes blocks one after another, reusing its state (its 32 KiB window
/// included) and the caller's buffers: logs.all decodes a few blocks a query.
#[derive(Default)]
pub(crate) struct Decoder {
    state: Option<Inflate>,
}

impl Decoder {
    /// Leaves in `out` the `len` bytes `compressed` decodes to (against
    /// `dictionary`); false when it is not one whole stream of exactly that
    /// length.
    pub(crate) fn decode_into(
        &mut self,
        compressed: &[u8],
        len: usize,
        dictionary: &[u8],
        out: &mut Vec<u8>,
    ) -> bool {
        out.clear();
        out.resize(len.min(FIRST_OUTPUT), 0);
        let inflate = self
            .state
            .get_or_insert_with(|| Inflate::new(false, WINDOW_BITS));
        inflate.reset(false);
        if !dictionary.is_empty() && inflate.set_dictionary(dictionary).is_err() {
            return false;
        }
        let (mut read, mut at) = (0usize, 0usize);
        loop {
            let (total_in, total_out) = (inflate.total_in(), inflate.total_out());
            let (Some(input), Some(output)) = (compressed.get(read..), out.get_mut(at..)) else {
                return false;
            };
            let status = inflate.decompress(input, output, InflateFlush::NoFlush);
            read += (inflate.total_in() - total_in) as usize;
            at += (inflate.total_out() - total_out) as usize;
            match status {
                Ok(Status::StreamEnd) => break,
                Ok(_) if at == out.len() && out.len() < len => {
                    let grown = out.len().saturating_mul(2).min(len);
                    out.resize(grown, 0);
                }
                _ => return false,
            }
        }
        read == compressed.len() && at == len
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_rng::xorshift as next;

    /// The block `compressed` decodes to, with a decoder of its own.
    fn decompress(compressed: &[u8], len: usize, dictionary: &[u8]) -> Option<Vec<u8>> {
        let mut out = Vec::new();
        Decoder::default()
            .decode_into(compressed, len, dictionary, &mut out)
            .then_some(out)
    }

    fn noise(len: usize, mut seed: u64) -> Vec<u8> {
        (0..len).map(|_| next(&mut seed) as u8).collect()
    }

    /// Words and numbers, as a log message's text runs.
    fn words(len: usize, mut seed: u64) -> Vec<u8> {
        const WORDS: [&str; 7] = ["select", "from", "where", "rows", "ms", "GET", "/rest/v1/"];
        let mut out = Vec::with_capacity(len + 16);
        while out.len() < len {
            let n = next(&mut seed);
            out.extend_from_slice(WORDS[(n % 7) as usize].as_bytes());
            out.extend_from_slice(format!(" {} ", n % 1000).as_bytes());
        }
        out.truncate(len);
        out
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

    /// A block as miniz_oxide 0.9 sealed it before zlib-rs (level 3, its
    /// compressor primed with the dictionary and sync-flushed): the decoder
    /// reads any raw deflate stream against the dictionary, not only its
    /// own compressor's.
    #[test]
    fn a_block_miniz_oxide_sealed_still_decodes() {
        let dictionary = br#"{"request":[{"method":"GET","path":"/rest/v1/todos","headers":{"user_agent":"supabase-js/2.45"}}]}"#;
        let block = br#"{"request":[{"method":"POST","path":"/rest/v1/todos?id=eq.7","headers":{"user_agent":"supabase-js/2.45"}}]}{"request":[{"method":"GET","path":"/rest/v1/todos?select=*","headers":{"user_agent":"supabase-js/2.45"}}]}"#;
        const SEALED: [u8; 52] = [
            0xad, 0xcf, 0xb1, 0x09, 0x00, 0x20, 0x0c, 0x04, 0xc0, 0x7d, 0x2c, 0x6c, 0xad, 0x42,
            0x46, 0x50, 0x70, 0x04, 0xfd, 0x42, 0xb0, 0x11, 0xed, 0x5c, 0xde, 0x05, 0x4c, 0x20,
            0x90, 0x09, 0x8e, 0xbb, 0x7f, 0xa1, 0xe4, 0x2a, 0x12, 0x3c, 0x3a, 0x61, 0xc5, 0xe4,
            0x44, 0x29, 0x19, 0xde, 0x98, 0x68, 0x87, 0x82, 0x95, 0x7a,
        ];
        assert_eq!(
            decompress(&SEALED, block.len(), dictionary).as_deref(),
            Some(&block[..])
        );
        assert_ne!(
            decompress(&SEALED, block.len(), b"").as_deref(),
            Some(&block[..])
        );
    }

    #[test]
    fn a_block_refers_back_into_the_dictionary() {
        let dictionary = noise(8 << 10, 7);
        // Within twice its length of the dictionary's end: matched there.
        let block = dictionary[4200..8100].to_vec();
        let compressed = compress(&block, &dictionary).unwrap();
        assert!(compressed.len() < 64, "{} bytes", compressed.len());
        assert_eq!(
            decompress(&compressed, block.len(), &dictionary),
            Some(block.clone())
        );
        assert_eq!(decompress(&compressed, block.len(), &[]), None);
        // Farther back the compressor was not primed, yet the stream still
        // decodes against the whole dictionary.
        let far = dictionary[100..2100].to_vec();
        let compressed = compress(&far, &dictionary).unwrap();
        assert!(
            compressed.len() > far.len() / 2,
            "{} bytes",
            compressed.len()
        );
        assert_eq!(decompress(&compressed, far.len(), &dictionary), Some(far));
    }

    /// Noise just below `QUICK_BELOW` passes the bound in fixed codes, and
    /// is stored at `LEVEL` instead.
    #[test]
    fn noise_stays_within_the_bound() {
        let small = noise(QUICK_BELOW - 1, 9);
        assert!(compress_at(QUICK_LEVEL, &small, b"dictionary").is_none());
        assert_eq!(
            compress(&small, b"dictionary"),
            compress_at(LEVEL, &small, b"dictionary")
        );
        for len in [
            0,
            1,
            100,
            QUICK_BELOW - 1,
            32 << 10,
            64 << 10,
            (1 << 20) + 7,
        ] {
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

    /// A block compresses to the same bytes whatever the compressor sealed
    /// before: two stores given the same batches write the same snapshot.
    /// (zlib primes its chains with the dictionary's last string read on
    /// into the byte after it, which a reused window holds from the block
    /// before: here the `e` that makes the dictionary's closing `sel` one
    /// more `sele` to walk past.)
    #[test]
    fn a_block_compresses_alike_whatever_was_compressed_before() {
        // Below `QUICK_BELOW` and above: at both levels.
        for (seed, len) in (1..20).flat_map(|seed| [(seed, 6000), (seed, 20_000)]) {
            let mut dictionary = words((8 << 10) - 3, seed);
            dictionary.extend_from_slice(b"sel");
            let mut block = b"E".to_vec();
            block.extend(words(len, seed + 100));
            let fresh = std::thread::scope(|scope| {
                scope
                    .spawn(|| compress(&block, &dictionary).unwrap())
                    .join()
                    .unwrap()
            });
            compress(&b"e".repeat(len), &dictionary).unwrap();
            assert_eq!(
                compress(&block, &dictionary).unwrap(),
                fresh,
                "seed {seed}, {len} bytes"
            );
        }
    }
}
