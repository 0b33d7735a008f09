// The benchmark's peers answer as ours does on the records its generated data
// never holds (a function record with no response, with two, with no status
// or no time, a status below 200), so that a comparison by value means the
// same SQL semantics, not data that happens to avoid the differences. Each
// engine's runner (bench/run-*.mjs) is run as the benchmark runs it.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);
const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), "../..");
const NOW_US = Date.parse("2026-11-20T12:00:00Z") * 1000;
const MINUTE_US = 60e6;

function files(dir) {
  const fns = [];
  const record = (metadata) => fns.push({ id: `f${fns.length}`, timestamp: NOW_US - (fns.length + 1) * (MINUTE_US + 1e6), metadata: [metadata] });
  for (let k = 0; k < 30; k++) {
    record({ project_ref: "p1", function_id: "fa", execution_time_ms: 10 + k, response: [{ status_code: [200, 101, 404, 500, 302][k % 5] }] });
    record({ project_ref: "p1", function_id: "fa", execution_time_ms: 5 + k, response: [] });
    record({ project_ref: "p1", function_id: "fa", execution_time_ms: 3 });
    record({ project_ref: "p1", function_id: "fa", execution_time_ms: null, response: [{ status_code: null }] });
    record({ project_ref: "p1", function_id: "fb", execution_time_ms: 7, response: [{ status_code: 200 }, { status_code: 503 }] });
  }
  const edge = [{ id: "e1", timestamp: NOW_US - 1e6, project: "p1", event_message: "GET", metadata: [{ request: [{ url: "https://p1.supabase.co/rest/v1/x", path: "/rest/v1/x" }] }] }];
  const runs = (endpoint, list) => ({ endpoint, runs: list });
  const plan = {
    nowUs: NOW_US,
    warmUpMs: 1,
    dataset: "edge cases",
    queries: {
      stats: runs("functions.invocation-stats", [{ project: "p1", interval: "1day" }, { project: "p1", interval: "1hr" }, { project: "p1", interval: "1hr", function_id: "fa" }]),
      combined: runs("functions.combined-stats", [{ project: "p1", function_id: "fa", interval: "1day" }, { project: "p1", function_id: "fb", interval: "1hr" }]),
      logs: runs("logs.all", [{ project: "p1", project_tier: "FREE" }]),
      counts: runs("usage.api-counts", [{ project: "p1", interval: "hourly" }]),
      requests: runs("usage.api-requests-count", [{ project: "p1" }]),
    },
  };
  const write = (name, text) => writeFileSync(path.join(dir, name), text);
  write("edge.ndjson", edge.map((e) => JSON.stringify(e)).join("\n") + "\n");
  write("fn.ndjson", fns.map((e) => JSON.stringify(e)).join("\n") + "\n");
  write("plan.json", JSON.stringify(plan));
  return ["--edge", path.join(dir, "edge.ndjson"), "--functions", path.join(dir, "fn.ndjson"), "--plan", path.join(dir, "plan.json")];
}

test("the benchmark's peers answer as ours does on records its data never holds", async () => {
  const dir = mkdtempSync(path.join(tmpdir(), "bench-peers-"));
  try {
    const args = files(dir);
    const engines = { wasm: ["bench/run-wasm.mjs"], duckdb: ["bench/run-duckdb.mjs", "--layout", "flat"], nested: ["bench/run-duckdb.mjs", "--layout", "nested"], chdb: ["bench/run-chdb.mjs"] };
    const answers = {};
    for (const [engine, script] of Object.entries(engines)) {
      const { stdout } = await run(process.execPath, [...script, ...args], { cwd: root, maxBuffer: 64 << 20 });
      answers[engine] = Object.fromEntries(Object.entries(JSON.parse(stdout).queries).map(([name, q]) => [name, { rows: q.rows, answers: q.answers }]));
    }
    assert.ok(answers.wasm.stats.rows.every((n) => n > 0) && answers.wasm.combined.rows.every((n) => n > 0), "the queries meet the records");
    for (const engine of ["duckdb", "nested", "chdb"]) assert.deepEqual(answers[engine], answers.wasm, `${engine} against ours`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
