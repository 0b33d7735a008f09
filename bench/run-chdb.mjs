// ClickHouse through chDB (npm `chdb`, the engine in this process) on the same
// NDJSON files: MergeTree tables ordered for the queries, loaded from the files
// with the nested metadata unnested (ARRAY JOIN; LEFT ARRAY JOIN of a record's
// responses, so that a record with none is one invocation, as ours reads it),
// then merged (OPTIMIZE, after the load is timed), then the plan answered by
// the equivalent SQL of each endpoint with bound parameters. Prints JSON like
// run-wasm.mjs.
//
//   node bench/run-chdb.mjs --edge E.ndjson --functions F.ndjson --plan plan.json
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import { Session } from "chdb";
import { readPlan, splitLoad, timePlan } from "./plan.mjs";

const { values: files } = parseArgs({ options: { edge: { type: "string" }, functions: { type: "string" }, plan: { type: "string" }, budget: { type: "string", default: "60000" } } });
const plan = readPlan(files.plan);

/** The tables and their load ($EDGE and $FUNCTIONS: the files). */
export const LOAD = [
  `CREATE TABLE edge (ts Int64, id String, project String, event_message Nullable(String), metadata String) ENGINE = MergeTree ORDER BY (project, ts)`,
  `INSERT INTO edge SELECT timestamp, id, project, event_message, metadata
     FROM file($EDGE, JSONEachRow, 'timestamp Int64, id String, project String, event_message Nullable(String), metadata String')
     SETTINGS input_format_json_read_arrays_as_strings = 1`,
  `CREATE TABLE requests (ts Int64, url String, path String) ENGINE = MergeTree ORDER BY ts`,
  `INSERT INTO requests SELECT timestamp, r.url, r.path
     FROM file($EDGE, JSONEachRow, 'timestamp Int64, metadata Array(Tuple(request Array(Tuple(url String, path String))))')
     ARRAY JOIN metadata AS m ARRAY JOIN m.request AS r`,
  `CREATE TABLE fn (ts Int64, project String, function_id String, t Nullable(Float64), s Nullable(Int32)) ENGINE = MergeTree ORDER BY (project, ts)`,
  `INSERT INTO fn SELECT timestamp, m.project_ref, m.function_id, m.execution_time_ms, r.status_code
     FROM file($FUNCTIONS, JSONEachRow, 'timestamp Int64, metadata Array(Tuple(project_ref String, function_id String, execution_time_ms Nullable(Float64), response Array(Tuple(status_code Nullable(Int32)))))')
     ARRAY JOIN metadata AS m LEFT ARRAY JOIN m.response AS r`,
];

/** Merges for the queries, after the load is timed: the tables are query-ready once inserted. */
export const MERGE = [`OPTIMIZE TABLE edge FINAL`, `OPTIMIZE TABLE requests FINAL`, `OPTIMIZE TABLE fn FINAL`];

// p95/p99: the contract's nearest rank is element ceil(q·n)−1 of the sorted
// times; quantileExactLow(q) takes element floor(q·n), one further when q·n is
// whole (n = 20, 40, … for p95). floor((q − 1e-9)·n) is ceil(q·n)−1 for every
// bucket of fewer than 10^7 times.
export const SQL = {
  stats: `
    SELECT intDiv(ts, {step:Int64}) * {step:Int64} AS timestamp, min(t) AS min_execution_time, max(t) AS max_execution_time,
      avg(t) AS avg_execution_time, quantileExactLow(0.95 - 1e-9)(t) AS p95_execution_time,
      quantileExactLow(0.99 - 1e-9)(t) AS p99_execution_time, count() AS count, countIf(s >= 400) AS error_count
    FROM fn WHERE project = {project:String} AND ({function:String} = '' OR function_id = {function:String})
      AND ts >= {first:Int64} AND ts < {stop:Int64}
    GROUP BY timestamp ORDER BY timestamp LIMIT 1000`,
  logs: `
    SELECT id, ts AS timestamp, event_message, metadata FROM edge
    WHERE project = {project:String} AND ts > {lower:Int64} AND ts <= {upper:Int64}
    ORDER BY ts DESC, id LIMIT 100`,
  counts: `
    SELECT intDiv(ts, {width:Int64}) * {width:Int64} AS bucket,
      formatDateTime(toDateTime(intDiv(bucket, 1000000), 'UTC'), '%Y-%m-%dT%H:%i:%S') AS timestamp,
      countIf(position(path, '/rest') > 0) AS total_rest_requests,
      countIf(position(path, '/storage') > 0) AS total_storage_requests,
      countIf(position(path, '/auth') > 0) AS total_auth_requests,
      countIf(position(path, '/realtime') > 0) AS total_realtime_requests
    FROM requests WHERE ts >= {start:Int64} AND match(url, {project:String})
    GROUP BY bucket ORDER BY bucket LIMIT 1000`,
  combined: `
    SELECT intDiv(ts, {step:Int64}) * {step:Int64} AS timestamp, count() AS requests_count,
      countIf(s >= 200 AND s <= 299) AS success_count, countIf(s >= 300 AND s <= 399) AS redirect_count,
      countIf(s >= 400 AND s <= 499) AS client_err_count, countIf(s >= 500) AS server_err_count,
      avg(t) AS avg_execution_time, max(t) AS max_execution_time
    FROM fn WHERE project = {project:String} AND function_id = {function:String}
      AND ts >= {first:Int64} AND ts < {stop:Int64}
    GROUP BY timestamp ORDER BY timestamp LIMIT 1000`,
  requests: `SELECT count() AS count FROM edge WHERE project = {project:String} AND ts >= {since:Int64}`,
};

const dir = mkdtempSync(path.join(tmpdir(), "chdb-bench-"));
const session = new Session(dir);
const quote = (p) => `'${p.replace(/\\/g, "\\\\").replace(/'/g, "\\'")}'`;
const t0 = performance.now();
for (const statement of LOAD) session.query(statement.replaceAll("$EDGE", quote(files.edge)).replaceAll("$FUNCTIONS", quote(files.functions)));
const loadMs = performance.now() - t0;
for (const statement of MERGE) session.query(statement);
const count = (table) => Number(JSON.parse(session.query(`SELECT count() AS n FROM ${table}`, "JSON")).data[0].n);
const ingest = splitLoad(
  loadMs,
  { edge_logs: statSync(files.edge).size, function_edge_logs: statSync(files.functions).size },
  { edge_logs: count("edge"), function_edge_logs: count("fn") },
);

// Timed to the answer as text, as ours is (its rows are read after the timer).
const queries = await timePlan(plan, Number(files.budget), (which, values) => session.queryBind(SQL[which], values, "JSON"), (text) => JSON.parse(text).data);
const memory = Number(JSON.parse(session.query("SELECT sum(bytes_on_disk) AS b FROM system.parts WHERE active", "JSON")).data[0].b);
const version = JSON.parse(session.query("SELECT version() AS v", "JSON")).data[0].v;
const threads = Number(JSON.parse(session.query("SELECT getSetting('max_threads') AS t", "JSON")).data[0].t);
session.cleanup?.();
rmSync(dir, { recursive: true, force: true });
console.log(JSON.stringify({ load: LOAD, merge: MERGE, ingest, queries, threads, memoryBytes: memory, version: `ClickHouse ${version} (chDB)` }));
