// Node entry: the module is instantiated synchronously on import, so
// `import { LogEndpoints } from "log-endpoints"` is ready to use at once.
import { readFileSync } from "node:fs";
import { MessageChannel, receiveMessageOnPort, Worker } from "node:worker_threads";
import { initSync, LogEndpoints } from "./log_endpoints.js";

initSync({ module: readFileSync(new URL("./log_endpoints_bg.wasm", import.meta.url)) });

export { LogEndpoints, LogFeed } from "./log_endpoints.js";
export const init = async () => {};

/**
 * Compresses a service's full text blocks on a second thread while it
 * ingests (`deferSeals`): about 40% of edge ingest moves off the calling
 * thread. Call `pump()` after each `ingest` (or `LogFeed` push) and await
 * `settled()` before timing or saving; answers are the same meanwhile.
 * `read(stream, batch)` reads a batch on that thread instead (read jobs).
 */
export class SealWorker {
  #service;
  #worker;
  #port;
  #readPort;
  #inFlight = 0;
  #failed = null;
  /** Reads handed to the worker, by id: `{ stream, resolve, reject }`. */
  #reads = new Map();
  #lastRead = 0;
  #closing = false;
  /** The buffer of jobs the worker handed back last, for the next jobs (`takeSealJobs`); none once it has stopped. */
  #spare;

  constructor(service) {
    const { port1, port2 } = new MessageChannel();
    const reads = new MessageChannel();
    this.#service = service;
    this.#port = port1;
    this.#readPort = reads.port1;
    this.#readPort.on("message", (answer) => this.#readBack(answer));
    this.#readPort.unref();
    this.#worker = new Worker(new URL("./seal-worker.js", import.meta.url), {
      workerData: { port: port2, readPort: reads.port2 },
      transferList: [port2, reads.port2],
    });
    // A worker that cannot start or stops: the service compresses its blocks
    // itself again, and the batches it was reading are lost with it.
    const stopped = (error) => {
      this.#loseReads(error);
      this.#fail(error);
    };
    this.#worker.on("error", stopped);
    this.#worker.on("exit", (code) => stopped(new Error(`the seal worker exited (code ${code})`)));
    this.#worker.unref();
    service.deferSeals(true);
  }

  /** Why the worker stopped compressing (null while it works; after `close()`, that it was closed): the service then compresses its blocks itself. */
  get failed() {
    return this.#failed;
  }

  /** Installs the blocks the worker sealed, and hands it the blocks filled since the last call. */
  pump() {
    this.#install();
    if (this.#failed) return;
    const jobs = this.#service.takeSealJobs(this.#spare);
    if (jobs === undefined) return;
    // The spare buffer goes with the jobs if they are in it, and comes back;
    // one too short is dropped, and a longer one kept when it comes.
    this.#spare = undefined;
    this.#port.postMessage(jobs, [jobs.buffer]);
    this.#inFlight += 1;
  }

  /**
   * Reads a batch of `stream` on the worker's thread, as `ingest` reads it
   * here (the service's read job says how), then appends its rows here:
   * resolves to the report `ingest` gives, or rejects with its error. For
   * batches with no text to compress (function rows), whose reading is most
   * of their ingest: alternated with `ingest`, a second core reads every
   * other batch. The store answers as had it read them itself. Once the
   * worker has stopped (`failed`) or is closing, and for an array of
   * entries, batches are read here; a batch the worker was reading when it
   * stopped is lost with it (its read rejects with why).
   */
  read(stream, batch) {
    // What throws here (the stream, the batch) rejects, as the worker's answers do.
    return new Promise((resolve, reject) => {
      // A copy of bytes, made first: the caller may reuse its buffer at once,
      // and a view of the module's memory (`batchBuffer`) is read before a
      // call into the module can move it.
      const copy = batch instanceof Uint8Array ? new Uint8Array(batch) : undefined;
      const text = typeof batch === "string";
      if (this.#failed || this.#closing || !(text || copy)) {
        resolve(this.#service.ingest(stream, copy ?? batch));
        return;
      }
      // The worker owns what it is sent.
      const bytes = copy ?? new TextEncoder().encode(batch);
      const job = this.#service.readJob(stream);
      const id = ++this.#lastRead;
      this.#reads.set(id, { stream, resolve, reject });
      this.#readPort.ref();
      this.#readPort.postMessage({ id, job, batch: bytes }, [job.buffer, bytes.buffer]);
    });
  }

  /** Resolves once every block handed out is sealed and in place, and every batch read is appended. */
  async settled() {
    this.pump();
    while ((this.#inFlight > 0 && !this.#failed) || this.#reads.size > 0) {
      await new Promise((resolve) => setTimeout(resolve, 1));
      // Rows appended meanwhile may fill blocks: those go to the worker too.
      this.pump();
    }
  }

  /** Stops the worker once settled; blocks filled later are compressed as they fill. */
  async close() {
    this.#closing = true;
    await this.settled();
    this.#failed ??= new Error("the seal worker was closed");
    this.#spare = undefined;
    this.#service.deferSeals(false);
    await this.#worker.terminate();
  }

  #install() {
    for (let received = receiveMessageOnPort(this.#port); received; received = receiveMessageOnPort(this.#port)) {
      this.#inFlight -= 1;
      const { sealed, error, spare } = received.message;
      if (spare && !this.#failed && spare.byteLength > (this.#spare?.byteLength ?? 0)) this.#spare = spare;
      try {
        if (error) throw new Error(error);
        this.#service.installSealed(sealed);
      } catch (e) {
        this.#fail(e);
      }
    }
  }

  /** A batch the worker read, appended here; or one it could not read whole, ingested here to refuse it as `ingest` does. */
  #readBack({ id, read, unread }) {
    const pending = this.#reads.get(id);
    if (!pending) return;
    this.#reads.delete(id);
    if (this.#reads.size === 0) this.#readPort.unref();
    try {
      pending.resolve(read ? this.#service.ingestRead(read) : this.#service.ingest(pending.stream, unread));
    } catch (e) {
      pending.reject(e);
    }
  }

  /** Batches the worker was reading when it stopped: each read rejects with why (the worker held the only copy). */
  #loseReads(error) {
    for (const { reject } of this.#reads.values()) reject(error);
    this.#reads.clear();
    this.#readPort.unref();
  }

  #fail(error) {
    if (this.#failed) return;
    this.#failed = error;
    this.#spare = undefined;
    try {
      this.#service.deferSeals(false);
    } catch {
      // The service was freed first: nothing waits for its blocks.
    }
  }
}
