import { openSync, readSync, closeSync } from "node:fs";
import { LogEndpoints } from "log-endpoints";
const NOW_US = Date.parse("2026-11-20T12:00:00Z") * 1000;
const svc = new LogEndpoints({ apiKeys: ["bench"], now: NOW_US / 1000, limits: { maxStoreBytes: 4 * 2 ** 30 - 1, maxBatchBytes: 64 << 20 } });
const fd = openSync(process.argv[2], "r"); const buffer = Buffer.alloc(32 << 20); let filled = 0;
for (;;) { const read = readSync(fd, buffer, filled, buffer.length - filled, null); filled += read; const eof = read === 0; if (filled === 0) break;
  const end = eof ? filled : buffer.lastIndexOf(10, filled - 1) + 1; svc.ingest("edge_logs", buffer.subarray(0, end)); buffer.copy(buffer, 0, end, filled); filled -= end; if (eof && filled === 0) break; }
closeSync(fd);
const p = "tenant-1";
const patterns = [p, `${p}\\.supabase\\.co`, `^https://${p}\\.`, `${p}\\.supabase\\.co/(rest|auth|storage|realtime)`];
for (const interval of ["daily", "minutely"]) {
  const runs = Array.from({ length: 10 }, (_, i) => patterns[(2 * i) % 4]);
  svc.clearCache(); svc.queryRaw("usage.api-counts", { project: runs[9], interval }, "bench");
  const ms = runs.map((pattern) => { svc.clearCache(); const t = performance.now(); svc.queryRaw("usage.api-counts", { project: pattern, interval }, "bench"); return performance.now() - t; });
  console.log(interval, ms.map((x) => x.toFixed(2)).join(" "), "median", [...ms].sort((a, b) => a - b)[5].toFixed(3));
}
