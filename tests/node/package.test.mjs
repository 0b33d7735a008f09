// Imports the built package by its name, as a user would, and runs each endpoint.
import { test } from "node:test";
import assert from "node:assert/strict";
import { LogEndpoints, LogFeed, SealWorker } from "log-endpoints";
import { generate, ndjson, projectRefs } from "../../scripts/generate-logs.mjs";

const NOW = Date.parse("2026-11-20T12:00:00Z");
const [project] = projectRefs();

function service() {
  const svc = new LogEndpoints({ apiKeys: ["secret"], now: NOW });
  const edge = [...generate({ stream: "edge_logs", count: 3000, endMs: NOW, spanMs: 2 * 3600e3 })];
  const fns = [...generate({ stream: "function_edge_logs", count: 3000, endMs: NOW, spanMs: 2 * 3600e3 })];
  assert.deepEqual(svc.ingest("edge_logs", edge), { accepted: 3000, rejected: [], rejectedTotal: 0, newestTimestamp: Math.max(...edge.map((e) => e.timestamp)) });
  assert.equal(svc.ingest("function_edge_logs", fns.map((e) => JSON.stringify(e)).join("\n")).accepted, 3000);
  return { svc, edge, fns };
}

test("imports by package name, ready without init", () => {
  assert.equal(typeof LogEndpoints, "function");
  const names = new LogEndpoints({ apiKeys: ["k"] }).endpoints().map((e) => e.name);
  assert.deepEqual(names, ["functions.invocation-stats", "logs.all", "usage.api-counts", "usage.api-requests-count", "functions.combined-stats"]);
});

test("logs.all returns the newest 100 of the project, newest first", () => {
  const { svc, edge } = service();
  const { result } = svc.query("logs.all", { project, project_tier: "FREE" }, "secret");
  const expected = edge
    .filter((e) => e.project === project)
    .sort((a, b) => b.timestamp - a.timestamp || (a.id < b.id ? -1 : 1))
    .slice(0, 100);
  assert.equal(result.length, 100);
  assert.deepEqual(result.map((r) => r.id), expected.map((e) => e.id));
  // Every row's text comes back from the store's deflate blocks as it went in,
  // and again from a snapshot (the store is a fraction of its NDJSON only if
  // its text blocks were sealed).
  const text = (rows) => rows.map((r) => [r.id, r.event_message, JSON.stringify(r.metadata)]);
  assert.deepEqual(text(result), text(expected));
  const ndjsonBytes = edge.reduce((sum, e) => sum + JSON.stringify(e).length, 0);
  assert.ok(svc.stats().storeBytes < ndjsonBytes / 2, `${svc.stats().storeBytes} bytes of store for ${ndjsonBytes} of NDJSON`);
  const restored = LogEndpoints.fromSnapshot(svc.snapshot(), { apiKeys: ["secret"], now: NOW });
  assert.deepEqual(text(restored.query("logs.all", { project, project_tier: "FREE" }, "secret").result), text(expected));
  // As an ArrayBuffer (what `file.arrayBuffer()` gives) too: it was read as no bytes.
  const buffer = svc.snapshot().buffer;
  assert.equal(LogEndpoints.isSnapshot(buffer), true);
  const fromBuffer = LogEndpoints.fromSnapshot(buffer, { apiKeys: ["secret"], now: NOW });
  assert.deepEqual(text(fromBuffer.query("logs.all", { project, project_tier: "FREE" }, "secret").result), text(expected));
  assert.throws(() => LogEndpoints.fromSnapshot("a snapshot"), (e) => e.status === 400 && e.code === "invalid_parameter" && /`bytes`: must be a Uint8Array or an ArrayBuffer/.test(e.message));
  assert.equal(Object.getPrototypeOf(result[0]), Object.prototype, "rows are plain objects");
});

test("functions.invocation-stats counts every invocation of the last hour", () => {
  const { svc, fns } = service();
  const { result } = svc.query("functions.invocation-stats", { project, interval: "1hr" }, "secret");
  const firstBucket = (NOW - 3600e3) * 1000 - (((NOW - 3600e3) * 1000) % 60e6);
  const mine = fns.filter((e) => e.metadata[0].project_ref === project && e.timestamp >= firstBucket && e.timestamp < NOW * 1000 + 60e6 - ((NOW * 1000) % 60e6));
  assert.ok(mine.length > 0 && result.length > 0, "the last hour holds invocations of the project");
  assert.equal(result.reduce((s, r) => s + r.count, 0), mine.length);
  assert.equal(result.reduce((s, r) => s + r.error_count, 0), mine.filter((e) => e.metadata[0].response[0].status_code >= 400).length);
  for (const row of result) {
    assert.ok(row.min_execution_time <= row.p95_execution_time && row.p95_execution_time <= row.p99_execution_time && row.p99_execution_time <= row.max_execution_time);
  }
});

test("usage.api-counts splits the last hour's requests by area", () => {
  const { svc, edge } = service();
  const { result } = svc.query("usage.api-counts", `project=${project}&interval=hourly`, "secret");
  const since = (NOW - 3600e3) * 1000;
  const mine = edge.filter((e) => e.timestamp >= since && e.metadata[0].request[0].url.includes(project));
  const rest = mine.filter((e) => e.metadata[0].request[0].path.includes("/rest")).length;
  assert.ok(rest > 0, "the last hour holds REST requests of the project");
  assert.equal(result.reduce((s, r) => s + r.total_rest_requests, 0), rest);
  assert.match(result[0].timestamp, /^2026-11-20T1[01]:00:00$/);
});

test("sql is ignored, with a warning; a missing project_tier is FREE; Studio's intervals and the Management API path", () => {
  const { svc } = service();
  const free = svc.queryRaw("logs.all", { project, project_tier: "FREE" }, "secret");
  const studio = svc.queryRaw("logs.all", { project, sql: "select 1" }, "secret");
  assert.equal(studio.body, free.body);
  assert.equal(free.warning, null);
  assert.match(studio.warning, /`sql` ignored/);
  for (const interval of ["1hr", "1day", "7day"]) {
    const byPath = svc.queryPath(`/v1/projects/${project}/analytics/endpoints/usage.api-counts`, { interval }, "secret");
    assert.ok(JSON.parse(byPath.body).result.length > 0, interval);
  }
  assert.deepEqual(svc.query("functions.inv-stats", { project, interval: "1hr" }, "secret"), svc.query("functions.invocation-stats", { project, interval: "1hr" }, "secret"));
  assert.equal(LogEndpoints.route("/api/logs/edge_logs").kind, "ingest");
  assert.deepEqual(LogEndpoints.route("/api/logs", "POST"), { kind: "ingest", methods: ["POST"] });
  assert.deepEqual(LogEndpoints.route("/health"), { kind: "health", methods: ["GET"] });
  assert.deepEqual(LogEndpoints.route("/api/ingest/status", "GET"), { kind: "ingest-status", methods: ["GET"] });
  assert.throws(() => LogEndpoints.route("/nope"), (e) => e.status === 404 && e.code === "not_found");
});

test("a failed query throws an Error with status and code", () => {
  const { svc } = service();
  assert.throws(() => svc.query("logs.all", { project_tier: "FREE" }, "secret"), (e) => e instanceof Error && e.status === 400 && e.code === "missing_parameter" && /`project`/.test(e.message));
  assert.throws(() => svc.query("logs.all", { project, project_tier: "FREE" }, "wrong"), (e) => e.status === 401 && e.code === "invalid_api_key");
});

test("an argument of the wrong type or a misspelt option is a 400 that names it, and the engine goes on", () => {
  const { svc } = service();
  const names = (parameter) => (e) => e instanceof Error && e.status === 400 && e.code === "invalid_parameter" && e.message.includes(`\`${parameter}\``);
  // wasm-bindgen's own string conversion trapped the engine on these (memory access out of bounds).
  assert.throws(() => svc.query(5, { project }, "secret"), names("endpoint"));
  assert.throws(() => svc.queryRaw("logs.all", { project }, 5), names("apiKey"));
  assert.throws(() => svc.query("logs.all", { project }, {}), names("apiKey"));
  assert.throws(() => svc.queryPath(5, {}, "secret"), names("path"));
  assert.throws(() => svc.ingest(5, "[]"), names("stream"));
  assert.throws(() => svc.ingest(undefined, "[]"), names("stream"));
  assert.throws(() => svc.authorizeIngest(5), names("apiKey"));
  assert.throws(() => LogEndpoints.route(5), names("path"));
  assert.throws(() => svc.setNow("x"), names("nowMs"));
  assert.equal(svc.query("logs.all", { project }, "secret").result.length, 100);

  const config = (pattern) => (e) => e.status === 400 && e.code === "invalid_config" && pattern.test(e.message);
  assert.throws(() => new LogEndpoints({ apikeys: ["k"] }), config(/unknown option `apikeys` \(known: apiKeys, ingestKeys, now, limits, blockStorage\)/));
  assert.throws(() => new LogEndpoints({ apiKeys: ["k"], limits: { maxBatchByte: 5 } }), config(/unknown limit `maxBatchByte` \(known: maxBatchBytes, /));
  assert.throws(() => new LogEndpoints({ apiKeys: "k" }), config(/apiKeys must be an array of keys/));
  assert.throws(() => new LogEndpoints({ now: "2026-11-20T12:00:00Z" }), config(/now must be a time in epoch milliseconds/));
  assert.throws(() => new LogEndpoints({ now: NaN }), config(/now must be a time in epoch milliseconds/));
  // A misspelt restriction is refused, not dropped (the key would read every project).
  assert.throws(() => new LogEndpoints({ apiKeys: [{ key: "k", project: ["abc"] }] }), config(/unknown field of a key in apiKeys `project` \(known: key, endpoints, projects\)/));
  assert.throws(() => new LogEndpoints({ limits: { maxStoreBytes: "big" } }), (e) => e.code === "invalid_config" && !/Error: /.test(e.message));
  assert.throws(() => new LogFeed(svc, { streem: "edge_logs" }), config(/unknown LogFeed option `streem`/));
});

test("health: 503 naming the keys a deployment lacks (a green check would hide that every call is refused)", () => {
  const answer = (options) => {
    const svc = new LogEndpoints(options);
    try {
      const { status, body } = svc.health();
      return { status, body: JSON.parse(body) };
    } finally {
      svc.free();
    }
  };
  assert.deepEqual(answer({ apiKeys: ["q"], ingestKeys: ["i"] }), { status: 200, body: { status: "ok" } });
  const noIngest = answer({ apiKeys: ["q"] });
  assert.equal(noIngest.status, 503);
  assert.match(noIngest.body.reason, /^no INGEST_KEYS configured/);
  assert.match(answer({}).body.reason, /^no INGEST_KEYS and no API_KEYS configured/);
  // A service given no query keys says so to a query, not "invalid API key".
  const keyless = new LogEndpoints();
  assert.throws(() => keyless.query("logs.all", { project: "p" }, "any"), (e) => e.status === 503 && e.code === "no_api_keys" && /no query \(`apiKeys`, API_KEYS\) keys/.test(e.message));
  keyless.free();
});

test("parseTime reads a time as query parameters do: no zone is UTC, numbers by magnitude", () => {
  for (const text of ["2026-11-20T12:00:00Z", "2026-11-20T12:00:00", "2026-11-20 12:00", "1795176000", "1795176000000", "1795176000000000"]) {
    assert.equal(LogEndpoints.parseTime(text), NOW, text);
  }
  assert.throws(() => LogEndpoints.parseTime("yesterday"), (e) => e.status === 400 && e.message.includes("`time`"));
});

test("a snapshot written and handed over in parts reopens as the whole; parts that do not add up are refused", () => {
  const { svc } = service();
  const bytes = svc.snapshot();
  // Written in parts: numbered, part 0 (the header) last, joining to the whole.
  const written = [];
  const order = [];
  assert.equal(svc.snapshotParts((index, part) => { written[index] = part; order.push(index); }), bytes.length);
  assert.ok(written.length >= 1 && order.at(-1) === 0, `order ${order}`);
  assert.deepEqual(Buffer.concat(written), Buffer.from(bytes));
  assert.throws(() => svc.snapshotParts(() => { throw new Error("disk full"); }), /disk full/);
  const parts = [];
  for (let at = 0; at < bytes.length; at += 4096) parts.push(bytes.subarray(at, at + 4096));
  const query = (s) => s.query("usage.api-counts", { project, interval: "minutely" }, "secret").result;
  const whole = LogEndpoints.fromSnapshot(bytes, { apiKeys: ["secret"], now: NOW });
  // A lazy iterable, as the edge worker's storage cursor is.
  const fromParts = LogEndpoints.fromSnapshotParts((function* () { yield* parts; })(), bytes.length, { apiKeys: ["secret"], now: NOW });
  assert.ok(query(whole).length > 0);
  assert.deepEqual(query(fromParts), query(whole));
  const refused = (e) => e.status === 400 && e.code === "invalid_snapshot";
  assert.throws(() => LogEndpoints.fromSnapshotParts(parts, bytes.length + 1, {}), (e) => refused(e) && /were given for a snapshot of/.test(e.message));
  assert.throws(() => LogEndpoints.fromSnapshotParts(parts.slice(0, -1), bytes.length, {}), (e) => refused(e) && /hold \d+ bytes, not/.test(e.message));
  assert.throws(() => LogEndpoints.fromSnapshotParts(parts, bytes.length - 1, {}), (e) => refused(e) && /were given for a snapshot of/.test(e.message));
  assert.throws(() => LogEndpoints.fromSnapshotParts([...parts, new Uint8Array(1)], bytes.length, {}), (e) => refused(e) && /more than/.test(e.message));
  assert.throws(() => LogEndpoints.fromSnapshotParts([...parts, "x"], bytes.length, {}), (e) => refused(e) && /not a Uint8Array but a string/.test(e.message));
  assert.throws(() => LogEndpoints.fromSnapshotParts(7, 1, {}), refused);
  // A claim the header does not make: 400, before memory is grown for it.
  assert.throws(() => LogEndpoints.fromSnapshotParts(parts, 4e9, {}), (e) => refused(e) && /4000000000 bytes were given/.test(e.message));
  // What the iterable throws (a storage error) is thrown again, not taken for a bad snapshot.
  const failing = (function* () { yield parts[0]; throw new Error("SQLITE_IOERR"); })();
  assert.throws(() => LogEndpoints.fromSnapshotParts(failing, bytes.length, {}), (e) => !("code" in e) && /SQLITE_IOERR/.test(e.message));
  assert.throws(() => LogEndpoints.fromSnapshotParts([null], bytes.length, {}), (e) => refused(e) && /not a Uint8Array but null/.test(e.message));
});

test("blockStorage keeps sealed text outside the engine: the same answers, a snapshot that reopens only with it, and faults named", () => {
  const blocks = new Map();
  const blockStorage = { put: (key, bytes) => void blocks.set(key, bytes), get: (key) => blocks.get(key) };
  const options = { apiKeys: ["secret"], now: NOW, blockStorage };
  const inMemory = service().svc;
  const svc = new LogEndpoints(options);
  const edge = [...generate({ stream: "edge_logs", count: 3000, endMs: NOW, spanMs: 2 * 3600e3 })];
  svc.ingest("edge_logs", edge);
  inMemory.clearCache();
  const { storeBytes, storageBytes } = svc.stats();
  assert.ok(blocks.size > 0 && storageBytes > 0, `${blocks.size} blocks, ${storageBytes} bytes in storage`);
  assert.ok(storeBytes < inMemory.stats().storeBytes);
  const params = { project, project_tier: "PRO", iso_timestamp_end: new Date(NOW - 3600e3).toISOString() };
  const rows = svc.query("logs.all", params, "secret").result;
  assert.ok(rows.length > 0);
  assert.deepEqual(rows, inMemory.query("logs.all", params, "secret").result);
  const snapshot = svc.snapshot();
  assert.deepEqual(LogEndpoints.fromSnapshot(snapshot, options).query("logs.all", params, "secret").result, rows);
  assert.throws(() => LogEndpoints.fromSnapshot(snapshot, { apiKeys: ["secret"] }), (e) => e.code === "invalid_snapshot" && /block storage/.test(e.message));
  assert.throws(() => new LogEndpoints({ apiKeys: ["secret"], blockStorage: { put() {} } }), (e) => e.status === 400 && e.code === "invalid_config" && /blockStorage/.test(e.message));
  // A storage that loses its blocks: 503, never other rows.
  const forgetful = LogEndpoints.fromSnapshot(snapshot, { ...options, blockStorage: { put() {}, get: () => undefined } });
  assert.throws(() => forgetful.query("logs.all", params, "secret"), (e) => e.status === 503 && e.code === "storage_unavailable");
});

test("SealWorker compresses text blocks on a second thread: the same answers meanwhile, the same snapshot once settled", async () => {
  const options = { apiKeys: ["secret"], now: NOW };
  const inPlace = new LogEndpoints(options);
  const svc = new LogEndpoints(options);
  const sealer = new SealWorker(svc);
  const edge = [...generate({ stream: "edge_logs", count: 20000, endMs: NOW, spanMs: 2 * 3600e3 })];
  const params = { project, project_tier: "PRO" };
  for (let at = 0; at < edge.length; at += 5000) {
    const batch = edge.slice(at, at + 5000);
    inPlace.ingest("edge_logs", batch);
    svc.ingest("edge_logs", batch);
    sealer.pump();
    // Blocks handed out are read as open text until their seals come back.
    if (at === 0) assert.ok(svc.stats().unsealedBlocks > 0, "no block went to the worker");
    assert.deepEqual(svc.query("logs.all", params, "secret").result, inPlace.query("logs.all", params, "secret").result);
  }
  await sealer.settled();
  assert.equal(sealer.failed, null);
  assert.equal(svc.stats().unsealedBlocks, 0);
  assert.deepEqual(svc.snapshot(), inPlace.snapshot());
  // Jobs handed out again travel in the buffer the worker gave back.
  const take = svc.takeSealJobs.bind(svc);
  let inSpare = 0;
  svc.takeSealJobs = (spare) => {
    const jobs = take(spare);
    if (spare && jobs?.buffer === spare) inSpare += 1;
    return jobs;
  };
  const more = [...generate({ stream: "edge_logs", count: 10000, endMs: NOW, spanMs: 3600e3, seed: 3 })];
  for (let at = 0; at < more.length; at += 2000) {
    const batch = more.slice(at, at + 2000);
    inPlace.ingest("edge_logs", batch);
    svc.ingest("edge_logs", batch);
    sealer.pump();
    await sealer.settled();
  }
  assert.ok(inSpare > 0, "no jobs went in a buffer the worker gave back");
  assert.equal(sealer.failed, null);
  assert.deepEqual(svc.snapshot(), inPlace.snapshot());
  // Closed, it leaves the service sealing in place.
  await sealer.close();
  const later = [...generate({ stream: "edge_logs", count: 5000, endMs: NOW, spanMs: 3600e3, seed: 2 })];
  inPlace.ingest("edge_logs", later);
  svc.ingest("edge_logs", later);
  assert.equal(svc.stats().unsealedBlocks, 0);
  assert.deepEqual(svc.snapshot(), inPlace.snapshot());
  assert.throws(() => svc.installSealed(new Uint8Array([83, 9])), (e) => e.status === 500 && e.code === "bad_seal_jobs");
  assert.throws(() => LogEndpoints.sealBlocks(new Uint8Array([1, 2, 3])), (e) => e.status === 500 && e.code === "bad_seal_jobs");
});

test("takeSealJobs writes the jobs into a spare buffer long enough, and makes a new one otherwise", () => {
  const options = { apiKeys: ["secret"], now: NOW };
  const [fresh, reusing, inPlace] = [0, 1, 2].map(() => new LogEndpoints(options));
  fresh.deferSeals(true);
  reusing.deferSeals(true);
  const edge = [...generate({ stream: "edge_logs", count: 20000, endMs: NOW, spanMs: 2 * 3600e3 })];
  for (const svc of [fresh, reusing, inPlace]) svc.ingest("edge_logs", edge);
  const jobs = fresh.takeSealJobs();
  const spare = new Uint8Array(jobs.length + 100).fill(7);
  const inSpare = reusing.takeSealJobs(spare);
  assert.equal(inSpare.buffer, spare.buffer);
  assert.deepEqual(inSpare, jobs);
  assert.equal(fresh.takeSealJobs(spare), undefined, "nothing left to hand out");
  fresh.installSealed(LogEndpoints.sealBlocks(jobs));
  reusing.installSealed(LogEndpoints.sealBlocks(inSpare));
  assert.deepEqual(reusing.snapshot(), inPlace.snapshot());
  assert.deepEqual(fresh.snapshot(), inPlace.snapshot());
  // Too short a spare: the jobs come in a new buffer.
  const later = [...generate({ stream: "edge_logs", count: 5000, endMs: NOW, spanMs: 3600e3, seed: 2 })];
  reusing.ingest("edge_logs", later);
  const short = new Uint8Array(8);
  const own = reusing.takeSealJobs(short);
  assert.notEqual(own.buffer, short.buffer);
  assert.ok(own.length > short.length);
  // The buffer a worker hands back is an ArrayBuffer: taken as it is.
  reusing.ingest("edge_logs", [...generate({ stream: "edge_logs", count: 5000, endMs: NOW, spanMs: 3600e3, seed: 4 })]);
  const handedBack = new ArrayBuffer(own.length * 4);
  assert.equal(reusing.takeSealJobs(handedBack).buffer, handedBack);
});

test("batchBuffer lends the module's memory to read a batch into, ingestBuffer ingests it as ingest would; bad lengths are named", () => {
  const options = { apiKeys: ["secret"], now: NOW, limits: { maxBatchBytes: 32 << 20 } };
  const [buffered, copied] = [0, 1].map(() => new LogEndpoints(options));
  const text = new TextEncoder().encode(ndjson(generate({ stream: "edge_logs", count: 4000, endMs: NOW, spanMs: 2 * 3600e3 })));
  // Batches cut at line ends, each carried over part as a host reading a file would.
  const batchBytes = 100_000;
  let filled = 0;
  let at = 0;
  while (at < text.length || filled > 0) {
    const view = buffered.batchBuffer(batchBytes);
    assert.equal(view.length, batchBytes);
    const take = Math.min(batchBytes - filled, text.length - at);
    view.set(text.subarray(at, at + take), filled);
    at += take;
    filled += take;
    const end = at === text.length ? filled : view.lastIndexOf(10, filled - 1) + 1;
    const batch = view.slice(0, end);
    assert.deepEqual(buffered.ingestBuffer("edge_logs", end), copied.ingest("edge_logs", batch));
    // The view may be stale after a call into the module: asked for again, it holds the bytes.
    const again = buffered.batchBuffer(batchBytes);
    assert.deepEqual(again.subarray(0, end), batch);
    again.copyWithin(0, end, filled);
    filled -= end;
  }
  assert.equal(buffered.stats().edgeEntries, 4000);
  assert.deepEqual(buffered.snapshot(), copied.snapshot());
  // Lengths that are not a whole number of bytes within the limit or the buffer are named, not wrapped.
  const badLengths = [(32 << 20) + 1, 2 ** 32, -1, 1.5, NaN, undefined, "10"].map((n) => () => buffered.batchBuffer(n));
  badLengths.push(...[batchBytes + 1, 2 ** 32, -1, NaN, undefined].map((n) => () => buffered.ingestBuffer("edge_logs", n)));
  for (const call of badLengths) {
    assert.throws(call, (e) => e.status === 400 && e.code === "invalid_parameter" && /length/.test(e.message));
  }
  assert.throws(() => buffered.ingestBuffer("nope", 10), (e) => e.status === 400 && e.code === "unknown_stream");
  // A view handed to ingest is read whole, or refused when copying it moved the module's memory: never other bytes.
  const fresh = new LogEndpoints(options);
  const big = fresh.batchBuffer(24 << 20);
  const head = text.subarray(0, text.lastIndexOf(10) + 1);
  big.fill(10);
  big.set(head);
  let viaView;
  try {
    viaView = fresh.ingest("edge_logs", big);
  } catch (e) {
    assert.ok(e.status === 400 && /batch/.test(e.message) && /ingestBuffer/.test(e.message), e.message);
  }
  if (viaView) assert.deepEqual(viaView, new LogEndpoints(options).ingest("edge_logs", head));
  // batchBuffer(0) gives the buffer back; a new one starts zeroed.
  assert.equal(fresh.batchBuffer(0).length, 0);
  assert.ok(fresh.batchBuffer(16).every((b) => b === 0));
});

test("SealWorker.read reads batches on a second thread: the reports, errors, answers and entries ingest gives", async () => {
  const options = { apiKeys: ["secret"], now: NOW, limits: { maxBatchEntries: 3000, maxReportedRejections: 2 } };
  const here = new LogEndpoints(options);
  const svc = new LogEndpoints(options);
  const sealer = new SealWorker(svc);
  const functions = [...generate({ stream: "function_edge_logs", count: 9000, endMs: NOW, spanMs: 2 * 3600e3 })];
  const ndjson = (entries) => entries.map((e) => JSON.stringify(e)).join("\n") + "\n{oops\n[]\n{\"id\": 5}\n";
  const batches = [0, 2500, 5000].map((at) => Buffer.from(ndjson(functions.slice(at, at + 2500))));
  // One batch over the entry limit, for the worker: refused whole, as ingest refuses it.
  batches.splice(2, 0, Buffer.from(ndjson(functions.slice(0, 3100))));
  for (const [k, batch] of batches.entries()) {
    const expected = (() => { try { return here.ingest("function_edge_logs", batch); } catch (e) { return { code: e.code, status: e.status }; } })();
    // Alternated with ingest: the worker reads every other batch, appended here once it is back.
    let got;
    if (k % 2 === 0) {
      const rows = svc.stats().functionRows;
      const reading = sealer.read("function_edge_logs", batch);
      assert.equal(svc.stats().functionRows, rows, "a batch read here, not on the worker");
      got = await reading.catch((e) => ({ code: e.code, status: e.status }));
    } else {
      got = svc.ingest("function_edge_logs", batch);
    }
    assert.deepEqual(got, expected, `batch ${k}`);
  }
  assert.equal(sealer.failed, null);
  const params = { project, interval: "1hr" };
  assert.deepEqual(svc.query("functions.invocation-stats", params, "secret").result, here.query("functions.invocation-stats", params, "secret").result);
  assert.equal(svc.stats().functionRows, here.stats().functionRows);
  assert.deepEqual(svc.snapshot(), here.snapshot());
  // Edge entries too; and once closed, batches are read here.
  const edge = Buffer.from([...generate({ stream: "edge_logs", count: 2000, endMs: NOW, spanMs: 3600e3 })].map((e) => JSON.stringify(e)).join("\n"));
  assert.deepEqual(await sealer.read("edge_logs", edge), here.ingest("edge_logs", edge));
  await assert.rejects(sealer.read("nope", edge), (e) => e.status === 400 && e.code === "unknown_stream");
  await assert.rejects(sealer.read(42, edge), (e) => e.status === 400 && e.parameter === "stream");
  // A read made while the worker is closing is read here, not lost with it.
  const closing = sealer.close();
  const later = Buffer.from([...generate({ stream: "function_edge_logs", count: 100, endMs: NOW, spanMs: 3600e3, seed: 3 })].map((e) => JSON.stringify(e)).join("\n"));
  let timer;
  const hung = new Promise((_, reject) => (timer = setTimeout(() => reject(new Error("a read made while closing never settled")), 10_000)));
  const readWhileClosing = await Promise.race([sealer.read("function_edge_logs", later), hung]).finally(() => clearTimeout(timer));
  assert.deepEqual(readWhileClosing, here.ingest("function_edge_logs", later));
  await closing;
  assert.deepEqual(svc.snapshot(), here.snapshot());
  assert.throws(() => svc.ingestRead(new Uint8Array([1, 2, 3])), (e) => e.status === 500 && e.code === "bad_read_job");
  assert.throws(() => LogEndpoints.readBatch(new Uint8Array([1, 2, 3]), edge), (e) => e.status === 500 && e.code === "bad_read_job");
});

test("LogFeed takes bytes or text, split anywhere, and names `bytes` for anything else", () => {
  const lines = [...generate({ stream: "edge_logs", count: 50, endMs: NOW, spanMs: 3600e3 })].map((e) => JSON.stringify(e)).join("\n");
  for (const pieces of [[lines], [lines.slice(0, 1001), lines.slice(1001)], [Buffer.from(lines.slice(0, 700)), lines.slice(700)]]) {
    const svc = new LogEndpoints({ apiKeys: ["k"] });
    const feed = new LogFeed(svc);
    for (const piece of pieces) feed.push(piece);
    const report = feed.finish();
    assert.deepEqual([report.accepted, report.rejectedTotal], [50, 0]);
    assert.throws(() => feed.push(5), (e) => e.status === 400 && e.parameter === "bytes" && /must be a Uint8Array or a string/.test(e.message));
    feed.free();
    svc.free();
  }
});
