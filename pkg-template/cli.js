#!/usr/bin/env node
// log-endpoints CLI: answer an endpoint over downloaded log files.
//
//   npx log-endpoints query <endpoint> --logs edge.ndjson [--logs fns.ndjson.gz]
//       --param project=abc --param interval=1hr [--now latest|now|ISO|epoch-ms]
//       [--stream edge_logs|function_edge_logs] [--format json|csv|table]
//   npx log-endpoints endpoints
//
// Files are JSON arrays or NDJSON, optionally gzipped (.gz). Each entry goes to
// the function stream when it has function fields (function_id, project_ref,
// execution_time_ms), else to the edge stream, unless --stream says otherwise.
import { createReadStream, statSync } from "node:fs";
import { createGunzip } from "node:zlib";
import { LogEndpoints } from "./node.js";
import { LogBatcher } from "./batcher.js";

const USAGE = `usage:
  log-endpoints query <endpoint> --logs FILE [--logs FILE ...] --param NAME=VALUE [...]
                      [--now latest|now|ISO-8601|epoch-ms] [--stream edge_logs|function_edge_logs]
                      [--format json|csv|table]
  log-endpoints endpoints`;

const KEY = "cli";

class UsageError extends Error {}

function parseArgs(argv) {
  const options = { logs: [], params: new URLSearchParams(), now: "latest", format: "json", stream: undefined, positional: [] };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    const value = () => {
      const v = argv[++i];
      if (v === undefined) throw new UsageError(`${arg} needs a value`);
      return v;
    };
    if (arg === "--logs") options.logs.push(value());
    else if (arg === "--param") {
      const pair = value();
      const eq = pair.indexOf("=");
      if (eq <= 0) throw new UsageError(`--param takes NAME=VALUE, got "${pair}"`);
      options.params.append(pair.slice(0, eq), pair.slice(eq + 1));
    } else if (arg === "--now") options.now = value();
    else if (arg === "--format") options.format = value();
    else if (arg === "--stream") options.stream = value();
    else if (arg === "--help" || arg === "-h") options.help = true;
    else if (arg.startsWith("--")) throw new UsageError(`unknown option ${arg}`);
    else options.positional.push(arg);
  }
  if (!["json", "csv", "table"].includes(options.format)) throw new UsageError(`--format must be json, csv or table, not "${options.format}"`);
  if (options.stream && !["edge_logs", "function_edge_logs", "cloudflare.logs.prod", "deno-relay-logs"].includes(options.stream)) {
    throw new UsageError(`--stream must be edge_logs or function_edge_logs, not "${options.stream}"`);
  }
  return options;
}

/** Progress on stderr, only where a person can see it and the input is large. */
function progressReporter(label, totalBytes) {
  const visible = process.stderr.isTTY || process.env.LOG_ENDPOINTS_PROGRESS === "1";
  if (!visible || totalBytes < 16 << 20) return { update() {}, done() {} };
  let last = 0;
  const started = performance.now();
  return {
    update(bytes, entries) {
      const now = performance.now();
      if (now - last < 200) return;
      last = now;
      const rate = entries / ((now - started) / 1000);
      process.stderr.write(`\r${label}: ${(bytes / 1048576).toFixed(0)}/${(totalBytes / 1048576).toFixed(0)} MiB, ${entries.toLocaleString()} entries (${Math.round(rate).toLocaleString()}/s)   `);
    },
    done() {
      process.stderr.write("\n");
    },
  };
}

/** Streams one file into the service through a LogBatcher; adds to `totals`. */
async function ingestFile(svc, file, forcedStream, totals) {
  let size;
  try {
    size = statSync(file).size;
  } catch (e) {
    throw new UsageError(`cannot read ${file}: ${e.code === "ENOENT" ? "no such file" : e.message}`);
  }
  let input = createReadStream(file);
  if (file.endsWith(".gz")) input = input.pipe(createGunzip());
  const progress = progressReporter(file, size);
  const batcher = new LogBatcher(svc, { stream: forcedStream, source: file });
  const decoder = new TextDecoder("utf-8", { fatal: true });
  let bytesRead = 0;
  try {
    for await (const chunk of input) {
      bytesRead += chunk.length;
      batcher.push(decoder.decode(chunk, { stream: true }));
      progress.update(bytesRead, batcher.entries);
    }
    batcher.push(decoder.decode());
    const done = batcher.finish();
    totals.accepted += done.accepted;
    totals.rejected += done.rejected;
    totals.reasons.push(...done.reasons.slice(0, 5 - totals.reasons.length));
  } catch (e) {
    if (e instanceof SyntaxError) throw new UsageError(e.message);
    if (e instanceof TypeError && /decode|encoded/i.test(e.message)) throw new UsageError(`${file} is not UTF-8 text`);
    if (e.code === "Z_DATA_ERROR" || e.code === "Z_BUF_ERROR") throw new UsageError(`${file} is not valid gzip`);
    throw e;
  } finally {
    progress.done();
  }
}

function resolveNow(svc, now) {
  if (now === "latest") return svc.newestTimestamp() ?? Date.now();
  if (now === "now") return Date.now();
  if (/^\d+(\.\d+)?$/.test(now)) return Number(now);
  const parsed = Date.parse(now);
  if (Number.isNaN(parsed)) throw new UsageError(`--now must be latest, now, an ISO 8601 time or epoch milliseconds, not "${now}"`);
  return parsed;
}

function cell(value) {
  if (value === null || value === undefined) return "";
  return typeof value === "object" ? JSON.stringify(value) : String(value);
}

function toCsv(rows) {
  if (rows.length === 0) return "";
  const columns = Object.keys(rows[0]);
  const quote = (s) => (/[",\n\r]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s);
  return [columns.join(","), ...rows.map((r) => columns.map((c) => quote(cell(r[c]))).join(","))].join("\n") + "\n";
}

function toTable(rows) {
  if (rows.length === 0) return "(no rows)\n";
  const columns = Object.keys(rows[0]);
  const clip = (s) => (s.length > 48 ? s.slice(0, 47) + "…" : s);
  const cells = rows.map((r) => columns.map((c) => clip(cell(r[c]))));
  const widths = columns.map((c, i) => Math.max(c.length, ...cells.map((row) => row[i].length)));
  const line = (values) => values.map((v, i) => v.padEnd(widths[i])).join("  ").trimEnd();
  return [line(columns), line(widths.map((w) => "-".repeat(w))), ...cells.map(line)].join("\n") + `\n(${rows.length} rows)\n`;
}

async function main(argv) {
  const options = parseArgs(argv);
  const [command, endpoint] = options.positional;
  if (options.help || !command) {
    process.stdout.write(USAGE + "\n");
    return options.help ? 0 : 2;
  }
  if (command === "endpoints") {
    process.stdout.write(JSON.stringify(new LogEndpoints({}).endpoints(), null, 2) + "\n");
    return 0;
  }
  if (command !== "query") throw new UsageError(`unknown command "${command}"`);
  if (!endpoint) throw new UsageError("query needs an endpoint name or UUID");
  if (options.logs.length === 0) throw new UsageError("query needs at least one --logs FILE");

  const svc = new LogEndpoints({ apiKeys: [KEY], limits: { maxBatchBytes: 64 << 20 } });
  const totals = { accepted: 0, rejected: 0, reasons: [] };
  for (const file of options.logs) await ingestFile(svc, file, options.stream, totals);
  if (totals.rejected > 0) {
    process.stderr.write(`warning: ${totals.rejected} entries rejected, e.g. ${totals.reasons.join("; ")}\n`);
  }
  if (totals.accepted === 0) throw new UsageError(`no log entries could be read from ${options.logs.join(", ")}`);
  const nowMs = resolveNow(svc, options.now);
  svc.setNow(nowMs);
  if (options.now === "latest") process.stderr.write(`now = ${new Date(nowMs).toISOString()} (the newest entry; --now changes it)\n`);
  const { result } = svc.query(endpoint, options.params, KEY);
  const out = options.format === "csv" ? toCsv(result) : options.format === "table" ? toTable(result) : JSON.stringify({ result }, null, 2) + "\n";
  process.stdout.write(out);
  return 0;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (e) => {
    if (e instanceof UsageError) {
      process.stderr.write(`error: ${e.message}\n${USAGE}\n`);
      process.exit(2);
    }
    if (e && typeof e.status === "number") {
      process.stderr.write(`error: ${e.message}\n`);
      process.exit(1);
    }
    process.stderr.write(`error: ${e && e.message ? e.message : e}\n`);
    process.exit(1);
  },
);
