// The page's Web Worker: holds the wasm module and the logs, so reading large
// files and answering queries never blocks the page. Nothing leaves the browser.
import { init, LogEndpoints, LogFeed } from "./pkg/web.js";

const KEY = "page";
/** The page's `?max-store=MiB`, as given (the module says whether it can be used). */
const maxStoreSetting = new URL(self.location.href).searchParams.get("max-store");
let OPTIONS = { apiKeys: [KEY] };
/** Why `?max-store` was not used, said with the next summary. */
let settingProblem = null;
let service;
/** Set by the page's Stop reading: the load under way ends after the piece it is reading. */
let stopRequested = false;

/**
 * Compresses the store's full text blocks on a second thread while files are
 * read, as the Node package's SealWorker does (about 40% of reading edge
 * logs). Without a second core, or once its thread fails, the module
 * compresses them itself as it reads. Answers are the same either way.
 */
class Sealer {
  #worker = null;
  #inFlight = 0;
  #waiting = [];
  /** Blocks the thread compressed that were put in place. */
  installed = 0;
  #failed = navigator.hardwareConcurrency > 1 ? null : "one core";

  /** Starts deferring `svc`'s seals to the thread (a job for a store replaced since is passed over by the module). */
  serve(svc) {
    if (this.#failed) return;
    if (!this.#worker) {
      this.#worker = new Worker(new URL("./seal-worker.js", import.meta.url), { type: "module" });
      this.#worker.onmessage = ({ data }) => {
        this.#inFlight -= 1;
        try {
          if (data.error) throw new Error(data.error);
          if (!this.#failed) this.installed += service.installSealed(data.sealed);
        } catch (e) {
          this.#fail(e.message);
        } finally {
          this.#wake();
        }
      };
      this.#worker.onerror = (e) => this.#fail(e.message || "the seal worker failed");
    }
    svc.deferSeals(true);
  }

  /** Hands the thread the blocks filled since the last call. */
  pump() {
    if (this.#failed) return;
    const jobs = service.takeSealJobs();
    if (jobs === undefined) return;
    this.#worker.postMessage(jobs, [jobs.buffer]);
    this.#inFlight += 1;
  }

  /** Resolves once every block handed out is back and in place. */
  async settled() {
    this.pump();
    while (this.#inFlight > 0 && !this.#failed) await new Promise((resolve) => this.#waiting.push(resolve));
  }

  #wake() {
    for (const resolve of this.#waiting.splice(0)) resolve();
  }

  #fail(why) {
    if (this.#failed) return;
    this.#failed = why;
    service.deferSeals(false);
    this.#worker?.terminate();
    this.#wake();
  }
}
const sealer = new Sealer();

/** Makes `svc` the store the page reads into and asks, its seals deferred to the sealer. */
function hold(svc) {
  service = svc;
  sealer.serve(svc);
}

async function ready() {
  if (!service) {
    await init();
    if (maxStoreSetting !== null) {
      try {
        OPTIONS = { ...OPTIONS, limits: { maxStoreBytes: LogEndpoints.storeBytesOfMiB(maxStoreSetting, "?max-store") } };
      } catch (e) {
        settingProblem = `?max-store=${maxStoreSetting} is not used (${e.message}); the default applies`;
      }
    }
    hold(new LogEndpoints(OPTIONS));
  }
  return service;
}

/** A File that the browser could not read to its end (it changed, it went away). */
class ReadFailed extends Error {}

/** Byte chunks of a File as they are read (the module unpacks gzip, told by its first bytes). */
async function* bytesOf(file) {
  const reader = file.stream().getReader();
  try {
    for (;;) {
      let next;
      try {
        next = await reader.read();
      } catch (e) {
        throw new ReadFailed(e.message);
      }
      if (next.done) return;
      yield next.value;
    }
  } finally {
    // A reader that stops early (a full store, Stop reading) lets the file go.
    reader.cancel().catch(() => {});
  }
}

/** Whether a file is a saved analysis (a snapshot), by its first bytes (the module knows them). */
async function isSnapshot(file) {
  return LogEndpoints.isSnapshot(new Uint8Array(await file.slice(0, 64).arrayBuffer()));
}

/**
 * Reads the files given into what is held. `skipFirst[i]`: entries of
 * `files[i]` read before (its reading was stopped), gone on from. Each file's
 * summary names its place in `files` (`at`).
 */
async function ingest({ files, stream, skipFirst = [] }) {
  await ready();
  const placeOf = new Map(files.map((file, at) => [file, at]));
  const { reportedReasons: REPORTED_REASONS } = LogEndpoints.constants();
  stopRequested = false;
  const summary = { accepted: 0, rejected: 0, reasons: settingProblem ? [settingProblem] : [], files: [] };
  settingProblem = null;
  /** A file that could not be read at all: named in the summary, and the others go on. */
  const unread = (file, why) => {
    const error = `${file.name}: ${why}`;
    summary.files.push({ name: file.name, at: placeOf.get(file), entries: 0, accepted: 0, error });
    summary.reasons.push(error);
  };
  // A saved analysis replaces what is held (one per drop); logs given with it are added on top.
  const snapshots = [];
  const logs = [];
  for (const file of files) {
    try {
      ((await isSnapshot(file)) ? snapshots : logs).push(file);
    } catch (e) {
      unread(file, `cannot be read (a folder?): ${e.message}`);
    }
  }
  let opened = null;
  for (const file of snapshots) {
    if (opened) {
      unread(file, `not opened: ${opened.name} was, and one saved analysis opens at a time`);
      continue;
    }
    try {
      const bytes = new Uint8Array(await file.arrayBuffer());
      // Stopped while it was read: what is held stays as it was.
      if (stopRequested) {
        unread(file, "not opened: reading stopped at your request");
        continue;
      }
      const restored = LogEndpoints.fromSnapshot(bytes, OPTIONS);
      service.free();
      hold(restored);
      opened = file;
    } catch (e) {
      unread(file, e.message);
    }
  }
  files = logs;
  const svc = service;
  /** A full store ends the reading: what was read is answered, and the summary says how far it got. Whether it is full. */
  const storeFull = (why, later) => {
    if (why) summary.reasons.unshift(`${why}${later ? `; ${LogFeed.laterFilesNotRead(later)}` : ""}. Answers cover what was kept.`);
    return Boolean(why);
  };
  const totalBytes = files.reduce((s, f) => s + f.size, 0);
  const started = performance.now();
  const installedBefore = sealer.installed;
  let bytesDone = 0;
  let entries = 0;
  let lastReport = 0;
  for (const [at, file] of files.entries()) {
    if (stopRequested) {
      summary.reasons.unshift(`Reading stopped at your request: ${LogFeed.laterFilesNotRead(files.length - at)}. Answers cover what was kept.`);
      break;
    }
    // The module frames the file, routes each entry to its stream and ingests in batches.
    const place = placeOf.get(file);
    const resumed = skipFirst[place] ?? 0;
    const feed = new LogFeed(svc, { stream: stream === "auto" ? undefined : stream, source: file.name, skipFirst: resumed });
    let fileBytes = 0;
    try {
      // A file the browser cannot read to its end (it changed, it went away)
      // ends there: what was read before is kept, and the summary says where.
      let failed = null;
      let stopped = false;
      try {
        for await (const bytes of bytesOf(file)) {
          // Checked before a piece is taken: a stop after the last piece leaves the file whole.
          if (stopRequested) {
            stopped = true;
            break;
          }
          fileBytes += bytes.byteLength;
          feed.push(bytes);
          sealer.pump();
          const now = performance.now();
          if (now - lastReport > 100) {
            lastReport = now;
            const seen = entries + feed.entries;
            postMessage({ type: "progress", file: file.name, bytes: bytesDone + fileBytes, totalBytes, entries: seen, rate: seen / ((now - started) / 1000) });
            // A file's chunks can arrive without a task between them: the page's Stop reading waits for one.
            await new Promise((resolve) => setTimeout(resolve, 0));
          }
          // The store filled, or the file's gzip data broke: the module reads no more of it.
          if (feed.readsNoMore) break;
        }
      } catch (e) {
        // The module's refusals (a broken array, gzip with nothing that unpacks) are the file's error.
        if (!(e instanceof ReadFailed)) throw e;
        failed = e;
      }
      // The module keeps the whole entries before a break, in any framing, and
      // says where it was (a cut or damaged gzip, an array cut short); a file
      // whose reading was stopped or failed is one that broke off there.
      const done = failed || stopped ? feed.finishCut() : feed.finish();
      let cut = done.endsEarly;
      // A stop while the entries read before were still passed over leaves the point where to go on as it was.
      const readUpTo = Math.max(done.entries, resumed);
      if (stopped) {
        const later = files.length - at - 1;
        cut = `Reading stopped at your request in ${file.name}: the ${readUpTo.toLocaleString("en-US")} whole entries before were read (give it again to go on from there)${later ? `; ${LogFeed.laterFilesNotRead(later)}` : ""}. Answers cover what was kept.`;
      } else if (failed) {
        cut = `${cut} (the browser could not read on: ${failed.message})`;
      }
      entries += done.entries;
      summary.accepted += done.accepted;
      summary.rejected += done.rejectedTotal;
      if (stopped) summary.reasons.unshift(cut);
      else if (cut) summary.reasons.push(cut);
      summary.reasons.push(...done.rejected.slice(0, Math.max(0, REPORTED_REASONS - summary.reasons.length)).map((r) => r.reason));
      summary.files.push({
        name: file.name,
        at: place,
        entries: done.entries,
        accepted: done.accepted,
        ...(cut && { error: cut }),
        ...(resumed && { resumedAfter: resumed }),
        // Given again, it goes on after these.
        ...(stopped && { stoppedAfter: readUpTo }),
      });
      if (storeFull(done.storeFull, files.length - at - 1) || stopped) break;
    } catch (e) {
      // The module kept the entries before the flaw (the message says how many): counted as read.
      summary.files.push({ name: file.name, at: place, entries: feed.entries, accepted: feed.accepted, error: e.message });
      summary.reasons.push(e.message);
      entries += feed.entries;
      summary.accepted += feed.accepted;
      summary.rejected += feed.rejectedTotal;
      if (storeFull(feed.storeFull, files.length - at - 1)) break;
    } finally {
      feed.free();
    }
    bytesDone += file.size;
  }
  // The store's size in the summary is once its blocks are compressed.
  await sealer.settled();
  const seconds = (performance.now() - started) / 1000;
  postMessage({ type: "progress", bytes: totalBytes, totalBytes, entries, rate: entries / Math.max(seconds, 1e-3) });
  if (opened) summary.files.push({ name: opened.name, snapshot: true });
  return { ...summary, entries, seconds, sealedElsewhere: sealer.installed - installedBefore, catalog: svc.catalog(), stats: svc.stats() };
}

/** The store as a saved analysis, its blocks compressed first. */
async function snapshot() {
  await ready();
  await sealer.settled();
  return service.snapshot();
}

/** Drops everything held: the page starts over with an empty store. */
async function startOver() {
  await ready();
  service.free();
  hold(new LogEndpoints(OPTIONS));
  return service.stats();
}

async function query({ endpoint, params, nowMs }) {
  const svc = await ready();
  svc.setNow(nowMs ?? undefined);
  svc.clearCache();
  const started = performance.now();
  const { body, warning } = svc.queryRaw(endpoint, params, KEY);
  const { result } = JSON.parse(body);
  return { rows: result, warning, tookMs: performance.now() - started };
}

onmessage = async ({ data }) => {
  // Answered by the load under way, which ends after the piece it is reading.
  if (data.type === "stop-reading") {
    stopRequested = true;
    return;
  }
  try {
    const answer =
      data.type === "ingest" ? await ingest(data)
      : data.type === "endpoints" ? (await ready()).endpoints()
      : data.type === "snapshot" ? await snapshot()
      : data.type === "start-over" ? await startOver()
      : await query(data);
    postMessage({ type: "done", id: data.id, answer });
  } catch (e) {
    postMessage({ type: "failed", id: data.id, error: { message: e.message, status: e.status, code: e.code, parameter: e.parameter, problem: e.problem } });
  }
};
