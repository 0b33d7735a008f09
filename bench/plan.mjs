// The shared query plan of the benchmark: for each endpoint, `runs` parameter
// sets (projects, functions, end times and patterns vary, and each engine clears
// its cache before every run, so no run is a cache hit), the same for our wasm
// build, our native build and DuckDB.
import { functionIds, projectRefs } from "../scripts/generate-logs.mjs";

export const END_MS = Date.parse("2026-11-20T12:00:00Z");
export const NOW_US = END_MS * 1000;
const MINUTE = 60e6;

const escape = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

export function plan(runs) {
  const projects = projectRefs();
  const functions = [undefined, ...functionIds()];
  const pick = (list, i) => list[i % list.length];
  const each = (make) => Array.from({ length: runs }, (_, i) => make(i));
  const stats = (interval) => ({
    endpoint: "functions.invocation-stats",
    runs: each((i) => {
      const params = { project: pick(projects, i), interval };
      const f = pick(functions, Math.floor(i / projects.length)); // undefined: all functions
      if (f) params.function_id = f;
      return params;
    }),
  });
  // The project's ref, or its host, or a URL prefix, or host plus API areas.
  const counts = (interval) => ({
    endpoint: "usage.api-counts",
    runs: each((i) => {
      const p = escape(pick(projects, i));
      const patterns = [p, `${p}\\.supabase\\.co`, `^https://${p}\\.`, `${p}\\.supabase\\.co/(rest|auth|storage|realtime)`];
      return { project: pick(patterns, Math.floor(i / projects.length)), interval };
    }),
  });
  return {
    nowUs: NOW_US,
    queries: {
      "invocation-stats 7day": stats("7day"),
      "invocation-stats 1hr": stats("1hr"),
      "logs.all PAYG": {
        endpoint: "logs.all",
        runs: each((i) => ({
          project: pick(projects, i),
          project_tier: "PAYG",
          iso_timestamp_end: new Date((NOW_US - i * 7 * MINUTE) / 1000).toISOString(),
        })),
      },
      "api-counts daily": counts("daily"),
      "api-counts minutely": counts("minutely"),
    },
  };
}
