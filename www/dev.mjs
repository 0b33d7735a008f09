// The main job: serves www/worker.js on real workerd at http://127.0.0.1:8787,
// with local persistence, ingests generated sample logs on first start, and
// prints a ready-to-paste curl line for each endpoint.
//
//   node www/dev.mjs [--host 127.0.0.1] [--port 8787] [--page-port 8788]
//                    [--state www/.state] [--fresh] [--no-sample]
//
// It also serves the browser page (dist/page) on the next port.
//
// Every setting of the README's table (LogEndpoints.settings()) comes from the
// environment when set, as on Cloudflare. With real keys configured (API_KEYS
// or INGEST_KEYS), or with --no-sample, no sample logs are loaded.
import { Miniflare } from "miniflare";
import { LogEndpoints } from "log-endpoints";
import { randomBytes } from "node:crypto";
import { parseArgs } from "node:util";
import { existsSync, mkdirSync, rmSync, writeFileSync, readFileSync } from "node:fs";
import { createServer } from "node:net";
import path from "node:path";
import { distributed, workerOptions, ROOT } from "./miniflare-options.mjs";
import { serveStatic } from "./static-server.mjs";
import { functionIds, generate, ndjson, projectRefs } from "../scripts/generate-logs.mjs";

const USAGE = `usage: node www/dev.mjs [--host 127.0.0.1] [--port 8787] [--page-port 8788]
                        [--state www/.state] [--fresh] [--no-sample]
  --port       the worker's port (default $PORT or 8787); the page is served on the next one
  --page-port  the browser page's port
  --host       the address to listen on (0.0.0.0 in a container)
  --state      the folder of the objects' storage and the dev keys (default www/.state in the checkout)
  --fresh      start from empty storage
  --no-sample  load no sample logs (neither are they with API_KEYS or INGEST_KEYS set)
Settings (API_KEYS, INGEST_KEYS, MAX_STORE_BYTES, ...) come from the environment: see the README.`;
let options;
try {
  ({ values: options } = parseArgs({
    options: {
      port: { type: "string", default: String(process.env.PORT ?? 8787) },
      "page-port": { type: "string" },
      host: { type: "string", default: "127.0.0.1" },
      state: { type: "string" },
      fresh: { type: "boolean", default: false },
      "no-sample": { type: "boolean", default: false },
      help: { type: "boolean", short: "h", default: false },
    },
  }));
} catch (e) {
  console.error(`${e.message}\n${USAGE}`);
  process.exit(2);
}
if (options.help) {
  console.log(USAGE);
  process.exit(0);
}
const port = Number(options.port);
const pagePort = Number(options["page-port"] ?? port + 1);
for (const [name, value] of [["--port", port], ["--page-port", pagePort]]) {
  if (!Number.isInteger(value) || value < 1 || value > 65535) {
    console.error(`error: ${name} must be a port number (1 to 65535), not "${name === "--port" ? options.port : options["page-port"]}"\n${USAGE}`);
    process.exit(2);
  }
}
/**
 * Ends the job with one line when it cannot listen on `at` (taken by an
 * earlier main job still running, say), before anything starts.
 */
async function refuseUnusablePort(at, host, what) {
  const failure = await new Promise((done) => {
    const probe = createServer();
    probe.once("error", done);
    probe.listen(at, host, () => probe.close(() => done(undefined)));
  });
  if (!failure) return;
  const why = {
    EADDRINUSE: "is in use: is an earlier main job still running? Stop it, or choose another port with --port",
    EACCES: "needs privileges this user lacks: choose a port above 1023",
    EADDRNOTAVAIL: "is on an address this machine does not have: check --host",
  }[failure.code] ?? `cannot be listened on (${failure.message})`;
  console.error(`error: port ${at} on ${host} (${what}) ${why}`);
  process.exit(1);
}
await refuseUnusablePort(port, options.host, "the worker");
// The page is served on loopback whatever --host says (static-server.mjs).
await refuseUnusablePort(pagePort, "127.0.0.1", "the browser page");
// A folder given is read from where the command runs, as any path is.
const stateDir = options.state === undefined ? path.join(ROOT, "www/.state") : path.resolve(options.state);
// Inside the checkout by its relative path, elsewhere by its own.
const shownState = path.relative(ROOT, stateDir).startsWith("..") ? stateDir : path.relative(ROOT, stateDir);
if (options.fresh) rmSync(stateDir, { recursive: true, force: true });
mkdirSync(stateDir, { recursive: true });

// Development keys are made once per state folder and kept beside it.
const keysFile = path.join(stateDir, "dev-keys.json");
if (!existsSync(keysFile)) {
  writeFileSync(keysFile, JSON.stringify({ api: `dev-query-${randomBytes(9).toString("hex")}`, ingest: `dev-ingest-${randomBytes(9).toString("hex")}` }));
}
const devKeys = JSON.parse(readFileSync(keysFile, "utf8"));
const apiKeys = process.env.API_KEYS ?? devKeys.api;
const ingestKeys = process.env.INGEST_KEYS ?? devKeys.ingest;
const bindings = {};
for (const { name } of LogEndpoints.settings()) if (process.env[name]) bindings[name] = process.env[name];
Object.assign(bindings, { API_KEYS: apiKeys, INGEST_KEYS: ingestKeys });
const sample = !options["no-sample"] && process.env.API_KEYS === undefined && process.env.INGEST_KEYS === undefined;
// The keys as the worker reads them (a list, or API_KEYS as a JSON array of keys
// and restricted keys): the examples use the first query key with no restriction.
let settings;
try {
  settings = LogEndpoints.readSettings(bindings);
} catch (e) {
  console.error(`error: ${e.message}`);
  process.exit(1);
}
const keyOf = (k) => (typeof k === "string" ? k : k.key);
const queryKey = keyOf(settings.apiKeys.find((k) => typeof k === "string" || (!k.projects && !k.endpoints)) ?? settings.apiKeys[0] ?? "");
const ingestKey = settings.ingestKeys[0] ?? "";

const mf = new Miniflare(workerOptions({ persistDir: path.join(stateDir, "do"), bindings, port, host: options.host }));
const url = await mf.ready;
const base = url.origin;

const sampleMarker = path.join(stateDir, "sample-ingested");
const nowMs = Number(process.env.FIXED_NOW_MS || Date.now());
const projects = projectRefs();
if (sample && !existsSync(sampleMarker)) {
  for (const stream of ["edge_logs", "function_edge_logs"]) {
    // Two days of logs, in batches of 5,000 as a log shipper would send them.
    const entries = [...generate({ stream, count: 40_000, endMs: nowMs, spanMs: 2 * 24 * 3600e3 })];
    let accepted = 0;
    for (let i = 0; i < entries.length; i += 5000) {
      const res = await fetch(`${base}/api/logs/${stream}`, {
        method: "POST",
        headers: { "X-API-KEY": ingestKey, "Content-Type": "application/x-ndjson" },
        body: ndjson(entries.slice(i, i + 5000)),
      });
      const body = await res.json();
      if (!res.ok) throw new Error(`ingest failed: ${res.status} ${JSON.stringify(body)}`);
      accepted += body.accepted;
    }
    console.log(`ingested ${accepted} sample ${stream} entries`);
  }
  // Acknowledged batches are queryable once their ingest partitions distributed them.
  await distributed(mf, { timeoutMs: 120_000 });
  writeFileSync(sampleMarker, new Date().toISOString());
} else if (sample) {
  console.log(`using the logs stored in ${shownState} (start with --fresh for new samples)`);
} else {
  console.log(`no sample logs loaded (keys configured, or --no-sample); storage in ${shownState}`);
}
for (const [name, keys] of [["API_KEYS", settings.apiKeys], ["INGEST_KEYS", settings.ingestKeys]]) {
  if (keys.length === 0) console.log(`warning: ${name} is empty: every call that needs such a key is refused with 503 no_api_keys, and /health answers 503`);
}

// One example per endpoint, from the endpoints' own descriptions: every
// required parameter, with the sample's first project and function and each
// choice's default.
const project = projects[0];
const sampleValues = { project, function_id: functionIds(1)[0] };
const examples = new LogEndpoints({}).endpoints().map((endpoint) => {
  const query = new URLSearchParams();
  for (const p of endpoint.parameters.filter((p) => p.required)) query.set(p.name, sampleValues[p.name] ?? p.default ?? p.example);
  return [endpoint.name, query.toString()];
});
// Miniflare names the loopback address whatever it is bound to.
const bound = options.host === "127.0.0.1" ? "" : ` (bound to ${options.host})`;
console.log(`\nlog-endpoints worker (workerd) listening on ${base}${bound}`);
console.log(`query key:  ${queryKey}\ningest key: ${ingestKey}\n`);
if (!sample) console.log(`# the examples name the sample's project (${project}): put your own in project=\n`);
for (const [name, query] of examples) {
  const res = await fetch(`${base}/api/endpoints/query/${name}?${query}`, { headers: { "X-API-KEY": queryKey } });
  const body = await res.json();
  console.log(`# ${name}: HTTP ${res.status}, ${body.result?.length ?? 0} rows`);
  console.log(`curl -s -H 'X-API-KEY: ${queryKey}' '${base}/api/endpoints/query/${name}?${query}'\n`);
}
console.log(`# send logs (JSON array or NDJSON, optionally gzip):`);
console.log(`curl -s -X POST -H 'X-API-KEY: ${ingestKey}' --data-binary @edge.ndjson '${base}/api/logs/edge_logs'\n`);
console.log(`# or as Logflare's ingest API (what self-hosted Supabase's Vector sends; any source name is kept):`);
console.log(`curl -s -X POST -H 'x-api-key: ${ingestKey}' -H 'Content-Type: application/json' --data '[{"event_message":"hello","project":"default"}]' '${base}/api/logs?source_name=cloudflare.logs.prod'\n`);
const page = await serveStatic(path.join(ROOT, "dist/page"), { port: pagePort });
console.log(`# the browser page (analyse downloaded logs locally): ${page.url}\n`);
console.log("Ctrl-C stops the worker and the page; the logs stay in the state folder.");

const stop = async () => {
  await page.close();
  await mf.dispose();
  process.exit(0);
};
process.on("SIGINT", stop);
process.on("SIGTERM", stop);
if (process.env.LOG_ENDPOINTS_EXIT_AFTER_START === "1") await stop();
