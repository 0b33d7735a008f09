// Snapshot restore against re-ingesting the same NDJSON, in the wasm build:
// time to ingest, to write a snapshot, to restore it, and the sizes.
//
//   node bench/snapshot.mjs [--count 300000] [--runs 5]
import { parseArgs } from "node:util";
import { LogEndpoints } from "log-endpoints";
import { generate, ndjson } from "../scripts/generate-logs.mjs";

const { values } = parseArgs({ options: { count: { type: "string", default: "300000" }, runs: { type: "string", default: "5" } } });
const count = Number(values.count);
const runs = Number(values.runs);
const END_MS = Date.parse("2026-11-20T12:00:00Z");
const encoder = new TextEncoder();
const batches = ["edge_logs", "function_edge_logs"].map((stream) => [stream, encoder.encode(ndjson(generate({ stream, count, endMs: END_MS })))]);
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const time = (f) => {
  const t = performance.now();
  const out = f();
  return [performance.now() - t, out];
};

const ingestMs = [];
const restoreMs = [];
const snapshotMs = [];
let sizes;
for (let run = 0; run < runs; run++) {
  const [ms, svc] = time(() => {
    const s = new LogEndpoints({ apiKeys: ["k"] });
    for (const [stream, bytes] of batches) s.ingest(stream, bytes);
    return s;
  });
  ingestMs.push(ms);
  const [wrote, bytes] = time(() => svc.snapshot());
  snapshotMs.push(wrote);
  const [restored, copy] = time(() => LogEndpoints.fromSnapshot(bytes, { apiKeys: ["k"] }));
  restoreMs.push(restored);
  sizes = { ndjson: batches.reduce((s, [, b]) => s + b.length, 0), store: svc.stats().storeBytes, snapshot: bytes.length };
  svc.free();
  copy.free();
}
const result = {
  entriesPerStream: count,
  ingestMs: median(ingestMs),
  snapshotMs: median(snapshotMs),
  restoreMs: median(restoreMs),
  restoreSpeedup: median(ingestMs) / median(restoreMs),
  ...sizes,
  snapshotPerStore: sizes.snapshot / sizes.store,
};
console.log(JSON.stringify(result, null, 2));
