// The DuckDB baseline (@duckdb/node-api, native DuckDB in this process): loads
// the same NDJSON files with read_json into tables, then answers the plan with
// the equivalent SQL of each endpoint (prepared once, parameters bound per run).
// Prints JSON like run-wasm.mjs.
//
//   node bench/run-duckdb.mjs --edge E.ndjson --functions F.ndjson --plan plan.json
import { parseArgs } from "node:util";
import { readFileSync, statSync } from "node:fs";
import { DuckDBInstance } from "@duckdb/node-api";

const { values: files } = parseArgs({ options: { edge: { type: "string" }, functions: { type: "string" }, plan: { type: "string" } } });
const plan = JSON.parse(readFileSync(files.plan, "utf8"));
const DAY = 86400e6;
const HOUR = 3600e6;
const MINUTE = 60e6;

export const SQL = {
  stats: `
    WITH rows AS (
      SELECT f.timestamp // $step * $step AS bucket, m.execution_time_ms AS t, r.status_code AS s
      FROM fn f, UNNEST(f.metadata) AS u(m), UNNEST(m.response) AS v(r)
      WHERE m.project_ref = $project AND ($function = '' OR m.function_id = $function)
        AND f.timestamp >= $first AND f.timestamp < $stop)
    SELECT bucket AS timestamp, min(t) AS min_execution_time, max(t) AS max_execution_time,
      avg(t) AS avg_execution_time, quantile_disc(t, 0.95) AS p95_execution_time,
      quantile_disc(t, 0.99) AS p99_execution_time, count(*) AS count,
      count(*) FILTER (WHERE s >= 400) AS error_count
    FROM rows GROUP BY bucket ORDER BY bucket LIMIT 1000`,
  logs: `
    SELECT id::VARCHAR AS id, timestamp, event_message, to_json(metadata) AS metadata FROM edge
    WHERE project = $project AND timestamp > $lower AND timestamp <= $upper
    ORDER BY timestamp DESC, id LIMIT 100`,
  counts: `
    SELECT strftime(make_timestamp(e.timestamp // $width * $width), '%Y-%m-%dT%H:%M:%S') AS timestamp,
      count(*) FILTER (WHERE contains(r.path, '/rest')) AS total_rest_requests,
      count(*) FILTER (WHERE contains(r.path, '/storage')) AS total_storage_requests,
      count(*) FILTER (WHERE contains(r.path, '/auth')) AS total_auth_requests,
      count(*) FILTER (WHERE contains(r.path, '/realtime')) AS total_realtime_requests
    FROM edge e, UNNEST(e.metadata) AS u(m), UNNEST(m.request) AS q(r)
    WHERE e.timestamp >= $start AND regexp_matches(r.url, $project)
    GROUP BY e.timestamp // $width ORDER BY 1 LIMIT 1000`,
};

/** The SQL and bound values for one run of the plan (the contract's rules in SQL). */
function bind(endpoint, params, nowUs) {
  if (endpoint === "functions.invocation-stats") {
    const [window, step] = { "5min": [5 * MINUTE, 1e6], "15min": [15 * MINUTE, MINUTE], "1hr": [HOUR, MINUTE], "7day": [7 * DAY, DAY] }[params.interval] ?? [DAY, HOUR];
    const first = Math.floor((nowUs - window) / step) * step;
    return ["stats", { step, project: params.project, function: params.function_id ?? "", first, stop: Math.floor(nowUs / step) * step + step }];
  }
  if (endpoint === "logs.all") {
    const retention = { PRO: 7 * DAY, PAYG: 90 * DAY, ENTERPRISE: 90 * DAY }[params.project_tier] ?? DAY;
    const upper = params.iso_timestamp_end ? Date.parse(params.iso_timestamp_end) * 1000 : Number.MAX_SAFE_INTEGER;
    return ["logs", { project: params.project, lower: nowUs - retention, upper }];
  }
  const [window, width] = { minutely: [60 * MINUTE, MINUTE], hourly: [HOUR, HOUR], daily: [7 * DAY, DAY] }[params.interval];
  return ["counts", { width, project: params.project, start: nowUs - window }];
}

const instance = await DuckDBInstance.create(":memory:");
const db = await instance.connect();
const threads = (await db.runAndReadAll("SELECT current_setting('threads') AS t")).getRowObjects()[0].t;
const ingest = {};
for (const [table, stream, path] of [["edge", "edge_logs", files.edge], ["fn", "function_edge_logs", files.functions]]) {
  const t0 = performance.now();
  await db.run(`CREATE TABLE ${table} AS SELECT * FROM read_json('${path}', format = 'newline_delimited')`);
  const ms = performance.now() - t0;
  const entries = Number((await db.runAndReadAll(`SELECT count(*) AS n FROM ${table}`)).getRowObjects()[0].n);
  ingest[stream] = { ms, bytes: statSync(path).size, entries };
}
const prepared = {};
for (const [name, sql] of Object.entries(SQL)) prepared[name] = await db.prepare(sql);

// DuckDB's slowest queries take seconds at 5M entries: after 5 runs, a query
// stops once it has used its time budget (the table says how many runs it had).
const BUDGET_MS = 60_000;
const MIN_RUNS = 5;
const queries = {};
for (const [name, { endpoint, runs }] of Object.entries(plan.queries)) {
  const ms = [];
  const rows = [];
  {
    const [which, values] = bind(endpoint, runs[runs.length - 1], plan.nowUs); // warm-up, not timed
    prepared[which].bind(values);
    await prepared[which].runAndReadAll();
  }
  for (const params of runs) {
    if (ms.length >= MIN_RUNS && ms.reduce((a, b) => a + b, 0) > BUDGET_MS) break;
    const [which, values] = bind(endpoint, params, plan.nowUs);
    const statement = prepared[which];
    statement.clearBindings?.();
    statement.bind(values);
    const t0 = performance.now();
    const reader = await statement.runAndReadAll();
    ms.push(performance.now() - t0);
    rows.push(reader.currentRowCount);
  }
  queries[name] = { ms, rows };
}
const memory = (await db.runAndReadAll("SELECT sum(memory_usage_bytes)::BIGINT AS b FROM duckdb_memory()")).getRowObjects()[0].b;
console.log(JSON.stringify({ ingest, queries, threads: Number(threads), memoryBytes: Number(memory), version: (await db.runAndReadAll("SELECT version() AS v")).getRowObjects()[0].v }));
