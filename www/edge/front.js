// The front: every client request comes here. It asks the core which route a
// path is, answers CORS preflights, and checks every call and key with its
// own data-less engine before anything is sent on. An ingested batch is split
// by shard (in the core), recorded in the directory, and each part sent to its
// shard in parallel; the core combines their answers. A query is planned by
// the core, the directory names the shards that exist, they are asked in the
// waves the core sets, and the core merges their answers.
// With SHARDING=off every request goes to one shard object named `logs`.
import { engineGeneration, isServiceError, LogEndpoints, newEngine, settingsFrom, unavailable } from "./engine.js";
import { errorResponse, preflight, readBody, requestParts, respond, withCors } from "./http.js";

const { paramsBodyBytes: PARAMS_BODY_BYTES } = LogEndpoints.constants();

/** A shard's error answer, passed on to the client as it is. */
class ShardError extends Error {
  constructor(response) {
    super(`a shard answered ${response.status}`);
    this.response = response;
  }
}

export function shardStub(env, name) {
  return env.SHARD.get(env.SHARD.idFromName(name));
}

export function directoryStub(env) {
  return env.DIRECTORY.get(env.DIRECTORY.idFromName("directory"));
}

/** The name of the one shard object when SHARDING=off. */
export const SINGLE_SHARD = "logs";

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

  /** Headers the front adds to what it sends a shard for a request. */
  shardHeaders(_request) {
    return {};
  }

  /** The time a cron run acts as of. */
  scheduledNowMs(controller, settings) {
    return settings.fixedNowMs ?? controller.scheduledTime;
  }

  async fetch(request, env) {
    const url = new URL(request.url);
    let target;
    try {
      target = LogEndpoints.route(url.pathname, request.method); // 404 or 405 otherwise
    } catch (e) {
      return withCors(errorResponse(e));
    }
    if (request.method === "OPTIONS") return preflight();
    const { service, settings } = this.engine(env);
    if (!settings.sharding) return withCors(await shardStub(env, SINGLE_SHARD).fetch(request));
    const nowMs = this.requestNowMs(request);
    if (nowMs !== null) service.setNow(nowMs);
    try {
      if (target.kind === "ingest") return withCors(await this.ingest(request, url, target.stream, env, service, settings));
      return withCors(await this.query(request, url, env, service));
    } catch (e) {
      if (e instanceof ShardError) return withCors(e.response);
      if (!isServiceError(e)) {
        console.error("log-endpoints: front fault:", e && e.message);
        this.cached = undefined;
      }
      return withCors(errorResponse(e, "the front worker could not complete the request"));
    } finally {
      if (nowMs !== null) service.setNow(settings.fixedNowMs);
    }
  }

  /**
   * An ingest: the key is checked and the batch split before anything is sent.
   * The directory records the parts' shards first (a shard it does not list
   * is never asked), then each shard stores its part, in parallel.
   */
  async ingest(request, url, stream, env, service, settings) {
    service.authorizeRequest(requestParts(request, url));
    const body = await readBody(request, settings.maxBodyBytes);
    const split = service.splitByShard(stream, body);
    let registered;
    try {
      const res = await directoryStub(env).fetch("https://directory.internal/register", {
        method: "POST",
        body: JSON.stringify(split.parts.map(({ projectKey, day, urlBits }) => ({ projectKey, day, urlBits }))),
      });
      registered = res.ok ? null : `the directory of shards answered ${res.status}`;
      await res.arrayBuffer();
    } catch (e) {
      registered = `the directory of shards could not record the batch (${e.message})`;
    }
    const parts = await Promise.all(
      split.parts.map(async (part) => {
        if (registered) return { indexes: part.indexes, failure: registered };
        try {
          const res = await shardStub(env, part.shard).fetch(`https://shard.internal/api/logs/${stream}`, {
            method: "POST",
            body: part.body,
            headers: { ...this.forwarded(request), "X-Shard": part.shard },
          });
          return { indexes: part.indexes, status: res.status, body: await res.text() };
        } catch (e) {
          return { indexes: part.indexes, failure: `shard ${part.shard} did not answer (${e.message})` };
        }
      }),
    );
    return respond(service.combineIngest(split.report, parts));
  }

  /**
   * A query: checked and planned by the core (a refused key or a bad
   * parameter never reaches a shard), the shards looked up, asked in the
   * core's waves and their answers merged.
   */
  async query(request, url, env, service) {
    const body = request.method === "POST" ? await readBody(request, PARAMS_BODY_BYTES) : undefined;
    const query = service.shardQuery(requestParts(request, url, body));
    const looked = await directoryStub(env).fetch("https://directory.internal/lookup", { method: "POST", body: JSON.stringify(query.plan) });
    if (!looked.ok) throw unavailable("the directory of shards did not answer");
    query.ask((await looked.json()).shards);
    for (let wave = query.nextWave(); wave.length > 0; wave = query.nextWave()) {
      const answers = await Promise.all(wave.map((name) => this.askShard(env, name, request, url, body)));
      for (const answer of answers) query.add(answer);
    }
    return respond(query.answer());
  }

  /** A shard's answer to the request, as the core reads it; its error answer is the client's. */
  async askShard(env, name, request, url, body) {
    const res = await shardStub(env, name).fetch(`https://shard.internal${url.pathname}${url.search}`, {
      method: request.method,
      body,
      headers: { ...this.forwarded(request), "X-Shard": name },
    });
    if (!res.ok) throw new ShardError(res);
    return LogEndpoints.readAnswer(await res.text(), [...res.headers]);
  }

  /** The request's key headers, and what `shardHeaders` adds. */
  forwarded(request) {
    const headers = { ...this.shardHeaders(request) };
    for (const name of ["X-API-KEY", "Authorization"]) {
      const value = request.headers.get(name);
      if (value !== null) headers[name] = value;
    }
    return headers;
  }

  /**
   * The cron trigger (every 5 minutes in wrangler.jsonc): the directory
   * forgets shards past retention (each shard empties itself from its alarm).
   * With SHARDING=off, the one shard's maintenance.
   */
  async scheduled(controller, env) {
    const { settings } = this.engine(env);
    const nowMs = this.scheduledNowMs(controller, settings);
    if (!settings.sharding) {
      await shardStub(env, SINGLE_SHARD).fetch("https://shard.internal/maintain", { method: "POST", headers: { "X-Now-Ms": String(nowMs) } });
      return;
    }
    await directoryStub(env).fetch("https://directory.internal/retain", { method: "POST", body: JSON.stringify({ nowMs }) });
  }
}

/** A module worker's handlers, from a front. */
export function handlers(front) {
  return {
    fetch: (request, env, ctx) => front.fetch(request, env, ctx),
    scheduled: (controller, env, ctx) => front.scheduled(controller, env, ctx),
  };
}
