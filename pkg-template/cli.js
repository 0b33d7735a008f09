#!/usr/bin/env node
// log-endpoints CLI: answer an endpoint over downloaded log files.
//
//   npx log-endpoints query <endpoint> --logs edge.ndjson [--logs fns.ndjson.gz]
//       --param project=abc --param interval=1hr [--now latest|now|ISO|epoch-ms]
//       [--stream edge_logs|function_edge_logs] [--format json|csv|table]
//   npx log-endpoints endpoints
//
// Files are JSON arrays, NDJSON or CSV with a header row, optionally gzipped (.gz). The module's
// LogFeed frames them and sends each entry to the function stream when it has
// function fields, else to the edge stream, unless --stream says otherwise.
import { createReadStream, readFileSync, statSync, writeFileSync } from "node:fs";
import { parseArgs as parseNodeArgs } from "node:util";
import { createGunzip } from "node:zlib";
import { LogEndpoints, LogFeed } from "./node.js";

const USAGE = `usage:
  log-endpoints query <endpoint> (--logs FILE [--logs FILE ...] | --open SNAPSHOT) --param NAME=VALUE [...]
                      [--save SNAPSHOT] [--now latest|now|ISO-8601|epoch-ms]
                      [--stream edge_logs|function_edge_logs] [--format json|csv|table]
  log-endpoints endpoints [--format json|table]

  --save writes what the logs became (a snapshot) so that --open answers later
  queries without reading the logs again.`;

const KEY = "cli";

class UsageError extends Error {}

function parseArgs(argv) {
  let parsed;
  try {
    parsed = parseNodeArgs({
      args: argv,
      allowPositionals: true,
      options: {
        logs: { type: "string", multiple: true, default: [] },
        save: { type: "string" },
        open: { type: "string" },
        param: { type: "string", multiple: true, default: [] },
        now: { type: "string", default: "latest" },
        format: { type: "string", default: "json" },
        stream: { type: "string" },
        help: { type: "boolean", short: "h", default: false },
      },
    });
  } catch (e) {
    throw new UsageError(e.message.split("\n")[0]);
  }
  const { values, positionals } = parsed;
  const params = new URLSearchParams();
  for (const pair of values.param) {
    const eq = pair.indexOf("=");
    if (eq <= 0) throw new UsageError(`--param takes NAME=VALUE, got "${pair}"`);
    params.append(pair.slice(0, eq), pair.slice(eq + 1));
  }
  if (!["json", "csv", "table"].includes(values.format)) throw new UsageError(`--format must be json, csv or table, not "${values.format}"`);
  return { ...values, params, positional: positionals };
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

/** Streams one file into the service through the module's LogFeed; adds to `totals`. */
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
  let feed;
  let bytesRead = 0;
  try {
    feed = new LogFeed(svc, { stream: forcedStream, source: file });
    for await (const chunk of input) {
      bytesRead += chunk.length;
      feed.push(chunk);
      progress.update(bytesRead, feed.entries);
    }
    const done = feed.finish();
    totals.accepted += done.accepted;
    totals.rejected += done.rejectedTotal;
    totals.reasons.push(...done.rejected.slice(0, 5 - totals.reasons.length).map((r) => r.reason));
  } catch (e) {
    if (e.code === "Z_DATA_ERROR" || e.code === "Z_BUF_ERROR") throw new UsageError(`${file} is not valid gzip`);
    // The module's errors (an unreadable file, an unknown --stream) are about the input.
    if (typeof e.status === "number") throw new UsageError(e.message);
    throw e;
  } finally {
    feed?.free();
    progress.done();
  }
}

/** The endpoints and their parameters, as the module describes them. */
function describeEndpoints(endpoints) {
  const lines = [];
  for (const e of endpoints) {
    const cache = e.cacheSeconds ? `cached ${e.cacheSeconds} s` : "not cached";
    lines.push(`${e.name}  (${e.id}; ${e.stream}; ${cache}; at most ${e.maxRows} rows)`, `  ${e.summary}`);
    for (const p of e.parameters) {
      const values = p.values.length ? ` = ${p.values.join(" | ")}` : "";
      lines.push(`  --param ${p.name}${values}${p.required ? "" : "  (optional)"}`, `      ${p.meaning}`);
    }
    lines.push("");
  }
  return lines.join("\n");
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

/** A µs timestamp as ISO 8601 UTC, with its fraction only when it has one. */
function isoOfMicros(us) {
  const iso = new Date(Math.floor(us / 1000)).toISOString().slice(0, 19);
  const fraction = ((us % 1e6) + 1e6) % 1e6;
  return `${iso}${fraction ? `.${String(fraction).padStart(6, "0").replace(/0+$/, "")}` : ""}Z`;
}

/** A value as people read it in a table: times as ISO 8601, fractions rounded to 2 places (JSON and CSV keep them exact). */
function readable(column, value) {
  if (column === "timestamp" && Number.isInteger(value)) return isoOfMicros(value);
  if (typeof value === "number" && !Number.isInteger(value)) return String(Math.round(value * 100) / 100);
  return cell(value);
}

function toTable(rows) {
  if (rows.length === 0) return "(no rows)\n";
  const columns = Object.keys(rows[0]);
  const clip = (s) => (s.length > 48 ? s.slice(0, 47) + "…" : s);
  const cells = rows.map((r) => columns.map((c) => clip(readable(c, r[c]))));
  const numeric = columns.map((c) => rows.every((r) => typeof r[c] === "number" || r[c] === null) && c !== "timestamp");
  const widths = columns.map((c, i) => Math.max(c.length, ...cells.map((row) => row[i].length)));
  const line = (values) => values.map((v, i) => (numeric[i] ? v.padStart(widths[i]) : v.padEnd(widths[i]))).join("  ").trimEnd();
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
    const endpoints = new LogEndpoints({}).endpoints();
    process.stdout.write(options.format === "json" ? JSON.stringify(endpoints, null, 2) + "\n" : describeEndpoints(endpoints));
    return 0;
  }
  if (command !== "query") throw new UsageError(`unknown command "${command}"`);
  if (!endpoint) throw new UsageError("query needs an endpoint name or UUID");
  if (options.logs.length === 0 && !options.open) throw new UsageError("query needs at least one --logs FILE, or --open SNAPSHOT");
  const svcOptions = { apiKeys: [KEY], limits: { maxBatchBytes: 64 << 20 } };
  let svc;
  if (options.open) {
    let bytes;
    try {
      bytes = readFileSync(options.open);
    } catch (e) {
      throw new UsageError(`cannot read ${options.open}: ${e.code === "ENOENT" ? "no such file" : e.message}`);
    }
    try {
      svc = LogEndpoints.fromSnapshot(bytes, svcOptions);
    } catch (e) {
      throw new UsageError(`${options.open}: ${e.message}`);
    }
  } else {
    svc = new LogEndpoints(svcOptions);
  }
  const totals = { accepted: 0, rejected: 0, reasons: [] };
  for (const file of options.logs) await ingestFile(svc, file, options.stream, totals);
  if (totals.rejected > 0) {
    process.stderr.write(`warning: ${totals.rejected} entries rejected, e.g. ${totals.reasons.join("; ")}\n`);
  }
  if (totals.accepted === 0 && !options.open) throw new UsageError(`no log entries could be read from ${options.logs.join(", ")}`);
  if (options.save) {
    writeFileSync(options.save, svc.snapshot());
    process.stderr.write(`saved ${options.save} (open it with --open ${options.save})\n`);
  }
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
