// A shard: the Durable Object holding one UTC day of one group of projects
// (named by the core, `{day}/g/{group}`), or with SHARDING=off every entry.
// It keeps an in-memory store, takes the ingest partitions' deliveries (each
// once: the partition and round of the last one applied are stored in the
// same transaction as its entries), and rebuilds from storage when it wakes
// or after a wasm trap: from its last snapshot and the batches after it. An
// alarm writes snapshots, warms its cache and applies retention; a wake that
// replayed many batches writes its snapshot at once.
import { engineFault, engineGeneration, isServiceError, keepEngine, LogEndpoints, newEngine, recoverFrom, releaseEarlierEngine, restoredEngine, settingsFrom, storageUnavailable, unavailable } from "./engine.js";
import { partsOf, readParts, writeParts } from "./blobs.js";
import { readBody, requestParts, respond } from "./http.js";
import { SeenBatches } from "./seen.js";
import { PARTIAL_PATH } from "./stubs.js";

/** The `stream` of a stored delivery (its sections name their streams). */
const DELIVERY = "delivery";
/** The `stream` of a stored record: a batch sent here directly, as the core prepared it. */
const RECORD = "record";
/**
 * A shard's alarm: snapshot, cache warming and retention, as often as the
 * cache warms; traps one wake's replay may meet before it leaves the rest for
 * a later wake. Both the core's.
 */
const { warmEveryMs: WARM_EVERY_MS, maxTrapsPerWake: MAX_TRAPS_PER_WAKE } = LogEndpoints.constants();
/** The path of maintenance (the alarm's work, asked by the cron when SHARDING=off). */
const MAINTAIN_PATH = "/maintain";
/** The path of an ingest partition's deliveries. */
const DELIVER_PATH = "/deliver";

export class ShardObject {
  constructor(ctx, env) {
    this.ctx = ctx;
    this.settings = settingsFrom(env);
    this.sql = ctx.storage.sql;
    this.createTables();
    this.blockStorage = {
      put: (key, bytes) => this.sql.exec("INSERT OR REPLACE INTO text_blocks (key, body) VALUES (?, ?)", key, bytes.buffer),
      get: (key) => this.sql.exec("SELECT body FROM text_blocks WHERE key = ?", key).toArray()[0]?.body,
    };
    ctx.blockConcurrencyWhile(async () => {
      this.alarmAt = await ctx.storage.getAlarm();
      // Stored batches always have maintenance to come (an eviction between
      // storing a batch and arming the alarm would otherwise leave none).
      if (this.alarmAt === null && this.sql.exec("SELECT count(*) AS n FROM batches").one().n > 0) await this.armAlarm();
      this.rebuild();
    });
  }

  /** The shard's tables (again after retention deletes its storage, which drops them). */
  createTables() {
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
    // The last round applied of each ingest partition: a delivery sent again is not applied twice.
    this.sql.exec("CREATE TABLE IF NOT EXISTS applied (partition TEXT PRIMARY KEY, round INTEGER NOT NULL)");
    // The answer to each partition's last round (what was refused, and the rows
    // handed back for want of room): a round sent again gets it again.
    this.sql.exec("CREATE TABLE IF NOT EXISTS answers (partition TEXT PRIMARY KEY, round INTEGER NOT NULL, report TEXT NOT NULL, overflow_bytes INTEGER NOT NULL)");
    this.sql.exec("CREATE TABLE IF NOT EXISTS answer_parts (partition TEXT NOT NULL, part INTEGER NOT NULL, body BLOB NOT NULL, PRIMARY KEY (partition, part))");
    // Sealed text blocks: the engine hands them here (under keys it picks)
    // and reads back the few logs.all returns rows from, so memory holds the
    // columns and open blocks only (docs/edge-deployment.md, "Text blocks in SQLite").
    this.sql.exec("CREATE TABLE IF NOT EXISTS text_blocks (key INTEGER PRIMARY KEY, body BLOB NOT NULL)");
    // With SHARDING=off batches come here directly: resent ones are recognised here.
    this.seen = new SeenBatches(this.sql);
  }

  /** The clock of one request, epoch ms (null: the settings'). */
  requestNowMs(_request) {
    return null;
  }

  /** Called before a query runs. */
  beforeQuery(_request) {}

  /**
   * A fresh in-memory store: the stored snapshot (if any, and if it reads back),
   * then every stored batch after it, in arrival order. A snapshot that does not
   * read back (checksum, truncation) is logged and dropped, and every batch is
   * replayed instead: nothing is lost, only time.
   */
  rebuild() {
    try {
      this.load();
    } catch (e) {
      // A store without every stored batch must not answer: the next
      // request rebuilds it again.
      this.dropEngine();
      throw e;
    }
  }

  /**
   * `rebuild`'s work, which may fail halfway (storage); `snapshotAfterReplay`:
   * whether a long replay is followed by a snapshot (not after a trap in one);
   * `skip`: stored batches a trap went through on this wake, left out (and
   * counted as failed: the next wake tries them again), and every batch from
   * `skipFrom` on.
   */
  load({ snapshotAfterReplay = true, skip = new Set(), skipFrom = Infinity } = {}) {
    const started = Date.now();
    releaseEarlierEngine(this.ctx.id.toString(), this);
    this.dropEngine();
    // No batch limit here beyond the engine's own: readBody enforces MAX_BODY_BYTES
    // on requests, and stored batches must load even if that setting was lowered.
    const limits = { maxStoreBytes: this.settings.maxStoreBytes };
    const snapshot = this.sql.exec("SELECT last_batch_id, bytes FROM snapshot WHERE id = 1").toArray()[0];
    let after = 0;
    this.woke = { atMs: started, fromSnapshot: false };
    if (snapshot) {
      try {
        // Read from SQLite a part at a time as the engine takes them, never
        // joined: the isolate holds the store and one part, not the snapshot too.
        const parts = partsOf(this.sql, "SELECT body FROM snapshot_parts ORDER BY part", []);
        this.holdEngine(restoredEngine(parts, snapshot.bytes, this.settings, limits, this.blockStorage));
        this.woke.restoreMs = Date.now() - started;
        after = snapshot.last_batch_id;
        this.woke.fromSnapshot = true;
      } catch (e) {
        // Only a snapshot the core refuses goes: settings it cannot use (503
        // until the operator fixes them) leave storage as it is.
        if (isServiceError(e) && e.code === "invalid_snapshot") {
          console.error(`log-endpoints: the stored snapshot was refused (${e.message}); rebuilding from the stored batches`);
          this.woke.snapshotRefused = e.message;
          this.dropSnapshot();
        } else if (isServiceError(e) && e.code === "unavailable") {
          throw e;
        } else {
          // Not the snapshot's fault (e.g. memory ran out in the engine):
          // start a clean instance and replay everything this time (the
          // snapshot goes too, below: the replay writes the text blocks again).
          console.error(`log-endpoints: restoring the snapshot failed (${e?.message}); replaying the stored batches`);
          this.woke.snapshotFailed = String(e?.message);
          this.service = undefined;
          recoverFrom(e);
        }
      }
    }
    if (!this.service) {
      // Every block is written again as the batches replay, maybe otherwise
      // (a trap on the way, another build): a snapshot kept for its blocks'
      // hashes would read them as damaged, so it goes with them.
      this.ctx.storage.transactionSync(() => {
        this.sql.exec("DELETE FROM text_blocks");
        this.sql.exec("DELETE FROM snapshot_parts");
        this.sql.exec("DELETE FROM snapshot");
      });
      this.holdEngine(newEngine(this.settings, limits, this.blockStorage));
    }
    const batches = this.sql.exec("SELECT id, stream, bytes FROM batches WHERE id > ? ORDER BY id", after).toArray();
    // Batches that did not load are retried on every rebuild; no snapshot is
    // written while there are any (it would leave them out for good).
    this.failedBatches = 0;
    for (const batch of batches) {
      if (skip.has(batch.id) || batch.id >= skipFrom) {
        this.failedBatches++;
        continue;
      }
      try {
        this.replay(batch);
      } catch (e) {
        // One unreadable stored batch must not keep the object from starting.
        this.failedBatches++;
        console.error(`log-endpoints: stored batch ${batch.id} could not be loaded: ${e.message}`);
        if (recoverFrom(e)) {
          // A trap took the engine with it (the isolate's instance is
          // replaced): load again into a fresh one, without this batch.
          this.service = undefined;
          const trapped = new Set([...skip, batch.id]);
          // Past a few traps in one wake (memory, most likely), the batches
          // from this one on wait for a later wake rather than each replaying all.
          const from = trapped.size >= MAX_TRAPS_PER_WAKE ? batch.id : Infinity;
          return this.load({ snapshotAfterReplay: false, skip: trapped, skipFrom: from });
        }
      }
    }
    this.woke.replayedBatches = batches.length;
    this.woke.failedBatches = this.failedBatches;
    this.woke.trappedBatches = skip.size; // of the failed ones, those a trap went through
    this.woke.ms = Date.now() - started;
    // The next wake would replay these batches again: when the core says they
    // are worth it, the snapshot is written now, in this event. (An alarm
    // would come too late after a long replay: workerd evicts an object that
    // long without a new event, and the alarm's new instance replays again.)
    if (snapshotAfterReplay && this.failedBatches === 0 && this.service.snapshotDueAfterReplay()) {
      try {
        this.woke.snapshot = this.writeSnapshot();
      } catch (e) {
        // A storage error costs only time: the next wake replays them again.
        console.error(`log-endpoints: the snapshot after a replay could not be written: ${e?.message}`);
        const trapped = recoverFrom(e);
        if (trapped) {
          // A fresh engine replays again, without the snapshot.
          this.service = undefined;
          this.load({ snapshotAfterReplay: false });
        }
        this.woke.snapshot = { written: false, reason: String(e?.message), engineReset: trapped };
      }
    }
  }

  /** Applies stored batch `{ id, stream, bytes }` to the engine again. */
  replay(batch) {
    const body = readParts(this.sql, "SELECT body FROM batch_parts WHERE batch_id = ? ORDER BY part", [batch.id], batch.bytes);
    if (batch.stream === DELIVERY) {
      // A stored delivery holds what was kept, and is applied whole
      // again, whatever room a store restored from a snapshot has.
      const { refused, overflowEntries } = this.service.replayDelivery(body);
      if (refused.length > 0) throw new Error(`${refused.length} of its sections were refused on replay (${refused.map((r) => r.error.code).join(", ")})`);
      if (overflowEntries > 0) throw new Error(`${overflowEntries} of its rows found no room on replay`);
    } else if (batch.stream === RECORD) this.service.replayRecord(body);
    else this.service.ingest(batch.stream, body); // stored before records were
  }

  /** Keeps `service` as this instance's engine, noted where a later instance finds it. */
  holdEngine(service) {
    this.service = service;
    this.generation = engineGeneration();
    keepEngine(this.ctx.id.toString(), this, service);
  }

  /** Frees this instance's engine (one from before a reset is gone: nothing of it to free). */
  dropEngine() {
    if (this.generation === engineGeneration()) this.service?.free();
    this.service = undefined;
    keepEngine(this.ctx.id.toString(), this, undefined);
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
    if (last === 0) return { written: false, lastBatchId: 0 }; // nothing stored: nothing to restore
    const current = this.sql.exec("SELECT last_batch_id FROM snapshot WHERE id = 1").toArray()[0];
    if (current && current.last_batch_id === last) return { written: false, lastBatchId: last };
    if (this.failedBatches > 0) return { written: false, lastBatchId: current?.last_batch_id ?? 0, reason: `${this.failedBatches} stored batches did not load` };
    // Parts are stored as the engine writes them (part 0, which begins with
    // the header, last): neither the engine nor the isolate holds the whole snapshot.
    const started = Date.now();
    const bytes = this.ctx.storage.transactionSync(() => {
      this.sql.exec("DELETE FROM snapshot_parts");
      const bytes = this.service.snapshotParts((part, body) => this.sql.exec("INSERT INTO snapshot_parts (part, body) VALUES (?, ?)", part, body.buffer));
      this.sql.exec("INSERT OR REPLACE INTO snapshot (id, last_batch_id, bytes, written_ms) VALUES (1, ?, ?, ?)", last, bytes, Date.now());
      return bytes;
    });
    return { written: true, lastBatchId: last, bytes, ms: Date.now() - started };
  }

  async fetch(request) {
    const url = new URL(request.url);
    if (!this.service || this.generation !== engineGeneration()) {
      try {
        this.rebuild();
      } catch (e) {
        recoverFrom(e);
        return respond(unavailable("the query engine is restarting"));
      }
    }
    const nowMs = this.requestNowMs(request);
    if (nowMs !== null) this.service.setNow(nowMs);
    try {
      if (url.pathname === MAINTAIN_PATH) return await this.maintain(request);
      if (url.pathname === DELIVER_PATH) return await this.deliver(request);
      if (url.pathname.startsWith(`${PARTIAL_PATH}/`)) return await this.query(request, new URL(url.pathname.slice(PARTIAL_PATH.length) + url.search, url), true);
      const target = LogEndpoints.route(url.pathname, request.method);
      if (target.kind === "ingest") return await this.ingest(request, url);
      return await this.query(request, url);
    } catch (e) {
      return this.failure(e);
    } finally {
      if (nowMs !== null) this.service?.setNow(this.settings.fixedNowMs);
    }
  }

  /** A query; `partial`: as one shard of a split project-day answers its directory. */
  async query(request, url, partial = false) {
    const { paramsBodyBytes } = LogEndpoints.constants();
    const body = request.method === "POST" ? await readBody(request, paramsBodyBytes) : undefined;
    this.beforeQuery(request);
    const parts = requestParts(request, url, body);
    return respond(partial ? this.service.answerPartial(parts) : this.service.answerRequest(parts));
  }

  /**
   * A batch sent here directly (SHARDING=off): read and answered by the core,
   * its record kept in memory and then in storage, once however often it is sent.
   */
  async ingest(request, url) {
    const parts = requestParts(request, url);
    // The core decides: 401 for a missing or unknown key, 403 for a query key.
    this.service.authorizeRequest(parts);
    const body = await readBody(request, this.settings.maxBodyBytes);
    const prepared = this.service.prepareIngest(parts, body);
    // Nothing to keep (every entry refused): answered at once, as the sharded front does.
    if (prepared.shards === 0) return respond(prepared.answers.new);
    const { key, content } = prepared.key;
    const seen = this.seen.match(key, content, Date.now());
    if (seen === "new") {
      const kept = this.service.ingestRecord(prepared.record); // all of it, or a throw and nothing
      await this.keep(RECORD, prepared.record, kept.newestTimestamp, request, () => this.seen.add(key, content, Date.now()));
    }
    return respond(prepared.answers[seen]);
  }

  /**
   * An ingest partition's delivery: applied once, then stored with its round
   * and its answer. The answer is the core's `DeliveryAnswer` in `X-Delivery`
   * and, as the body, the rows there was no room for (a delivery the
   * partition sends on). A round sent again gets the same answer.
   */
  async deliver(request) {
    const bytes = new Uint8Array(await request.arrayBuffer());
    const { partition, round } = LogEndpoints.deliveryHeader(bytes);
    const applied = this.sql.exec("SELECT round FROM applied WHERE partition = ?", partition).toArray()[0]?.round ?? 0;
    if (round <= applied) return this.storedAnswer(partition, round);
    // What fits is kept (`kept`: as applied, when not all of it was); the rest is refused or handed back.
    const delivered = this.service.ingestDelivery(bytes, request.headers.get("X-Shard") ?? "");
    const overflow = delivered.overflow ?? new Uint8Array(0);
    const recordRound = () => {
      this.sql.exec("INSERT OR REPLACE INTO applied (partition, round) VALUES (?, ?)", partition, round);
      this.sql.exec("DELETE FROM answer_parts WHERE partition = ?", partition);
      this.sql.exec("INSERT OR REPLACE INTO answers (partition, round, report, overflow_bytes) VALUES (?, ?, ?, ?)", partition, round, delivered.answer, overflow.byteLength);
      writeParts(overflow, (part, body) => this.sql.exec("INSERT INTO answer_parts (partition, part, body) VALUES (?, ?, ?)", partition, part, body));
    };
    if (delivered.keep) await this.keep(DELIVERY, delivered.kept ?? bytes, delivered.report.newestTimestamp, request, recordRound);
    else this.ctx.storage.transactionSync(recordRound); // nothing kept: nothing to store or replay
    return deliveryAnswer(delivered.answer, overflow);
  }

  /**
   * The answer given to a partition's round applied before: the same one,
   * marked a duplicate (`replayedAnswer`). Rows it handed back whose stored
   * parts no longer read are named as refused (the partition records them),
   * not the round's entries, which this shard kept.
   */
  storedAnswer(partition, round) {
    const stored = this.sql.exec("SELECT report, overflow_bytes FROM answers WHERE partition = ? AND round = ?", partition, round).toArray()[0];
    if (!stored) return deliveryAnswer(LogEndpoints.replayedAnswer(null), new Uint8Array(0));
    const answer = LogEndpoints.replayedAnswer(stored.report);
    try {
      const overflow = readParts(this.sql, "SELECT body FROM answer_parts WHERE partition = ? ORDER BY part", [partition], stored.overflow_bytes);
      return deliveryAnswer(answer, overflow);
    } catch (e) {
      if (!isServiceError(e)) throw e;
      return deliveryAnswer(LogEndpoints.replayedAnswer(stored.report, e), new Uint8Array(0));
    }
  }

  /**
   * Stores what memory took (a batch, or a delivery), with `also` in the same
   * transaction; if storage fails, memory goes back to what storage has.
   */
  async keep(stream, body, newestUs, request, also) {
    try {
      this.store(stream, body, newestUs, request, also);
    } catch (e) {
      try {
        this.rebuild();
      } catch {
        this.service = undefined; // the next request rebuilds
      }
      throw storageUnavailable(e.message);
    }
    await this.armAlarm();
  }

  /** Appends what memory took to storage, with `also`, in one transaction. */
  store(stream, body, newestUs, _request, also) {
    this.ctx.storage.transactionSync(() => {
      const { id } = this.sql
        .exec("INSERT INTO batches (stream, newest_us, received_ms, bytes) VALUES (?, ?, ?, ?) RETURNING id", stream, newestUs ?? 0, Date.now(), body.byteLength)
        .one();
      writeParts(body, (part, bytes) => this.sql.exec("INSERT INTO batch_parts (batch_id, part, body) VALUES (?, ?, ?)", id, part, bytes));
      also();
    });
  }

  /**
   * Maintenance comes WARM_EVERY_MS after the first batch since the last
   * (or `inMs` from now), unless an alarm is already due sooner.
   */
  async armAlarm(inMs = WARM_EVERY_MS) {
    const at = Date.now() + inMs;
    if (this.alarmAt && this.alarmAt <= at) return;
    // Recorded once set: a setAlarm that throws leaves the next call to try again.
    await this.ctx.storage.setAlarm(at);
    this.alarmAt = at;
  }

  /**
   * The alarm: maintenance. It comes back while cached results are kept warm,
   * else when the newest batch passes retention, and then the shard deletes
   * its storage.
   */
  async alarm() {
    this.alarmAt = null;
    try {
      if (!this.service || this.generation !== engineGeneration()) this.rebuild();
      const status = await this.maintenance(this.settings.fixedNowMs ?? Date.now());
      if (!status.deleted && status.nextMaintenanceInMs !== null) await this.armAlarm(status.nextMaintenanceInMs);
    } catch (e) {
      // The runtime retries a failed alarm: after a trap, on a fresh engine.
      if (recoverFrom(e)) this.service = undefined;
      throw e;
    }
  }

  /** Maintenance asked over HTTP, as of `X-Now-Ms` (the cron's time) or now. */
  async maintain(request) {
    const asOf = Number(request.headers.get("X-Now-Ms") || NaN);
    return Response.json(await this.maintenance(Number.isFinite(asOf) ? asOf : (this.settings.fixedNowMs ?? Date.now())));
  }

  /**
   * Drops stored batches whose newest entry is past the longest retention,
   * writes a fresh snapshot when batches came since the last one, and warms
   * the cache, as of `nowMs`; says when it is next due (`nextMaintenanceInMs`).
   */
  async maintenance(nowMs) {
    // Keys of batches sent here directly (SHARDING=off) past the resend window, by the host clock they were kept by.
    this.seen.prune(Date.now());
    const { cutoff } = LogEndpoints.retention(nowMs);
    const expired = this.sql.exec("SELECT id FROM batches WHERE newest_us < ?", cutoff).toArray();
    if (expired.length > 0) {
      this.ctx.storage.transactionSync(() => {
        this.sql.exec("DELETE FROM batch_parts WHERE batch_id IN (SELECT id FROM batches WHERE newest_us < ?)", cutoff);
        this.sql.exec("DELETE FROM batches WHERE newest_us < ?", cutoff);
        // The snapshot holds the dropped batches' entries.
        this.sql.exec("DELETE FROM snapshot_parts");
        this.sql.exec("DELETE FROM snapshot");
      });
      if (this.sql.exec("SELECT count(*) AS n FROM batches").one().n === 0) {
        // Every batch is past retention: the shard's day is over for good.
        await this.ctx.storage.deleteAll();
        await this.ctx.storage.deleteAlarm();
        this.alarmAt = null;
        this.createTables();
        this.dropEngine();
        return { droppedBatches: expired.length, deleted: true };
      }
      this.rebuild();
    }
    const snapshot = this.writeSnapshot();
    this.service.setNow(nowMs);
    const warmed = this.service.warmCache();
    this.service.setNow(this.settings.fixedNowMs);
    const { newest } = this.sql.exec("SELECT max(newest_us) AS newest FROM batches").one();
    const nextMaintenanceInMs = LogEndpoints.nextMaintenanceInMs(warmed.kept > 0, newest, nowMs) ?? null;
    return { ...warmed, droppedBatches: expired.length, snapshot, nextMaintenanceInMs, woke: this.woke, ...this.service.stats(), memoryBytes: this.service.memoryBytes() };
  }

  failure(e) {
    if (isServiceError(e)) return respond(e);
    // A trap replaces the engine; any other fault (storage, say) may have left
    // memory ahead of storage. Either way the store is rebuilt from storage so
    // that the next request is served normally, and the caller sends it again.
    const trapped = recoverFrom(e);
    console.error(`log-endpoints: ${trapped ? "engine fault, re-instantiating" : "shard fault, rebuilding"}:`, e && e.message);
    try {
      this.service = undefined;
      this.rebuild();
    } catch (again) {
      console.error("log-endpoints: rebuild failed:", again && again.message);
      this.service = undefined;
      return respond(unavailable("the query engine is restarting"));
    }
    return respond(trapped ? engineFault() : unavailable(`the shard could not complete the request (${e && e.message})`));
  }
}

/** A delivery's answer: the core's answer text in `X-Delivery`, the rows handed back as the body. */
function deliveryAnswer(answer, overflow) {
  return new Response(overflow, { headers: { "X-Delivery": answer, "Content-Type": "application/octet-stream" } });
}
