// A wake that replays many stored batches (no snapshot yet, or a refused one)
// writes its snapshot before it answers, not at the next maintenance:
// otherwise every wake until then replays them all again (an alarm would come
// too late after a long replay, which workerd follows with an eviction).
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { Miniflare } from "miniflare";
import { generate, ndjson, tenants } from "../../scripts/generate-logs.mjs";
import { testWorkerOptions } from "../worker/options.mjs";

const NOW = Date.parse("2026-11-20T12:00:00Z");
// A small budget: a sixteenth of it in stored batches is a long replay.
const bindings = { API_KEYS: "k", INGEST_KEYS: "i", FIXED_NOW_MS: String(NOW), SHARDING: "off", MAX_STORE_BYTES: String(4 << 20) };

/** One object's runtime (SHARDING=off), restarted on the same storage as a deployment is. */
function runtime(dir) {
  let mf = new Miniflare(testWorkerOptions({ persistDir: dir, bindings }));
  return {
    /** `settings`: bindings that replace the usual ones until the next restart. */
    async restart(settings = {}) {
      await mf.dispose();
      mf = new Miniflare(testWorkerOptions({ persistDir: dir, bindings: { ...bindings, ...settings } }));
    },
    dispose: () => mf.dispose(),
    post: (stream, body) => mf.dispatchFetch(`http://localhost/api/logs/${stream}`, { method: "POST", body, headers: { "X-API-KEY": "i" } }),
    async shardAnswer(pathname, init) {
      const ns = await mf.getDurableObjectNamespace("SHARD");
      return ns.get(ns.idFromName("logs")).fetch(`https://shard.internal${pathname}`, init);
    },
    async shard(pathname, init) {
      const res = await this.shardAnswer(pathname, init);
      assert.equal(res.status, 200, pathname);
      return res.json();
    },
    maintain() {
      return this.shard("/maintain", { method: "POST", headers: { "X-Now-Ms": String(NOW) } });
    },
  };
}

/** Runs `body` with a runtime on storage of its own, which goes afterwards. */
async function withRuntime(body) {
  const dir = mkdtempSync(path.join(tmpdir(), "wake-replay-"));
  const rt = runtime(dir);
  try {
    await body(rt);
  } finally {
    await rt.dispose();
    rmSync(dir, { recursive: true, force: true });
  }
}

const tenancy = tenants(30);

/** Eight batches of 1,500 entries, stored and never snapshotted (maintenance is minutes away). */
async function fill(rt) {
  let batches = 0;
  for (let seed = 1; seed <= 4; seed++) {
    for (const stream of ["edge_logs", "function_edge_logs"]) {
      const res = await rt.post(stream, ndjson(generate({ stream, count: 1500, endMs: NOW, spanMs: 86400e3, seed, tenancy })));
      assert.equal(res.status, 200, await res.text());
      batches++;
    }
  }
  assert.equal(await rt.shard("/test/snapshot"), null);
  return batches;
}

test("an object that woke by replaying many stored batches writes its snapshot before it answers", () =>
  withRuntime(async (rt) => {
    const batches = await fill(rt);
    await rt.restart();
    // This request wakes the object, which replays every batch and then
    // writes its snapshot, before it answers.
    const snapshot = await rt.shard("/test/snapshot");
    assert.notEqual(snapshot, null, `no snapshot after a wake that replayed ${batches} batches`);
    assert.equal(snapshot.lastBatchId, batches);
    const status = await rt.maintain();
    assert.deepEqual([status.woke.fromSnapshot, status.woke.replayedBatches, status.woke.snapshot?.written], [false, batches, true], JSON.stringify(status.woke));
    assert.equal(status.snapshot.written, false, "the wake wrote it already");
    // The next wake restores it and replays nothing.
    await rt.restart();
    const again = await rt.maintain();
    assert.deepEqual([again.woke.fromSnapshot, again.woke.replayedBatches, again.woke.snapshot], [true, 0, undefined], JSON.stringify(again.woke));
    assert.deepEqual([again.edgeEntries, again.functionRows], [status.edgeEntries, status.functionRows]);
    // A short replay is left to maintenance.
    const one = ndjson(generate({ stream: "edge_logs", count: 50, endMs: NOW, spanMs: 3600e3, seed: 99, tenancy }));
    assert.equal((await rt.post("edge_logs", one)).status, 200);
    await rt.restart();
    const short = await rt.maintain();
    assert.deepEqual([short.woke.fromSnapshot, short.woke.replayedBatches, short.woke.snapshot], [true, 1, undefined], JSON.stringify(short.woke));
  }));

test("a trap while writing that snapshot leaves a fresh engine, replayed again, answering", () =>
  withRuntime(async (rt) => {
    const batches = await fill(rt);
    assert.deepEqual(await rt.shard("/test/trap-next-snapshot", { method: "POST" }), { armed: true });
    await rt.restart();
    assert.equal(await rt.shard("/test/snapshot"), null, "the write trapped: nothing was stored");
    const status = await rt.maintain();
    const { woke } = status;
    assert.deepEqual([woke.fromSnapshot, woke.replayedBatches, woke.snapshot?.written, woke.snapshot?.engineReset], [false, batches, false, true], JSON.stringify(woke));
    assert.match(woke.snapshot.reason, /simulated/);
    assert.equal(status.edgeEntries, 6000);
    assert.equal(status.snapshot.written, true, "maintenance writes it");
  }));

test("a trap while replaying a stored batch leaves it out of a fresh engine, and the next wake loads it", () =>
  withRuntime(async (rt) => {
    const batches = await fill(rt);
    assert.deepEqual(await rt.shard("/test/trap-next-replay", { method: "POST" }), { armed: true });
    await rt.restart();
    const status = await rt.maintain();
    const { woke } = status;
    assert.deepEqual([woke.replayedBatches, woke.failedBatches, woke.trappedBatches], [batches, 1, 1], JSON.stringify(woke));
    assert.equal(status.edgeEntries, 4500, "the first batch (1,500 edge entries) is left out, the rest loaded");
    assert.equal(status.snapshot.written, false, "no snapshot leaves a stored batch out");
    // Nothing is lost: the next wake loads it.
    await rt.restart();
    const again = await rt.maintain();
    assert.deepEqual([again.woke.failedBatches, again.edgeEntries, again.functionRows], [0, 6000, status.functionRows], JSON.stringify(again.woke));
  }));

test("keys in the settings that an engine refuses leave a stored snapshot as it is", () =>
  withRuntime(async (rt) => {
    const batches = await fill(rt);
    await rt.restart();
    assert.equal((await rt.shard("/test/snapshot")).lastBatchId, batches);
    // A misspelt restriction: the object is not made (503 unavailable, which
    // a shipper retries) and its storage is not touched.
    await rt.restart({ API_KEYS: JSON.stringify([{ key: "k", project: ["x"] }]) });
    await assert.rejects(rt.shardAnswer("/maintain", { method: "POST", headers: { "X-Now-Ms": String(NOW) } }), (e) => {
      assert.match(e.message, /unavailable: .*setting API_KEYS or INGEST_KEYS: unknown field of a key in apiKeys `project`/);
      return true;
    });
    await rt.restart();
    const status = await rt.maintain();
    assert.deepEqual([status.woke.fromSnapshot, status.woke.replayedBatches, status.woke.snapshotRefused], [true, 0, undefined], JSON.stringify(status.woke));
  }));
