// A file of NDJSON read into the module's own memory (`batchBuffer`) in
// batches cut at line ends, the rest of each read carried over to the next:
// what bench/run-wasm.mjs and bench/ingest-threads.mjs ingest through.
import { closeSync, openSync, readSync } from "node:fs";

/**
 * Yields the length of each batch, whose bytes start `svc.batchBuffer(batchBytes)`
 * until the next call into the module: ingest them (`ingestBuffer`) or copy
 * them before going on.
 */
export function* bufferedBatches(svc, file, batchBytes) {
  const fd = openSync(file, "r");
  try {
    let filled = 0;
    for (;;) {
      const read = readSync(fd, svc.batchBuffer(batchBytes), filled, batchBytes - filled, null);
      filled += read;
      if (filled === 0) return;
      // Asked for again after every call into the module, which may have moved it.
      const end = read === 0 ? filled : svc.batchBuffer(batchBytes).lastIndexOf(10, filled - 1) + 1;
      if (end === 0) throw new Error(`${file}: a line longer than ${batchBytes} bytes`);
      yield end;
      svc.batchBuffer(batchBytes).copyWithin(0, end, filled);
      filled -= end;
      if (read === 0 && filled === 0) return;
    }
  } finally {
    closeSync(fd);
  }
}
