// Scale check: one batch of N entries per stream (default 1,000,000) ingested
// into the wasm module in Node, then each endpoint answered once uncached and
// once from the cache. Prints times, store size and wasm memory.
//
//   node scripts/scale-check.mjs [--count 1000000]
//
// Not part of the test command (it needs a few GB of RAM and about a minute).
import { LogEndpoints } from "log-endpoints";
import { generate, projectRefs } from "./generate-logs.mjs";

const countArg = process.argv.indexOf("--count");
const COUNT = countArg > 0 ? Number(process.argv[countArg + 1]) : 1_000_000;
const NOW = Date.parse("2026-11-20T12:00:00Z");
const [project] = projectRefs();
const mb = (bytes) => `${(bytes / 1048576).toFixed(0)} MiB`;
const ms = (t) => `${t.toFixed(1)} ms`;

/** NDJSON of `count` entries as one UTF-8 buffer (too large for one JS string). */
function batch(stream) {
  const encoder = new TextEncoder();
  const chunks = [];
  let text = "";
  let total = 0;
  for (const entry of generate({ stream, count: COUNT, endMs: NOW })) {
    text += JSON.stringify(entry) + "\n";
    if (text.length > 1 << 24) {
      const bytes = encoder.encode(text);
      chunks.push(bytes);
      total += bytes.length;
      text = "";
    }
  }
  const last = encoder.encode(text);
  chunks.push(last);
  total += last.length;
  const out = new Uint8Array(total);
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.length;
  }
  return out;
}

const svc = new LogEndpoints({ apiKeys: ["k"], now: NOW, limits: { maxBatchBytes: 2 ** 31, maxBatchEntries: COUNT } });
const rows = [];
let inputBytes = 0;
for (const stream of ["edge_logs", "function_edge_logs"]) {
  const bytes = batch(stream);
  inputBytes += bytes.length;
  const t0 = performance.now();
  const report = svc.ingest(stream, bytes);
  const took = performance.now() - t0;
  if (report.accepted !== COUNT) throw new Error(`${stream}: accepted ${report.accepted} of ${COUNT}: ${JSON.stringify(report.rejected.slice(0, 3))}`);
  rows.push([`ingest ${stream}`, ms(took), `${mb(bytes.length)} NDJSON, ${Math.round(COUNT / (took / 1000)).toLocaleString()} entries/s, ${(bytes.length / 1048576 / (took / 1000)).toFixed(0)} MiB/s`]);
}

for (const [name, params] of [
  ["functions.invocation-stats", { project, interval: "7day" }],
  ["functions.invocation-stats", { project, interval: "1day" }],
  ["logs.all", { project, project_tier: "PAYG" }],
  ["usage.api-counts", { project, interval: "daily" }],
  ["usage.api-counts", { project: `${project}\\.supabase\\.co/(rest|auth)`, interval: "daily" }],
]) {
  svc.clearCache();
  let t0 = performance.now();
  const { result } = svc.query(name, params, "k");
  const cold = performance.now() - t0;
  t0 = performance.now();
  svc.queryRaw(name, params, "k");
  const hit = performance.now() - t0;
  rows.push([`${name} ${JSON.stringify(params).slice(0, 60)}`, ms(cold), `${result.length} rows; asked again: ${ms(hit)}${name === "logs.all" ? " (never cached)" : " (cache hit)"}`]);
}

const stats = svc.stats();
rows.push(["store", mb(stats.storeBytes), `${(stats.storeBytes / inputBytes).toFixed(2)} bytes per input byte; ${stats.edgeEntries} edge entries, ${stats.functionRows} function rows`]);
rows.push(["wasm memory (peak)", mb(svc.memoryBytes()), "linear memory of the module after all of the above"]);
rows.push(["process RSS", mb(process.memoryUsage().rss), "includes the wasm memory and the input buffers"]);
console.log(`scale check, ${COUNT.toLocaleString()} entries per stream (Node ${process.version}, wasm)`);
for (const [what, value, detail] of rows) console.log(`${what.padEnd(72)} ${value.padStart(10)}  ${detail}`);
