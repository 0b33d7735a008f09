//! An interner's text, held in pieces that never move. Each piece holds
//! whole values and grows (by `grown`'s rule) up to `PIECE_BYTES`; a value
//! that does not fit starts the next piece. A large interner's text (a
//! table's URLs: 8 MiB in a full object) grown as one `String` left each old
//! copy free in a wasm memory that never shrinks. A snapshot still holds the
//! text whole, and a restored text is one piece (values are added to it only
//! while it is under a piece's size).

use std::ops::Range;

use super::columns::{capacity_bound, grow, grown, VEC_BYTES};

/// Most bytes a piece grows to (a longer value has a piece of its own).
const PIECE_BYTES: usize = 256 << 10;
/// Bytes a piece's `String` and its start take in their lists.
const PIECE_SLOT: usize = VEC_BYTES + 4;

#[derive(Default)]
pub(crate) struct PiecedText {
    pieces: Vec<String>,
    /// Where each piece begins in the whole text.
    starts: Vec<u32>,
    len: usize,
}

impl PiecedText {
    /// A restored text, as one piece.
    pub(crate) fn whole(text: String) -> PiecedText {
        let len = text.len();
        PiecedText {
            pieces: vec![text],
            starts: vec![0],
            len,
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The pieces in order: the whole text.
    pub(crate) fn pieces(&self) -> impl Iterator<Item = &str> {
        self.pieces.iter().map(String::as_str)
    }

    /// The pieces in order, each with where it begins in the whole text.
    pub(crate) fn pieces_with_starts(&self) -> impl Iterator<Item = (usize, &str)> {
        let starts = self.starts.iter().map(|&start| start as usize);
        starts.zip(self.pieces.iter().map(String::as_str))
    }

    /// The piece holding byte `at`, and where it begins.
    fn piece_at(&self, at: usize) -> Option<(&str, usize)> {
        let k = self
            .starts
            .partition_point(|&start| start as usize <= at)
            .checked_sub(1)?;
        let base = *self.starts.get(k)? as usize;
        let piece = self.pieces.get(k)?;
        (at < base + piece.len()).then_some((piece.as_str(), base))
    }

    /// The text of `range` (of one value, so in one piece).
    pub(crate) fn get(&self, range: Range<usize>) -> Option<&str> {
        if range.start == range.end {
            return Some("");
        }
        let (piece, base) = self.piece_at(range.start)?;
        piece.get(range.start - base..range.end.checked_sub(base)?)
    }

    /// Appends `value` where it fits whole: the last piece, or a new one.
    pub(crate) fn push(&mut self, value: &str) {
        let fits = self
            .pieces
            .last()
            .is_some_and(|piece| piece.len() + value.len() <= PIECE_BYTES);
        if !fits {
            grow(&mut self.pieces, 1);
            grow(&mut self.starts, 1);
            self.starts.push(self.len as u32);
            self.pieces.push(String::new());
        }
        if let Some(piece) = self.pieces.last_mut() {
            if piece.len() + value.len() > piece.capacity() {
                let needed = piece.len() + value.len();
                let target = grown(piece.len(), piece.capacity(), value.len())
                    .min(PIECE_BYTES)
                    .max(needed);
                piece.reserve_exact(target - piece.len());
            }
            piece.push_str(value);
        }
        self.len += value.len();
    }

    pub(crate) fn heap_bytes(&self) -> usize {
        self.pieces.iter().map(String::capacity).sum::<usize>()
            + self.pieces.capacity().max(self.starts.capacity()) * PIECE_SLOT
    }

    /// Upper bound of what `heap_bytes` grows by when `values` values of
    /// `text` bytes in all are pushed: each piece grows to at most an eighth
    /// more than it holds (the last one held, by at most an eighth of its
    /// room besides), and each value may start a piece.
    pub(crate) fn growth_for(&self, values: usize, text: usize) -> usize {
        if values == 0 {
            return 0;
        }
        let last_room = self
            .pieces
            .last()
            .map_or(0, String::capacity)
            .min(PIECE_BYTES);
        let list = self.pieces.capacity().max(self.starts.capacity());
        let list_growth = capacity_bound(list, self.pieces.len() + values) - list;
        text + text / 8 + values + last_room / 8 + 1 + list_growth * PIECE_SLOT
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_never_straddle_pieces_and_read_back_whole() {
        let mut text = PiecedText::whole("restored".to_owned());
        let mut ranges: Vec<Range<usize>> = Vec::new();
        ranges.push(0..8);
        let values: Vec<String> = (0..40_000)
            .map(|i| match i % 1000 {
                0 => "é".repeat(PIECE_BYTES / 2 + i % 7),
                1 => String::new(),
                _ => format!("/rest/v1/items?id=eq.{i}"),
            })
            .collect();
        for value in &values {
            let start = text.len();
            let predicted = text.heap_bytes() + text.growth_for(1, value.len());
            text.push(value);
            assert!(
                text.heap_bytes() <= predicted,
                "growth for {} bytes",
                value.len()
            );
            ranges.push(start..text.len());
        }
        assert_eq!(text.get(ranges[0].clone()), Some("restored"));
        for (value, range) in values.iter().zip(&ranges[1..]) {
            assert_eq!(text.get(range.clone()), Some(value.as_str()));
        }
        assert!(text.pieces.len() > 40, "{} pieces", text.pieces.len());
        assert!(text
            .pieces
            .iter()
            .skip(1)
            .all(|p| p.capacity() <= PIECE_BYTES || p.len() == p.capacity()));
        let joined: String = text.pieces().collect();
        assert_eq!(joined.len(), text.len());
        assert_eq!(
            text.get(ranges[1001].start + 1..ranges[1001].end),
            None,
            "inside an é"
        );
    }
}
