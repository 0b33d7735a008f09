// A directory partition: for the groups of projects it covers, which days
// each project has entries on and each project's URL trigram filter, kept by
// the core's `ShardDirectory` in memory and in SQLite (a row per project-day,
// a filter per project). The ingest partitions register a round's shards here
// before delivering it, so a stored entry is always found. A query for its
// projects comes here: it looks up the shards, asks them in the core's waves
// and answers with their answers merged (docs/edge-deployment.md).
import { checkEngine, engineGeneration, isServiceError, LogEndpoints, release, ShardDirectory, unavailable } from "./engine.js";
import { respond } from "./http.js";
import { shardStub } from "./stubs.js";

/** A shard's error answer, passed on as it is. */
class ShardError extends Error {
  constructor(response) {
    super(`a shard answered ${response.status}`);
    this.response = response;
  }
}

export class DirectoryObject {
  constructor(ctx, env) {
    this.ctx = ctx;
    this.env = env;
    this.sql = ctx.storage.sql;
    this.sql.exec("CREATE TABLE IF NOT EXISTS shards (project_key TEXT NOT NULL, day TEXT NOT NULL, PRIMARY KEY (project_key, day))");
    this.sql.exec("CREATE TABLE IF NOT EXISTS url_filters (project_key TEXT PRIMARY KEY, bits BLOB NOT NULL)");
    this.load();
  }

  /** Headers this object adds to what it sends a shard for a request it was sent. */
  forwardHeaders(_request) {
    return {};
  }

  load() {
    // An engine from before a reset is gone: nothing of it to free.
    if (this.generation === engineGeneration()) this.directory?.free();
    this.directory = new ShardDirectory();
    this.generation = engineGeneration();
    for (const row of this.sql.exec("SELECT project_key, day FROM shards")) this.directory.add(row.project_key, row.day, []);
    for (const row of this.sql.exec("SELECT project_key, bits FROM url_filters")) this.directory.restoreFilter(row.project_key, new Uint8Array(row.bits));
  }

  async fetch(request) {
    if (this.generation !== engineGeneration()) this.load();
    const url = new URL(request.url);
    const input = await request.json();
    try {
      if (url.pathname === "/register") return Response.json(this.register(input));
      if (url.pathname === "/query") return Response.json({ answer: await this.query(input, request) });
      if (url.pathname === "/retain") return Response.json(this.retain(input.nowMs));
      return respond(unavailable(`the directory has no path ${url.pathname}`));
    } catch (e) {
      if (e instanceof ShardError) return e.response;
      if (isServiceError(e)) return respond(e);
      // Memory may now hold what storage does not: read it back.
      this.load();
      return respond(unavailable(`the directory of shards failed (${e?.message})`));
    }
  }

  register(entries) {
    const writes = [];
    for (const { projectKey, day, urlBits } of entries) {
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

  /**
   * A query's answer from this partition's shards (`plan`: the core's plan;
   * `call`: the client's request, which each shard checks and answers), or
   * null when none of its shards can hold a row of it.
   */
  async query({ plan, call }, request) {
    const made = engineGeneration();
    const gather = LogEndpoints.gather(plan, this.directory.lookup(plan));
    try {
      for (let wave = gather.nextWave(); wave.length > 0; wave = gather.nextWave()) {
        const answers = await Promise.all(wave.map((name) => this.askShard(name, call, request)));
        checkEngine(made);
        answers.forEach((answer, i) => gather.add(wave[i], answer));
      }
      return gather.merged();
    } finally {
      release(gather, made);
    }
  }

  /** A shard's answer to the client's request, as the core reads it; its error answer is the client's. */
  async askShard(name, call, request) {
    const headers = { ...this.forwardHeaders(request), "X-Shard": name };
    if (call.apiKey) headers["X-API-KEY"] = call.apiKey;
    if (call.authorization) headers.Authorization = call.authorization;
    const res = await shardStub(this.env, name).fetch(`https://shard.internal${call.path}${call.query}`, {
      method: call.method,
      body: call.method === "POST" ? call.body : undefined,
      headers,
    });
    if (!res.ok) throw new ShardError(res);
    return LogEndpoints.readAnswer(await res.text(), [...res.headers]);
  }

  /** Forgets the project-days past retention at `nowMs`. */
  retain(nowMs) {
    const { firstKeptDay } = LogEndpoints.retention(nowMs);
    const dropped = this.directory.dropBefore(firstKeptDay);
    this.sql.exec("DELETE FROM shards WHERE day < ?", firstKeptDay);
    return { dropped, firstKeptDay, projectDays: this.directory.projectDays() };
  }
}
