// Miniflare options for running the edge worker on workerd, shared by the
// local dev server (www/dev.mjs), the end-to-end tests and the benchmarks.
// Mirrors wrangler.jsonc.
import { fileURLToPath } from "node:url";
import path from "node:path";
import { LogEndpoints } from "log-endpoints";

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

/** The worker's modules: its entry first, then the edge/ files and the wasm package. */
export function workerModules(entry = "www/worker.js") {
  return [
    { type: "ESModule", path: path.join(ROOT, entry) },
    ...["front", "ingest", "directory", "shard", "http", "engine", "stubs", "seen", "blobs"].map((name) => ({ type: "ESModule", path: path.join(ROOT, `www/edge/${name}.js`) })),
    { type: "ESModule", path: path.join(ROOT, "pkg/log_endpoints.js") },
    { type: "CompiledWasm", path: path.join(ROOT, "pkg/log_endpoints_bg.wasm") },
  ];
}

/** @param {{ persistDir?: string, bindings?: Record<string, string>, port?: number, host?: string, entry?: string }} options */
export function workerOptions({ persistDir, bindings = {}, port, host = "127.0.0.1", entry } = {}) {
  return {
    modules: workerModules(entry),
    modulesRoot: ROOT,
    compatibilityDate: "2026-07-30",
    durableObjects: {
      INGEST: { className: "IngestObject", useSQLite: true },
      DIRECTORY: { className: "DirectoryObject", useSQLite: true },
      SHARD: { className: "ShardObject", useSQLite: true },
    },
    durableObjectsPersist: persistDir ?? false,
    bindings,
    ...(port === undefined ? {} : { host, port }),
  };
}

/** An ingest partition's `/status`; one that does not answer it is an error, not "nothing pending". */
async function statusOf(namespace, name) {
  const res = await namespace.get(namespace.idFromName(name)).fetch("https://ingest.internal/status");
  const status = res.ok ? await res.json() : null;
  if (typeof status?.pendingBatches !== "number" || typeof status?.outboxDeliveries !== "number") {
    throw new Error(`ingest partition ${name} answered /status with ${res.status}: ${status ? JSON.stringify(status) : await res.text()}`);
  }
  return status;
}

/**
 * Waits until every ingest partition has distributed what it kept, its
 * outbox too (their `/status`), polling; fails with what is still pending after `timeoutMs`.
 */
export async function distributed(mf, { timeoutMs = 20_000 } = {}) {
  const namespace = await mf.getDurableObjectNamespace("INGEST");
  const started = Date.now();
  for (;;) {
    const statuses = await Promise.all(LogEndpoints.ingestNames().map(async (name) => [name, await statusOf(namespace, name)]));
    const pending = statuses.filter(([, s]) => s.pendingBatches > 0 || s.outboxDeliveries > 0);
    if (pending.length === 0) return statuses;
    if (Date.now() - started > timeoutMs) {
      throw new Error(`batches still not distributed after ${timeoutMs} ms: ${JSON.stringify(Object.fromEntries(pending))}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
