// An ingest partition: the Durable Object that makes a batch durable before
// the front acknowledges it, and distributes it after (docs/edge-deployment.md).
// The front picks the partition by the batch's key, so a resent batch meets
// the partition that remembers it and is acknowledged without being kept twice.
//
// Distribution runs from the alarm, in rounds: the batches kept since the
// last round are coalesced by the core into one delivery per shard and one
// registration per directory partition; the directory partitions record the
// shards first (a shard they do not list is never asked), then every shard
// takes its delivery, at most six calls at a time. A round covers a fixed set
// of batches, so a round sent again (after a restart, a failed shard, an
// alarm retried) is the same round, and a shard applies it once. Batches are
// deleted only once every shard has its part or holds it in the outbox; a
// refusal a retry cannot change (a 4xx) is recorded in `refused` and logged,
// never dropped silently.
//
// The outbox keeps what a shard did not take (it failed, or was still behind):
// each shard's deliveries are sent in round order, the first one again after
// waits that double up to a limit (the core's schedule), while every other shard goes on taking its
// rounds. A shard applies a partition's rounds in increasing order, so its
// deliveries never pass each other: a round's delivery waits behind those of
// the shard still in the outbox, and rows a shard hands back from the outbox
// go out under a new round number, taken when no round is under way.
import { engineGeneration, isServiceError, KnownRegistrations, LogEndpoints, recoverFrom } from "./engine.js";
import { readParts, writeParts } from "./blobs.js";
import { SeenBatches } from "./seen.js";
import { directoryStub, inWaves, shardStub } from "./stubs.js";

// How long batches gather before a round, what a round covers and how long
// the outbox waits are the core's (src/shard/schedule.rs).
const { maxConcurrent: MAX_CONCURRENT, retryMs: RETRY_MS } = LogEndpoints.constants();

/** Whether `e` says stored bytes do not read (not a refusal of the call itself). */
function isUnreadable(e) {
  return isServiceError(e) && e.code === "unreadable_batch";
}

/** The partition's answer to the front: the core's `KeepAnswer` for what it found. */
function keepAnswer(seen) {
  return new Response(LogEndpoints.keepAnswer(seen), { headers: { "Content-Type": "application/json" } });
}

export class IngestObject {
  constructor(ctx, env) {
    this.ctx = ctx;
    this.env = env;
    this.sql = ctx.storage.sql;
    this.sql.exec(`CREATE TABLE IF NOT EXISTS batches (
      id INTEGER PRIMARY KEY AUTOINCREMENT, key TEXT NOT NULL, received_ms INTEGER NOT NULL, bytes INTEGER NOT NULL, shards INTEGER NOT NULL)`);
    this.sql.exec(`CREATE TABLE IF NOT EXISTS batch_parts (
      batch_id INTEGER NOT NULL, part INTEGER NOT NULL, body BLOB NOT NULL, PRIMARY KEY (batch_id, part))`);
    // The round under way: the batches it covers. At most one row.
    this.sql.exec("CREATE TABLE IF NOT EXISTS rounds (round INTEGER PRIMARY KEY, first_batch INTEGER NOT NULL, last_batch INTEGER NOT NULL, started_ms INTEGER NOT NULL)");
    // This partition's name (the front sends it with each batch) and the number of the next round.
    this.sql.exec("CREATE TABLE IF NOT EXISTS meta (id INTEGER PRIMARY KEY CHECK (id = 1), name TEXT NOT NULL, next_round INTEGER NOT NULL)");
    // What was not kept, for good, and why: deliveries or handed-back rows a shard refused,
    // and kept batches or waiting deliveries that no longer read (set aside; their entries not counted).
    this.sql.exec(`CREATE TABLE IF NOT EXISTS refused (
      round INTEGER NOT NULL, shard TEXT NOT NULL, entries INTEGER NOT NULL, status INTEGER NOT NULL, body TEXT NOT NULL, at_ms INTEGER NOT NULL,
      PRIMARY KEY (round, shard))`);
    // Where split project-days' entries go (the core's routes): written when a round is over.
    this.sql.exec("CREATE TABLE IF NOT EXISTS splits (project_key TEXT NOT NULL, day TEXT NOT NULL, split INTEGER NOT NULL, PRIMARY KEY (project_key, day))");
    // Deliveries waiting for their shard, sent in round order per shard; `waits`: per shard, its tries and next try.
    this.sql.exec(`CREATE TABLE IF NOT EXISTS outbox (
      id INTEGER PRIMARY KEY AUTOINCREMENT, shard TEXT NOT NULL, round INTEGER NOT NULL, entries INTEGER NOT NULL, bytes INTEGER NOT NULL, queued_ms INTEGER NOT NULL,
      UNIQUE (shard, round))`);
    // An outbox made before `queued_ms` was kept gains it (its rows: 0, unknown).
    try {
      this.sql.exec("ALTER TABLE outbox ADD COLUMN queued_ms INTEGER NOT NULL DEFAULT 0");
    } catch (e) {
      if (!/duplicate column/i.test(e.message)) throw e;
    }
    this.sql.exec("CREATE TABLE IF NOT EXISTS outbox_parts (delivery_id INTEGER NOT NULL, part INTEGER NOT NULL, body BLOB NOT NULL, PRIMARY KEY (delivery_id, part))");
    this.sql.exec("CREATE TABLE IF NOT EXISTS waits (shard TEXT PRIMARY KEY, tries INTEGER NOT NULL, next_try_ms INTEGER NOT NULL)");
    // Kept batches that no longer read, with their parts (in batch_parts), for someone to look at.
    this.sql.exec("CREATE TABLE IF NOT EXISTS set_aside (id INTEGER PRIMARY KEY, key TEXT NOT NULL, received_ms INTEGER NOT NULL, bytes INTEGER NOT NULL, shards INTEGER NOT NULL)");
    // What each shard answered to the round under way (the rows it handed back, in parts):
    // a round sent again takes these answers rather than asking those shards again.
    this.sql.exec("CREATE TABLE IF NOT EXISTS round_answers (round INTEGER NOT NULL, shard TEXT NOT NULL, overflow_bytes INTEGER NOT NULL, PRIMARY KEY (round, shard))");
    this.sql.exec("CREATE TABLE IF NOT EXISTS round_answer_parts (round INTEGER NOT NULL, shard TEXT NOT NULL, part INTEGER NOT NULL, body BLOB NOT NULL, PRIMARY KEY (round, shard, part))");
    this.seen = new SeenBatches(this.sql);
    // Kept batches always have a distribution to come: an eviction between
    // keeping a batch and arming the alarm (whose resend is then answered as
    // a duplicate) would otherwise leave them waiting for the next batch.
    ctx.blockConcurrencyWhile(() => this.armDistribution(Date.now()));
  }

  /** Arms the alarm for `due` when batches wait (or, at their next try, deliveries) and none comes sooner. */
  async armDistribution(due) {
    if (this.sql.exec("SELECT count(*) AS n FROM batches").one().n === 0) {
      const next = this.sql.exec("SELECT min(next_try_ms) AS at FROM waits").one().at;
      if (next === null) return;
      due = Math.max(due, next);
    }
    const alarm = await this.ctx.storage.getAlarm();
    if (alarm === null || alarm > due) await this.ctx.storage.setAlarm(due);
  }

  async fetch(request) {
    const url = new URL(request.url);
    if (url.pathname === "/keep") return this.keep(request);
    if (url.pathname === "/status") return Response.json(this.status());
    return new Response(null, { status: 404 });
  }

  /**
   * Keeps a batch (its record, as the front prepared it) unless its key was
   * kept within the window: one transaction, then the alarm is armed.
   */
  async keep(request) {
    const key = request.headers.get("X-Batch-Key");
    const content = request.headers.get("X-Batch-Content");
    const record = new Uint8Array(await request.arrayBuffer());
    const now = Date.now();
    const seen = this.seen.match(key, content, now);
    if (seen !== "new") return keepAnswer(seen);
    const name = request.headers.get("X-Partition");
    this.ctx.storage.transactionSync(() => {
      this.sql.exec("INSERT INTO meta (id, name, next_round) VALUES (1, ?, 1) ON CONFLICT (id) DO NOTHING", name);
      const { id } = this.sql
        .exec("INSERT INTO batches (key, received_ms, bytes, shards) VALUES (?, ?, ?, ?) RETURNING id", key, now, record.byteLength, Number(request.headers.get("X-Batch-Shards") ?? 0))
        .one();
      writeParts(record, (part, bytes) => this.sql.exec("INSERT INTO batch_parts (batch_id, part, body) VALUES (?, ?, ?)", id, part, bytes));
      this.seen.add(key, content, now);
    });
    const waiting = this.sql.exec("SELECT coalesce(sum(bytes), 0) AS bytes FROM batches").one().bytes;
    await this.armDistribution(now + LogEndpoints.roundDelayMs(waiting));
    return keepAnswer(seen);
  }

  /** What this partition registered in the directory already (in memory; rebuilt after a restart or a trap). */
  knownRegistrations() {
    if (this.known?.generation !== engineGeneration()) this.known = { generation: engineGeneration(), registry: new KnownRegistrations() };
    return this.known.registry;
  }

  /** What is kept and not yet distributed (batches, and deliveries waiting in the outbox), and what shards refused. */
  status() {
    const pending = this.sql.exec("SELECT count(*) AS batches, coalesce(sum(bytes), 0) AS bytes FROM batches").one();
    const outbox = this.sql.exec("SELECT count(*) AS deliveries, coalesce(sum(entries), 0) AS entries, min(nullif(queued_ms, 0)) AS since FROM outbox").one();
    const shards = this.sql.exec("SELECT DISTINCT shard FROM outbox ORDER BY shard").toArray().map((row) => row.shard);
    const refused = this.sql.exec("SELECT count(*) AS deliveries, coalesce(sum(entries), 0) AS entries FROM refused").one();
    return {
      pendingBatches: pending.batches,
      pendingBytes: pending.bytes,
      outboxDeliveries: outbox.deliveries,
      outboxEntries: outbox.entries,
      outboxShards: shards.length,
      outboxShardNames: shards,
      // How long the oldest waiting delivery has waited: what an operator watches for a shard that does not recover.
      oldestOutboxMs: outbox.since === null ? 0 : Math.max(0, Date.now() - outbox.since),
      refusedDeliveries: refused.deliveries,
      refusedEntries: refused.entries,
    };
  }

  /**
   * Distribution: rounds until nothing is left, or a round must wait for a
   * retry. Nothing escapes: the runtime gives up on an alarm that keeps
   * throwing, and kept batches must always be tried again.
   */
  async alarm() {
    try {
      this.seen.prune(Date.now());
      const name = this.sql.exec("SELECT name FROM meta WHERE id = 1").toArray()[0]?.name;
      // The round under way first: rows the outbox's shards hand back take
      // round numbers after it, which only a round not yet begun may have.
      const open = this.sql.exec("SELECT round, first_batch, last_batch FROM rounds").toArray()[0];
      if (open && !(await this.distribute(name, open))) throw new Error(`round ${open.round} did not finish`);
      // Between rounds (none is under way there), the outbox: under steady
      // ingest, rounds follow one another within one alarm.
      await this.sendWaiting(name);
      for (let round = this.openRound(); round; round = this.openRound()) {
        if (!(await this.distribute(name, round))) throw new Error(`round ${round.round} did not finish`);
        await this.sendWaiting(name);
      }
    } catch (e) {
      // After a trap the engine is replaced, and the next try starts afresh.
      recoverFrom(e);
      console.error(`log-endpoints: distribution paused (${e.message}); retrying in ${RETRY_MS} ms`);
      await this.ctx.storage.setAlarm(Date.now() + RETRY_MS);
      return;
    }
    await this.armDistribution(Date.now());
  }

  /** The round under way, or a new one over the batches kept since the last (null: none). */
  openRound() {
    const open = this.sql.exec("SELECT round, first_batch, last_batch FROM rounds").toArray()[0];
    if (open) return open;
    // The batches are read from the cursor only as far as the round goes: a backlog is not loaded whole for each round.
    let first = null;
    let last = null;
    let bytes = 0;
    for (const batch of this.sql.exec("SELECT id, bytes FROM batches ORDER BY id")) {
      if (!LogEndpoints.roundTakes(bytes, batch.bytes)) break;
      bytes += batch.bytes;
      first ??= batch.id;
      last = batch.id;
    }
    if (first === null) return null;
    const next = this.sql.exec("SELECT next_round FROM meta WHERE id = 1").one().next_round;
    const round = { round: next, first_batch: first, last_batch: last };
    this.ctx.storage.transactionSync(() => {
      this.sql.exec("INSERT INTO rounds (round, first_batch, last_batch, started_ms) VALUES (?, ?, ?, ?)", round.round, round.first_batch, round.last_batch, Date.now());
      this.sql.exec("UPDATE meta SET next_round = ? WHERE id = 1", round.round + 1);
    });
    return round;
  }

  /**
   * The records that read (of `kept`: `[{ batch, record }]`), the others set
   * aside (`setAside`).
   */
  setAsideUnreadable(name, round, kept) {
    const readable = [];
    for (const { batch, record } of kept) {
      try {
        LogEndpoints.coalesce(name, round, [record], []).free();
        readable.push(record);
      } catch (e) {
        if (!isUnreadable(e)) throw e;
        this.setAside(name, round, batch, e);
      }
    }
    return readable;
  }

  /**
   * A kept batch that does not read (damaged storage, a format this build
   * does not read), rather than stopping its partition for good: logged,
   * recorded in `refused` and moved to `set_aside` (its parts stay).
   */
  setAside(name, round, batch, e) {
    this.ctx.storage.transactionSync(() => {
      this.recordRefusal(name, round, `kept batch ${batch.id}, set aside (its entries not counted)`, 0, e.status ?? 0, e.message);
      this.sql.exec("INSERT OR REPLACE INTO set_aside SELECT * FROM batches WHERE id = ?", batch.id);
      this.sql.exec("DELETE FROM batches WHERE id = ?", batch.id);
    });
  }

  /**
   * Entries not kept, for good, at `where` (a shard that refused all of a
   * delivery or some of its sections; a delivery or batch that no longer
   * reads): logged and kept in `refused`.
   */
  recordRefusal(name, round, where, entries, status, body) {
    console.error(`log-endpoints: ${name} round ${round}: ${entries} entries not kept, for good, at ${where} (${status} ${body})`);
    this.sql.exec("INSERT OR REPLACE INTO refused (round, shard, entries, status, body, at_ms) VALUES (?, ?, ?, ?, ?, ?)", round, where, entries, status, body, Date.now());
  }

  /** The partition's routes: `[{ projectKey, day, split }]`, the split project-days of the days retention keeps. */
  routes() {
    const { firstKeptDay } = LogEndpoints.retention(Date.now());
    this.sql.exec("DELETE FROM splits WHERE day < ?", firstKeptDay);
    return this.sql.exec("SELECT project_key AS projectKey, day, split FROM splits").toArray();
  }

  /**
   * One round: registrations, then deliveries, then what full shards handed
   * back, sent on to the next splits, until every row is in a shard or in
   * the outbox. Whether it finished (false: a directory did not register it).
   */
  async distribute(name, { round, first_batch: first, last_batch: last }) {
    const routes = this.routes();
    const kept = [];
    for (const batch of this.sql.exec("SELECT id, bytes FROM batches WHERE id BETWEEN ? AND ? ORDER BY id", first, last).toArray()) {
      try {
        kept.push({ batch, record: readParts(this.sql, "SELECT body FROM batch_parts WHERE batch_id = ? ORDER BY part", [batch.id], batch.bytes) });
      } catch (e) {
        if (!isUnreadable(e)) throw e;
        this.setAside(name, round, batch, e);
      }
    }
    let work;
    try {
      work = LogEndpoints.coalesce(name, round, kept.map((k) => k.record), routes);
    } catch (e) {
      if (!isUnreadable(e)) throw e;
      work = LogEndpoints.coalesce(name, round, this.setAsideUnreadable(name, round, kept), routes);
    }
    const moved = [];
    while (work) {
      const overflows = await this.send(name, round, work);
      if (!overflows) return false;
      // What full shards handed back goes on, each project's rows to its next
      // split: one round for the whole wave (the core merges it, so no split
      // gets two deliveries of this round).
      work = null;
      if (overflows.length > 0) {
        work = LogEndpoints.reroute(overflows.map((o) => o.shard), overflows.map((o) => o.overflow), routes);
        moved.push(...work.moved);
      }
    }
    // Every shard has its part: the batches are theirs now, and the routes change.
    this.ctx.storage.transactionSync(() => {
      this.moveRoutes(moved);
      this.sql.exec("DELETE FROM batch_parts WHERE batch_id BETWEEN ? AND ?", first, last);
      this.sql.exec("DELETE FROM batches WHERE id BETWEEN ? AND ?", first, last);
      this.sql.exec("DELETE FROM rounds WHERE round = ?", round);
      this.sql.exec("DELETE FROM round_answers WHERE round = ?", round);
      this.sql.exec("DELETE FROM round_answer_parts WHERE round = ?", round);
    });
    return true;
  }

  /**
   * Sends a `Round`'s work (freed here): registrations first, then
   * deliveries, each to its shard or, when the shard does not take it or
   * still has deliveries waiting, to the outbox. A shard's answer is
   * recorded before the rows it handed back go on: a round sent again takes
   * the recorded answers, so rows handed back go on once, and a shard with
   * no recorded answer never had rows of this round sent on (to the outbox
   * with it, its stored answer hands them back once). The rows full shards
   * handed back (`[{ shard, overflow }]`), or null when a directory or this
   * partition's storage must be tried again.
   */
  async send(name, round, work) {
    const registered = await this.register(name, round, work);
    if (!registered) return null;
    const overflows = [];
    // No task throws: a wave's deliveries all end before the round goes on or gives up.
    const taken = await inWaves(registered.deliveries, MAX_CONCURRENT, async ({ shard, entries, bytes }) => {
      try {
        const answered = this.recordedAnswer(round, shard);
        if (answered) {
          if (answered.overflow) overflows.push({ shard, overflow: answered.overflow });
          return true;
        }
        if (this.isWaiting(shard)) {
          this.enqueue(round, shard, entries, bytes, { failed: false });
          return true;
        }
        const sent = await this.deliver(name, round, shard, entries, bytes);
        if (sent.retry) {
          this.enqueue(round, shard, entries, bytes, { failed: true });
          return true;
        }
        const overflow = sent.overflow ?? new Uint8Array(0);
        this.ctx.storage.transactionSync(() => {
          this.sql.exec("INSERT OR REPLACE INTO round_answers (round, shard, overflow_bytes) VALUES (?, ?, ?)", round, shard, overflow.byteLength);
          writeParts(overflow, (part, body) => this.sql.exec("INSERT OR REPLACE INTO round_answer_parts (round, shard, part, body) VALUES (?, ?, ?, ?)", round, shard, part, body));
        });
        if (sent.overflow) overflows.push({ shard, overflow: sent.overflow });
        return true;
      } catch (e) {
        console.error(`log-endpoints: ${name} round ${round}: shard ${shard}'s delivery could not be kept track of (${e.message}); the round is sent again`);
        return false;
      }
    });
    return taken.every(Boolean) ? overflows : null;
  }

  /**
   * What `shard` answered to `round` (`{ overflow? }`), or null when it has
   * not, or its record does not read (then it is forgotten, and the shard
   * asked again: its stored answer is the same).
   */
  recordedAnswer(round, shard) {
    const answered = this.sql.exec("SELECT overflow_bytes FROM round_answers WHERE round = ? AND shard = ?", round, shard).toArray()[0];
    if (!answered) return null;
    if (answered.overflow_bytes === 0) return {};
    try {
      return { overflow: readParts(this.sql, "SELECT body FROM round_answer_parts WHERE round = ? AND shard = ? ORDER BY part", [round, shard], answered.overflow_bytes) };
    } catch (e) {
      if (!isUnreadable(e)) throw e;
      this.ctx.storage.transactionSync(() => {
        this.sql.exec("DELETE FROM round_answers WHERE round = ? AND shard = ?", round, shard);
        this.sql.exec("DELETE FROM round_answer_parts WHERE round = ? AND shard = ?", round, shard);
      });
      return null;
    }
  }

  /**
   * Sends a `Round`'s registrations (the work is freed here): its
   * deliveries and the splits it moves project-days to, or null when a
   * directory did not register them.
   */
  async register(name, round, work) {
    // The work, read out of the core before anything is awaited.
    const made = engineGeneration();
    const known = this.knownRegistrations();
    const registrations = work.registrations(known);
    const { deliveries, moved } = work;
    work.free();
    const registered = await inWaves(registrations, MAX_CONCURRENT, async ({ directory, bytes }) => {
      const res = await directoryStub(this.env, directory).fetch("https://directory.internal/register", { method: "POST", body: bytes });
      const text = await res.text();
      if (!res.ok) console.error(`log-endpoints: ${name} round ${round}: ${directory} did not register it (${res.status} ${text})`);
      return res.ok;
    });
    if (!registered.every(Boolean)) return null;
    if (engineGeneration() === made) for (const { bytes } of registrations) known.learn(bytes);
    return { deliveries, moved };
  }

  /**
   * One delivery to its shard: `{}` when it took it or refused it for good
   * (recorded), `{ overflow }` with the rows it had no room for, or
   * `{ retry: true }` when it must be sent again.
   */
  async deliver(name, round, shard, entries, bytes) {
    // Never throws: a wave's other deliveries must not go on after its caller gave up.
    let res;
    let overflow;
    try {
      res = await shardStub(this.env, shard).fetch("https://shard.internal/deliver", { method: "POST", body: bytes, headers: { "X-Shard": shard } });
      if (res.ok) {
        // The core reads the shard's answer (502 bad_shard_answer when it does not: the delivery waits).
        const { refused, refusedEntries, overflowEntries } = LogEndpoints.readDeliveryAnswer(res.headers.get("X-Delivery"));
        if (overflowEntries > 0) overflow = new Uint8Array(await res.arrayBuffer());
        else await res.body?.cancel();
        if (refused.length > 0) this.recordRefusal(name, round, `shard ${shard}`, refusedEntries, res.status, JSON.stringify(refused));
        return overflow ? { overflow, overflowEntries } : {};
      }
    } catch (e) {
      console.error(`log-endpoints: ${name} round ${round}: shard ${shard} did not answer (${e.message}); its deliveries wait`);
      return { retry: true };
    }
    const body = await res.text().catch((e) => e.message);
    if (!LogEndpoints.refusalIsFinal(res.status)) {
      console.error(`log-endpoints: ${name} round ${round}: shard ${shard} did not take it (${res.status} ${body}); its deliveries wait`);
      return { retry: true };
    }
    this.recordRefusal(name, round, `shard ${shard}`, entries, res.status, body);
    return {};
  }

  /** Whether deliveries to `shard` wait in the outbox (a new one waits behind them). */
  isWaiting(shard) {
    return this.sql.exec("SELECT count(*) AS n FROM waits WHERE shard = ?", shard).one().n > 0;
  }

  /** Puts a delivery in the outbox (once per shard and round); `failed`: its shard just did not take it. */
  enqueue(round, shard, entries, bytes, { failed }) {
    this.ctx.storage.transactionSync(() => this.queue(round, shard, entries, bytes, { failed }));
  }

  /** `enqueue`, inside the caller's transaction. */
  queue(round, shard, entries, bytes, { failed }) {
    const now = Date.now();
    const row = this.sql
      .exec("INSERT INTO outbox (shard, round, entries, bytes, queued_ms) VALUES (?, ?, ?, ?, ?) ON CONFLICT (shard, round) DO NOTHING RETURNING id", shard, round, entries, bytes.byteLength, now)
      .toArray()[0];
    if (row) writeParts(bytes, (part, chunk) => this.sql.exec("INSERT INTO outbox_parts (delivery_id, part, body) VALUES (?, ?, ?)", row.id, part, chunk));
    this.sql.exec("INSERT INTO waits (shard, tries, next_try_ms) VALUES (?, ?, ?) ON CONFLICT (shard) DO NOTHING", shard, failed ? 1 : 0, failed ? now + LogEndpoints.outboxWaitMs(1) : now);
  }

  /**
   * Sends the outbox's deliveries of each shard whose next try is due, in
   * round order, until one is not taken (the shard's next try then waits
   * longer, `outboxWaitMs`). One shard after another: rows a
   * shard hands back go out under round numbers taken in the order they are
   * queued, which is then the order each shard receives them.
   */
  async sendWaiting(name) {
    const dueShards = this.sql.exec("SELECT shard, tries FROM waits WHERE next_try_ms <= ? ORDER BY shard", Date.now()).toArray();
    for (const { shard, tries } of dueShards) {
      try {
        await this.sendWaitingTo(name, shard, tries);
      } catch (e) {
        // One shard's trouble (a trap, a storage error) waits for its own next try.
        recoverFrom(e);
        console.error(`log-endpoints: ${name}: the outbox of shard ${shard} paused (${e.message})`);
        this.putOff(shard, tries);
      }
    }
  }

  /** A shard's next try, after one more failure, waits longer (`outboxWaitMs`: twice as long, up to a limit). */
  putOff(shard, tries) {
    const wait = LogEndpoints.outboxWaitMs(tries + 1);
    this.sql.exec("UPDATE waits SET tries = ?, next_try_ms = ? WHERE shard = ?", tries + 1, Date.now() + wait, shard);
  }

  /** `sendWaiting` for one shard, whose last `tries` failed. */
  async sendWaitingTo(name, shard, tries) {
    for (;;) {
      const head = this.sql.exec("SELECT id, round, entries, bytes FROM outbox WHERE shard = ? ORDER BY round LIMIT 1", shard).toArray()[0];
      if (!head) {
        this.sql.exec("DELETE FROM waits WHERE shard = ?", shard);
        return;
      }
      let bytes;
      try {
        bytes = readParts(this.sql, "SELECT body FROM outbox_parts WHERE delivery_id = ? ORDER BY part", [head.id], head.bytes);
      } catch (e) {
        if (!isUnreadable(e)) throw e;
        // A waiting delivery whose parts do not add up is recorded and dropped, not retried for good.
        this.ctx.storage.transactionSync(() => {
          this.recordRefusal(name, head.round, `shard ${shard} (outbox)`, head.entries, e.status, e.message);
          this.sql.exec("DELETE FROM outbox_parts WHERE delivery_id = ?", head.id);
          this.sql.exec("DELETE FROM outbox WHERE id = ?", head.id);
        });
        continue;
      }
      const sent = await this.deliver(name, head.round, shard, head.entries, bytes);
      // Rows it handed back go on to their next splits, queued with the head's removal in one transaction:
      // the shard answers a delivery sent again as it did, so they are queued once.
      let handedBack = null;
      let unreadable = false;
      if (sent.overflow) {
        try {
          handedBack = await this.handBack(name, shard, sent.overflow);
        } catch (e) {
          if (!isUnreadable(e)) throw e;
          // Rows handed back that do not read: recorded, and the delivery is done.
          this.recordRefusal(name, head.round, `shard ${shard} (handed back)`, sent.overflowEntries, e.status, `what it handed back does not read: ${e.message}`);
          unreadable = true;
        }
      }
      // Not taken, or a directory did not register where its rows go: the shard waits.
      if (sent.retry || (sent.overflow && !handedBack && !unreadable)) {
        this.putOff(shard, tries);
        return;
      }
      this.ctx.storage.transactionSync(() => {
        if (handedBack) {
          this.moveRoutes(handedBack.moved);
          for (const { shard: to, entries, bytes: body } of handedBack.deliveries) this.queue(handedBack.round, to, entries, body, { failed: false });
        }
        this.sql.exec("DELETE FROM outbox_parts WHERE delivery_id = ?", head.id);
        this.sql.exec("DELETE FROM outbox WHERE id = ?", head.id);
        this.sql.exec("UPDATE waits SET tries = 0, next_try_ms = ? WHERE shard = ?", Date.now(), shard);
      });
      tries = 0;
    }
  }

  /**
   * The rows `shard` handed back from the outbox, rerouted under a new round
   * number and registered: `{ round, deliveries, moved }`, or null when a
   * directory did not register them.
   */
  async handBack(name, shard, overflow) {
    const round = this.sql.exec("UPDATE meta SET next_round = next_round + 1 WHERE id = 1 RETURNING next_round - 1 AS round").one().round;
    const work = LogEndpoints.reroute([shard], [overflow], this.routes(), round);
    const registered = await this.register(name, round, work);
    return registered && { round, ...registered };
  }

  /** The partition's routes take the splits rows were sent on to. */
  moveRoutes(moved) {
    for (const { projectKey, day, split } of moved) {
      this.sql.exec("INSERT INTO splits (project_key, day, split) VALUES (?, ?, ?) ON CONFLICT (project_key, day) DO UPDATE SET split = max(split, excluded.split)", projectKey, day, split);
    }
  }
}
