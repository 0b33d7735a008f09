// Where wasm ingest of one stream spends its time, thread by thread: the
// main thread's busy time (inside `ingestBuffer` and the seal worker's pump),
// the wall time from the first read until the last seal is installed, and
// how long the seal worker went on after the main thread's last batch. With
// `--in-place`, blocks are compressed as they fill, on the main thread (the
// CPU the stream costs on one thread, as in an edge worker's object).
//
//   node bench/ingest-threads.mjs [--size 1000000 | --file F.ndjson]
//        [--stream edge_logs] [--batch-mib 32] [--in-place] [--pkg pkg]
//
// --size: the stream's file in the shard data set of N entries per stream
// that `node bench/bench.mjs` generated last; --file: any NDJSON file of it.
import path from "node:path";
import { parseArgs } from "node:util";
import { bufferedBatches } from "./batches.mjs";
import { newestShard } from "./plan.mjs";

const { values } = parseArgs({
  options: {
    size: { type: "string", default: "1000000" },
    file: { type: "string" },
    stream: { type: "string", default: "edge_logs" },
    "batch-mib": { type: "string", default: "32" },
    "in-place": { type: "boolean", default: false },
    pkg: { type: "string", default: "pkg" },
  },
});
const file = values.file ?? path.join(newestShard(values.size), `${values.stream}.ndjson`);
const { LogEndpoints, SealWorker } = await import(path.resolve(values.pkg, "node.js"));
const batchBytes = Number(values["batch-mib"]) << 20;
const svc = new LogEndpoints({ apiKeys: ["bench"], limits: { maxStoreBytes: 4 * 2 ** 30 - 1, maxBatchBytes: batchBytes } });
const sealer = values["in-place"] ? null : new SealWorker(svc);

const started = performance.now();
let mainBusy = 0;
let accepted = 0;
for (const end of bufferedBatches(svc, file, batchBytes)) {
  const busyFrom = performance.now();
  const report = svc.ingestBuffer(values.stream, end);
  sealer?.pump();
  mainBusy += performance.now() - busyFrom;
  if (report.rejectedTotal) throw new Error(JSON.stringify(report.rejected[0]));
  accepted += report.accepted;
}
const mainDone = performance.now();
await sealer?.settled();
const settled = performance.now();
if (sealer?.failed) throw sealer.failed;
await sealer?.close();
console.log(JSON.stringify({
  stream: values.stream,
  entries: accepted,
  wallMs: Math.round(settled - started),
  mainBusyMs: Math.round(mainBusy),
  sealTailMs: Math.round(settled - mainDone),
  storeBytes: svc.stats().storeBytes,
}));
