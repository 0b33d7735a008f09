// Node entry: the module is instantiated synchronously on import, so
// `import { LogEndpoints } from "log-endpoints"` is ready to use at once.
import { readFileSync } from "node:fs";
import { initSync } from "./log_endpoints.js";

initSync({ module: readFileSync(new URL("./log_endpoints_bg.wasm", import.meta.url)) });

export { LogEndpoints, LogFeed } from "./log_endpoints.js";
export const init = async () => {};
