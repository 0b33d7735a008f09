import { openSync, readSync, closeSync } from "node:fs";
import { LogEndpoints } from "log-endpoints";
const NOW_US = Date.parse("2026-11-20T12:00:00Z") * 1000;
const svc = new LogEndpoints({ apiKeys: ["bench"], now: NOW_US / 1000, limits: { maxStoreBytes: 4 * 2 ** 30 - 1, maxBatchBytes: 64 << 20 } });
const fd = openSync(process.argv[2], "r"); const buffer = Buffer.alloc(32 << 20); let filled = 0;
for (;;) { const read = readSync(fd, buffer, filled, buffer.length - filled, null); filled += read; const eof = read === 0; if (filled === 0) break;
  const end = eof ? filled : buffer.lastIndexOf(10, filled - 1) + 1; svc.ingest("edge_logs", buffer.subarray(0, end)); buffer.copy(buffer, 0, end, filled); filled -= end; if (eof && filled === 0) break; }
closeSync(fd);
const { Session } = await import("node:inspector/promises");
const session = new Session(); session.connect();
await session.post("Profiler.enable"); await session.post("Profiler.setSamplingInterval", { interval: 50 }); await session.post("Profiler.start");
const t = performance.now();
for (let i = 0; i < 3000; i++) { svc.clearCache(); svc.queryRaw("usage.api-counts", { project: process.argv[3], interval: process.argv[4] }, "bench"); }
console.log("ms/query", (performance.now() - t) / 3000);
const { profile } = await session.post("Profiler.stop");
const self = new Map(); const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const dt = profile.timeDeltas; const counts = new Map();
profile.samples.forEach((id, i) => counts.set(id, (counts.get(id) ?? 0) + (dt[i] ?? 0)));
for (const [id, us] of counts) { const n = byId.get(id); const k = n.callFrame.functionName || n.callFrame.url; self.set(k, (self.get(k) ?? 0) + us); }
const total = [...self.values()].reduce((a, b) => a + b, 0);
for (const [k, us] of [...self].sort((a, b) => b[1] - a[1]).slice(0, 25)) console.log((100 * us / total).toFixed(1).padStart(5), k.slice(0, 120));
