// Compares two builds of the package in one Node process: the same data is
// ingested into each, then every query of a plan runs on both, alternately,
// so that the machine's noise falls on both alike. Prints ingest times, and
// per query the medians and their ratio (B ÷ A; below 1: B is faster). Fails
// (exit 1) when the two builds answer a query differently.
//
//   node bench/ab.mjs --a DIR --b DIR [--size N] [--data DIR] [--plan FILE] [--reps N]
//
// --a, --b: package directories (a build's pkg/). For another commit's:
//   git worktree add /tmp/base <commit> && (cd /tmp/base && bash scripts/build.sh)
//   node bench/ab.mjs --a /tmp/base/pkg --b pkg
// --size: the shard data set of N entries per stream that `node bench/bench.mjs`
//   generated (default 1000000; the newest, if the generator changed), or
//   --data: a directory with edge_logs.ndjson and function_edge_logs.ndjson.
// --plan: the queries (default: the shard plan the last bench run wrote; the
//   test command's smoke run writes a one-run plan). Each query first warms up
//   on both builds by the benchmark's rule (plan.mjs, WARM_UP_MS).
import { closeSync, openSync, readSync } from "node:fs";
import { resolve } from "node:path";
import { parseArgs } from "node:util";
import { newestShard, readPlan, warmUp } from "./plan.mjs";

const { values: args } = parseArgs({
  options: {
    a: { type: "string" },
    b: { type: "string" },
    size: { type: "string", default: "1000000" },
    data: { type: "string" },
    plan: { type: "string", default: "target/bench/plan-shard.json" },
    reps: { type: "string", default: "5" },
  },
});
if (!args.a || !args.b) {
  console.error("usage: node bench/ab.mjs --a PKG_DIR --b PKG_DIR [--size N] [--data DIR] [--plan FILE] [--reps N]");
  process.exit(2);
}

const data = args.data ?? newestShard(args.size);
const plan = readPlan(args.plan);
const reps = Number(args.reps);

/** A service of the package in `dir`, holding the data set; with its ingest time. */
async function load(dir) {
  const { LogEndpoints } = await import(resolve(dir, "node.js"));
  const svc = new LogEndpoints({
    apiKeys: ["bench"],
    now: plan.nowUs / 1000,
    limits: { maxStoreBytes: 4 * 2 ** 30 - 1, maxBatchBytes: 64 << 20 },
  });
  let ingestMs = 0;
  for (const stream of ["edge_logs", "function_edge_logs"]) {
    const fd = openSync(`${data}/${stream}.ndjson`, "r");
    const buffer = Buffer.alloc(32 << 20);
    let filled = 0;
    for (;;) {
      const read = readSync(fd, buffer, filled, buffer.length - filled, null);
      filled += read;
      if (filled === 0) break;
      const end = read === 0 ? filled : buffer.lastIndexOf(10, filled - 1) + 1;
      const started = performance.now();
      svc.ingest(stream, buffer.subarray(0, end));
      ingestMs += performance.now() - started;
      buffer.copy(buffer, 0, end, filled);
      filled -= end;
      if (read === 0 && filled === 0) break;
    }
    closeSync(fd);
  }
  const { storeBytes, edgeEntries, functionRows } = svc.stats();
  if (!edgeEntries || !functionRows) throw new Error(`${dir}: ${data} ingested no entries`);
  return { svc, ingestMs, storeBytes };
}

const median = (xs) => [...xs].sort((x, y) => x - y)[xs.length >> 1];
const a = await load(args.a);
const b = await load(args.b);
console.log(`ingest ms: A ${a.ingestMs.toFixed(0)}, B ${b.ingestMs.toFixed(0)}, B ÷ A ${(b.ingestMs / a.ingestMs).toFixed(2)}`);
console.log(`storeBytes: A ${a.storeBytes}, B ${b.storeBytes}, B ÷ A ${(b.storeBytes / a.storeBytes).toFixed(3)}`);
const differ = [];
for (const [name, entry] of Object.entries(plan.queries)) {
  for (const { svc } of [a, b]) {
    await warmUp(plan, () => {
      svc.clearCache();
      svc.queryRaw(entry.endpoint, entry.runs[entry.runs.length - 1], "bench");
    });
  }
  const times = [[], []];
  for (let r = 0; r < reps; r++) {
    for (const run of entry.runs) {
      const bodies = [a, b].map(({ svc }, i) => {
        svc.clearCache();
        const started = performance.now();
        const { body } = svc.queryRaw(entry.endpoint, run, "bench");
        times[i].push(performance.now() - started);
        return body;
      });
      if (r === 0 && bodies[0] !== bodies[1]) differ.push(`${name} ${JSON.stringify(run)}`);
    }
  }
  const [ma, mb] = times.map(median);
  console.log(`${name.padEnd(40)} A ${ma.toFixed(4)} ms, B ${mb.toFixed(4)} ms, B ÷ A ${(mb / ma).toFixed(2)}`);
}
if (differ.length) {
  console.error(`A and B answer differently:\n${differ.join("\n")}`);
  process.exit(1);
}
