// Self-hosted Supabase shipping its logs here unchanged, on real workerd
// (Miniflare), sharded and as one object: an hour of a stack's container
// logs put through vector.yml's transforms (tests/node/vector.mjs) and
// posted as its http sinks post them (`x-api-key`, the older `api_key` in the
// query, gzip), then read the way Studio and the Management API read them.
// Every batch is acknowledged, every Kong event is in logs.all once with its
// own id, every other source is kept under its name, a batch sent again
// (also after a restart) is kept once, and bad input gets a clear answer.
// The answers are those of the npm package fed the same requests in-process.
import { test, describe, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { createHash } from "node:crypto";
import { gzipSync } from "node:zlib";
import { Miniflare } from "miniflare";
import { LogEndpoints } from "log-endpoints";
import { distributed, testWorkerOptions } from "../worker/options.mjs";
import { SINKS, sinkRequest, vectorShipments } from "./vector.mjs";

const NOW = Date.parse("2026-11-20T12:30:00Z");
const DAY = new Date(NOW).toISOString().slice(0, 10);
const BASE = "http://analytics:4000";
// LOGFLARE_PUBLIC_ACCESS_TOKEN ships logs; LOGFLARE_PRIVATE_ACCESS_TOKEN is Studio's.
const PUBLIC_TOKEN = "public-token";
const PRIVATE_TOKEN = "private-token";
const MAX_BODY_BYTES = 200_000;
const bindings = { API_KEYS: PRIVATE_TOKEN, INGEST_KEYS: PUBLIC_TOKEN, FIXED_NOW_MS: String(NOW), MAX_BODY_BYTES: String(MAX_BODY_BYTES) };

const shipments = vectorShipments({ endMs: NOW - 60e3, seed: 5 });
const kong = shipments.find((s) => s.source === "cloudflare.logs.prod");
const AREAS = { rest: "/rest", storage: "/storage", auth: "/auth", realtime: "/realtime" };

/** The requests of every sink, in order; every third batch gzipped, the functions sink with the older `api_key` in the query. */
function requests() {
  const out = [];
  for (const { source, batches } of shipments) {
    batches.forEach((batch, i) => {
      const { path: sinkPath, headers } = sinkRequest(source, PUBLIC_TOKEN);
      let url = sinkPath;
      const sent = { ...headers };
      if (source === "deno-relay-logs") {
        url += `&api_key=${PUBLIC_TOKEN}`;
        delete sent["x-api-key"];
      }
      const gzip = i % 3 === 2;
      if (gzip) sent["Content-Encoding"] = "gzip";
      out.push({ source, url, headers: sent, body: gzip ? gzipSync(batch) : batch, decoded: batch });
    });
  }
  return out;
}

/** Studio's logs.all for `default` in ten-minute windows (each under the 100-row cap). */
async function studioLogs(fetchOne) {
  const rows = [];
  for (let start = NOW - 70 * 60e3; start < NOW; start += 10 * 60e3) {
    const params = {
      project: "default",
      sql: "select id, timestamp, event_message, metadata from edge_logs",
      iso_timestamp_start: new Date(start).toISOString(),
      iso_timestamp_end: new Date(start + 10 * 60e3).toISOString(),
    };
    const res = await fetchOne(`/api/endpoints/query/logs.all?${new URLSearchParams(params)}`);
    assert.equal(res.status, 200);
    const { result } = await res.json();
    assert.ok(result.length < 100, "a window under the row cap");
    rows.push(...result);
  }
  return rows;
}

for (const sharding of ["on", "off"]) {
  describe(`self-hosted Supabase's Vector, SHARDING=${sharding}`, () => {
    let dir;
    let mf;
    const reference = new LogEndpoints({ apiKeys: [PRIVATE_TOKEN], ingestKeys: [PUBLIC_TOKEN], now: NOW });

    async function start() {
      mf = new Miniflare(testWorkerOptions({ persistDir: dir, bindings: { ...bindings, SHARDING: sharding } }));
      await mf.ready;
    }
    const call = (url, init = {}) => mf.dispatchFetch(`${BASE}${url}`, init);
    const studio = (url) => call(url, { headers: { "x-api-key": PRIVATE_TOKEN } });

    before(async () => {
      dir = mkdtempSync(path.join(tmpdir(), `log-endpoints-self-hosted-${sharding}-`));
      await start();
      for (const request of requests()) {
        const res = await call(request.url, { method: "POST", headers: request.headers, body: request.body });
        const body = await res.json();
        assert.equal(res.status, 200, `${request.source}: ${JSON.stringify(body)}`);
        assert.equal(body.message, "Logged!");
        assert.equal(body.accepted, JSON.parse(request.decoded).length, request.source);
        // The same request in-process: the reference store.
        const parts = { method: "POST", path: "/api/logs", query: new URL(request.url, BASE).search, apiKey: PUBLIC_TOKEN, contentType: "application/json" };
        reference.ingestRecord(reference.prepareIngest(parts, request.decoded).record);
      }
      await distributed(mf);
    });

    after(async () => {
      await mf?.dispose();
      if (dir) rmSync(dir, { recursive: true, force: true });
    });

    test("GET /health answers 200 with no key, and reveals nothing", async () => {
      const res = await call("/health");
      assert.equal(res.status, 200);
      assert.deepEqual(await res.json(), { status: "ok" });
    });

    test("Studio's logs.all returns every Kong event once, each with its own id", async () => {
      const rows = await studioLogs(studio);
      assert.equal(rows.length, kong.events.length);
      assert.equal(new Set(rows.map((r) => r.id)).size, rows.length, "distinct ids");
      const key = (e) => `${e.event_message}|${JSON.stringify(e.metadata.request.path)}`;
      assert.deepEqual(rows.map((r) => key({ event_message: r.event_message, metadata: JSON.parse(JSON.stringify(r.metadata)) })).sort(), kong.events.map(key).sort());
      assert.deepEqual(rows, await studioLogs(async (url) => new Response(JSON.stringify(reference.query("logs.all", Object.fromEntries(new URL(url, BASE).searchParams), PRIVATE_TOKEN)))));
    });

    test("the Management API's usage.api-counts for `default` counts the Kong events by path", async () => {
      const res = await studio("/v1/projects/default/analytics/endpoints/usage.api-counts?interval=1day");
      assert.equal(res.status, 200);
      const { result } = await res.json();
      for (const [area, prefix] of Object.entries(AREAS)) {
        const counted = result.reduce((sum, bucket) => sum + bucket[`total_${area}_requests`], 0);
        const expected = kong.events.filter((e) => e.metadata.request.path.includes(prefix)).length;
        assert.equal(counted, expected, area);
      }
      // Logflare's own route matches `project` against request URLs, which Kong's events lack.
      const byUrl = await (await studio("/api/endpoints/query/usage.api-counts?project=default&interval=1day")).json();
      assert.deepEqual(byUrl, { result: [] });
    });

    test("every other source is kept under its name and counted", async () => {
      const expected = Object.fromEntries(
        shipments.filter((s) => !["cloudflare.logs.prod", "deno-relay-logs"].includes(s.source)).map((s) => [s.source, s.events.length]),
      );
      assert.deepEqual(reference.stats().otherSources, expected);
      // Where they are kept: the one object, or the shards of `default` and of no project.
      const names = sharding === "off" ? ["logs"] : [...new Set([LogEndpoints.shardName("default", DAY), LogEndpoints.shardName(null, DAY)])];
      const shards = await mf.getDurableObjectNamespace("SHARD");
      const kept = {};
      for (const name of names) {
        const res = await shards.get(shards.idFromName(name)).fetch("https://shard.internal/maintain", { method: "POST", headers: { "X-Now-Ms": String(NOW) } });
        for (const [source, n] of Object.entries((await res.json()).otherSources)) kept[source] = (kept[source] ?? 0) + n;
      }
      assert.deepEqual(kept, expected);
    });

    test("a batch sent again, also after a restart, is acknowledged and kept once", async () => {
      const [again] = requests().filter((r) => r.source === "cloudflare.logs.prod");
      const send = async () => {
        const res = await call(again.url, { method: "POST", headers: again.headers, body: again.body });
        assert.equal(res.status, 200);
        return res.headers.get("X-Duplicate");
      };
      assert.equal(await send(), "true");
      await mf.dispose();
      await start();
      assert.equal(await send(), "true", "remembered across a restart");
      await distributed(mf);
      assert.equal((await studioLogs(studio)).length, kong.events.length);
    });

    test("bad input gets a clear answer: not JSON 400, a wrong key 401, too large 413, an unknown path 404", async () => {
      const { path: sinkPath, headers } = sinkRequest("gotrue.logs.prod", PUBLIC_TOKEN);
      const post = (url, init) => call(url, { method: "POST", ...init });
      const expectError = async (res, status, code, pattern) => {
        const body = await res.json();
        assert.equal(res.status, status, JSON.stringify(body));
        assert.equal(body.error.code, code);
        if (pattern) assert.match(body.error.message, pattern);
      };
      await expectError(await post(sinkPath, { headers, body: "this is not json" }), 400, "unreadable_batch", /the body is not JSON/);
      await expectError(await post(sinkPath, { headers: { ...headers, "x-api-key": "wrong" }, body: "[]" }), 401, "invalid_api_key");
      await expectError(await post(sinkPath, { headers, body: JSON.stringify([{ msg: "x".repeat(MAX_BODY_BYTES) }]) }), 413, "payload_too_large");
      await expectError(await post("/api/logz?source_name=gotrue.logs.prod", { headers, body: "[]" }), 404, "not_found");
      await expectError(await post(sinkPath, { headers, body: "[1, 2]" }), 422, "nothing_kept", /none of the batch's 2 entries/);
      await expectError(await post("/api/logs", { headers, body: "[{}]" }), 400, "missing_parameter", /source_name/);
    });
  });
}

test("a flood of database logs past their share of a shard goes on to later shards of the project-day, and never takes the Kong logs of the same rounds with it", async () => {
  const dir = mkdtempSync(path.join(tmpdir(), "log-endpoints-self-hosted-flood-"));
  const mf = new Miniflare(testWorkerOptions({ persistDir: dir, bindings: { ...bindings, SHARDING: "on", MAX_STORE_BYTES: "400000" } }));
  try {
    await mf.ready;
    const post = (url, headers, body) => mf.dispatchFetch(`${BASE}${url}`, { method: "POST", headers, body });
    const kongSink = sinkRequest("cloudflare.logs.prod", PUBLIC_TOKEN);
    const dbSink = sinkRequest("postgres.logs", PUBLIC_TOKEN);
    let flooded = 0;
    for (const [i, batch] of kong.batches.entries()) {
      // Hex noise, which deflate shortens only by half. Sealed text goes to
      // the object's SQLite, so the flood fills the memory by its rows.
      const noise = (n) => Array.from({ length: 4 }, (_, k) => createHash("sha256").update(`${n}/${k}`).digest("hex")).join("");
      const floods = Array.from({ length: 4 }, (_, f) => Array.from({ length: 400 }, (_, j) => {
        const n = (i * 4 + f) * 400 + j;
        return { project: "default", timestamp: new Date(NOW - 3_600_000 + n).toISOString(), event_message: `checkpoint complete: wrote ${n} buffers (0.1%); ${noise(n)}` };
      }));
      flooded += 4 * 400;
      const posts = [[kongSink.path, kongSink.headers, batch], ...floods.map((flood) => [dbSink.path, dbSink.headers, JSON.stringify(flood)])];
      for (const [url, headers, body] of posts) {
        const res = await post(url, headers, body);
        assert.equal(res.status, 200, await res.text());
      }
    }
    const statuses = await distributed(mf);
    assert.equal(statuses.reduce((n, [, s]) => n + s.refusedEntries, 0), 0, "no entry was refused");
    const shards = await mf.getDurableObjectNamespace("SHARD");
    let kept = 0;
    let splits = 0;
    for (const name of [LogEndpoints.shardName("default", DAY), ...Array.from({ length: 40 }, (_, n) => `${DAY}/p/default/${n + 1}`)]) {
      const res = await shards.get(shards.idFromName(name)).fetch("https://shard.internal/maintain", { method: "POST", headers: { "X-Now-Ms": String(NOW) } });
      const held = (await res.json()).otherSources?.["postgres.logs"] ?? 0;
      kept += held;
      splits += Number(held > 0 && name.includes("/p/"));
    }
    assert.equal(kept, flooded, "every database log is kept once");
    assert.ok(splits >= 2, `the flood went on to later shards (${splits} splits hold some)`);
    const rows = await studioLogs((url) => mf.dispatchFetch(`${BASE}${url}`, { headers: { "x-api-key": PRIVATE_TOKEN } }));
    assert.equal(rows.length, kong.events.length, "every Kong event is kept");
  } finally {
    await mf.dispose();
    rmSync(dir, { recursive: true, force: true });
  }
});

test("every sink of vector.yml is covered", () => {
  assert.deepEqual(shipments.map((s) => s.source), SINKS.map((s) => s.source));
  for (const s of shipments) assert.ok(s.events.length > 50 && s.batches.length > 2, s.source);
});
