// The wasm engine every object of an isolate shares, and the settings the
// worker reads from its environment (README, "Edge worker").
import { initSync, LogEndpoints, unavailable, __wbg_reset_state } from "../../pkg/log_endpoints.js";
import wasmModule from "../../pkg/log_endpoints_bg.wasm";

initSync({ module: wasmModule });

export * from "../../pkg/log_endpoints.js";

// After a trap the wasm instance is replaced, and each object's engine from
// before is gone with it: the generation tells an object to rebuild its own.
let generation = 0;

export function engineGeneration() {
  return generation;
}

export function resetEngine() {
  __wbg_reset_state();
  generation++;
}

/**
 * Throws (503, retry) if the engine was replaced since generation `made`:
 * core objects held across an await must not be used after a trap elsewhere.
 */
export function checkEngine(made) {
  if (made !== generation) throw unavailable("the query engine restarted during the request");
}

/**
 * Frees a core object made in engine generation `made`, unless the engine
 * was replaced since (a trap in any object of the isolate replaces it, and
 * the old object's memory is gone with it).
 */
export function release(object, made) {
  if (made === generation) object.free();
}

const DEFAULT_MAX_BODY_BYTES = 8 * 1024 * 1024;
// A Workers isolate has 128 MB for the wasm memory, the JS heap and a batch in flight.
const DEFAULT_MAX_STORE_BYTES = 64 * 1024 * 1024;

/** Settings from the environment (vars and secrets). */
export function settingsFrom(env) {
  const list = (value) =>
    String(value ?? "")
      .split(",")
      .map((s) => s.trim())
      .filter(Boolean);
  // A JSON array (plain keys and `{ key, endpoints?, projects? }`) or a comma list.
  const keys = (value) => (String(value ?? "").trim().startsWith("[") ? JSON.parse(value) : list(value));
  const number = (value) => (value === undefined || value === "" ? undefined : Number(value));
  return {
    apiKeys: keys(env.API_KEYS),
    ingestKeys: list(env.INGEST_KEYS),
    fixedNowMs: number(env.FIXED_NOW_MS),
    maxBodyBytes: number(env.MAX_BODY_BYTES) ?? DEFAULT_MAX_BODY_BYTES,
    maxStoreBytes: number(env.MAX_STORE_BYTES) ?? DEFAULT_MAX_STORE_BYTES,
    sharding: env.SHARDING !== "off",
  };
}

/** A new engine with the settings' keys and clock; `limits` as the object needs them. */
export function newEngine(settings, limits) {
  return new LogEndpoints({ apiKeys: settings.apiKeys, ingestKeys: settings.ingestKeys, now: settings.fixedNowMs, limits });
}
