// A snapshot of many parts on workerd: the object writes them to SQLite as the
// engine hands them on (part 0 last, in one transaction) and, after a restart,
// reads them back through SQLite's cursor a part at a time. The store answers
// as it did before (logs.all reading its text blocks back from SQLite), and
// wakes from the snapshot without replaying a batch.
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { Miniflare } from "miniflare";
import { generate, ndjson, tenants } from "../../scripts/generate-logs.mjs";
import { testWorkerOptions } from "../worker/options.mjs";

const NOW = Date.parse("2026-11-20T12:00:00Z");
const BASE = "http://localhost";
const bindings = { API_KEYS: "k", INGEST_KEYS: "i", FIXED_NOW_MS: String(NOW), SHARDING: "off" };
const MiB = 2 ** 20;

test("a snapshot of many parts is stored and woken from on workerd, answering the same", async () => {
  const dir = mkdtempSync(path.join(tmpdir(), "snapshot-parts-"));
  let mf = new Miniflare(testWorkerOptions({ persistDir: dir, bindings }));
  const maintain = async () => {
    const ns = await mf.getDurableObjectNamespace("SHARD");
    const res = await ns.get(ns.idFromName("logs")).fetch("https://shard.internal/maintain", { method: "POST", headers: { "X-Now-Ms": String(NOW) } });
    assert.equal(res.status, 200);
    return res.json();
  };
  const tenancy = tenants(50);
  const project = tenancy.refs[0];
  const queries = [
    `logs.all?project=${project}&project_tier=PAYG`,
    `functions.invocation-stats?project=${project}&interval=1day`,
    `usage.api-counts?project=${project}&interval=hourly`,
  ];
  const answers = async () => Promise.all(queries.map(async (q) => {
    const res = await mf.dispatchFetch(`${BASE}/api/endpoints/query/${q}`, { headers: { "X-API-KEY": "k" } });
    assert.equal(res.status, 200, q);
    return res.json();
  }));
  try {
    for (let seed = 1; seed <= 8; seed++) {
      // Every URL its own (a query string of its own), so the URL names' text
      // alone spans parts.
      const edge = [...generate({ stream: "edge_logs", count: 4000, endMs: NOW, spanMs: 86400e3, seed, tenancy })];
      edge.forEach((e, i) => { e.metadata[0].request[0].url += `${e.metadata[0].request[0].url.includes("?") ? "&" : "?"}n=${seed}-${i}`; });
      const fns = generate({ stream: "function_edge_logs", count: 4000, endMs: NOW, spanMs: 86400e3, seed, tenancy });
      for (const [stream, body] of [["edge_logs", ndjson(edge)], ["function_edge_logs", ndjson(fns)]]) {
        const res = await mf.dispatchFetch(`${BASE}/api/logs/${stream}`, { method: "POST", body, headers: { "X-API-KEY": "i" } });
        assert.equal(res.status, 200, await res.text());
      }
    }
    const { snapshot, storageBytes } = await maintain();
    // Sealed text blocks are in the object's SQLite, not in the snapshot.
    assert.ok(storageBytes > 100_000, `${storageBytes} bytes of text blocks in storage`);
    assert.ok(snapshot.written && snapshot.bytes > 2 * MiB, `a snapshot of ${snapshot.bytes} bytes: at least three parts`);
    const before = await answers();
    assert.ok(before[0].result.length > 0);
    await mf.dispose();
    mf = new Miniflare(testWorkerOptions({ persistDir: dir, bindings }));
    await mf.ready;
    assert.deepEqual(await answers(), before);
    const { woke, storageBytes: storedAfter } = await maintain();
    assert.equal(storedAfter, storageBytes);
    assert.equal(woke.fromSnapshot, true, JSON.stringify(woke));
    assert.equal(woke.replayedBatches, 0);
    // Rows of the day's first hours are in sealed blocks: a block changed in
    // SQLite is a storage fault the shipper's client may retry, never
    // another block's text.
    // (Each asks for another end, so that no answer comes from the cache.)
    const early = (hours) => `logs.all?project=${project}&project_tier=PAYG&iso_timestamp_end=${new Date(NOW - hours * 3600e3).toISOString()}`;
    const query = (hours) => mf.dispatchFetch(`${BASE}/api/endpoints/query/${early(hours)}`, { headers: { "X-API-KEY": "k" } });
    const intact = await query(20);
    assert.equal(intact.status, 200);
    assert.ok((await intact.json()).result.length > 0);
    const ns = await mf.getDurableObjectNamespace("SHARD");
    const { damaged } = await (await ns.get(ns.idFromName("logs")).fetch("https://shard.internal/test/damage-text-blocks", { method: "POST" })).json();
    assert.ok(damaged > 0);
    const refused = await query(19);
    const body = await refused.text();
    assert.equal(refused.status, 503, body);
    assert.equal(JSON.parse(body).error.code, "storage_unavailable");
  } finally {
    await mf.dispose();
    rmSync(dir, { recursive: true, force: true });
  }
});
