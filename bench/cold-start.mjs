// Cold start of the edge worker's Durable Object on workerd (Miniflare): fills
// the store to its memory budget (72 MiB by default), then restarts the runtime
// and times the first query (logs.all, and invocation-stats), waking from the
// snapshot the cron trigger wrote, and logs.all replaying every stored batch
// (no snapshot). Writes its
// figures to bench/cold-start.json, which `node bench/bench.mjs` reads for
// the targets on entries per object and cold start.
//
//   node bench/cold-start.mjs [--runs 3]
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import { LogEndpoints } from "log-endpoints";
import { Miniflare } from "miniflare";
import { generate, ndjson, tenants } from "../scripts/generate-logs.mjs";
import { testWorkerOptions } from "../tests/worker/options.mjs";
import { measuredCommit } from "./results-sections.mjs";

const { values } = parseArgs({ options: { runs: { type: "string", default: "3" } } });
const RUNS = Number(values.runs);
const END_MS = Date.parse("2026-11-20T12:00:00Z");
const KEY = "cold-start-key";
const INGEST = "cold-start-ingest";
// One object at its full budget: SHARDING=off sends every entry to it (a shard runs the same code).
const bindings = { API_KEYS: KEY, INGEST_KEYS: INGEST, FIXED_NOW_MS: String(END_MS), SHARDING: "off" };
const BASE = "http://localhost";
const tenancy = tenants(200);
const project = tenancy.refs[0];
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)];

const dir = mkdtempSync(path.join(tmpdir(), "cold-start-"));
let mf = new Miniflare(testWorkerOptions({ persistDir: dir, bindings }));
const maintain = async (headers = {}) => {
  const ns = await mf.getDurableObjectNamespace("SHARD");
  const res = await ns.get(ns.idFromName("logs")).fetch("https://shard.internal/maintain", { method: "POST", headers: { "X-Now-Ms": String(END_MS), ...headers } });
  return res.json();
};

// Fill: 2 MiB batches of both streams until the store refuses one (503 store_full).
let batches = 0;
let stats;
fill: for (let seed = 1; ; seed++) {
  for (const stream of ["edge_logs", "function_edge_logs"]) {
    const body = ndjson(generate({ stream, count: 3000, endMs: END_MS, spanMs: 3 * 86400e3, seed, tenancy }));
    const res = await mf.dispatchFetch(`${BASE}/api/logs/${stream}`, { method: "POST", body, headers: { "X-API-KEY": INGEST } });
    const answer = await res.text();
    if (res.status === 503 && JSON.parse(answer).error?.code === "store_full") break fill;
    if (res.status !== 200) throw new Error(`ingest: ${res.status} ${answer}`);
    batches++;
  }
}
stats = await maintain(); // writes the snapshot
console.error(`[cold-start] ${batches} batches stored; store ${(stats.storeBytes / 2 ** 20).toFixed(1)} MiB in memory, ${(stats.storageBytes / 2 ** 20).toFixed(1)} MiB of text blocks in SQLite; snapshot ${(stats.snapshot.bytes / 2 ** 20).toFixed(1)} MiB`);

// The first query after a restart: logs.all, and invocation-stats, whose
// first call after a restore also makes the busiest projects' packed rows.
const FIRST_QUERIES = {
  "logs.all": `logs.all?project=${project}&project_tier=PAYG`,
  "functions.invocation-stats": `functions.invocation-stats?project=${project}&interval=7day`,
};

async function firstQueryAfterRestart(query = FIRST_QUERIES["logs.all"]) {
  await mf.dispose();
  mf = new Miniflare(testWorkerOptions({ persistDir: dir, bindings }));
  await mf.ready;
  const sentAtMs = Date.now();
  const t0 = performance.now();
  const res = await mf.dispatchFetch(`${BASE}/api/endpoints/query/${query}`, { headers: { "X-API-KEY": KEY } });
  await res.arrayBuffer();
  const ms = performance.now() - t0;
  if (res.status !== 200) throw new Error(`query: ${res.status}`);
  const { woke, memoryBytes } = await maintain();
  // workerd's clock is the machine's here: from the request to the object's
  // wake (runtime, worker and object start), and after the wake (the query).
  const startMs = woke.atMs - sentAtMs;
  return { ms, woke, memoryBytes, startMs, queryMs: ms - startMs - woke.ms, sentAtMs };
}

const fromSnapshot = [];
for (let i = 0; i < RUNS; i++) fromSnapshot.push(await firstQueryAfterRestart());
const statsFromSnapshot = [];
for (let i = 0; i < RUNS; i++) statsFromSnapshot.push(await firstQueryAfterRestart(FIRST_QUERIES["functions.invocation-stats"]));
// The same store without its snapshot: a corrupted one is refused and every batch replayed.
const replay = [];
for (let i = 0; i < RUNS; i++) {
  await maintain({ "X-Test-Corrupt-Snapshot": "1" });
  // The wake writes a fresh snapshot before it answers (snapshotDueAfterReplay).
  replay.push(await firstQueryAfterRestart());
}
// Miniflare evicts an object after 10 s without a new event, so after a
// replay that long the maintain that follows meets a new instance, which
// restored the snapshot the replaying one wrote.
const evicted = (r) => r.woke.fromSnapshot && r.woke.atMs > r.sentAtMs + 10_000;
const replaying = replay.filter((r) => !evicted(r));
await mf.dispose();
rmSync(dir, { recursive: true, force: true });
const budget = LogEndpoints.settings().find((s) => s.name === "MAX_STORE_BYTES").default; // e.g. "72 MiB"
const result = {
  // The object's budget (the worker's default), and what it held when full.
  budgetBytes: Number(budget.match(/^(\d+) MiB$/)[1]) * 2 ** 20,
  storeBytes: stats.storeBytes,
  // Sealed text blocks in the object's SQLite, not in memory.
  storageBytes: stats.storageBytes,
  edgeEntries: stats.edgeEntries,
  functionRows: stats.functionRows,
  batches,
  snapshotBytes: stats.snapshot.bytes,
  // The alarm's write of the full store's snapshot into SQLite, in parts (the object serves nothing meanwhile).
  snapshotWriteMs: stats.snapshot.ms,
  firstQueryMsFromSnapshot: median(fromSnapshot.map((r) => r.ms)),
  // Each run's, in order: this machine is noisy (±30%).
  firstQueryMsEachRun: fromSnapshot.map((r) => Math.round(r.ms)),
  // The same with invocation-stats 7day as the first query.
  firstStatsQueryMsFromSnapshot: median(statsFromSnapshot.map((r) => r.ms)),
  firstStatsQueryMsEachRun: statsFromSnapshot.map((r) => Math.round(r.ms)),
  // Of the first query: from the request until the object begins to wake
  // (the isolate, the worker, the object), the wake, then the query itself.
  startMsBeforeWaking: median(fromSnapshot.map((r) => r.startMs)),
  wakeMsFromSnapshot: median(fromSnapshot.map((r) => r.woke.ms)),
  queryMsAfterWaking: median(fromSnapshot.map((r) => r.queryMs)),
  // Of the wake: restoring the store from the snapshot's parts, each read from SQLite as the engine takes it.
  restoreMsFromSnapshot: median(fromSnapshot.map((r) => r.woke.restoreMs)),
  // The isolate's wasm memory (it never shrinks): after filling the store and
  // writing its snapshot, and after waking from that snapshot.
  wasmMemoryBytesAfterWritingSnapshot: stats.memoryBytes,
  wasmMemoryBytesAfterWaking: median(fromSnapshot.map((r) => r.memoryBytes)),
  firstQueryMsReplayingEveryBatch: median(replay.map((r) => r.ms)),
  // Of the runs whose replaying instance answered the maintain after it (null: every one was evicted).
  wakeMsReplayingEveryBatch: replaying.length > 0 ? median(replaying.map((r) => r.woke.ms)) : null,
  replayingInstancesEvicted: replay.length - replaying.length,
  wokeFromSnapshot: [...fromSnapshot, ...statsFromSnapshot].every((r) => r.woke.fromSnapshot) && replaying.every((r) => !r.woke.fromSnapshot),
};
console.log(JSON.stringify(result, null, 2));
const commit = measuredCommit();
const measured = { date: new Date().toISOString().slice(0, 10), commit, command: `node bench/cold-start.mjs --runs ${RUNS}`, ...result };
writeFileSync(new URL("cold-start.json", import.meta.url), JSON.stringify(measured, null, 2) + "\n");
