// Remakes the from_snapshot fuzz seeds (fuzz/corpus/from_snapshot/) with the
// built package, after a snapshot version change: an empty store, one entry of
// each stream, small mixed stores with alike refs, and a project whose many
// distinct paths give it a wide URL filter.
//
//   bash scripts/build.sh && node scripts/snapshot-seeds.mjs
import { writeFileSync, readdirSync, rmSync } from "node:fs";
import { createHash } from "node:crypto";
import { LogEndpoints } from "log-endpoints";
import { generate, ndjson, tenants } from "./generate-logs.mjs";
const dir = new URL("../fuzz/corpus/from_snapshot", import.meta.url).pathname;
for (const f of readdirSync(dir)) rmSync(`${dir}/${f}`);
const END_MS = Date.parse("2026-11-20T12:00:00Z");
const enc = (s) => new TextEncoder().encode(s);
const make = (fill) => { const svc = new LogEndpoints({ apiKeys: ["k"], now: END_MS }); fill(svc); const bytes = svc.snapshot(); writeFileSync(`${dir}/${createHash("sha1").update(bytes).digest("hex")}`, bytes); return bytes.length; };
const sizes = [];
sizes.push(make(() => {}));
sizes.push(make((s) => s.ingest("edge_logs", enc(JSON.stringify({ id: "a", timestamp: END_MS * 1000, project: "p", event_message: "GET", metadata: [{ request: [{ url: "https://p.supabase.co/rest/v1/t", path: "/rest/v1/t" }] }] })))));
sizes.push(make((s) => s.ingest("function_edge_logs", enc(JSON.stringify({ id: "f", timestamp: END_MS * 1000, metadata: [{ project_ref: "p", function_id: "fn", execution_time_ms: 12.5, response: [{ status_code: 200 }] }] })))));
sizes.push(make((s) => { s.ingest("edge_logs", enc(ndjson(generate({ stream: "edge_logs", count: 20, endMs: END_MS, seed: 1 })))); s.ingest("function_edge_logs", enc(ndjson(generate({ stream: "function_edge_logs", count: 20, endMs: END_MS, seed: 2 }))));}));
const tenancy = tenants(50, undefined, { refs: "alike" });
sizes.push(make((s) => { for (let seed = 1; seed < 3; seed++) for (const stream of ["edge_logs", "function_edge_logs"]) s.ingest(stream, enc(ndjson(generate({ stream, count: 200, endMs: END_MS, spanMs: 86400e3, seed, tenancy })))); }));
// One project with many distinct paths over three batches: its wide URL filter is built and stored.
sizes.push(make((s) => { let n = 0; for (let b = 0; b < 4; b++) s.ingest("edge_logs", enc(Array.from({ length: 60 }, () => { n++; const w = createHash("md5").update(String(n)).digest("hex").slice(0, 12); return JSON.stringify({ id: `e${n}`, timestamp: END_MS * 1000 - n, project: "tenant-1", event_message: "GET", metadata: [{ request: [{ url: n % 7 ? `https://tenant-1.supabase.co/storage/v1/object/${w}` : `/rest/v1/${w}`, path: `/storage/v1/object/${w}` }] }] }); }).join("\n"))); }));
console.log(sizes);
