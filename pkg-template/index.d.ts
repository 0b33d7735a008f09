export { LogEndpoints } from "./log_endpoints.js";

/** Instantiates the wasm module; a no-op in Node, where import does it. Safe to call twice. */
export function init(source?: string | URL | Response | BufferSource | WebAssembly.Module): Promise<void>;

/** What a failed call throws. */
export interface LogEndpointsError extends Error {
  /** HTTP status: 400, 401, 403, 404, 413. */
  status: number;
  /** Stable machine-readable code, e.g. "missing_parameter". */
  code: string;
}
