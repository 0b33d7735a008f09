// DuckDB (@duckdb/node-api, native DuckDB in this process) on the same NDJSON
// files, answering the plan with the equivalent SQL of each endpoint (prepared
// once, parameters bound per run). Prints JSON like run-wasm.mjs.
//
//   node bench/run-duckdb.mjs --layout flat --edge E.ndjson --functions F.ndjson --plan plan.json
//
// Two layouts:
// - flat (the peer at its best): what a DuckDB user would load: the nested
//   metadata unnested at load into flat, typed tables (one row per entry, per
//   request, per function invocation), sorted by time;
// - nested: read_json's tables as they come and the reference SQL's UNNESTs at
//   query time (a record with no response unnests to one, as ours reads it):
//   the port of the reference, kept as the correctness cross-check.
import { parseArgs } from "node:util";
import { statSync } from "node:fs";
import { DuckDBInstance } from "@duckdb/node-api";
import { readPlan, splitLoad, timePlan } from "./plan.mjs";

const { values: files } = parseArgs({
  options: { edge: { type: "string" }, functions: { type: "string" }, plan: { type: "string" }, layout: { type: "string", default: "flat" }, budget: { type: "string", default: "60000" } },
});
const flat = files.layout === "flat";
const plan = readPlan(files.plan);

/**
 * A metadata record's responses, or one of none when it has none: as ours
 * reads it, a record with no response is one invocation with no status
 * (src/ingest.rs), where UNNEST alone would drop it. (chDB: LEFT ARRAY JOIN.)
 */
const RESPONSES = "CASE WHEN len(m.response) > 0 THEN m.response ELSE [NULL] END";

/** The load into flat tables, sorted by time ($EDGE and $FUNCTIONS: the files). */
export const FLAT_LOAD = [
  `CREATE TEMP TABLE edge_raw AS SELECT * FROM read_json($EDGE, format = 'newline_delimited')`,
  `CREATE TABLE edge AS SELECT timestamp AS ts, id::VARCHAR AS id, project, event_message, to_json(metadata)::VARCHAR AS metadata FROM edge_raw ORDER BY ts`,
  `CREATE TABLE requests AS SELECT ts, r.url AS url, r.path AS path FROM (SELECT ts, unnest(m.request) AS r FROM (SELECT timestamp AS ts, unnest(metadata) AS m FROM edge_raw)) ORDER BY ts`,
  `DROP TABLE edge_raw`,
  `CREATE TABLE fn AS SELECT ts, m.project_ref AS project, m.function_id AS function_id, m.execution_time_ms::DOUBLE AS t, r.status_code::INTEGER AS s
     FROM (SELECT ts, m, unnest(${RESPONSES}) AS r FROM (SELECT timestamp AS ts, unnest(metadata) AS m FROM read_json($FUNCTIONS, format = 'newline_delimited'))) ORDER BY ts`,
];

export const FLAT_SQL = {
  stats: `
    SELECT ts // $step * $step AS timestamp, min(t) AS min_execution_time, max(t) AS max_execution_time,
      avg(t) AS avg_execution_time, quantile_disc(t, 0.95) AS p95_execution_time,
      quantile_disc(t, 0.99) AS p99_execution_time, count(*) AS count,
      count(*) FILTER (WHERE s >= 400) AS error_count
    FROM fn WHERE project = $project AND ($function = '' OR function_id = $function) AND ts >= $first AND ts < $stop
    GROUP BY 1 ORDER BY 1 LIMIT 1000`,
  logs: `
    SELECT id, ts AS timestamp, event_message, metadata FROM edge
    WHERE project = $project AND ts > $lower AND ts <= $upper
    ORDER BY ts DESC, id LIMIT 100`,
  counts: `
    SELECT strftime(make_timestamp(ts // $width * $width), '%Y-%m-%dT%H:%M:%S') AS timestamp,
      count(*) FILTER (WHERE contains(path, '/rest')) AS total_rest_requests,
      count(*) FILTER (WHERE contains(path, '/storage')) AS total_storage_requests,
      count(*) FILTER (WHERE contains(path, '/auth')) AS total_auth_requests,
      count(*) FILTER (WHERE contains(path, '/realtime')) AS total_realtime_requests
    FROM requests WHERE ts >= $start AND regexp_matches(url, $project)
    GROUP BY ts // $width ORDER BY 1 LIMIT 1000`,
  combined: `
    SELECT ts // $step * $step AS timestamp, count(*) AS requests_count,
      count(*) FILTER (WHERE s BETWEEN 200 AND 299) AS success_count,
      count(*) FILTER (WHERE s BETWEEN 300 AND 399) AS redirect_count,
      count(*) FILTER (WHERE s BETWEEN 400 AND 499) AS client_err_count,
      count(*) FILTER (WHERE s >= 500) AS server_err_count,
      avg(t) AS avg_execution_time, max(t) AS max_execution_time
    FROM fn WHERE project = $project AND function_id = $function AND ts >= $first AND ts < $stop
    GROUP BY 1 ORDER BY 1 LIMIT 1000`,
  requests: `SELECT count(*) AS count FROM edge WHERE project = $project AND ts >= $since`,
};

export const SQL = {
  stats: `
    WITH rows AS (
      SELECT f.timestamp // $step * $step AS bucket, m.execution_time_ms AS t, r.status_code AS s
      FROM fn f, UNNEST(f.metadata) AS u(m), UNNEST(${RESPONSES}) AS v(r)
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
  combined: `
    WITH rows AS (
      SELECT f.timestamp // $step * $step AS bucket, m.execution_time_ms AS t, r.status_code AS s
      FROM fn f, UNNEST(f.metadata) AS u(m), UNNEST(${RESPONSES}) AS v(r)
      WHERE m.project_ref = $project AND m.function_id = $function
        AND f.timestamp >= $first AND f.timestamp < $stop)
    SELECT bucket AS timestamp, count(*) AS requests_count,
      count(*) FILTER (WHERE s BETWEEN 200 AND 299) AS success_count,
      count(*) FILTER (WHERE s BETWEEN 300 AND 399) AS redirect_count,
      count(*) FILTER (WHERE s BETWEEN 400 AND 499) AS client_err_count,
      count(*) FILTER (WHERE s >= 500) AS server_err_count,
      avg(t) AS avg_execution_time, max(t) AS max_execution_time
    FROM rows GROUP BY bucket ORDER BY bucket LIMIT 1000`,
  requests: `SELECT count(*) AS count FROM edge WHERE project = $project AND timestamp >= $since`,
};

const instance = await DuckDBInstance.create(":memory:");
const db = await instance.connect();
const threads = (await db.runAndReadAll("SELECT current_setting('threads') AS t")).getRowObjects()[0].t;
const ingest = {};
if (flat) {
  const quote = (p) => `'${p.replace(/'/g, "''")}'`;
  const t0 = performance.now();
  for (const statement of FLAT_LOAD) await db.run(statement.replace("$EDGE", quote(files.edge)).replace("$FUNCTIONS", quote(files.functions)));
  const ms = performance.now() - t0;
  const count = async (table) => Number((await db.runAndReadAll(`SELECT count(*) AS n FROM ${table}`)).getRowObjects()[0].n);
  Object.assign(ingest, splitLoad(
    ms,
    { edge_logs: statSync(files.edge).size, function_edge_logs: statSync(files.functions).size },
    { edge_logs: await count("edge"), function_edge_logs: await count("fn") },
  ));
} else {
  for (const [table, stream, path] of [["edge", "edge_logs", files.edge], ["fn", "function_edge_logs", files.functions]]) {
    const t0 = performance.now();
    await db.run(`CREATE TABLE ${table} AS SELECT * FROM read_json('${path}', format = 'newline_delimited')`);
    const ms = performance.now() - t0;
    const entries = Number((await db.runAndReadAll(`SELECT count(*) AS n FROM ${table}`)).getRowObjects()[0].n);
    ingest[stream] = { ms, bytes: statSync(path).size, entries };
  }
}
const prepared = {};
for (const [name, sql] of Object.entries(flat ? FLAT_SQL : SQL)) prepared[name] = await db.prepare(sql);

const queries = await timePlan(plan, Number(files.budget), async (which, values) => {
  const statement = prepared[which];
  statement.clearBindings?.();
  statement.bind(values);
  return statement.runAndReadAll();
}, (reader) => reader.getRowObjectsJS());
const memory = (await db.runAndReadAll("SELECT sum(memory_usage_bytes)::BIGINT AS b FROM duckdb_memory()")).getRowObjects()[0].b;
console.log(JSON.stringify({ layout: files.layout, load: flat ? FLAT_LOAD : undefined, ingest, queries, threads: Number(threads), memoryBytes: Number(memory), version: (await db.runAndReadAll("SELECT version() AS v")).getRowObjects()[0].v }));
