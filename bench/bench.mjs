// The benchmark: ingest, memory and uncached/cached query latency of our wasm
// build (in Node) and native build, against DuckDB (@duckdb/node-api) on the same
// NDJSON, for N = 100k, 1M and 5M entries per stream, with a scan floor. Writes a
// markdown table (bench/results.md) and a chart (bench/latency.svg, .png).
//
//   node bench/bench.mjs                       # full run (about 20 minutes, ~12 GB of disk for data)
//   node bench/bench.mjs --sizes 100000,1000000 --runs 30
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
import { END_MS, plan } from "./plan.mjs";

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

// ---------------------------------------------------------------- data
const generatorHash = createHash("sha1").update(readFileSync(path.join(root, "scripts/generate-logs.mjs"))).digest("hex").slice(0, 8);

function dataFile(stream, count) {
  const dir = path.join(root, "target/bench/data", `${generatorHash}-${count}`);
  const file = path.join(dir, `${stream}.ndjson`);
  if (existsSync(file)) return file;
  mkdirSync(dir, { recursive: true });
  log(`generating ${count.toLocaleString()} ${stream} entries (once; cached in ${path.relative(root, dir)})`);
  const fd = openSync(`${file}.part`, "w");
  let text = "";
  let n = 0;
  const t0 = performance.now();
  for (const entry of generate({ stream, count, endMs: END_MS })) {
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

/** DuckDB-wasm in Node: measured where it runs; here its read_json needs the json extension from the network. */
function probeDuckdbWasm(file) {
  const run = spawnSync(process.execPath, [path.join(root, "bench/probe-duckdb-wasm.mjs"), file], { encoding: "utf8", timeout: 30_000 });
  if (run.status === 0) return { ok: true, detail: run.stdout.trim() };
  const reason = run.error?.code === "ETIMEDOUT" ? "read_json did not finish in 30 s (DuckDB-wasm fetches its json extension from extensions.duckdb.org, which this machine cannot reach)" : (run.stderr.trim().split("\n").pop() || `exit ${run.status}`).slice(0, 200);
  return { ok: false, detail: reason };
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
const results = [];
mkdirSync(path.dirname(out), { recursive: true });
mkdirSync(path.join(root, "target/bench"), { recursive: true });
const planFile = path.join(root, "target/bench/plan.json");
writeFileSync(planFile, JSON.stringify(plan(runs)));
log("building the native bench (cargo bench --no-run)");
execFileSync("cargo", ["bench", "--quiet", "--bench", "endpoints", "--no-run"], { cwd: root, stdio: ["ignore", "ignore", "inherit"] });
for (const n of sizes) {
  const edge = dataFile("edge_logs", n);
  const functions = dataFile("function_edge_logs", n);
  const files = ["--edge", edge, "--functions", functions, "--plan", planFile];
  const wasm = child(`wasm (Node ${process.version}), N=${n.toLocaleString()}`, process.execPath, ["--max-old-space-size=4096", "bench/run-wasm.mjs", ...files]);
  const native = child(`native, N=${n.toLocaleString()}`, "cargo", ["bench", "--quiet", "--bench", "endpoints", "--", ...files]);
  const duck = child(`DuckDB (@duckdb/node-api), N=${n.toLocaleString()}`, process.execPath, ["bench/run-duckdb.mjs", ...files]);
  const duckWasm = n === sizes[0] ? probeDuckdbWasm(edge) : results[0].duckWasm;
  // Same answers: every run's row count must agree across the three engines.
  const mismatches = [];
  for (const [name, q] of Object.entries(wasm.queries)) {
    q.rows.forEach((rows, i) => {
      const duckRows = duck.queries[name].rows[i] ?? rows; // DuckDB may have stopped early (time budget)
      if (rows !== native.queries[name].rows[i] || rows !== duckRows) mismatches.push(`${name} run ${i}: wasm ${rows}, native ${native.queries[name].rows[i]}, DuckDB ${duck.queries[name].rows[i]}`);
    });
  }
  if (mismatches.length) throw new Error(`engines disagree:\n${mismatches.join("\n")}`);
  results.push({ n, wasm, native, duck, duckWasm });
}

// ---------------------------------------------------------------- report
const queryNames = Object.keys(results[0].wasm.queries);
const lines = [];
const push = (...l) => lines.push(...l);
const cpu = readFileSync("/proc/cpuinfo", "utf8").match(/model name\s*:\s*(.*)/)?.[1] ?? "unknown CPU";
push(`# Benchmark results`, "",
  `\`node bench/bench.mjs${args.length ? " " + args.join(" ") : ""}\` on ${new Date().toISOString().slice(0, 10)}: ${cpu}, ${readFileSync("/proc/cpuinfo", "utf8").match(/^processor/gm).length} cores; Node ${process.version}; ${results[0].duck.version} with ${results[0].duck.threads} threads. ` +
  `Uncached latency is the median (p95) of ${runs} runs with varied parameters and the cache cleared, after one untimed warm-up run; every run's row count agreed across the three engines. DuckDB stops a query after 5 runs once it has spent 60 s on it ([n runs]). ` +
  `Ratios: DuckDB ÷ ours (above 1 = we are faster), wasm ÷ native, ours ÷ floor (the time to sum one 8-byte column of N values in the same build).`, "");

push("## Ingest (NDJSON bytes → queryable store)", "",
  "| N per stream | stream | wasm MB/s | native MB/s | DuckDB `read_json` MB/s | wasm ÷ DuckDB throughput | wasm ÷ native time | wasm entries/s |",
  "|---:|---|---:|---:|---:|---:|---:|---:|");
for (const r of results) {
  for (const stream of ["edge_logs", "function_edge_logs"]) {
    const [w, nat, d] = [r.wasm.ingest[stream], r.native.ingest[stream], r.duck.ingest[stream]];
    const rate = (x) => mib(x.bytes) / (x.ms / 1000);
    push(`| ${r.n.toLocaleString()} | ${stream} | ${rate(w).toFixed(0)} | ${rate(nat).toFixed(0)} | ${rate(d).toFixed(0)} | ${(rate(w) / rate(d)).toFixed(2)} | ${(w.ms / nat.ms).toFixed(2)} | ${Math.round(w.entries / (w.ms / 1000)).toLocaleString()} |`);
  }
}
push("", "MB here is MiB (2^20 bytes) of NDJSON input.", "");

push("## Memory", "",
  "| N per stream | NDJSON input | store | store bytes per entry | store ÷ input bytes | peak wasm memory | DuckDB memory (duckdb_memory()) |",
  "|---:|---:|---:|---:|---:|---:|---:|");
for (const r of results) {
  const input = r.wasm.ingest.edge_logs.bytes + r.wasm.ingest.function_edge_logs.bytes;
  const entries = r.wasm.ingest.edge_logs.entries + r.wasm.ingest.function_edge_logs.entries;
  push(`| ${r.n.toLocaleString()} | ${mib(input).toFixed(0)} MiB | ${mib(r.wasm.storeBytes).toFixed(0)} MiB | ${(r.wasm.storeBytes / entries).toFixed(0)} | ${(r.wasm.storeBytes / input).toFixed(2)} | ${mib(r.wasm.wasmMemoryBytes).toFixed(0)} MiB | ${mib(r.duck.memoryBytes).toFixed(0)} MiB |`);
}
push("");

for (const r of results) {
  push(`## Queries, N = ${r.n.toLocaleString()} per stream (ms)`, "",
    "| endpoint | wasm | native | DuckDB | DuckDB ÷ wasm | wasm ÷ native | wasm ÷ floor | rows |",
    "|---|---:|---:|---:|---:|---:|---:|---:|");
  const floorW = median(r.wasm.floorMs);
  for (const name of queryNames) {
    const [w, nat, d] = [r.wasm.queries[name].ms, r.native.queries[name].ms, r.duck.queries[name].ms];
    const dRuns = d.length < w.length ? ` [${d.length} runs]` : "";
    push(`| ${name} | ${fmtMs(median(w))} (${fmtMs(p95(w))}) | ${fmtMs(median(nat))} (${fmtMs(p95(nat))}) | ${fmtMs(median(d))} (${fmtMs(p95(d))})${dRuns} | ${fmtX(median(d) / median(w))} | ${(median(w) / median(nat)).toFixed(2)} | ${(median(w) / floorW).toFixed(1)} | ${median(r.wasm.queries[name].rows)} |`);
  }
  push(`| scan floor (sum of ${r.n.toLocaleString()} timestamps) | ${fmtMs(floorW)} | ${fmtMs(median(r.native.floorMs))} | | | ${(floorW / median(r.native.floorMs)).toFixed(2)} | 1 | |`);
  const hits = queryNames.filter((q) => !q.startsWith("logs.all"));
  push("", `Cache hit (median over the cached endpoints, through the JS API for wasm): wasm ${hits.map((q) => `${q} ${(median(r.wasm.queries[q].hitMs) * 1000).toFixed(0)} µs`).join(", ")}; native ${hits.map((q) => `${(median(r.native.queries[q].hitMs) * 1000).toFixed(1)} µs`).join(", ")}.`, "");
}

const at = (n) => results.find((r) => r.n === n);
if (at(1_000_000) && at(5_000_000)) {
  push("## Scaling from 1M to 5M entries (median latency ratio; 5 = linear)", "", "| endpoint | wasm | native | DuckDB |", "|---|---:|---:|---:|");
  for (const name of queryNames) {
    const ratio = (engine) => median(at(5_000_000)[engine].queries[name].ms) / median(at(1_000_000)[engine].queries[name].ms);
    push(`| ${name} | ${ratio("wasm").toFixed(2)} | ${ratio("native").toFixed(2)} | ${ratio("duck").toFixed(2)} |`);
  }
  push("");
}

// Targets of issue 7, checked from the numbers above.
const ref = at(1_000_000) ?? results[results.length - 1];
const targets = [];
const floorRef = median(ref.wasm.floorMs);
for (const name of queryNames) {
  const w = median(ref.wasm.queries[name].ms);
  const d = median(ref.duck.queries[name].ms);
  targets.push([`${name}: ≥ 3× faster than DuckDB at ${ref.n.toLocaleString()}`, fmtX(d / w), d / w >= 3]);
  targets.push([`${name}: within 5× of the scan floor`, `${(w / floorRef).toFixed(1)}×`, w / floorRef <= 5]);
  const wn = w / median(ref.native.queries[name].ms);
  targets.push([`${name}: wasm ÷ native ≤ 1.5`, wn.toFixed(2), wn <= 1.5]);
}
for (const stream of ["edge_logs", "function_edge_logs"]) {
  const [w, nat, d] = [ref.wasm.ingest[stream], ref.native.ingest[stream], ref.duck.ingest[stream]];
  targets.push([`ingest ${stream}: wasm ÷ native ≤ 1.5`, (w.ms / nat.ms).toFixed(2), w.ms / nat.ms <= 1.5]);
  targets.push([`ingest ${stream}: ≥ DuckDB read_json throughput`, `${(d.ms / w.ms).toFixed(2)}× DuckDB's`, w.ms <= d.ms]);
}
const inputRef = ref.wasm.ingest.edge_logs.bytes + ref.wasm.ingest.function_edge_logs.bytes;
targets.push(["store ≤ 1.2 bytes per input byte", (ref.wasm.storeBytes / inputRef).toFixed(2), ref.wasm.storeBytes / inputRef <= 1.2]);
const worstHit = Math.max(...queryNames.filter((q) => !q.startsWith("logs.all")).map((q) => median(ref.wasm.queries[q].hitMs)));
targets.push(["cache hit ≤ 50 µs (slowest cached endpoint, wasm through JS)", `${(worstHit * 1000).toFixed(0)} µs`, worstHit <= 0.05]);
if (at(1_000_000) && at(5_000_000)) {
  for (const name of queryNames) {
    const ratio = median(at(5_000_000).wasm.queries[name].ms) / median(at(1_000_000).wasm.queries[name].ms);
    targets.push([`${name}: 5M ÷ 1M ≤ 5.5`, ratio.toFixed(2), ratio <= 5.5]);
  }
  const logs = median(at(5_000_000).wasm.queries["logs.all PAYG"].ms) / median(at(100_000)?.wasm.queries["logs.all PAYG"].ms ?? at(1_000_000).wasm.queries["logs.all PAYG"].ms);
  targets.push(["logs.all independent of N (5M ÷ 100k)", logs.toFixed(2), logs <= 2]);
}
push("## Targets", "", `Measured at N = ${ref.n.toLocaleString()} unless the row says otherwise.`, "", "| target | measured | met |", "|---|---:|:-:|");
for (const [what, value, ok] of targets) push(`| ${what} | ${value} | ${yes(ok)} |`);
push("", `DuckDB-wasm in Node: ${results[0].duckWasm.ok ? results[0].duckWasm.detail : `not measured — ${results[0].duckWasm.detail}`}.`, "");
push("![latency against N](latency.png)", "");

writeFileSync(out, lines.join("\n"));
writeFileSync(path.join(path.dirname(out), "results.json"), JSON.stringify({ runs, sizes, results: results.map(({ n, wasm, native, duck }) => ({ n, wasm, native, duck })) }));
writeChart(path.join(path.dirname(out), "latency.svg"));
console.log(lines.join("\n"));

// ---------------------------------------------------------------- chart
function writeChart(file) {
  const W = 300, H = 230, M = { l: 52, r: 10, t: 26, b: 36 };
  const engines = [["wasm", "#d9480f", "ours, wasm"], ["native", "#1971c2", "ours, native"], ["duck", "#495057", "DuckDB"]];
  const xs = results.map((r) => r.n);
  const panels = queryNames.map((name, i) => {
    const series = engines.map(([engine, color]) => [color, results.map((r) => median(r[engine].queries[name].ms))]);
    series.push(["#2b8a3e", results.map((r) => median(r.wasm.floorMs))]);
    const all = series.flatMap(([, ys]) => ys).filter((y) => y > 0);
    const [y0, y1] = [Math.log10(Math.min(...all)) - 0.2, Math.log10(Math.max(...all)) + 0.2];
    const [x0, x1] = [Math.log10(Math.min(...xs)) - 0.1, Math.log10(Math.max(...xs)) + 0.1];
    const px = (x) => M.l + ((Math.log10(x) - x0) / (x1 - x0 || 1)) * (W - M.l - M.r);
    const py = (y) => H - M.b - ((Math.log10(Math.max(y, 1e-4)) - y0) / (y1 - y0 || 1)) * (H - M.t - M.b);
    const ox = (i % 3) * W, oy = Math.floor(i / 3) * H;
    const ticks = [];
    for (let e = Math.ceil(y0); e <= Math.floor(y1); e++) ticks.push(`<line x1="${M.l}" x2="${W - M.r}" y1="${py(10 ** e)}" y2="${py(10 ** e)}" stroke="#eee"/><text x="${M.l - 4}" y="${py(10 ** e) + 4}" text-anchor="end">${10 ** e >= 1 ? 10 ** e : (10 ** e).toPrecision(1)}</text>`);
    const xt = xs.map((x) => `<text x="${px(x)}" y="${H - M.b + 14}" text-anchor="middle">${x >= 1e6 ? x / 1e6 + "M" : x / 1e3 + "k"}</text>`);
    const lines = series.map(([color, ys], s) => `<polyline fill="none" stroke="${color}" stroke-width="2" ${s === 3 ? 'stroke-dasharray="4 3"' : ""} points="${ys.map((y, j) => `${px(xs[j])},${py(y)}`).join(" ")}"/>` + ys.map((y, j) => `<circle cx="${px(xs[j])}" cy="${py(y)}" r="3" fill="${color}"/>`).join(""));
    return `<g transform="translate(${ox},${oy})"><rect x="${M.l}" y="${M.t}" width="${W - M.l - M.r}" height="${H - M.t - M.b}" fill="none" stroke="#ccc"/>${ticks.join("")}${xt.join("")}${lines.join("")}<text x="${M.l}" y="16" font-weight="bold">${name}</text><text x="${(W + M.l) / 2}" y="${H - 6}" text-anchor="middle">entries per stream</text><text transform="translate(12,${(H + M.t - M.b) / 2}) rotate(-90)" text-anchor="middle">ms (median)</text></g>`;
  });
  const legend = [...engines.map(([, c, label]) => [c, label]), ["#2b8a3e", "scan floor (wasm)"]].map(([c, label], i) => `<g transform="translate(${2 * W + 20},${H + 40 + i * 22})"><line x1="0" x2="24" y1="0" y2="0" stroke="${c}" stroke-width="3" ${i === 3 ? 'stroke-dasharray="4 3"' : ""}/><text x="30" y="4">${label}</text></g>`);
  const rowsOfPanels = Math.ceil(queryNames.length / 3);
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="${3 * W}" height="${rowsOfPanels * H}" font-family="sans-serif" font-size="11"><rect width="100%" height="100%" fill="white"/>${panels.join("")}${legend.join("")}</svg>`;
  writeFileSync(file, svg);
  const chromium = "/usr/bin/chromium";
  if (existsSync(chromium)) {
    const png = file.replace(/\.svg$/, ".png");
    spawnSync(chromium, ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--no-first-run", `--screenshot=${png}`, `--window-size=${3 * W},${rowsOfPanels * H}`, `file://${file}`], { stdio: "ignore", timeout: 60_000 });
    if (!existsSync(png)) log(`chart: ${file} (Chromium did not render the PNG)`);
  }
}
