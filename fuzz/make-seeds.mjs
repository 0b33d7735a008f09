// Writes the committed seed corpus of each fuzz target (fuzz/corpus/<target>/)
// from the test fixtures and a few hand-picked hostile inputs. Re-run after the
// fixtures change: node fuzz/make-seeds.mjs
import { mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { createHash } from "node:crypto";
import { LogEndpoints } from "log-endpoints"; // the built package (bash scripts/build.sh)

const root = new URL("./corpus/", import.meta.url);
const write = (target, bytes, name) => {
  const dir = new URL(`${target}/`, root);
  mkdirSync(dir, { recursive: true });
  const data = typeof bytes === "string" ? Buffer.from(bytes) : Buffer.from(bytes);
  writeFileSync(new URL(name ?? createHash("sha1").update(data).digest("hex"), dir), data);
};
// Snapshot seeds are made by this build: those of an earlier snapshot version go.
rmSync(new URL("from_snapshot/", root), { recursive: true, force: true });

const fixtures = new URL("../tests/fixtures/", import.meta.url);
const everything = new LogEndpoints({});
const empty = everything.snapshot();
write("from_snapshot", empty); // an empty store
// A header that claims a payload of u64::MAX bytes (magic and version as this build writes them).
write("from_snapshot", Buffer.concat([empty.subarray(0, 12), Buffer.alloc(8, 0xff), Buffer.alloc(72)]), "header-length-u64-max");
for (const file of readdirSync(fixtures).filter((f) => f.endsWith(".json"))) {
  const fixture = JSON.parse(readFileSync(new URL(file, fixtures)));
  const one = new LogEndpoints({});
  for (const batch of fixture.batches ?? []) {
    const ndjson = batch.entries.map((e) => JSON.stringify(e)).join("\n");
    one.ingest(batch.stream, ndjson);
    everything.ingest(batch.stream, ndjson);
  }
  write("from_snapshot", one.snapshot());
  for (const batch of fixture.batches ?? []) {
    const selector = batch.stream === "edge_logs" ? 0 : 1;
    const ndjson = batch.entries.map((e) => JSON.stringify(e)).join("\n");
    write("ingest_batch", Buffer.concat([Buffer.from([selector]), Buffer.from(ndjson)]));
    write("ingest_batch", Buffer.concat([Buffer.from([selector]), Buffer.from(JSON.stringify(batch.entries))]));
  }
  for (const c of fixture.queries ?? []) {
    const query = new URLSearchParams(c.params ?? {}).toString();
    write("query_string", query);
    write("query_path", Buffer.concat([Buffer.from([0x80]), Buffer.from(`${c.endpoint ?? ""}\n${query}`)]));
  }
}
for (const [selector, text] of [
  [0, '{"id":"a","timestamp":-1}\n{"id":"b","timestamp":1e300}\n{"id":"c","timestamp":"2026-02-30"}'],
  [0, `{"id":"d","timestamp":1,"metadata":${"[".repeat(70)}${"]".repeat(70)}}`],
  [1, '[{"id":"e","timestamp":"2026-11-20T10:00:00+14:00","metadata":{"response":{"status_code":404.0}}}]'],
  [0, "\ufeff[1, \"x\", null, {}]"],
  // Logflare's ingest API (selector bit 1): Kong's events without ids, a batch object, another source, NDJSON as JSON.
  [0x02, '[{"appname":"supabase-kong","event_message":"GET /rest/v1/x","metadata":{"request":{"path":"/rest/v1/x"}},"project":"default","timestamp":"2026-11-20T10:00:00Z"}]'],
  [0x46, '{"batch":[{"message":"hi","metadata":{"project_ref":"default"},"timestamp":"2026-11-20T10:14:02.118734201Z"}]}'],
  [0x0a, '{"level":"info","msg":"login"}\n{"timestamp":"soon","id":{}}\nnot json'],
  [0x42, '{"id":"a"}\n{"id":"b"}'],
  [1, '{"id":"f","timestamp":99999999999999999999,"metadata":[{"execution_time_ms":1e308}]}'],
]) write("ingest_batch", Buffer.concat([Buffer.from([selector]), Buffer.from(text)]));
// Other sources, kept through Logflare's ingest API.
const logflare = { method: "POST", path: "/api/logs", query: "source_name=gotrue.logs.prod", apiKey: "seed-ingest" };
const withOthers = new LogEndpoints({ ingestKeys: ["seed-ingest"], now: 1795177796000 });
withOthers.ingestRecord(withOthers.prepareIngest(logflare, '[{"msg":"login","project":"default"},{"timestamp":"soon"}]').record);
write("from_snapshot", withOthers.snapshot());
write("from_snapshot", everything.snapshot());
// Text in several deflate blocks (each 64 KiB of text before compression).
// Once with them in memory, once in a host's block storage (the snapshot
// then keeps each sealed block's hash and length).
const blockEntries = Array.from({ length: 1500 }, (_, i) => JSON.stringify({
  id: `b${i}`, timestamp: 1795177796000000 - i * 1e6, project: `tenant-${i % 7}`, event_message: `GET | 200 | /rest/v1/t${i}`,
  metadata: [{ request: [{ url: `https://tenant-${i % 7}.supabase.co/rest/v1/t${i}?id=eq.${i * 7919}`, path: `/rest/v1/t${i}` }], note: "x".repeat(i % 300) }],
})).join("\n");
for (const options of [{}, { blockStorage: { put() {}, get() {} } }]) {
  const blocks = new LogEndpoints(options);
  blocks.ingest("edge_logs", blockEntries);
  if (options.blockStorage && !(blocks.stats().storageBytes > 0)) throw new Error("no block went to storage");
  write("from_snapshot", blocks.snapshot());
}
for (const text of [
  "2026-11-20", "2026-11-20 10:00", "2026-11-20T10:00:00.123456Z", "2026-11-20T10:00:00+05:30",
  "2026-11-20T10:00:00-0800", "2026-11-20T10:00:00 UTC", "1795177796000000", "9999-12-31T23:59:59.999999Z",
  "0001-01-01T00:00:00Z", "2026-02-29", "2026-13-01", "+002026-11-20",
]) write("iso_timestamp", text);
for (const q of [
  "project=abc&interval=1day", "?project=a%20b+c&project=def", "project=%zz", "project=%ff%fe",
  "sql=select%201", `project=${"a".repeat(5000)}`, "project=(a*)*b&interval=daily", "&&&=&=",
]) {
  write("query_string", q);
  for (const selector of [0, 1, 2, 0x10]) write("query_path", Buffer.concat([Buffer.from([selector]), Buffer.from(q)]));
}
