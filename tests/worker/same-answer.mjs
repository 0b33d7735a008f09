// Whether a deployment's answer is one in-process store's: every field equal,
// except p95 and p99 within the core's sketch bound (a bucket whose times sit
// in several shards of a split project-day); avg is exact too. Shared by the
// workerd tests and the benchmark.
import { LogEndpoints } from "log-endpoints";

const { sketchRelativeError } = LogEndpoints.constants();

/**
 * The first difference between `got` and `expected` (JSON answers), or null.
 * `spanning`, when known: the buckets (their `timestamp`s) whose times sit in
 * several shards; p95 and p99 of the others must be exact.
 */
export function answerDifference(got, expected, spanning = undefined) {
  if (got.result?.length !== expected.result?.length) return `${got.result?.length} rows, not ${expected.result?.length}`;
  for (const [i, row] of got.result.entries()) {
    const want = expected.result[i];
    const sketched = !spanning || spanning.has(JSON.stringify(want.timestamp));
    if (JSON.stringify(Object.keys(row)) !== JSON.stringify(Object.keys(want))) return `row ${i} has fields ${Object.keys(row)}, not ${Object.keys(want)}`;
    for (const [name, value] of Object.entries(want)) {
      const bound = /^p9[59]_/.test(name) && sketched ? sketchRelativeError : 0;
      const close = bound > 0 && typeof value === "number" ? Math.abs(row[name] - value) <= bound * Math.abs(value) + 1e-12 : JSON.stringify(row[name]) === JSON.stringify(value);
      if (!close) return `row ${i}: ${name} is ${JSON.stringify(row[name])}, not ${JSON.stringify(value)}`;
    }
  }
  return null;
}
