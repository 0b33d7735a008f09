// An object workerd evicts (after 10 s without events in Miniflare) is
// constructed again on its next event, and the instance it dropped is never
// told: its engine must not stay in the isolate's shared wasm memory beside
// the new instance's (a full object's would take the isolate past 128 MB).
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { Miniflare } from "miniflare";
import { generate, ndjson, tenants } from "../../scripts/generate-logs.mjs";
import { testWorkerOptions } from "../worker/options.mjs";

const NOW = Date.parse("2026-11-20T12:00:00Z");
const bindings = { API_KEYS: "k", INGEST_KEYS: "i", FIXED_NOW_MS: String(NOW), SHARDING: "off" };
// Miniflare's eviction timer is 10 s without events; a little more.
const IDLE_MS = 12_000;

test("an evicted object's engine is freed when the object is constructed again", async () => {
  const dir = mkdtempSync(path.join(tmpdir(), "eviction-"));
  const mf = new Miniflare(testWorkerOptions({ persistDir: dir, bindings }));
  const maintain = async () => {
    const ns = await mf.getDurableObjectNamespace("SHARD");
    const res = await ns.get(ns.idFromName("logs")).fetch("https://shard.internal/maintain", { method: "POST", headers: { "X-Now-Ms": String(NOW) } });
    assert.equal(res.status, 200);
    return res.json();
  };
  try {
    const tenancy = tenants(50);
    // Many small batches: the store is large beside the memory a batch takes
    // on its way in, which the next instance could reuse as well.
    for (let seed = 1; seed <= 60; seed++) {
      for (const stream of ["edge_logs", "function_edge_logs"]) {
        const body = ndjson(generate({ stream, count: 2000, endMs: NOW, spanMs: 86400e3, seed, tenancy }));
        const res = await mf.dispatchFetch(`http://localhost/api/logs/${stream}`, { method: "POST", body, headers: { "X-API-KEY": "i" } });
        assert.equal(res.status, 200, await res.text());
      }
    }
    const before = await maintain(); // writes the snapshot the next instance wakes from
    assert.ok(before.storeBytes > 2 ** 20, `a store of ${before.storeBytes} bytes`);
    // Waits out the eviction timer: no event may reach the object meanwhile.
    await sleep(IDLE_MS);
    const after = await maintain();
    assert.ok(after.woke.atMs > before.woke.atMs, `the object was not constructed again after ${IDLE_MS} ms without events: ${JSON.stringify(after.woke)}`);
    assert.equal(after.woke.fromSnapshot, true, JSON.stringify(after.woke));
    assert.deepEqual([after.edgeEntries, after.functionRows], [before.edgeEntries, before.functionRows]);
    // The new instance's store is carved from the memory the dropped one's
    // freed: the wasm memory does not grow by a second store.
    const grown = after.memoryBytes - before.memoryBytes;
    assert.ok(grown < before.storeBytes / 2, `wasm memory grew by ${grown} bytes beside a store of ${before.storeBytes}`);
  } finally {
    await mf.dispose();
    rmSync(dir, { recursive: true, force: true });
  }
});
