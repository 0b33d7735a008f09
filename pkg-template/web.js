// Browser and other runtimes: call `await init()` once before use (safe to call
// again); it fetches log_endpoints_bg.wasm next to this file unless given a
// URL, a Response, bytes or a WebAssembly.Module.
import initWasm from "./log_endpoints.js";

let ready;
export function init(source) {
  ready ??= initWasm(source === undefined ? undefined : { module_or_path: source });
  return ready.then(() => undefined);
}

export { LogEndpoints, LogFeed } from "./log_endpoints.js";
export { SealWorker } from "./seal-worker-node-only.js";
