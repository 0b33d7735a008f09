// Tries DuckDB-wasm (the Node blocking build) on an NDJSON file with read_json;
// prints its load time on success. bench.mjs runs it with a timeout.
import { createRequire } from "node:module";
import path from "node:path";

const require = createRequire(import.meta.url);
const duckdb = require("@duckdb/duckdb-wasm/dist/duckdb-node-blocking.cjs");
const dist = path.dirname(require.resolve("@duckdb/duckdb-wasm/dist/duckdb-node-blocking.cjs"));
const bundles = {
  mvp: { mainModule: path.join(dist, "duckdb-mvp.wasm"), mainWorker: path.join(dist, "duckdb-node-mvp.worker.cjs") },
  eh: { mainModule: path.join(dist, "duckdb-eh.wasm"), mainWorker: path.join(dist, "duckdb-node-eh.worker.cjs") },
};
const db = await duckdb.createDuckDB(bundles, new duckdb.VoidLogger(), duckdb.NODE_RUNTIME);
await db.instantiate(() => {});
const connection = db.connect();
const t0 = performance.now();
connection.query(`CREATE TABLE edge AS SELECT * FROM read_json('${process.argv[2]}', format = 'newline_delimited')`);
console.log(`read_json loaded in ${(performance.now() - t0).toFixed(0)} ms`);
