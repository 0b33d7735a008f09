// Self-hosted Supabase's logs as its Vector ships them: container log lines
// (as Vector's docker_logs source reads them) put through the transforms of
// supabase/supabase `docker/volumes/logs/vector.yml` (project_logs, the
// router, and each container's remap), and batched per http sink, each
// batch a bare JSON array of events with sorted keys, as Vector's json codec
// writes it. `sinkRequest` says how each sink posts (path, headers).
import { rng } from "../../scripts/generate-logs.mjs";

/** Each http sink of vector.yml: its input container and its source name. */
export const SINKS = [
  { container: "supabase-kong", source: "cloudflare.logs.prod" },
  { container: "supabase-auth", source: "gotrue.logs.prod" },
  { container: "supabase-rest", source: "postgREST.logs.prod" },
  { container: "realtime-dev.supabase-realtime", source: "realtime.logs.prod" },
  { container: "supabase-storage", source: "storage.logs.prod.2" },
  { container: "supabase-edge-functions", source: "deno-relay-logs" },
  { container: "supabase-db", source: "postgres.logs" },
];

const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
const pad = (n, width = 2) => String(n).padStart(width, "0");

/** RFC 3339 with nanoseconds, as docker_logs timestamps are written. */
function nanoTime(ms, random) {
  const nanos = pad(Math.floor(random() * 1e6), 6);
  return `${new Date(ms).toISOString().slice(0, 23)}${nanos}Z`;
}

/** RFC 3339 to the second, as a time parsed from an nginx line is written. */
const secondTime = (ms) => `${new Date(ms).toISOString().slice(0, 19)}Z`;

function nginxTime(ms) {
  const d = new Date(ms);
  return `${pad(d.getUTCDate())}/${MONTHS[d.getUTCMonth()]}/${d.getUTCFullYear()}:${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())} +0000`;
}

function nginxErrorTime(ms) {
  return new Date(ms).toISOString().slice(0, 19).replace(/-/g, "/").replace("T", " ");
}

const API_PATHS = [
  ["GET", "/rest/v1/todos?select=*"],
  ["POST", "/rest/v1/todos"],
  ["GET", "/auth/v1/user"],
  ["POST", "/auth/v1/token?grant_type=password"],
  ["GET", "/storage/v1/object/public/avatars/a.png"],
  ["GET", "/realtime/v1/websocket?apikey=x&vsn=1.0.0"],
  ["GET", "/functions/v1/hello"],
  ["GET", "/pg/tables"],
];

/** One container's log line at `ms`, as its process writes it. */
function containerLine(container, ms, random) {
  const pick = (list) => list[Math.floor(random() * list.length)];
  switch (container) {
    case "supabase-kong": {
      if (random() < 0.15) {
        const [method, path] = pick(API_PATHS);
        return `${nginxErrorTime(ms)} [error] 1234#0: *${Math.floor(random() * 900)} upstream timed out, client: 172.18.0.1, server: kong, request: "${method} ${path} HTTP/1.1", host: "localhost:8000"`;
      }
      if (random() < 0.03) return "kong is starting"; // neither nginx form: both remaps abort
      const [method, path] = pick(API_PATHS);
      const status = pick([200, 200, 200, 201, 401, 404, 500]);
      return `172.18.0.1 - - [${nginxTime(ms)}] "${method} ${path} HTTP/1.1" ${status} ${100 + Math.floor(random() * 900)} "-" "Mozilla/5.0"`;
    }
    case "supabase-auth":
      return JSON.stringify({ level: pick(["info", "warning"]), msg: pick(["request completed", "login"]), time: secondTime(ms), path: "/token", status: 200 });
    case "supabase-rest":
      return `${secondTime(ms)}: ${pick(["Listening on port 3000", "Schema cache loaded"])}`;
    case "realtime-dev.supabase-realtime":
      return `${new Date(ms).toISOString().slice(11, 23)} [${pick(["info", "error"])}] ${pick(["Joined channel", "Billing metrics"])}`;
    case "supabase-storage":
      return JSON.stringify({ level: 30, time: ms, pid: 1, hostname: "storage", msg: pick(["request completed", "incoming request"]) });
    case "supabase-edge-functions":
      return pick(["main function started", "serving the request with /home/deno/functions/hello", "booted (time: 21ms)"]);
    default:
      return `${secondTime(ms)} UTC [${20 + Math.floor(random() * 50)}] ${pick(["LOG:  checkpoint starting: time", "ERROR:  relation \"x\" does not exist", "FATAL:  password authentication failed"])}`;
  }
}

/** vector.yml's parse_nginx_log(…, "combined") and (…, "error"), as far as Kong's lines need. */
const COMBINED = /^(\S+) - (\S+) \[([^\]]+)\] "(\S+) (\S+) (\S+)" (\d+) (\d+) "([^"]*)" "([^"]*)"$/;
const ERROR = /^(\d{4}\/\d\d\/\d\d \d\d:\d\d:\d\d) \[(\w+)\] \d+#\d+: .*?, client: ([^,]+), server: [^,]+, request: "([^"]+)", host: "([^"]+)"$/;

function nginxTimestamp(text) {
  const [, day, month, year, hh, mm, ss] = text.match(/^(\d\d)\/(\w{3})\/(\d{4}):(\d\d):(\d\d):(\d\d)/);
  return secondTime(Date.UTC(Number(year), MONTHS.indexOf(month), Number(day), Number(hh), Number(mm), Number(ss)));
}

/** The transforms of vector.yml applied to one docker_logs event; null where a remap aborts. */
function transform(event) {
  // project_logs
  const e = { project: "default", event_message: event.message, appname: event.container_name, timestamp: event.timestamp };
  e.metadata = {};
  switch (e.appname) {
    case "supabase-kong": {
      const access = e.event_message.match(COMBINED);
      if (access) {
        const [, client, , time, method, path, protocol, status, , referer, agent] = access;
        e.timestamp = nginxTimestamp(time);
        e.metadata.request = { headers: { referer, user_agent: agent, cf_connecting_ip: client }, method, path, protocol };
        e.metadata.response = { status_code: Number(status) };
        return e;
      }
      const error = e.event_message.match(ERROR);
      if (!error) return null;
      const [, time, severity, client, request, host] = error;
      const [method, path, protocol] = request.split(" ");
      e.timestamp = `${time.replace(/\//g, "-").replace(" ", "T")}Z`;
      e.severity = severity;
      e.metadata.request = { method, path, protocol, host, headers: { cf_connecting_ip: client } };
      e.metadata.response = { status_code: 200 };
      return e;
    }
    case "supabase-auth": {
      const parsed = JSON.parse(e.event_message);
      e.metadata = { ...e.metadata, timestamp: parsed.time, ...parsed };
      return e;
    }
    case "supabase-rest": {
      const m = e.event_message.match(/^(.*): (.*)$/);
      e.event_message = m[2];
      e.timestamp = m[1];
      e.metadata.host = e.project;
      return e;
    }
    case "realtime-dev.supabase-realtime": {
      e.metadata.project = e.project;
      delete e.project;
      e.metadata.external_id = e.metadata.project;
      const m = e.event_message.match(/^(\d+:\d+:\d+\.\d+) \[(\w+)\] (.*)$/);
      if (m) {
        e.event_message = m[3];
        e.metadata.level = m[2];
      }
      return e;
    }
    case "supabase-storage": {
      e.metadata.project = e.project;
      delete e.project;
      e.metadata.tenantId = e.metadata.project;
      const parsed = JSON.parse(e.event_message);
      e.event_message = parsed.msg;
      e.metadata.level = parsed.level;
      e.metadata.timestamp = parsed.time;
      e.metadata.context = [{ host: parsed.hostname, pid: parsed.pid }];
      return e;
    }
    case "supabase-edge-functions":
      e.metadata.project_ref = e.project;
      delete e.project;
      return e;
    default: {
      e.metadata.host = "db-default";
      e.metadata.parsed = { timestamp: e.timestamp };
      const m = e.event_message.match(/.*(INFO|NOTICE|WARNING|ERROR|LOG|FATAL|PANIC?):.*/);
      e.metadata.parsed.error_severity = (m ? m[1] : "log").toUpperCase();
      return e;
    }
  }
}

/** JSON with every object's keys sorted, as Vector's json codec writes events. */
export function sortedJson(value) {
  if (Array.isArray(value)) return `[${value.map(sortedJson).join(",")}]`;
  if (value && typeof value === "object") {
    return `{${Object.keys(value)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${sortedJson(value[k])}`)
      .join(",")}}`;
  }
  return JSON.stringify(value);
}

/**
 * An hour of a self-hosted stack's logs ending at `endMs`: per sink, its
 * events (transformed) and its batches (bare JSON arrays of 1 to `maxBatch`
 * events, in arrival order).
 */
export function vectorShipments({ endMs, spanMs = 3600e3, perContainer = 120, maxBatch = 60, seed = 1 }) {
  const random = rng(seed);
  return SINKS.map(({ container, source }) => {
    const events = [];
    for (let i = 0; i < perContainer; i++) {
      const ms = endMs - spanMs + Math.floor(((i + random()) / perContainer) * spanMs);
      const event = transform({ container_name: container, message: containerLine(container, ms, random), timestamp: nanoTime(ms, random) });
      if (event) events.push(event);
    }
    const batches = [];
    for (let at = 0; at < events.length; ) {
      const size = 1 + Math.floor(random() * maxBatch);
      batches.push(sortedJson(events.slice(at, at + size)));
      at += size;
    }
    return { container, source, events, batches };
  });
}

/** The request a sink of vector.yml makes with one batch: its path, and its headers. */
export function sinkRequest(source, key) {
  return {
    path: `/api/logs?source_name=${encodeURIComponent(source)}`,
    headers: { "x-api-key": key, "Content-Type": "application/json" },
  };
}
