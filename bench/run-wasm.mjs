// The wasm half of the benchmark, in its own Node process (so its peak memory is
// its own): ingests the NDJSON files in ~32 MiB batches cut at line ends (read
// into the module's own memory, `batchBuffer`), with
// the package's SealWorker on the second core compressing edge entries' text
// blocks (as the CLI does) and reading every other batch of function rows
// (which have no text to compress), runs the plan uncached and cached, times
// the scan floor and a snapshot's restore, prints JSON.
//
//   node bench/run-wasm.mjs --edge E.ndjson --functions F.ndjson --plan plan.json
import { statSync } from "node:fs";
import { LogEndpoints, SealWorker } from "log-endpoints";
import { parseArgs } from "node:util";
import { bufferedBatches } from "./batches.mjs";
import { answerDigest, readPlan, warmUp } from "./plan.mjs";

const { values: files } = parseArgs({ options: { edge: { type: "string" }, functions: { type: "string" }, plan: { type: "string" } } });
const plan = readPlan(files.plan);
const BATCH_BYTES = 32 << 20;

const svc = new LogEndpoints({
  apiKeys: ["bench"],
  now: plan.nowUs / 1000,
  limits: { maxStoreBytes: 4 * 2 ** 30 - 1, maxBatchBytes: 2 * BATCH_BYTES },
});
const sealer = new SealWorker(svc);

/**
 * Feeds the file in batches ending at a newline; returns the ms from the first
 * read until the last block's seal is installed (reads included, as the peers'
 * loads include theirs).
 */
async function ingestFile(stream, path) {
  const t0 = performance.now();
  let entries = 0;
  const counted = (report) => {
    if (report.rejectedTotal) throw new Error(`${stream}: ${JSON.stringify(report.rejected[0])}`);
    entries += report.accepted;
  };
  // The batch the worker is reading (function rows: every other one).
  let reading = null;
  let batch = 0;
  for (const end of bufferedBatches(svc, path, BATCH_BYTES)) {
    if (stream === "function_edge_logs" && batch++ % 2 === 0) {
      reading = sealer.read(stream, svc.batchBuffer(BATCH_BYTES).subarray(0, end));
    } else {
      counted(svc.ingestBuffer(stream, end));
      sealer.pump();
      if (reading) counted(await reading);
      reading = null;
    }
  }
  if (reading) counted(await reading);
  await sealer.settled();
  if (sealer.failed) throw sealer.failed;
  return { ms: performance.now() - t0, bytes: statSync(path).size, entries };
}

const ingest = { edge_logs: await ingestFile("edge_logs", files.edge) };
// The store of the edge entries alone (they are ingested first).
const edgeStoreBytes = svc.stats().storeBytes;
ingest.function_edge_logs = await ingestFile("function_edge_logs", files.functions);
await sealer.close();

const queries = {};
for (const [name, { endpoint, runs }] of Object.entries(plan.queries)) {
  const ms = [];
  const rows = [];
  const answers = [];
  await warmUp(plan, () => {
    svc.clearCache();
    svc.queryRaw(endpoint, runs[runs.length - 1], "bench");
  });
  for (const params of runs) {
    svc.clearCache();
    const t0 = performance.now();
    const out = svc.queryRaw(endpoint, params, "bench");
    ms.push(performance.now() - t0);
    if (out.cache === "HIT") throw new Error(`${name}: a timed run was a cache hit`);
    const { result } = JSON.parse(out.body);
    rows.push(result.length);
    answers.push(answerDigest(endpoint, result));
  }
  // Cache hits: the first parameters again, through the same JS call.
  svc.queryRaw(endpoint, runs[0], "bench");
  const hitMs = runs.map(() => {
    const t0 = performance.now();
    const out = svc.queryRaw(endpoint, runs[0], "bench");
    const took = performance.now() - t0;
    if (endpoint !== "logs.all" && out.cache !== "HIT") throw new Error(`${name}: expected a cache hit`);
    return took;
  });
  queries[name] = { ms, rows, answers, hitMs };
}

const floorMs = Array.from({ length: 20 }, () => {
  const t0 = performance.now();
  svc.scanFloor();
  return performance.now() - t0;
});
const stats = svc.stats();
const wasmMemoryBytes = svc.memoryBytes();
// Snapshot: written once, restored a few times (the median is reported). Last,
// because a store near wasm's 4 GB cannot also hold its snapshot: then it is
// reported as not measured.
let snapshot = null;
try {
  const snapshotStarted = performance.now();
  const snapshotBytes = svc.snapshot();
  const snapshotMs = performance.now() - snapshotStarted;
  const restoreMs = [0, 1, 2].map(() => {
    const t0 = performance.now();
    const copy = LogEndpoints.fromSnapshot(snapshotBytes, { apiKeys: ["bench"], now: plan.nowUs / 1000, limits: { maxStoreBytes: 4 * 2 ** 30 - 1 } });
    const took = performance.now() - t0;
    copy.free();
    return took;
  });
  snapshot = { bytes: snapshotBytes.length, writeMs: snapshotMs, restoreMs: [...restoreMs].sort((a, b) => a - b)[1] };
} catch (e) {
  snapshot = { error: String(e.message ?? e).slice(0, 200) };
}
console.log(JSON.stringify({
  ingest, queries, floorMs, snapshot,
  storeBytes: stats.storeBytes, edgeStoreBytes, edgeEntries: stats.edgeEntries, functionRows: stats.functionRows,
  wasmMemoryBytes,
}));
