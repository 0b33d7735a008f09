// Miniflare options for running www/worker.js on workerd, shared by the local
// dev server (www/dev.mjs) and the end-to-end tests. Mirrors wrangler.jsonc.
import { fileURLToPath } from "node:url";
import path from "node:path";

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

/** @param {{ persistDir?: string, bindings?: Record<string, string>, port?: number }} options */
export function workerOptions({ persistDir, bindings = {}, port } = {}) {
  return {
    modules: [
      { type: "ESModule", path: path.join(ROOT, "www/worker.js") },
      { type: "ESModule", path: path.join(ROOT, "pkg/log_endpoints.js") },
      { type: "CompiledWasm", path: path.join(ROOT, "pkg/log_endpoints_bg.wasm") },
    ],
    modulesRoot: ROOT,
    compatibilityDate: "2026-07-30",
    durableObjects: {
      LOG_STORE: { className: "LogStore", useSQLite: true },
      DIRECTORY: { className: "Directory", useSQLite: true },
    },
    durableObjectsPersist: persistDir ?? false,
    bindings,
    ...(port === undefined ? {} : { host: "127.0.0.1", port }),
  };
}
