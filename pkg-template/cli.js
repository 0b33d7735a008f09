#!/usr/bin/env node
// log-endpoints CLI: answer an endpoint over downloaded log files.
//
//   npx log-endpoints query <endpoint> --logs edge.ndjson [--logs fns.ndjson.gz]
//       --param project=abc --param interval=1hr [--now latest|now|ISO|epoch]
//       [--stream edge_logs|function_edge_logs] [--format json|csv|table]
//   npx log-endpoints endpoints
//
// Files are JSON arrays, NDJSON, pretty-printed objects or CSV with a header row, optionally gzipped. The module's
// LogFeed frames them and sends each entry to the function stream when it has
// function fields, else to the edge stream, unless --stream says otherwise.
import { createReadStream, readFileSync, statSync, writeFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { parseArgs as parseNodeArgs } from "node:util";
import { availableParallelism } from "node:os";
import { LogEndpoints, LogFeed, SealWorker } from "./node.js";

const USAGE = `usage:
  log-endpoints query <endpoint> (--logs FILE [--logs FILE ...] | --open SNAPSHOT) --param NAME=VALUE [...]
                      [--save SNAPSHOT] [--now latest|now|ISO-8601|epoch] [--max-store MiB]
                      [--stream edge_logs|function_edge_logs] [--format json|csv|table]
  log-endpoints endpoints [--format json|table]
  log-endpoints --version

  --logs - reads standard input (gzip or not).

  --save writes what the logs became (a snapshot) so that --open answers later
  queries without reading the logs again. --now epoch numbers are read by
  magnitude (s, ms, µs or ns), ISO times without a zone as UTC.

  --max-store bounds the memory the logs take once read, in whole MiB from 1
  to 4095 (default 1024 MiB, about 7 million edge entries). When it is
  reached, reading stops there and the answer covers what was read (a warning
  says how far).`;

const KEY = "cli";
const { reportedReasons: REPORTED_REASONS } = LogEndpoints.constants();

/** A mistake in the command line: a one-line error and a pointer to --help (exit 2). */
class UsageError extends Error {}
/** An input that cannot be read (exit 2). */
class InputError extends Error {}

const OPTIONS = {
  logs: { type: "string", multiple: true, default: [] },
  save: { type: "string" },
  open: { type: "string" },
  param: { type: "string", multiple: true, default: [] },
  now: { type: "string", default: "latest" },
  format: { type: "string", default: "json" },
  stream: { type: "string" },
  "max-store": { type: "string" },
  help: { type: "boolean", short: "h", default: false },
  version: { type: "boolean", default: false },
};

/** The option a misspelt one most likely meant (same start, or at most two edits away). */
function closestOption(name) {
  const distance = (a, b) => {
    const row = Array.from({ length: b.length + 1 }, (_, i) => i);
    for (let i = 1; i <= a.length; i++) {
      let diagonal = row[0];
      row[0] = i;
      for (let j = 1; j <= b.length; j++) {
        const above = row[j];
        row[j] = Math.min(row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] === b[j - 1] ? 0 : 1));
        diagonal = above;
      }
    }
    return row[b.length];
  };
  const bare = name.replace(/^-+/, "").split("=")[0];
  return Object.keys(OPTIONS).find((o) => o.startsWith(bare) || bare.startsWith(o) || distance(o, bare) <= 2);
}

const plural = (n, one, many) => `${n.toLocaleString()} ${n === 1 ? one : many}`;

function parseArgs(argv) {
  let parsed;
  try {
    parsed = parseNodeArgs({ args: argv, allowPositionals: true, options: OPTIONS });
  } catch (e) {
    const unknown = e.code === "ERR_PARSE_ARGS_UNKNOWN_OPTION" && /'(-[^']*)'/.exec(e.message);
    if (unknown) {
      const meant = closestOption(unknown[1]);
      throw new UsageError(`unknown option ${unknown[1]}${meant ? ` (did you mean --${meant}?)` : ""}`);
    }
    throw new UsageError(e.message.split("\n")[0]);
  }
  const { values, positionals } = parsed;
  if (positionals.length > 2) throw new UsageError(`unexpected argument "${positionals[2]}"`);
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

/** A file's bytes as they are read (the module unpacks gzip); a reader that stops early closes the file. */
function fileBytes(file) {
  return file === "-" ? process.stdin : createReadStream(file);
}

/** Why a file cannot be read, in words (no errno names). */
function unreadable(file, e) {
  const why = { ENOENT: "no such file", EACCES: "permission denied", EISDIR: "it is a directory" }[e.code] ?? e.message;
  return new InputError(`cannot read ${file}: ${why}`);
}

/** A file's size, or an InputError saying why it cannot be read (a directory among the reasons). */
function readableSize(file) {
  if (file === "-") return 0;
  try {
    const stat = statSync(file);
    if (stat.isDirectory()) throw Object.assign(new Error("directory"), { code: "EISDIR" });
    return stat.size;
  } catch (e) {
    throw unreadable(file, e);
  }
}

/**
 * The files to read, each regular file once (by device and inode, whatever
 * path names it): read twice, its entries would count twice.
 */
function onceEach(files) {
  const seen = new Map();
  let stdin = false;
  return files.filter((file) => {
    if (file === "-") {
      if (stdin) process.stderr.write("warning: - (standard input) is given twice; it is read once\n");
      return !stdin && (stdin = true);
    }
    let stat;
    try {
      stat = statSync(file, { bigint: true });
    } catch (e) {
      throw unreadable(file, e);
    }
    if (!stat.isFile()) return true;
    const key = `${stat.dev}:${stat.ino}`;
    const first = seen.get(key);
    if (first === undefined) return seen.set(key, file);
    process.stderr.write(`warning: ${file} is ${first === file ? "given twice" : `the same file as ${first}`}; it is read once\n`);
    return false;
  });
}

/**
 * Streams one file into the service through the module's LogFeed; adds to
 * `totals`. Whether the store had room for all of it (false: it is full, and
 * `totals.full` says where reading stopped).
 */
async function ingestFile(svc, sealer, file, forcedStream, totals) {
  const size = readableSize(file);
  const progress = progressReporter(file, size);
  const name = file === "-" ? "standard input" : file;
  let feed;
  let bytesRead = 0;
  try {
    feed = new LogFeed(svc, { stream: forcedStream, source: name });
    for await (const chunk of fileBytes(file)) {
      bytesRead += chunk.length;
      feed.push(chunk);
      sealer?.pump();
      progress.update(bytesRead, feed.entries);
      if (feed.readsNoMore) break;
    }
    // The module keeps the whole entries before a break (a cut or damaged gzip, an array cut short) and says so.
    const done = feed.finish();
    if (done.endsEarly) process.stderr.write(`warning: ${done.endsEarly}\n`);
    totals.accepted += done.accepted;
    totals.rejected += done.rejectedTotal;
    totals.reasons.push(...done.rejected.slice(0, Math.max(0, REPORTED_REASONS - totals.reasons.length)).map((r) => r.reason));
    totals.full = done.storeFull;
    return !done.storeFull;
  } catch (e) {
    // A file that breaks in its middle (an array, CSV): the module kept the entries before
    // the flaw and says how many; the answer covers them, as it does a cut file's.
    if (e.code === "unreadable_batch" && feed?.accepted > 0) {
      process.stderr.write(`warning: ${e.message}\n`);
      totals.accepted += feed.accepted;
      totals.rejected += feed.rejectedTotal;
      // Ingesting what was read before the flaw can fill the store.
      totals.full = feed.storeFull;
      return !feed.storeFull;
    }
    if (e instanceof InputError) throw e;
    if (typeof e.code === "string" && e.syscall) throw unreadable(name, e);
    // The module's errors (an unreadable file, an unknown --stream) are about the input.
    if (typeof e.status === "number") throw new InputError(e.message);
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
    lines.push(`${e.name}  (${e.id}; ${e.stream}; ${cache})`, `  ${e.summary}`);
    for (const p of e.parameters) {
      const values = p.values.length ? ` = ${p.values.join(" | ")}` : "";
      lines.push(`  --param ${p.name}${values}${p.required ? "" : "  (optional)"}`, `      ${p.meaning}`);
    }
    lines.push("");
  }
  return lines.join("\n");
}

/** --now in epoch ms: `latest`, `now`, or a time read as query parameters read one (the module's rule). */
function resolveNow(svc, now) {
  if (now === "latest") return svc.newestTimestamp() ?? Date.now();
  if (now === "now") return Date.now();
  try {
    return LogEndpoints.parseTime(now);
  } catch {
    throw new UsageError(`--now must be latest, now, an ISO 8601 time or an epoch number (s, ms, µs or ns), not "${now}"`);
  }
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
  return [line(columns), line(widths.map((w) => "-".repeat(w))), ...cells.map(line)].join("\n") + `\n(${plural(rows.length, "row", "rows")})\n`;
}

async function main(argv) {
  const options = parseArgs(argv);
  const [command, endpoint] = options.positional;
  if (options.version) {
    process.stdout.write(`${JSON.parse(readFileSync(new URL("./package.json", import.meta.url), "utf8")).version}\n`);
    return 0;
  }
  if (options.help || !command) {
    (options.help ? process.stdout : process.stderr).write(USAGE + "\n");
    return options.help ? 0 : 2;
  }
  if (command === "endpoints") {
    if (options.format === "csv") throw new UsageError("endpoints --format takes json or table");
    const endpoints = new LogEndpoints({}).endpoints();
    process.stdout.write(options.format === "json" ? JSON.stringify(endpoints, null, 2) + "\n" : describeEndpoints(endpoints));
    return 0;
  }
  if (command !== "query") throw new UsageError(`unknown command "${command}"`);
  if (!endpoint) throw new UsageError("query needs an endpoint name or UUID");
  if (options.logs.length === 0 && !options.open) throw new UsageError("query needs at least one --logs FILE, or --open SNAPSHOT");
  if (options.open === "-") throw new UsageError("--open takes a snapshot file (standard input is for --logs -)");
  const nowFixed = options.now === "latest" ? undefined : resolveNow(undefined, options.now);
  for (const file of [...options.logs, ...(options.open ? [options.open] : [])]) readableSize(file);
  if (options.save) {
    const folder = dirname(resolve(options.save));
    let isFolder = false;
    try {
      isFolder = statSync(folder).isDirectory();
    } catch {}
    if (!isFolder) throw new InputError(`cannot write ${options.save}: no folder ${folder}`);
    let existing;
    try {
      existing = statSync(options.save);
    } catch {}
    if (existing?.isDirectory()) throw new InputError(`cannot write ${options.save}: it is a folder`);
  }
  const limits = {};
  if (options["max-store"] !== undefined) {
    try {
      limits.maxStoreBytes = LogEndpoints.storeBytesOfMiB(options["max-store"], "--max-store");
    } catch (e) {
      throw new UsageError(e.message);
    }
  }
  const svcOptions = { apiKeys: [KEY], limits };
  // The endpoint and its parameters are checked before any log is read: a
  // typo costs nothing, however large the logs.
  const probe = new LogEndpoints(svcOptions);
  try {
    probe.query(endpoint, options.params, KEY);
  } finally {
    probe.free();
  }
  let svc;
  if (options.open) {
    let bytes;
    try {
      bytes = readFileSync(options.open);
    } catch (e) {
      throw unreadable(options.open, e);
    }
    try {
      svc = LogEndpoints.fromSnapshot(bytes, svcOptions);
    } catch (e) {
      throw new InputError(`${options.open}: ${e.message}`);
    }
  } else {
    svc = new LogEndpoints(svcOptions);
  }
  const totals = { accepted: 0, rejected: 0, reasons: [] };
  const files = [...onceEach(options.logs)];
  // With a second core, text blocks are compressed there while reading goes on.
  const sealer = files.length > 0 && availableParallelism() > 1 ? new SealWorker(svc) : null;
  for (const [at, file] of files.entries()) {
    if (await ingestFile(svc, sealer, file, options.stream, totals)) continue;
    const unread = files.length - at - 1;
    process.stderr.write(`warning: ${totals.full}${unread ? `; ${LogFeed.laterFilesNotRead(unread)}` : ""}; the answer covers what was kept (--max-store raises the store's size)\n`);
    break;
  }
  await sealer?.close();
  if (totals.rejected > 0) {
    process.stderr.write(`warning: ${plural(totals.rejected, "entry", "entries")} rejected, e.g. ${totals.reasons.join("; ")}\n`);
  }
  if (totals.accepted === 0 && !options.open) throw new InputError(`no log entries could be read from ${options.logs.join(", ")}`);
  // Entries are answered per project: held without one, no endpoint finds them.
  const stats = svc.stats();
  const { unprojected } = svc.catalog();
  const info = svc.endpoints().find((e) => [e.name, ...e.aliases].includes(endpoint) || e.id === endpoint.toLowerCase());
  const held = info?.stream === "edge_logs" ? stats.edgeEntries : stats.functionRows;
  if (info && held === 0) process.stderr.write(`warning: ${info.name} reads ${info.stream}, and no ${info.stream === "edge_logs" ? "edge" : "function"} entries were read from the logs given\n`);
  if (unprojected) process.stderr.write(`warning: ${unprojected}\n`);
  if (options.save) {
    try {
      writeFileSync(options.save, svc.snapshot());
    } catch (e) {
      throw new InputError(`cannot write ${options.save}: ${e.code === "EACCES" ? "permission denied" : e.message}`);
    }
    process.stderr.write(`saved ${options.save} (open it with --open ${options.save})\n`);
  }
  const nowMs = nowFixed ?? resolveNow(svc, options.now);
  svc.setNow(nowMs);
  if (options.now === "latest") process.stderr.write(`now = ${new Date(nowMs).toISOString()} (the newest entry; --now changes it)\n`);
  const { body, warning } = svc.queryRaw(endpoint, options.params, KEY);
  if (warning) process.stderr.write(`warning: ${warning}\n`);
  const { result } = JSON.parse(body);
  const out = options.format === "csv" ? toCsv(result) : options.format === "table" ? toTable(result) : JSON.stringify({ result }, null, 2) + "\n";
  process.stdout.write(out);
  return 0;
}

// The exit code is set, not forced: process.exit() would end the process
// before a pipe had taken all of stdout (answers past 64 KiB were cut). A
// reader that stops early (`| head`) has all it wants: no error then.
process.stdout.on("error", (e) => {
  if (e.code === "EPIPE") process.exit(process.exitCode ?? 0);
  // Any other: the output could not be written (a full disk, say), one line and 1.
  process.stderr.write(`error: cannot write the output: ${e.message}\n`);
  process.exit(1);
});
main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (e) => {
    if (e instanceof UsageError) {
      process.stderr.write(`error: ${e.message} (log-endpoints --help shows the usage)\n`);
      process.exitCode = 2;
    } else if (e instanceof InputError) {
      process.stderr.write(`error: ${e.message}\n`);
      process.exitCode = 2;
    } else {
      process.stderr.write(`error: ${e && e.message ? e.message : e}\n`);
      process.exitCode = 1;
    }
  },
);
