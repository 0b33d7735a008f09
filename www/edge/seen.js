// The batches an object has kept, by key, for as long as a resend may come:
// a batch whose key is here is acknowledged again and not kept twice. The
// core makes the keys (a batch's stream and bytes, or the client's
// Idempotency-Key); this is their table in the object's SQLite storage.

import { LogEndpoints } from "./engine.js";

/** How long a key is remembered (the core's resend window). */
const { resendWindowMs: SEEN_FOR_MS } = LogEndpoints.constants();

export class SeenBatches {
  constructor(sql) {
    this.sql = sql;
    sql.exec("CREATE TABLE IF NOT EXISTS seen (key TEXT PRIMARY KEY, received_ms INTEGER NOT NULL, content TEXT)");
    // A table made before the content was kept gains its column (its rows' content: NULL, unknown).
    try {
      sql.exec("ALTER TABLE seen ADD COLUMN content TEXT");
    } catch (e) {
      if (!/duplicate column/i.test(e.message)) throw e;
    }
    // Pruning (every distribution) deletes by age: without it, each prune read a day of keys.
    sql.exec("CREATE INDEX IF NOT EXISTS seen_by_age ON seen (received_ms)");
  }

  /** What the core makes of `key` and what was kept with it within the window: a `Seen` ("new", "duplicate" or "keyReused"). */
  match(key, content, nowMs) {
    const [row] = this.sql.exec("SELECT content FROM seen WHERE key = ? AND received_ms >= ?", key, nowMs - SEEN_FOR_MS).toArray();
    return LogEndpoints.batchSeen(content, row ? row.content : undefined);
  }

  /** Records `key` and its batch's content (call it in the transaction that keeps the batch). */
  add(key, content, nowMs) {
    this.sql.exec("INSERT OR REPLACE INTO seen (key, received_ms, content) VALUES (?, ?, ?)", key, nowMs, content);
  }

  /** Forgets keys older than the window. */
  prune(nowMs) {
    this.sql.exec("DELETE FROM seen WHERE received_ms < ?", nowMs - SEEN_FOR_MS);
  }
}
