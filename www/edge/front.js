// The front: every client request comes here. It asks the core which route a
// path is, answers CORS preflights, and checks every call and key with its
// own data-less engine before anything is sent on.
// - An ingested batch is read and split by shard in the core, and kept by one
//   ingest partition (the one its key names) before the answer: one durable
//   write. The partition distributes it afterwards, in rounds.
// - A query is planned by the core; the directory partitions the plan names
//   are asked (at most six at once), each answers from its own shards, and
//   the core merges their answers.
// With SHARDING=off every request goes to one shard object named `logs`.
// docs/edge-deployment.md says how it works and what it costs.
import { checkEngine, engineGeneration, isServiceError, LogEndpoints, newEngine, recoverFrom, release, settingsFrom, unavailable } from "./engine.js";
import { errorResponse, preflight, readBody, requestParts, respond, withCors } from "./http.js";
import { directoryStub, ingestStub, inWaves, shardStub, SINGLE_SHARD } from "./stubs.js";

const { paramsBodyBytes: PARAMS_BODY_BYTES, maxConcurrent: MAX_CONCURRENT, drainBytes: DRAIN_BYTES } = LogEndpoints.constants();

/** An object's error answer, passed on to the client as it is. */
class ObjectError extends Error {
  constructor(response) {
    super(`an object answered ${response.status}`);
    this.response = response;
  }
}

export class Front {
  /** The front's engine: keys, limits and the rules, no entries. One per isolate. */
  engine(env) {
    if (!this.cached || this.cached.generation !== engineGeneration()) {
      const settings = settingsFrom(env);
      this.cached = { generation: engineGeneration(), settings, service: newEngine(settings, { maxBatchBytes: settings.maxBodyBytes }) };
    }
    return this.cached;
  }

  /** The clock of one request, epoch ms (null: the settings'). */
  requestNowMs(_request) {
    return null;
  }

  /** Headers the front adds to what it sends another object for a request. */
  forwardHeaders(_request) {
    return {};
  }

  /** The time a cron run acts as of. */
  scheduledNowMs(controller, settings) {
    return settings.fixedNowMs ?? controller.scheduledTime;
  }

  async fetch(request, env) {
    const response = await this.answer(request, env);
    // A body the answer did not need is read to its end before the answer
    // goes, or the runtime resets the connection the client keeps alive.
    if (request.body && !request.bodyUsed) await drain(request.body);
    return response;
  }

  async answer(request, env) {
    const url = new URL(request.url);
    let target;
    try {
      target = LogEndpoints.route(url.pathname, request.method); // 404 or 405 otherwise
    } catch (e) {
      return withCors(errorResponse(e));
    }
    if (request.method === "OPTIONS") return preflight();
    let engine;
    try {
      engine = this.engine(env);
    } catch (e) {
      return withCors(errorResponse(e));
    }
    const { service, settings } = engine;
    if (target.kind === "health") return withCors(respond(service.health()));
    const nowMs = this.requestNowMs(request);
    if (nowMs !== null) service.setNow(nowMs);
    try {
      if (target.kind === "ingest-status") return withCors(await this.ingestStatus(request, url, env, service, settings));
      if (!settings.sharding) return withCors(await shardStub(env, SINGLE_SHARD).fetch(request));
      if (target.kind === "ingest") return withCors(await this.ingest(request, url, env, service, settings));
      return withCors(await this.query(request, url, env, service));
    } catch (e) {
      if (e instanceof ObjectError) return withCors(e.response);
      if (!isServiceError(e)) {
        console.error("log-endpoints: front fault:", e && e.message);
        if (recoverFrom(e)) this.cached = undefined;
      }
      return withCors(errorResponse(e, "the front worker could not complete the request"));
    } finally {
      // (After a trap the engine is gone, and with it what this request set.)
      if (nowMs !== null && engine.generation === engineGeneration()) service.setNow(settings.fixedNowMs);
    }
  }

  /**
   * An ingest: the key checked and the batch read and split before anything
   * is sent; then one durable write, at the ingest partition its key names,
   * which remembers the key: a batch sent again is acknowledged, not kept twice.
   */
  async ingest(request, url, env, service, settings) {
    const parts = requestParts(request, url);
    service.authorizeRequest(parts); // the key before the body is read
    const body = await readBody(request, settings.maxBodyBytes);
    const prepared = service.prepareIngest(parts, body);
    const { key, partition, content } = prepared.key;
    if (prepared.shards === 0) return respond(prepared.answers.new);
    const res = await ingestStub(env, partition).fetch("https://ingest.internal/keep", {
      method: "POST",
      body: prepared.record,
      headers: { ...this.forwardHeaders(request), "X-Batch-Key": key, "X-Batch-Content": content, "X-Partition": partition, "X-Batch-Shards": String(prepared.shards) },
    });
    if (!res.ok) throw new ObjectError(res);
    const response = respond(prepared.answers[LogEndpoints.readKeepAnswer(await res.text())]);
    response.headers.set("X-Objects", partition);
    return response;
  }

  /**
   * What the ingest partitions hold and have not yet distributed, what waits
   * for a shard and what was not kept (`GET /api/ingest/status`): for an
   * unrestricted query key, checked before any partition is asked.
   */
  async ingestStatus(request, url, env, service, settings) {
    service.authorizeStatus(requestParts(request, url));
    const names = settings.sharding ? LogEndpoints.ingestNames() : [];
    const statuses = await inWaves(names, MAX_CONCURRENT, async (name) => {
      const res = await ingestStub(env, name).fetch("https://ingest.internal/status");
      if (!res.ok) throw new ObjectError(res);
      return [name, await res.json()];
    });
    return respond(LogEndpoints.ingestStatus(settings.sharding, statuses));
  }

  /**
   * A query: checked and planned by the core (a refused key or a bad
   * parameter reaches no other object), the directory partitions of its plan
   * asked, and their answers merged.
   */
  async query(request, url, env, service) {
    const body = request.method === "POST" ? await readBody(request, PARAMS_BODY_BYTES) : undefined;
    const call = requestParts(request, url, body);
    const made = engineGeneration();
    const query = service.shardQuery(call); // refuses a body that is not UTF-8
    const plan = query.plan;
    // Sent on as JSON, so the body goes as the text the core has just read.
    const forwarded = body === undefined ? call : { ...call, body: new TextDecoder().decode(body) };
    try {
      for (let wave = query.nextWave(); wave.length > 0; wave = query.nextWave()) {
        const answers = await Promise.all(wave.map((directory) => this.askDirectory(env, directory, plan, forwarded, request)));
        checkEngine(made);
        answers.forEach((answer, i) => query.add(wave[i], answer));
      }
      return respond(query.answer());
    } finally {
      release(query, made);
    }
  }

  /** A directory partition's answer from its shards (null: none holds a row of the call). */
  async askDirectory(env, name, plan, call, request) {
    const res = await directoryStub(env, name).fetch("https://directory.internal/query", {
      method: "POST",
      body: JSON.stringify({ plan, call }),
      headers: this.forwardHeaders(request),
    });
    if (!res.ok) throw new ObjectError(res);
    return (await res.json()).answer;
  }

  /**
   * The cron trigger (every 5 minutes in wrangler.jsonc): the directory
   * partitions forget days past retention (each shard empties itself from its
   * alarm). With SHARDING=off, the one shard's maintenance.
   */
  async scheduled(controller, env) {
    const { settings } = this.engine(env);
    const nowMs = this.scheduledNowMs(controller, settings);
    if (!settings.sharding) {
      await shardStub(env, SINGLE_SHARD).fetch("https://shard.internal/maintain", { method: "POST", headers: { "X-Now-Ms": String(nowMs) } });
      return;
    }
    await inWaves(LogEndpoints.directoryNames(), MAX_CONCURRENT, async (name) => {
      const res = await directoryStub(env, name).fetch("https://directory.internal/retain", { method: "POST", body: JSON.stringify({ nowMs }) });
      if (!res.ok) throw unavailable(`${name} did not apply retention (${res.status})`);
      return res.json();
    });
  }
}

/** Reads a body to its end (at most DRAIN_BYTES), dropping it. */
async function drain(body) {
  let read = 0;
  try {
    for await (const chunk of body) {
      read += chunk.byteLength;
      if (read > DRAIN_BYTES) return;
    }
  } catch {
    // Already read, or cut off by the client: nothing to keep open.
  }
}

/** A module worker's handlers, from a front. */
export function handlers(front) {
  return {
    fetch: (request, env, ctx) => front.fetch(request, env, ctx),
    scheduled: (controller, env, ctx) => front.scheduled(controller, env, ctx),
  };
}
