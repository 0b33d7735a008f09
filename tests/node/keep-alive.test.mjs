// A log shipper's connection: large batches posted one after another over one
// keep-alive connection, with answers that come before the body was needed
// (a wrong key, a body over the limit) among them. The worker answers every
// one and the connection is never reset: a body the answer did not need is
// read to its end first (workerd drops a connection whose request body was
// left unread). Served on loopback by workerd, posted by Node's fetch and by
// node:http with one socket.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import http from "node:http";
import { Miniflare } from "miniflare";
import { distributed, workerOptions } from "../../www/miniflare-options.mjs";
import { generate, ndjson, tenants } from "../../scripts/generate-logs.mjs";

const NOW = Date.parse("2026-11-20T12:00:00Z");
const INGEST_KEY = "keep-alive-ingest";
const tenancy = tenants(2000, undefined, { refs: "mixed" });
let mf;
let base;

before(async () => {
  mf = new Miniflare(workerOptions({ port: 0, bindings: { API_KEYS: "q", INGEST_KEYS: INGEST_KEY, FIXED_NOW_MS: String(NOW), MAX_BODY_BYTES: String(8 << 20) } }));
  base = (await mf.ready).origin;
});

after(async () => {
  await mf?.dispose();
});

/** A mixed batch of about `mib` MiB: entries of many projects. */
function batch(seed, mib) {
  return ndjson(generate({ stream: "edge_logs", count: Math.round(mib * 1700), endMs: NOW, spanMs: 3600e3, tenancy, seed }));
}

test("Node's fetch: 6 MiB batches, a wrong key and an oversized body in a row, none reset", async () => {
  const sends = [
    [batch(1, 6), INGEST_KEY, 200],
    [batch(2, 6), "wrong-key", 401],
    [batch(3, 6), INGEST_KEY, 200],
    [batch(4, 9), INGEST_KEY, 413],
    [batch(5, 6), INGEST_KEY, 200],
    [batch(1, 6), INGEST_KEY, 200],
  ];
  for (const [i, [body, key, status]] of sends.entries()) {
    const res = await fetch(`${base}/api/logs/edge_logs`, { method: "POST", body, headers: { "X-API-KEY": key } });
    assert.equal(res.status, status, `post ${i}: ${await res.clone().text()}`);
    await res.arrayBuffer();
  }
  await distributed(mf, { timeoutMs: 60_000 });
});

test("node:http with one socket: every post after the first reuses it", async () => {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const post = (body, key) =>
    new Promise((resolve, reject) => {
      const req = http.request(`${base}/api/logs/edge_logs`, { method: "POST", agent, headers: { "X-API-KEY": key, "Content-Length": Buffer.byteLength(body) } }, (res) => {
        res.resume();
        res.on("end", () => resolve({ status: res.statusCode, reused: req.reusedSocket }));
      });
      req.on("error", reject);
      req.end(body);
    });
  const answers = [];
  for (const [body, key] of [[batch(6, 2), INGEST_KEY], [batch(7, 2), "wrong-key"], [batch(8, 2), INGEST_KEY], [batch(9, 2), "wrong-key"], [batch(10, 2), INGEST_KEY]]) {
    answers.push(await post(body, key));
  }
  agent.destroy();
  assert.deepEqual(answers.map((a) => a.status), [200, 401, 200, 401, 200]);
  assert.deepEqual(answers.map((a) => a.reused), [false, true, true, true, true], "one connection for all five");
});
