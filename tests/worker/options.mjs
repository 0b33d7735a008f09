// Miniflare options for the test worker (tests/worker/test-worker.js): the
// product's options with the test wrapper as the entry.
import { workerOptions } from "../../www/miniflare-options.mjs";

export { distributed } from "../../www/miniflare-options.mjs";

export function testWorkerOptions(options = {}) {
  return workerOptions({ ...options, entry: "tests/worker/test-worker.js" });
}

