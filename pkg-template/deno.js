// Deno: the module is instantiated synchronously on import (needs read access
// to the package folder, e.g. `deno run --allow-read`).
import { initSync } from "./log_endpoints.js";

initSync({ module: Deno.readFileSync(new URL("./log_endpoints_bg.wasm", import.meta.url)) });

export { LogEndpoints, LogFeed } from "./log_endpoints.js";
export { SealWorker } from "./seal-worker-node-only.js";
export const init = async () => {};
