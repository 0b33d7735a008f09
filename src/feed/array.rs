//! A JSON array read element by element as its bytes arrive. An element is
//! handed on once what follows it (`,` or `]`) has arrived, so that one cut
//! at a piece's end (a number, above all) is never read short, and the bytes
//! held are those of the element still arriving, not the whole file. The
//! same reader reads JSON values one after another with no array around
//! them: objects pretty-printed over several lines, as `jq .` writes them.

use serde_json::value::RawValue;

use crate::error::Result;
use crate::json::is_json_space;

/// The most bytes one value of a stream (`ArrayReader::stream`) is held
/// in before it is whole: more is one object around a whole file (an API
/// answer saved pretty-printed), which would be held whole.
const STREAM_VALUE_BYTES: usize = 64 << 20;

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum Place {
    #[default]
    BeforeOpen,
    BeforeFirst,
    AfterElement,
    AfterComma,
    Closed,
    /// Values one after another, with no array around them.
    Stream,
}

/// Where reading an array has got to.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Progress {
    /// Its `]` has not arrived: more may come (or, at the end, it was cut).
    Open,
    Closed,
    /// What is there is not a JSON array: why, naming the entry (1-based).
    Broken(String),
}

#[derive(Default)]
pub(super) struct ArrayReader {
    unread: Vec<u8>,
    place: Place,
    /// Elements handed on so far.
    elements: usize,
    /// Unread bytes wanted before an element is tried again: it ran past
    /// the end of what had arrived with half as many (an element longer
    /// than a piece is parsed a few times, not once per piece).
    retry_at: usize,
}

impl ArrayReader {
    /// A reader of JSON values one after another (no `[`, `,` or `]`).
    pub(super) fn stream() -> ArrayReader {
        ArrayReader {
            place: Place::Stream,
            ..ArrayReader::default()
        }
    }

    /// Whether it reads values one after another rather than an array.
    pub(super) fn is_stream(&self) -> bool {
        self.place == Place::Stream
    }

    pub(super) fn push(&mut self, bytes: &[u8]) {
        self.unread.extend_from_slice(bytes);
    }

    /// Hands each whole element that has arrived to `each`. `input_end`: no
    /// more bytes arrive (`Some(cut)`: the input broke off), and an element
    /// not yet whole stays unread.
    pub(super) fn read(
        &mut self,
        input_end: Option<bool>,
        each: &mut dyn FnMut(&[u8]) -> Result<()>,
    ) -> Result<Progress> {
        let at_end = input_end.is_some();
        if !at_end && self.unread.len() < self.retry_at {
            return Ok(Progress::Open);
        }
        self.retry_at = 0;
        let mut at = 0;
        let progress = loop {
            let rest = self.unread.get(at..).unwrap_or_default();
            let blank = rest.iter().take_while(|&&b| is_json_space(b)).count();
            at += blank;
            let rest = rest.get(blank..).unwrap_or_default();
            let Some(&next) = rest.first() else {
                break Progress::Open;
            };
            let entry = self.elements + 1;
            match (self.place, next) {
                (Place::Closed, _) => {
                    break Progress::Broken("it goes on after its closing `]`".into())
                }
                (Place::BeforeOpen, b'[') => self.place = Place::BeforeFirst,
                (Place::BeforeOpen, _) => {
                    break Progress::Broken("it does not begin with `[`".into())
                }
                (Place::BeforeFirst | Place::AfterElement, b']') => self.place = Place::Closed,
                (Place::AfterElement, b',') => self.place = Place::AfterComma,
                (Place::AfterElement, _) => {
                    break Progress::Broken(format!(
                        "a `,` or `]` is missing after entry {}",
                        self.elements
                    ))
                }
                (Place::BeforeFirst | Place::AfterComma | Place::Stream, _) => {
                    let mut values =
                        serde_json::Deserializer::from_slice(rest).into_iter::<&RawValue>();
                    match values.next() {
                        Some(Ok(element)) => {
                            let end = values.byte_offset();
                            let after = rest.get(end..).unwrap_or_default();
                            // A value that ends in a closing mark is whole; in an
                            // array, the end of what arrived is still a cut file's.
                            let ends_closed =
                                matches!(element.get().as_bytes().last(), Some(b'}' | b']' | b'"'));
                            // A number last in a stream is whole at its end, unless the input broke off there.
                            let whole =
                                self.is_stream() && (ends_closed || input_end == Some(false));
                            if after.iter().all(|&b| is_json_space(b)) && !whole {
                                // What follows has not arrived: whole or not is not known yet.
                                self.retry_at = self.unread.len() - at + 1;
                                break Progress::Open;
                            }
                            each(element.get().as_bytes())?;
                            self.elements += 1;
                            if !self.is_stream() {
                                self.place = Place::AfterElement;
                            }
                            at += end;
                            continue;
                        }
                        // Values one after another: one that cannot be whole within
                        // the bound is a whole file in one object, held whole.
                        Some(Err(e))
                            if e.is_eof()
                                && self.is_stream()
                                && rest.len() > STREAM_VALUE_BYTES =>
                        {
                            break Progress::Broken(format!(
                                "entry {entry} is over {} MiB and not yet whole: one object around the whole file? Give its entries one a line (`jq -c '.result[]'`)",
                                STREAM_VALUE_BYTES >> 20
                            ));
                        }
                        // A number cut at the end is an error at the last byte ("3.", "1e").
                        Some(Err(e)) if e.is_eof() || (!at_end && at_last_byte(rest, &e)) => {
                            self.retry_at = 2 * rest.len();
                            break Progress::Open;
                        }
                        Some(Err(e)) => break Progress::Broken(format!("entry {entry}: {e}")),
                        None => break Progress::Open,
                    }
                }
            }
            at += 1;
        };
        self.unread.drain(..at.min(self.unread.len()));
        Ok(match (progress, self.place) {
            (Progress::Open, Place::Closed) => Progress::Closed,
            // Values one after another end wherever one does.
            (Progress::Open, Place::Stream) if at_end && self.unread.is_empty() => Progress::Closed,
            (progress, _) => progress,
        })
    }
}

/// Whether `error` was found at the last byte of `text` (serde_json counts
/// lines from 1 and a line's bytes from 1).
fn at_last_byte(text: &[u8], error: &serde_json::Error) -> bool {
    let line = 1 + memchr::memchr_iter(b'\n', text).count();
    let column = match memchr::memrchr(b'\n', text) {
        Some(end) => text.len() - end - 1,
        None => text.len(),
    };
    (error.line(), error.column()) == (line, column)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The elements read from `text` pushed in pieces of `piece` bytes.
    fn read_in_pieces(text: &str, piece: usize) -> (Vec<String>, Progress) {
        read_with(ArrayReader::default(), text, piece)
    }

    fn read_with(mut reader: ArrayReader, text: &str, piece: usize) -> (Vec<String>, Progress) {
        let mut read = Vec::new();
        let mut each = |element: &[u8]| {
            read.push(String::from_utf8_lossy(element).into_owned());
            Ok(())
        };
        let mut progress = Progress::Open;
        for chunk in text.as_bytes().chunks(piece.max(1)) {
            reader.push(chunk);
            progress = reader.read(None, &mut each).unwrap();
            if matches!(progress, Progress::Broken(_)) {
                return (read, progress);
            }
        }
        let progress = match progress {
            Progress::Open => reader.read(Some(false), &mut each).unwrap(),
            done => done,
        };
        (read, progress)
    }

    #[test]
    fn elements_are_read_whole_however_the_bytes_arrive() {
        let text = " [ 12 , {\"a\":[1,2,\"]\"]}\n,\"café\", [ ] , 3.5e1 ]\n ";
        let expected = ["12", "{\"a\":[1,2,\"]\"]}", "\"café\"", "[ ]", "3.5e1"];
        for piece in 1..=text.len() {
            let (read, progress) = read_in_pieces(text, piece);
            assert_eq!(read, expected, "{piece}");
            assert_eq!(progress, Progress::Closed, "{piece}");
        }
        assert_eq!(read_in_pieces("[]", 1), (vec![], Progress::Closed));
    }

    /// Values one after another (`jq .` output) are read whole at any
    /// split; one cut off at the end is left out, and the reading is open.
    #[test]
    fn values_one_after_another_are_read_as_a_stream() {
        let text = "{\n  \"a\": 1,\n  \"b\": \"}\"\n}\n{\n  \"a\": [2]\n}\n  12 {\"c\":3}\n";
        let expected = [
            "{\n  \"a\": 1,\n  \"b\": \"}\"\n}",
            "{\n  \"a\": [2]\n}",
            "12",
            "{\"c\":3}",
        ];
        for piece in 1..=text.len() {
            let (read, progress) = read_with(ArrayReader::stream(), text, piece);
            assert_eq!(read, expected, "{piece}");
            assert_eq!(progress, Progress::Closed, "{piece}");
        }
        let cut = &text[..text.len() - 5];
        for piece in [1, 7, cut.len()] {
            let (read, progress) = read_with(ArrayReader::stream(), cut, piece);
            assert_eq!((read.len(), progress), (3, Progress::Open), "{piece}");
        }
        // An object is handed on once its `}` arrives; a number waits for what follows it.
        let mut reader = ArrayReader::stream();
        let read = std::cell::Cell::new(0);
        let mut count = |_: &[u8]| {
            read.set(read.get() + 1);
            Ok(())
        };
        reader.push(b"{\"a\": 1}");
        reader.read(None, &mut count).unwrap();
        assert_eq!(read.get(), 1);
        reader.push(b"\n12");
        reader.read(None, &mut count).unwrap();
        assert_eq!(read.get(), 1);
        // At the end, a last number is whole, unless the input broke off there.
        let progress = reader.read(Some(true), &mut count).unwrap();
        assert_eq!((read.get(), progress), (1, Progress::Open));
        reader.read(Some(false), &mut count).unwrap();
        assert_eq!(read.get(), 2);
    }

    /// A number at the end of what has arrived is not read until what
    /// follows it has (it read `1` of `12`); at the end it is left out.
    #[test]
    fn an_element_at_the_end_waits_for_what_follows() {
        assert_eq!(
            read_in_pieces("[1, 12", 7),
            (vec!["1".into()], Progress::Open)
        );
        assert_eq!(
            read_in_pieces("[1, 12", 1),
            (vec!["1".into()], Progress::Open)
        );
        assert_eq!(
            read_in_pieces("[1, -1.5e+3", 1),
            (vec!["1".into()], Progress::Open)
        );
    }

    #[test]
    fn what_is_not_an_array_is_named_at_its_entry() {
        for (text, read, why) in [
            ("[1 2]", 1, "a `,` or `]` is missing after entry 1"),
            ("[1,]", 1, "entry 2: expected value at line 1 column 1"),
            ("[1,\"\u{1}\"]", 1, "entry 2: control character"),
            ("[1] x", 1, "it goes on after its closing `]`"),
            ("[\"a\"\u{c},1]", 1, "a `,` or `]` is missing after entry 1"),
        ] {
            for piece in [1, 3, text.len()] {
                let (elements, progress) = read_in_pieces(text, piece);
                assert_eq!(elements.len(), read, "{text}");
                assert!(
                    matches!(&progress, Progress::Broken(reason) if reason.starts_with(why)),
                    "{text} in pieces of {piece}: {progress:?}"
                );
            }
        }
        let mut reader = ArrayReader::default();
        reader.push(b"[\"caf\xe9\"]");
        let progress = reader.read(None, &mut |_| Ok(())).unwrap();
        assert!(
            matches!(&progress, Progress::Broken(reason) if reason.contains("invalid unicode")),
            "{progress:?}"
        );
    }

    /// An element longer than many pieces is tried again only as the bytes
    /// held double, not at every piece.
    #[test]
    fn a_long_element_is_not_parsed_at_every_piece() {
        let long = format!("[\"{}\"]", "x".repeat(1 << 20));
        let mut reader = ArrayReader::default();
        let mut tries = 0;
        for chunk in long.as_bytes().chunks(1024) {
            reader.push(chunk);
            if reader.unread.len() >= reader.retry_at {
                tries += 1;
            }
            reader.read(None, &mut |_| Ok(())).unwrap();
        }
        assert!(tries < 30, "{tries} tries");
        assert_eq!(
            reader.read(Some(false), &mut |_| Ok(())).unwrap(),
            Progress::Closed
        );
    }
}
