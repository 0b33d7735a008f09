// Miniflare options for the test worker (tests/worker/test-worker.js): the
// product's options with the test wrapper as the entry.
import { workerOptions } from "../../www/miniflare-options.mjs";

export function testWorkerOptions(options = {}) {
  return workerOptions({ ...options, entry: "tests/worker/test-worker.js" });
}

/**
 * Waits until every ingest partition has distributed what it kept (their
 * `/status`), polling; fails with what is still pending after `timeoutMs`.
 */
export async function distributed(mf, { timeoutMs = 20_000 } = {}) {
  const { LogEndpoints } = await import("log-endpoints");
  const namespace = await mf.getDurableObjectNamespace("INGEST");
  const started = Date.now();
  for (;;) {
    const statuses = await Promise.all(
      LogEndpoints.ingestNames().map(async (name) => [name, await (await namespace.get(namespace.idFromName(name)).fetch("https://ingest.internal/status")).json()]),
    );
    const pending = statuses.filter(([, s]) => s.pendingBatches > 0);
    if (pending.length === 0) return statuses;
    if (Date.now() - started > timeoutMs) {
      throw new Error(`batches still not distributed after ${timeoutMs} ms: ${JSON.stringify(Object.fromEntries(pending))}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
