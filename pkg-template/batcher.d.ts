import type { IngestReport } from "./log_endpoints.js";

/** "function_edge_logs" when the entry's JSON text has function fields, else "edge_logs". */
export declare function detectStream(entryJson: string): "edge_logs" | "function_edge_logs";

export interface BatcherTotals { entries: number; accepted: number; rejected: number; reasons: string[] }

/** Feeds text arriving in pieces (JSON array or NDJSON) into a service, in batches per stream. */
export declare class LogBatcher {
  constructor(
    service: { ingest(stream: string, batch: string): IngestReport },
    options?: { stream?: string; batchBytes?: number; source?: string },
  );
  readonly entries: number;
  readonly accepted: number;
  readonly rejected: number;
  push(text: string): void;
  finish(): BatcherTotals;
}
