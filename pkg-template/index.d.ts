// Typed front of the package. Every type comes from the Rust side: the shared
// ones through wasm-bindgen (log_endpoints.d.ts), each endpoint's parameters and
// rows generated from its module (endpoints.d.ts, by tools/src/typescript.rs).
import type {
  Catalog,
  Constants,
  EndpointInfo,
  FeedOptions,
  FeedReport,
  IngestReport,
  LogEndpointsOptions,
  QueryAnswer,
  RouteInfo,
  StoreStats,
  StreamName,
  WarmReport,
} from "./log_endpoints.js";
import type { EndpointAlias, EndpointName, EndpointParams, EndpointRows } from "./endpoints.js";

export type * from "./log_endpoints.js";
export type * from "./endpoints.js";

/** An endpoint's UUID (any other string is a type error: use the name for typed results). */
export type EndpointUuid = `${string}-${string}-${string}-${string}-${string}`;

/** A log batch: entry objects, JSON-array or NDJSON text, or its UTF-8 bytes. */
export type Batch = readonly object[] | string | Uint8Array;

export declare class LogEndpoints {
  constructor(options?: LogEndpointsOptions);
  ingest(stream: StreamName, batch: Batch): IngestReport;
  /** `length` bytes in the module's own memory for the host to read a batch into (a file's next bytes), for `ingestBuffer`: no copy into the module. The bytes stay from call to call (any past an earlier, shorter length are zero). A view is good until the next call into the module (its memory may grow, and a longer buffer may move): ask again, and never use an earlier view. `batchBuffer(0)` gives the memory back. Throws 400 naming `length` for anything but a whole number up to `maxBatchBytes`, 413 `batch_too_large` when the module cannot hold it. */
  batchBuffer(length: number): Uint8Array;
  /** `ingest`'s report for the first `length` bytes of the batch buffer (`batchBuffer`), which keeps all its bytes. Throws 400 naming `length` for anything but a whole number up to the buffer's length. */
  ingestBuffer(stream: StreamName, length: number): IngestReport;
  /** Throws (401/403) unless `apiKey` is one of `ingestKeys`; 503 `no_api_keys` when there are none. */
  authorizeIngest(apiKey?: string | null): void;
  query(endpoint: EndpointUuid | EndpointAlias, params: Record<string, string> | URLSearchParams | string, apiKey?: string): { result: unknown[] };
  /** Parameters as a query string or `URLSearchParams` are not checked by the compiler; the rows are typed. */
  query<E extends EndpointName>(endpoint: E, params: URLSearchParams | string, apiKey?: string): { result: EndpointRows[E][] };
  // Last, so a mistake in a typed call is reported against this overload.
  query<E extends EndpointName>(endpoint: E, params: EndpointParams[E], apiKey?: string): { result: EndpointRows[E][] };
  queryRaw(endpoint: EndpointName | EndpointUuid | EndpointAlias, params: Record<string, string> | URLSearchParams | string | object, apiKey?: string): QueryAnswer;
  /** A request path: `/api/endpoints/query/{name_or_uuid}` or `/v1/projects/{ref}/analytics/endpoints/{name}` (Supabase's Management API). */
  queryPath(path: string, params: Record<string, string> | URLSearchParams | string | object, apiKey?: string): QueryAnswer;
  /** What a request path is (throws 404 `not_found` for any other path, and 405 when `method` is given and the route does not take it). */
  static route(path: string, method?: string): RouteInfo;
  /** Whether bytes begin as a snapshot does (a saved analysis rather than a log file). */
  static isSnapshot(bytes: Uint8Array | ArrayBuffer): boolean;
  /** Epoch ms of a time as query parameters read one: ISO 8601 (no zone is UTC) or a number whose magnitude says its unit (s, ms, µs, ns); throws 400 naming `time`. */
  static parseTime(text: string): number;
  endpoints(): (EndpointInfo & { name: EndpointName; aliases: EndpointAlias[] })[];
  warmCache(): WarmReport;
  clearCache(): void;
  setNow(nowMs?: number | null): void;
  stats(): StoreStats;
  catalog(): Catalog;
  memoryBytes(): number;
  /** Newest entry time held, in epoch ms (reports and `catalog()` give µs), or undefined when empty. */
  newestTimestamp(): number | undefined;
  static constants(): Constants;
  /** The `limits.maxStoreBytes` a setting in MiB asks for (a whole number from 1 to 4095, as text); throws 400 `invalid_config` naming `setting` otherwise. */
  static storeBytesOfMiB(text: string, setting: string): number;
  /** The store as versioned, checksummed bytes; `fromSnapshot` reopens it (keys and cache are not in it). */
  snapshot(): Uint8Array;
  /** A service holding a snapshot's store; throws 400 `invalid_snapshot` for anything else. */
  static fromSnapshot(bytes: Uint8Array | ArrayBuffer, options?: LogEndpointsOptions): LogEndpoints;
  /** The bytes `snapshot()` returns, handed to `write(index, part)` in 1 MiB parts as they are written (part 0, which begins with the header, last); their length. Neither the engine nor the caller holds the whole snapshot. */
  snapshotParts(write: (index: number, part: Uint8Array) => void): number;
  /** As `fromSnapshot`, for a snapshot kept in pieces (`bytes` in all), each read as it comes (only a value straddling two is joined): a lazy iterable keeps one part in memory at a time. Rethrows what the iterable throws. */
  static fromSnapshotParts(parts: Iterable<Uint8Array>, bytes: number, options?: LogEndpointsOptions): LogEndpoints;
  /** From now on, full text blocks wait for seal jobs compressed by another instance of the module (`SealWorker` does it in Node); `false`: they are compressed as they fill, those waiting now. Answers are the same meanwhile, and once every job is back the store and its snapshot are those of a store that sealed in place. */
  deferSeals(on: boolean): void;
  /** The full text blocks not handed out yet, as seal jobs for `LogEndpoints.sealBlocks`; undefined when there are none. Given a `spare` buffer at least as long (such as the jobs' buffer a worker hands back once it has sealed them), the jobs are written at its start and a view of them is returned, so no new buffer is made: hand on the view (its buffer is `spare`'s, and longer), and leave `spare` alone until they are sealed. */
  takeSealJobs(spare?: Uint8Array | ArrayBuffer): Uint8Array | undefined;
  /** Compresses seal jobs (in any instance of the module): the sealed blocks for `installSealed`. */
  static sealBlocks(jobs: Uint8Array | ArrayBuffer): Uint8Array;
  /** Puts sealed blocks in place of their open text: how many (a block compressed here since is passed over). */
  installSealed(sealed: Uint8Array | ArrayBuffer): number;
  /** What reading a batch of `stream` here depends on (the stream, this store's limits), for `LogEndpoints.readBatch` in another instance of the module (`SealWorker.read` does it in Node). */
  readJob(stream: string): Uint8Array;
  /** Reads a batch as `ingest` reads it in the store `job` came from, in any instance of the module: its report and rows for that store's `ingestRead`. Throws as `ingest` would for the batch as a whole. */
  static readBatch(job: Uint8Array | ArrayBuffer, batch: Batch): Uint8Array;
  /** Appends the rows of a batch `readBatch` read, all or none (as `ingest`): its report. The store answers as had it read the batch itself. */
  ingestRead(read: Uint8Array | ArrayBuffer): IngestReport;
  free(): void;
}

/**
 * Node only (elsewhere its constructor throws, saying what to do instead):
 * compresses a service's full text blocks on a second thread while it
 * ingests. Call `pump()` after each `ingest` or `LogFeed` push, and await
 * `settled()` before saving or timing.
 */
export declare class SealWorker {
  constructor(service: LogEndpoints);
  /** Installs what the worker sealed, and hands it the blocks filled since. */
  pump(): void;
  /** Resolves once every block handed out is sealed and in place, and every batch read is appended. */
  settled(): Promise<void>;
  /** Reads a batch on the worker's thread as `ingest` reads it, then appends its rows here: `ingest`'s report, or its error. For batches with no text to compress (function rows): alternated with `ingest`, a second core reads every other batch. Once the worker has stopped or is closing, and for an array of entries, batches are read here; a batch the worker was reading when it stopped is lost with it (the read rejects with why). */
  read(stream: StreamName, batch: Batch): Promise<IngestReport>;
  /** Settles, then stops the worker; blocks filled later are compressed as they fill. */
  close(): Promise<void>;
  /** Why the worker stopped compressing (the service then compresses its blocks itself); null while it works, and after `close()` an Error saying it was closed. */
  readonly failed: Error | null;
}

/** A log file fed in pieces: framed, routed by stream and ingested in batches by the module. */
export declare class LogFeed {
  constructor(service: LogEndpoints, options?: FeedOptions);
  /** The next piece of the input: bytes (split at any byte) or text (split between characters, not inside a surrogate pair). */
  push(bytes: Uint8Array | string): void;
  finish(): FeedReport;
  /** `finish` for an input that broke off (a cut download, a read that failed or was stopped): the whole entries before the break are kept, the one it went through is left out. */
  finishCut(): FeedReport;
  readonly entries: number;
  readonly accepted: number;
  /** Entries refused so far (not those a full store left out). */
  readonly rejectedTotal: number;
  /** Why reading stopped (the store filled), once it has: `push` takes no more input. Null otherwise. */
  readonly storeFull: string | null;
  /** The rest of the input need not be given (`push` takes no more): the store filled, or its gzip data broke. `finish` says which. */
  readonly readsNoMore: boolean;
  /** What a reading of several files says of the `later` files it did not come to ("2 later files were not read"; "" for none). */
  static laterFilesNotRead(later: number): string;
  free(): void;
}

/**
 * Instantiates the wasm module. Needed once in browsers (it fetches
 * log_endpoints_bg.wasm beside the module unless given a source); a no-op
 * where import already did it (Node, Deno, Workers). Safe to call twice.
 */
export declare function init(source?: string | URL | Response | BufferSource | WebAssembly.Module): Promise<void>;

/** What a failed call throws. */
export interface LogEndpointsError extends Error {
  /** HTTP status, e.g. 400, 401, 403, 404 or 413 (the README's error table lists them all). */
  status: number;
  /** Stable machine-readable code, e.g. "missing_parameter". */
  code: string;
  /** The parameter the error is about, when it is about one. */
  parameter?: string;
  /** What is wrong with that parameter, in plain words (e.g. "project is required"). */
  problem?: string;
  /** The HTTP answer's headers besides Content-Type (Allow, Retry-After), as [name, value] pairs. */
  headers: [string, string][];
  /** The HTTP answer's body: {"error": {"code", "message"}}. */
  body: string;
}
