//! usage.api-counts: time-bucketed request counts of one project (matched by a
//! regular expression on the request URL), split by API area. This module owns
//! the endpoint: settings, parameters, parsing, the run and the row.

use std::collections::{BTreeMap, HashMap};

use memchr::memmem;
use regex::{Regex, RegexBuilder};
use regex_syntax::hir::{Hir, HirKind, Look};
use regex_syntax::ParserBuilder;
use serde::Serialize;
use ts_rs::TS;

use super::spec::{named_values, required, EndpointSpec, Parameter, Rows, MAX_ROWS};
use super::Endpoint;
use crate::error::{Error, Result};
use crate::ingest::area;
use crate::limits::Limits;
use crate::params::Params;
use crate::reach::{Merge, Projects, Reach};
use crate::store::{
    chunk_ranges, in_chunk, lower_bound, lower_bound_from, runs_by_chunk, slot, EdgeTable,
    IntKeyMap, Selected, Store, Sym, UrlNames, UrlTrigrams, NONE, SOLE, SOLE_URL,
};
use crate::timestamp::{format_datetime, truncate, Micros, DAY, HOUR, MINUTE};

named_values! {
    /// The `interval` parameter: window and bucket width. The first three are
    /// the reference's; the others are what Supabase's Management API
    /// (`15min` … `7day`) and Studio (`1hr`, `1day`, `7day`) send.
    pub enum ApiCountsInterval {
        Minutely = "minutely",
        Hourly = "hourly",
        Daily = "daily",
        FifteenMinutes = "15min",
        ThirtyMinutes = "30min",
        OneHour = "1hr",
        ThreeHours = "3hr",
        OneDay = "1day",
        ThreeDays = "3day",
        SevenDays = "7day",
    }
}

impl ApiCountsInterval {
    pub fn parse(value: &str) -> Result<ApiCountsInterval> {
        ApiCountsInterval::parse_named(value, "interval")
    }

    /// (window counted back from now, bucket width). Studio charts `1hr` as
    /// the last 60 minutes, `1day` as the last 24 hours and `7day` as the last
    /// 7 days; buckets keep a chart between 15 and 72 points.
    pub fn window_and_bucket(self) -> (Micros, Micros) {
        match self {
            ApiCountsInterval::Minutely | ApiCountsInterval::OneHour => (60 * MINUTE, MINUTE),
            ApiCountsInterval::Hourly => (HOUR, HOUR),
            ApiCountsInterval::Daily | ApiCountsInterval::SevenDays => (7 * DAY, DAY),
            ApiCountsInterval::FifteenMinutes => (15 * MINUTE, MINUTE),
            ApiCountsInterval::ThirtyMinutes => (30 * MINUTE, MINUTE),
            ApiCountsInterval::ThreeHours => (3 * HOUR, HOUR),
            ApiCountsInterval::OneDay => (DAY, HOUR),
            ApiCountsInterval::ThreeDays => (3 * DAY, HOUR),
        }
    }
}

pub(crate) struct ApiCounts;

/// What a Management API call without `interval` gets: the last 24 hours by hour.
const MANAGEMENT_DEFAULT_INTERVAL: &str = "1day";

/// Which requests a call counts.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Selection {
    /// Requests of any entry whose URL matches `project` as a pattern (the reference).
    UrlPattern,
    /// Requests whose URL matches the pattern, of this project's own entries only
    /// (a project-restricted key: another project's URL may contain the ref).
    UrlPatternWithin(String),
    /// Every request of `project`'s own entries (the Management API's path,
    /// whose ref appears in no URL when self-hosted).
    ProjectEntries,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ApiCountsQuery {
    /// The pattern, or for `ProjectEntries` the project ref.
    project: String,
    selection: Selection,
    interval: ApiCountsInterval,
    /// Compiled-size limit of the `project` pattern (`Limits::max_regex_bytes`).
    regex_limit: usize,
}

impl ApiCountsQuery {
    /// The compiled pattern, when requests are matched by URL.
    fn pattern(&self) -> Result<Option<UrlPattern>> {
        match self.selection {
            Selection::ProjectEntries => Ok(None),
            _ => UrlPattern::new(&self.project, self.regex_limit).map(Some),
        }
    }

    /// The project whose own entries alone count, if one does.
    fn entry_project(&self) -> Option<&str> {
        match &self.selection {
            Selection::UrlPattern => None,
            Selection::UrlPatternWithin(project) => Some(project),
            Selection::ProjectEntries => Some(&self.project),
        }
    }
}

/// One bucket of the answer; a count is 0 when no request of its area matched.
#[derive(Serialize, TS)]
pub struct ApiCountsRow {
    /// Bucket start as a UTC datetime, e.g. "2026-11-20T12:00:00".
    timestamp: String,
    total_rest_requests: i64,
    total_storage_requests: i64,
    total_auth_requests: i64,
    total_realtime_requests: i64,
}

impl Endpoint for ApiCounts {
    const SPEC: EndpointSpec = EndpointSpec {
        name: "usage.api-counts",
        aliases: &[],
        management_api: true,
        summary: "Time-bucketed request counts of one project, split by API area (rest, storage, auth, realtime).",
        stream: "edge_logs",
        max_rows: MAX_ROWS,
        cache_seconds: Some(900),
        cache_warming_seconds: Some(300),
        parameters: &[
            Parameter::text("project", true, "abcdefghijklmnopqrst", "a regular expression matched against request URLs"),
            Parameter::choice("interval", ApiCountsInterval::NAMES, "hourly", "window and bucket width; any other value is an error (on the Management API route it is optional, 1day when absent)"),
        ],
    };
    type Query = ApiCountsQuery;
    type Row = ApiCountsRow;

    // The pattern is compiled (and so validated) once, when the query runs; an
    // invalid one is an error, and errors are never cached.
    fn parse(params: &Params, limits: &Limits) -> Result<ApiCountsQuery> {
        Ok(ApiCountsQuery {
            project: required(params, "project")?.to_owned(),
            selection: Selection::UrlPattern,
            interval: ApiCountsInterval::parse(required(params, "interval")?)?,
            regex_limit: limits.max_regex_bytes,
        })
    }

    /// The path's ref selects the project's own entries (self-hosted refs such
    /// as `default` never appear in URLs); `interval` is optional.
    fn parse_management(
        project_ref: &str,
        params: &Params,
        limits: &Limits,
    ) -> Result<ApiCountsQuery> {
        let interval = params
            .non_empty("interval")
            .unwrap_or(MANAGEMENT_DEFAULT_INTERVAL);
        Ok(ApiCountsQuery {
            project: project_ref.to_owned(),
            selection: Selection::ProjectEntries,
            interval: ApiCountsInterval::parse(interval)?,
            regex_limit: limits.max_regex_bytes,
        })
    }

    fn project(query: &ApiCountsQuery) -> &str {
        &query.project
    }

    fn restrict_to_project(query: &mut ApiCountsQuery) {
        if query.selection == Selection::UrlPattern {
            query.selection = Selection::UrlPatternWithin(query.project.clone());
        }
    }

    const MERGE: Merge = Merge::AddByKey {
        key: "timestamp",
        limit: MAX_ROWS,
    };

    /// A pattern reaches every project whose URLs may hold the literals it
    /// requires; a project restriction or the Management API's ref, one project.
    fn reach(query: &ApiCountsQuery, now: Micros) -> Result<Reach> {
        let projects = match (query.entry_project(), query.pattern()?) {
            (Some(project), _) => Projects::One(project.to_owned()),
            (None, Some(pattern)) => {
                Projects::UrlsWith(UrlTrigrams::required_bits(&pattern.required))
            }
            (None, None) => Projects::UrlsWith(Vec::new()),
        };
        let (window, _) = query.interval.window_and_bucket();
        Ok(Reach {
            projects,
            from: now.saturating_sub(window),
            to: None,
        })
    }

    fn run(query: &ApiCountsQuery, store: &Store, now: Micros, rows: &mut Rows) -> Result<()> {
        let pattern = query.pattern()?;
        run(&store.edge, pattern.as_ref(), query, now, rows);
        Ok(())
    }
}

fn compile_project_regex(pattern: &str, size_limit: usize) -> Result<Regex> {
    RegexBuilder::new(pattern)
        .size_limit(size_limit)
        .dfa_size_limit(2 * size_limit)
        .nest_limit(100)
        .build()
        .map_err(|e| match e {
            regex::Error::CompiledTooBig(limit) => Error::invalid(
                "project",
                format!("the regular expression is too large (compiled size limit {limit} bytes)"),
            ),
            other => Error::invalid(
                "project",
                format!(
                    "not a valid regular expression: {}",
                    other.to_string().lines().last().unwrap_or("syntax error")
                ),
            ),
        })
}

#[derive(Default, Clone, Copy)]
struct Counts {
    rest: i64,
    storage: i64,
    auth: i64,
    realtime: i64,
}

impl Counts {
    /// Adds `n` requests whose path touches the areas in `areas`.
    fn add(&mut self, areas: u8, n: i64) {
        self.rest += n * i64::from(areas & area::REST != 0);
        self.storage += n * i64::from(areas & area::STORAGE != 0);
        self.auth += n * i64::from(areas & area::AUTH != 0);
        self.realtime += n * i64::from(areas & area::REALTIME != 0);
    }
}

/// A compiled `project` pattern and what its syntax tells: the literals every
/// match contains (to skip projects), whether it is a plain literal, maybe
/// anchored at the start (then a substring search answers, which costs far
/// less per URL than the regex engine), and whether a match in a URL's origin
/// is a match of the URL.
struct UrlPattern {
    regex: Regex,
    required: Vec<Vec<u8>>,
    plain: Option<Plain>,
    /// No assertion looks past a match's end (`$`, `\b`): a match within a
    /// prefix of a text is then a match of the text, so the URLs of an origin
    /// it matches match without being read.
    prefix_decides: bool,
}

enum Plain {
    Contains(Box<memmem::Finder<'static>>),
    StartsWith(Vec<u8>),
}

impl UrlPattern {
    fn new(pattern: &str, size_limit: usize) -> Result<UrlPattern> {
        let regex = compile_project_regex(pattern, size_limit)?;
        let hir = ParserBuilder::new()
            .nest_limit(100)
            .build()
            .parse(pattern)
            .ok();
        let mut required = Vec::new();
        if let Some(hir) = &hir {
            required_literals(hir, &mut required);
        }
        let plain = hir.as_ref().and_then(|hir| match hir.kind() {
            HirKind::Literal(literal) => Some(Plain::Contains(Box::new(
                memmem::Finder::new(&literal.0).into_owned(),
            ))),

            HirKind::Concat(parts) => match parts.as_slice() {
                [start, literal] => match (start.kind(), literal.kind()) {
                    (HirKind::Look(Look::Start), HirKind::Literal(literal)) => {
                        Some(Plain::StartsWith(literal.0.to_vec()))
                    }
                    _ => None,
                },
                _ => None,
            },
            _ => None,
        });
        let prefix_decides = hir.as_ref().is_some_and(|hir| {
            let looks_behind_only = [Look::Start, Look::StartLF, Look::StartCRLF];
            hir.properties()
                .look_set()
                .iter()
                .all(|look| looks_behind_only.contains(&look))
        });
        Ok(UrlPattern {
            regex,
            required,
            plain,
            prefix_decides,
        })
    }

    fn is_match(&self, url: &str) -> bool {
        match &self.plain {
            Some(Plain::Contains(finder)) => finder.find(url.as_bytes()).is_some(),
            Some(Plain::StartsWith(prefix)) => url.as_bytes().starts_with(prefix),
            None => self.regex.is_match(url),
        }
    }
}

/// Adds to `out` the literal byte strings every match of `hir` contains (none
/// under case-insensitivity or alternation, which this does not look into).
fn required_literals(hir: &Hir, out: &mut Vec<Vec<u8>>) {
    match hir.kind() {
        HirKind::Literal(literal) => out.push(literal.0.to_vec()),
        HirKind::Capture(capture) => required_literals(&capture.sub, out),
        HirKind::Repetition(repetition) if repetition.min >= 1 => {
            required_literals(&repetition.sub, out)
        }
        HirKind::Concat(parts) => parts.iter().for_each(|part| required_literals(part, out)),
        _ => {}
    }
}

/// What one project's entries contribute, decided once per project.
#[derive(Clone, Copy, PartialEq, Eq)]
enum ProjectMatch {
    /// Not a candidate: none of its URLs can match.
    Skip,
    /// Each request's URL is matched.
    EachUrl,
    /// The pattern matches every origin of the project's URLs, so every
    /// request with a URL counts and none is looked at.
    EveryUrl,
}

/// Whether each URL of the table matches the pattern, decided once per URL.
/// Few candidate rows remember answers in a map; many, in a table over the
/// whole URL dictionary (`UNTRIED`, `NO`, `YES`), which would otherwise cost
/// more to allocate than a short window costs to scan. Where a match in the
/// origin decides, each origin is tried once and its URLs are not read, and a
/// project all of whose origins match counts without its URLs being looked up.
struct UrlMatches<'a> {
    pattern: Option<&'a UrlPattern>,
    urls: &'a UrlNames,
    index: &'a UrlTrigrams,
    dense: Vec<u8>,
    sparse: IntKeyMap<Sym, bool>,
    /// Where a URL is put together to be matched.
    url: String,
    /// Per origin, whether the pattern matches it (`UNTRIED`, `NO`, `YES`);
    /// empty unless `prefix_decides`.
    by_origin: Vec<u8>,
    /// Per project slot (`slot`), its `ProjectMatch` once decided; `Skip`
    /// from the start for a project that is not a candidate.
    by_project: Vec<Option<ProjectMatch>>,
}

const UNTRIED: u8 = 0;
const NO: u8 = 1;
const YES: u8 = 2;

fn decision(matched: bool) -> u8 {
    if matched {
        YES
    } else {
        NO
    }
}

impl<'a> UrlMatches<'a> {
    /// `candidates`: the projects whose entries can count, when not all can.
    fn new(
        pattern: Option<&'a UrlPattern>,
        table: &'a EdgeTable,
        rows: usize,
        candidates: Option<&[Sym]>,
    ) -> UrlMatches<'a> {
        let urls = &table.urls;
        let index = &table.url_trigrams;
        let dense = if pattern.is_some() && rows.saturating_mul(4) >= urls.len() {
            vec![UNTRIED; urls.len()]
        } else {
            Vec::new()
        };
        let by_origin = match pattern {
            Some(p) if p.prefix_decides => vec![UNTRIED; urls.origins().len()],
            _ => Vec::new(),
        };
        let slots = table.projects.len() + 1;
        let by_project = match candidates {
            None => vec![None; slots],
            Some(candidates) => {
                let mut by_project = vec![Some(ProjectMatch::Skip); slots];
                for &project in candidates {
                    if let Some(memo) = by_project.get_mut(slot(project)) {
                        *memo = None;
                    }
                }
                by_project
            }
        };
        UrlMatches {
            pattern,
            urls,
            index,
            dense,
            sparse: HashMap::default(),
            url: String::new(),
            by_origin,
            by_project,
        }
    }

    /// What the entries of `project` contribute.
    fn project(&mut self, project: Sym) -> ProjectMatch {
        match self.by_project.get(slot(project)) {
            Some(Some(decided)) => return *decided,
            Some(None) => {}
            None => return ProjectMatch::EachUrl,
        }
        let every_origin_matches = match (self.pattern, self.index.origins_of(project)) {
            (Some(pattern), Some(origins)) if pattern.prefix_decides && !origins.is_empty() => {
                origins.iter().all(|&o| self.origin_matches(pattern, o))
            }
            _ => false,
        };
        let decided = if every_origin_matches {
            ProjectMatch::EveryUrl
        } else {
            ProjectMatch::EachUrl
        };
        if let Some(memo) = self.by_project.get_mut(slot(project)) {
            *memo = Some(decided);
        }
        decided
    }

    /// Whether the pattern matches `origin` (its URLs then all match); false
    /// when origins do not decide.
    fn origin_matches(&mut self, pattern: &UrlPattern, origin: Sym) -> bool {
        let Some(slot) = self.by_origin.get_mut(origin as usize) else {
            return false;
        };
        if *slot == UNTRIED {
            *slot = decision(pattern.is_match(self.urls.origins().get(origin)));
        }
        *slot == YES
    }

    fn matches(&mut self, url: Sym) -> bool {
        let Some(pattern) = self.pattern else {
            return true;
        };
        if url == NONE {
            return false;
        }
        // An origin that matches answers before any memo is looked at: an
        // index into a small table, where the memo of a URL is a hash lookup.
        if self.origin_matches(pattern, self.urls.origin_of(url)) {
            return true;
        }
        match self.dense.get(url as usize) {
            Some(&UNTRIED) => {
                let matched = pattern.is_match(self.urls.get(url, &mut self.url));
                if let Some(slot) = self.dense.get_mut(url as usize) {
                    *slot = decision(matched);
                }
                matched
            }
            Some(&slot) => slot == YES,
            None => *self
                .sparse
                .entry(url)
                .or_insert_with(|| pattern.is_match(self.urls.get(url, &mut self.url))),
        }
    }
}

/// Requests tallied by their area bits (summed into `Counts` once per bucket).
type AreaTally = [i64; 16];

fn push_bucket(rows: &mut Rows, bucket: Micros, tally: &AreaTally) {
    let mut counts = Counts::default();
    for (bits, &n) in (0u8..).zip(tally) {
        counts.add(bits, n);
    }
    rows.push(&ApiCountsRow {
        timestamp: format_datetime(bucket),
        total_rest_requests: counts.rest,
        total_storage_requests: counts.storage,
        total_auth_requests: counts.auth,
        total_realtime_requests: counts.realtime,
    });
}

/// Tallies the matching requests of one entry of `project` (its
/// `sole_request` and `request`); whether any matched.
fn tally_requests(
    table: &EdgeTable,
    project: Sym,
    (sole, request): (u8, u32),
    matches: &mut UrlMatches,
    tally: &mut AreaTally,
) -> bool {
    let every_url = match matches.project(project) {
        ProjectMatch::Skip => return false,
        ProjectMatch::EachUrl => false,
        ProjectMatch::EveryUrl => true,
    };
    let mut matched = false;
    for (url, area_bits) in table.requests_of(sole, request) {
        let counts = if every_url {
            url != NONE
        } else {
            matches.matches(url)
        };
        if counts {
            matched = true;
            if let Some(n) = tally.get_mut(usize::from(area_bits & 15)) {
                *n += 1;
            }
        }
    }
    matched
}

/// `pattern`: the URL pattern, or `None` when every request of the selected
/// entries counts.
fn run(
    table: &EdgeTable,
    pattern: Option<&UrlPattern>,
    query: &ApiCountsQuery,
    now: Micros,
    rows: &mut Rows,
) {
    let entry_project = match query.entry_project() {
        Some(name) => match table.projects.lookup(name) {
            Some(id) => Some(id),
            None => return,
        },
        None => None,
    };
    let (window, width) = query.interval.window_and_bucket();
    let window = lower_bound(&table.timestamp, now.saturating_sub(window))..table.len();

    let candidates = candidate_projects(table, pattern, entry_project);
    let candidates = candidates.as_deref();
    match candidates.map(|projects| (projects, table.rows_of(projects, window.clone()))) {
        Some((projects, Selected::Own(own))) => {
            count_own_rows(table, pattern, projects, &own, width, rows)
        }
        // A scan skips the rows of projects that are not candidates before
        // their URLs are looked at.
        _ => count_by_scan(table, pattern, candidates, window.start, width, rows),
    }
}

/// The projects whose entries can count (`None`: all may): the restricted
/// one, or those whose URLs may hold every literal the pattern requires.
fn candidate_projects(
    table: &EdgeTable,
    pattern: Option<&UrlPattern>,
    entry_project: Option<Sym>,
) -> Option<Vec<Sym>> {
    match entry_project {
        Some(project) => Some(vec![project]),
        None => pattern.filter(|p| !p.required.is_empty()).map(|p| {
            let literals = table.url_trigrams.literals(&p.required, &table.urls);
            (0..table.projects.len() as Sym)
                .chain([NONE])
                .filter(|&project| literals.may_hold(project))
                .collect()
        }),
    }
}

/// Counts the rows `own` (per project of `projects`, its row numbers in the window).
fn count_own_rows(
    table: &EdgeTable,
    pattern: Option<&UrlPattern>,
    projects: &[Sym],
    own: &[&[u32]],
    width: Micros,
    rows: &mut Rows,
) {
    let held = own.iter().map(|r| r.len()).sum();
    let mut matches = UrlMatches::new(pattern, table, held, Some(projects));
    let mut buckets: BTreeMap<Micros, AreaTally> = BTreeMap::new();
    let mut add = |bucket: Micros, tally: &AreaTally| {
        let sums = buckets.entry(bucket).or_default();
        for (sum, n) in sums.iter_mut().zip(tally) {
            *sum += n;
        }
    };
    for (&project, project_rows) in projects.iter().zip(own) {
        // A project's rows are in time order: each run of one bucket is tallied
        // apart (a range check per row, not a division) and added to the
        // buckets once, if any of its requests matched.
        let mut bucket = Micros::MIN..Micros::MIN;
        let mut tally = AreaTally::default();
        let mut matched = false;
        for (chunk, run) in runs_by_chunk(project_rows) {
            let (timestamps, requests, soles) = (
                table.timestamp.chunk(chunk),
                table.request.chunk(chunk),
                table.sole_request.chunk(chunk),
            );
            for &row in run {
                let at = in_chunk(row);
                let (Some(&timestamp), Some(&request), Some(&sole)) =
                    (timestamps.get(at), requests.get(at), soles.get(at))
                else {
                    continue;
                };
                if !bucket.contains(&timestamp) {
                    if matched {
                        add(bucket.start, &tally);
                    }
                    tally = AreaTally::default();
                    matched = false;
                    let start = truncate(timestamp, width);
                    bucket = start..start.saturating_add(width);
                }
                matched |=
                    tally_requests(table, project, (sole, request), &mut matches, &mut tally);
            }
        }
        if matched {
            add(bucket.start, &tally);
        }
    }
    for (bucket, tally) in &buckets {
        if rows.is_full() {
            return;
        }
        push_bucket(rows, *bucket, tally);
    }
}

/// Counts by scanning every entry from row `start` on; `candidates`, when
/// given, are the projects whose entries can count.
fn count_by_scan(
    table: &EdgeTable,
    pattern: Option<&UrlPattern>,
    candidates: Option<&[Sym]>,
    start: usize,
    width: Micros,
    rows: &mut Rows,
) {
    let scanned = table.len().saturating_sub(start);
    let mut matches = UrlMatches::new(pattern, table, scanned, candidates);
    // Each project's decision as a weight (`Skip` 0, `EveryUrl` 1, `EachUrl`
    // 2), decided before a scan of more rows than there are projects: a row's
    // decision is then one load, and a sole request of a project whose
    // origins decide counts by arithmetic, not by a branch that rows of
    // unlike projects would mispredict. A shorter scan decides the projects
    // it meets, each at its first row (`tally_requests`).
    let weights: Vec<u8> = if scanned > table.projects.len() {
        std::iter::once(NONE)
            .chain(0..table.projects.len() as Sym)
            .map(|project| match matches.project(project) {
                ProjectMatch::Skip => 0,
                ProjectMatch::EveryUrl => 1,
                ProjectMatch::EachUrl => 2,
            })
            .collect()
    } else {
        Vec::new()
    };
    // Rows are time-sorted: each bucket is the slice up to the next bucket start,
    // found by searching on from the bucket's first row (one division per
    // bucket, not per row). Within it,
    // matching requests are tallied by their area bits and summed once at the end.
    let mut at = start;
    while let Some(&timestamp) = table.timestamp.get(at) {
        let bucket = truncate(timestamp, width);
        let end = lower_bound_from(&table.timestamp, at, bucket.saturating_add(width)).max(at + 1);
        let mut tally = AreaTally::default();
        let mut matched = false;
        for piece in chunk_ranges(at..end) {
            let (Some(requests), Some(projects), Some(soles)) = (
                table.request.piece(piece.clone()),
                table.project.piece(piece.clone()),
                table.sole_request.piece(piece),
            ) else {
                break;
            };
            let rows = requests.iter().zip(projects).zip(soles);
            for ((&request, &row_project), &sole) in rows {
                let weight = weights.get(slot(row_project)).copied().unwrap_or(2);
                if sole & SOLE != 0 && weight < 2 {
                    // Its one request counts by the project alone (and if it
                    // has a URL): its URL is not matched.
                    let counts = weight & u8::from(sole & SOLE_URL != 0);
                    if let Some(n) = tally.get_mut(usize::from(sole & 15)) {
                        *n += i64::from(counts);
                    }
                    matched |= counts != 0;
                } else {
                    matched |= tally_requests(
                        table,
                        row_project,
                        (sole, request),
                        &mut matches,
                        &mut tally,
                    );
                }
            }
        }
        if matched {
            push_bucket(rows, bucket, &tally);
            if rows.is_full() {
                return;
            }
        }
        at = end;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ingest::{Repeated, StagedEdge, StagedRequest};
    use std::borrow::Cow;

    /// A pattern costs what the projects it can match hold, whatever the refs
    /// look like: over `tenant-1` … `tenant-2000`, which share most of their
    /// characters, a host's pattern has that one project as its candidate,
    /// and `tenant-7` the 111 whose URLs hold it, not every project (issue
    /// 23; the time this saves is measured in bench/pattern-selectivity.mjs).
    #[test]
    fn a_pattern_over_refs_alike_reads_only_the_projects_it_can_match() {
        let refs: Vec<String> = (1..=2000).map(|k| format!("tenant-{k}")).collect();
        let urls: Vec<String> = refs
            .iter()
            .map(|r| format!("https://{r}.supabase.co/rest/v1/todos?id=eq.1"))
            .collect();
        let entries: Vec<StagedEdge> = refs
            .iter()
            .zip(&urls)
            .enumerate()
            .map(|(i, (project, url))| StagedEdge {
                timestamp: 1_795_177_796_000_000 + i as Micros,
                id: Cow::Owned(format!("e{i}")),
                event_message: None,
                project: Some(Cow::Borrowed(project)),
                metadata: None,
                requests: Repeated::One(StagedRequest {
                    url: Some(Cow::Borrowed(url)),
                    areas: area::REST,
                }),
            })
            .collect();
        let mut table = EdgeTable::default();
        table.append(&entries);
        for pattern in [
            r"^https://tenant-7\.",
            r"tenant-7\.supabase\.co",
            r"tenant-1999\.",
            "tenant-7",
        ] {
            let regex = Regex::new(pattern).unwrap();
            let mut matching: Vec<Sym> = refs
                .iter()
                .zip(&urls)
                .filter(|(_, url)| regex.is_match(url))
                .map(|(project, _)| table.projects.lookup(project).unwrap())
                .collect();
            matching.sort_unstable();
            let url_pattern = UrlPattern::new(pattern, 1 << 20).unwrap();
            let candidates = candidate_projects(&table, Some(&url_pattern), None).unwrap();
            assert_eq!(candidates, matching, "{pattern}");
        }
    }
}
