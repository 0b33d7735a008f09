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
 */
export class SealWorker {
  #service;
  #worker;
  #port;
  #inFlight = 0;
  #failed = null;

  constructor(service) {
    const { port1, port2 } = new MessageChannel();
    this.#service = service;
    this.#port = port1;
    this.#worker = new Worker(new URL("./seal-worker.js", import.meta.url), { workerData: { port: port2 }, transferList: [port2] });
    // A worker that cannot start or stops: the service compresses its blocks itself again.
    this.#worker.on("error", (e) => this.#fail(e));
    this.#worker.on("exit", (code) => this.#fail(new Error(`the seal worker exited (code ${code})`)));
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
    const jobs = this.#service.takeSealJobs();
    if (jobs === undefined) return;
    this.#port.postMessage(jobs, [jobs.buffer]);
    this.#inFlight += 1;
  }

  /** Resolves once every block handed out is sealed and in place. */
  async settled() {
    this.pump();
    while (this.#inFlight > 0 && !this.#failed) {
      await new Promise((resolve) => setTimeout(resolve, 1));
      this.#install();
    }
  }

  /** Stops the worker once settled; blocks filled later are compressed as they fill. */
  async close() {
    await this.settled();
    this.#failed ??= new Error("the seal worker was closed");
    this.#service.deferSeals(false);
    await this.#worker.terminate();
  }

  #install() {
    for (let received = receiveMessageOnPort(this.#port); received; received = receiveMessageOnPort(this.#port)) {
      this.#inFlight -= 1;
      const { sealed, error } = received.message;
      try {
        if (error) throw new Error(error);
        this.#service.installSealed(sealed);
      } catch (e) {
        this.#fail(e);
      }
    }
  }

  #fail(error) {
    if (this.#failed) return;
    this.#failed = error;
    try {
      this.#service.deferSeals(false);
    } catch {
      // The service was freed first: nothing waits for its blocks.
    }
  }
}
