// The edge worker: binds the wasm module to HTTP as contract section 3 says,
// with each project's entries of each UTC day in a Durable Object of its own
// (a shard; the core decides the rules, see src/shard/).
//
// - The default export (the front) routes requests, answers CORS preflights
//   and wrong methods, and checks every call and key with its own data-less
//   engine before anything is sent on. An ingested batch is split by shard
//   (one parse, in wasm), recorded in the directory, and each part sent to its
//   shard in parallel; the answer says which entries were kept. A query is
//   planned (which project, which days), the directory names the shards that
//   exist, they are asked (logs.all newest day first, stopping at 100 rows)
//   and their answers merged.
// - `LogStore`, a shard, holds an in-memory store, appends every accepted
//   part to its SQLite storage before answering, and rebuilds from storage
//   when it wakes or after a wasm trap: from its last snapshot and the batches
//   after it. An alarm writes snapshots, warms its cache and applies retention.
// - `Directory`, one object, knows which shards exist and each project's URL
//   trigram filter (for usage.api-counts patterns).
// - With SHARDING=off every request goes to one `LogStore` named `logs` (the
//   deployment before sharding; the load test compares the two).

import { initSync, LogEndpoints, ShardDirectory, __wbg_reset_state } from "../pkg/log_endpoints.js";
import wasmModule from "../pkg/log_endpoints_bg.wasm";

initSync({ module: wasmModule });

// Every object of this isolate shares the wasm instance: after a trap it is
// replaced, and each object's engine from before is gone with it. The
// generation tells an object its engine must be rebuilt.
let engineGeneration = 0;
function resetEngine() {
  __wbg_reset_state();
  engineGeneration++;
}

const DEFAULT_MAX_BODY_BYTES = 8 * 1024 * 1024;
// The store's memory budget: a Workers isolate has 128 MB for the wasm memory,
// the JS heap and a batch in flight.
const DEFAULT_MAX_STORE_BYTES = 64 * 1024 * 1024;
/** SQLite values in Durable Objects are limited to 2 MB; batches are stored in parts. */
const PART_BYTES = 1024 * 1024;
/** Stored batches older than the longest retention are never read again. */
const RETENTION_US = LogEndpoints.constants().retentionDays * 24 * 3600 * 1e6;
/** A shard's alarm: snapshot, cache warming and retention, as often as the cache warms. */
const MAINTAIN_EVERY_MS = 300_000;
/** Request headers the front passes on to shards (test hooks only act when TEST_HOOKS=1). */
const FORWARDED_HEADERS = ["X-Test-Now-Ms", "X-Test-Trap", "X-Test-Fail-Storage"];

const CORS_HEADERS = {
  "Access-Control-Allow-Origin": "*",
  "Access-Control-Allow-Methods": "GET, POST, OPTIONS",
  "Access-Control-Allow-Headers": "X-API-KEY, Authorization, Content-Type, Content-Encoding",
  "Access-Control-Expose-Headers": "X-Cache, Cache-Control, X-Endpoint-Warning",
  "Access-Control-Max-Age": "86400",
};

function json(status, body, headers = {}) {
  return new Response(typeof body === "string" ? body : JSON.stringify(body), {
    status,
    headers: { "Content-Type": "application/json; charset=utf-8", ...headers },
  });
}

function errorResponse(status, code, message, headers = {}) {
  return json(status, { error: { code, message } }, headers);
}

function withCors(response) {
  const out = new Response(response.body, response);
  for (const [k, v] of Object.entries(CORS_HEADERS)) out.headers.set(k, v);
  return out;
}

function logStore(env, name = "logs") {
  return env.LOG_STORE.get(env.LOG_STORE.idFromName(name));
}

function directory(env) {
  return env.DIRECTORY.get(env.DIRECTORY.idFromName("directory"));
}

/** The front's engine: keys, limits and the rules, no entries. One per isolate. */
let frontEngine;
function front(env) {
  if (!frontEngine || frontEngine.generation !== engineGeneration) {
    const settings = settingsFrom(env);
    frontEngine = {
      generation: engineGeneration,
      settings,
      service: new LogEndpoints({
        apiKeys: settings.apiKeys,
        ingestKeys: settings.ingestKeys,
        now: settings.fixedNowMs,
        limits: { maxBatchBytes: settings.maxBodyBytes },
      }),
    };
  }
  return frontEngine;
}

export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    let target;
    try {
      target = LogEndpoints.route(url.pathname); // the core knows the paths; 404 otherwise
    } catch (e) {
      return withCors(errorResponse(e.status, e.code, e.message));
    }
    if (request.method === "OPTIONS") {
      return new Response(null, { status: 204, headers: CORS_HEADERS });
    }
    if (!target.methods.includes(request.method)) {
      return withCors(
        errorResponse(405, "method_not_allowed", `method ${request.method} is not allowed here; use ${target.methods.join(" or ")}`, {
          Allow: [...target.methods, "OPTIONS"].join(", "),
        }),
      );
    }
    if (env.SHARDING === "off") return withCors(await logStore(env).fetch(request));
    const { service, settings } = front(env);
    const testNow = settings.testHooks ? request.headers.get("X-Test-Now-Ms") : null;
    if (testNow !== null) service.setNow(Number(testNow));
    try {
      if (target.kind === "ingest") return withCors(await ingestSharded(request, url, target.stream, env, service, settings));
      return withCors(await querySharded(request, url, env, service));
    } catch (e) {
      if (isAnswerableError(e)) return withCors(errorResponse(e.status, e.code, e.message));
      console.error("log-endpoints: front fault:", e && e.message);
      frontEngine = undefined;
      return withCors(errorResponse(503, "unavailable", "the front worker could not complete the request; retry shortly"));
    } finally {
      if (testNow !== null) service.setNow(settings.fixedNowMs);
    }
  },

  /**
   * Cron trigger (every 5 minutes in wrangler.jsonc): the directory forgets
   * shards past retention (each shard empties itself from its alarm). With
   * SHARDING=off, the one store's cache warming and retention.
   */
  async scheduled(controller, env) {
    if (env.SHARDING === "off") {
      await logStore(env).fetch("https://log-store.internal/__maintain", {
        method: "POST",
        headers: { "X-Scheduled-Time": String(controller.scheduledTime) },
      });
      return;
    }
    const { settings } = front(env);
    const nowMs = settings.testHooks ? controller.scheduledTime : (settings.fixedNowMs ?? controller.scheduledTime);
    await directory(env).fetch("https://directory.internal/retain", { method: "POST", body: JSON.stringify({ nowMs }) });
  },
};

function forwardedHeaders(request, key) {
  const headers = { "X-API-KEY": key ?? "" };
  for (const name of FORWARDED_HEADERS) {
    const value = request.headers.get(name);
    if (value !== null) headers[name] = value;
  }
  return headers;
}

/**
 * An ingest: the key is checked and the batch split before anything is sent.
 * The directory records the parts' shards first (a shard it does not list is
 * never asked), then each shard stores its part, in parallel.
 */
async function ingestSharded(request, url, stream, env, service, settings) {
  const key = presentedKey(request, url);
  service.authorizeIngest(key);
  const body = await readBody(request, settings.maxBodyBytes);
  const split = service.splitByShard(stream, body);
  const failed = (part, status, code, message) => ({ indexes: part.indexes, error: { status, code, message } });
  let parts;
  try {
    const registered = await directory(env).fetch("https://directory.internal/register", {
      method: "POST",
      body: JSON.stringify(split.parts.map(({ projectKey, day, urlBits }) => ({ projectKey, day, urlBits }))),
    });
    if (!registered.ok) throw new Error((await registered.json()).error?.message ?? `status ${registered.status}`);
  } catch (e) {
    parts = split.parts.map((part) => failed(part, 503, "unavailable", `the directory of shards could not record the batch (${e.message})`));
  }
  parts ??= await Promise.all(
    split.parts.map(async (part) => {
      try {
        const res = await logStore(env, part.shard).fetch(`https://shard.internal/api/logs/${stream}`, {
          method: "POST",
          body: part.body,
          headers: { ...forwardedHeaders(request, key), "X-Shard": part.shard },
        });
        const answer = await res.json();
        if (res.ok) return { indexes: part.indexes, report: answer };
        return failed(part, res.status, answer.error?.code ?? "unavailable", answer.error?.message ?? `status ${res.status}`);
      } catch (e) {
        return failed(part, 503, "unavailable", `shard ${part.shard} did not answer (${e.message})`);
      }
    }),
  );
  const combined = service.combineIngest({ rejected: split.rejected, rejectedTotal: split.rejectedTotal, parts });
  return json(combined.status, combined.body, combined.status === 200 ? {} : { "Retry-After": "1" });
}

/** A shard's answer as `mergeAnswers` takes it; a shard's error is the answer's. */
async function askShard(env, name, request, url, key, postBody) {
  const res = await logStore(env, name).fetch(`https://shard.internal${url.pathname}${url.search}`, {
    method: request.method,
    body: postBody,
    headers: { ...forwardedHeaders(request, key), "X-Shard": name },
  });
  const body = await res.text();
  if (!res.ok) {
    let error;
    try {
      error = JSON.parse(body).error;
    } catch {}
    throw new HttpError(res.status, error?.code ?? "unavailable", error?.message ?? `shard ${name} answered ${res.status}`);
  }
  const maxAge = /max-age=(\d+)/.exec(res.headers.get("Cache-Control") ?? "");
  return { body, cache: res.headers.get("X-Cache") ?? undefined, maxAge: maxAge ? Number(maxAge[1]) : undefined, warning: res.headers.get("X-Endpoint-Warning") ?? undefined };
}

/**
 * A query: checked and planned by the front's engine (a refused key or a bad
 * parameter never reaches a shard), the shards looked up, asked and merged.
 */
async function querySharded(request, url, env, service) {
  const key = presentedKey(request, url);
  const { params, postBody } = await readParams(request, url);
  const plan = service.planQuery(url.pathname, params, key);
  const looked = await directory(env).fetch("https://directory.internal/lookup", { method: "POST", body: JSON.stringify(plan) });
  if (!looked.ok) throw new HttpError(503, "unavailable", "the directory of shards did not answer; retry shortly");
  const { shards } = await looked.json();
  let parts = [];
  if (shards.length === 0) {
    // No shard holds a row of the call: the answer of a store without entries.
    return queryAnswer(service.queryPath(url.pathname, params, key), 0);
  } else if (plan.newestFirst) {
    // Newest day first, in waves of 1, 2, 4 … shards, until enough rows came.
    let rows = 0;
    for (let at = 0, wave = 1; at < shards.length && rows < plan.newestFirst; at += wave, wave *= 2) {
      const answers = await Promise.all(shards.slice(at, at + wave).map((name) => askShard(env, name, request, url, key, postBody)));
      for (const answer of answers) rows += JSON.parse(answer.body).result.length;
      parts.push(...answers);
    }
  } else {
    parts = await Promise.all(shards.map((name) => askShard(env, name, request, url, key, postBody)));
  }
  return queryAnswer(LogEndpoints.mergeAnswers(plan.endpoint, parts), parts.length);
}

/** A `queryRaw`-shaped answer as HTTP; the front also says how many shards it read. */
function queryAnswer(out, shardsAsked) {
  const headers = out.cache ? { "Cache-Control": `max-age=${out.maxAge}`, "X-Cache": out.cache } : { "Cache-Control": "no-store" };
  if (out.warning) headers["X-Endpoint-Warning"] = out.warning;
  if (shardsAsked !== undefined) headers["X-Shards"] = String(shardsAsked);
  return json(200, out.body, headers);
}

/** A query's parameters: the URL's, or a POSTed JSON object (and its text, to pass on). */
async function readParams(request, url) {
  if (request.method !== "POST") return { params: url.searchParams, postBody: undefined };
  const text = new TextDecoder().decode(await readBody(request, 64 * 1024));
  let body;
  try {
    body = text.trim() === "" ? {} : JSON.parse(text);
  } catch (e) {
    throw new HttpError(400, "invalid_parameter", `the POST body must be a JSON object of parameters (${e.message})`);
  }
  if (body === null || typeof body !== "object" || Array.isArray(body)) {
    throw new HttpError(400, "invalid_parameter", "the POST body must be a JSON object of parameters");
  }
  return { params: body, postBody: text };
}

/** Settings from the environment (vars and secrets); see the README. */
function settingsFrom(env) {
  const list = (value) =>
    String(value ?? "")
      .split(",")
      .map((s) => s.trim())
      .filter(Boolean);
  // A JSON array (plain keys and `{ key, endpoints?, projects? }`) or a comma list.
  const keys = (value) => (String(value ?? "").trim().startsWith("[") ? JSON.parse(value) : list(value));
  const number = (value) => (value === undefined || value === "" ? undefined : Number(value));
  return {
    apiKeys: keys(env.API_KEYS),
    ingestKeys: list(env.INGEST_KEYS),
    fixedNowMs: number(env.FIXED_NOW_MS),
    maxBodyBytes: number(env.MAX_BODY_BYTES) ?? DEFAULT_MAX_BODY_BYTES,
    maxStoreBytes: number(env.MAX_STORE_BYTES) ?? DEFAULT_MAX_STORE_BYTES,
    // Lets tests move the clock per request with X-Test-Now-Ms; never set it in production.
    testHooks: env.TEST_HOOKS === "1",
  };
}

/** Key from X-API-KEY, else Authorization: Bearer, else the api_key parameter. */
function presentedKey(request, url) {
  const header = request.headers.get("X-API-KEY");
  if (header) return header;
  const auth = request.headers.get("Authorization");
  const bearer = auth && /^Bearer\s+(.+)$/i.exec(auth);
  if (bearer) return bearer[1].trim();
  return url.searchParams.get("api_key") ?? undefined;
}

/** An error the caller is answered with as it is: the worker's own or the core's (status and code). */
function isAnswerableError(e) {
  return e instanceof HttpError || (e && typeof e.status === "number" && typeof e.code === "string");
}

class HttpError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

/** Reads the body as bytes (gunzipped when Content-Encoding says gzip), refusing more than `limit`. */
async function readBody(request, limit) {
  const declared = Number(request.headers.get("Content-Length") ?? NaN);
  if (declared > limit) {
    throw new HttpError(413, "payload_too_large", `body of ${declared} bytes is larger than the limit of ${limit} bytes; split it into smaller batches`);
  }
  if (!request.body) return new Uint8Array(0);
  let stream = request.body;
  const encoding = (request.headers.get("Content-Encoding") ?? "").toLowerCase();
  if (encoding === "gzip") stream = stream.pipeThrough(new DecompressionStream("gzip"));
  else if (encoding && encoding !== "identity") {
    throw new HttpError(400, "unreadable_batch", `unsupported Content-Encoding ${encoding}; send gzip or plain`);
  }
  const parts = [];
  let total = 0;
  try {
    for await (const chunk of stream) {
      total += chunk.byteLength;
      if (total > limit) {
        throw new HttpError(413, "payload_too_large", `body is larger than the limit of ${limit} bytes (after decompression); split it into smaller batches`);
      }
      parts.push(chunk);
    }
  } catch (e) {
    if (e instanceof HttpError) throw e;
    throw new HttpError(400, "unreadable_batch", `the body could not be read (${e.message})`);
  }
  const bytes = new Uint8Array(total);
  let at = 0;
  for (const p of parts) {
    bytes.set(p, at);
    at += p.byteLength;
  }
  return bytes;
}

export class LogStore {
  constructor(ctx, env) {
    this.ctx = ctx;
    this.settings = settingsFrom(env);
    this.sql = ctx.storage.sql;
    this.sql.exec(`CREATE TABLE IF NOT EXISTS batches (
      id INTEGER PRIMARY KEY AUTOINCREMENT, stream TEXT NOT NULL, newest_us INTEGER NOT NULL,
      received_ms INTEGER NOT NULL, bytes INTEGER NOT NULL)`);
    this.sql.exec(`CREATE TABLE IF NOT EXISTS batch_parts (
      batch_id INTEGER NOT NULL, part INTEGER NOT NULL, body BLOB NOT NULL, PRIMARY KEY (batch_id, part))`);
    // The store as of batch `last_batch_id` (a snapshot, in parts): waking reads
    // it and replays only the batches after it.
    this.sql.exec(`CREATE TABLE IF NOT EXISTS snapshot (
      id INTEGER PRIMARY KEY CHECK (id = 1), last_batch_id INTEGER NOT NULL, bytes INTEGER NOT NULL, written_ms INTEGER NOT NULL)`);
    this.sql.exec("CREATE TABLE IF NOT EXISTS snapshot_parts (part INTEGER PRIMARY KEY, body BLOB NOT NULL)");
    ctx.blockConcurrencyWhile(async () => {
      this.alarmAt = await ctx.storage.getAlarm();
      this.rebuild();
    });
  }

  /**
   * A fresh in-memory store: the stored snapshot (if any, and if it reads back),
   * then every stored batch after it, in arrival order. A snapshot that does not
   * read back (checksum, truncation) is logged and dropped, and every batch is
   * replayed instead: nothing is lost, only time.
   */
  rebuild() {
    const started = Date.now();
    // An engine from before a reset is gone: nothing of it to free.
    if (this.generation === engineGeneration) this.service?.free();
    this.service = undefined;
    // No batch limit here beyond the engine's own: readBody enforces MAX_BODY_BYTES
    // on requests, and stored batches must load even if that setting was lowered.
    const options = {
      apiKeys: this.settings.apiKeys,
      ingestKeys: this.settings.ingestKeys,
      now: this.settings.fixedNowMs,
      limits: { maxStoreBytes: this.settings.maxStoreBytes },
    };
    const snapshot = this.sql.exec("SELECT last_batch_id, bytes FROM snapshot WHERE id = 1").toArray()[0];
    let after = 0;
    this.woke = { fromSnapshot: false };
    if (snapshot) {
      try {
        this.service = LogEndpoints.fromSnapshot(this.readParts("SELECT body FROM snapshot_parts ORDER BY part", [], snapshot.bytes), options);
        after = snapshot.last_batch_id;
        this.woke.fromSnapshot = true;
      } catch (e) {
        if (e?.code === "invalid_snapshot") {
          console.error(`log-endpoints: the stored snapshot was refused (${e.message}); rebuilding from the stored batches`);
          this.woke.snapshotRefused = e.message;
          this.dropSnapshot();
        } else {
          // Not the snapshot's fault (e.g. memory ran out in the engine): keep
          // it, start a clean instance and replay everything this time.
          console.error(`log-endpoints: restoring the snapshot failed (${e?.message}); replaying the stored batches`);
          this.woke.snapshotFailed = String(e?.message);
          this.service = undefined;
          resetEngine();
        }
      }
    }
    this.service ??= new LogEndpoints(options);
    const batches = this.sql.exec("SELECT id, stream, bytes FROM batches WHERE id > ? ORDER BY id", after).toArray();
    // Batches that did not load are retried on every rebuild; no snapshot is
    // written while there are any (it would leave them out for good).
    this.failedBatches = 0;
    for (const batch of batches) {
      try {
        const body = this.readParts("SELECT body FROM batch_parts WHERE batch_id = ? ORDER BY part", [batch.id], batch.bytes);
        this.service.ingest(batch.stream, body);
      } catch (e) {
        // One unreadable stored batch must not keep the object from starting.
        this.failedBatches++;
        console.error(`log-endpoints: stored batch ${batch.id} could not be loaded: ${e.message}`);
      }
    }
    this.generation = engineGeneration;
    this.woke.replayedBatches = batches.length;
    this.woke.failedBatches = this.failedBatches;
    this.woke.ms = Date.now() - started;
  }

  /** The parts a query selects, joined (`bytes` long). */
  readParts(query, bindings, bytes) {
    const body = new Uint8Array(bytes);
    let at = 0;
    for (const part of this.sql.exec(query, ...bindings)) {
      const chunk = new Uint8Array(part.body);
      body.set(chunk, at);
      at += chunk.byteLength;
    }
    if (at !== bytes) throw new Error(`stored parts hold ${at} bytes, not ${bytes}`);
    return body;
  }

  /** Writes `rows` of `body` in parts of at most PART_BYTES (SQLite's value limit). */
  writeParts(body, insert) {
    for (let part = 0, at = 0; at < body.byteLength; part++, at += PART_BYTES) insert(part, body.slice(at, at + PART_BYTES).buffer);
  }

  dropSnapshot() {
    this.ctx.storage.transactionSync(() => {
      this.sql.exec("DELETE FROM snapshot_parts");
      this.sql.exec("DELETE FROM snapshot");
    });
  }

  /**
   * Writes a snapshot of the store as of the newest stored batch, replacing the
   * last one in one transaction (all of it or none of it is stored).
   */
  writeSnapshot() {
    const last = this.sql.exec("SELECT coalesce(max(id), 0) AS id FROM batches").one().id;
    const current = this.sql.exec("SELECT last_batch_id FROM snapshot WHERE id = 1").toArray()[0];
    if (current && current.last_batch_id === last) return { written: false, lastBatchId: last };
    if (this.failedBatches > 0) return { written: false, lastBatchId: current?.last_batch_id ?? 0, reason: `${this.failedBatches} stored batches did not load` };
    const bytes = this.service.snapshot();
    this.ctx.storage.transactionSync(() => {
      this.sql.exec("DELETE FROM snapshot_parts");
      this.writeParts(bytes, (part, body) => this.sql.exec("INSERT INTO snapshot_parts (part, body) VALUES (?, ?)", part, body));
      this.sql.exec("INSERT OR REPLACE INTO snapshot (id, last_batch_id, bytes, written_ms) VALUES (1, ?, ?, ?)", last, bytes.byteLength, Date.now());
    });
    return { written: true, lastBatchId: last, bytes: bytes.byteLength };
  }

  async fetch(request) {
    const url = new URL(request.url);
    if (!this.service || this.generation !== engineGeneration) {
      try {
        this.rebuild();
      } catch {
        return errorResponse(503, "unavailable", "the query engine is restarting; retry shortly");
      }
    }
    const testNow = this.settings.testHooks ? request.headers.get("X-Test-Now-Ms") : null;
    if (testNow !== null) this.service.setNow(Number(testNow));
    try {
      if (url.pathname === "/__maintain") return await this.maintain(request);
      const target = LogEndpoints.route(url.pathname);
      if (target.kind === "ingest") return await this.ingest(request, url, target.stream);
      return await this.query(request, url);
    } catch (e) {
      return this.failure(e);
    } finally {
      if (testNow !== null) this.service?.setNow(this.settings.fixedNowMs);
    }
  }

  async query(request, url) {
    const { params } = await readParams(request, url);
    if (this.settings.testHooks && request.headers.get("X-Test-Trap") === "1") {
      throw new WebAssembly.RuntimeError("unreachable (simulated by X-Test-Trap)");
    }
    return queryAnswer(this.service.queryPath(url.pathname, params, presentedKey(request, url)));
  }

  async ingest(request, url, stream) {
    // The core decides: 401 for a missing or unknown key, 403 for a query key.
    this.service.authorizeIngest(presentedKey(request, url));
    const body = await readBody(request, this.settings.maxBodyBytes);
    const report = this.service.ingest(stream, body);
    if (report.accepted > 0) {
      try {
        // Test hook: this shard's storage write fails (X-Test-Fail-Storage names it, or is *).
        const fail = this.settings.testHooks ? request.headers.get("X-Test-Fail-Storage") : null;
        if (fail !== null && (fail === "*" || fail === request.headers.get("X-Shard"))) {
          throw new Error("storage write failed (simulated by X-Test-Fail-Storage)");
        }
        this.store(stream, body, report.newestTimestamp);
      } catch (e) {
        // Memory now holds entries storage does not: go back to what storage has.
        this.rebuild();
        throw new HttpError(503, "storage_unavailable", `the batch could not be stored and was not kept; retry later (${e.message})`);
      }
    }
    const { newestTimestamp, ...answer } = report;
    if (report.accepted > 0) await this.armAlarm();
    return json(200, answer);
  }

  /** Maintenance comes MAINTAIN_EVERY_MS after the first batch since the last. */
  async armAlarm() {
    if (this.alarmAt) return;
    this.alarmAt = Date.now() + MAINTAIN_EVERY_MS;
    await this.ctx.storage.setAlarm(this.alarmAt);
  }

  /**
   * The alarm: maintenance as the cron trigger did for the one store. It comes
   * back while cached results are kept warm; a shard whose batches are all past
   * retention deletes its storage.
   */
  async alarm() {
    this.alarmAt = null;
    if (!this.service || this.generation !== engineGeneration) this.rebuild();
    const status = await this.maintenance(Date.now(), null);
    if (!status.deleted && status.kept > 0) await this.armAlarm();
  }

  store(stream, body, newestUs) {
    this.ctx.storage.transactionSync(() => {
      const { id } = this.sql
        .exec("INSERT INTO batches (stream, newest_us, received_ms, bytes) VALUES (?, ?, ?, ?) RETURNING id", stream, newestUs ?? 0, Date.now(), body.byteLength)
        .one();
      this.writeParts(body, (part, bytes) => this.sql.exec("INSERT INTO batch_parts (batch_id, part, body) VALUES (?, ?, ?)", id, part, bytes));
    });
  }

  /**
   * Cache warming, dropping stored batches whose newest entry is past the longest
   * retention, and a fresh snapshot when batches came since the last one.
   */
  async maintain(request) {
    const scheduled = Number(request.headers.get("X-Scheduled-Time"));
    if (this.settings.testHooks && request.headers.get("X-Test-Corrupt-Snapshot") === "1") {
      // Flips one byte of the stored snapshot, as a damaged disk would.
      const first = this.sql.exec("SELECT body FROM snapshot_parts WHERE part = 0").toArray()[0];
      if (first) {
        const body = new Uint8Array(first.body);
        body[body.length >> 1] ^= 0x40;
        this.sql.exec("UPDATE snapshot_parts SET body = ? WHERE part = 0", body.buffer);
      }
      return json(200, { corrupted: Boolean(first) });
    }
    return json(200, await this.maintenance(Date.now(), this.settings.testHooks && scheduled ? scheduled : null));
  }

  /** `scheduled`: the time the test hooks set (retention, cache warming), else null. */
  async maintenance(clockMs, scheduled) {
    const nowMs = scheduled ?? this.settings.fixedNowMs ?? clockMs;
    const cutoffUs = (nowMs * 1000) - RETENTION_US;
    const expired = this.sql.exec("SELECT id FROM batches WHERE newest_us < ?", cutoffUs).toArray();
    if (expired.length > 0) {
      this.ctx.storage.transactionSync(() => {
        this.sql.exec("DELETE FROM batch_parts WHERE batch_id IN (SELECT id FROM batches WHERE newest_us < ?)", cutoffUs);
        this.sql.exec("DELETE FROM batches WHERE newest_us < ?", cutoffUs);
        // The snapshot holds the dropped batches' entries.
        this.sql.exec("DELETE FROM snapshot_parts");
        this.sql.exec("DELETE FROM snapshot");
      });
      if (this.sql.exec("SELECT count(*) AS n FROM batches").one().n === 0) {
        // Every batch is past retention: the shard's day is over for good.
        await this.ctx.storage.deleteAll();
        if (this.generation === engineGeneration) this.service?.free();
        this.service = undefined;
        return { droppedBatches: expired.length, deleted: true };
      }
      this.rebuild();
    }
    const snapshot = this.writeSnapshot();
    if (scheduled) this.service.setNow(scheduled);
    const warmed = this.service.warmCache();
    if (scheduled) this.service.setNow(this.settings.fixedNowMs);
    return { ...warmed, droppedBatches: expired.length, snapshot, woke: this.woke, ...this.service.stats() };
  }

  failure(e) {
    if (isAnswerableError(e)) {
      return errorResponse(e.status, e.code, e.message);
    }
    // Anything else is a fault inside the engine (a wasm trap): start a fresh
    // instance from storage so the next request is served normally.
    console.error("log-endpoints: engine fault, re-instantiating:", e && e.message);
    try {
      this.service = undefined;
      resetEngine();
      this.rebuild();
    } catch (again) {
      console.error("log-endpoints: rebuild failed:", again && again.message);
      this.service = undefined;
      return errorResponse(503, "unavailable", "the query engine is restarting; retry shortly");
    }
    return errorResponse(500, "internal_error", "internal error in the query engine; it was restarted, retry the request");
  }
}

/**
 * The directory of shards: which (project, day) shards exist and each
 * project's URL trigram filter, kept by the core's `ShardDirectory` in memory
 * and in SQLite (a row per shard, a filter per project), written before the
 * parts are sent so a stored part is always found.
 */
export class Directory {
  constructor(ctx) {
    this.ctx = ctx;
    this.sql = ctx.storage.sql;
    this.sql.exec("CREATE TABLE IF NOT EXISTS shards (project_key TEXT NOT NULL, day TEXT NOT NULL, PRIMARY KEY (project_key, day))");
    this.sql.exec("CREATE TABLE IF NOT EXISTS url_filters (project_key TEXT PRIMARY KEY, bits BLOB NOT NULL)");
    this.load();
  }

  load() {
    // An engine from before a reset is gone: nothing of it to free.
    if (this.generation === engineGeneration) this.directory?.free();
    this.directory = new ShardDirectory();
    this.generation = engineGeneration;
    for (const row of this.sql.exec("SELECT project_key, day FROM shards")) this.directory.add(row.project_key, row.day, []);
    for (const row of this.sql.exec("SELECT project_key, bits FROM url_filters")) this.directory.restoreFilter(row.project_key, new Uint8Array(row.bits));
  }

  async fetch(request) {
    if (this.generation !== engineGeneration) this.load();
    const url = new URL(request.url);
    const input = await request.json();
    try {
      if (url.pathname === "/register") return json(200, this.register(input));
      if (url.pathname === "/lookup") return json(200, { shards: this.directory.lookup(input) });
      if (url.pathname === "/retain") {
        const firstKeptDay = ShardDirectory.firstKeptDay(input.nowMs);
        const dropped = this.directory.dropBefore(firstKeptDay);
        this.sql.exec("DELETE FROM shards WHERE day < ?", firstKeptDay);
        return json(200, { dropped, firstKeptDay, shards: this.directory.shards() });
      }
      return errorResponse(404, "not_found", `no such path: ${url.pathname}`);
    } catch (e) {
      // Memory may now hold what storage does not: read it back.
      this.load();
      return errorResponse(503, "unavailable", `the directory of shards failed (${e?.message}); retry shortly`);
    }
  }

  register(parts) {
    const writes = [];
    for (const { projectKey, day, urlBits } of parts) {
      const added = this.directory.add(projectKey, day, urlBits);
      if (added.newShard || added.newBits) writes.push({ projectKey, day, added });
    }
    if (writes.length > 0) {
      this.ctx.storage.transactionSync(() => {
        for (const { projectKey, day, added } of writes) {
          if (added.newShard) this.sql.exec("INSERT OR IGNORE INTO shards (project_key, day) VALUES (?, ?)", projectKey, day);
          if (added.newBits) {
            this.sql.exec("INSERT OR REPLACE INTO url_filters (project_key, bits) VALUES (?, ?)", projectKey, this.directory.filter(projectKey).buffer);
          }
        }
      });
    }
    return { written: writes.length };
  }
}
