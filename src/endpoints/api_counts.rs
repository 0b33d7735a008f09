//! usage.api-counts: time-bucketed request counts of one project (matched by a
//! regular expression on the request URL), split by API area.

use std::collections::HashMap;

use regex::{Regex, RegexBuilder};

use crate::error::{Error, Result};
use crate::ingest::area;
use crate::json;
use crate::store::{lower_bound, EdgeTable, NONE};
use crate::timestamp::{format_datetime, truncate, Micros, DAY, HOUR, MINUTE};

/// Largest compiled program accepted for the `project` pattern, in bytes.
/// Default compiled-size limit of a `project` pattern (`Limits::max_regex_bytes`).
pub const REGEX_SIZE_LIMIT: usize = 1 << 20;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ApiCountsInterval {
    Minutely,
    Hourly,
    Daily,
}

impl ApiCountsInterval {
    pub fn parse(value: &str) -> Result<ApiCountsInterval> {
        match value {
            "minutely" => Ok(ApiCountsInterval::Minutely),
            "hourly" => Ok(ApiCountsInterval::Hourly),
            "daily" => Ok(ApiCountsInterval::Daily),
            other => Err(Error::invalid(
                "interval",
                format!(
                    "`{}` is not one of minutely, hourly, daily",
                    other.chars().take(50).collect::<String>()
                ),
            )),
        }
    }

    /// (window counted back from now, bucket width).
    pub fn window_and_bucket(self) -> (Micros, Micros) {
        match self {
            ApiCountsInterval::Minutely => (60 * MINUTE, MINUTE),
            ApiCountsInterval::Hourly => (HOUR, HOUR),
            ApiCountsInterval::Daily => (7 * DAY, DAY),
        }
    }
}

pub(super) fn compile_project_regex(pattern: &str, size_limit: usize) -> Result<Regex> {
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

fn push_row(out: &mut String, rows: &mut usize, bucket: Micros, counts: Counts) {
    if *rows > 0 {
        out.push(',');
    }
    *rows += 1;
    out.push('{');
    json::push_key(out, "timestamp");
    json::push_str(out, &format_datetime(bucket));
    out.push(',');
    json::push_key(out, "total_rest_requests");
    json::push_int(out, counts.rest);
    out.push(',');
    json::push_key(out, "total_storage_requests");
    json::push_int(out, counts.storage);
    out.push(',');
    json::push_key(out, "total_auth_requests");
    json::push_int(out, counts.auth);
    out.push(',');
    json::push_key(out, "total_realtime_requests");
    json::push_int(out, counts.realtime);
    out.push('}');
}

pub(super) fn run(
    table: &EdgeTable,
    project: &Regex,
    entry_project: Option<&str>,
    interval: ApiCountsInterval,
    now: Micros,
    out: &mut String,
) {
    let entry_project = match entry_project {
        Some(name) => match table.projects.lookup(name) {
            Some(id) => Some(id),
            None => return,
        },
        None => None,
    };
    let (window, width) = interval.window_and_bucket();
    let start = lower_bound(&table.timestamp, now.saturating_sub(window));

    // The pattern is matched once per distinct URL. A window with few entries
    // remembers its answers in a map; a long one in a table over the whole URL
    // dictionary (0 = not yet tried, 1 = no, 2 = yes), which would otherwise cost
    // more to allocate than a short window costs to scan.
    let window_entries = table.len().saturating_sub(start);
    let mut dense = if window_entries.saturating_mul(4) >= table.urls.len() {
        vec![0u8; table.urls.len()]
    } else {
        Vec::new()
    };
    let mut sparse: HashMap<u32, bool> = HashMap::new();
    let mut matches_url = |url: u32| -> bool {
        if url == NONE {
            return false;
        }
        if let Some(slot) = dense.get_mut(url as usize) {
            if *slot == 0 {
                *slot = if project.is_match(table.urls.get(url)) {
                    2
                } else {
                    1
                };
            }
            return *slot == 2;
        }
        *sparse
            .entry(url)
            .or_insert_with(|| project.is_match(table.urls.get(url)))
    };

    // Rows are time-sorted: each bucket is the slice up to the next bucket start,
    // found by binary search (one division per bucket, not per row). Within it,
    // matching requests are tallied by their area bits and summed once at the end.
    let mut rows = 0usize;
    let mut at = start;
    while let Some(&timestamp) = table.timestamp.get(at) {
        let bucket = truncate(timestamp, width);
        let end = lower_bound(&table.timestamp, bucket.saturating_add(width)).max(at + 1);
        let (Some(requests), Some(projects)) =
            (table.requests.get(at..end), table.project.get(at..end))
        else {
            break;
        };
        let mut by_areas = [0i64; 16];
        let mut matched = false;
        for (&(first, count), &row_project) in requests.iter().zip(projects) {
            if entry_project.is_some_and(|p| p != row_project) {
                continue;
            }
            let span = first as usize..(first + count) as usize;
            let (Some(urls), Some(areas)) = (
                table.request_url.get(span.clone()),
                table.request_areas.get(span),
            ) else {
                continue;
            };
            for (&url, &area_bits) in urls.iter().zip(areas) {
                if matches_url(url) {
                    matched = true;
                    if let Some(tally) = by_areas.get_mut(usize::from(area_bits & 15)) {
                        *tally += 1;
                    }
                }
            }
        }
        if matched {
            let mut counts = Counts::default();
            for (bits, &n) in (0u8..).zip(&by_areas) {
                counts.add(bits, n);
            }
            push_row(out, &mut rows, bucket, counts);
            if rows >= super::MAX_ROWS {
                return;
            }
        }
        at = end;
    }
}
