//! A cursor over one entry's JSON text that checks it as it goes: what an
//! edge entry's one-pass read (`edge_entry_in_one_pass`) walks, in place of
//! serde_json's generic reader, whose per-token work took most of an edge
//! entry's reading in wasm. It accepts only what serde_json accepts, and
//! reads it the same way, or gives up (`None`; the caller gives up on some
//! serde_json reads, such as a record written as an array): the caller
//! then reads the entry with serde_json, which says what is wrong as it
//! always did.
//!
//! Values not read are skipped as serde_json skips them: strings without
//! control characters and with valid escapes (a `\u` escape's four hex
//! digits, whatever they stand for), numbers by JSON's grammar (of any
//! size), the three literals, and arrays and objects nested to any depth.

use std::borrow::Cow;

use crate::json::is_json_space;

pub(super) struct Scan<'a> {
    text: &'a str,
    at: usize,
}

/// A string's text between its quotes, and whether it holds an escape.
#[derive(Clone, Copy)]
pub(super) struct Quoted<'a> {
    inner: &'a str,
    escaped: bool,
}

impl<'a> Quoted<'a> {
    /// The string it stands for: its own bytes when it holds no escape,
    /// else as serde_json decodes it (`None` where serde_json refuses it,
    /// such as a lone surrogate).
    pub(super) fn decoded(self) -> Option<Cow<'a, str>> {
        if !self.escaped {
            return Some(Cow::Borrowed(self.inner));
        }
        serde_json::from_str::<String>(&format!("\"{}\"", self.inner))
            .ok()
            .map(Cow::Owned)
    }
}

/// The bytes of a word (its eight read little-endian) that end a run of a
/// string's plain bytes, as their top bits: a quote, a backslash, or a
/// control character. The lowest bit set is exact (`x - 0x01…` borrows into
/// a byte's top bit only from a byte below the one subtracted, or from a
/// borrow that such a byte, a lower one, began), so the first byte that
/// ends the run is `trailing_zeros / 8`; higher bits may be set wrongly.
fn run_ends(word: u64) -> u64 {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const TOPS: u64 = 0x8080_8080_8080_8080;
    let below = |x: u64, n: u64| x.wrapping_sub(ONES * n) & !x;
    let quote = word ^ (ONES * u64::from(b'"'));
    let backslash = word ^ (ONES * u64::from(b'\\'));
    (below(word, 0x20) | below(quote, 1) | below(backslash, 1)) & TOPS
}

/// Where the run of plain string bytes from `at` ends: at a quote, a
/// backslash or a control character, or at the end. In wasm, sixteen bytes
/// a step with SIMD, then eight a step.
fn run_end(bytes: &[u8], at: usize) -> usize {
    #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
    let at = match simd::run_end(bytes, at) {
        Ok(end) => return end,
        Err(from) => from,
    };
    let rest = bytes.get(at..).unwrap_or_default();
    let mut words = rest.chunks_exact(8);
    for (index, word) in words.by_ref().enumerate() {
        let ends = run_ends(u64::from_le_bytes(word.try_into().unwrap_or_default()));
        if ends != 0 {
            return at + index * 8 + ends.trailing_zeros() as usize / 8;
        }
    }
    let tail = words.remainder();
    let plain = tail
        .iter()
        .take_while(|&&b| b != b'"' && b != b'\\' && b >= 0x20)
        .count();
    bytes.len() - tail.len() + plain
}

#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
mod simd {
    use std::arch::wasm32::{u8x16_bitmask, u8x16_eq, u8x16_lt, u8x16_splat, v128, v128_or};

    /// `Ok(end)`: the run's end, within the whole 16-byte chunks from `at`;
    /// `Err(from)`: it is past them, and the 8-byte steps go on from
    /// `from`, where they end.
    pub(super) fn run_end(bytes: &[u8], at: usize) -> Result<usize, usize> {
        let rest = bytes.get(at..).unwrap_or_default();
        let mut chunks = rest.chunks_exact(16);
        for (index, chunk) in chunks.by_ref().enumerate() {
            let Ok(v) = bytemuck::try_pod_read_unaligned::<v128>(chunk) else {
                return Err(at + index * 16);
            };
            let quote = u8x16_eq(v, u8x16_splat(b'"'));
            let backslash = u8x16_eq(v, u8x16_splat(b'\\'));
            let control = u8x16_lt(v, u8x16_splat(0x20));
            let stops = u8x16_bitmask(v128_or(v128_or(quote, backslash), control));
            if stops != 0 {
                return Ok(at + index * 16 + stops.trailing_zeros() as usize);
            }
        }
        Err(bytes.len() - chunks.remainder().len())
    }
}

/// The kinds of the containers `Scan::skip` is inside (object or array),
/// innermost last: the first 128 levels as bits, any deeper in a list.
#[derive(Default)]
struct Nesting {
    depth: usize,
    bits: u128,
    deeper: Vec<bool>,
}

impl Nesting {
    fn push(&mut self, object: bool) {
        if self.depth < 128 {
            self.bits = self.bits & !(1 << self.depth) | u128::from(object) << self.depth;
        } else {
            self.deeper.push(object);
        }
        self.depth += 1;
    }

    /// The innermost container: `Some(true)` an object, `None` outside any.
    fn top(&self) -> Option<bool> {
        let depth = self.depth.checked_sub(1)?;
        match depth < 128 {
            true => Some(self.bits >> depth & 1 == 1),
            false => self.deeper.last().copied(),
        }
    }

    fn pop(&mut self) {
        self.depth = self.depth.saturating_sub(1);
        if self.depth >= 128 {
            self.deeper.pop();
        }
    }
}

impl<'a> Scan<'a> {
    /// A cursor at the start of `text`.
    pub(super) fn new(text: &'a str) -> Scan<'a> {
        Scan { text, at: 0 }
    }

    fn bytes(&self) -> &'a [u8] {
        self.text.as_bytes()
    }

    /// The next byte that is not whitespace, which the cursor is then at.
    #[inline]
    pub(super) fn peek(&mut self) -> Option<u8> {
        match *self.bytes().get(self.at)? {
            b if !is_json_space(b) => Some(b),
            _ => self.peek_past_space(),
        }
    }

    #[cold]
    fn peek_past_space(&mut self) -> Option<u8> {
        let bytes = self.bytes();
        while let Some(&b) = bytes.get(self.at) {
            if !is_json_space(b) {
                return Some(b);
            }
            self.at += 1;
        }
        None
    }

    /// Steps over `byte` if it is the next one but whitespace.
    #[inline]
    pub(super) fn eat(&mut self, byte: u8) -> bool {
        let ate = self.peek() == Some(byte);
        self.at += usize::from(ate);
        ate
    }

    /// Whether only whitespace is left.
    pub(super) fn at_end(&mut self) -> bool {
        self.peek().is_none()
    }

    /// The string the cursor is at (after whitespace).
    #[inline]
    pub(super) fn string(&mut self) -> Option<Quoted<'a>> {
        if !self.eat(b'"') {
            return None;
        }
        let bytes = self.bytes();
        let start = self.at;
        let mut at = start;
        let mut escaped = false;
        loop {
            at = run_end(bytes, at);
            match *bytes.get(at)? {
                b'"' => break,
                b'\\' => {
                    escaped = true;
                    at += match *bytes.get(at + 1)? {
                        b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => 2,
                        b'u' => {
                            let hex = bytes.get(at + 2..at + 6)?;
                            hex.iter().all(u8::is_ascii_hexdigit).then_some(6)?
                        }
                        _ => return None,
                    };
                }
                _ => return None,
            }
        }
        let inner = self.text.get(start..at)?;
        self.at = at + 1;
        Some(Quoted { inner, escaped })
    }

    /// A member's key and its colon, with the cursor at its value.
    #[inline]
    pub(super) fn key(&mut self) -> Option<Quoted<'a>> {
        let key = self.string()?;
        self.eat(b':').then_some(key)
    }

    /// Steps to the next member of the object the cursor is in, after `{`
    /// (`first`) or after a member's value: its key, decoded (serde_json
    /// matches keys as they decode, and refuses the entry for one that does
    /// not), or `Some(None)` past the closing `}`.
    #[inline]
    pub(super) fn next_member(&mut self, first: bool) -> Option<Option<Cow<'a, str>>> {
        if self.eat(b'}') {
            return Some(None);
        }
        if !first && !self.eat(b',') {
            return None;
        }
        self.key()?.decoded().map(Some)
    }

    /// Steps to the next element of the array the cursor is in, after `[`
    /// (`first`) or after an element: whether there is one (the cursor at
    /// it), false past the closing `]`.
    #[inline]
    pub(super) fn next_element(&mut self, first: bool) -> Option<bool> {
        if self.eat(b']') {
            return Some(false);
        }
        (first || self.eat(b',')).then_some(true)
    }

    /// The literal `word` (`true`, `false`, `null`), stepped over.
    #[inline]
    fn literal(&mut self, word: &str) -> Option<()> {
        let end = self.at + word.len();
        (self.bytes().get(self.at..end)? == word.as_bytes()).then(|| self.at = end)
    }

    /// Steps over `null` if the next value is one.
    #[inline]
    pub(super) fn null(&mut self) -> bool {
        self.peek() == Some(b'n') && self.literal("null").is_some()
    }

    /// A number by JSON's grammar: `-`, an integer part without leading
    /// zeros, then a fraction and an exponent, each with digits.
    fn number(&mut self) -> Option<()> {
        let bytes = self.bytes();
        let digits = |at: usize| {
            let run = bytes.get(at..).unwrap_or_default();
            run.iter().take_while(|b| b.is_ascii_digit()).count()
        };
        let mut at = self.at + usize::from(bytes.get(self.at) == Some(&b'-'));
        at += match *bytes.get(at)? {
            b'0' => 1,
            b'1'..=b'9' => digits(at),
            _ => return None,
        };
        if bytes.get(at) == Some(&b'.') {
            let fraction = digits(at + 1);
            (fraction > 0).then_some(())?;
            at += 1 + fraction;
        }
        if matches!(bytes.get(at), Some(b'e' | b'E')) {
            at += 1 + usize::from(matches!(bytes.get(at + 1), Some(b'+' | b'-')));
            let exponent = digits(at);
            (exponent > 0).then_some(())?;
            at += exponent;
        }
        self.at = at;
        Some(())
    }

    /// Steps over the value the cursor is at, checking it; returns its text.
    pub(super) fn skip(&mut self) -> Option<&'a str> {
        self.peek()?;
        let start = self.at;
        let mut nesting = Nesting::default();
        loop {
            // At a value.
            match self.peek()? {
                b'{' => {
                    self.at += 1;
                    if !self.eat(b'}') {
                        nesting.push(true);
                        self.key()?;
                        continue;
                    }
                }
                b'[' => {
                    self.at += 1;
                    if !self.eat(b']') {
                        nesting.push(false);
                        continue;
                    }
                }
                b'"' => {
                    self.string()?;
                }
                b't' => self.literal("true")?,
                b'f' => self.literal("false")?,
                b'n' => self.literal("null")?,
                _ => self.number()?,
            }
            // After a value: close what it ends, up to the next one.
            loop {
                match nesting.top() {
                    None => return self.text.get(start..self.at),
                    Some(true) if self.eat(b',') => {
                        self.key()?;
                        break;
                    }
                    Some(false) if self.eat(b',') => break,
                    Some(object) => {
                        self.eat(if object { b'}' } else { b']' }).then_some(())?;
                        nesting.pop();
                    }
                }
            }
        }
    }

    /// The text from `start` (a place the cursor was at) to the cursor.
    pub(super) fn since(&self, start: usize) -> Option<&'a str> {
        self.text.get(start..self.at)
    }

    /// Where the cursor is, after whitespace.
    pub(super) fn here(&mut self) -> usize {
        self.peek();
        self.at
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether serde_json reads `text` as one value, and where the scan
    /// says it is one.
    fn skips_as_serde(text: &str) {
        let serde = serde_json::from_str::<serde::de::IgnoredAny>(text).is_ok();
        let mut scan = Scan::new(text);
        let skipped = scan.skip().is_some() && scan.at_end();
        assert_eq!(skipped, serde, "{text:?}");
    }

    #[test]
    fn values_skip_where_serde_json_reads_them() {
        let values = [
            "0",
            "-0",
            "1",
            "-12.5e+3",
            "1E9",
            "0.5",
            "2e400",
            "01",
            "1.",
            ".5",
            "-",
            "1e",
            "1e+",
            "+1",
            "--1",
            "0x1",
            "true",
            "false",
            "null",
            "tru",
            "nul",
            "truex",
            "\"\"",
            "\"a\"",
            "\"\\n\\t\\\"\\\\\\/\\b\\f\\r\"",
            "\"\\u00e9\\ud800\"",
            "\"\\u00g9\"",
            "\"\\x\"",
            "\"a\tb\"",
            "\"a\u{1}\"",
            "\"é ünïcødé 🎉\"",
            "\"abcdefghijklmnopqrstuvwxyz\\\"x\"",
            "\"unterminated",
            "[]",
            "{}",
            "[ ]",
            "{ }",
            "[1,2]",
            "[1,]",
            "[,1]",
            "[1 2]",
            "{\"a\":1}",
            "{\"a\":1,}",
            "{\"a\" 1}",
            "{a:1}",
            "{\"a\":}",
            "{\"a\":[{}]}",
            "[{]",
            "[}",
            "{]",
            "[[[[]]]]",
            "[[[[]]]",
            " [ 1 , { \"k\" : [ null ] } ] ",
            "{\"a\":1}}",
            "[1]]",
            "\"a\" \"b\"",
            "",
        ];
        for value in values {
            skips_as_serde(value);
        }
        for depth in [127, 128, 129, 300] {
            skips_as_serde(&format!("{}{}", "[".repeat(depth), "]".repeat(depth)));
            skips_as_serde(&format!(
                "{}{}",
                "[{\"a\":".repeat(depth),
                "}]".repeat(depth)
            ));
            skips_as_serde(&format!("{}{}", "[".repeat(depth), "}".repeat(depth)));
        }
    }

    #[test]
    fn a_run_ends_at_the_first_quote_backslash_or_control_byte_in_any_place() {
        let plain = |b: u8| b != b'"' && b != b'\\' && b >= 0x20;
        for len in 1..20 {
            for place in 0..len {
                for byte in 0..=255u8 {
                    let mut text: Vec<u8> = (0..len).map(|i| b"ab\xffcd \x7fz"[i % 8]).collect();
                    text[place] = byte;
                    let first = if plain(byte) { len } else { place };
                    assert_eq!(run_end(&text, 0), first, "{text:?}");
                    // A later stop does not move the first.
                    text[len - 1] = b'"';
                    let first = first.min(len - 1);
                    assert_eq!(run_end(&text, 0), first, "{text:?}");
                }
            }
        }
    }

    #[test]
    fn strings_decode_as_serde_json_decodes_them() {
        for text in [
            "\"plain\"",
            "\"a\\u0062c\"",
            "\"\\ud800\"",
            "\"\\ud83c\\udf89\"",
        ] {
            let quoted = Scan::new(text).string().and_then(Quoted::decoded);
            let serde = serde_json::from_str::<String>(text).ok();
            assert_eq!(quoted.map(Cow::into_owned), serde, "{text}");
        }
    }
}
