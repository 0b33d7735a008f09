//! functions.invocation-stats: time-bucketed counts, errors and execution-time
//! statistics of one project's function invocations. This module owns the
//! endpoint: its settings and parameters, their parsing, the run and the row.

use std::collections::btree_map::Entry;
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
use crate::sketch::Sketch;
use crate::store::{
    chunk_ranges, lower_bound, lower_bound_from, FunctionTable, Store, Sym, NO_STATUS,
};
use crate::timestamp::{truncate, Micros, DAY, HOUR, MINUTE, SECOND};

named_values! {
    /// The `interval` parameter: window and bucket width.
    pub enum StatsInterval {
        FiveMinutes = "5min",
        FifteenMinutes = "15min",
        OneHour = "1hr",
        OneDay = "1day",
        SevenDays = "7day",
    }
}

impl StatsInterval {
    /// Any value other than the named ones behaves as `1day`.
    pub fn parse(value: &str) -> StatsInterval {
        StatsInterval::from_name(value).unwrap_or(StatsInterval::OneDay)
    }

    /// (window length, bucket width): n·span back from now, truncated to step.
    pub fn window_and_step(self) -> (Micros, Micros) {
        match self {
            StatsInterval::FiveMinutes => (5 * MINUTE, SECOND),
            StatsInterval::FifteenMinutes => (15 * MINUTE, MINUTE),
            StatsInterval::OneHour => (HOUR, MINUTE),
            StatsInterval::OneDay => (DAY, HOUR),
            StatsInterval::SevenDays => (7 * DAY, DAY),
        }
    }
}

pub(crate) struct InvocationStats;

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct InvocationStatsQuery {
    project: String,
    interval: StatsInterval,
    function_id: Option<String>,
}

/// One bucket of the answer.
#[derive(Serialize, TS)]
pub struct InvocationStatsRow {
    /// Bucket start, microseconds since the Unix epoch.
    timestamp: Micros,
    min_execution_time: Option<f64>,
    max_execution_time: Option<f64>,
    avg_execution_time: Option<f64>,
    p95_execution_time: Option<f64>,
    p99_execution_time: Option<f64>,
    count: i64,
    error_count: i64,
}

impl Endpoint for InvocationStats {
    const SPEC: EndpointSpec = EndpointSpec {
        name: "functions.invocation-stats",
        // Older Supabase Studio asks for it by this name.
        aliases: &["functions.inv-stats"],
        management_api: false,
        summary: "Time-bucketed statistics on one project's function invocations: counts, errors and execution times.",
        stream: "function_edge_logs",
        max_rows: MAX_ROWS,
        cache_seconds: Some(900),
        cache_warming_seconds: Some(300),
        parameters: &[
            Parameter::text("project", true, "abcdefghijklmnopqrst", "project reference; only its entries count"),
            Parameter::choice("interval", StatsInterval::NAMES, "1hr", "window and bucket width; any other value behaves as 1day"),
            Parameter::text("function_id", false, "all functions", "only this function's entries; empty or omitted means all functions"),
        ],
    };
    type Query = InvocationStatsQuery;
    type Row = InvocationStatsRow;

    fn parse(params: &Params, _limits: &Limits) -> Result<InvocationStatsQuery> {
        Ok(InvocationStatsQuery {
            project: required(params, "project")?.to_owned(),
            interval: StatsInterval::parse(required(params, "interval")?),
            function_id: params.non_empty("function_id").map(str::to_owned),
        })
    }

    fn project(query: &InvocationStatsQuery) -> &str {
        &query.project
    }

    fn run(
        query: &InvocationStatsQuery,
        store: &Store,
        now: Micros,
        rows: &mut Rows,
    ) -> Result<()> {
        run(&store.functions, query, now, rows);
        Ok(())
    }

    const MERGE: Merge = Merge::BucketStates {
        key: "timestamp",
        limit: MAX_ROWS,
    };

    fn run_partial(
        query: &InvocationStatsQuery,
        store: &Store,
        now: Micros,
        rows: &mut Rows,
    ) -> Result<()> {
        run_partial(&store.functions, query, now, rows);
        Ok(())
    }

    fn merge_states(bodies: &[&str], rows: &mut Rows) -> Result<()> {
        merge_states(bodies, rows)
    }

    fn reach(query: &InvocationStatsQuery, now: Micros) -> Result<Reach> {
        let (window, step) = query.interval.window_and_step();
        Ok(Reach::buckets(&query.project, now, window, step))
    }
}

/// Nearest-rank percentile of the contract: `sorted[max(ceil(k·n/100), 1) − 1]`.
pub(crate) fn percentile_rank(k: usize, n: usize) -> usize {
    (k * n).div_ceil(100).max(1) - 1
}

struct Bucket {
    count: i64,
    errors: i64,
    /// Execution times as order keys (`order_key`), for integer selection.
    times: Vec<u64>,
    min: u64,
    max: u64,
}

impl Default for Bucket {
    fn default() -> Bucket {
        Bucket {
            count: 0,
            errors: 0,
            times: Vec::new(),
            min: u64::MAX,
            max: 0,
        }
    }
}

impl FunctionBucket for Bucket {
    fn reserve(&mut self, rows: usize) {
        self.times.reserve_exact(rows);
    }

    fn add(&mut self, status: i32, time: f64) {
        self.count += 1;
        self.errors += i64::from(status != NO_STATUS && status >= 400);
        if !time.is_nan() {
            let key = order_key(time);
            self.times.push(key);
            self.min = self.min.min(key);
            self.max = self.max.max(key);
        }
    }
}

/// Maps an `f64` to a `u64` whose unsigned order is `f64::total_cmp`'s order, so
/// percentiles are selected with integer comparisons (much cheaper in wasm).
fn order_key(value: f64) -> u64 {
    let bits = value.to_bits();
    if bits >> 63 == 1 {
        !bits
    } else {
        bits | 1 << 63
    }
}

fn from_order_key(key: u64) -> f64 {
    f64::from_bits(if key >> 63 == 1 {
        key & !(1 << 63)
    } else {
        !key
    })
}

/// Fills the buckets (the first starting at `first`, each `step` long) by
/// scanning every row of their window, which starts at row `window_start`.
fn fill_by_scan(
    table: &FunctionTable,
    project: Sym,
    function: Option<Sym>,
    (window_start, first, step): (usize, Micros, Micros),
    buckets: &mut [Bucket],
) {
    // Rows are time-sorted, so each bucket is the slice from the last one's
    // end to its own, found by searching on from there: no division per row,
    // and only the four columns the bucket needs are read.
    let mut from = window_start;
    for (slot, bucket) in buckets.iter_mut().enumerate() {
        let bucket_start = first + slot as Micros * step;
        let to = lower_bound_from(&table.timestamp, from, bucket_start.saturating_add(step));
        let range = from..to;
        from = to;
        // Branch-free: which rows belong to the project varies row by row, so a
        // branch on it would be mispredicted about as often as not. Every time is
        // written to the next free slot and the slot is only kept for a match.
        let mut kept = vec![0u64; range.len()];
        let mut len = 0usize;
        let (mut min, mut max) = (u64::MAX, 0u64);
        for piece in chunk_ranges(range) {
            let (Some(projects), Some(functions), Some(statuses), Some(times)) = (
                table.project.piece(piece.clone()),
                table.function.piece(piece.clone()),
                table.status_code.piece(piece.clone()),
                table.execution_time_ms.piece(piece),
            ) else {
                continue;
            };
            let rows = projects.iter().zip(functions).zip(statuses).zip(times);
            for (((&row_project, &row_function), &status), &time) in rows {
                let keep = row_project == project && function.is_none_or(|f| row_function == f);
                bucket.count += i64::from(keep);
                bucket.errors += i64::from(keep & (status != NO_STATUS) & (status >= 400));
                let keep_time = keep & !time.is_nan();
                let key = order_key(time);
                if let Some(slot) = kept.get_mut(len) {
                    *slot = key;
                }
                len += usize::from(keep_time);
                min = min.min(if keep_time { key } else { u64::MAX });
                max = max.max(if keep_time { key } else { 0 });
            }
        }
        kept.truncate(len);
        (bucket.times, bucket.min, bucket.max) = (kept, min, max);
    }
}

/// The buckets of a call's window, filled (`None`: no row can match).
fn fill(
    table: &FunctionTable,
    query: &InvocationStatsQuery,
    now: Micros,
) -> Option<(Micros, Micros, Vec<Bucket>)> {
    let project = table.projects.lookup(&query.project)?;
    let function = match query.function_id.as_deref() {
        Some(f) => Some(table.functions.lookup(f)?),
        None => None,
    };
    let (window, step) = query.interval.window_and_step();
    let first = truncate(now.saturating_sub(window), step);
    let last = truncate(now, step);
    let bucket_count = ((last - first) / step + 1) as usize;
    let mut buckets: Vec<Bucket> = Vec::new();
    buckets.resize_with(bucket_count, Bucket::default);

    let window = lower_bound(&table.timestamp, first)
        ..lower_bound(&table.timestamp, last.saturating_add(step));
    let to_scan = fill_unless_scanned(
        table,
        project,
        function,
        window,
        (first, step),
        &mut buckets,
    );
    if let Some(window) = to_scan {
        fill_by_scan(
            table,
            project,
            function,
            (window.start, first, step),
            &mut buckets,
        );
    }
    Some((first, step, buckets))
}

/// The exact sum of a bucket's times (order keys), in one pass once the
/// bucket is filled. Adding each time as its row was read made the queries
/// 1.15–1.34× slower in wasm at 5M than a float sum; this takes 0.91–0.98×
/// of its time (`bench/ab.mjs`).
fn sum_of(times: &[u64]) -> ExactSum {
    let mut sum = ExactSum::default();
    sum.extend(times.iter().map(|&key| from_order_key(key)));
    sum
}

/// The exact p95 and p99 of a bucket's times (order keys), by selection.
fn percentiles(times: &mut [u64]) -> Option<(u64, u64)> {
    let n = times.len();
    if n == 0 {
        return None;
    }
    let r95 = percentile_rank(95, n);
    let r99 = percentile_rank(99, n);
    // Selection, not a sort: p99's rank is at or above p95's, so it is
    // selected within what lies above p95. Both ranks are below n.
    let (_, &mut p95, above) = times.select_nth_unstable(r95);
    let p99 = if r99 == r95 {
        p95
    } else {
        *above.select_nth_unstable(r99 - r95 - 1).1
    };
    Some((p95, p99))
}

fn run(table: &FunctionTable, query: &InvocationStatsQuery, now: Micros, rows: &mut Rows) {
    let Some((first, step, mut buckets)) = fill(table, query, now) else {
        return;
    };
    for (slot, bucket) in buckets.iter_mut().enumerate().filter(|(_, b)| b.count > 0) {
        if rows.is_full() {
            break;
        }
        let n = bucket.times.len();
        let mut row = InvocationStatsRow {
            timestamp: first + slot as Micros * step,
            min_execution_time: None,
            max_execution_time: None,
            avg_execution_time: None,
            p95_execution_time: None,
            p99_execution_time: None,
            count: bucket.count,
            error_count: bucket.errors,
        };
        if let Some((p95, p99)) = percentiles(&mut bucket.times) {
            row.min_execution_time = Some(from_order_key(bucket.min));
            row.max_execution_time = Some(from_order_key(bucket.max));
            row.avg_execution_time = Some(sum_of(&bucket.times).value() / n as f64);
            row.p95_execution_time = Some(from_order_key(p95));
            row.p99_execution_time = Some(from_order_key(p99));
        }
        rows.push(&row);
    }
}

/// One shard's share of a bucket whose project-day is split across shards:
/// what merges exactly (counts, min, max, sum), this share's own exact p95
/// and p99 (the answer when no other share has times), and a sketch of its
/// times (the answer's p95 and p99 when several have). Floats travel as
/// their bits (order keys), so infinities survive, and the sum is exact.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct BucketState {
    timestamp: Micros,
    count: i64,
    error_count: i64,
    timed: u64,
    min: u64,
    max: u64,
    sum: ExactSum,
    p95: u64,
    p99: u64,
    sketch: Sketch,
}

fn run_partial(table: &FunctionTable, query: &InvocationStatsQuery, now: Micros, rows: &mut Rows) {
    let Some((first, step, mut buckets)) = fill(table, query, now) else {
        return;
    };
    for (slot, bucket) in buckets.iter_mut().enumerate().filter(|(_, b)| b.count > 0) {
        let (p95, p99) = percentiles(&mut bucket.times).unwrap_or((0, 0));
        let mut sketch = Sketch::default();
        for &key in &bucket.times {
            sketch.add(from_order_key(key));
        }
        rows.push(&BucketState {
            timestamp: first + slot as Micros * step,
            count: bucket.count,
            error_count: bucket.errors,
            timed: bucket.times.len() as u64,
            min: bucket.min,
            max: bucket.max,
            sum: sum_of(&bucket.times),
            p95,
            p99,
            sketch,
        });
    }
}

/// The rows one store would answer, from the shards' partial states: counts,
/// min, max and avg exact (the shares' exact sums over the count), p95 and
/// p99 exact when one share holds every time of the bucket and from the
/// merged sketch (within `RELATIVE_ERROR`, clamped to the exact min and max)
/// when several do.
fn merge_states(bodies: &[&str], rows: &mut Rows) -> Result<()> {
    let mut merged: BTreeMap<Micros, (BucketState, usize)> = BTreeMap::new();
    for body in bodies {
        for raw in answer_rows(body)? {
            let state: BucketState =
                serde_json::from_str(raw.get()).map_err(|e| Error::BadShardAnswer {
                    reason: format!("a partial invocation-stats row does not read ({e})"),
                })?;
            let timed = usize::from(state.timed > 0);
            match merged.entry(state.timestamp) {
                Entry::Vacant(slot) => {
                    slot.insert((state, timed));
                }
                Entry::Occupied(mut slot) => {
                    let (into, shares) = slot.get_mut();
                    *shares += timed;
                    into.count += state.count;
                    into.error_count += state.error_count;
                    if state.timed > 0 {
                        into.min = into.min.min(state.min);
                        into.max = into.max.max(state.max);
                        into.sum.merge(&state.sum);
                        (into.p95, into.p99) = (state.p95, state.p99);
                    }
                    into.timed += state.timed;
                    into.sketch.merge(&state.sketch);
                }
            }
        }
    }
    for (timestamp, (state, shares)) in merged {
        if rows.is_full() {
            break;
        }
        let n = state.timed;
        let mut row = InvocationStatsRow {
            timestamp,
            min_execution_time: None,
            max_execution_time: None,
            avg_execution_time: None,
            p95_execution_time: None,
            p99_execution_time: None,
            count: state.count,
            error_count: state.error_count,
        };
        if n > 0 {
            let (min, max) = (from_order_key(state.min), from_order_key(state.max));
            let quantile = |k: usize, exact: u64| {
                if shares == 1 {
                    from_order_key(exact)
                } else {
                    let rank = percentile_rank(k, n as usize) as u64;
                    state.sketch.value_at(rank).unwrap_or(max).clamp(min, max)
                }
            };
            row.min_execution_time = Some(min);
            row.max_execution_time = Some(max);
            row.avg_execution_time = Some(state.sum.value() / n as f64);
            row.p95_execution_time = Some(quantile(95, state.p95));
            row.p99_execution_time = Some(quantile(99, state.p99));
        }
        rows.push(&row);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn order_keys_follow_total_cmp() {
        let values = [
            f64::NEG_INFINITY,
            -1e300,
            -2.5,
            -0.0,
            0.0,
            1e-300,
            3.0,
            41.5,
            f64::INFINITY,
        ];
        for pair in values.windows(2) {
            assert!(order_key(pair[0]) < order_key(pair[1]), "{pair:?}");
        }
        for v in values {
            assert_eq!(from_order_key(order_key(v)).to_bits(), v.to_bits());
        }
    }

    /// A busy project's packed rows give the buckets its gathered rows give,
    /// whatever order the batches came in, with and without a function.
    #[test]
    fn packed_rows_fill_buckets_as_gathered_rows_do() {
        use crate::ingest::StagedInvocation;
        use std::borrow::Cow;
        let now: Micros = 1_795_177_796_789_000;
        let (mut packed, gathered) = crate::endpoints::function_buckets::packed_and_gathered(now).0;
        let busy = packed.projects.lookup("busy").unwrap();
        assert!(
            packed.packed.of(busy, packed.len()).is_some(),
            "the busy project is packed"
        );
        assert!(gathered.packed.of(busy, gathered.len()).is_none());
        for interval in [
            StatsInterval::SevenDays,
            StatsInterval::OneDay,
            StatsInterval::OneHour,
        ] {
            for function_id in [None, Some("f1")] {
                let query = InvocationStatsQuery {
                    project: "busy".into(),
                    interval,
                    function_id: function_id.map(str::to_owned),
                };
                let (_, _, mut from_packed) = fill(&packed, &query, now).unwrap();
                let (_, _, mut from_rows) = fill(&gathered, &query, now).unwrap();
                assert_eq!(from_packed.len(), from_rows.len());
                for (a, b) in from_packed.iter_mut().zip(&mut from_rows) {
                    a.times.sort_unstable();
                    b.times.sort_unstable();
                    assert_eq!(
                        (
                            a.count,
                            a.errors,
                            &a.times,
                            a.min,
                            a.max,
                            sum_of(&a.times).value().to_bits()
                        ),
                        (
                            b.count,
                            b.errors,
                            &b.times,
                            b.min,
                            b.max,
                            sum_of(&b.times).value().to_bits()
                        ),
                        "{query:?}"
                    );
                }
            }
        }
        // Rows appended since the copies were brought up to date: not read.
        let late = StagedInvocation {
            timestamp: now,
            project_ref: Some(Cow::Borrowed("busy")),
            function_id: None,
            execution_time_ms: Some(1.0),
            status_code: Some(200),
        };
        packed.append(&[late]);
        assert!(packed.packed.of(busy, packed.len()).is_none());
        packed.sync_packed(usize::MAX);
        assert!(packed.packed.of(busy, packed.len()).is_some());
    }

    #[test]
    fn nearest_rank() {
        assert_eq!(percentile_rank(95, 1), 0);
        assert_eq!(percentile_rank(95, 20), 18);
        assert_eq!(percentile_rank(99, 20), 19);
        assert_eq!(percentile_rank(95, 100), 94);
        assert_eq!(percentile_rank(99, 100), 98);
        assert_eq!(percentile_rank(95, 101), 95);
    }
}
