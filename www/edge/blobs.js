// Byte strings kept in SQLite in parts: Durable Object SQLite values are
// limited to 2 MB, so a batch is written in parts of the core's size (1 MiB,
// as the engine cuts a snapshot's: snapshotParts) and read back in parts or joined.
import { LogEndpoints, unreadableStored } from "./engine.js";

const { partBytes: PART_BYTES } = LogEndpoints.constants();

/** Writes `body` in parts of at most PART_BYTES: `insert(part, bytes)` for each. */
export function writeParts(body, insert) {
  for (let part = 0, at = 0; at < body.byteLength; part++, at += PART_BYTES) insert(part, body.slice(at, at + PART_BYTES).buffer);
}

/**
 * The parts a query selects (`SELECT body …` in part order), as Uint8Arrays,
 * each read from the cursor as it is asked for: a consumer that takes one at a
 * time (`LogEndpoints.fromSnapshotParts`) never has them all in memory.
 */
export function* partsOf(sql, query, bindings) {
  for (const row of sql.exec(query, ...bindings)) yield new Uint8Array(row.body);
}

/** The parts a query selects, joined: `bytes` long. Parts that do not add up throw the core's 400 `unreadable_batch`. */
export function readParts(sql, query, bindings, bytes) {
  const body = new Uint8Array(bytes);
  let at = 0;
  for (const part of partsOf(sql, query, bindings)) {
    if (at + part.byteLength > bytes) throw unreadableStored(`more than ${bytes} bytes`);
    body.set(part, at);
    at += part.byteLength;
  }
  if (at !== bytes) throw unreadableStored(`${at} bytes, not ${bytes}`);
  return body;
}
