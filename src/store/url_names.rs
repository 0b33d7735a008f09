//! A table's request URLs, each held once as its origin (`scheme://host[:port]`,
//! held once per table) and the rest. An origin is most of a short URL and
//! is shared by many, so keeping it apart halves the URLs' bytes. A URL's id
//! is that of its key in an `Interner`: the origin's id as one character
//! (1–3 bytes of UTF-8), then the rest. Matching reads a URL put together
//! again (`get`); the URL index reads the origin and the rest as they are.

use std::ops::Range;

use super::columns::chunk_ranges;
use super::{Interner, NameCount, Sym, NONE};

/// Most origins a table tells apart: an origin's id is a character below the
/// surrogates. A URL of one more origin keeps it in its rest, under the
/// empty origin (as if it had none), so it is still held exactly.
const MAX_TABLE_ORIGINS: usize = 0xD800;

/// The empty origin's id (of URLs without one): interned before any other.
pub const EMPTY_ORIGIN: Sym = 0;

/// Most bytes of a key's origin character (`MAX_TABLE_ORIGINS` is below U+D800).
const MARKER_BYTES: usize = 3;

/// Where a URL's origin (`scheme://host[:port]`) ends: 0 for a URL without one.
pub fn origin_end(url: &str) -> usize {
    // The scheme's characters up to the first that is not one: a URL has an
    // origin when that is where its first `://` is. (No searcher is built:
    // this runs for every URL ingested.)
    let bytes = url.as_bytes();
    let scheme_end = bytes
        .iter()
        .position(|&b| !(b.is_ascii_alphanumeric() || b"+.-".contains(&b)))
        .unwrap_or(bytes.len());
    let host_start = scheme_end + 3;
    match bytes.get(scheme_end..host_start) {
        Some(b"://") if scheme_end > 0 => bytes
            .get(host_start..)
            .and_then(|rest| memchr::memchr3(b'/', b'?', b'#', rest))
            .map_or(url.len(), |at| host_start + at),
        _ => 0,
    }
}

#[derive(Default)]
pub struct UrlNames {
    origins: Interner,
    keys: Interner,
    /// Where `intern` puts a key together: as long as the longest URL, and
    /// reused (not the store's: no URL is kept in it).
    key: String,
}

/// The character standing for origin `id` at the start of a key.
fn marker(id: Sym) -> char {
    char::from_u32(id).unwrap_or('\0')
}

/// A URL's key, `marker` then `rest`, into `key`.
fn key_into<'k>(key: &'k mut String, origin: Sym, rest: &str) -> &'k str {
    key.clear();
    key.push(marker(origin));
    key.push_str(rest);
    key
}

impl UrlNames {
    /// The origin id and rest a URL is held as; `None` for an origin not held
    /// yet (with room for it).
    fn split<'u>(&self, url: &'u str) -> (Option<Sym>, &'u str) {
        let (origin, rest) = url.split_at(origin_end(url));
        match self.origins.lookup(origin) {
            Some(id) => (Some(id), rest),
            None if self.origins.len() >= MAX_TABLE_ORIGINS => (Some(EMPTY_ORIGIN), url),
            None => (None, rest),
        }
    }

    pub fn intern(&mut self, url: &str) -> Sym {
        if self.origins.len() == 0 {
            self.origins.intern("");
        }
        let (origin, rest) = match self.split(url) {
            (Some(id), rest) => (id, rest),
            (None, rest) => (self.origins.intern(&url[..url.len() - rest.len()]), rest),
        };
        let mut key = std::mem::take(&mut self.key);
        let id = self.keys.intern(key_into(&mut key, origin, rest));
        self.key = key;
        id
    }

    pub fn intern_opt(&mut self, url: Option<&str>) -> Sym {
        url.map_or(NONE, |url| self.intern(url))
    }

    #[cfg(test)]
    fn lookup(&self, url: &str) -> Option<Sym> {
        match self.split(url) {
            (Some(origin), rest) => {
                let mut key = String::new();
                self.keys.lookup(key_into(&mut key, origin, rest))
            }
            (None, _) => None,
        }
    }

    /// URL `url` put together in `buf`.
    pub fn get<'b>(&self, url: Sym, buf: &'b mut String) -> &'b str {
        buf.clear();
        buf.push_str(self.origins.get(self.origin_of(url)));
        buf.push_str(self.rest_of(url));
        buf
    }

    /// The id of URL `url`'s origin (`EMPTY_ORIGIN` for one without).
    pub fn origin_of(&self, url: Sym) -> Sym {
        self.keys
            .get(url)
            .chars()
            .next()
            .map_or(EMPTY_ORIGIN, Sym::from)
    }

    /// URL `url` past its origin.
    pub fn rest_of(&self, url: Sym) -> &str {
        let key = self.keys.get(url);
        key.char_indices()
            .nth(1)
            .and_then(|(at, _)| key.get(at..))
            .unwrap_or("")
    }

    /// Every origin of the table's URLs.
    pub fn origins(&self) -> &Interner {
        &self.origins
    }

    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// The bytes `urls` add to the keys' text and to the origins' text (an
    /// upper bound: an origin new twice in one batch counts twice),
    /// with how many may be new of each.
    pub(crate) fn text_to_intern<'a>(
        &self,
        urls: impl Iterator<Item = Option<&'a str>>,
        count: NameCount,
    ) -> UrlGrowth {
        let mut growth = UrlGrowth::default();
        // New URLs counted once each (their ids and slots), as interning adds them.
        let mut new = std::collections::HashSet::new();
        let mut key = String::new();
        for url in urls.flatten() {
            // The key's text, and the origin's if it is new.
            let (key_text, origin_text) = match count {
                // The whole URL may be a key (past the most origins).
                NameCount::AllNew => (url.len(), Some(origin_end(url))),
                NameCount::Exact => {
                    if !new.insert(url) {
                        continue;
                    }
                    match self.split(url) {
                        (Some(origin), rest) => {
                            if self.keys.lookup(key_into(&mut key, origin, rest)).is_some() {
                                continue;
                            }
                            (rest.len(), None)
                        }
                        // The whole URL, should the batch reach the most origins first.
                        (None, rest) => (url.len(), Some(url.len() - rest.len())),
                    }
                }
            };
            growth.keys += 1;
            growth.key_text += MARKER_BYTES + key_text;
            if let Some(origin_text) = origin_text {
                growth.origins += 1;
                growth.origin_text += origin_text;
            }
        }
        growth
    }

    /// Upper bound of what `heap_bytes` grows by with `growth`.
    pub(crate) fn growth_for(&self, growth: &UrlGrowth) -> usize {
        self.keys.growth_for(growth.keys, growth.key_text)
            + self
                .origins
                .growth_for(growth.origins + 1, growth.origin_text)
    }

    pub(crate) fn heap_bytes(&self) -> usize {
        self.origins.heap_bytes() + self.keys.heap_bytes()
    }

    /// The origins and the keys, as a snapshot stores them.
    pub(crate) fn parts(&self) -> [&Interner; 2] {
        [&self.origins, &self.keys]
    }

    /// URL names of `origins` and `keys`; `None` unless the empty origin
    /// comes first (when there are URLs) and each key begins with an origin
    /// held.
    pub(crate) fn from_parts(origins: Interner, keys: Interner) -> Option<UrlNames> {
        let empty_first = match origins.len() {
            0 => keys.len() == 0,
            _ => origins.get(EMPTY_ORIGIN).is_empty(),
        };
        let names = UrlNames {
            origins,
            keys,
            key: String::new(),
        };
        let origin_count = names.origins.len();
        let keys_fit = chunk_ranges(0..names.len())
            .all(|urls| keys_begin_with_origins(&names.keys, urls, origin_count));
        (empty_first && keys_fit && origin_count <= MAX_TABLE_ORIGINS).then_some(names)
    }
}

/// Whether the keys of `urls` (ids) each begin with an origin's id below
/// `origins`. Not inlined, as every check a restore makes a piece at a time
/// (`PointsInto`).
#[inline(never)]
fn keys_begin_with_origins(keys: &Interner, urls: Range<usize>, origins: usize) -> bool {
    urls.map(|url| url as Sym).all(|url| {
        keys.get(url)
            .chars()
            .next()
            .is_some_and(|c| (c as usize) < origins)
    })
}

/// What interning a batch's URLs adds (`UrlNames::text_to_intern`).
#[derive(Default)]
pub(crate) struct UrlGrowth {
    pub keys: usize,
    pub key_text: usize,
    pub origins: usize,
    pub origin_text: usize,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_read_back_whole_with_their_origin_apart() {
        let mut names = UrlNames::default();
        let urls = [
            "https://tenant-1.supabase.co/rest/v1/t?id=eq.1",
            "https://tenant-1.supabase.co/rest/v1/t?id=eq.2",
            "/rest/v1/t",
            "",
            "https://tenant-2.supabase.co",
            "\0https://x.co/a",
            "weird scheme://host/x",
        ];
        let ids: Vec<Sym> = urls.iter().map(|u| names.intern(u)).collect();
        let mut buf = String::new();
        for (url, &id) in urls.iter().zip(&ids) {
            assert_eq!(names.get(id, &mut buf), *url);
            assert_eq!(names.lookup(url), Some(id));
            assert_eq!(names.intern(url), id);
            let origin = names.origins().get(names.origin_of(id));
            assert_eq!(format!("{origin}{}", names.rest_of(id)), *url);
        }
        assert_eq!(names.origins().len(), 3, "the empty origin and two hosts");
        assert_eq!(names.origin_of(ids[2]), EMPTY_ORIGIN);
        assert_eq!(names.lookup("https://tenant-3.supabase.co/"), None);
        let [origins, keys] = names.parts();
        let copy = |names: &Interner| {
            let (text, ends) = names.parts();
            Interner::from_parts(text.pieces().collect(), ends.to_vec()).unwrap()
        };
        let restored = UrlNames::from_parts(copy(origins), copy(keys)).unwrap();
        assert_eq!(restored.get(ids[0], &mut buf), urls[0]);
    }

    /// An origin is `scheme://host[:port]` where the first `://` ends a
    /// scheme of letters, digits, `+`, `.` and `-`.
    #[test]
    fn an_origin_ends_where_the_host_after_the_first_scheme_separator_does() {
        let reference = |url: &str| {
            let Some(scheme_end) = url.find("://") else {
                return 0;
            };
            let scheme = &url[..scheme_end];
            if scheme.is_empty()
                || !scheme
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"+.-".contains(&b))
            {
                return 0;
            }
            url[scheme_end + 3..]
                .find(['/', '?', '#'])
                .map_or(url.len(), |at| scheme_end + 3 + at)
        };
        for url in [
            "https://tenant-1.supabase.co/rest/v1/t?id=eq.1",
            "https://h.co?x=1",
            "https://h.co#f",
            "https://h.co",
            "https://",
            "://h.co/a",
            "/rest/v1/t",
            "",
            "h",
            "weird scheme://host/x",
            "a+b.c-d://h:8080/x",
            "http:/h.co/x",
            "http:/",
            "x://y://z/w",
            "é://h/x",
            "https://hé.co/x",
        ] {
            assert_eq!(origin_end(url), reference(url), "{url:?}");
        }
    }

    #[test]
    fn past_the_most_origins_a_url_keeps_its_origin_in_its_rest() {
        let mut names = UrlNames::default();
        names.origins.intern("");
        for n in 1..MAX_TABLE_ORIGINS {
            names.origins.intern(&format!("https://h{n}.co"));
        }
        let known = names.intern("https://h1.co/a");
        let past = names.intern("https://new.co/a");
        let mut buf = String::new();
        assert_eq!(names.get(past, &mut buf), "https://new.co/a");
        assert_eq!(names.origin_of(past), EMPTY_ORIGIN);
        assert_eq!(names.origin_of(known), 1);
        assert_eq!(names.lookup("https://new.co/a"), Some(past));
        assert_eq!(names.origins().len(), MAX_TABLE_ORIGINS);
    }
}
