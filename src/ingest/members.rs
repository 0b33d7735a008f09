//! An entry's top-level members read one at a time: each key, then its value
//! read by serde_json where it starts, which also says where it ends. So a
//! value can be read as records and kept as its text in one pass, where
//! `RawValue` would skip it first and a second parse read it again.
//!
//! It reads only what a whole-entry parse accepts, the same way, or gives up
//! (`None`): the caller then reads the entry as before, which says what is
//! wrong as it always did. A key named twice is the caller's to refuse, as
//! the fields it reads decide.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserializer, Visitor};
use serde::Deserialize;

/// A member's key, borrowed from the entry when it holds no escape (serde's
/// own `Cow<str>` copies every one).
struct Key<'a>(Cow<'a, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a key")
            }
            fn visit_borrowed_str<E: de::Error>(self, key: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Borrowed(key)))
            }
            fn visit_str<E: de::Error>(self, key: &str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(key.to_owned())))
            }
        }
        deserializer.deserialize_str(KeyVisitor)
    }
}

pub(super) struct Members<'a> {
    raw: &'a str,
    /// Where the reader is: at a key, a value, a `,` or the closing `}`.
    at: usize,
    first: bool,
}

fn is_json_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

impl<'a> Members<'a> {
    /// The members of `raw`, which starts as an object does; that it is one,
    /// with nothing but whitespace after it, is checked as it is read.
    pub(super) fn of(raw: &'a str) -> Option<Members<'a>> {
        raw.starts_with('{').then_some(Members {
            raw,
            at: 1,
            first: true,
        })
    }

    fn skip_space(&mut self) {
        let rest = self.raw.as_bytes().get(self.at..).unwrap_or_default();
        self.at += rest.iter().take_while(|&&b| is_json_space(b)).count();
    }

    fn eat(&mut self, byte: u8) -> bool {
        self.skip_space();
        let ate = self.raw.as_bytes().get(self.at) == Some(&byte);
        self.at += usize::from(ate);
        ate
    }

    /// The next member's key (`Some(None)` past the last member), with the
    /// reader at its value.
    pub(super) fn next_key(&mut self) -> Option<Option<Cow<'a, str>>> {
        if self.eat(b'}') {
            self.skip_space();
            return (self.at == self.raw.len()).then_some(None);
        }
        if !std::mem::take(&mut self.first) && !self.eat(b',') {
            return None;
        }
        self.skip_space();
        if self.raw.as_bytes().get(self.at) != Some(&b'"') {
            return None;
        }
        let (Key(key), _) = self.value::<Key<'a>>()?;
        self.eat(b':').then_some(Some(key))
    }

    /// The value the reader is at, read as `T`, with its text.
    pub(super) fn value<T: Deserialize<'a>>(&mut self) -> Option<(T, &'a str)> {
        self.skip_space();
        let rest = self.raw.get(self.at..)?;
        let mut values = serde_json::Deserializer::from_str(rest).into_iter::<T>();
        let value = values.next()?.ok()?;
        let text = rest.get(..values.byte_offset())?;
        self.at += text.len();
        Some((value, text))
    }
}
