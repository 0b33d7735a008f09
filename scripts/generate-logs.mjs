// Deterministic generator of realistic Supabase-style logs (edge request logs and
// edge function logs), as NDJSON. Same seed, same output.
//
//   node scripts/generate-logs.mjs --stream edge_logs --count 100000 --end 2026-11-20T12:00:00Z > edge.ndjson
//   node scripts/generate-logs.mjs --stream edge_logs --count 1000000 --projects 2000 > shard.ndjson
//
// By default 5 projects share the traffic (the busiest about half of it). With
// `--projects P` (`tenants(P)` when imported) it is a shard of a hosted
// platform: P projects with Zipf-like shares (the k-th busiest gets a share
// proportional to 1/k^1.1), each with its own host and its own functions.
// `--refs alike` names them as self-hosted setups and other platforms do,
// `tenant-1` … `tenant-P` (refs that share most of their characters), instead
// of random 20-letter refs; `--refs mixed` numbers every other one
// (`tenant-2`, `tenant-4` …) and keeps random refs for the rest.
//
// Also imported by the demo, the worker's dev server and the tests.

const PATHS = [
  // [weight, path template]: roughly the mix of a busy project
  [30, "/rest/v1/{table}?select=*&limit={limit}"],
  [16, "/rest/v1/{table}?select=*&id=eq.{row}"],
  [9, "/rest/v1/rpc/{rpc}"],
  [14, "/auth/v1/token?grant_type=refresh_token"],
  [5, "/auth/v1/user"],
  [11, "/storage/v1/object/public/{bucket}/{file}"],
  [3, "/storage/v1/object/sign/{bucket}/{file}"],
  [6, "/realtime/v1/websocket?apikey=anon&vsn=1.0.0"],
  [4, "/functions/v1/{fn}"],
  [2, "/graphql/v1"],
];
const TABLES = ["todos", "profiles", "orders", "messages", "events", "items", "comments", "invoices"];
const BUCKETS = ["avatars", "images", "docs"];
const METHODS = ["GET", "GET", "GET", "POST", "PATCH", "DELETE"];

/** Mulberry32: small, fast, good enough for test data. */
export function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function pick(random, list) {
  return list[Math.floor(random() * list.length)];
}

function weighted(random, pairs) {
  const total = pairs.reduce((s, [w]) => s + w, 0);
  let x = random() * total;
  for (const [w, v] of pairs) {
    if ((x -= w) < 0) return v;
  }
  return pairs[pairs.length - 1][1];
}

/** Standard normal from two uniforms (Box-Muller). */
function normal(random) {
  return Math.sqrt(-2 * Math.log(1 - random())) * Math.cos(2 * Math.PI * random());
}

export function projectRefs(count = 5, seed = 7) {
  const random = rng(seed);
  const letters = "abcdefghijklmnopqrstuvwxyz";
  return Array.from({ length: count }, () => Array.from({ length: 20 }, () => pick(random, letters)).join(""));
}

function hex(random, n) {
  let s = "";
  for (let i = 0; i < n; i++) s += Math.floor(random() * 16).toString(16);
  return s;
}

function uuid(random) {
  const h = hex(random, 32);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-a${h.slice(17, 20)}-${h.slice(20)}`;
}

/** The function ids the generator uses (the first ones are the busiest). */
export function functionIds(count = 24) {
  return Array.from({ length: count }, (_, i) => `fn-${String(i).padStart(2, "0")}-${hex(rng(i), 6)}`);
}

const ZIPF_EXPONENT = 1.1;
const FUNCTIONS_PER_TENANT = 6;

/** `tenant-1` … `tenant-{count}`: refs that share most of their characters. */
export function alikeRefs(count) {
  return Array.from({ length: count }, (_, i) => `tenant-${i + 1}`);
}

/**
 * A shard of `count` projects with Zipf-like shares: `refs` (busiest first),
 * `shares` (fractions of the traffic) and each project's own function ids.
 * `refs: "alike"` names them `tenant-1` … instead of random 20-letter refs;
 * `"mixed"` names every other one so (`tenant-2`, `tenant-4` …: as a platform
 * whose older projects have random refs and newer ones numbered).
 */
export function tenants(count = 2000, seed = 11, { refs: naming = "random" } = {}) {
  const alike = alikeRefs(count);
  const refs = naming === "alike" ? alike : projectRefs(count, seed).map((ref, k) => (naming === "mixed" && k % 2 === 1 ? alike[k] : ref));
  const weights = refs.map((_, k) => 1 / Math.pow(k + 1, ZIPF_EXPONENT));
  const total = weights.reduce((a, b) => a + b, 0);
  const functions = refs.map((ref) => Array.from({ length: FUNCTIONS_PER_TENANT }, (_, i) => `${ref.startsWith("tenant-") ? ref : ref.slice(0, 8)}-fn-${i}`));
  return { refs, shares: weights.map((w) => w / total), functions };
}

/** Picks a project index by `shares` (cumulative table, binary search). */
function sharePicker(random, shares) {
  const cumulative = [];
  let sum = 0;
  for (const share of shares) cumulative.push((sum += share));
  return () => {
    const x = random() * sum;
    let [lo, hi] = [0, cumulative.length - 1];
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (cumulative[mid] > x) hi = mid;
      else lo = mid + 1;
    }
    return lo;
  };
}

/**
 * Yields `count` entries of `stream` ("edge_logs" | "function_edge_logs"), spread
 * evenly over `spanMs` milliseconds ending at `endMs`, oldest first. With
 * `tenancy` (from `tenants()`), projects and functions are the shard's.
 */
export function* generate({ stream, count, endMs, spanMs = 7 * 24 * 3600 * 1000, seed = 1, projects = projectRefs(), functions = 24, tenancy }) {
  const random = rng(seed + (stream === "edge_logs" ? 0 : 1_000_003));
  const startUs = (endMs - spanMs) * 1000;
  const stepUs = (spanMs * 1000) / Math.max(count, 1);
  const sharedFnIds = functionIds(functions);
  const pickTenant = tenancy && sharePicker(random, tenancy.shares);
  for (let i = 0; i < count; i++) {
    // Mostly ordered, with a little jitter, as real shipped batches are.
    const timestamp = Math.floor(startUs + i * stepUs + random() * stepUs);
    const tenant = pickTenant?.();
    const project = tenancy ? tenancy.refs[tenant] : projects[Math.min(projects.length - 1, Math.floor(Math.pow(random(), 1.6) * projects.length))];
    const fnIds = tenancy ? tenancy.functions[tenant] : sharedFnIds;
    const failed = random() < 0.04;
    const status = failed ? pick(random, [400, 401, 403, 404, 409, 500, 502, 503]) : pick(random, [200, 200, 200, 201, 204, 304]);
    if (stream === "edge_logs") {
      const method = pick(random, METHODS);
      const path = weighted(random, PATHS)
        .replace("{table}", pick(random, TABLES))
        .replace("{limit}", pick(random, ["10", "20", "50", "100"]))
        .replace("{row}", String(Math.floor(random() * 50_000)))
        .replace("{rpc}", `get_${pick(random, TABLES)}_stats`)
        .replace("{bucket}", pick(random, BUCKETS))
        .replace("{file}", `${hex(random, 8)}.png`)
        .replace("{fn}", pick(random, fnIds));
      const host = `${project}.supabase.co`;
      yield {
        id: uuid(random),
        timestamp,
        event_message: `${method} | ${status} | ${random() < 0.5 ? "203.0.113." : "198.51.100."}${Math.floor(random() * 255)} | ${uuid(random).slice(0, 18)} | https://${host}${path} | Mozilla/5.0`,
        project,
        metadata: [{
          request: [{ method, path: path.split("?")[0], url: `https://${host}${path}`, host, protocol: "https:",
                      headers: [{ user_agent: "Mozilla/5.0", x_client_info: "supabase-js/2.45.0" }] }],
          response: [{ status_code: status, origin_time: Math.round(Math.exp(3 + normal(random))) }],
        }],
      };
    } else {
      // Log-normal execution times, a heavier tail (cold starts: 2% take 10-40x
      // longer) and a few with no time at all.
      const coldStart = random() < 0.02 ? 10 + 30 * random() : 1;
      const execution = random() < 0.01 ? null : Math.round(Math.exp(3.4 + 0.9 * normal(random)) * coldStart * 10) / 10;
      const fn = fnIds[Math.floor(Math.pow(random(), 2) * fnIds.length)];
      yield {
        id: uuid(random),
        timestamp,
        event_message: `POST | ${status} | https://${project}.supabase.co/functions/v1/${fn}`,
        metadata: [{
          project_ref: project, function_id: fn, execution_time_ms: execution, deployment_id: `${project}_${fn}_3`,
          execution_id: uuid(random), version: "3",
          request: [{ method: "POST", url: `https://${project}.supabase.co/functions/v1/${fn}` }],
          response: [{ status_code: status }],
        }],
      };
    }
  }
}

export function ndjson(entries) {
  let out = "";
  for (const e of entries) out += JSON.stringify(e) + "\n";
  return out;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { parseArgs } = await import("node:util");
  const usage = `usage: node scripts/generate-logs.mjs [--stream edge_logs|function_edge_logs] [--count N]
       [--end ISO-time] [--seed N] [--projects P [--refs random|alike|mixed]] > logs.ndjson
Writes N entries (default 1000) ending at --end (default now) as NDJSON to stdout.`;
  let args;
  try {
    ({ values: args } = parseArgs({
      options: {
        stream: { type: "string", default: "edge_logs" },
        count: { type: "string", default: "1000" },
        end: { type: "string" },
        seed: { type: "string", default: "1" },
        projects: { type: "string" },
        refs: { type: "string", default: "random" },
        help: { type: "boolean", short: "h" },
      },
    }));
  } catch (e) {
    console.error(`${e.message}\n${usage}`);
    process.exit(2);
  }
  if (args.help) {
    console.log(usage);
    process.exit(0);
  }
  const problems = [
    !["edge_logs", "function_edge_logs"].includes(args.stream) && `--stream ${args.stream} is not edge_logs or function_edge_logs`,
    !(Number.isInteger(Number(args.count)) && Number(args.count) >= 0) && `--count ${args.count} is not a whole number`,
    args.end !== undefined && Number.isNaN(Date.parse(args.end)) && `--end ${args.end} is not an ISO time`,
    args.projects !== undefined && !(Number(args.projects) >= 1) && `--projects ${args.projects} is not a positive number`,
    !["random", "alike", "mixed"].includes(args.refs) && `--refs ${args.refs} is not random, alike or mixed`,
  ].filter(Boolean);
  if (problems.length) {
    console.error(`${problems.join("\n")}\n${usage}`);
    process.exit(2);
  }
  const stream = args.stream;
  const count = Number(args.count);
  const endMs = args.end ? Date.parse(args.end) : Date.now();
  const seed = Number(args.seed);
  const tenancy = args.projects ? tenants(Number(args.projects), 11, { refs: args.refs }) : undefined;
  const out = process.stdout;
  let buffer = "";
  for (const entry of generate({ stream, count, endMs, seed, tenancy })) {
    buffer += JSON.stringify(entry) + "\n";
    if (buffer.length > 1 << 20) {
      out.write(buffer);
      buffer = "";
    }
  }
  out.write(buffer);
}
