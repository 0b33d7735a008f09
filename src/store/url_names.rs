//! A table's request URLs, each held once as its origin (`scheme://host[:port]`),
//! its directory (the path up to its last `/`) and the rest. Origins and
//! directories are held once per table: an origin is most of a short URL and
//! is shared by many, and so is a directory (`/rest/v1/`, `/auth/v1/`,
//! `/storage/v1/object/public/images/`), so keeping both apart leaves a
//! URL's own bytes, most often a table name and a query, or a file name.
//! A URL's id is that of its key in an `Interner`: the origin's id as one
//! character (1–3 bytes of UTF-8), the directory's id as another, then the
//! tail. Matching reads a URL put together again (`get`); the URL index
//! reads the origin and the rest (directory and tail) apart (`rest_into`).

use std::ops::Range;

use super::columns::chunk_ranges;
use super::{Estimate, Interner, Sym, NONE};

/// Most origins, and most directories, a table tells apart: an id is a
/// character below the surrogates. A URL of one more origin is its own tail,
/// under the empty origin and the empty directory, and one of one more
/// directory keeps its directory in its tail, under the empty directory, so
/// it is still held exactly.
const MAX_TABLE_ORIGINS: usize = 0xD800;
const MAX_TABLE_DIRECTORIES: usize = 0xD800;

/// The empty origin's id (of URLs without one): interned before any other.
pub const EMPTY_ORIGIN: Sym = 0;
/// The empty directory's id: of rests without a `/` before their query, and
/// of URLs past the most origins or directories.
const EMPTY_DIRECTORY: Sym = 0;

/// Most bytes of a key's two markers (ids are below U+D800).
const MARKER_BYTES: usize = 2 * 3;

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

/// Where the directory of a URL's rest ends: past its last `/` before a
/// query or fragment (0 without one).
fn directory_end(rest: &str) -> usize {
    let bytes = rest.as_bytes();
    let path = memchr::memchr2(b'?', b'#', bytes).unwrap_or(bytes.len());
    bytes
        .get(..path)
        .and_then(|path| memchr::memrchr(b'/', path))
        .map_or(0, |at| at + 1)
}

#[derive(Default)]
pub struct UrlNames {
    origins: Interner,
    directories: Interner,
    keys: Interner,
    /// Where `intern` puts a key together: as long as the longest URL, and
    /// reused (not the store's: no URL is kept in it).
    key: String,
}

/// The character standing for id `id` (of an origin or a directory) in a key.
fn marker(id: Sym) -> char {
    char::from_u32(id).unwrap_or('\0')
}

/// A URL's key, the markers of `origin` and `directory` then `tail`, into `key`.
fn key_into<'k>(key: &'k mut String, (origin, directory): (Sym, Sym), tail: &str) -> &'k str {
    key.clear();
    key.push(marker(origin));
    key.push(marker(directory));
    key.push_str(tail);
    key
}

/// A URL cut where `UrlNames` holds it apart: origin, directory and tail.
#[derive(Clone, Copy)]
struct UrlCut<'u> {
    url: &'u str,
    origin: &'u str,
    directory: &'u str,
    tail: &'u str,
}

fn cut(url: &str) -> UrlCut<'_> {
    let (origin, rest) = url.split_at(origin_end(url));
    let (directory, tail) = rest.split_at(directory_end(rest));
    UrlCut {
        url,
        origin,
        directory,
        tail,
    }
}

/// The id `names` holds `value` under, that of its empty value
/// (`EMPTY_ORIGIN`, `EMPTY_DIRECTORY`) when it is full and does not hold
/// it, or `None` when it would take it.
fn held_id(names: &Interner, value: &str, most: usize) -> Option<Sym> {
    const EMPTY: Sym = 0;
    match names.lookup(value) {
        Some(id) => Some(id),
        None if names.len() >= most => Some(EMPTY),
        None => None,
    }
}

impl UrlNames {
    /// The origin and directory ids a URL is held under, with its tail
    /// (what its key holds past their markers); `None` for an origin or a
    /// directory not held yet, with room for it.
    fn split<'u>(&self, cut: &UrlCut<'u>) -> (Option<Sym>, Option<Sym>, &'u str) {
        let UrlCut {
            url,
            origin,
            directory,
            tail,
        } = *cut;
        match held_id(&self.origins, origin, MAX_TABLE_ORIGINS) {
            // Past the most origins: the whole URL is the tail.
            Some(EMPTY_ORIGIN) if !origin.is_empty() => {
                (Some(EMPTY_ORIGIN), Some(EMPTY_DIRECTORY), url)
            }
            origin_id => match held_id(&self.directories, directory, MAX_TABLE_DIRECTORIES) {
                // Past the most directories: the rest is the tail.
                Some(EMPTY_DIRECTORY) if !directory.is_empty() => {
                    (origin_id, Some(EMPTY_DIRECTORY), &url[origin.len()..])
                }
                directory_id => (origin_id, directory_id, tail),
            },
        }
    }

    pub fn intern(&mut self, url: &str) -> Sym {
        if self.origins.len() == 0 {
            self.origins.intern("");
            self.directories.intern("");
        }
        let cut = cut(url);
        let (origin, directory, tail) = self.split(&cut);
        let origin = origin.unwrap_or_else(|| self.origins.intern(cut.origin));
        let directory = directory.unwrap_or_else(|| self.directories.intern(cut.directory));
        let mut key = std::mem::take(&mut self.key);
        let id = self
            .keys
            .intern(key_into(&mut key, (origin, directory), tail));
        self.key = key;
        id
    }

    pub fn intern_opt(&mut self, url: Option<&str>) -> Sym {
        url.map_or(NONE, |url| self.intern(url))
    }

    #[cfg(test)]
    fn lookup(&self, url: &str) -> Option<Sym> {
        match self.split(&cut(url)) {
            (Some(origin), Some(directory), tail) => {
                let mut key = String::new();
                self.keys
                    .lookup(key_into(&mut key, (origin, directory), tail))
            }
            _ => None,
        }
    }

    /// URL `url` put together in `buf`.
    pub fn get<'b>(&self, url: Sym, buf: &'b mut String) -> &'b str {
        buf.clear();
        buf.push_str(self.origins.get(self.origin_of(url)));
        self.push_rest(url, buf);
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

    /// URL `url` past its origin, put together in `buf`.
    pub fn rest_into<'b>(&self, url: Sym, buf: &'b mut String) -> &'b str {
        buf.clear();
        self.push_rest(url, buf);
        buf
    }

    fn push_rest(&self, url: Sym, buf: &mut String) {
        let mut key = self.keys.get(url).chars();
        let directory = key.nth(1).map_or(EMPTY_DIRECTORY, Sym::from);
        buf.push_str(self.directories.get(directory));
        buf.push_str(key.as_str());
    }

    /// Every origin of the table's URLs.
    pub fn origins(&self) -> &Interner {
        &self.origins
    }

    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// The bytes `urls` add to the keys' text and to the origins' and
    /// directories' text (an upper bound: an origin or directory new twice in
    /// one batch counts twice), with how many may be new of each.
    pub(crate) fn text_to_intern<'a>(
        &self,
        urls: impl Iterator<Item = Option<&'a str>>,
        count: Estimate,
    ) -> UrlGrowth {
        let mut growth = UrlGrowth::default();
        // New URLs counted once each (their ids and slots), as interning adds them.
        let mut new = std::collections::HashSet::new();
        let mut key = String::new();
        for url in urls.flatten() {
            // The key's text, and the origin's and the directory's if new.
            let (key_text, origin_text, directory_text) = match count {
                // The whole URL may be a key (past the most origins), and
                // neither its origin nor its directory is longer: a bound
                // that does not cut it.
                Estimate::Bound => (url.len(), Some(url.len()), Some(url.len())),
                Estimate::Exact => {
                    if !new.insert(url) {
                        continue;
                    }
                    let cut = cut(url);
                    match self.split(&cut) {
                        (Some(o), Some(d), tail) => {
                            if self.keys.lookup(key_into(&mut key, (o, d), tail)).is_some() {
                                continue;
                            }
                            (tail.len(), None, None)
                        }
                        // The whole URL, should the batch reach the most first.
                        (o, d, _) => (
                            url.len(),
                            o.is_none().then_some(cut.origin.len()),
                            d.is_none().then_some(cut.directory.len()),
                        ),
                    }
                }
            };
            growth.keys += 1;
            growth.key_text += MARKER_BYTES + key_text;
            if let Some(text) = origin_text {
                growth.origins += 1;
                growth.origin_text += text;
            }
            if let Some(text) = directory_text {
                growth.directories += 1;
                growth.directory_text += text;
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
            + self
                .directories
                .growth_for(growth.directories + 1, growth.directory_text)
    }

    pub(crate) fn heap_bytes(&self) -> usize {
        self.origins.heap_bytes() + self.directories.heap_bytes() + self.keys.heap_bytes()
    }

    /// The origins, the directories and the keys, as a snapshot stores them.
    pub(crate) fn parts(&self) -> [&Interner; 3] {
        [&self.origins, &self.directories, &self.keys]
    }

    /// URL names of `origins`, `directories` and `keys`; `None` unless the
    /// empty origin and the empty directory come first (when there are URLs)
    /// and each key begins with an origin and a directory held.
    pub(crate) fn from_parts(
        origins: Interner,
        directories: Interner,
        keys: Interner,
    ) -> Option<UrlNames> {
        // Both hold their empty value first, or (with no URLs) neither holds
        // anything: `intern` adds both empty values at once.
        let empty_first = match (origins.len(), directories.len()) {
            (0, 0) => keys.len() == 0,
            (0, _) | (_, 0) => false,
            _ => {
                origins.get(EMPTY_ORIGIN).is_empty() && directories.get(EMPTY_DIRECTORY).is_empty()
            }
        };
        if !empty_first {
            return None;
        }
        let names = UrlNames {
            origins,
            directories,
            keys,
            key: String::new(),
        };
        let held = (names.origins.len(), names.directories.len());
        let keys_fit = chunk_ranges(0..names.len())
            .all(|urls| keys_begin_with_held_ids(&names.keys, urls, held));
        (keys_fit && held.0 <= MAX_TABLE_ORIGINS && held.1 <= MAX_TABLE_DIRECTORIES)
            .then_some(names)
    }
}

/// Whether the keys of `urls` (ids) each begin with an origin's id below
/// `origins` and a directory's below `directories`. Not inlined, as every
/// check a restore makes a piece at a time (`PointsInto`).
#[inline(never)]
fn keys_begin_with_held_ids(
    keys: &Interner,
    urls: Range<usize>,
    (origins, directories): (usize, usize),
) -> bool {
    urls.map(|url| url as Sym).all(|url| {
        let mut key = keys.get(url).chars();
        let origin = key.next().is_some_and(|c| (c as usize) < origins);
        origin && key.next().is_some_and(|c| (c as usize) < directories)
    })
}

/// What interning a batch's URLs adds (`UrlNames::text_to_intern`).
#[derive(Default)]
pub(crate) struct UrlGrowth {
    pub keys: usize,
    pub key_text: usize,
    pub origins: usize,
    pub origin_text: usize,
    pub directories: usize,
    pub directory_text: usize,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_read_back_whole_with_their_origin_and_directory_apart() {
        let mut names = UrlNames::default();
        let urls = [
            "https://tenant-1.supabase.co/rest/v1/t?id=eq.1",
            "https://tenant-1.supabase.co/rest/v1/t?id=eq.2",
            "https://tenant-2.supabase.co/rest/v1/u?next=/a/b",
            "/rest/v1/t",
            "",
            "https://tenant-2.supabase.co",
            "https://tenant-2.supabase.co/",
            "https://tenant-2.supabase.co?q=/x/",
            "\0https://x.co/a",
            "weird scheme://host/x",
            "no-slash",
        ];
        let ids: Vec<Sym> = urls.iter().map(|u| names.intern(u)).collect();
        let mut buf = String::new();
        let mut rest = String::new();
        for (url, &id) in urls.iter().zip(&ids) {
            assert_eq!(names.get(id, &mut buf), *url);
            assert_eq!(names.lookup(url), Some(id));
            assert_eq!(names.intern(url), id);
            let origin = names.origins().get(names.origin_of(id));
            assert_eq!(format!("{origin}{}", names.rest_into(id, &mut rest)), *url);
        }
        assert_eq!(names.origins().len(), 3, "the empty origin and two hosts");
        let directories: Vec<&str> = (0..names.directories.len() as Sym)
            .map(|d| names.directories.get(d))
            .collect();
        assert_eq!(
            directories,
            [
                "",
                "/rest/v1/",
                "/",
                "\0https://x.co/",
                "weird scheme://host/"
            ]
        );
        assert_eq!(names.origin_of(ids[3]), EMPTY_ORIGIN);
        assert_eq!(names.lookup("https://tenant-3.supabase.co/"), None);
        assert_eq!(
            names.lookup("https://tenant-1.supabase.co/auth/v1/user"),
            None
        );
        let [origins, directories, keys] = names.parts();
        let copy = |names: &Interner| {
            let (text, ends) = names.parts();
            Interner::from_parts(text.pieces().collect(), ends.to_vec()).unwrap()
        };
        let restored = UrlNames::from_parts(copy(origins), copy(directories), copy(keys)).unwrap();
        for (url, &id) in urls.iter().zip(&ids) {
            assert_eq!(restored.get(id, &mut buf), *url);
        }
        assert!(
            UrlNames::from_parts(copy(origins), Interner::default(), copy(keys)).is_none(),
            "keys name directories not held"
        );
        let mut first_directory = Interner::default();
        first_directory.intern("/a/");
        assert!(
            UrlNames::from_parts(copy(origins), first_directory, Interner::default()).is_none(),
            "the empty directory is not the first"
        );
        let no_directories =
            UrlNames::from_parts(copy(origins), Interner::default(), Interner::default());
        assert!(no_directories.is_none(), "origins without directories");
    }

    #[test]
    fn a_directory_ends_after_the_last_slash_before_a_query_or_fragment() {
        for (rest, end) in [
            ("/rest/v1/t?id=eq.1", 9),
            ("/rest/v1/", 9),
            ("/a/b#c/d", 3),
            ("?x=/y/", 0),
            ("", 0),
            ("file.png", 0),
            ("/", 1),
        ] {
            assert_eq!(directory_end(rest), end, "{rest:?}");
        }
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
    fn past_the_most_origins_a_url_is_its_own_tail() {
        let mut names = UrlNames::default();
        names.intern("");
        for n in 1..MAX_TABLE_ORIGINS {
            names.origins.intern(&format!("https://h{n}.co"));
        }
        let known = names.intern("https://h1.co/a/b");
        let past = names.intern("https://new.co/a/b");
        let mut buf = String::new();
        assert_eq!(names.get(past, &mut buf), "https://new.co/a/b");
        assert_eq!(names.origin_of(past), EMPTY_ORIGIN);
        assert_eq!(names.origin_of(known), 1);
        assert_eq!(names.lookup("https://new.co/a/b"), Some(past));
        assert_eq!(names.origins().len(), MAX_TABLE_ORIGINS);
    }

    #[test]
    fn past_the_most_directories_a_url_keeps_its_directory_in_its_tail() {
        let mut names = UrlNames::default();
        names.intern("");
        for n in 1..MAX_TABLE_DIRECTORIES {
            names.directories.intern(&format!("/d{n}/"));
        }
        let known = names.intern("https://h.co/d1/x");
        let past = names.intern("https://h.co/new/x?y=/z/");
        let mut buf = String::new();
        let mut rest = String::new();
        assert_eq!(names.get(known, &mut buf), "https://h.co/d1/x");
        assert_eq!(names.get(past, &mut buf), "https://h.co/new/x?y=/z/");
        assert_eq!(names.rest_into(past, &mut rest), "/new/x?y=/z/");
        assert_eq!(names.origins().get(names.origin_of(past)), "https://h.co");
        assert_eq!(names.lookup("https://h.co/new/x?y=/z/"), Some(past));
        assert_eq!(names.directories.len(), MAX_TABLE_DIRECTORIES);
    }
}
