// The main job (www/dev.mjs, what scripts/main.sh runs) as self-hosted
// Supabase's `analytics` service: listening on every interface, state in a
// folder of its own, keys and settings from the environment (SHARDING=off
// here, to see a setting passed through), no sample logs once keys are set,
// a health check, and a batch as Vector sends it queryable through it.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { networkInterfaces, tmpdir } from "node:os";
import path from "node:path";
import { ROOT } from "../../www/miniflare-options.mjs";

const PUBLIC_TOKEN = "public-token";
const PRIVATE_TOKEN = "private-token";

/** Two free consecutive ports (the worker's, and the page's after it). */
async function freePorts() {
  for (;;) {
    const port = await new Promise((resolve) => {
      const server = createServer().listen(0, () => {
        const { port } = server.address();
        server.close(() => resolve(port));
      });
    });
    const next = await new Promise((resolve) => {
      const server = createServer()
        .once("error", () => resolve(false))
        .listen(port + 1, () => server.close(() => resolve(true)));
    });
    if (next) return port;
  }
}

/** Waits for `condition` (async) to hold, every 100 ms, failing with `what` after `ms`. */
async function waitFor(condition, what, ms = 60_000) {
  const started = Date.now();
  for (;;) {
    const value = await condition().catch(() => undefined);
    if (value) return value;
    if (Date.now() - started > ms) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const state = mkdtempSync(path.join(tmpdir(), "log-endpoints-main-job-"));
let job;
after(() => {
  job?.kill("SIGINT");
  rmSync(state, { recursive: true, force: true });
});

test("the main job serves as the analytics container: --host 0.0.0.0, keys and settings from the environment, no samples", async () => {
  const port = await freePorts();
  let output = "";
  job = spawn(process.execPath, ["www/dev.mjs", "--host", "0.0.0.0", "--port", String(port), "--state", state], {
    cwd: ROOT,
    // API_KEYS as a JSON array, a restricted key first: the examples use the unrestricted one.
    env: { ...process.env, API_KEYS: JSON.stringify([{ key: "only-x", projects: ["x"] }, PRIVATE_TOKEN]), INGEST_KEYS: PUBLIC_TOKEN, SHARDING: "off" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  job.stdout.on("data", (d) => (output += d));
  job.stderr.on("data", (d) => (output += d));
  const exited = new Promise((resolve) => job.once("exit", (code) => resolve(code)));
  await Promise.race([
    waitFor(async () => output.includes("Ctrl-C stops"), "the main job to start (its output so far is in the failure)", 90_000).catch((e) => {
      throw new Error(`${e.message}\n${output}`);
    }),
    exited.then((code) => {
      throw new Error(`the main job exited with ${code}:\n${output}`);
    }),
  ]);
  assert.match(output, /no sample logs loaded/);
  assert.match(output, new RegExp(`query key:  ${PRIVATE_TOKEN}\n`));

  // Reachable on an address other than loopback, where the machine has one;
  // on one with loopback only, the kernel's socket table says where it listens.
  const external = Object.values(networkInterfaces())
    .flat()
    .find((a) => a && a.family === "IPv4" && !a.internal)?.address;
  for (const host of ["127.0.0.1", ...(external ? [external] : [])]) {
    const res = await fetch(`http://${host}:${port}/health`);
    assert.deepEqual([res.status, await res.json()], [200, { status: "ok" }], host);
  }
  if (!external) assert.ok(listensOnEveryInterface(port), `port ${port} is bound to every interface, not loopback alone`);
  // One object (SHARDING=off) keeps each batch before it answers: nothing waits to be distributed.
  const status = await fetch(`http://127.0.0.1:${port}/api/ingest/status`, { headers: { Authorization: `Bearer ${PRIVATE_TOKEN}` } });
  const zero = { pendingBatches: 0, pendingBytes: 0, outboxDeliveries: 0, outboxEntries: 0, outboxShards: 0, outboxShardNames: [], oldestOutboxMs: 0, refusedDeliveries: 0, refusedEntries: 0 };
  assert.deepEqual([status.status, await status.json()], [200, { sharding: false, total: zero, partitions: [] }]);

  const base = `http://127.0.0.1:${port}`;
  const batch = [{ appname: "supabase-kong", event_message: "GET /rest/v1/todos", metadata: { request: { method: "GET", path: "/rest/v1/todos" } }, project: "default", timestamp: new Date().toISOString() }];
  const res = await fetch(`${base}/api/logs?source_name=cloudflare.logs.prod`, {
    method: "POST",
    headers: { "x-api-key": PUBLIC_TOKEN, "Content-Type": "application/json" },
    body: JSON.stringify(batch),
  });
  assert.equal(res.status, 200);
  assert.equal((await res.json()).message, "Logged!");
  assert.equal(res.headers.get("X-Objects"), null, "SHARDING=off from the environment: no ingest partition");
  const rows = await waitFor(async () => {
    const answer = await fetch(`${base}/api/endpoints/query/logs.all?project=default&project_tier=ENTERPRISE`, { headers: { "x-api-key": PRIVATE_TOKEN } });
    const { result } = await answer.json();
    return result.length > 0 && result;
  }, "the batch to be queryable");
  assert.equal(rows[0].event_message, "GET /rest/v1/todos");
  // The ingest token reads nothing, and is told why.
  const refused = await fetch(`${base}/api/endpoints/query/logs.all?project=default`, { headers: { "x-api-key": PUBLIC_TOKEN } });
  assert.equal(refused.status, 403);
  assert.match((await refused.json()).error.message, /this key may ingest but not query logs/);

  // A second main job on the same port (the first still running) ends with one line, not a stack.
  const second = spawnSync(process.execPath, ["www/dev.mjs", "--port", String(port), "--state", path.join(state, "second")], { cwd: ROOT, encoding: "utf8", timeout: 60_000 });
  assert.equal(second.status, 1, second.stdout + second.stderr);
  assert.equal(second.stderr, `error: port ${port} on 127.0.0.1 (the worker) is in use: is an earlier main job still running? Stop it, or choose another port with --port\n`);
});

/** Whether the socket listening on `port` is bound to every address (Linux's /proc/net/tcp and tcp6). */
function listensOnEveryInterface(port) {
  const hex = `:${port.toString(16).toUpperCase().padStart(4, "0")}`;
  for (const table of ["/proc/net/tcp", "/proc/net/tcp6"]) {
    for (const line of readFileSync(table, "utf8").split("\n").slice(1)) {
      const [, local, , state] = line.trim().split(/\s+/);
      // 0A: listening; the address before the port is all zeros for "any".
      if (state === "0A" && local?.endsWith(hex)) return /^0+:/.test(local);
    }
  }
  throw new Error(`no socket listens on port ${port} (/proc/net/tcp, tcp6)`);
}
