//! functions.invocation-stats: time-bucketed counts, errors and execution-time
//! statistics of one project's function invocations.

use crate::json;
use crate::store::{lower_bound, FunctionTable, NO_STATUS};
use crate::timestamp::{truncate, Micros, DAY, HOUR, MINUTE, SECOND};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StatsInterval {
    FiveMinutes,
    FifteenMinutes,
    OneHour,
    OneDay,
    SevenDays,
}

impl StatsInterval {
    /// Any value other than the five named ones behaves as `1day`.
    pub fn parse(value: &str) -> StatsInterval {
        match value {
            "5min" => StatsInterval::FiveMinutes,
            "15min" => StatsInterval::FifteenMinutes,
            "1hr" => StatsInterval::OneHour,
            "7day" => StatsInterval::SevenDays,
            _ => StatsInterval::OneDay,
        }
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

/// Nearest-rank percentile of the contract: `sorted[max(ceil(k·n/100), 1) − 1]`.
pub(crate) fn percentile_rank(k: usize, n: usize) -> usize {
    (k * n).div_ceil(100).max(1) - 1
}

#[derive(Default)]
struct Bucket {
    count: i64,
    errors: i64,
    times: Vec<f64>,
    min: f64,
    max: f64,
    sum: f64,
}

pub(super) fn run(
    table: &FunctionTable,
    project: &str,
    interval: StatsInterval,
    function_id: Option<&str>,
    now: Micros,
    out: &mut String,
) {
    let Some(project) = table.projects.lookup(project) else {
        return;
    };
    let function = match function_id {
        Some(f) => match table.functions.lookup(f) {
            Some(id) => Some(id),
            None => return,
        },
        None => None,
    };
    let (window, step) = interval.window_and_step();
    let first = truncate(now.saturating_sub(window), step);
    let last = truncate(now, step);
    let bucket_count = ((last - first) / step + 1) as usize;
    let mut buckets: Vec<Bucket> = Vec::new();
    buckets.resize_with(bucket_count, Bucket::default);

    let start = lower_bound(&table.timestamp, first);
    let end = lower_bound(&table.timestamp, last.saturating_add(step));
    let range = start..end;
    let (Some(timestamps), Some(projects), Some(functions), Some(statuses), Some(times)) = (
        table.timestamp.get(range.clone()),
        table.project.get(range.clone()),
        table.function.get(range.clone()),
        table.status_code.get(range.clone()),
        table.execution_time_ms.get(range),
    ) else {
        return;
    };
    let rows = timestamps
        .iter()
        .zip(projects)
        .zip(functions)
        .zip(statuses)
        .zip(times);
    for ((((&timestamp, &row_project), &row_function), &status), &time) in rows {
        if row_project != project || function.is_some_and(|f| row_function != f) {
            continue;
        }
        let slot = ((truncate(timestamp, step) - first) / step) as usize;
        let Some(bucket) = buckets.get_mut(slot) else {
            continue;
        };
        bucket.count += 1;
        if status != NO_STATUS && status >= 400 {
            bucket.errors += 1;
        }
        if !time.is_nan() {
            if bucket.times.is_empty() {
                bucket.min = time;
                bucket.max = time;
            } else {
                bucket.min = bucket.min.min(time);
                bucket.max = bucket.max.max(time);
            }
            bucket.sum += time;
            bucket.times.push(time);
        }
    }

    let mut first_row = true;
    for (slot, bucket) in buckets
        .iter_mut()
        .enumerate()
        .filter(|(_, b)| b.count > 0)
        .take(super::MAX_ROWS)
    {
        if !first_row {
            out.push(',');
        }
        first_row = false;
        let n = bucket.times.len();
        let (min, max, avg, p95, p99) = if n == 0 {
            (None, None, None, None, None)
        } else {
            let r95 = percentile_rank(95, n);
            let r99 = percentile_rank(99, n);
            // Selection, not a sort: p99's rank is at or above p95's, so it is
            // selected within what lies above p95. Both ranks are below n.
            let (_, &mut p95, above) = bucket.times.select_nth_unstable_by(r95, f64::total_cmp);
            let p99 = if r99 == r95 {
                p95
            } else {
                *above
                    .select_nth_unstable_by(r99 - r95 - 1, f64::total_cmp)
                    .1
            };
            (
                Some(bucket.min),
                Some(bucket.max),
                Some(bucket.sum / n as f64),
                Some(p95),
                Some(p99),
            )
        };
        out.push('{');
        json::push_key(out, "timestamp");
        json::push_int(out, first + slot as Micros * step);
        out.push(',');
        json::push_key(out, "min_execution_time");
        json::push_f64(out, min);
        out.push(',');
        json::push_key(out, "max_execution_time");
        json::push_f64(out, max);
        out.push(',');
        json::push_key(out, "avg_execution_time");
        json::push_f64(out, avg);
        out.push(',');
        json::push_key(out, "p95_execution_time");
        json::push_f64(out, p95);
        out.push(',');
        json::push_key(out, "p99_execution_time");
        json::push_f64(out, p99);
        out.push(',');
        json::push_key(out, "count");
        json::push_int(out, bucket.count);
        out.push(',');
        json::push_key(out, "error_count");
        json::push_int(out, bucket.errors);
        out.push('}');
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
