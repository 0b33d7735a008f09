// One project's busy day on the edge deployment (workerd, Miniflare, the
// default 72 MiB per object): 1M edge entries and 500k function rows of one
// project in one UTC day, posted through the worker in mixed 6 MiB batches,
// so the project-day splits across objects by size. Then every endpoint for
// the project: whether each answer agrees with one in-process store holding
// every entry (p95/p99 within the sketch's bound), the objects it asked, and
// its median time over a few runs.
//
//   node bench/one-project.mjs [--edge 1000000] [--functions 500000] [--runs 3]
//
// Prints a JSON summary (stdout, and bench/one-project.json) and progress
// (stderr), and writes its section of bench/results.md. Exits 1 when an
// answer disagrees.
import { writeFileSync } from "node:fs";
import path from "node:path";
import { parseArgs } from "node:util";
import { Miniflare } from "miniflare";
import { LogEndpoints } from "log-endpoints";
import { generate, ndjson, tenants } from "../scripts/generate-logs.mjs";
import { distributed, testWorkerOptions } from "../tests/worker/options.mjs";
import { answerDifference } from "../tests/worker/same-answer.mjs";
import { ONE_PROJECT, measuredCommit, writeSection } from "./results-sections.mjs";

const { values } = parseArgs({
  options: {
    edge: { type: "string", default: "1000000" },
    functions: { type: "string", default: "500000" },
    runs: { type: "string", default: "3" },
  },
});
const ROOT = path.resolve(path.dirname(new URL(import.meta.url).pathname), "..");
const NOW = Date.parse("2026-11-20T12:00:00Z");
const KEY = "one-project-key";
const INGEST = "one-project-ingest";
const BASE = "http://localhost";
const PER_BATCH = 10_000; // about 6 MiB of edge NDJSON
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)];
const log = (message) => console.error(`[one-project] ${message}`);

// One project; every entry between 00:00 and 11:59 of one UTC day.
const tenancy = tenants(1);
const [project] = tenancy.refs;
const span = { endMs: NOW - 60e3, spanMs: 11.9 * 3600e3, tenancy };
const whole = new LogEndpoints({ apiKeys: [KEY], now: NOW });
const mf = new Miniflare(testWorkerOptions({ persistDir: false, bindings: { API_KEYS: KEY, INGEST_KEYS: INGEST, FIXED_NOW_MS: String(NOW) } }));
await mf.ready;

const started = performance.now();
let bytes = 0;
for (const [stream, count, seed] of [["edge_logs", Number(values.edge), 31], ["function_edge_logs", Number(values.functions), 32]]) {
  const entries = generate({ stream, count, seed, ...span });
  for (let sent = 0; sent < count; sent += PER_BATCH) {
    const batch = [];
    for (let i = 0; i < PER_BATCH && sent + i < count; i++) batch.push(entries.next().value);
    const body = ndjson(batch);
    bytes += body.length;
    whole.ingest(stream, body);
    const res = await mf.dispatchFetch(`${BASE}/api/logs/${stream}`, { method: "POST", body, headers: { "X-API-KEY": INGEST } });
    if (res.status !== 200) throw new Error(`ingest: ${res.status} ${await res.text()}`);
    await res.arrayBuffer();
  }
  log(`${count} ${stream} posted`);
}
await distributed(mf, { timeoutMs: 600_000 });
const ingestSeconds = (performance.now() - started) / 1000;
log(`queryable after ${ingestSeconds.toFixed(1)} s (${(bytes / 2 ** 20).toFixed(0)} MiB)`);

const fn = tenancy.functions[0][0];
const calls = [];
for (const interval of ["5min", "15min", "1hr", "1day", "7day"]) calls.push(["functions.invocation-stats", { project, interval }]);
calls.push(["functions.invocation-stats", { project, interval: "1day", function_id: fn }]);
for (const interval of ["15min", "1hr", "3hr", "1day"]) calls.push(["functions.combined-stats", { project, interval, function_id: fn }]);
for (const project_tier of ["FREE", "PRO"]) calls.push(["logs.all", { project, project_tier }]);
calls.push(["usage.api-requests-count", { project }]);
for (const interval of ["minutely", "hourly", "daily"]) calls.push(["usage.api-counts", { project, interval }]);
calls.push(["usage.api-counts", { project: "rest/v1/", interval: "hourly" }]);

const answers = [];
const objects = new Set();
for (const [name, params] of calls) {
  const expected = whole.query(name, params, KEY);
  const times = [];
  let difference;
  let shards;
  for (let run = 0; run < Number(values.runs); run++) {
    const t0 = performance.now();
    const res = await mf.dispatchFetch(`${BASE}/api/endpoints/query/${name}?${new URLSearchParams(params)}`, { headers: { "X-API-KEY": KEY } });
    const body = await res.json();
    times.push(performance.now() - t0);
    difference = res.status === 200 ? answerDifference(body, expected) : `status ${res.status}`;
    shards = Number(res.headers.get("X-Shards"));
    for (const object of res.headers.get("X-Objects")?.split(",") ?? []) if (/^\d{4}-\d\d-\d\d\//.test(object.trim())) objects.add(object.trim());
  }
  answers.push({ endpoint: name, params, agrees: difference === null, difference, shards, medianMs: Number(median(times).toFixed(1)) });
}
const stats = whole.stats();
await mf.dispose();
whole.free();
const command = `node bench/one-project.mjs --edge ${values.edge} --functions ${values.functions} --runs ${values.runs}`;
const summary = {
  command,
  at: measuredCommit(),
  project,
  edgeEntries: stats.edgeEntries,
  functionRows: stats.functionRows,
  ndjsonMiB: Number((bytes / 2 ** 20).toFixed(1)),
  secondsUntilQueryable: Number(ingestSeconds.toFixed(1)),
  objectsAsked: [...objects].sort(),
  allAgree: answers.every((a) => a.agrees),
  answers,
};
console.log(JSON.stringify(summary, null, 2));
writeFileSync(path.join(ROOT, "bench/one-project.json"), JSON.stringify(summary, null, 2) + "\n");

// Its section of bench/results.md.
const count = (n) => n.toLocaleString("en-US");
writeSection(path.join(ROOT, "bench/results.md"), [
  ONE_PROJECT,
  "",
  `Command: \`${command}\` on ${new Date().toISOString().slice(0, 10)} at ${summary.at} — ${count(Number(values.edge))} edge entries and ${count(Number(values.functions))} function entries of one project (\`${project}\`) in one UTC day, ${summary.ndjsonMiB} MiB of NDJSON posted through the main job (workerd via Miniflare, the default budget per object) in ${count(PER_BATCH)}-entry batches; all of it queryable ${summary.secondsUntilQueryable} s after the first post. Each endpoint is asked through the worker and its answer compared with one in-process store holding every entry (p95/p99 within the sketch's 1% bound, docs/contract.md). **${summary.allAgree ? "Every answer agrees" : "Some answers disagree"}**; the project-day's objects asked: ${summary.objectsAsked.length} (${summary.objectsAsked.map((o) => `\`${o}\``).join(", ")}).`,
  "",
  `| endpoint | parameters | agrees | shards asked (\`X-Shards\`) | median ms of ${values.runs} |`,
  "|---|---|:-:|---:|---:|",
  ...answers.map((a) => `| ${a.endpoint} | ${Object.entries(a.params).map(([k, v]) => `${k}=${v}`).join(" ")} | ${a.agrees ? "yes" : `**no**: ${String(a.difference).replace(/\|/g, "\\|").replace(/\s+/g, " ")}`} | ${a.shards} | ${a.medianMs} |`),
]);
if (!summary.allAgree) process.exitCode = 1;
