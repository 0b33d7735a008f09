// The objects of the deployment, by the names the core gives them: ingest
// partitions (`ingest/{n}`), directory partitions (`directory/{n}`) and
// shards (`{day}/g/{group}`, or `logs` when SHARDING=off).

export function ingestStub(env, name) {
  return env.INGEST.get(env.INGEST.idFromName(name));
}

export function directoryStub(env, name) {
  return env.DIRECTORY.get(env.DIRECTORY.idFromName(name));
}

export function shardStub(env, name) {
  return env.SHARD.get(env.SHARD.idFromName(name));
}

/** The path prefix under which a shard answers a directory with partial states (a split project-day). */
export const PARTIAL_PATH = "/partial";

/** The name of the one shard object when SHARDING=off. */
export const SINGLE_SHARD = "logs";

/** `call` on each item, at most `limit` at once (a wave waits for the one before); the results in order. */
export async function inWaves(items, limit, call) {
  const results = [];
  for (let at = 0; at < items.length; at += limit) {
    results.push(...(await Promise.all(items.slice(at, at + limit).map(call))));
  }
  return results;
}
