//! How the function endpoints (invocation-stats, combined-stats) read one
//! project's invocations in a window of time buckets, bucket by bucket: from
//! the project's packed copy when it has one (`store::packed`), else from
//! its own rows' list, gathered a chunk at a time. A bucket's rows are found
//! by binary search, so no row needs a division. Each endpoint says what a
//! bucket keeps of a row (`FunctionBucket`).

use crate::store::{in_chunk, runs_by_chunk, FunctionTable, Packed, Selected, Sym};
use crate::timestamp::Micros;

/// What a bucket keeps of the rows added to it.
pub(crate) trait FunctionBucket {
    /// Room for up to `rows` more rows, before they are added.
    fn reserve(&mut self, _rows: usize) {}
    /// One invocation: its status (`NO_STATUS`: none) and execution time (NaN: none).
    fn add(&mut self, status: i32, time: f64);
}

/// Fills `buckets` (the first starting at `first`, each `step` long) with
/// `project`'s rows in the table's rows `window` (and of `function` only,
/// when given) from its packed copy or its own rows; or leaves them and
/// gives back the window when the project holds so much of it that a scan
/// of the window, the endpoint's own, reads it faster.
pub(crate) fn fill_unless_scanned<B: FunctionBucket>(
    table: &FunctionTable,
    project: Sym,
    function: Option<Sym>,
    window: std::ops::Range<usize>,
    (first, step): (Micros, Micros),
    buckets: &mut [B],
) -> Option<std::ops::Range<usize>> {
    if let Some(packed) = table.packed.of(project, table.len()) {
        let rows = table.by_project.of(project);
        fill_from_packed(
            table,
            (rows, packed),
            window,
            function,
            (first, step),
            buckets,
        );
        return None;
    }
    match table.rows_of(&[project], window) {
        Selected::Own(own) => {
            let own = own.first().copied().unwrap_or_default();
            fill_from_rows(table, own, function, first, step, buckets);
            None
        }
        Selected::Scan(window) => Some(window),
    }
}

/// Per bucket, in order, the range of `own` (row numbers of one project
/// within the window, in time order) whose times fall in it: found by binary
/// search, so no row needs a division.
fn bucket_ranges<'a>(
    table: &'a FunctionTable,
    own: &'a [u32],
    first: Micros,
    step: Micros,
) -> impl FnMut(usize) -> std::ops::Range<usize> + 'a {
    let timestamp_of = |row: u32| {
        table
            .timestamp
            .get(row as usize)
            .copied()
            .unwrap_or(Micros::MAX)
    };
    let mut at = 0;
    move |slot| {
        let bucket_end =
            first.saturating_add((slot as Micros).saturating_add(1).saturating_mul(step));
        let rest = own.get(at..).unwrap_or(&[]);
        let to = at + rest.partition_point(|&row| timestamp_of(row) < bucket_end);
        std::mem::replace(&mut at, to)..to
    }
}

/// Adds rows `own` (row numbers of one project within the window, in time
/// order) to their buckets, each bucket's times allocated for once.
fn fill_from_rows<B: FunctionBucket>(
    table: &FunctionTable,
    own: &[u32],
    function: Option<Sym>,
    first: Micros,
    step: Micros,
    buckets: &mut [B],
) {
    let mut range_of = bucket_ranges(table, own, first, step);
    for (slot, bucket) in buckets.iter_mut().enumerate() {
        let rows = own.get(range_of(slot)).unwrap_or(&[]);
        bucket.reserve(rows.len());
        // The rows are gathered, so each column read costs its cache lines:
        // the function column only when a function is asked for.
        for (chunk, run) in runs_by_chunk(rows) {
            let statuses = table.status_code.chunk(chunk);
            let times = table.execution_time_ms.chunk(chunk);
            let add = |bucket: &mut B, at: usize| {
                if let (Some(&status), Some(&time)) = (statuses.get(at), times.get(at)) {
                    bucket.add(status, time);
                }
            };
            match function {
                None => run.iter().for_each(|&row| add(bucket, in_chunk(row))),
                Some(function) => {
                    let functions = table.function.chunk(chunk);
                    for &row in run {
                        if functions.get(in_chunk(row)) == Some(&function) {
                            add(bucket, in_chunk(row));
                        }
                    }
                }
            }
        }
    }
}

/// Adds a packed project's rows in the table's rows `window` to their
/// buckets: `rows` are all its row numbers, `packed` their columns in the
/// same order, read one run after another.
fn fill_from_packed<B: FunctionBucket>(
    table: &FunctionTable,
    (rows, packed): (&[u32], &Packed),
    window: std::ops::Range<usize>,
    function: Option<Sym>,
    (first, step): (Micros, Micros),
    buckets: &mut [B],
) {
    let start = rows.partition_point(|&r| (r as usize) < window.start);
    let end = rows.partition_point(|&r| (r as usize) < window.end);
    let own = rows.get(start..end).unwrap_or(&[]);
    let mut range_of = bucket_ranges(table, own, first, step);
    for (slot, bucket) in buckets.iter_mut().enumerate() {
        let range = range_of(slot);
        bucket.reserve(range.len());
        for (functions, times, statuses) in packed.runs(start + range.start..start + range.end) {
            for ((&row_function, &time), &status) in functions.iter().zip(times).zip(statuses) {
                if function.is_none_or(|f| f == row_function) {
                    bucket.add(status, time);
                }
            }
        }
    }
}

/// A week and more of invocations from a busy project ("busy", 3/8 of the
/// rows) and five others, in twelve batches (the first six in time order, a
/// day apart; the others overlapping them), appended to two tables: one
/// that packs the busy project's rows after every batch, one that does not.
/// With the rows, in the order they came.
#[cfg(test)]
pub(crate) fn packed_and_gathered(
    now: Micros,
) -> (
    (FunctionTable, FunctionTable),
    Vec<crate::ingest::StagedInvocation<'static>>,
) {
    use crate::ingest::StagedInvocation;
    use crate::timestamp::{DAY, HOUR};
    use std::borrow::Cow;
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || crate::test_rng::xorshift(&mut state);
    let (mut packed, mut gathered) = (FunctionTable::default(), FunctionTable::default());
    let mut all = Vec::new();
    for batch in 0..12 {
        let rows: Vec<StagedInvocation> = (0..4_000)
            .map(|_| {
                let r = next();
                // The first batches come in time order, each a day later
                // (the copies are extended); the others overlap in time
                // (they reorder the table, and the copies lose a suffix).
                let back = match batch {
                    0..6 => (6 - batch) * DAY + (r % DAY as u64) as Micros,
                    _ => (r % (8 * DAY as u64)) as Micros - (batch * HOUR),
                };
                StagedInvocation {
                    timestamp: now - back.max(0),
                    project_ref: Some(Cow::Borrowed(
                        ["busy", "busy", "busy", "a", "b", "c", "d", "e"][(r >> 40) as usize % 8],
                    )),
                    function_id: Some(Cow::Borrowed(["f0", "f1", "f2"][(r >> 44) as usize % 3])),
                    execution_time_ms: ((r >> 50) % 7 != 0)
                        .then(|| ((r >> 20) % 5_000) as f64 / 8.0),
                    status_code: ((r >> 52) % 9 != 0)
                        .then(|| [200, 201, 404, 500][(r >> 56) as usize % 4]),
                }
            })
            .collect();
        packed.append(&rows);
        packed.sync_packed(usize::MAX);
        gathered.append(&rows);
        all.extend(rows);
    }
    ((packed, gathered), all)
}
