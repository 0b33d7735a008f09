// The thread a SealWorker (node.js) starts: its own instance of the module
// compresses the seal jobs it is sent (LogEndpoints.sealBlocks) and sends
// the sealed blocks back on the same port.
import { workerData } from "node:worker_threads";
import { LogEndpoints } from "./node.js";

const { port } = workerData;
port.on("message", (jobs) => {
  try {
    const sealed = LogEndpoints.sealBlocks(jobs);
    port.postMessage({ sealed }, [sealed.buffer]);
  } catch (e) {
    port.postMessage({ error: e.message });
  }
});
