// Feeding log files into a LogEndpoints in pieces: text arrives in chunks (from
// a file stream, a fetch body, a gunzip stream), entries are routed to the
// edge or the function stream by their fields, and each stream is ingested in
// batches of about `batchBytes`. Used by the CLI and the browser page; works in
// every runtime (no Node or DOM APIs).

/** Fields only function (edge-function invocation) log entries carry. */
const FUNCTION_FIELDS = /"(function_id|project_ref|execution_time_ms)"\s*:/;

/** "function_edge_logs" when the entry's JSON text has function fields, else "edge_logs". */
export function detectStream(entryJson) {
  return FUNCTION_FIELDS.test(entryJson) ? "function_edge_logs" : "edge_logs";
}

export class LogBatcher {
  /**
   * @param {{ ingest(stream: string, batch: string): { accepted: number, rejectedTotal: number, rejected: { index: number, reason: string }[] } }} service
   * @param {{ stream?: string, batchBytes?: number, source?: string }} options
   *   stream: put every entry in this stream instead of detecting it per entry.
   */
  constructor(service, { stream, batchBytes = 8 << 20, source = "input" } = {}) {
    this.service = service;
    this.forcedStream = stream;
    this.batchBytes = batchBytes;
    this.source = source;
    this.pending = { edge_logs: [], function_edge_logs: [] };
    /** 1-based entry number (in the whole input) of each pending entry. */
    this.pendingNumbers = { edge_logs: [], function_edge_logs: [] };
    this.pendingBytes = { edge_logs: 0, function_edge_logs: 0 };
    this.carry = "";
    this.started = false;
    this.arrayText = null;
    /** Totals so far. */
    this.entries = 0;
    this.accepted = 0;
    this.rejected = 0;
    this.reasons = [];
  }

  /** Adds the next piece of text (any split, even mid-line). */
  push(text) {
    if (!this.started) {
      text = text.replace(/^\uFEFF/, "");
      if (text.trim() === "") return;
      this.started = true;
      // A JSON array is gathered whole and split once parsed.
      if (text.trimStart().startsWith("[")) this.arrayText = "";
    }
    if (this.arrayText !== null) {
      this.arrayText += text;
      return;
    }
    const lines = (this.carry + text).split("\n");
    this.carry = lines.pop();
    for (const line of lines) if (line.trim()) this.add(line);
  }

  /** Ingests everything still pending; throws when a JSON array does not parse. */
  finish() {
    if (this.arrayText !== null) {
      let entries;
      try {
        entries = JSON.parse(this.arrayText);
      } catch (e) {
        throw new SyntaxError(`${this.source} is not a valid JSON array (${e.message})`);
      }
      this.arrayText = null;
      for (const entry of Array.isArray(entries) ? entries : [entries]) this.add(JSON.stringify(entry));
    } else if (this.carry.trim()) {
      this.add(this.carry);
      this.carry = "";
    }
    this.flush("edge_logs");
    this.flush("function_edge_logs");
    return { entries: this.entries, accepted: this.accepted, rejected: this.rejected, reasons: this.reasons };
  }

  add(line) {
    const stream = this.forcedStream ? "edge_logs" : detectStream(line);
    this.pending[stream].push(line);
    this.pendingBytes[stream] += line.length;
    this.entries++;
    this.pendingNumbers[stream].push(this.entries);
    if (this.pendingBytes[stream] >= this.batchBytes) this.flush(stream);
  }

  flush(stream) {
    if (this.pending[stream].length === 0) return;
    const report = this.service.ingest(this.forcedStream ?? stream, this.pending[stream].join("\n"));
    this.accepted += report.accepted;
    this.rejected += report.rejectedTotal;
    // Reasons name the entry by its place in the whole input, not in this batch.
    for (const r of report.rejected) {
      if (this.reasons.length >= 5) break;
      this.reasons.push(`${this.source}: entry ${this.pendingNumbers[stream][r.index]}: ${r.reason.replace(/^line \d+: /, "")}`);
    }
    this.pending[stream] = [];
    this.pendingNumbers[stream] = [];
    this.pendingBytes[stream] = 0;
  }
}
