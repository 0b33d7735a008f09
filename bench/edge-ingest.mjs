// The edge deployment's data path, measured the way a shipper uses it: the
// main job (scripts/main.sh's www/dev.mjs, on workerd) started fresh, then
// mixed NDJSON batches of 2,000 Zipf-sized projects posted one after another
// over one keep-alive connection (Node's fetch), from a second process (this
// one). For each batch: the acknowledgement's latency, and how long after it
// the batch is queryable (a probe entry of the batch's own project, in the
// shard its round delivers last, is polled for with logs.all on a second
// connection). End to end: the bytes sent over
// the time from the first send to the last batch queryable.
//
//   node bench/edge-ingest.mjs [--mib 500] [--batch-mib 6] [--sharding on|off|both]
//
// Prints a JSON summary and writes bench/edge-ingest.json and the "Edge
// ingest" section of bench/results.md. Targets (issue 22): at least 20 MiB/s,
// ack p50 at most 300 ms, every batch queryable within 5 s of its ack.
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import { LogEndpoints } from "log-endpoints";
import { generate, tenants } from "../scripts/generate-logs.mjs";
import { EDGE_INGEST, writeSection } from "./results-sections.mjs";

const ROOT = path.resolve(path.dirname(new URL(import.meta.url).pathname), "..");
const { values } = parseArgs({
  options: {
    mib: { type: "string", default: "500" },
    "batch-mib": { type: "string", default: "6" },
    sharding: { type: "string", default: "both" },
    port: { type: "string", default: "8797" },
  },
});
const TOTAL_MIB = Number(values.mib);
const BATCH_MIB = Number(values["batch-mib"]);
const NOW = Date.parse("2026-11-20T12:00:00Z");
const QUERY_KEY = "bench-query";
const INGEST_KEY = "bench-ingest";
const FRESHNESS_TIMEOUT_MS = 60_000;

const percentile = (xs, p) => {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
};

/**
 * A probe project for batch `b` on `day` whose shard is its day's last group
 * shard (`{day}/g/15`): a round sends its deliveries in shard-name order, six
 * at a time, so the probe's shard is among the last to take the batch, and
 * the batch is queryable, all of it, once the probe is.
 */
function lastDeliveredProbe(b, day) {
  let last;
  for (let k = 0; k < 256; k++) {
    const name = `probe-${b}-${k}`;
    const shard = LogEndpoints.shardName(name, day);
    if (!last || shard > last.shard) last = { name, shard };
  }
  return last.name;
}

/** The batches: in time order over two days, each with one probe entry of its own project (`lastDeliveredProbe`). */
function batches() {
  const tenancy = tenants(2000);
  const perBatch = Math.round(BATCH_MIB * 1700);
  const count = Math.ceil(TOTAL_MIB / BATCH_MIB);
  const spanMs = 2 * 24 * 3600e3;
  const out = [];
  const entries = generate({ stream: "edge_logs", count: perBatch * count, endMs: NOW - 60e3, spanMs, tenancy, seed: 22 });
  for (let b = 0; b < count; b++) {
    let text = "";
    let newest = 0;
    for (let i = 0; i < perBatch; i++) {
      const { value: entry } = entries.next();
      newest = Math.max(newest, entry.timestamp);
      text += JSON.stringify(entry) + "\n";
    }
    const probe = lastDeliveredProbe(b, new Date(newest / 1000).toISOString().slice(0, 10));
    text += JSON.stringify({ id: `${probe}-entry`, timestamp: newest, project: probe, event_message: "probe" }) + "\n";
    out.push({ text, probe, bytes: Buffer.byteLength(text) });
  }
  return out;
}

/** Starts the main job (www/dev.mjs) on a fresh state folder; resolves once it listens. */
function startMainJob(sharding, stateDir) {
  const env = { ...process.env, API_KEYS: QUERY_KEY, INGEST_KEYS: INGEST_KEY, FIXED_NOW_MS: String(NOW) };
  if (sharding === "off") {
    env.SHARDING = "off";
    // One object holds everything here: a store budget for all of it (a
    // Workers isolate has 128 MB; this compares the data path, not the budget).
    env.MAX_STORE_BYTES = String(3 * 2 ** 30);
  }
  const child = spawn(process.execPath, [path.join(ROOT, "www/dev.mjs"), "--fresh", "--no-sample", "--port", values.port, "--state", stateDir], { env, stdio: ["ignore", "pipe", "pipe"] });
  let log = "";
  return new Promise((resolve, reject) => {
    const onData = (chunk) => {
      log += chunk;
      const listening = /listening on (http:\/\/\S+)/.exec(log);
      if (listening) resolve({ child, base: listening[1], log: () => log });
    };
    child.stdout.on("data", onData);
    child.stderr.on("data", (chunk) => (log += chunk));
    child.on("exit", (code) => reject(new Error(`the main job exited (${code}):\n${log}`)));
  });
}

async function run(sharding, data) {
  const stateDir = mkdtempSync(path.join(tmpdir(), `edge-ingest-${sharding}-`));
  const job = await startMainJob(sharding, stateDir);
  const acks = [];
  const freshness = [];
  const pending = new Map(); // probe -> ack time
  let polling = true;
  // The poller: a second connection, asking for each acknowledged probe until it is there.
  const poller = (async () => {
    while (polling || pending.size > 0) {
      for (const [probe, ackedAt] of [...pending]) {
        const res = await fetch(`${job.base}/api/endpoints/query/logs.all?project=${probe}&project_tier=PAYG`, { headers: { "X-API-KEY": QUERY_KEY } });
        const body = await res.json();
        if (body.result?.length > 0) {
          freshness.push(performance.now() - ackedAt);
          pending.delete(probe);
        } else if (performance.now() - ackedAt > FRESHNESS_TIMEOUT_MS) {
          throw new Error(`${probe} not queryable ${FRESHNESS_TIMEOUT_MS} ms after its ack`);
        }
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  })();
  const started = performance.now();
  let bytes = 0;
  try {
    for (const { text, probe, bytes: size } of data) {
      const t0 = performance.now();
      const res = await fetch(`${job.base}/api/logs/edge_logs`, { method: "POST", body: text, headers: { "X-API-KEY": INGEST_KEY, "Content-Type": "application/x-ndjson" } });
      const answer = await res.text();
      if (res.status !== 200) throw new Error(`batch ${probe}: ${res.status} ${answer.slice(0, 300)}`);
      const ackedAt = performance.now();
      acks.push(ackedAt - t0);
      pending.set(probe, ackedAt);
      bytes += size;
    }
    polling = false;
    await poller;
  } finally {
    polling = false;
    job.child.kill("SIGTERM");
    await new Promise((resolve) => job.child.once("exit", resolve));
    rmSync(stateDir, { recursive: true, force: true });
  }
  const seconds = (performance.now() - started) / 1000;
  return {
    sharding,
    batches: data.length,
    mib: bytes / 2 ** 20,
    seconds,
    mibPerSecond: bytes / 2 ** 20 / seconds,
    ackMs: { p50: percentile(acks, 50), p90: percentile(acks, 90), p99: percentile(acks, 99), max: Math.max(...acks) },
    queryableAfterAckMs: { p50: percentile(freshness, 50), p90: percentile(freshness, 90), max: Math.max(...freshness) },
  };
}

const data = batches();
console.error(`[edge-ingest] ${data.length} batches of about ${BATCH_MIB} MiB (${(data.reduce((s, b) => s + b.bytes, 0) / 2 ** 20).toFixed(0)} MiB)`);
const modes = values.sharding === "both" ? ["on", "off"] : [values.sharding];
const results = [];
for (const mode of modes) {
  const result = await run(mode, data);
  console.error(`[edge-ingest] sharding ${mode}: ${result.mibPerSecond.toFixed(1)} MiB/s, ack p50 ${result.ackMs.p50.toFixed(0)} ms, queryable after ack p50 ${result.queryableAfterAckMs.p50.toFixed(0)} ms, max ${result.queryableAfterAckMs.max.toFixed(0)} ms`);
  results.push(result);
}
const targets = (r) => ({
  "at least 20 MiB/s end to end": r.mibPerSecond >= 20,
  "ack p50 at most 300 ms": r.ackMs.p50 <= 300,
  "every batch queryable within 5 s of its ack": r.queryableAfterAckMs.max <= 5000,
});
const summary = { command: `node bench/edge-ingest.mjs --mib ${TOTAL_MIB} --batch-mib ${BATCH_MIB} --sharding ${values.sharding}`, results: results.map((r) => ({ ...r, targets: targets(r) })) };
console.log(JSON.stringify(summary, null, 2));
writeFileSync(path.join(ROOT, "bench/edge-ingest.json"), JSON.stringify(summary, null, 2) + "\n");

// The "Edge ingest" section of bench/results.md.
const fmt = (x, d = 0) => x.toFixed(d);
const lines = [
  EDGE_INGEST,
  "",
  `Command: \`${summary.command}\` — the main job started fresh (workerd via Miniflare), ${results[0].batches} mixed NDJSON batches of 2,000 Zipf-sized projects posted one after another over one keep-alive connection (Node's fetch), from a second process; a batch is queryable when logs.all finds its probe entry, in the shard its round delivers last.`,
  "",
  "| deployment | MiB | MiB/s end to end | ack p50 / p90 / max (ms) | queryable after ack p50 / p90 / max (ms) | targets |",
  "|---|---:|---:|---|---|---|",
  ...summary.results.map((r) => `| ${r.sharding === "off" ? "one object (`SHARDING=off`)" : "sharded"} | ${fmt(r.mib)} | ${fmt(r.mibPerSecond, 1)} | ${fmt(r.ackMs.p50)} / ${fmt(r.ackMs.p90)} / ${fmt(r.ackMs.max)} | ${fmt(r.queryableAfterAckMs.p50)} / ${fmt(r.queryableAfterAckMs.p90)} / ${fmt(r.queryableAfterAckMs.max)} | ${Object.entries(r.targets).map(([t, ok]) => `${ok ? "met" : "**missed**"}: ${t}`).join("; ")} |`),
  "",
];
writeSection(path.join(ROOT, "bench/results.md"), lines);
