// The wasm engine every object of an isolate shares, and the settings the
// worker reads from its environment (README, "Edge worker").
import { initSync, isServiceError, LogEndpoints, unavailable, __wbg_reset_state } from "../../pkg/log_endpoints.js";
import wasmModule from "../../pkg/log_endpoints_bg.wasm";

initSync({ module: wasmModule });

export * from "../../pkg/log_endpoints.js";

// After a trap the wasm instance is replaced, and each object's engine from
// before is gone with it: the generation tells an object to rebuild its own.
let generation = 0;

export function engineGeneration() {
  return generation;
}

function resetEngine() {
  __wbg_reset_state();
  generation++;
}

/**
 * After an error that is not the core's: a trap (the engine aborted) leaves
 * the wasm instance unusable, so it is replaced, and every object rebuilds
 * its own engine; any other error (storage, a request cut off) leaves it as
 * it is. Whether it was a trap.
 */
export function recoverFrom(e) {
  if (!(e instanceof WebAssembly.RuntimeError)) return false;
  resetEngine();
  return true;
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

// The engine each object instance keeps, by object id. workerd evicts an
// object after a while without events (10 s in Miniflare) and constructs it
// again on the next one, without a word to the instance it dropped: that
// instance's engine (a whole store, up to the memory budget) stays in the
// shared wasm memory until the garbage collector finalises it, which on
// workerd came after the new instance had built its own: a full object
// rebuilt from its batches took the isolate's wasm memory from 88 to 172 MB.
// Held weakly: an object that never comes back is the collector's to free.
const engineOfObject = new Map();

/**
 * Frees the engine an earlier instance of object `id` kept, if it is still
 * there (not `holder`'s own). workerd runs one instance of an object at a
 * time, and evicts one only when no event is running in it.
 */
export function releaseEarlierEngine(id, holder) {
  const earlier = engineOfObject.get(id);
  if (earlier && earlier.holder.deref() !== holder) {
    engineOfObject.delete(id);
    const service = earlier.service.deref();
    if (service) release(service, earlier.made);
  }
}

/** Notes that `holder`, an instance of object `id`, keeps `service` (none: it keeps none). */
export function keepEngine(id, holder, service) {
  if (service) engineOfObject.set(id, { holder: new WeakRef(holder), service: new WeakRef(service), made: generation });
  else if (engineOfObject.get(id)?.holder.deref() === holder) engineOfObject.delete(id);
}

/**
 * The settings the environment holds (vars and secrets), read by the core. A
 * setting that does not read is the operator's to fix: the worker answers
 * 503 until then, so that shippers retry instead of dropping batches.
 */
export function settingsFrom(env) {
  try {
    return LogEndpoints.readSettings(env);
  } catch (e) {
    throw unavailable(`the worker's settings cannot be read: ${e.message}`);
  }
}

/** The options of an engine with the settings' keys and clock. */
function optionsOf(settings, limits, blockStorage) {
  return { apiKeys: settings.apiKeys, ingestKeys: settings.ingestKeys, now: settings.fixedNowMs, limits, blockStorage };
}

/**
 * What `make` returns; keys the settings give that cannot be used (a
 * misspelt restriction, an unknown endpoint) are the operator's to fix, as
 * settings that do not read: 503 until then.
 */
function withSettings(make) {
  try {
    return make();
  } catch (e) {
    if (isServiceError(e) && e.code === "invalid_config") throw unavailable(`the worker's settings cannot be used: ${e.message}`);
    throw e;
  }
}

/**
 * A new engine with the settings' keys and clock; `limits` as the object
 * needs them, and `blockStorage` where it keeps sealed text blocks (none: memory).
 */
export function newEngine(settings, limits, blockStorage) {
  return withSettings(() => new LogEndpoints(optionsOf(settings, limits, blockStorage)));
}

/** `newEngine` restored from a snapshot's parts (`LogEndpoints.fromSnapshotParts`). */
export function restoredEngine(parts, bytes, settings, limits, blockStorage) {
  return withSettings(() => LogEndpoints.fromSnapshotParts(parts, bytes, optionsOf(settings, limits, blockStorage)));
}
