// A bounded load check: the worker served on loopback by workerd, sharded (a
// Durable Object per project and day) and as the single object it was before
// (SHARDING=off), with the same data of 200 projects. autocannon, in a second
// process, sends a few thousand requests across the projects to a cached and
// an uncached endpoint. It asserts only that nothing failed; the figures
// (requests/s, p99) are printed for the record, not judged.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import path from "node:path";
import { Miniflare } from "miniflare";
import { distributed, workerOptions, ROOT } from "../../www/miniflare-options.mjs";
import { generate, ndjson, tenants } from "../../scripts/generate-logs.mjs";

const run = promisify(execFile);
const NOW = Date.parse("2026-11-20T12:00:00Z");
const REQUESTS = 3000;
const tenancy = tenants(200, 13, { refs: "mixed" });
const deployments = {};

before(async () => {
  const batches = ["edge_logs", "function_edge_logs"].map((stream) => [stream, [...generate({ stream, count: 20_000, endMs: NOW, spanMs: 2 * 24 * 3600e3, tenancy })]]);
  for (const [label, sharding] of [["sharded", undefined], ["single object", "off"]]) {
    // Port 0: the runtime picks a free loopback port.
    const bindings = { API_KEYS: "load", INGEST_KEYS: "in", FIXED_NOW_MS: String(NOW), ...(sharding ? { SHARDING: sharding } : {}) };
    const mf = new Miniflare(workerOptions({ port: 0, bindings }));
    const base = (await mf.ready).origin;
    for (const [stream, entries] of batches) {
      for (let i = 0; i < entries.length; i += 4000) {
        const res = await fetch(`${base}/api/logs/${stream}`, { method: "POST", headers: { "X-API-KEY": "in" }, body: ndjson(entries.slice(i, i + 4000)) });
        const text = await res.text();
        assert.equal(res.status, 200, text);
      }
    }
    // Queries must meet the data, not empty stores: the partitions have sent every batch on.
    if (!sharding) await distributed(mf, { timeoutMs: 120_000 });
    deployments[label] = { mf, base };
  }
});

after(async () => {
  for (const { mf } of Object.values(deployments)) await mf.dispose();
});

async function autocannon(base, paths) {
  const client = path.join(ROOT, "tests/node/load-client.mjs");
  const config = JSON.stringify({ base, paths, key: "load", amount: REQUESTS, connections: 8 });
  const { stdout } = await run(process.execPath, [client, config], { maxBuffer: 1 << 24, timeout: 180_000 });
  return JSON.parse(stdout);
}

// The 100 busiest projects, each asked in turn.
const projects = tenancy.refs.slice(0, 100);
for (const [label, endpoint, query] of [
  ["cached", "functions.invocation-stats", (p) => `project=${p}&interval=1day`],
  ["uncached", "logs.all", (p) => `project=${p}&project_tier=PRO`],
]) {
  for (const deployment of ["sharded", "single object"]) {
    test(`${REQUESTS} requests to ${endpoint} (${label}) across 100 projects, ${deployment}, from a second process: none failed`, async () => {
      const { base } = deployments[deployment];
      const sample = await fetch(`${base}/api/endpoints/query/${endpoint}?${query(projects[0])}`, { headers: { "X-API-KEY": "load" } });
      assert.ok((await sample.json()).result.length > 0, `${endpoint} answers rows for ${projects[0]}`);
      const result = await autocannon(base, projects.map((p) => `/api/endpoints/query/${endpoint}?${query(p)}`));
      console.log(
        `load ${deployment.padEnd(13)} ${label.padEnd(8)} ${endpoint}: ${Math.round(result.requests.total / result.duration)} req/s, ` +
          `p50 ${result.latency.p50} ms, p99 ${result.latency.p99} ms, ${result["2xx"]} × 2xx of ${result.requests.total}`,
      );
      assert.equal(result.errors, 0);
      assert.equal(result.timeouts, 0);
      assert.equal(result.non2xx, 0);
      assert.equal(result["2xx"], REQUESTS);
    });
  }
}
