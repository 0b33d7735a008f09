// A directory partition: for the groups of projects it covers, which days
// each project has entries on and each project's URL trigram filter, kept by
// the core's `ShardDirectory` in memory and in SQLite: the registrations as
// they came (a log, one row per round of an ingest partition), folded into a
// snapshot now and then. The ingest partitions register a round's shards
// here before delivering it, so a stored entry is always found. A query for its
// projects comes here: it looks up the shards, asks them in the core's waves
// and answers with their answers merged (docs/edge-deployment.md).
import { checkEngine, engineGeneration, isServiceError, LogEndpoints, recoverFrom, release, ShardDirectory, unavailable } from "./engine.js";
import { readParts, writeParts } from "./blobs.js";
import { respond } from "./http.js";
import { PARTIAL_PATH, shardStub } from "./stubs.js";

/** Registrations kept as they came before they are folded into the snapshot (the core's). */
const { directoryLogRows: LOG_ROWS } = LogEndpoints.constants();

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
    this.sql.exec("CREATE TABLE IF NOT EXISTS registrations (id INTEGER PRIMARY KEY AUTOINCREMENT, body BLOB NOT NULL)");
    this.sql.exec("CREATE TABLE IF NOT EXISTS snapshot (id INTEGER PRIMARY KEY CHECK (id = 1), bytes INTEGER NOT NULL)");
    this.sql.exec("CREATE TABLE IF NOT EXISTS snapshot_parts (part INTEGER PRIMARY KEY, body BLOB NOT NULL)");
    this.load();
  }

  /** Headers this object adds to what it sends a shard for a request it was sent. */
  forwardHeaders(_request) {
    return {};
  }

  /**
   * The directory from its snapshot and the registrations after it. A stored
   * snapshot that does not read is not replaced by an empty directory (its
   * shards' rows would silently go missing from answers): every call is 503,
   * naming it, until an operator sees to it.
   */
  load() {
    // An engine from before a reset is gone: nothing of it to free.
    if (this.generation === engineGeneration()) this.directory?.free();
    this.directory = undefined;
    this.unreadable = undefined;
    this.generation = engineGeneration();
    const snapshot = this.sql.exec("SELECT bytes FROM snapshot WHERE id = 1").toArray()[0];
    try {
      this.directory = snapshot
        ? ShardDirectory.restore(readParts(this.sql, "SELECT body FROM snapshot_parts ORDER BY part", [], snapshot.bytes))
        : new ShardDirectory();
    } catch (e) {
      if (!isServiceError(e)) throw e;
      this.unreadable = `the directory's stored snapshot does not read (${e.message})`;
      console.error(`log-endpoints: ${this.unreadable}`);
      return;
    }
    for (const row of this.sql.exec("SELECT body FROM registrations ORDER BY id")) this.directory.register(new Uint8Array(row.body));
  }

  async fetch(request) {
    if (this.generation !== engineGeneration()) this.load();
    if (this.unreadable) return respond(unavailable(this.unreadable));
    const url = new URL(request.url);
    try {
      if (url.pathname === "/register") return Response.json(this.register(new Uint8Array(await request.arrayBuffer())));
      if (url.pathname === "/query") return Response.json({ answer: await this.query(await request.json(), request) });
      if (url.pathname === "/retain") return Response.json(this.retain((await request.json()).nowMs));
      return respond(unavailable(`the directory has no path ${url.pathname}`));
    } catch (e) {
      if (e instanceof ShardError) return e.response;
      if (isServiceError(e)) return respond(e);
      // Memory may now hold what storage does not: read it back (into a new engine after a trap).
      recoverFrom(e);
      this.load();
      return respond(unavailable(`the directory of shards failed (${e?.message})`));
    }
  }

  /** Applies a registration and keeps it (one row); folds the log into the snapshot now and then. */
  register(bytes) {
    const entries = this.directory.register(bytes);
    this.sql.exec("INSERT INTO registrations (body) VALUES (?)", bytes.buffer);
    if (this.sql.exec("SELECT count(*) AS n FROM registrations").one().n >= LOG_ROWS) this.fold();
    return { entries };
  }

  /** Replaces the snapshot with everything known, and empties the log, in one transaction. */
  fold() {
    const bytes = this.directory.snapshot();
    this.ctx.storage.transactionSync(() => {
      this.sql.exec("DELETE FROM snapshot_parts");
      writeParts(bytes, (part, body) => this.sql.exec("INSERT INTO snapshot_parts (part, body) VALUES (?, ?)", part, body));
      this.sql.exec("INSERT OR REPLACE INTO snapshot (id, bytes) VALUES (1, ?)", bytes.byteLength);
      this.sql.exec("DELETE FROM registrations");
    });
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
        const answers = await Promise.all(wave.map((name) => this.askShard(name, call, request, gather.partialStates)));
        checkEngine(made);
        answers.forEach((answer, i) => gather.add(wave[i], answer));
      }
      return gather.merged();
    } finally {
      release(gather, made);
    }
  }

  /**
   * A shard's answer to the client's request, as the core reads it (partial
   * states when a bucket may span the shards of a split project-day); its
   * error answer is the client's.
   */
  async askShard(name, call, request, partial) {
    const headers = { ...this.forwardHeaders(request), "X-Shard": name };
    if (call.apiKey) headers["X-API-KEY"] = call.apiKey;
    if (call.authorization) headers.Authorization = call.authorization;
    const res = await shardStub(this.env, name).fetch(`https://shard.internal${partial ? PARTIAL_PATH : ""}${call.path}${call.query}`, {
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
    if (dropped > 0) this.fold();
    return { dropped, firstKeptDay, projectDays: this.directory.projectDays() };
  }
}
