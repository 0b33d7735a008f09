// The worker the end-to-end tests run: the product's front and objects, with
// test hooks added by subclassing (they never ship in www/). Request headers,
// passed on from the front through the directory partitions to the shards:
// - X-Test-Now-Ms: the clock of this request (front and shards);
// - X-Test-Trap: the shard's engine traps while answering a query;
// - X-Test-Corrupt-Snapshot: on a shard's maintenance path, flips one byte of its stored snapshot.
// And an object's own paths, which a test calls through its namespace:
// - a shard's POST /test/fail-storage?times=N: its next N storage writes throw;
// - a shard's GET /test/failures: `{ failingWrites }` still to come (a test shows its faults fired);
// - a shard's POST /test/damage-answers: the parts of its stored answers deleted; which answers
//   handed rows back (`[{ partition, round, overflowEntries }]`);
// - a shard's GET /test/stored-answer?partition=P&round=N: its answer to a round sent again;
// - a shard's POST /test/damage-text-blocks: flips one byte of each text block in its SQLite;
// - a shard's GET /test/snapshot: its stored snapshot's row (`{ lastBatchId, bytes }` or null),
//   read without maintenance (which would write one);
// - a shard's POST /test/trap-next-snapshot: its next snapshot write traps (a flag kept in
//   its SQLite, so that it holds for the next instance's wake);
// - a shard's POST /test/trap-next-replay: the next stored batch it replays traps (kept alike);
// - an ingest partition's POST /test/hold: it keeps batches and distributes
//   nothing until the runtime restarts (the hold lives in memory only);
// - a directory partition's POST /test/fail-register?after=K&times=N: after K more
//   registrations it takes, it answers the next N with 503 (in memory only);
// - a directory partition's GET /test/failures: `{ after, times }` still to come (null: none armed);
// - a directory partition's POST /test/fold-and-damage: its snapshot written, then its first part
//   deleted (what it has in memory stays until the runtime restarts);
// - an ingest partition's POST /test/damage-kept: the first byte of each batch it keeps flipped;
// - an ingest partition's POST /test/release: a hold ends, and distribution starts;
// - an ingest partition's POST /test/forget-alarm: its alarm deleted, as an eviction
//   between keeping a batch and arming the alarm leaves it (until the runtime restarts);
// - an ingest partition's POST /test/seen-from-before: its table of kept keys
//   rewritten as a build before content hashes wrote it (no `content` column),
//   then opened again, as the next build's object opens it.
// The cron acts as of its scheduled time, whatever FIXED_NOW_MS says.
import { Front, handlers } from "../../www/edge/front.js";
import { DirectoryObject as ProductDirectory } from "../../www/edge/directory.js";
import { ShardObject as ProductShard } from "../../www/edge/shard.js";
import { IngestObject as ProductIngest } from "../../www/edge/ingest.js";
import { SeenBatches } from "../../www/edge/seen.js";

const HOOKS = ["X-Test-Now-Ms", "X-Test-Trap", "X-Test-Corrupt-Snapshot"];

function hooksOf(request) {
  const headers = {};
  for (const name of HOOKS) {
    const value = request.headers.get(name);
    if (value !== null) headers[name] = value;
  }
  return headers;
}

function requestClock(request) {
  const ms = request.headers.get("X-Test-Now-Ms");
  return ms === null ? null : Number(ms);
}

class TestFront extends Front {
  requestNowMs(request) {
    return requestClock(request);
  }

  forwardHeaders(request) {
    return hooksOf(request);
  }

  scheduledNowMs(controller) {
    return controller.scheduledTime;
  }
}

export class DirectoryObject extends ProductDirectory {
  forwardHeaders(request) {
    return hooksOf(request);
  }

  async fetch(request) {
    const url = new URL(request.url);
    if (url.pathname === "/test/fail-register") {
      this.registerFailures = { after: Number(url.searchParams.get("after") ?? 0), times: Number(url.searchParams.get("times") ?? 1) };
      return Response.json(this.registerFailures);
    }
    if (url.pathname === "/test/failures") return Response.json(this.registerFailures ?? null);
    if (url.pathname === "/test/fold-and-damage") {
      this.fold();
      this.sql.exec("DELETE FROM snapshot_parts WHERE part = 0");
      return Response.json({ damaged: true });
    }
    if (url.pathname === "/register" && this.registerFailures) {
      if (this.registerFailures.after > 0) this.registerFailures.after--;
      else if (this.registerFailures.times > 0) {
        this.registerFailures.times--;
        return Response.json({ error: { code: "unavailable", message: "register failed (simulated by /test/fail-register)" } }, { status: 503 });
      }
    }
    return super.fetch(request);
  }
}

export class IngestObject extends ProductIngest {
  async fetch(request) {
    if (new URL(request.url).pathname === "/test/hold") {
      this.held = true;
      return Response.json({ held: true });
    }
    if (new URL(request.url).pathname === "/test/damage-kept") {
      let damaged = 0;
      for (const { batch_id, body } of this.sql.exec("SELECT batch_id, body FROM batch_parts WHERE part = 0").toArray()) {
        const bytes = new Uint8Array(body);
        bytes[0] ^= 0xff;
        this.sql.exec("UPDATE batch_parts SET body = ? WHERE batch_id = ? AND part = 0", bytes.buffer, batch_id);
        damaged++;
      }
      return Response.json({ damaged });
    }
    if (new URL(request.url).pathname === "/test/release") {
      this.held = false;
      await this.ctx.storage.setAlarm(Date.now());
      return Response.json({ held: false });
    }
    if (new URL(request.url).pathname === "/test/forget-alarm") {
      this.held = this.forgotten = true;
      await this.ctx.storage.deleteAlarm();
      return Response.json({ alarm: await this.ctx.storage.getAlarm() });
    }
    if (new URL(request.url).pathname === "/test/seen-from-before") {
      const rows = this.sql.exec("SELECT key, received_ms FROM seen").toArray();
      this.sql.exec("DROP TABLE seen");
      this.sql.exec("CREATE TABLE seen (key TEXT PRIMARY KEY, received_ms INTEGER NOT NULL)");
      for (const { key, received_ms } of rows) this.sql.exec("INSERT INTO seen (key, received_ms) VALUES (?, ?)", key, received_ms);
      this.seen = new SeenBatches(this.sql);
      return Response.json({ keys: rows.length });
    }
    return super.fetch(request);
  }

  async alarm() {
    if (this.forgotten) return;
    if (!this.held) return super.alarm();
    await this.ctx.storage.setAlarm(Date.now() + 200);
  }
}

export class ShardObject extends ProductShard {
  requestNowMs(request) {
    return requestClock(request);
  }

  beforeQuery(request) {
    if (request.headers.get("X-Test-Trap") === "1") throw new WebAssembly.RuntimeError("unreachable (simulated by X-Test-Trap)");
  }

  async fetch(request) {
    const url = new URL(request.url);
    if (url.pathname === "/test/fail-storage") {
      this.failingWrites = Number(url.searchParams.get("times") ?? 1);
      return Response.json({ failingWrites: this.failingWrites });
    }
    if (url.pathname === "/test/failures") return Response.json({ failingWrites: this.failingWrites ?? 0 });
    if (url.pathname === "/test/damage-answers") {
      const damaged = this.sql.exec("SELECT partition, round, report FROM answers WHERE overflow_bytes > 0").toArray();
      this.sql.exec("DELETE FROM answer_parts");
      return Response.json(damaged.map(({ partition, round, report }) => ({ partition, round, overflowEntries: JSON.parse(report).overflowEntries })));
    }
    if (url.pathname === "/test/stored-answer") return this.storedAnswer(url.searchParams.get("partition"), Number(url.searchParams.get("round")));
    for (const [path, flag] of [["/test/trap-next-snapshot", "trap-snapshot"], ["/test/trap-next-replay", "trap-replay"]]) {
      if (url.pathname !== path) continue;
      this.sql.exec("CREATE TABLE IF NOT EXISTS test_flags (name TEXT PRIMARY KEY)");
      this.sql.exec("INSERT OR REPLACE INTO test_flags (name) VALUES (?)", flag);
      return Response.json({ armed: true });
    }
    if (url.pathname === "/test/snapshot") {
      const row = this.sql.exec("SELECT last_batch_id AS lastBatchId, bytes FROM snapshot WHERE id = 1").toArray()[0];
      return Response.json(row ?? null);
    }
    if (url.pathname === "/test/damage-text-blocks") {
      let damaged = 0;
      for (const { key, body } of this.sql.exec("SELECT key, body FROM text_blocks").toArray()) {
        const bytes = new Uint8Array(body);
        bytes[bytes.length >> 1] ^= 0x40;
        this.sql.exec("UPDATE text_blocks SET body = ? WHERE key = ?", bytes.buffer, key);
        damaged++;
      }
      return Response.json({ damaged });
    }
    return super.fetch(request);
  }

  store(...args) {
    if (this.failingWrites > 0) {
      this.failingWrites--;
      throw new Error("storage write failed (simulated by /test/fail-storage)");
    }
    return super.store(...args);
  }

  replay(batch) {
    this.sql.exec("CREATE TABLE IF NOT EXISTS test_flags (name TEXT PRIMARY KEY)");
    if (this.sql.exec("DELETE FROM test_flags WHERE name = 'trap-replay' RETURNING name").toArray().length > 0) {
      throw new WebAssembly.RuntimeError("unreachable (simulated by /test/trap-next-replay)");
    }
    return super.replay(batch);
  }

  writeSnapshot() {
    this.sql.exec("CREATE TABLE IF NOT EXISTS test_flags (name TEXT PRIMARY KEY)");
    if (this.sql.exec("DELETE FROM test_flags WHERE name = 'trap-snapshot' RETURNING name").toArray().length > 0) {
      throw new WebAssembly.RuntimeError("unreachable (simulated by /test/trap-next-snapshot)");
    }
    return super.writeSnapshot();
  }

  async maintain(request) {
    if (request.headers.get("X-Test-Corrupt-Snapshot") !== "1") return super.maintain(request);
    // Flips one byte of the stored snapshot, as a damaged disk would.
    const first = this.sql.exec("SELECT body FROM snapshot_parts WHERE part = 0").toArray()[0];
    if (first) {
      const body = new Uint8Array(first.body);
      body[body.length >> 1] ^= 0x40;
      this.sql.exec("UPDATE snapshot_parts SET body = ? WHERE part = 0", body.buffer);
    }
    return Response.json({ corrupted: Boolean(first) });
  }
}

export default handlers(new TestFront());
