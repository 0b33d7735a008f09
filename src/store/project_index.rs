//! Per-project indexes of a table, derived from its columns and kept as rows
//! arrive, so that a query for one project costs what that project holds:
//! - `ProjectRows`: each project's row numbers in time order (logs.all walks
//!   back from its window's end; the function endpoints read only its rows);
//! - `UrlTrigrams`: per project, its request URLs' origins (exactly; a URL
//!   without one has the empty origin) and a one-hash Bloom filter of the
//!   byte trigrams of the rest, with a second, wide one for a project with
//!   many trigrams, so that usage.api-counts skips every project whose URLs
//!   cannot contain the literals its pattern requires.
//!
//! A snapshot stores the URL index (rebuilding it would hash every URL) and
//! how many rows each project has; a restore fills the project rows in one
//! pass over the project column, checking them against those counts. Memory
//! is predicted by the same growth rule as the columns.

use std::ops::Range;

use super::columns::{chunk_ranges, grow, grown, VEC_BYTES};
use super::url_names::UrlNames;
use super::{Chunked, EntryUrls, Interner, Sym, NONE};

/// Slot of a project in the indexes (and its lane of text): 0 holds entries
/// with no project.
pub(crate) fn slot(project: Sym) -> usize {
    if project == NONE {
        0
    } else {
        project as usize + 1
    }
}

/// Lengthens `list` to `len` (if shorter) with `fill`, growing by `grown`'s rule.
fn grow_to<T>(list: &mut Vec<T>, len: usize, fill: impl FnMut() -> T) {
    let additional = len.saturating_sub(list.len());
    if additional > 0 {
        grow(list, additional);
        list.resize_with(len, fill);
    }
}

/// How much smaller than a time window the rows a query needs must be for
/// them to be read one by one rather than the window scanned (measured:
/// `node bench/bench.mjs`, the median and tail projects against the largest).
const OWN_ROWS_FACTOR: usize = 3;

/// About how many rows of a window a scan reads in the time a project's two
/// binary searches take: many projects over a short window are scanned for
/// without their rows being looked up (alike refs: a pattern's literal can be
/// in a thousand projects' URLs).
const SEARCH_ROWS: usize = 32;

/// The rows a query for some projects reads in a time window.
pub enum Selected<'a> {
    /// Each project's own rows in the window, in time order: together they
    /// are a small share of it, so they are read one by one.
    Own(Vec<&'a [u32]>),
    /// The whole window (a range of rows), scanned and filtered by project:
    /// the projects hold much of it, and a scan reads columns faster per row.
    Scan(Range<usize>),
}

/// Each project's row numbers, ascending (so in time order, as the table is).
#[derive(Default)]
pub struct ProjectRows {
    slots: Vec<Vec<u32>>,
}

impl ProjectRows {
    /// How many rows of a project column each slot holds, to the last slot
    /// that holds any: what a snapshot stores beside the column, so that a
    /// restore reserves each list at once (`from_counted_column`) instead of
    /// counting first.
    pub(crate) fn slot_counts(projects: &Chunked<Sym>) -> Vec<u32> {
        rows_per_slot(projects, 0)
            .into_iter()
            .map(|n| n as u32)
            .collect()
    }

    /// The rows of each project of a whole project column (a table read
    /// from a snapshot) whose slots hold `counts` rows (`slot_counts`), of
    /// at most `most_slots` slots; `None` when the counts are not the
    /// column's (as `slot_counts` writes them: the last slot holds rows).
    pub(crate) fn from_counted_column(
        projects: &Chunked<Sym>,
        counts: &[u32],
        most_slots: usize,
    ) -> Option<ProjectRows> {
        let total = counts.iter().map(|&n| n as u64).sum::<u64>();
        let last_holds_rows = counts.last().is_none_or(|&n| n > 0);
        if counts.len() > most_slots || total != projects.len() as u64 || !last_holds_rows {
            return None;
        }
        let mut rows = ProjectRows::default();
        grow_to(&mut rows.slots, counts.len(), Vec::new);
        for (list, &n) in rows.slots.iter_mut().zip(counts) {
            grow(list, n as usize);
        }
        for (first_row, piece) in pieces_from(projects, 0) {
            push_rows(piece, first_row, &mut rows.slots);
        }
        // With the total right, a row left out (its slot past the counts) or
        // one too many in a slot leaves some slot short.
        let as_counted = rows
            .slots
            .iter()
            .zip(counts)
            .all(|(list, &n)| list.len() == n as usize);
        as_counted.then_some(rows)
    }

    /// The rows of `project`, in time order.
    pub fn of(&self, project: Sym) -> &[u32] {
        self.of_slot(slot(project))
    }

    fn of_slot(&self, slot: usize) -> &[u32] {
        self.slots.get(slot).map_or(&[], Vec::as_slice)
    }

    /// The rows of `project` among the table's rows `range` (a time window found
    /// by binary search on the table), by two binary searches.
    pub fn within(&self, project: Sym, range: Range<usize>) -> &[u32] {
        let rows = self.of(project);
        let from = rows.partition_point(|&r| (r as usize) < range.start);
        let to = rows.partition_point(|&r| (r as usize) < range.end);
        rows.get(from..to).unwrap_or(&[])
    }

    /// What a query for `projects` reads of the rows in `window` (a time
    /// window found by binary search on the table): their own rows, or the
    /// whole window when they hold a large share of it or are many for its
    /// length (`SEARCH_ROWS`).
    pub fn select(&self, projects: &[Sym], window: Range<usize>) -> Selected<'_> {
        if projects.len().saturating_mul(SEARCH_ROWS) >= window.len() {
            return Selected::Scan(window);
        }
        let own: Vec<&[u32]> = projects
            .iter()
            .map(|&p| self.within(p, window.clone()))
            .collect();
        let held: usize = own.iter().map(|rows| rows.len()).sum();
        if held.saturating_mul(OWN_ROWS_FACTOR) < window.len() {
            Selected::Own(own)
        } else {
            Selected::Scan(window)
        }
    }

    /// Upper bound of the bytes added by `rows` more rows of `new_projects` (at
    /// most) new projects: each touched slot grows by at most its additions plus
    /// an eighth of its capacity (`grown`'s rule), and the slot list by
    /// `grown`'s rule.
    pub(crate) fn growth_for(&self, rows: usize, new_projects: usize) -> usize {
        let held: usize = self.slots.iter().map(Vec::capacity).sum();
        let slot_list = grown(
            self.slots.len(),
            self.slots.capacity(),
            new_projects.saturating_add(1),
        ) - self.slots.capacity();
        (rows + held / 8) * 4 + slot_list * VEC_BYTES
    }

    /// Indexes the rows from `first_new` on (their project column `projects`),
    /// and, when the table was reordered from row `reordered_from` on, the
    /// rows from there again (their projects' lists lose those rows first).
    pub(crate) fn update(
        &mut self,
        projects: &Chunked<Sym>,
        first_new: usize,
        reordered_from: Option<usize>,
    ) {
        let from = reordered_from.map_or(first_new, |r| r.min(first_new));
        let counts = rows_per_slot(projects, from);
        grow_to(&mut self.slots, counts.len(), Vec::new);
        for (rows, &n) in self.slots.iter_mut().zip(&counts) {
            if n > 0 {
                // The rows past `from` were a permutation of these projects' rows.
                rows.truncate(rows.partition_point(|&r| (r as usize) < from));
                grow(rows, n);
            }
        }
        for (first_row, piece) in pieces_from(projects, from) {
            push_rows(piece, first_row, &mut self.slots);
        }
    }

    /// How many project slots there are (`slot`).
    pub(crate) fn slot_count(&self) -> usize {
        self.slots.len()
    }

    pub(crate) fn heap_bytes(&self) -> usize {
        self.slots.capacity() * VEC_BYTES
            + self.slots.iter().map(|r| r.capacity() * 4).sum::<usize>()
    }
}

/// The project column's rows from `from` on, a piece at a time, each with its first row.
fn pieces_from(projects: &Chunked<Sym>, from: usize) -> impl Iterator<Item = (usize, &[Sym])> {
    chunk_ranges(from..projects.len())
        .map(|range| (range.start, projects.piece(range).unwrap_or_default()))
}

/// How many of the project column's rows from `from` on each slot holds, to
/// the last slot that holds any.
fn rows_per_slot(projects: &Chunked<Sym>, from: usize) -> Vec<usize> {
    let mut counts = Vec::new();
    for (_, piece) in pieces_from(projects, from) {
        add_slot_counts(piece, &mut counts);
    }
    counts
}

// A piece (a chunk of the project column) at a time, in functions that are
// not inlined, as a restore checks columns (`PointsInto`): restoring a
// snapshot indexes every row.

/// Adds each slot's rows in `projects` to `counts` (lengthened as needed).
#[inline(never)]
fn add_slot_counts(projects: &[Sym], counts: &mut Vec<usize>) {
    for &p in projects {
        let s = slot(p);
        if s >= counts.len() {
            counts.resize(s + 1, 0);
        }
        if let Some(n) = counts.get_mut(s) {
            *n += 1;
        }
    }
}

/// Appends the rows of `projects` (the first is row `first_row`) to their slots' lists.
#[inline(never)]
fn push_rows(projects: &[Sym], first_row: usize, slots: &mut [Vec<u32>]) {
    for (row, &p) in (first_row..).zip(projects) {
        if let Some(rows) = slots.get_mut(slot(p)) {
            rows.push(row as u32);
        }
    }
}

/// Bits of a project's trigram filter.
const FILTER_WORDS: usize = 128;
const FILTER_BITS: u32 = (FILTER_WORDS * 64) as u32;

/// Which byte trigrams a project's request URLs contain: a Bloom filter with
/// one hash (a clear bit proves absence). One type for a store's index, a
/// batch's split and the directory of shards, so their bits agree.
#[derive(Clone, PartialEq, Eq)]
pub struct TrigramFilter([u64; FILTER_WORDS]);

impl Default for TrigramFilter {
    fn default() -> Self {
        TrigramFilter([0; FILTER_WORDS])
    }
}

impl TrigramFilter {
    pub fn set(&mut self, bit: u32) {
        if let Some(word) = self.0.get_mut((bit / 64) as usize) {
            *word |= 1 << (bit % 64);
        }
    }

    /// Sets the bits of `url`'s trigrams.
    pub fn add_url(&mut self, url: &[u8]) {
        for t in url.windows(3) {
            self.set(trigram_bit(t));
        }
    }

    /// Sets every bit `other` has; whether that set a new one.
    pub fn union(&mut self, other: &TrigramFilter) -> bool {
        let mut new = false;
        for (word, &theirs) in self.0.iter_mut().zip(&other.0) {
            new |= theirs & !*word != 0;
            *word |= theirs;
        }
        new
    }

    fn set_bits(&self) -> usize {
        self.0.iter().map(|w| w.count_ones() as usize).sum()
    }

    /// Whether every bit of `bits` is set.
    pub fn has_all(&self, bits: &[u32]) -> bool {
        bits.iter().all(|&bit| {
            self.0
                .get((bit / 64) as usize)
                .is_some_and(|w| w & (1 << (bit % 64)) != 0)
        })
    }

    /// The set bits, ascending.
    pub fn bits(&self) -> Vec<u32> {
        let mut bits = Vec::new();
        for (i, &word) in self.0.iter().enumerate() {
            let mut rest = word;
            while rest != 0 {
                bits.push(i as u32 * 64 + rest.trailing_zeros());
                rest &= rest - 1;
            }
        }
        bits
    }

    /// A filter with `bits` set.
    pub fn of_bits(bits: &[u32]) -> TrigramFilter {
        let mut filter = TrigramFilter::default();
        for &bit in bits {
            filter.set(bit);
        }
        filter
    }
}
/// `url_project` value of a URL seen in entries of more than one project.
const SHARED: Sym = NONE - 1;
/// `url_project` value of a URL not seen yet.
const UNSEEN: Sym = NONE - 2;

/// Most origins kept per project: one with more passes every origin check
/// (a project normally has its own host and maybe a few custom domains; the
/// empty origin of URLs without one counts as one).
const MAX_ORIGINS: usize = 15;

/// The distinct origins a project's URLs have, exactly, up to `MAX_ORIGINS`.
#[derive(Clone, Copy, Default)]
struct ProjectOrigins {
    /// How many of `ids` are used; `OVERFLOWED` once there were more.
    count: u32,
    ids: [Sym; MAX_ORIGINS],
}

const OVERFLOWED: u32 = u32::MAX;
/// Words of a project's origins as a snapshot stores them (count, then ids).
const ORIGIN_WORDS: usize = MAX_ORIGINS + 1;

impl ProjectOrigins {
    fn insert(&mut self, origin: Sym) {
        if self.count == OVERFLOWED || self.ids().contains(&origin) {
            return;
        }
        match self.ids.get_mut(self.count as usize) {
            Some(slot) => {
                *slot = origin;
                self.count += 1;
            }
            None => self.count = OVERFLOWED,
        }
    }

    fn ids(&self) -> &[Sym] {
        self.ids.get(..self.count as usize).unwrap_or(&[])
    }
}

/// Per project, what its request URLs hold, in two parts: each URL's origin
/// (`scheme://host[:port]`) exactly, and a Bloom filter (one hash: a clear
/// bit proves absence) of the byte trigrams of the rest. Refs are in hosts,
/// so a pattern naming one host is decided exactly however alike the refs
/// look, and the digits and hex of paths no longer fill a filter that the
/// ref's few telling trigrams are then tested against.
#[derive(Default)]
pub struct UrlTrigrams {
    filters: Vec<TrigramFilter>,
    /// The project whose entries first used each URL, `SHARED` once another did.
    url_project: Vec<Sym>,
    /// Per project slot, its URLs' origins (ids of `UrlNames::origins`).
    origins_of: Vec<ProjectOrigins>,
    /// The wide filters of projects with many trigrams, by ascending slot.
    wide: Vec<WideFilter>,
    /// The wide filters the next batch builds or doubles, by ascending slot:
    /// decided before a batch, so that the budget knows their bytes.
    due: Vec<DueFilter>,
}

/// A wide filter the next batch builds (or doubles): its slot and its words.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct DueFilter {
    slot: u32,
    words: u32,
}

/// The most words a wide filter has (16 MiB; a project with that many
/// trigrams is far past any object's budget): it is not doubled past it, and
/// a snapshot holding a larger one is refused.
const MAX_WIDE_WORDS: usize = 1 << 21;

/// A trigram's bytes as one word (the input of both hashes).
fn packed(t: &[u8]) -> u32 {
    t.iter()
        .fold(0u32, |word, &byte| word << 8 | u32::from(byte))
}

fn trigram_hash(t: &[u8]) -> u32 {
    packed(t).wrapping_mul(0x9E37_79B1)
}

fn trigram_bit(t: &[u8]) -> u32 {
    (trigram_hash(t) >> 19) % FILTER_BITS
}

/// A second hash of a trigram for `WideFilter`, independent of `trigram_hash`'s
/// top bits (which `trigram_bit` takes), so that the two filters' false
/// positives are independent.
fn wide_hash(t: &[u8]) -> u32 {
    packed(t)
        .wrapping_mul(0x85EB_CA6B)
        .rotate_left(13)
        .wrapping_mul(0xC2B2_AE35)
}

/// A project's second filter of the trigrams of its URLs' rests, once its
/// `TrigramFilter` (of a fixed size, shared with the directory of shards) is
/// a sixteenth full. Where refs look alike, a ref's literal has one telling
/// trigram (`t-1` of `tenant-1`), so that filter alone passes a project as
/// often as it has that bit set, and the project's every URL is read. The
/// wide filter has 16 bits per trigram the project had and an independent
/// hash. It is built from the project's rows by the batch after the one
/// that crowded the first filter, and doubled, again from its rows, by the
/// batch after one that sets an eighth of it.
struct WideFilter {
    slot: u32,
    /// A power of two from `FILTER_WORDS` to `MAX_WIDE_WORDS`.
    words: Vec<u64>,
    /// How many bits are set.
    set: usize,
}

impl WideFilter {
    fn bit(&self, hash: u32) -> (usize, u64) {
        let bit = (u64::from(hash) * (self.words.len() as u64 * 64)) >> 32;
        ((bit / 64) as usize, 1 << (bit % 64))
    }

    fn new(slot: u32, words: Vec<u64>) -> WideFilter {
        let set = words.iter().map(|w| w.count_ones() as usize).sum();
        WideFilter { slot, words, set }
    }

    fn add_url(&mut self, rest: &[u8]) {
        for t in rest.windows(3) {
            let (word, mask) = self.bit(wide_hash(t));
            if let Some(w) = self.words.get_mut(word) {
                self.set += usize::from(*w & mask == 0);
                *w |= mask;
            }
        }
    }

    /// Whether a URL's rest may contain `literal` (every trigram's bit is set).
    fn may_contain(&self, literal: &[u8]) -> bool {
        literal.windows(3).all(|t| {
            let (word, mask) = self.bit(wide_hash(t));
            self.words.get(word).is_some_and(|w| w & mask != 0)
        })
    }

    fn is_crowded(&self) -> bool {
        self.set * 8 > self.words.len() * 64
    }
}

/// What a project slot costs: its filter and its origins.
const SLOT_BYTES: usize = FILTER_WORDS * 8 + std::mem::size_of::<ProjectOrigins>();

impl UrlTrigrams {
    /// Upper bound of the bytes added by `new_urls` URLs and `new_projects`
    /// projects to a table of `projects` projects; with the wide filters
    /// already due (`due_bytes`) and the list of those due after (8 bytes a slot).
    pub(crate) fn growth_for(
        &self,
        new_urls: usize,
        projects: usize,
        new_projects: usize,
    ) -> usize {
        let slots = (projects + 1 + new_projects).saturating_sub(self.filters.len());
        let filters =
            grown(self.filters.len(), self.filters.capacity(), slots) - self.filters.capacity();
        let urls = grown(
            self.url_project.len(),
            self.url_project.capacity(),
            new_urls,
        ) - self.url_project.capacity();
        filters * SLOT_BYTES
            + urls * 4
            + self.due_bytes()
            + (projects + 1 + new_projects).saturating_sub(self.due.capacity())
                * std::mem::size_of::<DueFilter>()
    }

    /// The bytes the due wide filters add when the next batch builds them.
    pub(crate) fn due_bytes(&self) -> usize {
        let new_wide = self.new_wide_filters(&self.due);
        let wide_list =
            grown(self.wide.len(), self.wide.capacity(), new_wide) - self.wide.capacity();
        let wide_words: usize = self.due.iter().map(|due| due.words as usize).sum();
        wide_list * std::mem::size_of::<WideFilter>() + wide_words * 8
    }

    /// Leaves the due wide filters unbuilt (they only speed up pattern
    /// counts): for a batch that fits the budget only without them. Each is
    /// due again once a batch holds its project.
    pub(crate) fn postpone_wide_filters(&mut self) {
        self.due.clear();
    }

    /// Indexes the URLs of entries `rows`, in a table of `projects` projects
    /// and `urls` URLs; returns the slots of their projects (for `widen`).
    pub(crate) fn index(
        &mut self,
        entries: EntryUrls<'_>,
        rows: Range<usize>,
        urls: &UrlNames,
        projects: usize,
    ) -> Vec<u32> {
        // Every slot exists (slot 0 and one per project), so growth is one step per batch.
        let slots = projects + 1;
        grow_to(&mut self.filters, slots, TrigramFilter::default);
        grow_to(&mut self.origins_of, slots, ProjectOrigins::default);
        grow_to(&mut self.url_project, urls.len(), || UNSEEN);
        let mut touched = vec![false; slots];
        let mut rest = String::new();
        for (project, request_urls) in rows.map(|row| entries.get(row)) {
            if let Some(mark) = touched.get_mut(slot(project)) {
                *mark = true;
            }
            for &url in request_urls {
                self.add(project, url, urls, &mut rest);
            }
        }
        (0..slots as u32)
            .filter(|&s| touched.get(s as usize) == Some(&true))
            .collect()
    }

    /// Where `slot`'s wide filter is in `wide`, or where it would go.
    fn wide_at(&self, slot: usize) -> Result<usize, usize> {
        self.wide.binary_search_by_key(&slot, |w| w.slot as usize)
    }

    fn wide_of(&self, slot: usize) -> Option<&WideFilter> {
        self.wide.get(self.wide_at(slot).ok()?)
    }

    fn wide_mut(&mut self, slot: usize) -> Option<&mut WideFilter> {
        let at = self.wide_at(slot).ok()?;
        self.wide.get_mut(at)
    }

    /// The wide filter the next batch builds for `slot`, if it builds one:
    /// twice a crowded one's words (up to `MAX_WIDE_WORDS`), or 16 bits per
    /// set bit of a sixteenth full `TrigramFilter`.
    fn due_filter(&self, slot: u32) -> Option<DueFilter> {
        let words = match self.wide_of(slot as usize) {
            Some(wide) => (wide.is_crowded() && wide.words.len() < MAX_WIDE_WORDS)
                .then_some(wide.words.len() * 2)?,
            None => {
                let set = self
                    .filters
                    .get(slot as usize)
                    .map_or(0, TrigramFilter::set_bits);
                (set * 16 > FILTER_BITS as usize)
                    .then(|| (set * 16 / 64).next_power_of_two().max(FILTER_WORDS))?
            }
        };
        Some(DueFilter {
            slot,
            words: u32::try_from(words).ok()?,
        })
    }

    /// Builds or doubles the wide filters that were due before this batch,
    /// each from its project's rows (`rows`, of the whole table, whose URLs
    /// `entries` gives), then finds which are due after it among those and
    /// the slots the batch `touched`.
    pub(crate) fn widen(
        &mut self,
        entries: EntryUrls<'_>,
        rows: &ProjectRows,
        urls: &UrlNames,
        touched: &[u32],
    ) {
        let due = std::mem::take(&mut self.due);
        let new_filters = self.new_wide_filters(&due);
        grow(&mut self.wide, new_filters);
        // Each URL once per filter: `seen` is cleared after each by the same
        // rows, not whole (after a restore every crowded project may be due).
        let mut rest = String::new();
        let mut seen: Vec<u64> = if due.is_empty() {
            Vec::new()
        } else {
            vec![0; urls.len().div_ceil(64)]
        };
        for &DueFilter {
            slot: due_slot,
            words,
        } in &due
        {
            let mut wide = WideFilter::new(due_slot, vec![0; words as usize]);
            let project_urls = || {
                rows.of_slot(due_slot as usize)
                    .iter()
                    .flat_map(|&row| entries.get(row as usize).1)
            };
            for &url in project_urls() {
                let (word, mask) = ((url / 64) as usize, 1u64 << (url % 64));
                match seen.get_mut(word) {
                    Some(w) if *w & mask == 0 => *w |= mask,
                    _ => continue,
                }
                wide.add_url(urls.rest_into(url, &mut rest).as_bytes());
            }
            for &url in project_urls() {
                if let Some(w) = seen.get_mut((url / 64) as usize) {
                    *w = 0;
                }
            }
            match self.wide_at(due_slot as usize) {
                Ok(at) => {
                    if let Some(old) = self.wide.get_mut(at) {
                        *old = wide;
                    }
                }
                Err(at) => self.wide.insert(at, wide),
            }
        }
        let mut next: Vec<DueFilter> = touched
            .iter()
            .copied()
            .chain(due.iter().map(|due| due.slot))
            .filter_map(|s| self.due_filter(s))
            .collect();
        next.sort_unstable();
        next.dedup();
        next.shrink_to_fit();
        self.due = next;
    }

    /// The words of `project`'s wide filter, if it has one.
    #[cfg(test)]
    pub(crate) fn wide_words(&self, project: Sym) -> Option<usize> {
        self.wide_of(slot(project)).map(|wide| wide.words.len())
    }

    /// How many of the `due` slots have no wide filter yet.
    fn new_wide_filters(&self, due: &[DueFilter]) -> usize {
        due.iter()
            .filter(|due| self.wide_of(due.slot as usize).is_none())
            .count()
    }

    /// `rest`: where the URL's rest is put together, reused.
    fn add(&mut self, project: Sym, url: Sym, urls: &UrlNames, rest: &mut String) {
        match self.url_project.get_mut(url as usize) {
            Some(owner) if *owner == project => return,
            Some(owner) if *owner == UNSEEN => *owner = project,
            Some(owner) => *owner = SHARED,
            None => return,
        }
        let rest = urls.rest_into(url, rest).as_bytes();
        if let Some(filter) = self.filters.get_mut(slot(project)) {
            filter.add_url(rest);
        }
        if let Some(wide) = self.wide_mut(slot(project)) {
            wide.add_url(rest);
        }
        // A URL without an origin has the empty one: then a project's origins
        // account for all its URLs, and a pattern that matches every origin of
        // a project matches every URL of it.
        if let Some(origins) = self.origins_of.get_mut(slot(project)) {
            origins.insert(urls.origin_of(url));
        }
    }

    /// Every origin of `project`'s URLs (the empty one standing for URLs
    /// without one), when it has at most `MAX_ORIGINS`.
    pub fn origins_of(&self, project: Sym) -> Option<&[Sym]> {
        self.origins_of
            .get(slot(project))
            .filter(|origins| origins.count != OVERFLOWED)
            .map(ProjectOrigins::ids)
    }

    /// `literals` (each of which every match of a pattern contains) checked
    /// against every origin of `urls` (the table's) once, to ask per project.
    pub fn literals<'a>(
        &'a self,
        literals: &[Vec<u8>],
        urls: &'a UrlNames,
    ) -> RequiredLiterals<'a> {
        let origins = urls.origins();
        let checks = literals
            .iter()
            .map(|literal| LiteralCheck {
                literal: literal.clone(),
                bits: Self::required_bits(std::slice::from_ref(literal)),
                by_origin: check_origins(origins, literal),
            })
            .collect();
        RequiredLiterals {
            index: self,
            origins,
            checks,
        }
    }

    /// The bits every URL that contains all of `literals` must have set.
    pub fn required_bits(literals: &[Vec<u8>]) -> Vec<u32> {
        let mut bits: Vec<u32> = literals
            .iter()
            .flat_map(|l| l.windows(3).map(trigram_bit))
            .collect();
        bits.sort_unstable();
        bits.dedup();
        bits
    }

    pub(crate) fn heap_bytes(&self) -> usize {
        self.filters.capacity() * FILTER_WORDS * 8
            + self.url_project.capacity() * 4
            + self.origins_of.capacity() * std::mem::size_of::<ProjectOrigins>()
            + self.wide.capacity() * std::mem::size_of::<WideFilter>()
            + self
                .wide
                .iter()
                .map(|w| w.words.capacity() * 8)
                .sum::<usize>()
            + self.due.capacity() * std::mem::size_of::<DueFilter>()
    }

    /// The wide filters as a snapshot stores them: each one's slot and word
    /// count, then all their words.
    pub(crate) fn wide_parts(&self) -> (Vec<u32>, Vec<u64>) {
        let index = self
            .wide
            .iter()
            .flat_map(|w| [w.slot, w.words.len() as u32])
            .collect();
        let words = self
            .wide
            .iter()
            .flat_map(|w| w.words.iter().copied())
            .collect();
        (index, words)
    }

    /// What a snapshot stores, so that restoring does not hash every URL again:
    /// the filters' words, one project after another; each URL's project;
    /// and each project's origins (a count, then `MAX_ORIGINS` ids).
    pub(crate) fn parts(&self) -> (Vec<u64>, &[Sym], Vec<u32>) {
        let words = self.filters.iter().flat_map(|f| f.0).collect();
        let origin_words = self
            .origins_of
            .iter()
            .flat_map(|o| std::iter::once(o.count).chain(o.ids))
            .collect();
        (words, &self.url_project, origin_words)
    }

    /// The index from its `parts`, for a table of `projects` projects and
    /// `urls` URLs of `origins` origins; `None` when the sizes do not fit those.
    pub(crate) fn from_parts(
        words: &[u64],
        url_project: Vec<Sym>,
        origin_words: &[u32],
        (wide_index, wide_words): (&[u32], &[u64]),
        (projects, urls, origins): (usize, usize, usize),
    ) -> Option<UrlTrigrams> {
        let filters: Vec<TrigramFilter> = words
            .chunks_exact(FILTER_WORDS)
            .filter_map(|chunk| chunk.try_into().ok().map(TrigramFilter))
            .collect();
        let origins_of: Vec<ProjectOrigins> = origin_words
            .chunks_exact(ORIGIN_WORDS)
            .filter_map(|chunk| {
                let (&count, ids) = chunk.split_first()?;
                let known = origins;
                let fits = count == OVERFLOWED
                    || (count as usize <= MAX_ORIGINS
                        && ids
                            .iter()
                            .take(count as usize)
                            .all(|&id| (id as usize) < known));
                fits.then_some(ProjectOrigins {
                    count,
                    ids: ids.try_into().ok()?,
                })
            })
            .collect();
        // A table that never took a batch has no filters at all.
        let never_indexed = filters.is_empty() && projects == 0 && urls == 0;
        ((filters.len() == projects + 1 || never_indexed)
            && words.len() == filters.len() * FILTER_WORDS
            && origin_words.len() == filters.len() * ORIGIN_WORDS
            && origins_of.len() == filters.len()
            && url_project.len() == urls)
            .then_some(())?;
        let mut wide = Vec::with_capacity(wide_index.len() / 2);
        let mut rest = wide_words;
        for pair in wide_index.chunks(2) {
            let &[slot, len] = pair else { return None };
            let len = len as usize;
            let after_last = wide.last().is_none_or(|w: &WideFilter| w.slot < slot);
            if !(after_last
                && (slot as usize) < filters.len()
                && (FILTER_WORDS..=MAX_WIDE_WORDS).contains(&len)
                && len.is_power_of_two())
            {
                return None;
            }
            let (words, others) = rest.split_at_checked(len)?;
            wide.push(WideFilter::new(slot, words.to_vec()));
            rest = others;
        }
        if !rest.is_empty() {
            return None;
        }
        let mut index = UrlTrigrams {
            filters,
            url_project,
            origins_of,
            wide,
            due: Vec::new(),
        };
        index.due = (0..index.filters.len() as u32)
            .filter_map(|s| index.due_filter(s))
            .collect();
        Some(index)
    }
}

/// `by_origin` value of an origin that contains the literal …
const IN_ORIGIN: u8 = 1;
/// … and of one that ends with the literal's start (the rest may go on with it).
const SPANS: u8 = 2;

/// Each `k` for which `origin` ends with the first `k` bytes of `literal`
/// (and the rest of a URL would have to begin with the others): only where
/// the literal holds the origin's last byte.
fn spans_from<'a>(origin: &'a [u8], literal: &'a [u8]) -> impl Iterator<Item = usize> + 'a {
    let last = origin.last().copied();
    let starts = literal
        .get(..literal.len().saturating_sub(1))
        .unwrap_or(&[]);
    memchr::memchr_iter(last.unwrap_or(0), starts)
        .filter(move |_| last.is_some())
        .map(|at| at + 1)
        .filter(move |&k| {
            literal
                .get(..k)
                .is_some_and(|start| origin.ends_with(start))
        })
}

/// Per origin of `origins`: `IN_ORIGIN` when it contains `literal`, else
/// `SPANS` when it ends with the literal's start, else 0. The origins' text
/// is searched in one pass, not origin by origin (a thousand origins of alike
/// refs cost a call each: most of a short api-counts window's time), and an
/// origin's end is compared only at the literal's bytes equal to its last one.
fn check_origins(origins: &Interner, literal: &[u8]) -> Vec<u8> {
    let (text, ends) = origins.parts();
    if literal.is_empty() {
        return vec![IN_ORIGIN; ends.len()];
    }
    // Each `k` (the literal's start of `k` bytes, short of the whole) by its
    // last byte: `spans_from`'s rule, with the literal's bytes looked up once
    // rather than searched per origin (the property test holds the two alike).
    let mut starts_by_last: [Vec<usize>; 256] = std::array::from_fn(|_| Vec::new());
    for (at, &byte) in literal.iter().enumerate().take(literal.len() - 1) {
        if let Some(ks) = starts_by_last.get_mut(usize::from(byte)) {
            ks.push(at + 1);
        }
    }
    let mut by_origin: Vec<u8> = (0..ends.len() as Sym)
        .map(|id| {
            let origin = origins.get(id).as_bytes();
            let ks = origin
                .last()
                .and_then(|&byte| starts_by_last.get(usize::from(byte)));
            let spans = ks.is_some_and(|ks| {
                ks.iter()
                    .any(|&k| literal.get(..k).is_some_and(|s| origin.ends_with(s)))
            });
            if spans {
                SPANS
            } else {
                0
            }
        })
        .collect();
    // A match found across two origins is in neither. Either way the search
    // resumes at the end of the origin where the match starts, which holds
    // no later match. Matches come in text order, so the origin holding one
    // is found by walking on from the last one's (a search per match costs
    // more). The text is searched piece by piece: pieces part where origins
    // do, so no match in an origin spans two.
    let finder = memchr::memmem::Finder::new(literal);
    let mut from: usize = 0;
    let mut id = 0;
    'pieces: for (base, piece) in text.pieces_with_starts() {
        let piece = piece.as_bytes();
        while let Some(at) = piece
            .get(from.saturating_sub(base)..)
            .and_then(|rest| finder.find(rest))
        {
            let at = base + from.saturating_sub(base) + at;
            id += ends
                .get(id..)
                .unwrap_or(&[])
                .iter()
                .position(|&end| end as usize > at)
                .unwrap_or(ends.len());
            let Some(&end) = ends.get(id) else {
                break 'pieces;
            };
            if at + literal.len() <= end as usize {
                if let Some(check) = by_origin.get_mut(id) {
                    *check = IN_ORIGIN;
                }
            }
            from = end as usize;
        }
    }
    by_origin
}

struct LiteralCheck {
    literal: Vec<u8>,
    /// The literal's trigram bits, for a match within the rest of a URL.
    bits: Vec<u32>,
    /// Per origin: `IN_ORIGIN`, `SPANS` or 0.
    by_origin: Vec<u8>,
}

/// A pattern's required literals checked against a table's origins (see
/// `UrlTrigrams::literals`): whether a project's URLs may hold them all.
pub struct RequiredLiterals<'a> {
    index: &'a UrlTrigrams,
    origins: &'a Interner,
    checks: Vec<LiteralCheck>,
}

impl RequiredLiterals<'_> {
    /// Whether entries of `project` may have a URL containing every literal:
    /// exact for a literal within an origin, a filter test for one within the
    /// rest, both for one that begins in an origin and ends in the rest.
    pub fn may_hold(&self, project: Sym) -> bool {
        let index = self.index;
        let (Some(filter), Some(origins)) = (
            index.filters.get(slot(project)),
            index.origins_of.get(slot(project)),
        ) else {
            return false;
        };
        // Whether the rest of one of the project's URLs may hold `literal`
        // (`bits`: its trigrams' bits in the filter); the wide filter, if
        // any, is looked up only when the first one passes.
        let rest_may_hold = |literal: &[u8], bits: &[u32]| {
            filter.has_all(bits)
                && index
                    .wide_of(slot(project))
                    .is_none_or(|wide| wide.may_contain(literal))
        };
        self.checks.iter().all(|check| {
            if origins.count == OVERFLOWED {
                return true;
            }
            let by_origin = |id: Sym| check.by_origin.get(id as usize).copied();
            // Exact and cheapest first: the literal inside one of its origins.
            origins
                .ids()
                .iter()
                .any(|&id| by_origin(id) == Some(IN_ORIGIN))
                || rest_may_hold(&check.literal, &check.bits)
                || origins.ids().iter().any(|&id| {
                    by_origin(id) == Some(SPANS) && {
                        let origin = self.origins.get(id).as_bytes();
                        spans_from(origin, &check.literal).any(|k| {
                            let rest = check.literal.get(k..).unwrap_or(&[]);
                            rest_may_hold(rest, &UrlTrigrams::required_bits(&[rest.to_vec()]))
                        })
                    }
                })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn rows_restored_from_their_counts_are_the_column_s_and_other_counts_are_refused() {
        // Past a chunk, with rows of no project, and projects of very unequal size.
        let mut column = Chunked::default();
        let mut state = 7u64;
        for _ in 0..150_000 {
            let random = crate::test_rng::xorshift(&mut state);
            let project = match random % 100 {
                0..=59 => 0,
                60..=89 => (random >> 40) as Sym % 4 + 1,
                90..=98 => (random >> 40) as Sym % 40 + 5,
                _ => NONE,
            };
            column.push(project);
        }
        let mut built = ProjectRows::default();
        built.update(&column, 0, None);
        let counts = ProjectRows::slot_counts(&column);
        assert_eq!(counts.len(), built.slot_count());
        let restored = ProjectRows::from_counted_column(&column, &counts, 46).unwrap();
        assert_eq!(restored.slots, built.slots);
        assert_eq!(restored.heap_bytes(), built.heap_bytes());
        assert!(ProjectRows::from_counted_column(&column, &counts, 45).is_none());
        let refused = |change: &dyn Fn(&mut Vec<u32>)| {
            let mut wrong = counts.clone();
            change(&mut wrong);
            ProjectRows::from_counted_column(&column, &wrong, 46).is_none()
        };
        assert!(refused(&|c| c[3] += 1), "one row too many");
        assert!(refused(&|c| {
            c[3] += 1;
            c[4] -= 1;
        }));
        assert!(
            refused(&|c| c.truncate(c.len() - 1)),
            "a slot's rows left out"
        );
        assert!(refused(&|c| {
            let last = c.pop().unwrap();
            c[0] += last;
        }));
        assert!(refused(&|c| c.clear()));
        let one_more_empty = [&counts[..], &[0]].concat();
        assert!(
            ProjectRows::from_counted_column(&column, &one_more_empty, 47).is_none(),
            "a last slot with no rows, which `slot_counts` never writes"
        );
        let empty = Chunked::default();
        let none = ProjectRows::from_counted_column(&empty, &[], 1).unwrap();
        assert_eq!(none.slot_count(), 0);
    }

    /// What `check_origins` decides, asked of each origin alone.
    fn each_alone(origins: &[String], literal: &[u8]) -> Vec<u8> {
        origins
            .iter()
            .map(|origin| {
                let origin = origin.as_bytes();
                if memchr::memmem::find(origin, literal).is_some() {
                    IN_ORIGIN
                } else if spans_from(origin, literal).next().is_some() {
                    SPANS
                } else {
                    0
                }
            })
            .collect()
    }

    proptest! {
        /// Over origins of few letters (so that matches overlap, repeat and
        /// cross from one origin into the next), and empty ones, one search
        /// of their text decides as each origin searched alone.
        #[test]
        fn one_search_of_all_origins_decides_as_each_alone(
            origins in prop::collection::vec("[ab.]{0,6}", 1..40),
            literal in "[ab.]{1,5}",
        ) {
            let mut interner = Interner::default();
            for origin in &origins {
                interner.intern(origin);
            }
            let distinct: Vec<String> = (0..interner.len() as Sym).map(|id| interner.get(id).to_owned()).collect();
            prop_assert_eq!(check_origins(&interner, literal.as_bytes()), each_alone(&distinct, literal.as_bytes()));
        }
    }

    #[test]
    fn a_match_across_two_origins_hides_none_inside_the_next() {
        let mut interner = Interner::default();
        for origin in ["a", "aa", "xa", "ab"] {
            interner.intern(origin);
        }
        assert_eq!(
            check_origins(&interner, b"aa"),
            vec![SPANS, IN_ORIGIN, SPANS, 0]
        );
        assert_eq!(check_origins(&interner, b""), vec![IN_ORIGIN; 4]);
    }

    #[test]
    fn origins_whose_text_spans_pieces_decide_as_each_alone() {
        // 20,000 origins of about 30 bytes: the text is in several pieces.
        let origins: Vec<String> = (0..20_000)
            .map(|i| format!("https://tenant-{i}.supabase.co"))
            .collect();
        let mut interner = Interner::default();
        for origin in &origins {
            interner.intern(origin);
        }
        assert!(interner.parts().0.pieces().count() > 1);
        for literal in [
            "tenant-1",
            "co",
            "o",
            "https://tenant-19999.supabase.co",
            "nt-1999",
        ] {
            assert_eq!(
                check_origins(&interner, literal.as_bytes()),
                each_alone(&origins, literal.as_bytes()),
                "{literal}"
            );
        }
    }
}
