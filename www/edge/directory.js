// The directory of shards: which (project, day) shards exist and each
// project's URL trigram filter, kept by the core's `ShardDirectory` in memory
// and in SQLite (a row per shard, a filter per project), written before the
// parts are sent so that a stored part is always found.
import { engineGeneration, isServiceError, LogEndpoints, ShardDirectory, unavailable } from "./engine.js";
import { respond } from "./http.js";

export class DirectoryObject {
  constructor(ctx) {
    this.ctx = ctx;
    this.sql = ctx.storage.sql;
    this.sql.exec("CREATE TABLE IF NOT EXISTS shards (project_key TEXT NOT NULL, day TEXT NOT NULL, PRIMARY KEY (project_key, day))");
    this.sql.exec("CREATE TABLE IF NOT EXISTS url_filters (project_key TEXT PRIMARY KEY, bits BLOB NOT NULL)");
    this.load();
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
      if (url.pathname === "/lookup") return Response.json({ shards: this.directory.lookup(input) });
      if (url.pathname === "/retain") return Response.json(this.retain(input.nowMs));
      return respond(unavailable(`the directory has no path ${url.pathname}`));
    } catch (e) {
      if (isServiceError(e)) return respond(e);
      // Memory may now hold what storage does not: read it back.
      this.load();
      return respond(unavailable(`the directory of shards failed (${e?.message})`));
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

  /** Forgets the shards of days past retention at `nowMs`. */
  retain(nowMs) {
    const { firstKeptDay } = LogEndpoints.retention(nowMs);
    const dropped = this.directory.dropBefore(firstKeptDay);
    this.sql.exec("DELETE FROM shards WHERE day < ?", firstKeptDay);
    return { dropped, firstKeptDay, shards: this.directory.shards() };
  }
}
