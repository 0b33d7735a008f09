// The thread a SealWorker (node.js) starts: its own instance of the module
// compresses the seal jobs it is sent (LogEndpoints.sealBlocks) and sends
// the sealed blocks back on the same port, with the jobs' buffer for the
// next jobs; on a second port it reads the batches it is sent
// (LogEndpoints.readBatch, with the service's read job), sending back what
// it read, or the batch itself when it cannot be read whole, for the
// service to refuse as its own ingest does.
import { workerData } from "node:worker_threads";
import { LogEndpoints } from "./node.js";

const { port, readPort } = workerData;
port.on("message", (jobs) => {
  try {
    const sealed = LogEndpoints.sealBlocks(jobs);
    // The jobs' buffer goes back, to carry the next jobs.
    port.postMessage({ sealed, spare: jobs.buffer }, [sealed.buffer, jobs.buffer]);
  } catch (e) {
    port.postMessage({ error: e.message });
  }
});
readPort.on("message", ({ id, job, batch }) => {
  try {
    const read = LogEndpoints.readBatch(job, batch);
    readPort.postMessage({ id, read }, [read.buffer]);
  } catch {
    readPort.postMessage({ id, unread: batch }, [batch.buffer]);
  }
});
