//! functions.combined-stats: one function's invocations per time bucket, by
//! status class, with execution times, as Supabase's Management API route of
//! that name answers (Studio's edge function overview reads it). This module
//! owns the endpoint.
//!
//! What the function stream holds decides which fields have values. Counts by
//! status class and execution times come from each invocation's response and
//! `execution_time_ms`. The log-level counts (`log_count`, `log_info_count`,
//! `log_warn_count`, `log_error_count`) count records of the function's own
//! console log stream (`function_logs`), and the CPU and memory figures
//! (`*_cpu_time_used`, `*_memory_used`) come from the runtime's shutdown
//! events in that stream; neither is in `function_edge_logs`, so they are null.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use ts_rs::TS;

use super::function_buckets::{fill_unless_scanned, FunctionBucket};
use super::spec::{named_values, required, EndpointSpec, Parameter, Rows, MAX_ROWS};
use super::Endpoint;
use crate::error::{Error, Result};
use crate::exact_sum::ExactSum;
use crate::limits::Limits;
use crate::params::Params;
use crate::reach::{answer_rows, Merge, Reach};
use crate::store::{lower_bound, Store, NO_STATUS};
use crate::timestamp::{truncate, Micros, DAY, HOUR, MINUTE};

named_values! {
    /// The `interval` parameter: window and bucket width (as Studio's edge
    /// function charts: the last 15 minutes, hour, 3 hours or day).
    pub enum CombinedStatsInterval {
        FifteenMinutes = "15min",
        OneHour = "1hr",
        ThreeHours = "3hr",
        OneDay = "1day",
    }
}

impl CombinedStatsInterval {
    /// (window counted back from now, bucket width).
    fn window_and_step(self) -> (Micros, Micros) {
        match self {
            CombinedStatsInterval::FifteenMinutes => (15 * MINUTE, MINUTE),
            CombinedStatsInterval::OneHour => (HOUR, MINUTE),
            CombinedStatsInterval::ThreeHours => (3 * HOUR, HOUR),
            CombinedStatsInterval::OneDay => (DAY, HOUR),
        }
    }
}

pub(crate) struct CombinedStats;

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CombinedStatsQuery {
    project: String,
    function_id: String,
    interval: CombinedStatsInterval,
}

/// One bucket of the answer.
#[derive(Serialize, Deserialize, TS, Default)]
pub struct CombinedStatsRow {
    /// Bucket start, microseconds since the Unix epoch.
    timestamp: Micros,
    requests_count: i64,
    /// Status 200–299.
    success_count: i64,
    /// Status 300–399.
    redirect_count: i64,
    /// Status 400–499.
    client_err_count: i64,
    /// Status 500 and above.
    server_err_count: i64,
    avg_execution_time: Option<f64>,
    max_execution_time: Option<f64>,
    /// Null: console log records are not in the function stream.
    log_count: Option<i64>,
    log_info_count: Option<i64>,
    log_warn_count: Option<i64>,
    log_error_count: Option<i64>,
    /// Null: CPU and memory figures are not in the function stream.
    avg_cpu_time_used: Option<f64>,
    max_cpu_time_used: Option<f64>,
    avg_memory_used: Option<f64>,
    avg_heap_memory_used: Option<f64>,
    avg_external_memory_used: Option<f64>,
}

impl Endpoint for CombinedStats {
    const SPEC: EndpointSpec = EndpointSpec {
        name: "functions.combined-stats",
        aliases: &[],
        management_api: true,
        summary: "One function's invocations per time bucket by status class (2xx, 3xx, 4xx, 5xx), with average and maximum execution time.",
        stream: "function_edge_logs",
        max_rows: MAX_ROWS,
        cache_seconds: Some(900),
        cache_warming_seconds: Some(300),
        parameters: &[
            Parameter::text("project", true, "abcdefghijklmnopqrst", "project reference (from the path on the Management API route)"),
            Parameter::text("function_id", true, "f-hello", "the function whose invocations count"),
            Parameter::choice("interval", CombinedStatsInterval::NAMES, "15min", "window and bucket width: 15min and 1hr by minute, 3hr and 1day by hour; any other value is an error"),
        ],
    };
    type Query = CombinedStatsQuery;
    type Row = CombinedStatsRow;

    fn parse(params: &Params, _limits: &Limits) -> Result<CombinedStatsQuery> {
        let interval = required(params, "interval")?;
        Ok(CombinedStatsQuery {
            project: required(params, "project")?.to_owned(),
            function_id: required(params, "function_id")?.to_owned(),
            interval: CombinedStatsInterval::parse_named(interval, "interval")?,
        })
    }

    fn project(query: &CombinedStatsQuery) -> &str {
        &query.project
    }

    const MERGE: Merge = Merge::BucketStates {
        key: "timestamp",
        limit: MAX_ROWS,
    };

    fn reach(query: &CombinedStatsQuery, now: Micros) -> Result<Reach> {
        let (window, step) = query.interval.window_and_step();
        Ok(Reach::buckets(&query.project, now, window, step))
    }

    fn run(query: &CombinedStatsQuery, store: &Store, now: Micros, rows: &mut Rows) -> Result<()> {
        for (timestamp, bucket) in fill(query, store, now) {
            if rows.is_full() {
                break;
            }
            rows.push(&bucket.finish(timestamp));
        }
        Ok(())
    }

    fn run_partial(
        query: &CombinedStatsQuery,
        store: &Store,
        now: Micros,
        rows: &mut Rows,
    ) -> Result<()> {
        for (timestamp, mut bucket) in fill(query, store, now) {
            bucket.row.timestamp = timestamp;
            rows.push(&BucketState {
                row: bucket.row,
                timed: bucket.timed as u64,
                sum: bucket.sum,
                max: bucket.max.map(f64::to_bits),
            });
        }
        Ok(())
    }

    /// Counts add, max is the largest, avg is the shares' sums over their
    /// counts: what one store answers.
    fn merge_states(bodies: &[&str], rows: &mut Rows) -> Result<()> {
        let mut merged: BTreeMap<Micros, Bucket> = BTreeMap::new();
        for body in bodies {
            for raw in answer_rows(body)? {
                let state: BucketState =
                    serde_json::from_str(raw.get()).map_err(|e| Error::BadShardAnswer {
                        reason: format!("a partial combined-stats row does not read ({e})"),
                    })?;
                let into = merged.entry(state.row.timestamp).or_default();
                let (row, from) = (&mut into.row, &state.row);
                row.requests_count += from.requests_count;
                row.success_count += from.success_count;
                row.redirect_count += from.redirect_count;
                row.client_err_count += from.client_err_count;
                row.server_err_count += from.server_err_count;
                if let Some(max) = state.max.map(f64::from_bits) {
                    into.sum.merge(&state.sum);
                    into.timed += state.timed as usize;
                    into.max = Some(into.max.map_or(max, |m| m.max(max)));
                }
            }
        }
        for (timestamp, bucket) in merged {
            if rows.is_full() {
                break;
            }
            rows.push(&bucket.finish(timestamp));
        }
        Ok(())
    }
}

/// The buckets of a call's window that hold invocations, by start.
fn fill(query: &CombinedStatsQuery, store: &Store, now: Micros) -> Vec<(Micros, Bucket)> {
    let table = &store.functions;
    let (Some(project), Some(function)) = (
        table.projects.lookup(&query.project),
        table.functions.lookup(&query.function_id),
    ) else {
        return Vec::new();
    };
    let (window, step) = query.interval.window_and_step();
    let first = truncate(now.saturating_sub(window), step);
    let last = truncate(now, step);
    let window = lower_bound(&table.timestamp, first)
        ..lower_bound(&table.timestamp, last.saturating_add(step));
    let mut buckets: Vec<Bucket> = Vec::new();
    buckets.resize_with(((last - first) / step + 1) as usize, Bucket::default);
    let to_scan = fill_unless_scanned(
        table,
        project,
        Some(function),
        window,
        (first, step),
        &mut buckets,
    );
    let Some(window) = to_scan else {
        return filled(buckets, first, step);
    };
    for row in window.filter(|&row| table.project.get(row) == Some(&project)) {
        let (Some(&f), Some(&status), Some(&time), Some(&timestamp)) = (
            table.function.get(row),
            table.status_code.get(row),
            table.execution_time_ms.get(row),
            table.timestamp.get(row),
        ) else {
            continue;
        };
        let slot = ((timestamp - first) / step) as usize;
        if let (true, Some(bucket)) = (f == function, buckets.get_mut(slot)) {
            bucket.add(status, time);
        }
    }
    filled(buckets, first, step)
}

/// The buckets that hold invocations, by start.
fn filled(buckets: Vec<Bucket>, first: Micros, step: Micros) -> Vec<(Micros, Bucket)> {
    buckets
        .into_iter()
        .enumerate()
        .filter(|(_, bucket)| bucket.row.requests_count > 0)
        .map(|(slot, bucket)| (first + slot as Micros * step, bucket))
        .collect()
}

/// One shard's share of a bucket whose project-day is split across shards:
/// its counts, and the count, exact sum and max of its execution times
/// (max as its bits).
#[derive(Serialize, Deserialize)]
struct BucketState {
    #[serde(flatten)]
    row: CombinedStatsRow,
    timed: u64,
    sum: ExactSum,
    max: Option<u64>,
}

/// One bucket's invocations as they are counted.
#[derive(Default)]
struct Bucket {
    row: CombinedStatsRow,
    sum: ExactSum,
    timed: usize,
    max: Option<f64>,
}

impl FunctionBucket for Bucket {
    fn add(&mut self, status: i32, time: f64) {
        let row = &mut self.row;
        row.requests_count += 1;
        match status {
            NO_STATUS => {}
            200..=299 => row.success_count += 1,
            300..=399 => row.redirect_count += 1,
            400..=499 => row.client_err_count += 1,
            500.. => row.server_err_count += 1,
            _ => {}
        }
        if !time.is_nan() {
            self.sum.add(time);
            self.timed += 1;
            self.max = Some(self.max.map_or(time, |max| max.max(time)));
        }
    }
}

impl Bucket {
    fn finish(mut self, timestamp: Micros) -> CombinedStatsRow {
        self.row.timestamp = timestamp;
        if self.timed > 0 {
            self.row.avg_execution_time = Some(self.sum.value() / self.timed as f64);
            self.row.max_execution_time = self.max;
        }
        self.row
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::endpoints::function_buckets::packed_and_gathered;

    /// A busy project's packed copy, a scan of the window and a small
    /// project's own rows all count as the rows do, one by one.
    #[test]
    fn every_way_of_reading_a_project_s_rows_counts_as_the_rows_do() {
        let now: Micros = 1_795_177_796_789_000;
        let ((packed, gathered), staged) = packed_and_gathered(now);
        let busy = packed.projects.lookup("busy").unwrap();
        assert!(packed.packed.of(busy, packed.len()).is_some());
        assert!(gathered.packed.of(busy, gathered.len()).is_none());
        let packed = Store {
            functions: packed,
            ..Store::default()
        };
        let gathered = Store {
            functions: gathered,
            ..Store::default()
        };
        for (store, project, path) in [
            (&packed, "busy", "packed"),
            (&gathered, "busy", "scan"),
            (&gathered, "a", "own rows"),
        ] {
            for interval in CombinedStatsInterval::NAMES
                .iter()
                .filter_map(|name| CombinedStatsInterval::from_name(name))
            {
                let query = CombinedStatsQuery {
                    project: project.into(),
                    function_id: "f1".into(),
                    interval,
                };
                let (window, step) = interval.window_and_step();
                let first = truncate(now - window, step);
                let mut expected: BTreeMap<Micros, Bucket> = BTreeMap::new();
                for row in &staged {
                    let start = truncate(row.timestamp, step);
                    let wanted = row.project_ref.as_deref() == Some(project)
                        && row.function_id.as_deref() == Some("f1")
                        && start >= first
                        && start <= truncate(now, step);
                    if wanted {
                        let time = row.execution_time_ms.unwrap_or(f64::NAN);
                        let status = row.status_code.map_or(NO_STATUS, |s| s as i32);
                        expected.entry(start).or_default().add(status, time);
                    }
                }
                let got = fill(&query, store, now);
                assert_eq!(
                    got.iter().map(|(t, _)| *t).collect::<Vec<_>>(),
                    expected.keys().copied().collect::<Vec<_>>(),
                    "{path} {interval:?}"
                );
                for ((_, a), b) in got.iter().zip(expected.values()) {
                    let counts = |b: &Bucket| {
                        let r = &b.row;
                        let counts = [
                            r.requests_count,
                            r.success_count,
                            r.redirect_count,
                            r.client_err_count,
                            r.server_err_count,
                        ];
                        let sum = b.sum.value().to_bits();
                        (counts, b.timed, b.max.map(f64::to_bits), sum)
                    };
                    assert_eq!(counts(a), counts(b), "{path} {interval:?}");
                }
            }
        }
    }
}
