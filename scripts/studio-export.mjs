// Writes Supabase Studio's Logs Explorer downloads of generated logs, as Studio
// writes them, beside the NDJSON of the same entries (tests/fixtures/studio/).
// The page and the CLI must read each download as its NDJSON.
//
//   node scripts/studio-export.mjs          rewrites tests/fixtures/studio/
//
// Studio's "Download CSV" / "Download JSON" (apps/studio
// components/ui/DownloadResultsButton.tsx at commit 02bf393 of supabase/supabase,
// with Results.utils.ts at 208d708):
// - CSV: Papa.unparse(rows with every object value, and null, JSON.stringify'd,
//   { columns: keys of the first row }): a header row, CRLF line ends, fields
//   quoted only when they must be; `metadata` is compact JSON text, null is the
//   word `null`, a timestamp is written as the query returned it.
// - JSON: JSON.stringify(rows, null, 2).
// Edge rows here carry timestamps as Logflare returns them (microseconds);
// function rows as ISO strings (what a query that formats them returns), so both
// forms are covered.
import { mkdirSync, writeFileSync } from "node:fs";
import Papa from "papaparse";
import { generate, ndjson } from "./generate-logs.mjs";

const END_MS = Date.parse("2026-11-20T12:00:00Z");
const DIR = new URL("../tests/fixtures/studio/", import.meta.url);

/** Microseconds since the epoch as ISO 8601 with microseconds. */
function isoMicros(us) {
  const ms = Math.floor(us / 1000);
  return new Date(ms).toISOString().replace(/\.(\d{3})Z$/, (_, frac) => `.${frac}${String(us % 1000).padStart(3, "0")}Z`);
}

/** Studio's formatResults: objects (null too) as JSON text, the rest as they are. */
function studioCells(rows) {
  return rows.map((row) => Object.fromEntries(Object.entries(row).map(([k, v]) => [k, typeof v === "object" ? JSON.stringify(v) : v])));
}

export function studioCsv(rows) {
  return Papa.unparse(studioCells(rows), { columns: Object.keys(rows[0]) });
}

export function studioJson(rows) {
  return JSON.stringify(rows, null, 2);
}

const sets = {
  edge: [...generate({ stream: "edge_logs", count: 150, endMs: END_MS, spanMs: 6 * 3600e3, seed: 11 })],
  functions: [...generate({ stream: "function_edge_logs", count: 150, endMs: END_MS, spanMs: 6 * 3600e3, seed: 11 })],
};

mkdirSync(DIR, { recursive: true });
for (const [name, entries] of Object.entries(sets)) {
  const rows = entries.map((e) => (name === "functions" ? { ...e, timestamp: isoMicros(e.timestamp) } : e));
  writeFileSync(new URL(`${name}.ndjson`, DIR), ndjson(entries));
  writeFileSync(new URL(`${name}.csv`, DIR), studioCsv(rows));
  writeFileSync(new URL(`${name}.json`, DIR), studioJson(rows));
}
console.error(`wrote ${Object.keys(sets).length * 3} files to ${DIR.pathname}`);
