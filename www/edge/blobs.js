// Byte strings kept in SQLite in parts: Durable Object SQLite values are
// limited to 2 MB, so a batch or a snapshot is written in 1 MiB parts and
// read back in parts or joined.

const PART_BYTES = 1024 * 1024;

/** Writes `body` in parts of at most PART_BYTES: `insert(part, bytes)` for each. */
export function writeParts(body, insert) {
  for (let part = 0, at = 0; at < body.byteLength; part++, at += PART_BYTES) insert(part, body.slice(at, at + PART_BYTES).buffer);
}

/** The parts a query selects (`SELECT body …` in part order), as Uint8Arrays holding `bytes` in all. */
export function partsOf(sql, query, bindings, bytes) {
  const parts = sql.exec(query, ...bindings).toArray().map((part) => new Uint8Array(part.body));
  const held = parts.reduce((sum, part) => sum + part.byteLength, 0);
  if (held !== bytes) throw new Error(`stored parts hold ${held} bytes, not ${bytes}`);
  return parts;
}

/** The parts a query selects, joined: `bytes` long. */
export function readParts(sql, query, bindings, bytes) {
  const body = new Uint8Array(bytes);
  let at = 0;
  for (const part of partsOf(sql, query, bindings, bytes)) {
    body.set(part, at);
    at += part.byteLength;
  }
  return body;
}
