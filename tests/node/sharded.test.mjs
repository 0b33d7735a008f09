// The sharded deployment end to end on real workerd (Miniflare): random data of
// hundreds of projects of very unequal size over several days goes through the
// front worker in mixed batches, is acknowledged once an ingest partition kept
// it and distributed in the background, and every answer (each endpoint, by
// name, by UUID and on the Management API route, with plain and restricted
// keys) is the answer of one in-process LogEndpoints holding every entry.
// Then durability: a restart in the middle of a stream of ingests and of their
// distribution, a shard whose storage write fails (the round is sent again and
// applied once), batches sent twice; and the objects on each request's path.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { Miniflare } from "miniflare";
import { LogEndpoints } from "log-endpoints";
// Not part of the package's entry: the ingest partitions' own bookkeeping, used to build a round by hand.
import { KnownRegistrations } from "../../pkg/log_endpoints.js";
import { distributed, testWorkerOptions } from "../worker/options.mjs";
import { answerDifference } from "../worker/same-answer.mjs";
import { generate, ndjson, rng, tenants } from "../../scripts/generate-logs.mjs";

const NOW = Date.parse("2026-11-20T12:00:00Z");
const BASE = "http://sharded.test";
const QUERY_KEY = "query-key";
const INGEST_KEY = "ingest-key";
// Every other ref is numbered (tenant-2 …), the rest random, as on a
// platform: refs that share most of their characters must still get each
// project's own answers, and a pattern the projects it matches.
const tenancy = tenants(240, 5, { refs: "mixed" });
const [largest, second] = tenancy.refs;
const median = tenancy.refs[61];
const tail = tenancy.refs[231];
// A restricted key configured through the environment (a JSON secret).
const RESTRICTED = { key: "restricted-key", endpoints: ["usage.api-counts", "logs.all"], projects: [largest, tail] };
const API_KEYS = JSON.stringify([QUERY_KEY, RESTRICTED]);
const bindings = { API_KEYS, INGEST_KEYS: INGEST_KEY, FIXED_NOW_MS: String(NOW) };

// Three and a half days of traffic: the busy projects have a shard per day.
const SPAN_MS = 3.5 * 24 * 3600e3;
const edge = [...generate({ stream: "edge_logs", count: 6000, endMs: NOW, spanMs: SPAN_MS, tenancy, seed: 3 })];
const fns = [...generate({ stream: "function_edge_logs", count: 4000, endMs: NOW, spanMs: SPAN_MS, tenancy, seed: 4 })];

const reference = new LogEndpoints({ apiKeys: [QUERY_KEY, RESTRICTED], now: NOW });
const ids = Object.fromEntries(reference.endpoints().map((e) => [e.name, e.id]));

let dir;
let mf;

async function start(dirForPersistence, overrides = {}) {
  const worker = new Miniflare(testWorkerOptions({ persistDir: dirForPersistence, bindings: { ...bindings, ...overrides } }));
  await worker.ready;
  return worker;
}

function post(worker, stream, body, headers = {}) {
  return worker.dispatchFetch(`${BASE}/api/logs/${stream}`, { method: "POST", body, headers: { "X-API-KEY": INGEST_KEY, ...headers } });
}

function get(name, params, key = QUERY_KEY) {
  return mf.dispatchFetch(`${BASE}/api/endpoints/query/${name}?${new URLSearchParams(params)}`, { headers: { "X-API-KEY": key } });
}

/** The ids logs.all shows for `project` through `worker` (FREE tier), sorted. */
async function idsOf(worker, project) {
  const res = await worker.dispatchFetch(`${BASE}/api/endpoints/query/logs.all?project=${project}&project_tier=FREE`, { headers: { "X-API-KEY": QUERY_KEY } });
  return (await res.json()).result.map((r) => r.id).sort();
}

/** What every ingest partition of `worker` answers to `pathname` (a test hook or its status), in partition order. */
async function everyPartition(worker, pathname, init) {
  const partitions = await worker.getDurableObjectNamespace("INGEST");
  return Promise.all(LogEndpoints.ingestNames().map(async (name) => (await partitions.get(partitions.idFromName(name)).fetch(`https://ingest.internal${pathname}`, init)).json()));
}

/** Mixed batches of random sizes, with a few unreadable entries among them. */
function batches(entries, random) {
  const out = [];
  for (let at = 0; at < entries.length; ) {
    const size = 100 + Math.floor(random() * 900);
    const lines = entries.slice(at, at + size).map((e) => JSON.stringify(e));
    if (random() < 0.5) lines.splice(Math.floor(random() * lines.length), 0, "{not json", JSON.stringify({ id: "no-timestamp" }));
    out.push(lines.join("\n"));
    at += size;
  }
  return out;
}

before(async () => {
  dir = mkdtempSync(path.join(tmpdir(), "log-endpoints-sharded-"));
  mf = await start(false);
  const random = rng(9);
  for (const [stream, entries] of [["edge_logs", edge], ["function_edge_logs", fns]]) {
    for (const body of batches(entries, random)) {
      const res = await post(mf, stream, body);
      assert.equal(res.status, 200);
      // The batch's report, split across shards, is one store's report.
      const { newestTimestamp, ...expected } = reference.ingest(stream, body);
      assert.deepEqual(await res.json(), expected);
    }
  }
  // Acknowledged means kept; queryable once distributed (waited for, not slept).
  await distributed(mf);
});

after(async () => {
  await mf?.dispose();
  rmSync(dir, { recursive: true, force: true });
});

const FN_OF = (ref) => fns.find((e) => e.metadata[0].project_ref === ref)?.metadata[0].function_id ?? "none";

function queries() {
  const out = [];
  for (const project of [largest, second, median, tail, "no-such-project"]) {
    for (const interval of ["5min", "15min", "1hr", "1day", "7day"]) out.push(["functions.invocation-stats", { project, interval }]);
    out.push(["functions.invocation-stats", { project, interval: "7day", function_id: FN_OF(project) }]);
    for (const project_tier of ["FREE", "PRO", "PAYG"]) out.push(["logs.all", { project, project_tier }]);
    out.push(["logs.all", { project, project_tier: "ENTERPRISE", iso_timestamp_start: "2026-11-18T06:00:00Z", iso_timestamp_end: "2026-11-19T03:00:00Z" }]);
    for (const interval of ["minutely", "hourly", "daily"]) out.push(["usage.api-counts", { project, interval }]);
  }
  // Patterns over request URLs: several projects' shards are summed per bucket.
  // Numbered refs: `tenant-1` (no such project) matches the URLs of tenant-10, tenant-12, tenant-100 …, as the reference reads a pattern.
  for (const pattern of [`^https://${largest}\\.`, `${median}|${tail}`, "tenant-1", "^https://tenant-2\\.", "rest/v1/", "storage/v1/object", ".", "no-url-has-this"]) {
    out.push(["usage.api-counts", { project: pattern, interval: "daily" }]);
    out.push(["usage.api-counts", { project: pattern, interval: "hourly" }]);
  }
  return out;
}

test("every endpoint, by name and by UUID, answers as one store holding every entry", async () => {
  let nonEmpty = 0;
  for (const [name, params] of queries()) {
    const expected = reference.query(name, params, QUERY_KEY);
    for (const path of [name, ids[name]]) {
      const res = await get(path, params);
      assert.equal(res.status, 200, `${path} ${JSON.stringify(params)}`);
      assert.deepEqual(await res.json(), expected, `${path} ${JSON.stringify(params)}`);
    }
    if (expected.result.length > 0) nonEmpty++;
  }
  assert.ok(nonEmpty > 40, `most answers of known projects have rows (${nonEmpty})`);
  // A range that reaches past the retention carries its warning through the merge of the shards' answers.
  const params = { project: largest, project_tier: "FREE", iso_timestamp_start: "2020-01-01T00:00:00Z" };
  const clipped = await get("logs.all", params);
  assert.deepEqual(await clipped.json(), reference.query("logs.all", params, QUERY_KEY));
  assert.ok(Number(clipped.headers.get("X-Shards")) >= 1);
  assert.match(clipped.headers.get("X-Endpoint-Warning") ?? "", /the range begins before the retention window \(FREE keeps 1 day/);
});

test("a large project is split by time: its answers come from several day shards", async () => {
  const stats = await get("functions.invocation-stats", { project: largest, interval: "7day" });
  assert.ok(Number(stats.headers.get("X-Shards")) >= 4, `7day read ${stats.headers.get("X-Shards")} shards`);
  await stats.arrayBuffer();
  // logs.all walks back from the newest day and stops once 100 rows came.
  const logs = await get("logs.all", { project: largest, project_tier: "PAYG" });
  const body = await logs.json();
  assert.equal(body.result.length, 100);
  assert.ok(Number(logs.headers.get("X-Shards")) < 4, `logs.all stopped after ${logs.headers.get("X-Shards")} shards`);
  // A pattern fans out to the projects whose URLs can match, not to all.
  const one = await get("usage.api-counts", { project: `^https://${tail}\\.`, interval: "daily" });
  await one.arrayBuffer();
  const all = await get("usage.api-counts", { project: "rest/v1/", interval: "daily" });
  await all.arrayBuffer();
  assert.ok(Number(one.headers.get("X-Shards")) <= 4, `one project's pattern read ${one.headers.get("X-Shards")} shards`);
  // Every group of every day holds a project that matches: all of them (16 groups, 4 days).
  assert.ok(Number(all.headers.get("X-Shards")) > 40, `a pattern every project matches read ${all.headers.get("X-Shards")} shards`);
});

test("the Management API route answers as one store", async () => {
  for (const project of [largest, median, "no-such-project"]) {
    for (const [name, params] of [
      ["usage.api-counts", { interval: "7day" }],
      ["usage.api-requests-count", {}],
      ["functions.combined-stats", { function_id: FN_OF(project), interval: "1day" }],
      ["logs.all", { iso_timestamp_start: "2026-11-19T20:00:00Z", iso_timestamp_end: "2026-11-20T11:00:00Z" }],
    ]) {
      const route = `/v1/projects/${project}/analytics/endpoints/${name}`;
      const res = await mf.dispatchFetch(`${BASE}${route}?${new URLSearchParams(params)}`, { headers: { Authorization: `Bearer ${QUERY_KEY}` } });
      assert.equal(res.status, 200, `${name} ${project}`);
      assert.deepEqual(await res.json(), JSON.parse(reference.queryPath(route, params, QUERY_KEY).body), `${name} ${project}`);
    }
  }
});

test("every object on a request's path is named, and no object is on every request's path", async () => {
  const paths = [];
  for (const [name, params] of queries()) {
    const res = await get(name, params);
    await res.arrayBuffer();
    const objects = res.headers.get("X-Objects").split(", ");
    assert.ok(objects.some((o) => o.startsWith("directory/")), `${name}: a directory partition is named (${objects})`);
    const shardsNamed = objects.filter((o) => /^\d{4}-\d\d-\d\d\/g\/\d\d$/.test(o)).length;
    if (!objects.some((o) => o.startsWith("+"))) assert.equal(shardsNamed, Number(res.headers.get("X-Shards")), `${name} ${JSON.stringify(params)}`);
    paths.push(objects);
  }
  for (let i = 0; i < 16; i++) {
    const res = await post(mf, "edge_logs", ndjson([{ id: `path-${i}`, timestamp: NOW * 1000 - i, project: `path-${i}` }]));
    await res.arrayBuffer();
    paths.push(res.headers.get("X-Objects").split(", "));
  }
  const onEvery = paths.reduce((common, objects) => common.filter((o) => objects.includes(o)));
  assert.deepEqual(onEvery, [], "no object is on every request's path");
  const ingestPartitions = new Set(paths.slice(-16).flat());
  assert.ok(ingestPartitions.size > 3, `batches spread over the ingest partitions (${[...ingestPartitions]})`);
  await distributed(mf);
});

test("restricted keys from the environment: refused by the front before any shard is asked", async () => {
  const key = RESTRICTED.key;
  for (const [name, params] of [
    ["usage.api-counts", { project: largest, interval: "daily" }],
    ["usage.api-counts", { project: tail, interval: "hourly" }],
    ["logs.all", { project: tail, project_tier: "PAYG" }],
  ]) {
    const res = await get(name, params, key);
    assert.equal(res.status, 200);
    assert.deepEqual(await res.json(), reference.query(name, params, key));
  }
  for (const [name, params, code, presented = key] of [
    ["usage.api-counts", { project: median, interval: "daily" }, "forbidden"],
    ["usage.api-counts", { project: "rest/v1/", interval: "daily" }, "forbidden"],
    ["functions.invocation-stats", { project: largest, interval: "1day" }, "forbidden"],
    ["logs.all", { project: largest, project_tier: "PAYG" }, "invalid_api_key", "wrong-key"],
  ]) {
    const res = await get(name, params, presented);
    const body = await res.json();
    assert.equal(body.error.code, code, `${name} ${JSON.stringify(params)}`);
    assert.equal(res.headers.get("X-Shards"), null, "no shard was asked");
    assert.throws(() => reference.query(name, params, presented), (e) => e.code === code);
  }
});

/** Two project refs whose shards (groups) differ. */
function refsOfTwoGroups(prefix, day) {
  const refs = Array.from({ length: 20 }, (_, i) => `${prefix}-${i}`);
  const first = refs[0];
  const second = refs.find((r) => LogEndpoints.shardName(r, day) !== LogEndpoints.shardName(first, day));
  return [first, second];
}

test("a shard whose storage write fails: the batch is acknowledged, its round is sent again until the shard takes it, and every entry is kept once", async () => {
  const day = new Date(NOW).toISOString().slice(0, 10);
  const [a, b] = refsOfTwoGroups("fault", day);
  const lines = [];
  for (let i = 0; i < 6; i++) lines.push({ id: `fault-${i}`, timestamp: NOW * 1000 - 1000 * (i + 1), project: i % 2 ? b : a, event_message: "GET | 200 | https://x.supabase.co/rest/v1/t" });
  // The shard of `a` fails its next two storage writes (the test worker's own path).
  const shards = await mf.getDurableObjectNamespace("SHARD");
  const failing = await shards.get(shards.idFromName(LogEndpoints.shardName(a, day))).fetch("https://shard.internal/test/fail-storage?times=2", { method: "POST" });
  assert.deepEqual(await failing.json(), { failingWrites: 2 });
  const res = await post(mf, "edge_logs", ndjson(lines));
  assert.equal(res.status, 200, "acknowledged once kept by its ingest partition");
  assert.equal((await res.json()).accepted, 6);
  // The round fails twice at `a` and is sent again; `b`'s shard took it the first time and applies it once.
  await distributed(mf);
  const left = await shards.get(shards.idFromName(LogEndpoints.shardName(a, day))).fetch("https://shard.internal/test/failures");
  assert.deepEqual(await left.json(), { failingWrites: 0 }, "both simulated failures happened");
  reference.ingest("edge_logs", ndjson(lines));
  for (const project of [a, b]) {
    const params = { project, project_tier: "FREE" };
    assert.deepEqual(await (await get("logs.all", params)).json(), reference.query("logs.all", params, QUERY_KEY), project);
  }
});

test("a shard that fails for a while holds back only its own deliveries: the other shards take theirs, later rounds of the same partition too, and it takes what waited once it recovers", async () => {
  const day = new Date(NOW).toISOString().slice(0, 10);
  const [a, b] = refsOfTwoGroups("stuck", day);
  const shards = await mf.getDurableObjectNamespace("SHARD");
  const failStorage = (times) => shards.get(shards.idFromName(LogEndpoints.shardName(a, day))).fetch(`https://shard.internal/test/fail-storage?times=${times}`, { method: "POST" });
  const entry = (tag, i, project) => ({ id: `${tag}-${i}`, timestamp: NOW * 1000 - 1000 * (i + 1), project, event_message: "GET | 200 | https://x.supabase.co/rest/v1/t" });
  const ids = (project) => idsOf(mf, project);
  /** Polls until `project` shows `expected` ids; fails naming what it showed instead. */
  const showsIds = async (project, expected, what) => {
    const started = Date.now();
    for (;;) {
      const shown = await ids(project);
      if (JSON.stringify(shown) === JSON.stringify([...expected].sort())) return;
      if (Date.now() - started > 15_000) assert.fail(`${what}: ${project} shows ${JSON.stringify(shown)} after 15 s`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  };
  await failStorage(1_000_000);
  const mixed = Array.from({ length: 6 }, (_, i) => entry("stuck-mixed", i, i % 2 ? b : a));
  const first = await post(mf, "edge_logs", ndjson(mixed));
  assert.equal(first.status, 200);
  const partition = first.headers.get("X-Objects");
  await showsIds(b, mixed.filter((e) => e.project === b).map((e) => e.id), "the other shard took its part of the round");
  // A later batch of the same ingest partition, only for `b`: its round is not held back by `a`'s.
  const bIds = mixed.filter((e) => e.project === b).map((e) => e.id);
  for (let n = 0, reached = false; !reached; n++) {
    const lines = Array.from({ length: 3 }, (_, i) => entry(`stuck-later-${n}`, i, b));
    const res = await post(mf, "edge_logs", ndjson(lines));
    assert.equal(res.status, 200);
    reference.ingest("edge_logs", ndjson(lines));
    bIds.push(...lines.map((e) => e.id));
    reached = res.headers.get("X-Objects") === partition;
    assert.ok(n < 40, "some batch reached the first batch's partition");
  }
  await showsIds(b, bIds, "a later round of the same partition reached the other shard");
  assert.deepEqual(await ids(a), [], "the failing shard has none yet");
  const waiting = (await everyPartition(mf, "/status")).filter((s) => s.outboxDeliveries > 0);
  assert.equal(waiting.length, 1, "one partition's outbox holds the failing shard's deliveries");
  assert.equal(waiting[0].outboxShards, 1);
  assert.ok(waiting[0].oldestOutboxMs > 0, "how long it has waited is shown");
  // An operator sees it through the front, with an unrestricted query key.
  const seen = await mf.dispatchFetch(`${BASE}/api/ingest/status`, { headers: { "X-API-KEY": QUERY_KEY } });
  assert.equal(seen.status, 200);
  const { sharding, total, partitions } = await seen.json();
  assert.deepEqual([sharding, total.outboxShardNames, total.outboxDeliveries, partitions.length], [true, [LogEndpoints.shardName(a, day)], waiting[0].outboxDeliveries, LogEndpoints.ingestNames().length]);
  assert.ok(total.oldestOutboxMs >= waiting[0].oldestOutboxMs, "the longest wait is shown");
  for (const [key, status] of [[INGEST_KEY, 403], [RESTRICTED.key, 403], [undefined, 401]]) {
    const refused = await mf.dispatchFetch(`${BASE}/api/ingest/status`, { headers: key ? { "X-API-KEY": key } : {} });
    assert.equal(refused.status, status, `key ${key}`);
  }
  await failStorage(0);
  await distributed(mf, { timeoutMs: 30_000 });
  reference.ingest("edge_logs", ndjson(mixed));
  for (const project of [a, b]) {
    const params = { project, project_tier: "FREE" };
    assert.deepEqual(await (await get("logs.all", params)).json(), reference.query("logs.all", params, QUERY_KEY), project);
  }
});

test("a batch sent again is kept once: twice in a row, after a restart, and under one Idempotency-Key; other bytes under a used key are a 422", async () => {
  const worker = await start(dir);
  try {
    const batch = (tag) => ndjson(Array.from({ length: 5 }, (_, i) => ({ id: `${tag}-${i}`, timestamp: NOW * 1000 - i, project: "twice" })));
    const send = async (w, body, headers = {}) => {
      const res = await post(w, "edge_logs", body, headers);
      assert.equal(res.status, 200);
      return { duplicate: res.headers.get("X-Duplicate") === "true", objects: res.headers.get("X-Objects"), report: await res.json() };
    };
    const first = await send(worker, batch("once"));
    const again = await send(worker, batch("once"));
    assert.deepEqual([first.duplicate, again.duplicate], [false, true]);
    assert.equal(again.objects, first.objects, "the same ingest partition remembers it");
    assert.deepEqual(again.report, first.report);
    const keyed = await send(worker, batch("keyed-a"), { "Idempotency-Key": "job-17" });
    const keyedAgain = await send(worker, batch("keyed-a"), { "Idempotency-Key": "job-17" });
    assert.deepEqual([keyed.duplicate, keyedAgain.duplicate], [false, true]);
    assert.deepEqual(keyedAgain.report, keyed.report);
    // Other content under a key already used: not kept, and said so (a shipper drops it: a retry cannot help).
    const reused = await post(worker, "edge_logs", batch("keyed-b"), { "Idempotency-Key": "job-17" });
    assert.equal(reused.status, 422);
    const { error } = await reused.json();
    assert.equal(error.code, "idempotency_key_reused");
    assert.match(error.message, /Idempotency-Key `job-17` came within 24 hours with a batch of other content/);
    await worker.dispose();
    const restarted = await start(dir);
    try {
      assert.equal((await send(restarted, batch("once"))).duplicate, true, "remembered across a restart");
      await distributed(restarted);
      const res = await restarted.dispatchFetch(`${BASE}/api/endpoints/query/logs.all?project=twice&project_tier=FREE`, { headers: { "X-API-KEY": QUERY_KEY } });
      const ids = (await res.json()).result.map((r) => r.id).sort();
      assert.deepEqual(ids, [...[0, 1, 2, 3, 4].map((i) => `keyed-a-${i}`), ...[0, 1, 2, 3, 4].map((i) => `once-${i}`)].sort());
      assert.equal((await post(restarted, "edge_logs", batch("keyed-c"), { "Idempotency-Key": "job-17" })).status, 422, "remembered across a restart");
      assert.equal((await send(restarted, batch("keyed-a"), { "Idempotency-Key": "job-17" })).duplicate, true, "with its content, across a restart");
    } finally {
      await restarted.dispose();
    }
    // One object (SHARDING=off) keeps the key with its content alike.
    const singleDir = mkdtempSync(path.join(tmpdir(), "log-endpoints-single-"));
    const single = await start(singleDir, { SHARDING: "off" });
    try {
      const headers = { "Idempotency-Key": "job-18" };
      assert.deepEqual([(await send(single, batch("one-a"), headers)).duplicate, (await send(single, batch("one-a"), headers)).duplicate], [false, true]);
      const other = await post(single, "edge_logs", batch("one-b"), headers);
      assert.equal(other.status, 422);
      assert.equal((await other.json()).error.code, "idempotency_key_reused");
    } finally {
      await single.dispose();
      rmSync(singleDir, { recursive: true, force: true });
    }
  } catch (e) {
    await worker.dispose().catch(() => {});
    throw e;
  }
});

test("keys kept by a build before content hashes still make a resend a duplicate; keys kept after it tell other bytes apart", async () => {
  const worker = await start(dir);
  try {
    const batch = (tag) => ndjson(Array.from({ length: 3 }, (_, i) => ({ id: `${tag}-${i}`, timestamp: NOW * 1000 - i, project: "migrated" })));
    const send = (body, key) => post(worker, "edge_logs", body, { "Idempotency-Key": key });
    const first = await send(batch("old-a"), "job-old");
    assert.equal(first.status, 200);
    await first.arrayBuffer();
    const partitions = await worker.getDurableObjectNamespace("INGEST");
    const partition = partitions.get(partitions.idFromName(first.headers.get("X-Objects")));
    const rewritten = await partition.fetch("https://ingest.internal/test/seen-from-before", { method: "POST" });
    assert.ok((await rewritten.json()).keys >= 1);
    // A row of the old table has no content: a resend under its key is the same batch, whatever its bytes.
    for (const body of [batch("old-a"), batch("old-b")]) {
      const again = await send(body, "job-old");
      assert.equal(again.status, 200);
      assert.equal(again.headers.get("X-Duplicate"), "true");
      await again.arrayBuffer();
    }
    // Keys kept after the table gained its column carry their content.
    assert.equal((await send(batch("new-a"), "job-new")).status, 200);
    const other = await send(batch("new-b"), "job-new");
    assert.equal(other.status, 422);
    assert.equal((await other.json()).error.code, "idempotency_key_reused");
  } finally {
    await worker.dispose();
  }
});

test("a restart of the runtime during a stream of ingests loses no batch that got a 200", async () => {
  let worker = await start(dir);
  // Batches, each of its own project, sent at once; the runtime is disposed
  // once 12 are answered. (Miniflare's dispose lets requests under way
  // finish: a request cut off halfway is not what this tests.)
  const batchOf = (k) => Array.from({ length: 20 }, (_, i) => ({ id: `s${k}-${i}`, timestamp: NOW * 1000 - (k * 20 + i) * 1000, project: `stream-${k}` }));
  const acknowledged = [];
  // Each batch's answer (a send the restart cut off: its error).
  const outcomes = new Map();
  const sends = [];
  for (let k = 0; k < 40; k++) {
    const send = (async () => {
      try {
        const res = await post(worker, "edge_logs", ndjson(batchOf(k)));
        const { accepted } = await res.json();
        outcomes.set(k, { status: res.status, accepted });
        if (res.status === 200 && accepted === 20) acknowledged.push(k);
      } catch (e) {
        outcomes.set(k, { error: String(e?.message ?? e) });
      }
    })();
    sends.push(send);
    if (k === 20) {
      let timer;
      const late = new Promise((_, reject) => (timer = setTimeout(() => reject(new Error("the first 12 batches were not answered within 60 s")), 60_000)));
      try {
        await Promise.race([Promise.all(sends.slice(0, 12)), late]);
      } finally {
        clearTimeout(timer);
        await worker.dispose();
      }
      break;
    }
  }
  await Promise.all(sends);
  // Those answered before the restart were all kept whole; a later 200 too.
  for (let k = 0; k < 12; k++) assert.deepEqual(outcomes.get(k), { status: 200, accepted: 20 }, `batch ${k}, answered before the restart`);
  for (const [k, outcome] of outcomes) if (outcome.status !== undefined && outcome.status !== 200 && outcome.status < 500) assert.fail(`batch ${k}: ${JSON.stringify(outcome)} (a 4xx a shipper would drop)`);
  for (const [k, outcome] of outcomes) if (outcome.status === 200) assert.equal(outcome.accepted, 20, `batch ${k}: a 200 keeps every entry`);
  worker = await start(dir);
  try {
    // The ingest partitions' alarms survive the restart and finish distributing.
    await distributed(worker);
    for (const k of acknowledged) {
      const res = await worker.dispatchFetch(`${BASE}/api/endpoints/query/logs.all?project=stream-${k}&project_tier=FREE`, { headers: { "X-API-KEY": QUERY_KEY } });
      const rows = (await res.json()).result.map((r) => r.id).sort();
      assert.deepEqual(rows, batchOf(k).map((e) => e.id).sort(), `batch ${k} after the restart`);
    }
  } finally {
    await worker.dispose();
  }
});

test("a directory partition whose stored snapshot does not read answers 503 naming it, rather than forgetting its shards", async () => {
  const persisted = mkdtempSync(path.join(tmpdir(), "log-endpoints-directory-"));
  let worker = await start(persisted);
  try {
    const project = "directory-damage";
    assert.equal((await post(worker, "edge_logs", ndjson([{ id: "dd-1", timestamp: NOW * 1000 - 1000, project }]))).status, 200);
    await distributed(worker);
    assert.deepEqual(await idsOf(worker, project), ["dd-1"]);
    const directories = await worker.getDurableObjectNamespace("DIRECTORY");
    for (const name of LogEndpoints.directoryNames()) {
      await directories.get(directories.idFromName(name)).fetch("https://directory.internal/test/fold-and-damage", { method: "POST" });
    }
    await worker.dispose();
    worker = await start(persisted);
    const res = await worker.dispatchFetch(`${BASE}/api/endpoints/query/logs.all?project=${project}&project_tier=FREE`, { headers: { "X-API-KEY": QUERY_KEY } });
    assert.equal(res.status, 503);
    assert.match((await res.json()).error.message, /the directory's stored snapshot does not read \(.*stored parts hold/);
  } finally {
    await worker.dispose();
    rmSync(persisted, { recursive: true, force: true });
  }
});

test("batches acknowledged and not yet distributed when the runtime stops are distributed after the restart (IngestObject.alarm)", async () => {
  let worker = await start(dir);
  const batchOf = (k) => Array.from({ length: 30 }, (_, i) => ({ id: `held${k}-${i}`, timestamp: NOW * 1000 - i * 1000, project: k % 2 ? `held-${k}` : `tenant-${k}` }));
  try {
    await everyPartition(worker, "/test/hold", { method: "POST" });
    for (let k = 0; k < 8; k++) {
      const res = await post(worker, "edge_logs", ndjson(batchOf(k)));
      assert.equal(res.status, 200);
    }
    const pending = (await everyPartition(worker, "/status")).map((status) => status.pendingBatches);
    assert.equal(pending.reduce((a, b) => a + b), 8, "every acknowledged batch is kept, none distributed yet");
  } finally {
    await worker.dispose();
  }
  worker = await start(dir);
  try {
    await distributed(worker);
    for (let k = 0; k < 8; k++) {
      assert.deepEqual(await idsOf(worker, batchOf(k)[0].project), batchOf(k).map((e) => e.id).sort(), `batch ${k}`);
    }
  } finally {
    await worker.dispose();
  }
});

test("a kept batch that no longer reads (damaged storage, a format this build does not read) is set aside and recorded; the partition goes on", async () => {
  const worker = await start(false);
  const batchOf = (tag) => Array.from({ length: 8 }, (_, i) => ({ id: `${tag}-${i}`, timestamp: NOW * 1000 - i * 1000, project: tag }));
  try {
    await everyPartition(worker, "/test/hold", { method: "POST" });
    assert.equal((await post(worker, "edge_logs", ndjson(batchOf("damaged")))).status, 200);
    const damaged = await everyPartition(worker, "/test/damage-kept", { method: "POST" });
    assert.equal(damaged.reduce((n, d) => n + d.damaged, 0), 1);
    assert.equal((await post(worker, "edge_logs", ndjson(batchOf("intact")))).status, 200);
    await everyPartition(worker, "/test/release", { method: "POST" });
    const status = await distributed(worker);
    assert.deepEqual(await idsOf(worker, "intact"), batchOf("intact").map((e) => e.id).sort());
    assert.deepEqual(await idsOf(worker, "damaged"), []);
    assert.equal(status.reduce((n, [, s]) => n + s.refusedDeliveries, 0), 1, "the damaged batch is recorded as refused");
  } finally {
    await worker.dispose();
  }
});

test("kept batches whose partition lost its alarm (an eviction before arming it) are distributed once it is constructed again", async () => {
  let worker = await start(dir);
  const batchOf = (k) => Array.from({ length: 10 }, (_, i) => ({ id: `unarmed${k}-${i}`, timestamp: NOW * 1000 - i * 1000, project: `unarmed-${k}` }));
  try {
    await everyPartition(worker, "/test/hold", { method: "POST" });
    for (let k = 0; k < 6; k++) assert.equal((await post(worker, "edge_logs", ndjson(batchOf(k)))).status, 200);
    for (const forgot of await everyPartition(worker, "/test/forget-alarm", { method: "POST" })) assert.deepEqual(forgot, { alarm: null });
  } finally {
    await worker.dispose();
  }
  worker = await start(dir);
  try {
    await distributed(worker);
    for (let k = 0; k < 6; k++) {
      const res = await worker.dispatchFetch(`${BASE}/api/endpoints/query/logs.all?project=unarmed-${k}&project_tier=FREE`, { headers: { "X-API-KEY": QUERY_KEY } });
      assert.equal((await res.json()).result.length, 10, `batch ${k}`);
    }
  } finally {
    await worker.dispose();
  }
});

test("a delivery a shard receives twice (the same partition and round) is applied once", async () => {
  const entries = Array.from({ length: 12 }, (_, i) => ({ id: `dup-delivery-${i}`, timestamp: NOW * 1000 - i * 1000, project: "delivered-twice" }));
  const service = new LogEndpoints({ apiKeys: [QUERY_KEY], ingestKeys: [INGEST_KEY], now: NOW });
  const prepared = service.prepareIngest({ method: "POST", path: "/api/logs/edge_logs", apiKey: INGEST_KEY }, ndjson(entries));
  const round = LogEndpoints.coalesce("ingest/test", 1, [prepared.record]);
  const registrations = round.registrations(new KnownRegistrations());
  const { deliveries } = round;
  round.free();
  service.free();
  const directories = await mf.getDurableObjectNamespace("DIRECTORY");
  for (const { directory, bytes } of registrations) {
    assert.equal((await directories.get(directories.idFromName(directory)).fetch("https://directory.internal/register", { method: "POST", body: bytes })).status, 200);
  }
  assert.equal(deliveries.length, 1);
  const [{ shard, bytes }] = deliveries;
  const shards = await mf.getDurableObjectNamespace("SHARD");
  const deliver = async () => {
    const res = await shards.get(shards.idFromName(shard)).fetch("https://shard.internal/deliver", { method: "POST", body: bytes, headers: { "X-Shard": shard } });
    assert.equal((await res.arrayBuffer()).byteLength, 0, "no rows handed back");
    return JSON.parse(res.headers.get("X-Delivery"));
  };
  assert.deepEqual(await deliver(), { duplicate: false, accepted: 12, refused: [], overflowEntries: 0 });
  // The round sent again gets the first answer again, marked a duplicate.
  assert.deepEqual(await deliver(), { duplicate: true, accepted: 12, refused: [], overflowEntries: 0 });
  const res = await get("logs.all", { project: "delivered-twice", project_tier: "FREE" });
  assert.deepEqual((await res.json()).result.map((r) => r.id).sort(), entries.map((e) => e.id).sort());
});

test("one busy project-day outgrows its store: it splits across objects by size, and every endpoint answers as one store", async () => {
  const day = Date.parse("2026-11-20T00:00:00Z");
  const random = rng(23);
  const paths = ["/rest/v1/orders", "/auth/v1/token", "/storage/v1/object/a.png", "/functions/v1/checkout"];
  const busy = "busy-one";
  const entries = [];
  for (let i = 0; i < 6000; i++) {
    const project = i % 10 === 0 ? "quiet-one" : busy;
    const ts = (day + Math.floor(random() * 11.5 * 3600e3)) * 1000;
    const path = paths[i % paths.length];
    entries.push(["edge_logs", { id: `busy-e-${i}`, timestamp: ts, project, event_message: `GET ${path} ${Math.floor(random() * 1e9).toString(36)}`,
      metadata: [{ request: [{ url: `https://${project}.supabase.co${path}?n=${i % 97}`, path }], response: [{ status_code: [200, 201, 404, 500][i % 4] }] }] }]);
    if (i % 3 !== 2) {
      entries.push(["function_edge_logs", { id: `busy-f-${i}`, timestamp: ts, metadata: [{ project_ref: project, function_id: `fn-${i % 3}`,
        execution_time_ms: Math.round(random() * random() * 900_000) / 100, response: [{ status_code: [200, 301, 404, 503][i % 4] }] }] }]);
    }
  }
  const whole = new LogEndpoints({ apiKeys: [QUERY_KEY], now: NOW });
  const worker = await start(false, { MAX_STORE_BYTES: "160000" });
  try {
    // The project-day's first split fails at first: its deliveries wait in the
    // outbox, and once it takes them it hands rows back from there, which go
    // on to the later splits under new round numbers.
    const shardNamespace = await worker.getDurableObjectNamespace("SHARD");
    const firstSplit = shardNamespace.get(shardNamespace.idFromName(`2026-11-20/p/${busy}/1`));
    await firstSplit.fetch("https://shard.internal/test/fail-storage?times=1000000", { method: "POST" });
    // Every directory partition fails a few registrations along the way: a
    // round whose later wave cannot register is sent again, and takes the
    // answers its shards gave (their handed-back rows) instead of asking again.
    const directories = await worker.getDurableObjectNamespace("DIRECTORY");
    for (const name of LogEndpoints.directoryNames()) {
      await directories.get(directories.idFromName(name)).fetch("https://directory.internal/test/fail-register?after=3&times=2", { method: "POST" });
    }
    for (const stream of ["edge_logs", "function_edge_logs"]) {
      const mine = entries.filter(([s]) => s === stream).map(([, e]) => e);
      for (let at = 0; at < mine.length; at += 500) {
        const body = ndjson(mine.slice(at, at + 500));
        whole.ingest(stream, body);
        assert.equal((await post(worker, stream, body)).status, 200);
        if (stream === "edge_logs" && at === 2500) {
          const started = Date.now();
          while ((await everyPartition(worker, "/status")).every((s) => s.outboxDeliveries === 0)) {
            assert.ok(Date.now() - started < 15_000, "the failing shard's deliveries wait in an outbox");
            await new Promise((resolve) => setTimeout(resolve, 100));
          }
          await firstSplit.fetch("https://shard.internal/test/fail-storage?times=0", { method: "POST" });
        }
      }
    }
    // Its other sources, many times their quarter of a store: they go on to
    // later splits too, none refused.
    const others = Array.from({ length: 1200 }, (_, i) => ({ id: `busy-o-${i}`, timestamp: (day + Math.floor(random() * 11.5 * 3600e3)) * 1000, project: busy,
      event_message: `checkpoint ${Math.floor(random() * 1e15).toString(36)} ${Math.floor(random() * 1e15).toString(36)} ${Math.floor(random() * 1e15).toString(36)}` }));
    for (let at = 0; at < others.length; at += 300) {
      const res = await worker.dispatchFetch(`${BASE}/api/logs?source_name=postgres.logs`, { method: "POST", body: ndjson(others.slice(at, at + 300)), headers: { "X-API-KEY": INGEST_KEY } });
      assert.equal(res.status, 200);
    }
    await distributed(worker, { timeoutMs: 40_000 });
    const failed = [];
    for (const name of LogEndpoints.directoryNames()) {
      const left = await (await directories.get(directories.idFromName(name)).fetch("https://directory.internal/test/failures")).json();
      if (left.times === 0) failed.push(name);
    }
    assert.ok(failed.length > 0, "some directory partition failed its two registrations");
    let othersKept = 0;
    for (const name of [LogEndpoints.shardName(busy, "2026-11-20"), ...Array.from({ length: 40 }, (_, n) => `2026-11-20/p/${busy}/${n + 1}`)]) {
      const res = await shardNamespace.get(shardNamespace.idFromName(name)).fetch("https://shard.internal/maintain", { method: "POST", headers: { "X-Now-Ms": String(NOW) } });
      othersKept += (await res.json()).otherSources?.["postgres.logs"] ?? 0;
    }
    assert.equal(othersKept, others.length, "every other source's entry is kept once");
    const ask = (name, params) => worker.dispatchFetch(`${BASE}/api/endpoints/query/${name}?${new URLSearchParams(params)}`, { headers: { "X-API-KEY": QUERY_KEY } });
    const calls = [];
    for (const project of [busy, "quiet-one"]) {
      for (const interval of ["5min", "15min", "1hr", "1day", "7day"]) calls.push(["functions.invocation-stats", { project, interval }]);
      calls.push(["functions.invocation-stats", { project, interval: "1day", function_id: "fn-1" }]);
      for (const interval of ["15min", "1hr", "3hr", "1day"]) calls.push(["functions.combined-stats", { project, interval, function_id: "fn-0" }]);
      for (const project_tier of ["FREE", "PRO"]) calls.push(["logs.all", { project, project_tier }]);
      calls.push(["logs.all", { project, project_tier: "PRO", iso_timestamp_start: "2026-11-20T03:00:00Z", iso_timestamp_end: "2026-11-20T04:00:00Z" }]);
      calls.push(["usage.api-requests-count", { project }]);
      for (const interval of ["minutely", "hourly", "daily"]) calls.push(["usage.api-counts", { project, interval }]);
    }
    calls.push(["usage.api-counts", { project: "orders|token", interval: "hourly" }]);
    // The buckets whose execution times more than one of `shards` holds (each
    // asked on its own; a shard's own p95 is not null): only there may p95/p99 come from the sketch.
    const spanningBuckets = async (shards, name, params) => {
      const holders = new Map();
      for (const shard of shards) {
        const res = await shardNamespace.get(shardNamespace.idFromName(shard)).fetch(`https://shard.internal/api/endpoints/query/${name}?${new URLSearchParams(params)}`, { headers: { "X-API-KEY": QUERY_KEY } });
        for (const row of (await res.json()).result ?? []) {
          if (row.p95_execution_time !== null) holders.set(JSON.stringify(row.timestamp), (holders.get(JSON.stringify(row.timestamp)) ?? 0) + 1);
        }
      }
      return new Set([...holders].filter(([, n]) => n > 1).map(([bucket]) => bucket));
    };
    let split = 0;
    let ownSplits = 0;
    let spanned = 0;
    for (const [name, params] of calls) {
      const res = await ask(name, params);
      const what = `${name} ${JSON.stringify(params)}`;
      assert.equal(res.status, 200, what);
      const objects = res.headers.get("X-Objects").split(",").map((o) => o.trim());
      // p95/p99 are exact where one shard holds a bucket's times, within the sketch's bound where several do.
      const spanning = name === "functions.invocation-stats" ? await spanningBuckets(objects.filter((o) => /^\d{4}-\d\d-\d\d\//.test(o)), name, params) : undefined;
      spanned += spanning?.size ?? 0;
      assert.equal(answerDifference(await res.json(), whole.query(name, params, QUERY_KEY), spanning), null, what);
      if (params.project === busy && name !== "usage.api-counts") {
        const shards = Number(res.headers.get("X-Shards"));
        // The busy project-day's splits are asked, and only this project's.
        assert.ok(objects.some((o) => o.includes(`/p/${busy}/`)), `${what}: ${objects}`);
        assert.ok(!objects.some((o) => o.includes("/p/quiet-one/")), `${what}: ${objects}`);
        split = Math.max(split, shards);
        ownSplits = Math.max(ownSplits, objects.filter((o) => o.includes(`/p/${busy}/`)).length);
      }
    }
    // Its group's shard and at least 3 splits of its own.
    assert.ok(split >= 4, `the busy project-day is split across ${split} objects`);
    assert.ok(ownSplits >= 3, `the busy project-day has ${ownSplits} splits of its own`);
    assert.ok(spanned > 0, "some invocation-stats bucket spans shards (the sketch's merge is asked)");
    // Every entry is in exactly one store: nothing lost, nothing twice.
    const counted = await (await ask("usage.api-requests-count", { project: busy })).json();
    assert.deepEqual(counted, whole.query("usage.api-requests-count", { project: busy }, QUERY_KEY));
    const status = await everyPartition(worker, "/status");
    assert.equal(status.reduce((n, s) => n + s.refusedEntries, 0), 0, "no entry was refused");
    // A round sent again whose stored answer no longer reads: the rows it had
    // handed back are named as refused, and only those (the shard kept the rest).
    const damaged = await (await firstSplit.fetch("https://shard.internal/test/damage-answers", { method: "POST" })).json();
    assert.ok(damaged.length > 0, "the first split handed rows back");
    for (const { partition, round, overflowEntries } of damaged) {
      const again = await firstSplit.fetch(`https://shard.internal/test/stored-answer?${new URLSearchParams({ partition, round })}`);
      assert.equal(again.status, 200);
      const report = JSON.parse(again.headers.get("X-Delivery"));
      assert.deepEqual([report.duplicate, report.overflowEntries, report.refused.at(-1).entries, report.refused.at(-1).error.code], [true, 0, overflowEntries, "unreadable_batch"]);
    }
  } finally {
    whole.free();
    await worker.dispose();
  }
});

test("retention: a shard whose day is past 90 days deletes its storage, and the directory forgets the day", async () => {
  const dayMs = NOW - 10 * 24 * 3600e3;
  const shard = LogEndpoints.shardName("retired", new Date(dayMs).toISOString().slice(0, 10));
  const entries = [0, 1, 2].map((i) => ({ id: `retired-${i}`, timestamp: dayMs * 1000 + i, project: "retired" }));
  assert.equal((await post(mf, "edge_logs", ndjson(entries))).status, 200);
  await distributed(mf);
  const logs = (nowMs) =>
    mf.dispatchFetch(`${BASE}/api/endpoints/query/logs.all?project=retired&project_tier=ENTERPRISE`, { headers: { "X-API-KEY": QUERY_KEY, "X-Test-Now-Ms": String(nowMs) } });
  assert.equal((await (await logs(NOW)).json()).result.length, 3);

  const later = dayMs + 91 * 24 * 3600e3;
  const namespace = await mf.getDurableObjectNamespace("SHARD");
  // With nothing cached to keep warm, the shard's next alarm is when its newest entry passes retention.
  const now = await namespace.get(namespace.idFromName(shard)).fetch("https://shard.internal/maintain", {
    method: "POST",
    headers: { "X-Now-Ms": String(NOW) },
  });
  const { nextMaintenanceInMs, deleted } = await now.json();
  assert.equal(deleted, undefined);
  assert.equal(nextMaintenanceInMs, dayMs + 90 * 24 * 3600e3 + 1 - NOW, "the entry at dayMs + 2 µs is kept 90 days");
  const maintained = await namespace.get(namespace.idFromName(shard)).fetch("https://shard.internal/maintain", {
    method: "POST",
    headers: { "X-Now-Ms": String(later) },
  });
  const status = await maintained.json();
  assert.deepEqual(status, { droppedBatches: 1, deleted: true });
  // Its storage is empty, its tables there: the same instance serves on (a late delivery, a query).
  const emptied = await namespace.get(namespace.idFromName(shard)).fetch("https://shard.internal/maintain", {
    method: "POST",
    headers: { "X-Now-Ms": String(later) },
  });
  assert.equal(emptied.status, 200, await emptied.clone().text());
  // Nothing stored: no snapshot of an empty store is written, and no maintenance is due.
  const { snapshot: emptySnapshot, nextMaintenanceInMs: next, edgeEntries } = await emptied.json();
  assert.deepEqual([emptySnapshot, next, edgeEntries], [{ written: false, lastBatchId: 0 }, null, 0]);
  const worker = await mf.getWorker();
  await worker.scheduled({ scheduledTime: new Date(later), cron: "*/5 * * * *" });
  const res = await logs(later);
  assert.equal(res.headers.get("X-Shards"), "0", "the directory no longer lists the day");
  assert.deepEqual(await res.json(), { result: [] });
  // The days within retention are untouched.
  const params = { project: largest, project_tier: "PAYG" };
  assert.deepEqual(await (await get("logs.all", params)).json(), reference.query("logs.all", params, QUERY_KEY));
});
