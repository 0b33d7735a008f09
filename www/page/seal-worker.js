// The ingest worker's helper thread: its own instance of the module compresses
// the full text blocks the ingest worker hands it (LogEndpoints.sealBlocks)
// and sends them back sealed, so reading goes on meanwhile.
import { init, LogEndpoints } from "./pkg/web.js";

const ready = init();
onmessage = async ({ data: jobs }) => {
  try {
    await ready;
    const sealed = LogEndpoints.sealBlocks(jobs);
    postMessage({ sealed }, [sealed.buffer]);
  } catch (e) {
    postMessage({ error: e.message });
  }
};
