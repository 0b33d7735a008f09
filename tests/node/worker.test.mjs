// End-to-end tests of www/worker.js on real workerd (Miniflare's dispatchFetch):
// routes, auth forms, statuses, CORS, caching with a controlled clock, ingestion,
// a restart on the same persistence folder, and recovery from an engine trap.
// Every answer is compared with the npm package run in-process on the same logs.
// The worker shards by project and day (tests/node/sharded.test.mjs covers the
// sharding itself); here the project's data is in one day's shard.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { gzipSync } from "node:zlib";
import { Miniflare } from "miniflare";
import { LogEndpoints } from "log-endpoints";
import { distributed, testWorkerOptions } from "../worker/options.mjs";
import { generate, ndjson, projectRefs } from "../../scripts/generate-logs.mjs";

const NOW = Date.parse("2026-11-20T12:00:00Z");
const QUERY_KEY = "query-key";
const INGEST_KEY = "ingest-key";
const BASE = "http://worker.test";
const [project] = projectRefs();
const RESTRICTED_KEY = "restricted-key";
// API_KEYS as JSON: plain keys and a key restricted to one project.
const API_KEYS = JSON.stringify([QUERY_KEY, "second-key", { key: RESTRICTED_KEY, projects: [projectRefs()[0]] }]);
const bindings = { API_KEYS, INGEST_KEYS: INGEST_KEY, FIXED_NOW_MS: String(NOW), MAX_BODY_BYTES: "1500000" };

const edge = [...generate({ stream: "edge_logs", count: 1500, endMs: NOW, spanMs: 6 * 3600e3 })];
const fns = [...generate({ stream: "function_edge_logs", count: 1500, endMs: NOW, spanMs: 6 * 3600e3 })];
const reference = new LogEndpoints({ apiKeys: [QUERY_KEY], now: NOW });
const ids = Object.fromEntries(reference.endpoints().map((e) => [e.name, e.id]));

const QUERIES = [
  ["functions.invocation-stats", { project, interval: "1hr" }],
  ["functions.invocation-stats", { project, interval: "1day", function_id: fns[0].metadata[0].function_id }],
  ["logs.all", { project, project_tier: "PRO" }],
  ["logs.all", { project, project_tier: "FREE", iso_timestamp_start: "2026-11-20T10:00:00Z", iso_timestamp_end: "2026-11-20T11:00:00Z" }],
  ["usage.api-counts", { project, interval: "hourly" }],
  ["usage.api-counts", { project: `^https://${project}\\.`, interval: "daily" }],
];

let dir;
let mf;

async function start(overrides = {}) {
  mf = new Miniflare(testWorkerOptions({ persistDir: dir, bindings: { ...bindings, ...overrides } }));
  await mf.ready;
}

function get(name, params, { key = QUERY_KEY, headers = {} } = {}) {
  const query = new URLSearchParams(params).toString();
  return mf.dispatchFetch(`${BASE}/api/endpoints/query/${name}?${query}`, { headers: key ? { "X-API-KEY": key, ...headers } : headers });
}

function post(stream, body, headers = {}) {
  return mf.dispatchFetch(`${BASE}/api/logs/${stream}`, { method: "POST", body, headers: { "X-API-KEY": INGEST_KEY, ...headers } });
}

async function expectError(response, status, code) {
  assert.equal(response.status, status);
  const body = await response.json();
  assert.equal(body.error.code, code, JSON.stringify(body));
  assert.equal(typeof body.error.message, "string");
  assert.doesNotMatch(body.error.message, /\bat .*\.js:\d+/, "no stack traces");
  return body.error.message;
}

before(async () => {
  dir = mkdtempSync(path.join(tmpdir(), "log-endpoints-worker-"));
  await start();
  // NDJSON, a JSON array and a gzipped body; the same data goes to the reference.
  const half = edge.length / 2;
  let res = await post("edge_logs", ndjson(edge.slice(0, half)), { "Content-Type": "application/x-ndjson" });
  assert.deepEqual(await res.json(), { accepted: half, rejected: [], rejectedTotal: 0 });
  res = await post("cloudflare.logs.prod", JSON.stringify(edge.slice(half)), { "Content-Type": "application/json" });
  assert.equal((await res.json()).accepted, edge.length - half);
  res = await post("function_edge_logs", gzipSync(ndjson(fns)), { "Content-Encoding": "gzip" });
  assert.equal((await res.json()).accepted, fns.length);
  reference.ingest("edge_logs", edge);
  reference.ingest("function_edge_logs", fns);
  // Acknowledged means kept by an ingest partition; queryable once distributed.
  await distributed(mf);
});

after(async () => {
  await mf?.dispose();
  rmSync(dir, { recursive: true, force: true });
});

test("every endpoint, by name and by UUID, answers as the library does", async () => {
  for (const [name, params] of QUERIES) {
    const expected = reference.query(name, params, QUERY_KEY);
    for (const path of [name, ids[name]]) {
      const res = await get(path, params);
      assert.equal(res.status, 200, `${path} ${JSON.stringify(params)}`);
      assert.match(res.headers.get("Content-Type"), /^application\/json/);
      assert.deepEqual(await res.json(), expected, `${path} ${JSON.stringify(params)}`);
    }
  }
  const rows = (await (await get("logs.all", { project, project_tier: "PRO" })).json()).result;
  assert.equal(rows.length, 100, "the sample has more than 100 entries of the project");
});

test("POST with a JSON object of parameters", async () => {
  const [name, params] = QUERIES[4];
  const res = await mf.dispatchFetch(`${BASE}/api/endpoints/query/${name}`, {
    method: "POST",
    headers: { "X-API-KEY": QUERY_KEY, "Content-Type": "application/json; charset=utf-8" },
    body: JSON.stringify(params),
  });
  assert.equal(res.status, 200);
  assert.deepEqual(await res.json(), reference.query(name, params, QUERY_KEY));
  const bad = await mf.dispatchFetch(`${BASE}/api/endpoints/query/${name}`, { method: "POST", headers: { "X-API-KEY": QUERY_KEY }, body: "[1]" });
  await expectError(bad, 400, "invalid_parameter");
  // Bytes that are not UTF-8 are named, not read with replacement characters.
  const latin1 = new Uint8Array([...new TextEncoder().encode('{"project":"caf'), 0xe9, ...new TextEncoder().encode('"}')]);
  const notText = await mf.dispatchFetch(`${BASE}/api/endpoints/query/${name}`, { method: "POST", headers: { "X-API-KEY": QUERY_KEY }, body: latin1 });
  assert.match(await expectError(notText, 400, "invalid_parameter"), /not UTF-8/);
});

test("each key form, and 401 before anything else", async () => {
  const params = { project, project_tier: "FREE" };
  const query = new URLSearchParams(params).toString();
  const forms = [
    [`${BASE}/api/endpoints/query/logs.all?${query}`, { "X-API-KEY": "second-key" }],
    [`${BASE}/api/endpoints/query/logs.all?${query}`, { Authorization: `Bearer ${QUERY_KEY}` }],
    [`${BASE}/api/endpoints/query/logs.all?${query}&api_key=${QUERY_KEY}`, {}],
  ];
  for (const [url, headers] of forms) {
    const res = await mf.dispatchFetch(url, { headers });
    assert.equal(res.status, 200, JSON.stringify(headers));
  }
  await expectError(await get("logs.all", params, { key: null }), 401, "missing_api_key");
  const message = await expectError(await get("logs.all", params, { key: "wrong-key" }), 401, "invalid_api_key");
  assert.doesNotMatch(message, /wrong-key/);
  await expectError(await get("no.such.endpoint", params, { key: "wrong-key" }), 401, "invalid_api_key");
  await expectError(await get("no.such.endpoint", params), 404, "endpoint_not_found");
});

test("every error status, named", async () => {
  let message = await expectError(await get("logs.all", { project_tier: "FREE" }), 400, "missing_parameter");
  assert.match(message, /project/);
  message = await expectError(await get("usage.api-counts", { project, interval: "weekly" }), 400, "invalid_parameter");
  assert.match(message, /interval/);
  const put = await mf.dispatchFetch(`${BASE}/api/endpoints/query/logs.all`, { method: "PUT", headers: { "X-API-KEY": QUERY_KEY } });
  await expectError(put, 405, "method_not_allowed");
  assert.equal(put.headers.get("Allow"), "GET, POST, OPTIONS");
  await expectError(await mf.dispatchFetch(`${BASE}/api/logs/edge_logs`), 405, "method_not_allowed");
  await expectError(await mf.dispatchFetch(`${BASE}/nothing/here`), 404, "not_found");
  await expectError(await post("edge_logs", "x".repeat(1_500_001)), 413, "payload_too_large");
  await expectError(await post("edge_logs", gzipSync("\n".repeat(1_600_000)), { "Content-Encoding": "gzip" }), 413, "payload_too_large");
  await expectError(await post("edge_logs", "[]", { "Content-Encoding": "zstd" }), 415, "unsupported_encoding");
  // A "never" date is refused at the front: kept, its delivery could not be reported to JS, and its partition would retry it for good.
  message = await expectError(await post("edge_logs", JSON.stringify([{ id: "far", timestamp: "9999-12-31", project }])), 422, "nothing_kept");
  assert.match(message, /after 2255-06-05/);
  await expectError(await post("postgres_logs", "[]"), 400, "unknown_stream");
  // Logflare's route: the source in X-Collection reaches the core (a batch of no entries, not a missing source).
  const logflare = (headers) => mf.dispatchFetch(`${BASE}/logs`, { method: "POST", body: "[]", headers: { "X-API-KEY": INGEST_KEY, ...headers } });
  await expectError(await logflare({}), 400, "missing_parameter");
  await expectError(await logflare({ "X-Collection": "gotrue.logs.prod" }), 400, "unreadable_batch");
  await expectError(await post("edge_logs", "[{\"id\": 1,"), 400, "unreadable_batch");
  await expectError(await post("edge_logs", "[]", { "X-API-KEY": QUERY_KEY }), 403, "forbidden");
  await expectError(await post("edge_logs", "[]", { "X-API-KEY": "nope" }), 401, "invalid_api_key");
});

test("CORS preflight and headers", async () => {
  const res = await mf.dispatchFetch(`${BASE}/api/endpoints/query/logs.all`, {
    method: "OPTIONS",
    headers: { Origin: "https://studio.example", "Access-Control-Request-Method": "GET", "Access-Control-Request-Headers": "x-api-key" },
  });
  assert.equal(res.status, 204);
  assert.equal(res.headers.get("Access-Control-Allow-Origin"), "*");
  assert.match(res.headers.get("Access-Control-Allow-Headers"), /X-API-KEY/i);
  assert.match(res.headers.get("Access-Control-Allow-Methods"), /GET/);
  const get1 = await get("logs.all", { project, project_tier: "FREE" });
  assert.equal(get1.headers.get("Access-Control-Allow-Origin"), "*");
  assert.match(get1.headers.get("Access-Control-Expose-Headers"), /X-Cache/);
  // A 405's Allow is readable too.
  assert.match(get1.headers.get("Access-Control-Expose-Headers"), /\bAllow\b/);
});

test("partly bad batches keep the good entries", async () => {
  const good = { id: "partly-good", timestamp: NOW * 1000 - 1, project: "partial", event_message: "ok" };
  const body = [JSON.stringify(good), "{not json", JSON.stringify({ id: "no-timestamp" }), "7"].join("\n");
  const res = await post("edge_logs", body);
  assert.equal(res.status, 200);
  const report = await res.json();
  assert.equal(report.accepted, 1);
  assert.deepEqual(report.rejected.map((r) => r.index), [1, 2, 3]);
  assert.match(report.rejected[1].reason, /timestamp/);
  await distributed(mf);
  const rows = (await (await get("logs.all", { project: "partial", project_tier: "FREE" })).json()).result;
  assert.deepEqual(rows.map((r) => r.id), ["partly-good"]);
});

test("cache: MISS, HIT, expiry after 900 s, warming by the shard's maintenance; logs.all never cached", async () => {
  const params = { project, interval: "15min" };
  const at = (ms) => ({ headers: { "X-Test-Now-Ms": String(ms) } });
  let res = await get("functions.invocation-stats", params, at(NOW));
  assert.equal(res.headers.get("X-Cache"), "MISS");
  assert.equal(res.headers.get("Cache-Control"), "max-age=900");
  const first = await res.json();
  res = await get("functions.invocation-stats", params, at(NOW + 100e3));
  assert.equal(res.headers.get("X-Cache"), "HIT");
  assert.equal(res.headers.get("Cache-Control"), "max-age=800");
  assert.deepEqual(await res.json(), first);
  res = await get("functions.invocation-stats", params, at(NOW + 900e3));
  assert.equal(res.headers.get("X-Cache"), "MISS", "expired after 900 s");
  await res.arrayBuffer();

  // The shard's maintenance (its alarm) re-runs queries computed at least 300 s ago.
  await maintain({ "X-Now-Ms": String(NOW + 1200e3) });
  res = await get("functions.invocation-stats", params, at(NOW + 1201e3));
  assert.equal(res.headers.get("X-Cache"), "HIT");
  assert.equal(res.headers.get("Cache-Control"), "max-age=899", "fresh from warming at +1200 s");
  await res.arrayBuffer();

  res = await get("logs.all", { project, project_tier: "FREE" });
  assert.equal(res.headers.get("X-Cache"), null);
  assert.equal(res.headers.get("Cache-Control"), "no-store");
  await res.arrayBuffer();
});

test("an engine trap restarts the instance from storage; the next request is served", async () => {
  const [name, params] = QUERIES[2];
  const trapped = await get(name, params, { headers: { "X-Test-Trap": "1" } });
  const message = await expectError(trapped, 500, "internal_error");
  assert.match(message, /restarted/);
  const res = await get(name, params);
  assert.equal(res.status, 200);
  assert.deepEqual(await res.json(), reference.query(name, params, QUERY_KEY));
});

test("after a restart of the runtime, the same queries answer the same", async () => {
  const before = [];
  for (const [name, params] of QUERIES) before.push(await (await get(name, params)).json());
  await mf.dispose();
  await start();
  for (const [i, [name, params]] of QUERIES.entries()) {
    const res = await get(name, params);
    assert.equal(res.status, 200);
    assert.deepEqual(await res.json(), before[i], `${name} after restart`);
  }
});

/** The shard holding the project's entries of NOW's day. */
const SHARD = LogEndpoints.shardName(project, new Date(NOW).toISOString().slice(0, 10));

/** What the shard's alarm does, asked directly so its answer can be read. */
async function maintain(headers = {}) {
  const namespace = await mf.getDurableObjectNamespace("SHARD");
  const store = namespace.get(namespace.idFromName(SHARD));
  return store.fetch("https://shard.internal/maintain", { method: "POST", headers: { "X-Now-Ms": String(NOW), ...headers } });
}

async function answers() {
  const out = [];
  for (const [name, params] of QUERIES) out.push(await (await get(name, params)).json());
  return out;
}

// What the store answers after waking from a snapshot and the batches after it;
// a full replay of the stored batches must answer the same.
let wokeFromSnapshot;

test("a restart wakes from the stored snapshot and replays only the batches after it", async () => {
  // The cron trigger writes a snapshot when batches came since the last one.
  const { snapshot } = await (await maintain()).json();
  assert.ok(snapshot.lastBatchId > 0, JSON.stringify(snapshot));
  // A batch after the snapshot: the project's newest entries, replayed on waking.
  const ours = edge.filter((e) => e.project === project).slice(0, 5);
  const later = ours.map((e, i) => ({ ...e, id: `after-snapshot-${i}`, timestamp: NOW * 1000 - (i + 1) }));
  assert.equal((await (await post("edge_logs", ndjson(later))).json()).accepted, later.length);
  reference.ingest("edge_logs", later);
  await distributed(mf);
  await mf.dispose();
  await start();
  wokeFromSnapshot = await answers();
  const newest = wokeFromSnapshot[2].result.slice(0, 5).map((row) => row.id);
  assert.deepEqual(newest, later.map((e) => e.id));
  const { woke } = await (await maintain()).json();
  assert.equal(woke.fromSnapshot, true);
  assert.equal(woke.replayedBatches, 1);
});

test("a corrupted snapshot is detected, logged and rebuilt from the stored batches, with the same answers", async () => {
  await maintain(); // a snapshot of everything
  assert.deepEqual(await (await maintain({ "X-Test-Corrupt-Snapshot": "1" })).json(), { corrupted: true });
  await mf.dispose();
  await start();
  assert.deepEqual(await answers(), wokeFromSnapshot);
  const status = await (await maintain()).json();
  assert.equal(status.woke.fromSnapshot, false);
  assert.match(status.woke.snapshotRefused, /checksum/);
  // Every stored delivery replayed: the first batches' and the one after the snapshot.
  assert.ok(status.woke.replayedBatches >= 2, JSON.stringify(status.woke));
  // Written by this maintenance, or by the wake itself after a replay of a
  // sixteenth of the budget or more (snapshotDueAfterReplay).
  assert.ok(status.snapshot.written || status.woke.snapshot?.written, "a fresh snapshot replaces the refused one");
});

test("a lowered MAX_BODY_BYTES does not keep stored batches from loading", async () => {
  const before = await (await get(...QUERIES[2])).json();
  await mf.dispose();
  await start({ MAX_BODY_BYTES: "1000" });
  const res = await get(...QUERIES[2]);
  assert.equal(res.status, 200);
  assert.deepEqual(await res.json(), before);
  await expectError(await post("edge_logs", "x".repeat(1001)), 413, "payload_too_large");
});

test("keys in the settings that cannot be used are the operator's to fix: 503, which a shipper retries", async () => {
  await mf.dispose();
  // A misspelt restriction would leave the key free to read every project.
  await start({ API_KEYS: JSON.stringify([{ key: QUERY_KEY, project: [project] }]) });
  try {
    assert.match(await expectError(await get(...QUERIES[2]), 503, "unavailable"), /unknown field of a key in apiKeys `project`/);
    await expectError(await post("edge_logs", "x"), 503, "unavailable");
  } finally {
    await mf.dispose();
    await start();
  }
});

// ---- Supabase's Management API route and Studio's own requests -------------------------------

function management(name, params, { project: ref = project, version = "v1", key = QUERY_KEY } = {}) {
  const query = new URLSearchParams(params).toString();
  return mf.dispatchFetch(`${BASE}/${version}/projects/${ref}/analytics/endpoints/${name}?${query}`, {
    headers: key ? { Authorization: `Bearer ${key}` } : {},
  });
}

test("each Management API route answers as the same query through /api/endpoints/query", async () => {
  const fn = fns[0].metadata[0].function_id;
  const pairs = [
    ...["15min", "30min", "1hr", "3hr", "1day", "3day", "7day"].map((interval) => [
      ["usage.api-counts", { interval }],
      ["usage.api-counts", { project, interval }],
    ]),
    [["usage.api-counts", {}], ["usage.api-counts", { project, interval: "1day" }]],
    [["usage.api-requests-count", {}], ["usage.api-requests-count", { project }]],
    ...["15min", "1hr", "3hr", "1day"].map((interval) => [
      ["functions.combined-stats", { function_id: fn, interval }],
      ["functions.combined-stats", { project, function_id: fn, interval }],
    ]),
    [
      ["logs.all", { iso_timestamp_start: "2026-11-20T08:00:00Z", iso_timestamp_end: "2026-11-20T11:30:00Z" }],
      ["logs.all", { project, project_tier: "ENTERPRISE", iso_timestamp_start: "2026-11-20T08:00:00Z", iso_timestamp_end: "2026-11-20T11:30:00Z" }],
    ],
  ];
  let nonEmpty = 0;
  for (const [[name, params], [sameName, sameParams]] of pairs) {
    const expected = await (await get(sameName, sameParams)).json();
    for (const version of ["v1", "v0"]) {
      const res = await management(name, params, { version });
      assert.equal(res.status, 200, `${version} ${name} ${JSON.stringify(params)}`);
      assert.deepEqual(await res.json(), expected, `${version} ${name} ${JSON.stringify(params)}`);
    }
    if (expected.result.length > 0) nonEmpty++;
  }
  assert.ok(nonEmpty >= pairs.length - 2, `most answers have rows (${nonEmpty} of ${pairs.length})`);
  const count = await (await management("usage.api-requests-count", {})).json();
  assert.ok(count.result[0].count > 0);
  // Keys: each form, and a project-restricted key with another project in the path.
  const own = await management("usage.api-counts", { interval: "1hr" }, { key: RESTRICTED_KEY });
  assert.equal(own.status, 200);
  const other = projectRefs()[1];
  await expectError(await management("usage.api-counts", { interval: "1hr" }, { project: other, key: RESTRICTED_KEY }), 403, "forbidden");
  await expectError(await management("logs.all", {}, { project: other, key: RESTRICTED_KEY }), 403, "forbidden");
  await expectError(await management("usage.api-counts", {}, { key: null }), 401, "missing_api_key");
  await expectError(await management("functions.invocation-stats", { interval: "1hr" }), 404, "endpoint_not_found");
  await expectError(await management("usage.api-counts", { interval: "weekly" }), 400, "invalid_parameter");
  const long = { iso_timestamp_start: "2026-11-19T00:00:00Z", iso_timestamp_end: "2026-11-20T11:00:00Z" };
  assert.match(await expectError(await management("logs.all", long), 400, "invalid_parameter"), /24 hours/);
});

test("Studio's requests, read the way Studio reads them", async () => {
  // Studio (self-hosted, LOGFLARE_URL pointing here) sends x-api-key and `project`.
  const studio = (name, params) => {
    const query = new URLSearchParams({ project, ...params }).toString();
    return mf.dispatchFetch(`${BASE}/api/endpoints/query/${name}?${query}`, { headers: { "x-api-key": QUERY_KEY, Accept: "application/json" } });
  };
  // Logs Explorer: `sql` and a time range on every call, no project_tier.
  const range = { iso_timestamp_start: "2026-11-20T06:00:00.000Z", iso_timestamp_end: "2026-11-20T12:00:00.000Z" };
  let res = await studio("logs.all", { sql: "select id, timestamp, event_message from edge_logs limit 100", ...range });
  assert.equal(res.status, 200);
  assert.match(res.headers.get("X-Endpoint-Warning"), /`sql` ignored: query sandboxing is disabled/);
  let body = await res.json();
  assert.ok(Array.isArray(body.result) && body.result.length > 0 && !body.error);
  for (const row of body.result) assert.ok(Number.isInteger(row.timestamp) && String(row.timestamp).length === 16, "µs timestamps");
  assert.deepEqual(body, reference.query("logs.all", { project, project_tier: "FREE", ...range }, QUERY_KEY));
  // A warning that names what the caller sent is still a valid header: a
  // line break in a parameter's name is percent-encoded, and the answer stands.
  res = await mf.dispatchFetch(`${BASE}/api/endpoints/query/logs.all?project=${project}&a%0D%0Ab%C3%BC=1`, { headers: { "x-api-key": QUERY_KEY } });
  assert.equal(res.status, 200, await res.clone().text());
  assert.equal(res.headers.get("X-Endpoint-Warning"), "unknown parameter `a%0D%0Ab%C3%BC` ignored (logs.all takes project, project_tier, iso_timestamp_start, iso_timestamp_end)");
  assert.ok((await res.json()).result.length > 0);
  // The home page's usage chart: 1hr, 1day and 7day; timestamps as UTC datetimes.
  for (const interval of ["1hr", "1day", "7day"]) {
    res = await studio("usage.api-counts", { interval });
    assert.equal(res.status, 200, interval);
    body = await res.json();
    assert.ok(body.result.length > 0, interval);
    for (const row of body.result) assert.match(row.timestamp, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d$/);
    assert.equal(res.headers.get("X-Endpoint-Warning"), null);
  }
  // Older Studio's name for invocation statistics.
  const fn = fns[0].metadata[0].function_id;
  res = await studio("functions.inv-stats", { interval: "1day", function_id: fn });
  body = await res.json();
  assert.deepEqual(body, reference.query("functions.invocation-stats", { project, interval: "1day", function_id: fn }, QUERY_KEY));
  assert.ok(body.result.length > 0 && String(body.result[0].timestamp).length === 16);
  // Errors: Studio shows `error.message`.
  res = await studio("usage.api-counts", { interval: "fortnightly" });
  assert.equal(res.status, 400);
  assert.match((await res.json()).error.message, /`interval`: `fortnightly` is not one of/);
});
