// The benchmark: ingest, memory, snapshot restore and uncached/cached query
// latency of our wasm build (in Node) and native build, against the peers at
// their best in the same run: DuckDB (@duckdb/node-api) with flat, typed tables
// sorted by time, and ClickHouse through chDB with MergeTree tables ordered for
// the queries. DuckDB over read_json's nested tables (the reference SQL's port)
// runs too, as the correctness cross-check: every run's answer must agree by
// value (plan.mjs's answerDigest) across wasm, flat DuckDB, chDB and the nested
// port, and by row count with the native build. Writes bench/results.md (the
// sections other scripts measure, bench/results-sections.mjs, are kept) and a
// chart (bench/latency.svg, .png).
//
// Data: "shard" (2,000 projects with Zipf-like shares; each endpoint asked for the
// largest project, a median one and a tail one) at every size, "alike" (the
// same with refs tenant-1 … tenant-2000) at the reference size and at 5M, and
// "five" (five projects, as the earlier benchmark) at the reference size.
//
//   node bench/bench.mjs                       # full run: 100k, 1M and 5M entries per stream
//   node bench/bench.mjs --sizes 100000,1000000 --runs 20
//   node bench/bench.mjs --smoke               # 100k, one run: checks the bench still works (CI)
//
// Each engine runs in its own process so peak memory is its own. Generated data
// is cached in target/bench/data/ (deterministic: same generator, same bytes).
import { execFileSync, spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, openSync, readFileSync, renameSync, writeFileSync, writeSync, closeSync } from "node:fs";
import path from "node:path";
import { parseArgs } from "node:util";
import { generate } from "../scripts/generate-logs.mjs";
import { DATASETS, END_MS, WARM_UP_MS, plan } from "./plan.mjs";
import { keptSections, measuredCommit } from "./results-sections.mjs";

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), "..");
const args = process.argv.slice(2);
const { values: options } = parseArgs({
  options: {
    smoke: { type: "boolean", default: false },
    sizes: { type: "string", default: "100000,1000000,5000000" },
    runs: { type: "string", default: "20" },
    out: { type: "string" },
  },
});
const smoke = options.smoke;
const sizes = (smoke ? "100000" : options.sizes).split(",").map(Number);
const runs = Number(smoke ? 1 : options.runs);
const out = path.resolve(root, options.out ?? (smoke ? "target/bench/smoke/results.md" : "bench/results.md"));
const log = (...m) => console.error("[bench]", ...m);
/** The size the targets are checked at, and the only one the five-project data runs at. */
const REFERENCE_N = sizes.includes(1_000_000) ? 1_000_000 : sizes[sizes.length - 1];

// ---------------------------------------------------------------- data
const generatorHash = createHash("sha1").update(readFileSync(path.join(root, "scripts/generate-logs.mjs"))).digest("hex").slice(0, 8);

function dataFile(stream, count, dataset) {
  const dir = path.join(root, "target/bench/data", `${generatorHash}-${dataset}-${count}`);
  const file = path.join(dir, `${stream}.ndjson`);
  if (existsSync(file)) return file;
  mkdirSync(dir, { recursive: true });
  log(`generating ${count.toLocaleString()} ${stream} entries (once; cached in ${path.relative(root, dir)})`);
  const fd = openSync(`${file}.part`, "w");
  let text = "";
  let n = 0;
  const t0 = performance.now();
  for (const entry of generate({ stream, count, endMs: END_MS, ...DATASETS[dataset]().generate })) {
    text += JSON.stringify(entry) + "\n";
    if (text.length > 1 << 22) {
      writeSync(fd, text);
      text = "";
    }
    if (++n % 500_000 === 0) log(`  ${n.toLocaleString()} / ${count.toLocaleString()} (${Math.round(n / ((performance.now() - t0) / 1000)).toLocaleString()}/s)`);
  }
  writeSync(fd, text);
  closeSync(fd);
  renameSync(`${file}.part`, file);
  return file;
}

// ---------------------------------------------------------------- engines
function child(label, command, commandArgs) {
  log(`${label}…`);
  const t0 = performance.now();
  const run = spawnSync(command, commandArgs, { cwd: root, encoding: "utf8", maxBuffer: 1 << 28, stdio: ["ignore", "pipe", "inherit"] });
  if (run.status !== 0) throw new Error(`${label} failed (exit ${run.status})`);
  log(`${label} done in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  return JSON.parse(run.stdout.trim().split("\n").pop());
}

// ---------------------------------------------------------------- statistics
const sorted = (xs) => [...xs].sort((a, b) => a - b);
const median = (xs) => sorted(xs)[Math.floor((xs.length - 1) / 2)];
const p95 = (xs) => sorted(xs)[Math.max(Math.ceil(0.95 * xs.length), 1) - 1];
const fmtMs = (ms) => (ms >= 100 ? ms.toFixed(0) : ms >= 10 ? ms.toFixed(1) : ms >= 1 ? ms.toFixed(2) : ms >= 0.01 ? ms.toFixed(3) : ms.toFixed(4));
const fmtX = (x) => (x >= 10 ? x.toFixed(0) : x.toFixed(1)) + "×";
const mib = (b) => b / 1048576;
const yes = (ok) => (ok ? "✅" : "❌");

// ---------------------------------------------------------------- run
const ENGINES = [
  ["wasm", "ours, wasm"],
  ["native", "ours, native"],
  ["duck", "DuckDB, flat tables"],
  ["chdb", "ClickHouse (chDB), MergeTree"],
  ["nested", "DuckDB, nested tables (cross-check)"],
];
const results = [];
mkdirSync(path.dirname(out), { recursive: true });
mkdirSync(path.join(root, "target/bench"), { recursive: true });
log("building the native bench (cargo bench --no-run)");
execFileSync("cargo", ["bench", "--quiet", "--bench", "endpoints", "--no-run"], { cwd: root, stdio: ["ignore", "ignore", "inherit"] });
// At the reference size also the alike refs (not in the smoke run) and the
// five projects; at 5M the alike refs too (issue 23 asks both sizes of them).
const LARGEST_N = 5_000_000;
const atReference = smoke ? ["five"] : ["alike", "five"];
const alsoAt = (n) => (n === REFERENCE_N ? atReference : n === LARGEST_N && !smoke ? ["alike"] : []);
const cases = sizes.flatMap((n) => [["shard", n], ...alsoAt(n).map((d) => [d, n])]);
for (const [dataset, n] of cases) {
  const planFile = path.join(root, `target/bench/plan-${dataset}.json`);
  writeFileSync(planFile, JSON.stringify(plan(runs, dataset)));
  const edge = dataFile("edge_logs", n, dataset);
  const functions = dataFile("function_edge_logs", n, dataset);
  const files = ["--edge", edge, "--functions", functions, "--plan", planFile];
  const label = (engine) => `${engine}, ${dataset} N=${n.toLocaleString()}`;
  const r = { dataset, n };
  r.wasm = child(label(`wasm (Node ${process.version})`), process.execPath, ["--max-old-space-size=4096", "bench/run-wasm.mjs", ...files]);
  r.native = child(label("native"), "cargo", ["bench", "--quiet", "--bench", "endpoints", "--", ...files]);
  r.duck = child(label("DuckDB, flat"), process.execPath, ["bench/run-duckdb.mjs", "--layout", "flat", ...files]);
  r.chdb = child(label("chDB"), process.execPath, ["bench/run-chdb.mjs", ...files]);
  // The nested port is slow (seconds per api-counts run at 1M): a few runs suffice to cross-check.
  r.nested = child(label("DuckDB, nested (cross-check)"), process.execPath, ["bench/run-duckdb.mjs", "--layout", "nested", "--budget", "5000", ...files]);
  // Same answers: every run's rows must agree across the engines, by value
  // (answerDigest), and by count with the native build of the same code (a
  // peer may have stopped early: time budget).
  const mismatches = [];
  for (const [name, q] of Object.entries(r.wasm.queries)) {
    q.rows.forEach((rows, i) => {
      for (const [engine] of ENGINES.slice(1)) {
        const theirs = r[engine].queries[name];
        if (theirs.rows[i] !== undefined && theirs.rows[i] !== rows) mismatches.push(`${dataset} ${name} run ${i}: wasm ${rows} rows, ${engine} ${theirs.rows[i]}`);
        else if (theirs.answers?.[i] !== undefined && theirs.answers[i] !== q.answers[i]) mismatches.push(`${dataset} ${name} run ${i}: ${rows} rows each, other values (wasm ${q.answers[i]}, ${engine} ${theirs.answers[i]})`);
      }
    });
  }
  if (mismatches.length) throw new Error(`engines disagree:\n${mismatches.join("\n")}`);
  results.push(r);
}

// ---------------------------------------------------------------- report
const lines = [];
const push = (...l) => lines.push(...l);
const cpu = readFileSync("/proc/cpuinfo", "utf8").match(/model name\s*:\s*(.*)/)?.[1] ?? "unknown CPU";
const first = results[0];
const at = (dataset, n) => results.find((r) => r.dataset === dataset && r.n === n);
const med = (r, engine, name) => median(r[engine].queries[name].ms);
/** The better of the two peers at their best, for one query. */
const bestPeer = (r, name) => Math.min(med(r, "duck", name), med(r, "chdb", name));
push(`# Benchmark results`, "",
  `\`node bench/bench.mjs${args.length ? " " + args.join(" ") : ""}\` on ${new Date().toISOString().slice(0, 10)} at ${measuredCommit()}: ${cpu}, ${readFileSync("/proc/cpuinfo", "utf8").match(/^processor/gm).length} cores; Node ${process.version}; ${first.duck.version} with ${first.duck.threads} threads; ${first.chdb.version} with ${first.chdb.threads} threads. Ours answers on one thread; its ingest compresses text blocks, and reads every other batch of function rows, on a second (SealWorker).`, "",
  `Uncached latency is the median (p95) of ${runs} runs with varied parameters and our result cache cleared before each (the peers keep no result cache; any cache of theirs is left on, which can only help them), after a warm-up: the query's last parameters, untimed, again until ${WARM_UP_MS} ms have been spent on them, alike for every engine. The figures are those of an object that is already serving: its first calls after a start run in V8's baseline tier, 1.7–2.7× slower on the short queries, and are not in these tables; every run's answer agreed across the four engines' runs, by value (the columns each endpoint returns but logs.all's metadata; fractions to 9 significant digits), and with the native build's row count. A peer stops a query after 5 runs once it has spent its time budget on it ([n runs]). ` +
  `**best peer ÷ wasm** is the better of flat DuckDB and chDB divided by ours (above 1 = we are faster). **rows** is the median row count of a query's runs: 0 means most of its runs found nothing in the window, which ours answers from its index while a peer still pays its per-query floor, so those leads say little.`, "",
  "Data: **shard** is a shard of a hosted platform, 2,000 projects with Zipf-like shares (the k-th busiest gets a share ∝ 1/k^1.1: the largest about 17% of the traffic, the median project about 0.01%, the tail about 0.004%), each with its own host and functions (`scripts/generate-logs.mjs --projects 2000`); every endpoint is asked for the **largest** project, for projects around the **median** and for the **tail** (the 20 smallest). **alike** is the same with refs \`tenant-1\` … \`tenant-2000\`, which share most of their characters. **five** is the earlier benchmark's data: five projects, the busiest about half of the traffic.", "");

push("## Ingest (NDJSON bytes → queryable store)", "",
  "Each peer's figure is its whole load into the tables the queries read (flat DuckDB: read_json, unnest, sort; chDB: three MergeTree inserts from the files, query-ready once inserted; its OPTIMIZE … FINAL merges for the queries are not timed). A peer loads both files in one go, so its per-stream figures are its one rate split by input bytes: a per-stream ratio compares our rate on that stream with the peer's overall one. The target row compares both streams together. Ours (wasm) is the wall time from a file's first read until its last text block's seal is installed, reads included, with the package's SealWorker compressing text blocks on the second core and reading every other batch of function rows there (`read`); the native build ingests on one thread, compressing as it goes, timed inside its ingest calls only, so the wasm ÷ native column compares two set-ups, not the two builds.", "",
  "| data | N per stream | stream | wasm MB/s | native MB/s | DuckDB flat MB/s | chDB MB/s | wasm ÷ best peer throughput | wasm ÷ native time |",
  "|---|---:|---|---:|---:|---:|---:|---:|---:|");
for (const r of results) {
  for (const stream of ["edge_logs", "function_edge_logs"]) {
    const rate = (engine) => mib(r[engine].ingest[stream].bytes) / (r[engine].ingest[stream].ms / 1000);
    push(`| ${r.dataset} | ${r.n.toLocaleString()} | ${stream} | ${rate("wasm").toFixed(0)} | ${rate("native").toFixed(0)} | ${rate("duck").toFixed(0)} | ${rate("chdb").toFixed(0)} | ${(rate("wasm") / Math.max(rate("duck"), rate("chdb"))).toFixed(2)} | ${(r.wasm.ingest[stream].ms / r.native.ingest[stream].ms).toFixed(2)} |`);
  }
}
push("", "MB here is MiB (2^20 bytes) of NDJSON input.", "");

push("## Memory and snapshots", "",
  "| data | N per stream | NDJSON input | store | store ÷ input | peak wasm memory | DuckDB flat (duckdb_memory()) | chDB parts on disk | snapshot | snapshot ÷ store | write | restore | ingest ÷ restore |",
  "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
for (const r of results) {
  const input = r.wasm.ingest.edge_logs.bytes + r.wasm.ingest.function_edge_logs.bytes;
  const ingestMs = r.wasm.ingest.edge_logs.ms + r.wasm.ingest.function_edge_logs.ms;
  const snap = r.wasm.snapshot;
  const snapCells = snap.error
    ? `not measured (${snap.error}) | | | | |`
    : `${mib(snap.bytes).toFixed(0)} MiB | ${(snap.bytes / r.wasm.storeBytes).toFixed(2)} | ${fmtMs(snap.writeMs)} ms | ${fmtMs(snap.restoreMs)} ms | ${fmtX(ingestMs / snap.restoreMs)} |`;
  push(`| ${r.dataset} | ${r.n.toLocaleString()} | ${mib(input).toFixed(0)} MiB | ${mib(r.wasm.storeBytes).toFixed(0)} MiB | ${(r.wasm.storeBytes / input).toFixed(2)} | ${mib(r.wasm.wasmMemoryBytes).toFixed(0)} MiB | ${mib(r.duck.memoryBytes).toFixed(0)} MiB | ${mib(r.chdb.memoryBytes).toFixed(0)} MiB | ${snapCells}`);
}
push("");

for (const r of results) {
  const names = Object.keys(r.wasm.queries);
  push(`## Queries, ${r.dataset} data, N = ${r.n.toLocaleString()} per stream (ms)`, "",
    "| endpoint · project | wasm | native | DuckDB flat | chDB | best peer ÷ wasm | wasm ÷ native | rows | DuckDB nested (cross-check) |",
    "|---|---:|---:|---:|---:|---:|---:|---:|---:|");
  for (const name of names) {
    const cell = (engine) => {
      const ms = r[engine].queries[name].ms;
      const stopped = ms.length < r.wasm.queries[name].ms.length ? ` [${ms.length} runs]` : "";
      return `${fmtMs(median(ms))} (${fmtMs(p95(ms))})${stopped}`;
    };
    push(`| ${name} | ${cell("wasm")} | ${cell("native")} | ${cell("duck")} | ${cell("chdb")} | ${fmtX(bestPeer(r, name) / med(r, "wasm", name))} | ${(med(r, "wasm", name) / med(r, "native", name)).toFixed(2)} | ${median(r.wasm.queries[name].rows)} | ${cell("nested")} |`);
  }
  push(`| scan floor (sum of ${r.n.toLocaleString()} timestamps) | ${fmtMs(median(r.wasm.floorMs))} | ${fmtMs(median(r.native.floorMs))} | | | | ${(median(r.wasm.floorMs) / median(r.native.floorMs)).toFixed(2)} | | |`);
  const hits = names.filter((q) => !q.startsWith("logs.all"));
  const worst = Math.max(...hits.map((q) => median(r.wasm.queries[q].hitMs)));
  push("", `Cache hit, wasm through the JS API: slowest cached endpoint ${(worst * 1000).toFixed(0)} µs (median).`, "");
}

// Targets of issue 13, checked from the numbers above.
const targets = [];
const ref = at("shard", REFERENCE_N);
const big = at("shard", LARGEST_N);
const small = at("shard", 100_000);
for (const name of Object.keys(ref.wasm.queries)) {
  const lead = bestPeer(ref, name) / med(ref, "wasm", name);
  targets.push([`${name}: ≥ 5× faster than the better of flat DuckDB and chDB at ${REFERENCE_N.toLocaleString()}`, fmtX(lead), lead >= 5]);
  if (big) {
    const leadBig = bestPeer(big, name) / med(big, "wasm", name);
    targets.push([`${name}: ≥ 5× faster than the better of flat DuckDB and chDB at 5,000,000`, fmtX(leadBig), leadBig >= 5]);
    targets.push([`${name}: the lead at 5M does not shrink (5M lead ÷ ${REFERENCE_N.toLocaleString()} lead ≥ 1; noise ±30%)`, (leadBig / lead).toFixed(2), leadBig / lead >= 1]);
  }
  if (/^(invocation-stats 7day|api-counts daily)/.test(name)) {
    const wn = med(ref, "wasm", name) / med(ref, "native", name);
    targets.push([`${name}: wasm ÷ native ≤ 1.5`, wn.toFixed(2), wn <= 1.5]);
  }
}
for (const n of new Set([REFERENCE_N, LARGEST_N])) {
  const alike = at("alike", n);
  for (const name of alike ? Object.keys(alike.wasm.queries) : []) {
    const lead = bestPeer(alike, name) / med(alike, "wasm", name);
    targets.push([`${name}, refs alike (tenant-N): ≥ 5× faster than the better peer at ${n.toLocaleString()}`, fmtX(lead), lead >= 5]);
  }
}
if (small && big) {
  const name = "logs.all PAYG · tail";
  const growth = med(big, "wasm", name) / med(small, "wasm", name);
  // The tail project grows with the data, so it returns more rows at 5M:
  // the time per row returned is told beside the target, which stays as set.
  const rows = (r) => median(r.wasm.queries[name].rows);
  const perRow = (r) => med(r, "wasm", name) / Math.max(1, rows(r));
  const context = `${growth.toFixed(2)} (${rows(small)} rows at 100k, ${rows(big)} at 5M; per row returned ${(perRow(big) / perRow(small)).toFixed(2)})`;
  targets.push([`${name}: flat from 100k to 5M (5M ÷ 100k ≤ 2)`, context, growth <= 2]);
}
for (const r of [ref]) {
  const ingestMs = r.wasm.ingest.edge_logs.ms + r.wasm.ingest.function_edge_logs.ms;
  const speedup = ingestMs / r.wasm.snapshot.restoreMs;
  targets.push([`snapshot restore ≥ 20× faster than ingest (wasm, ${r.n.toLocaleString()})`, fmtX(speedup), speedup >= 20]);
  targets.push(["snapshot size ≤ store size", (r.wasm.snapshot.bytes / r.wasm.storeBytes).toFixed(2), r.wasm.snapshot.bytes <= r.wasm.storeBytes]);
  const input = r.wasm.ingest.edge_logs.bytes + r.wasm.ingest.function_edge_logs.bytes;
  targets.push([`store ÷ NDJSON, both streams ≤ 0.15 (chDB's level; ${r.n.toLocaleString()})`, (r.wasm.storeBytes / input).toFixed(2), r.wasm.storeBytes / input <= 0.15]);
  const edgeShare = r.wasm.edgeStoreBytes / r.wasm.ingest.edge_logs.bytes;
  targets.push([`store ÷ NDJSON, edge entries alone ≤ 0.26 (${r.n.toLocaleString()})`, edgeShare.toFixed(2), edgeShare <= 0.26]);
  const rate = (engine) => (r[engine].ingest.edge_logs.bytes + r[engine].ingest.function_edge_logs.bytes) / (r[engine].ingest.edge_logs.ms + r[engine].ingest.function_edge_logs.ms);
  const ingestLead = rate("wasm") / Math.max(rate("duck"), rate("chdb"));
  targets.push([`ingest at least as fast as the better peer's load into query-ready tables (${r.n.toLocaleString()})`, ingestLead.toFixed(2), ingestLead >= 1]);
}
// One object of the edge worker at its default budget: `node bench/cold-start.mjs`
// measures it on workerd and writes cold-start.json (not rerun here: it fills an object).
const coldStartFile = path.join(root, "bench/cold-start.json");
const coldStart = existsSync(coldStartFile) ? JSON.parse(readFileSync(coldStartFile, "utf8")) : undefined;
// Issue 23's starting point: about 200,000 edge entries in a 64 MiB object
// (the default budget then; 72 MiB since a8f8f9d, so the entries per MiB are
// stated too: a larger budget alone does not make the store denser).
const ENTRIES_BEFORE = 200_000;
const BUDGET_MIB_BEFORE = 64;
const coldStartNote = coldStart ? ` (${coldStart.command}, ${coldStart.date}, ${coldStart.commit})` : " (not measured: run node bench/cold-start.mjs)";
// A cold-start.json of an earlier cold-start.mjs has no budget or second first query: "–".
const budgetMiB = coldStart?.budgetBytes / 2 ** 20 || undefined;
const entriesRatio = coldStart ? coldStart.edgeEntries / ENTRIES_BEFORE : 0;
targets.push([`edge entries per object at the worker's default budget (${budgetMiB ?? "?"} MiB) ≥ 4× ${ENTRIES_BEFORE.toLocaleString()}${coldStartNote}`, coldStart ? `${coldStart.edgeEntries.toLocaleString()} (${entriesRatio.toFixed(2)}×)` : "–", entriesRatio >= 4]);
const perMiBRatio = budgetMiB ? coldStart.edgeEntries / budgetMiB / (ENTRIES_BEFORE / BUDGET_MIB_BEFORE) : 0;
targets.push([`edge entries per MiB of budget ≥ 4× the start's (${ENTRIES_BEFORE.toLocaleString()} in ${BUDGET_MIB_BEFORE} MiB)`, budgetMiB ? `${Math.round(coldStart.edgeEntries / budgetMiB).toLocaleString()} (${perMiBRatio.toFixed(2)}×)` : "–", perMiBRatio >= 4]);
// The slower first query of the two, and how many of its runs passed 200 ms (noise ±30%).
const measuredFirst = coldStart ? [[coldStart.firstQueryMsFromSnapshot, coldStart.firstQueryMsEachRun], [coldStart.firstStatsQueryMsFromSnapshot, coldStart.firstStatsQueryMsEachRun]].filter(([ms]) => typeof ms === "number") : [];
const [firstQueryMs, firstRuns] = measuredFirst.length === 2 ? measuredFirst.sort((a, b) => b[0] - a[0])[0] : [];
targets.push([`cold start of a full object ≤ 200 ms (the slower of logs.all and invocation-stats as the first query after a restart, from its snapshot; median)${coldStartNote}`, firstQueryMs === undefined ? "–" : `${firstQueryMs.toFixed(0)} ms (${firstRuns.filter((ms) => ms > 200).length} of ${firstRuns.length} runs over 200)`, firstQueryMs !== undefined && firstQueryMs <= 200]);
push("## Targets", "", `Shard data at N = ${REFERENCE_N.toLocaleString()} unless the row says otherwise.`, "", "| target | measured | met |", "|---|---:|:-:|");
for (const [what, value, ok] of targets) push(`| ${what} | ${value} | ${yes(ok)} |`);
push("", "## Load SQL of the peers", "", "DuckDB, flat tables:", "", "```sql", ...first.duck.load.map((q) => q.replace(/\s+/g, " ") + ";"), "```", "", "ClickHouse (chDB):", "", "```sql", ...first.chdb.load.map((q) => q.replace(/\s+/g, " ") + ";"), "```", "", "and, after the load is timed:", "", "```sql", ...(first.chdb.merge ?? []).map((q) => q + ";"), "```", "");
push("![latency against N](latency.png)", "");

// The sections other scripts measure (bench/results-sections.mjs) are kept as they were.
writeFileSync(out, [lines.join("\n").trimEnd(), ...keptSections(out)].join("\n\n") + "\n");
writeFileSync(path.join(path.dirname(out), "results.json"), JSON.stringify({ runs, sizes, results }));
writeChart(path.join(path.dirname(out), "latency.svg"));
console.log(lines.join("\n"));

// ---------------------------------------------------------------- chart
function writeChart(file) {
  const W = 300, H = 230, M = { l: 52, r: 10, t: 26, b: 36 };
  const COLUMNS = 5; // one column per endpoint, one row per class of project
  const engines = [["wasm", "#d9480f", "ours, wasm"], ["native", "#1971c2", "ours, native"], ["duck", "#495057", "DuckDB, flat"], ["chdb", "#f08c00", "ClickHouse (chDB)"]];
  const shard = results.filter((r) => r.dataset === "shard");
  const queryNames = Object.keys(shard[0].wasm.queries);
  const xs = shard.map((r) => r.n);
  const panels = queryNames.map((name, i) => {
    const series = engines.map(([engine, color]) => [color, shard.map((r) => median(r[engine].queries[name].ms))]);
    series.push(["#2b8a3e", shard.map((r) => median(r.wasm.floorMs))]);
    const all = series.flatMap(([, ys]) => ys).filter((y) => y > 0);
    const [y0, y1] = [Math.log10(Math.min(...all)) - 0.2, Math.log10(Math.max(...all)) + 0.2];
    const [x0, x1] = [Math.log10(Math.min(...xs)) - 0.1, Math.log10(Math.max(...xs)) + 0.1];
    const px = (x) => M.l + ((Math.log10(x) - x0) / (x1 - x0 || 1)) * (W - M.l - M.r);
    const py = (y) => H - M.b - ((Math.log10(Math.max(y, 1e-4)) - y0) / (y1 - y0 || 1)) * (H - M.t - M.b);
    const ox = (i % COLUMNS) * W, oy = Math.floor(i / COLUMNS) * H;
    const ticks = [];
    for (let e = Math.ceil(y0); e <= Math.floor(y1); e++) ticks.push(`<line x1="${M.l}" x2="${W - M.r}" y1="${py(10 ** e)}" y2="${py(10 ** e)}" stroke="#eee"/><text x="${M.l - 4}" y="${py(10 ** e) + 4}" text-anchor="end">${10 ** e >= 1 ? 10 ** e : (10 ** e).toPrecision(1)}</text>`);
    const xt = xs.map((x) => `<text x="${px(x)}" y="${H - M.b + 14}" text-anchor="middle">${x >= 1e6 ? x / 1e6 + "M" : x / 1e3 + "k"}</text>`);
    const lines = series.map(([color, ys], s) => `<polyline fill="none" stroke="${color}" stroke-width="2" ${s === 4 ? 'stroke-dasharray="4 3"' : ""} points="${ys.map((y, j) => `${px(xs[j])},${py(y)}`).join(" ")}"/>` + ys.map((y, j) => `<circle cx="${px(xs[j])}" cy="${py(y)}" r="3" fill="${color}"/>`).join(""));
    return `<g transform="translate(${ox},${oy})"><rect x="${M.l}" y="${M.t}" width="${W - M.l - M.r}" height="${H - M.t - M.b}" fill="none" stroke="#ccc"/>${ticks.join("")}${xt.join("")}${lines.join("")}<text x="${M.l}" y="16" font-weight="bold">${name} (shard)</text><text x="${(W + M.l) / 2}" y="${H - 6}" text-anchor="middle">entries per stream</text><text transform="translate(12,${(H + M.t - M.b) / 2}) rotate(-90)" text-anchor="middle">ms (median)</text></g>`;
  });
  const rowsOfPanels = Math.ceil(queryNames.length / COLUMNS);
  const legend = [...engines.map(([, c, label]) => [c, label]), ["#2b8a3e", "scan floor (wasm)"]].map(([c, label], i) => `<g transform="translate(${20 + i * 180},${rowsOfPanels * H + 20})"><line x1="0" x2="24" y1="0" y2="0" stroke="${c}" stroke-width="3" ${i === 4 ? 'stroke-dasharray="4 3"' : ""}/><text x="30" y="4">${label}</text></g>`);
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="${COLUMNS * W}" height="${rowsOfPanels * H + 40}" font-family="sans-serif" font-size="11"><rect width="100%" height="100%" fill="white"/>${panels.join("")}${legend.join("")}</svg>`;
  writeFileSync(file, svg);
  const chromium = "/usr/bin/chromium";
  if (existsSync(chromium)) {
    const png = file.replace(/\.svg$/, ".png");
    spawnSync(chromium, ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--no-first-run", `--screenshot=${png}`, `--window-size=${COLUMNS * W},${rowsOfPanels * H + 40}`, `file://${file}`], { stdio: "ignore", timeout: 60_000 });
    if (!existsSync(png)) log(`chart: ${file} (Chromium did not render the PNG)`);
  }
}
