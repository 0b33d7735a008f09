// A bounded load check: the worker served on loopback by workerd, and
// autocannon in a second process sending a few thousand requests to a cached
// and an uncached endpoint. It asserts only that nothing failed; the figures
// (requests/s, p99) are printed for the record, not judged.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { Miniflare } from "miniflare";
import { workerOptions, ROOT } from "../../www/miniflare-options.mjs";
import { generate, ndjson, projectRefs } from "../../scripts/generate-logs.mjs";

const run = promisify(execFile);
const NOW = Date.parse("2026-11-20T12:00:00Z");
const REQUESTS = 3000;
const [project] = projectRefs();
let mf;
let base;
let dir;

before(async () => {
  dir = mkdtempSync(path.join(tmpdir(), "log-endpoints-load-"));
  // Port 0: the runtime picks a free loopback port.
  mf = new Miniflare(workerOptions({ persistDir: dir, port: 0, bindings: { API_KEYS: "load", INGEST_KEYS: "in", FIXED_NOW_MS: String(NOW) } }));
  base = (await mf.ready).origin;
  for (const stream of ["edge_logs", "function_edge_logs"]) {
    const entries = [...generate({ stream, count: 20_000, endMs: NOW, spanMs: 24 * 3600e3 })];
    for (let i = 0; i < entries.length; i += 4000) {
      const res = await fetch(`${base}/api/logs/${stream}`, { method: "POST", headers: { "X-API-KEY": "in" }, body: ndjson(entries.slice(i, i + 4000)) });
      assert.equal(res.status, 200);
      await res.arrayBuffer();
    }
  }
});

after(async () => {
  await mf?.dispose();
  rmSync(dir, { recursive: true, force: true });
});

async function autocannon(url) {
  const bin = path.join(ROOT, "node_modules/.bin/autocannon");
  const { stdout } = await run(bin, ["-j", "-a", String(REQUESTS), "-c", "8", "-H", "X-API-KEY=load", url], { maxBuffer: 1 << 24, timeout: 120_000 });
  return JSON.parse(stdout);
}

for (const [label, endpoint, query] of [
  ["cached", "functions.invocation-stats", `project=${project}&interval=1day`],
  ["uncached", "logs.all", `project=${project}&project_tier=PRO`],
]) {
  test(`${REQUESTS} requests to ${endpoint} (${label}) from a second process, none failed`, async () => {
    const result = await autocannon(`${base}/api/endpoints/query/${endpoint}?${query}`);
    console.log(
      `load ${label.padEnd(8)} ${endpoint}: ${Math.round(result.requests.total / result.duration)} req/s, ` +
        `p50 ${result.latency.p50} ms, p99 ${result.latency.p99} ms, ${result["2xx"]} × 2xx of ${result.requests.total}`,
    );
    assert.equal(result.errors, 0);
    assert.equal(result.timeouts, 0);
    assert.equal(result.non2xx, 0);
    assert.equal(result["2xx"], REQUESTS);
  });
}
