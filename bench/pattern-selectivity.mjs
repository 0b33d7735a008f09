// Whether a usage.api-counts pattern costs what its project holds, whatever
// the refs look like: the same 2,000 Zipf-sized projects named by random
// 20-letter refs and by alike ones (`tenant-1` … `tenant-2000`), and each
// project's host pattern timed against a pattern that matches every URL.
//
//   node bench/pattern-selectivity.mjs [--count 300000] [--runs 15]
//
// Not part of the test command (timings belong to the benchmark).
import { parseArgs } from "node:util";
import { LogEndpoints } from "log-endpoints";
import { generate, ndjson, tenants } from "../scripts/generate-logs.mjs";

const { values: args } = parseArgs({ options: { count: { type: "string", default: "300000" }, runs: { type: "string", default: "15" } } });
const NOW = Date.parse("2026-11-20T12:00:00Z");
const runs = Number(args.runs);

function median(call) {
  const times = [];
  for (let r = 0; r < runs; r++) {
    const t = performance.now();
    call();
    times.push(performance.now() - t);
  }
  return times.sort((a, b) => a - b)[times.length >> 1];
}

console.log(`| refs | project | its entries | host pattern (ms) | pattern \`.\` (ms) | ratio |`);
console.log(`|---|---|---:|---:|---:|---:|`);
for (const refs of ["random", "alike"]) {
  const tenancy = tenants(2000, 11, { refs });
  const svc = new LogEndpoints({ apiKeys: ["k"], now: NOW });
  const entries = [...generate({ stream: "edge_logs", count: Number(args.count), endMs: NOW, tenancy })];
  for (let i = 0; i < entries.length; i += 50_000) svc.ingest("edge_logs", ndjson(entries.slice(i, i + 50_000)));
  const held = new Map();
  for (const e of entries) held.set(e.project, (held.get(e.project) ?? 0) + 1);
  const run = (project) => () => {
    svc.clearCache();
    svc.query("usage.api-counts", { project, interval: "daily" }, "k");
  };
  const everything = median(run("."));
  for (const [label, k] of [["largest", 0], ["median", 1000], ["tail", 1990]]) {
    const ref = tenancy.refs[k];
    const own = median(run(`^https://${ref.replace(/[.-]/g, "\\$&")}\\.supabase\\.co/`));
    console.log(`| ${refs} | ${label} \`${ref}\` | ${held.get(ref) ?? 0} | ${own.toFixed(2)} | ${everything.toFixed(1)} | ${(everything / own).toFixed(0)}× |`);
  }
  svc.free();
}
