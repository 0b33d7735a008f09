// The npm package as a user gets it: `npm pack`, installed from the tarball into
// a fresh project, then imported and queried in Node (ESM and CommonJS), Deno,
// workerd (bundled by esbuild with the "workerd" condition) and headless
// Chromium; its types checked with tsc --strict; its CLI run on log files.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, mkdirSync, openSync, readdirSync, statSync, rmSync, writeFileSync, readFileSync, copyFileSync, cpSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";
import { Miniflare } from "miniflare";
import * as esbuild from "esbuild";
import { launchChromium } from "./chromium.mjs";
import { LogEndpoints } from "log-endpoints";
import { ROOT } from "../../www/miniflare-options.mjs";
import { serveStatic } from "../../www/static-server.mjs";
import { generate, ndjson, projectRefs } from "../../scripts/generate-logs.mjs";

const NOW = Date.parse("2026-11-20T12:00:00Z");
const [project] = projectRefs();
const BIN = path.join(ROOT, "node_modules/.bin");
const edge = [...generate({ stream: "edge_logs", count: 400, endMs: NOW, spanMs: 3 * 3600e3 })];
const fns = [...generate({ stream: "function_edge_logs", count: 400, endMs: NOW, spanMs: 3 * 3600e3 })];

// The same program in every runtime: ingest, then one query per endpoint.
const QUERIES = [
  ["functions.invocation-stats", { project, interval: "1day" }],
  ["logs.all", { project, project_tier: "PRO" }],
  ["usage.api-counts", { project, interval: "daily" }],
];
const PROGRAM = `
  const svc = new LogEndpoints({ apiKeys: ["k"], now: ${NOW} });
  svc.ingest("edge_logs", ${JSON.stringify(ndjson(edge))});
  svc.ingest("function_edge_logs", ${JSON.stringify(ndjson(fns))});
  const answers = ${JSON.stringify(QUERIES)}.map(([name, params]) => svc.query(name, params, "k"));
`;
const reference = new LogEndpoints({ apiKeys: ["k"], now: NOW });
reference.ingest("edge_logs", edge);
reference.ingest("function_edge_logs", fns);
const EXPECTED = QUERIES.map(([name, params]) => reference.query(name, params, "k"));
// Each answer has rows: an install that ingested nothing would otherwise agree on empty answers.
assert.ok(EXPECTED.every((answer) => answer.result.length > 0), "every reference answer has rows");

let dir;

function sh(cmd, args, options = {}) {
  return execFileSync(cmd, args, { cwd: dir, encoding: "utf8", maxBuffer: 1 << 26, stdio: ["ignore", "pipe", "pipe"], ...options });
}

before(() => {
  dir = mkdtempSync(path.join(tmpdir(), "log-endpoints-install-"));
  const tarball = execFileSync("npm", ["pack", path.join(ROOT, "pkg"), "--pack-destination", dir, "--silent"], { encoding: "utf8" }).trim().split("\n").pop();
  writeFileSync(path.join(dir, "package.json"), JSON.stringify({ name: "consumer", private: true, type: "module" }));
  sh("npm", ["install", "--no-audit", "--no-fund", "--loglevel=error", path.join(dir, tarball)]);
});

after(() => rmSync(dir, { recursive: true, force: true }));

test("the tarball holds exactly the files of the `files` list", () => {
  const installed = path.join(dir, "node_modules/log-endpoints");
  const listed = JSON.parse(readFileSync(path.join(installed, "package.json"), "utf8")).files;
  // npm adds package.json and the README to what `files` lists.
  const held = readdirSync(installed, { recursive: true }).filter((f) => statSync(path.join(installed, f)).isFile());
  assert.deepEqual(held.sort(), [...new Set([...listed, "package.json", "README.md"])].sort());
});

test("Node ESM: import by name, ready at once", () => {
  writeFileSync(path.join(dir, "esm.mjs"), `import { LogEndpoints, init } from "log-endpoints";\nawait init();\n${PROGRAM}\nconsole.log(JSON.stringify(answers));`);
  assert.deepEqual(JSON.parse(sh("node", ["esm.mjs"])), EXPECTED);
});

test("Node CommonJS: require by name", () => {
  writeFileSync(path.join(dir, "cjs.cjs"), `const { LogEndpoints } = require("log-endpoints");\n${PROGRAM}\nconsole.log(JSON.stringify(answers));`);
  assert.deepEqual(JSON.parse(sh("node", ["--no-warnings", "cjs.cjs"])), EXPECTED);
});

test("Deno: import from node_modules with the deno condition", () => {
  writeFileSync(path.join(dir, "deno.mjs"), `import { LogEndpoints } from "log-endpoints";\n${PROGRAM}\nconsole.log(JSON.stringify(answers));`);
  const out = sh(path.join(BIN, "deno"), ["run", "--allow-read", "--no-config", "--node-modules-dir=manual", "deno.mjs"], { env: { ...process.env, DENO_NO_UPDATE_CHECK: "1", NO_COLOR: "1" } });
  assert.deepEqual(JSON.parse(out), EXPECTED);
});

test("workerd: bundled with the workerd condition, run by Miniflare", async () => {
  const out = path.join(dir, "worker-out");
  mkdirSync(out, { recursive: true });
  writeFileSync(
    path.join(dir, "worker.mjs"),
    `import { LogEndpoints } from "log-endpoints";\nexport default { fetch() {\n${PROGRAM}\nreturn Response.json(answers); } };`,
  );
  await esbuild.build({
    entryPoints: [path.join(dir, "worker.mjs")],
    bundle: true,
    format: "esm",
    platform: "neutral",
    conditions: ["workerd", "worker", "browser"],
    external: ["*.wasm"],
    outfile: path.join(out, "worker.mjs"),
    absWorkingDir: dir,
    logLevel: "error",
  });
  const bundled = readFileSync(path.join(out, "worker.mjs"), "utf8");
  assert.match(bundled, /log_endpoints_bg\.wasm/, "the workerd entry (wasm module import) was chosen");
  copyFileSync(path.join(dir, "node_modules/log-endpoints/log_endpoints_bg.wasm"), path.join(out, "log_endpoints_bg.wasm"));
  const mf = new Miniflare({
    modules: [
      { type: "ESModule", path: path.join(out, "worker.mjs") },
      { type: "CompiledWasm", path: path.join(out, "log_endpoints_bg.wasm") },
    ],
    modulesRoot: out,
    compatibilityDate: "2026-07-30",
  });
  try {
    const res = await mf.dispatchFetch("http://bundle.test/");
    assert.deepEqual(await res.json(), EXPECTED);
  } finally {
    await mf.dispose();
  }
});

test("headless Chromium: import map to the package, await init()", async () => {
  const pkgDir = path.join(dir, "node_modules/log-endpoints");
  const page = `<!doctype html><script type="importmap">{"imports":{"log-endpoints":"/pkg/web.js"}}</script>
    <script type="module">
      import { init, LogEndpoints } from "log-endpoints";
      try {
        await init(); await init();
        ${PROGRAM}
        window.answers = answers;
      } catch (e) { window.failed = String(e); }
    </script>`;
  const siteDir = path.join(dir, "site");
  mkdirSync(siteDir, { recursive: true });
  writeFileSync(path.join(siteDir, "index.html"), page);
  cpSync(pkgDir, path.join(siteDir, "pkg"), { recursive: true });
  const site = await serveStatic(siteDir);
  const browser = await launchChromium();
  try {
    const tab = await browser.newPage();
    const errors = [];
    tab.on("pageerror", (e) => errors.push(e.message));
    await tab.goto(site.url);
    await tab.waitForFunction(() => window.answers !== undefined || window.failed !== undefined, null, { timeout: 20_000 });
    assert.equal(await tab.evaluate(() => window.failed), undefined);
    assert.deepEqual(errors, []);
    assert.deepEqual(await tab.evaluate(() => window.answers), EXPECTED);
  } finally {
    await browser.close();
    await site.close();
  }
});

test("types: a typed use compiles with --strict; misspellings do not", () => {
  writeFileSync(
    path.join(dir, "good.ts"),
    `import { LogEndpoints, type LogsAllRow, type LogEndpointsError } from "log-endpoints";
const svc = new LogEndpoints({ apiKeys: ["k"], now: 0 });
const report = svc.ingest("edge_logs", "[]");
const accepted: number = report.accepted;
const logs = svc.query("logs.all", { project: "p", project_tier: "PRO", iso_timestamp_end: "2026-11-20" }, "k");
const first: LogsAllRow | undefined = logs.result[0];
const id: string | undefined = first?.id;
const stats = svc.query("functions.invocation-stats", { project: "p", interval: "1hr" }, "k");
const p95: number | null | undefined = stats.result[0]?.p95_execution_time;
const counts = svc.query("usage.api-counts", { project: "p", interval: "hourly" }, "k");
const rest: number | undefined = counts.result[0]?.total_rest_requests;
const byId = svc.query("7d3b1c2e-0000-5000-8000-000000000000", "project=p", "k");
const fromString = svc.query("usage.api-counts", "project=p&interval=hourly", "k").result[0]?.total_auth_requests;
const fromSearch = svc.query("logs.all", new URLSearchParams({ project: "p" }), "k").result[0]?.id;
const at: number = LogEndpoints.parseTime("2026-11-20T12:00:00");
void fromString; void fromSearch; void at;
try { svc.query("logs.all", { project: "p", project_tier: "FREE" }); } catch (e) { const err = e as LogEndpointsError; const s: number = err.status; const c: string = err.code; void s; void c; }
void accepted; void id; void p95; void rest; void byId;
const blocks = new Map<number, Uint8Array>();
const kept = new LogEndpoints({ apiKeys: ["k"], blockStorage: { put: (key, bytes) => { blocks.set(key, bytes); }, get: (key) => blocks.get(key) } });
for (const endpoint of kept.endpoints()) {
  const raw: string = kept.queryRaw(endpoint.name, "project=p", "k").body;
  const rows: unknown[] = kept.query(endpoint.name, "project=p", "k").result;
  void raw; void rows;
}
`,
  );
  writeFileSync(
    path.join(dir, "bad.ts"),
    `import { LogEndpoints } from "log-endpoints";
const svc = new LogEndpoints({ apiKeys: ["k"] });
svc.query("logs.all", { project: "p", project_tir: "PRO" }, "k");
svc.query("usage.api-counts", { project: "p", interval: "weekly" }, "k");
const rows = svc.query("usage.api-counts", { project: "p", interval: "hourly" }, "k").result;
const n: number = rows[0].total_rest_request;
void n;
`,
  );
  const tsc = path.join(BIN, "tsc");
  const goodRun = spawnSync(tsc, ["--noEmit", "--strict", "--module", "nodenext", "--moduleResolution", "nodenext", "--target", "es2022", "--lib", "es2022,dom,esnext.disposable", "--types", "", "good.ts"], { cwd: dir, encoding: "utf8" });
  assert.equal(goodRun.status, 0, goodRun.stdout + goodRun.stderr);
  const badRun = spawnSync(tsc, ["--noEmit", "--strict", "--module", "nodenext", "--moduleResolution", "nodenext", "--target", "es2022", "--lib", "es2022,dom,esnext.disposable", "--types", "", "bad.ts"], { cwd: dir, encoding: "utf8" });
  assert.notEqual(badRun.status, 0);
  const output = badRun.stdout + badRun.stderr;
  assert.match(output, /bad\.ts\(3,[\s\S]*?'project_tir' does not exist in type 'LogsAllParams'/, output);
  assert.match(output, /bad\.ts\(4,[\s\S]*?'"weekly"' is not assignable to type 'ApiCountsInterval'/, output);
  assert.match(output, /bad\.ts\(6,[\s\S]*?'total_rest_request' does not exist on type 'ApiCountsRow'/, output);
});

test("CLI: each endpoint in each format over log files; a bad file is a one-line error", () => {
  writeFileSync(path.join(dir, "edge.ndjson"), ndjson(edge));
  writeFileSync(path.join(dir, "functions.json.gz"), gzipSync(JSON.stringify(fns)));
  writeFileSync(path.join(dir, "mixed.ndjson"), ndjson([...edge.slice(0, 200), ...fns.slice(0, 200)]) + ndjson([...edge.slice(200), ...fns.slice(200)]));
  // The bin as npm installed it (what npx would run).
  const cli = (...args) => spawnSync(path.join(dir, "node_modules/.bin/log-endpoints"), args, { cwd: dir, encoding: "utf8" });
  for (const [i, [name, params]] of QUERIES.entries()) {
    const paramArgs = Object.entries(params).flatMap(([k, v]) => ["--param", `${k}=${v}`]);
    for (const files of [["--logs", "edge.ndjson", "--logs", "functions.json.gz"], ["--logs", "mixed.ndjson"]]) {
      const json = cli("query", name, ...files, ...paramArgs, "--now", new Date(NOW).toISOString());
      assert.equal(json.status, 0, json.stderr);
      assert.deepEqual(JSON.parse(json.stdout), EXPECTED[i], `${name} ${files}`);
    }
    const csv = cli("query", name, "--logs", "edge.ndjson", "--logs", "functions.json.gz", ...paramArgs, "--now", String(NOW), "--format", "csv");
    assert.equal(csv.status, 0, csv.stderr);
    const lines = csv.stdout.trim().split("\n");
    assert.equal(lines[0], Object.keys(EXPECTED[i].result[0]).join(","));
    assert.equal(lines.length, EXPECTED[i].result.length + 1);
    const table = cli("query", name, "--logs", "edge.ndjson", "--logs", "functions.json.gz", ...paramArgs, "--now", String(NOW), "--format", "table");
    assert.equal(table.status, 0, table.stderr);
    const count = EXPECTED[i].result.length;
    assert.match(table.stdout, new RegExp(`\\(${count} ${count === 1 ? "row" : "rows"}\\)`));
    // For people: ISO times, fractions rounded to 2 places; JSON keeps them exact.
    if (name !== "usage.api-counts") assert.match(table.stdout, /(^|\s)20\d\d-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,6})?Z\s/);
    if (name !== "logs.all") assert.doesNotMatch(table.stdout, /\b\d{16}\b|\.\d{3,}\b/, "no µs integers, no long fractions");
  }
  // A file named twice (or by another path) is read once, saying so: its entries count once.
  const countParams = ["--param", "interval=7day", "--param", `project=${project}`, "--now", String(NOW)];
  const once = cli("query", "functions.invocation-stats", "--logs", "functions.json.gz", ...countParams);
  const twice = cli("query", "functions.invocation-stats", "--logs", "functions.json.gz", "--logs", `../${path.basename(dir)}/functions.json.gz`, "--logs", "functions.json.gz", ...countParams);
  assert.equal(twice.status, 0, twice.stderr);
  assert.deepEqual(JSON.parse(twice.stdout), JSON.parse(once.stdout));
  assert.match(twice.stderr, /warning: \.\.\/[^ ]+\/functions\.json\.gz is the same file as functions\.json\.gz; it is read once/);
  assert.match(twice.stderr, /warning: functions\.json\.gz is given twice; it is read once/);

  // Entries that name no project are held, and the CLI says the endpoints will not find them.
  writeFileSync(path.join(dir, "no-project.ndjson"), ndjson(edge.slice(0, 3).map(({ project: _, ...rest }) => rest)));
  const unnamed = cli("query", "usage.api-requests-count", "--logs", "no-project.ndjson", "--param", `project=${project}`);
  assert.equal(unnamed.status, 0, unnamed.stderr);
  assert.match(unnamed.stderr, /warning: none of the 3 edge entries names a project/);
  const named = cli("query", "usage.api-requests-count", "--logs", "edge.ndjson", "--param", `project=${project}`);
  assert.equal(named.status, 0, named.stderr);
  assert.doesNotMatch(named.stderr, /names a project/);

  // A cut-off gzip keeps the whole entries before the break, and says so; a
  // file that is not gzip past its first two bytes is refused.
  const zipped = gzipSync(ndjson(fns));
  writeFileSync(path.join(dir, "cut.ndjson.gz"), zipped.subarray(0, Math.floor(zipped.length * 0.6)));
  const cut = cli("query", "functions.invocation-stats", "--logs", "cut.ndjson.gz", ...countParams);
  assert.equal(cut.status, 0, cut.stderr);
  const kept = Number(/the ([\d,]+) whole entries before the break were read/.exec(cut.stderr)?.[1].replaceAll(",", ""));
  assert.ok(kept > fns.length / 3 && kept < fns.length, cut.stderr);
  assert.doesNotMatch(cut.stderr, /rejected/, "the entry the cut went through is left out, not read damaged");
  // A plain JSON array cut off (no gzip to say so) reads as far, and says so.
  const array = JSON.stringify(fns);
  writeFileSync(path.join(dir, "cut.json"), array.slice(0, Math.floor(array.length * 0.6)));
  const cutArray = cli("query", "functions.invocation-stats", "--logs", "cut.json", ...countParams);
  assert.equal(cutArray.status, 0, cutArray.stderr);
  const read = Number(/ends early \(a JSON array cut off before its end\); the ([\d,]+) whole entries before the break were read/.exec(cutArray.stderr)?.[1].replaceAll(",", ""));
  assert.ok(read > fns.length / 3 && read < fns.length, cutArray.stderr);
  writeFileSync(path.join(dir, "not.gz"), Buffer.from([0x1f, 0x8b, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]));
  const notGzip = cli("query", "logs.all", "--logs", "not.gz", "--param", `project=${project}`);
  assert.equal(notGzip.status, 2, "unreadable input");
  assert.match(notGzip.stderr, /^error: not\.gz is not valid gzip \(unknown compression method at byte \d+\)\n/);
  // An array that breaks in its middle: the entries before the flaw are kept
  // and answered, with the module's warning saying how many (it was exit 2, nothing answered).
  const elements = fns.map((entry) => JSON.stringify(entry));
  const half = Math.floor(elements.length / 2);
  writeFileSync(path.join(dir, "half-broken.json"), `[${elements.slice(0, half).join(",")},{"id": oops},${elements.slice(half).join(",")}]`);
  const halfBroken = cli("query", "functions.invocation-stats", "--logs", "half-broken.json", "--logs", "edge.ndjson", ...countParams);
  assert.equal(halfBroken.status, 0, halfBroken.stderr);
  assert.match(halfBroken.stderr, new RegExp(`warning: half-broken\\.json is not a valid JSON array \\(.*\\); ${half} of the ${half} entries before it were kept\n`));
  writeFileSync(path.join(dir, "half.json"), `[${elements.slice(0, half).join(",")}]`);
  const halfWhole = cli("query", "functions.invocation-stats", "--logs", "half.json", "--logs", "edge.ndjson", ...countParams);
  assert.deepEqual(JSON.parse(halfBroken.stdout), JSON.parse(halfWhole.stdout), "the kept half is answered");
  assert.notDeepEqual(JSON.parse(halfBroken.stdout), JSON.parse(once.stdout));
  // Objects pretty-printed one after another (`jq .` of NDJSON) read as the NDJSON they came from.
  writeFileSync(path.join(dir, "pretty.json"), fns.map((entry) => JSON.stringify(entry, null, 2)).join("\n") + "\n");
  const pretty = cli("query", "functions.invocation-stats", "--logs", "pretty.json", ...countParams);
  assert.equal(pretty.status, 0, pretty.stderr);
  assert.doesNotMatch(pretty.stderr, /rejected/);
  assert.deepEqual(JSON.parse(pretty.stdout), JSON.parse(once.stdout));
  // Standard input as `--logs -`, here gzip in two members (`cat a.gz b.gz`), read whole;
  // parameters the endpoint does not take, or given twice, and an endpoint whose
  // stream no file held, are warned of.
  const members = Buffer.concat([gzipSync(ndjson(fns.slice(0, 100))), gzipSync(ndjson(fns.slice(100)))]);
  const piped = spawnSync(path.join(dir, "node_modules/.bin/log-endpoints"), ["query", "functions.invocation-stats", "--logs", "-", "--logs", "-", ...countParams], { cwd: dir, encoding: "utf8", input: members });
  assert.equal(piped.status, 0, piped.stderr);
  assert.deepEqual(JSON.parse(piped.stdout), JSON.parse(once.stdout));
  assert.match(piped.stderr, /warning: - \(standard input\) is given twice; it is read once/);
  const openStdin = cli("query", "logs.all", "--open", "-", "--param", "project=p");
  assert.equal(openStdin.status, 2, "usage");
  assert.match(openStdin.stderr, /^error: --open takes a snapshot file \(standard input is for --logs -\)/);
  const careless = cli("query", "functions.invocation-stats", "--logs", "edge.ndjson", ...countParams, "--param", "intreval=1hr", "--param", "project=x");
  assert.equal(careless.status, 0, careless.stderr);
  assert.match(careless.stderr, /unknown parameter `intreval` ignored \(did you mean `interval`\?\)/);
  assert.match(careless.stderr, /parameter `project` given 2 times: the last value is used/);
  assert.match(careless.stderr, /functions\.invocation-stats reads function_edge_logs, and no function entries were read from the logs given/);
  assert.match(cli("--version").stdout, /^\d+\.\d+\.\d+\n$/);

  // Logs that fill the store: reading stops there, saying how far and how to
  // raise it, and the answer covers what was read.
  writeFileSync(path.join(dir, "big.ndjson"), ndjson([...generate({ stream: "edge_logs", count: 20_000, endMs: NOW, spanMs: 3 * 3600e3 })]));
  const filled = cli("query", "usage.api-requests-count", "--logs", "big.ndjson", "--logs", "edge.ndjson", "--max-store", "1", "--param", `project=${project}`);
  assert.equal(filled.status, 0, filled.stderr);
  assert.match(filled.stderr, /warning: the store is full \([\d.]+ of its 1\.0 MiB held; limits\.maxStoreBytes\): \d+ entries of big\.ndjson were kept, \d+ read after them were not, and the rest of it was not read; 1 later file was not read; the answer covers what was kept \(--max-store raises the store's size\)\n/);
  assert.ok(JSON.parse(filled.stdout).result.length > 0, filled.stdout);
  const roomy = cli("query", "usage.api-requests-count", "--logs", "big.ndjson", "--max-store", "64", "--param", `project=${project}`);
  assert.equal(roomy.status, 0, roomy.stderr);
  assert.doesNotMatch(roomy.stderr, /store is full/);
  const badLimit = cli("query", "logs.all", "--logs", "edge.ndjson", "--max-store", "lots", "--param", "project=p");
  assert.equal(badLimit.status, 2, "usage");
  assert.match(badLimit.stderr, /^error: invalid configuration: --max-store takes a whole number of MiB from 1 to 4095, not "lots"/);
  const bare = cli();
  assert.equal(bare.status, 2);
  assert.equal(bare.stdout, "", "usage goes to stderr when it is an error");
  assert.match(bare.stderr, /^usage:/);

  // Default now is the newest entry, so old downloads still show data.
  const latest = cli("query", "logs.all", "--logs", "edge.ndjson", "--param", `project=${project}`, "--param", "project_tier=FREE");
  assert.equal(latest.status, 0, latest.stderr);
  assert.equal(JSON.parse(latest.stdout).result.length, 100);

  // Supabase Studio's Logs Explorer downloads (CSV and JSON, tests/fixtures/studio/,
  // written by scripts/studio-export.mjs) read as the NDJSON of the same entries.
  const studio = (file) => fileURLToPath(new URL(`../fixtures/studio/${file}`, import.meta.url));
  const studioQueries = [
    ["functions.invocation-stats", ["interval=1day", `project=${project}`]],
    ["functions.combined-stats", ["interval=1day", `project=${project}`, `function_id=${functionOf(studio("functions.ndjson"), project)}`]],
    ["usage.api-counts", ["interval=daily", `project=${project}`]],
    ["logs.all", ["project_tier=PAYG", `project=${project}`]],
  ];
  for (const [name, params] of studioQueries) {
    const answers = ["ndjson", "csv", "json"].map((format) => {
      const run = cli("query", name, "--logs", studio(`edge.${format}`), "--logs", studio(`functions.${format}`), ...params.flatMap((p) => ["--param", p]));
      assert.equal(run.status, 0, `${name} ${format}: ${run.stderr}`);
      assert.doesNotMatch(run.stderr, /rejected/, `${name} ${format}`);
      return JSON.parse(run.stdout);
    });
    assert.ok(answers[0].result.length > 0, name);
    assert.deepEqual(answers[1], answers[0], `${name}: CSV download`);
    assert.deepEqual(answers[2], answers[0], `${name}: JSON download`);
  }

  // --save writes a snapshot; --open answers from it alone, exactly as from the logs.
  const logsArgs = ["--logs", "edge.ndjson", "--logs", "functions.json.gz", "--now", String(NOW)];
  const saved = cli("query", QUERIES[0][0], ...logsArgs, "--save", "logs.snapshot", ...Object.entries(QUERIES[0][1]).flatMap(([k, v]) => ["--param", `${k}=${v}`]));
  assert.equal(saved.status, 0, saved.stderr);
  for (const [i, [name, params]] of QUERIES.entries()) {
    const paramArgs = Object.entries(params).flatMap(([k, v]) => ["--param", `${k}=${v}`]);
    const opened = cli("query", name, "--open", "logs.snapshot", "--now", String(NOW), ...paramArgs);
    assert.equal(opened.status, 0, opened.stderr);
    assert.deepEqual(JSON.parse(opened.stdout), EXPECTED[i], `${name} from the snapshot`);
  }
  writeFileSync(path.join(dir, "not.snapshot"), "[]");

  // An answer past a pipe's 64 KiB arrives whole (process.exit() cut it).
  const whole = cli("query", "logs.all", "--logs", "edge.ndjson", "--param", `project=${project}`, "--param", "project_tier=FREE");
  assert.ok(whole.stdout.length > 65536, `${whole.stdout.length} bytes`);
  const cliPath = path.join(dir, "node_modules/.bin/log-endpoints");
  for (let run = 0; run < 3; run++) {
    const piped = spawnSync("sh", ["-c", `"${cliPath}" query logs.all --logs edge.ndjson --param project=${project} --param project_tier=FREE 2>/dev/null | wc -c`], { cwd: dir, encoding: "utf8" });
    assert.equal(Number(piped.stdout.trim()), Buffer.byteLength(whole.stdout), `piped run ${run}`);
  }
  // Gzip is told by its bytes, not its name; --now reads epoch numbers by
  // magnitude and ISO times without a zone as UTC, whatever the machine's zone.
  writeFileSync(path.join(dir, "functions-gzipped.json"), gzipSync(JSON.stringify(fns)));
  const byNow = (now, env = {}) => {
    const run = spawnSync(cliPath, ["query", QUERIES[0][0], "--logs", "functions-gzipped.json", ...Object.entries(QUERIES[0][1]).flatMap(([k, v]) => ["--param", `${k}=${v}`]), "--now", now], { cwd: dir, encoding: "utf8", env: { ...process.env, ...env } });
    assert.equal(run.status, 0, `--now ${now}: ${run.stderr}`);
    return JSON.parse(run.stdout);
  };
  assert.deepEqual(byNow(String(NOW)), EXPECTED[0]);
  // From a pipe (no seeking back to look at the first bytes), gzipped or not.
  writeFileSync(path.join(dir, "functions-plain.json"), JSON.stringify(fns));
  for (const file of ["functions-gzipped.json", "functions-plain.json"]) {
    const params = Object.entries(QUERIES[0][1]).map(([k, v]) => `--param '${k}=${v}'`).join(" ");
    const run = spawnSync("sh", ["-c", `cat ${file} | "${cliPath}" query ${QUERIES[0][0]} --logs /dev/stdin ${params} --now ${NOW}`], { cwd: dir, encoding: "utf8" });
    assert.equal(run.status, 0, run.stderr);
    assert.deepEqual(JSON.parse(run.stdout), EXPECTED[0]);
  }
  // A reader that stops early (| head) is no error.
  const early = spawnSync("bash", ["-c", `"${cliPath}" query logs.all --logs edge.ndjson --param project=${project} 2>early.err | head -c 10 >/dev/null; echo "exit \${PIPESTATUS[0]}"; cat early.err`], { cwd: dir, encoding: "utf8" });
  assert.match(early.stdout, /^exit 0\n/, "no error");
  assert.doesNotMatch(early.stdout, /EPIPE|Error|at /, early.stdout);
  // Output that cannot be written is one line and exit 1, not a stack.
  const full = spawnSync(cliPath, ["endpoints"], { cwd: dir, encoding: "utf8", stdio: ["ignore", openSync("/dev/full", "w"), "pipe"] });
  assert.deepEqual([full.status, full.stderr], [1, "error: cannot write the output: ENOSPC: no space left on device, write\n"]);
  assert.deepEqual(byNow(String(NOW / 1000)), EXPECTED[0]);
  assert.deepEqual(byNow(new Date(NOW).toISOString().slice(0, 19), { TZ: "America/New_York" }), EXPECTED[0]);

  writeFileSync(path.join(dir, "broken.json"), "[{\"id\": 1,");
  for (const [args, pattern, code] of [
    [["query", "logs.all", "--logs", "broken.json", "--param", "project=p", "--param", "project_tier=FREE"], /^error: broken\.json is not a valid JSON array/, 2],
    [["query", "logs.all", "--logs", "missing.ndjson", "--param", "project=p"], /^error: cannot read missing\.ndjson: no such file/, 2],
    [["query", "logs.all", "--logs", "edge.ndjson", "--param", "project_tier=FREE"], /^error: missing required parameter `project`$/m, 1],
    [["query", "logs.all", "--logs", "edge.ndjson", "--format", "xml"], /^error: --format must be json, csv or table/, 2],
    [["query", "logs.all", "--open", "not.snapshot", "--param", "project=p"], /^error: not\.snapshot: invalid snapshot: too short to be a snapshot/, 2],
    [["query", "logs.all", "--logs", ".", "--param", "project=p"], /^error: cannot read \.: it is a directory\n$/, 2],
    [["query", "logs.all", "--log", "edge.ndjson", "--param", "project=p"], /^error: unknown option --log \(did you mean --logs\?\)/, 2],
    [["query", "logs.all", "--logs", "edge.ndjson", "--save", "no/such/folder/x.snapshot", "--param", "project=p"], /^error: cannot write no\/such\/folder\/x\.snapshot: no folder /, 2],
    // Checked before any log is read: no "now = …" line, no progress.
    [["query", "logs.everything", "--logs", "edge.ndjson", "--param", "project=p"], /^error: no endpoint named or with id `logs\.everything`\n$/, 1],
  ]) {
    const run = cli(...args);
    assert.equal(run.status, code, `${args.join(" ")}: ${run.stderr}`);
    assert.match(run.stderr, pattern);
    assert.equal(run.stderr.trim().split("\n").length, 1, `one line: ${run.stderr}`);
    assert.equal(run.stdout, "");
  }
});

/** The function of the first entry of `project` in an NDJSON file of function logs. */
function functionOf(file, project) {
  const entries = readFileSync(file, "utf8").trim().split("\n").map((line) => JSON.parse(line));
  return entries.find((e) => e.metadata[0].project_ref === project).metadata[0].function_id;
}
