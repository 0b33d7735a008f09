// The shared query plan of the benchmark: for each endpoint, `runs` parameter
// sets (functions, end times and patterns vary, and each engine clears its cache
// before every run, so no run is a cache hit), the same for every engine.
//
// Data sets: "shard", a shard of a hosted platform (`tenants()`: 2,000
// projects with Zipf-like shares), queried for its largest project, a median
// one and one from the tail; "alike", the same with refs `tenant-1` …
// `tenant-2000`; and "five", five projects (the busiest about half of the
// traffic), as the earlier benchmark ran.
import { createHash } from "node:crypto";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { functionIds, projectRefs, tenants } from "../scripts/generate-logs.mjs";

export const END_MS = Date.parse("2026-11-20T12:00:00Z");
export const NOW_US = END_MS * 1000;
const MINUTE = 60e6;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;
export const SHARD_PROJECTS = 2000;

const escape = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/** The data sets: how each is generated and which projects its queries ask for. */
/** A platform's shard: 2,000 Zipf-sized projects named by `refs` ("random" or "alike"). */
function platform(refs) {
  const tenancy = tenants(SHARD_PROJECTS, undefined, { refs });
  const band = (from, n) => Array.from({ length: n }, (_, i) => from + i);
  const classes = { largest: [0], median: band(SHARD_PROJECTS / 2 - 10, 20), tail: band(SHARD_PROJECTS - 20, 20) };
  return {
    generate: { tenancy },
    classes: Object.fromEntries(Object.entries(classes).map(([name, ranks]) => [name, ranks.map((k) => ({ project: tenancy.refs[k], functions: tenancy.functions[k] }))])),
  };
}

export const DATASETS = {
  shard: () => platform("random"),
  // The same shape with refs that share most of their characters (`tenant-1`
  // … `tenant-2000`), as self-hosted and other platforms name them.
  alike: () => platform("alike"),
  five: () => ({
    generate: {},
    classes: { all: projectRefs().map((project) => ({ project, functions: functionIds() })) },
  }),
};

/** The queries for one class of projects (`targets`: projects and their functions). */
function queriesFor(targets, runs, suffix) {
  const pick = (list, i) => list[i % list.length];
  const each = (make) => Array.from({ length: runs }, (_, i) => make(i));
  const stats = (interval) => ({
    endpoint: "functions.invocation-stats",
    runs: each((i) => {
      const { project, functions } = pick(targets, i);
      const params = { project, interval };
      const f = pick([undefined, ...functions], Math.floor(i / targets.length)); // undefined: all functions
      if (f) params.function_id = f;
      return params;
    }),
  });
  // The project's ref, or its host, or a URL prefix, or host plus API areas.
  const counts = (interval) => ({
    endpoint: "usage.api-counts",
    runs: each((i) => {
      const p = escape(pick(targets, i).project);
      const patterns = [p, `${p}\\.supabase\\.co`, `^https://${p}\\.`, `${p}\\.supabase\\.co/(rest|auth|storage|realtime)`];
      return { project: pick(patterns, Math.floor(i / targets.length) + i), interval };
    }),
  });
  const queries = {
    "invocation-stats 7day": stats("7day"),
    "invocation-stats 1hr": stats("1hr"),
    "logs.all PAYG": {
      endpoint: "logs.all",
      runs: each((i) => ({
        project: pick(targets, i).project,
        project_tier: "PAYG",
        iso_timestamp_end: new Date((NOW_US - i * 7 * MINUTE) / 1000).toISOString(),
      })),
    },
    "api-counts daily": counts("daily"),
    "api-counts minutely": counts("minutely"),
    // The Management API's two routes of their own: one function's day by status class, and a day's request count.
    "combined-stats 1day": {
      endpoint: "functions.combined-stats",
      runs: each((i) => {
        const { project, functions } = pick(targets, i);
        return { project, function_id: pick(functions, Math.floor(i / targets.length)), interval: "1day" };
      }),
    },
    "api-requests-count": { endpoint: "usage.api-requests-count", runs: each((i) => ({ project: pick(targets, i).project })) },
  };
  return Object.fromEntries(Object.entries(queries).map(([name, q]) => [suffix ? `${name} · ${suffix}` : name, q]));
}

/**
 * Each engine's warm-up before a query's timed runs: its last parameters,
 * untimed, again until this many ms have been spent on them (at least once).
 * V8 first runs wasm in its baseline tier (Liftoff) and swaps in optimised code
 * (TurboFan) only at a later call, once a function is hot and compiled in the
 * background: with one warm-up run, most timed runs of the short queries were
 * in the baseline tier, 1.7-2.7x slower (api-counts minutely, alike refs, 1M).
 * The peers warm up by the same rule (plans, caches, allocator).
 */
export const WARM_UP_MS = 100;

/** A plan file `plan()` wrote; refused before any data is loaded if it is not one. */
export function readPlan(file) {
  const read = JSON.parse(readFileSync(file, "utf8"));
  if (typeof read.warmUpMs !== "number") throw new Error(`${file}: no warmUpMs; write it with plan()`);
  return read;
}

/** Runs `once()` (a query's last parameters) by the `WARM_UP_MS` rule the plan carries. */
export async function warmUp(plan, once) {
  const started = performance.now();
  do await once();
  while (performance.now() - started < plan.warmUpMs);
}

export function plan(runs, dataset = "five") {
  const { classes } = DATASETS[dataset]();
  const queries = {};
  for (const [name, targets] of Object.entries(classes)) Object.assign(queries, queriesFor(targets, runs, dataset === "five" ? "" : name));
  return { nowUs: NOW_US, warmUpMs: WARM_UP_MS, dataset, queries };
}

/**
 * Which SQL query answers one run of the plan, and its bound values: the
 * contract's rules (windows, buckets, retention) for the SQL peers.
 */
export function bind(endpoint, params, nowUs) {
  if (endpoint === "functions.invocation-stats") {
    const [window, step] = { "5min": [5 * MINUTE, 1e6], "15min": [15 * MINUTE, MINUTE], "1hr": [HOUR, MINUTE], "7day": [7 * DAY, DAY] }[params.interval] ?? [DAY, HOUR];
    const first = Math.floor((nowUs - window) / step) * step;
    return ["stats", { step, project: params.project, function: params.function_id ?? "", first, stop: Math.floor(nowUs / step) * step + step }];
  }
  if (endpoint === "functions.combined-stats") {
    const [window, step] = { "15min": [15 * MINUTE, MINUTE], "1hr": [HOUR, MINUTE], "3hr": [3 * HOUR, HOUR], "1day": [DAY, HOUR] }[params.interval];
    const first = Math.floor((nowUs - window) / step) * step;
    return ["combined", { step, project: params.project, function: params.function_id, first, stop: Math.floor(nowUs / step) * step + step }];
  }
  if (endpoint === "usage.api-requests-count") return ["requests", { project: params.project, since: nowUs - DAY }];
  if (endpoint === "logs.all") {
    const retention = { PRO: 7 * DAY, PAYG: 90 * DAY, ENTERPRISE: 90 * DAY }[params.project_tier] ?? DAY;
    const upper = params.iso_timestamp_end ? Date.parse(params.iso_timestamp_end) * 1000 : Number.MAX_SAFE_INTEGER;
    return ["logs", { project: params.project, lower: nowUs - retention, upper }];
  }
  const [window, width] = { minutely: [60 * MINUTE, MINUTE], hourly: [HOUR, HOUR], daily: [7 * DAY, DAY] }[params.interval];
  return ["counts", { width, project: params.project, start: nowUs - window }];
}


/**
 * The columns by which every engine's answers are compared, per endpoint
 * (the SQL peers name their columns as our rows do). Metadata is left out:
 * ours is the bytes as sent, the peers' their own JSON.
 */
const COMPARED = {
  "functions.invocation-stats": ["timestamp", "count", "error_count", "min_execution_time", "max_execution_time", "avg_execution_time", "p95_execution_time", "p99_execution_time"],
  "logs.all": ["id", "timestamp", "event_message"],
  "usage.api-counts": ["timestamp", "total_rest_requests", "total_storage_requests", "total_auth_requests", "total_realtime_requests"],
  "functions.combined-stats": ["timestamp", "requests_count", "success_count", "redirect_count", "client_err_count", "server_err_count", "avg_execution_time", "max_execution_time"],
  "usage.api-requests-count": ["count"],
};
const TEXT_COLUMNS = new Set(["id", "event_message"]);

/** One value as every engine's is compared: times in µs, numbers (BigInt, or ClickHouse's 64-bit integers as text) as numbers, fractions to 9 significant digits (an average summed in another order). Anything else stays as it is, so that it differs. */
function comparable(column, value) {
  if (value === null || value === undefined) return null;
  if (TEXT_COLUMNS.has(column)) return String(value);
  if (typeof value === "string" && /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ?$/.test(value)) return Date.parse(value.endsWith("Z") ? value : `${value}Z`) * 1000;
  const n = typeof value === "number" || typeof value === "bigint" || (typeof value === "string" && value.trim() !== "") ? Number(value) : NaN;
  if (!Number.isFinite(n)) return `not a number: ${JSON.stringify(value, (_, v) => (typeof v === "bigint" ? String(v) : v))}`;
  return Number.isInteger(n) ? n : Number(n.toPrecision(9));
}

/** An answer's rows (objects by column name) as a short digest that every engine's same answer shares: logs.all's in their order (newest first), the others' whatever it is (each engine sorts by bucket). */
export function answerDigest(endpoint, rows) {
  const columns = COMPARED[endpoint];
  const lines = rows.map((row) => JSON.stringify(columns.map((c) => comparable(c, row[c]))));
  if (endpoint !== "logs.all") lines.sort();
  return createHash("sha1").update(lines.join("\n")).digest("hex").slice(0, 16);
}

/**
 * A SQL peer's timings of the plan: for each query its warm-up (`warmUpMs`),
 * then its runs; once a query has had 5 runs it stops when it has spent
 * `budgetMs` (the nested port takes seconds per run at 5M). `runOne(which,
 * values)` runs one bound query and resolves to its result as the engine
 * gives it, which `rowsOf` makes JS row objects once the run is timed: each
 * run's row count and `answerDigest`.
 */
export async function timePlan(plan, budgetMs, runOne, rowsOf) {
  const MIN_RUNS = 5;
  const queries = {};
  for (const [name, { endpoint, runs }] of Object.entries(plan.queries)) {
    const ms = [];
    const rows = [];
    const answers = [];
    const warm = bind(endpoint, runs[runs.length - 1], plan.nowUs);
    await warmUp(plan, () => runOne(...warm));
    for (const params of runs) {
      if (ms.length >= MIN_RUNS && ms.reduce((a, b) => a + b, 0) > budgetMs) break;
      const [which, values] = bind(endpoint, params, plan.nowUs);
      const started = performance.now();
      const result = await runOne(which, values);
      ms.push(performance.now() - started);
      const got = rowsOf(result);
      rows.push(got.length);
      answers.push(answerDigest(endpoint, got));
    }
    queries[name] = { ms, rows, answers };
  }
  return queries;
}

/**
 * A peer's one load of both files (the edge file feeds two tables) as ingest
 * figures per stream: its time split by input bytes; `entries` per stream.
 */
export function splitLoad(loadMs, bytes, entries) {
  const total = bytes.edge_logs + bytes.function_edge_logs;
  const figures = (stream) => ({ ms: (loadMs * bytes[stream]) / total, bytes: bytes[stream], entries: entries[stream] });
  return { edge_logs: figures("edge_logs"), function_edge_logs: figures("function_edge_logs") };
}

/** The most recently generated shard data set of `size` entries per stream (its directory). */
export function newestShard(size) {
  const root = "target/bench/data";
  const suffix = `-shard-${size}`;
  const dirs = existsSync(root) ? readdirSync(root).filter((name) => name.endsWith(suffix)) : [];
  if (!dirs.length) throw new Error(`no ${root}/*${suffix}: run node bench/bench.mjs first, or pass --data`);
  return dirs.map((name) => join(root, name)).sort((x, y) => statSync(y).mtimeMs - statSync(x).mtimeMs)[0];
}
