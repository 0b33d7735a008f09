// A full object must write and reopen its snapshot within the memory its store
// takes: a Workers isolate has 128 MB for the wasm memory and the JS heap, and
// a 64 MiB store's snapshot held whole (in the engine, then copied out) would
// take about as much again. Written and read in parts, the engine's memory
// (which never shrinks) grows by a couple of parts (31 MiB for a 10.6 MiB
// snapshot held whole, in this test). Its own process: the wasm
// memory is the module's, shared by every service in it.
import { test } from "node:test";
import assert from "node:assert/strict";
import { LogEndpoints } from "log-endpoints";
import { generate, ndjson, tenants } from "../../scripts/generate-logs.mjs";

const NOW = Date.parse("2026-11-20T12:00:00Z");
const MiB = 2 ** 20;

test("a snapshot is written and reopened in parts without holding it whole", () => {
  const svc = new LogEndpoints({ apiKeys: ["k"], now: NOW });
  const tenancy = tenants(200);
  // Small batches, so that no freed batch leaves room for a whole snapshot.
  for (let seed = 1; svc.stats().storeBytes < 12 * MiB; seed++) {
    for (const stream of ["edge_logs", "function_edge_logs"]) {
      const body = ndjson(generate({ stream, count: 1500, endMs: NOW, spanMs: 86400e3, seed, tenancy }));
      assert.equal(svc.ingest(stream, body).rejectedTotal, 0);
    }
  }
  const before = svc.memoryBytes();
  const parts = [];
  const bytes = svc.snapshotParts((index, part) => { parts[index] = part; });
  assert.ok(bytes > 8 * MiB, `a snapshot of ${bytes} bytes`);
  const grewWriting = svc.memoryBytes() - before;
  assert.ok(grewWriting <= 3 * MiB, `writing a ${(bytes / MiB).toFixed(1)} MiB snapshot grew the engine's memory by ${(grewWriting / MiB).toFixed(1)} MiB`);

  const answer = (s) => s.queryRaw("logs.all", { project: tenancy.refs[0], project_tier: "PAYG" }, "k").body;
  const expected = answer(svc);
  svc.free();
  const reopened = LogEndpoints.fromSnapshotParts((function* () { yield* parts; })(), bytes, { apiKeys: ["k"], now: NOW });
  const grewReopening = reopened.memoryBytes() - before;
  assert.ok(grewReopening <= 3 * MiB, `reopening it grew the engine's memory by ${(grewReopening / MiB).toFixed(1)} MiB`);
  assert.equal(answer(reopened), expected);
});
