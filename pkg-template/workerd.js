// Cloudflare Workers / workerd (and bundlers using the "workerd" or "worker"
// condition): the .wasm import is a compiled WebAssembly.Module, instantiated
// synchronously, so the module is ready on import.
import wasmModule from "./log_endpoints_bg.wasm";
import { initSync } from "./log_endpoints.js";

initSync({ module: wasmModule });

export { LogEndpoints, LogFeed } from "./log_endpoints.js";
export { SealWorker } from "./seal-worker-node-only.js";
export const init = async () => {};
