//! The JavaScript boundary, and the only module that knows about JS values: it
//! turns batches, parameters, requests and options into Rust, and results,
//! HTTP answers and `Error`s (with `status`, `code`, `headers` and `body`)
//! back into JS. It decides nothing; the README's "Using it" is its spec.

use std::cell::RefCell;
use std::rc::Rc;

use js_sys::{Array, Object, Reflect, Uint8Array, JSON};
use serde::{Deserialize, Serialize};
use wasm_bindgen::prelude::*;

use crate::auth::ApiKey;
use crate::cache::QueryAnswer;
use crate::error::{Error, ErrorReport};
use crate::feed::{LogFeed, DEFAULT_BATCH_BYTES};
use crate::http::{self, HttpAnswer, HttpRequest};
use crate::limits::{store_bytes_of_mib, Limits};
use crate::params::Params;
use crate::routes::Route;
use crate::service::{Config, LogEndpoints};
use crate::shard::{
    refusal_is_final, Delivery, DeliveryAnswer, Gather, KnownRegistrations, QueryPlan, Retention,
    Round, ShardDirectory, ShardQuery, SplitRoute, SplitRoutes,
};
use crate::store::block_storage::{BlockStorage, BlockStorageRef};
use crate::store::seal_jobs::JobsSink;
use crate::timestamp::{Micros, DAY};

// The shared types of the JS API. Each endpoint's parameter and row types are
// generated from its module into `endpoints.d.ts` (tools/src/typescript.rs);
// `pkg-template/index.d.ts` builds the typed `query` on both.
#[wasm_bindgen(typescript_custom_section)]
const API_TYPES: &str = r#"
export type StreamName = "edge_logs" | "cloudflare.logs.prod" | "function_edge_logs" | "deno-relay-logs";

export interface ApiKeyOption { key: string; endpoints?: string[]; projects?: string[] }
export interface LogEndpointsOptions {
  apiKeys?: (string | ApiKeyOption)[];
  /** Keys that may ingest (checked by `authorizeIngest`, for hosts that take batches over a network). */
  ingestKeys?: string[];
  /** Fixed clock, epoch milliseconds; the host clock when absent. */
  now?: number;
  limits?: { maxBatchBytes?: number; maxBatchEntries?: number; maxStoreBytes?: number; maxReportedRejections?: number; maxParamBytes?: number; maxRegexBytes?: number };
  /** Where sealed text blocks are kept outside the engine's memory: `put` stores a block under a numeric key (a throw keeps it in memory), `get` returns it. */
  blockStorage?: BlockStorage;
}
export interface BlockStorage {
  put(key: number, bytes: Uint8Array): unknown;
  get(key: number): Uint8Array | ArrayBuffer | null | undefined;
}
export interface Rejection { index: number; reason: string }
export interface IngestReport {
  accepted: number;
  rejected: Rejection[];
  rejectedTotal: number;
  /** Newest accepted timestamp, microseconds; null when nothing was accepted. */
  newestTimestamp: number | null;
}
export interface EndpointParameter {
  name: string;
  required: boolean;
  /** The values it takes; empty when it is free text. */
  values: string[];
  /** What a form should preselect. */
  default: string | null;
  example: string;
  meaning: string;
}
export interface EndpointInfo {
  name: string;
  /** Other names that address it (e.g. `functions.inv-stats`). */
  aliases: string[];
  /** Whether Supabase's Management API route serves it. */
  managementApi: boolean;
  id: string;
  summary: string;
  /** The log stream it reads. */
  stream: "edge_logs" | "function_edge_logs";
  /** The endpoint's row limit (Logflare's `max_limit`); its query may return fewer (logs.all: the newest 100). */
  maxRows: number;
  cacheSeconds: number | null;
  cacheWarmingSeconds: number | null;
  sandboxing: boolean;
  parameters: EndpointParameter[];
}
export interface FeedOptions {
  /** Put every entry in this stream instead of detecting it per entry. */
  stream?: StreamName;
  /** Names the input in rejection reasons. */
  source?: string;
  /** Size of one ingested batch (default 8 MiB). */
  batchBytes?: number;
  /** Go on with an input whose first entries were read before (a reading stopped there): they are counted, not kept again. */
  skipFirst?: number;
}
/** A finished feed: its entries, and what became of them (rejections by their 0-based place in the input, the first five listed). */
export interface FeedReport extends IngestReport {
  entries: number;
  /** Where and why the input stopped being whole, in words (gzip cut off, damaged or followed by other bytes, a JSON array that stops before its `]`, objects one after another cut inside one, `finishCut`): the whole entries before were read. Null when it was whole. */
  endsEarly: string | null;
  /** Why reading stopped early: the store filled (`limits.maxStoreBytes`); what was read is kept. Null otherwise. */
  storeFull: string | null;
}
export interface Constants {
  /** Longest retention of any tier, in days: older stored logs are never read. */
  retentionDays: number;
  /** Largest POST body of query parameters, in bytes. */
  paramsBodyBytes: number;
  /** Most calls one object of the edge deployment has in flight to others. */
  maxConcurrent: number;
  /** The bound on p95/p99 of a bucket whose times sit in several shards of a split project-day (relative). */
  sketchRelativeError: number;
  /** How long the edge deployment remembers a kept batch's key: a resend within it is not kept twice. */
  resendWindowMs: number;
  /** Largest part of a snapshot or stored batch, in bytes (a Durable Object's SQLite value is at most 2 MB). */
  partBytes: number;
  /** How often cached results fall due to be warmed (`warmCache`): the shortest warming interval of any endpoint, in ms. */
  warmEveryMs: number;
  /** Most bytes of a refused request's body read only to be dropped (keeping the connection open). */
  drainBytes: number;
  /** The wait before an ingest partition tries again a round that could not finish, in ms. */
  retryMs: number;
  /** How many rejections a report describes (all are counted): a host summing reports describes as many. */
  reportedReasons: number;
  /** Registrations a directory partition keeps as they came before folding them into its snapshot. */
  directoryLogRows: number;
  /** Traps a shard's wake may meet replaying its stored batches before it leaves the rest for a later wake. */
  maxTrapsPerWake: number;
}
export interface QueryAnswer {
  body: string;
  cache: "HIT" | "MISS" | null;
  maxAge: number | null;
  /** Set when the call was read differently from how it was sent (e.g. `sql` ignored): the worker's X-Endpoint-Warning. */
  warning: string | null;
  /** How many shards a sharded deployment read (X-Shards). */
  shards?: number;
}
/** An answer as HTTP: what the edge worker sends. */
export interface HttpAnswer { status: number; headers: [string, string][]; body: string }
/** What a host passes of an HTTP request: the core reads the key, the parameters and an ingest's source from it. */
export interface HttpRequest {
  method: string;
  path: string;
  /** The query string, with or without `?`. */
  query?: string;
  apiKey?: string | null;
  authorization?: string | null;
  /** The `X-Source` header (Logflare's ingest API). */
  source?: string | null;
  /** The `X-Collection` header (Logflare's other name of `X-Source`). */
  collection?: string | null;
  /** The `Content-Type` header (Logflare's ingest API reads a body sent as `application/json` as one JSON value). */
  contentType?: string | null;
  /** The `Idempotency-Key` header. */
  idempotencyKey?: string | null;
  /** A POST body of parameters (a JSON object), as its bytes or as text. */
  body?: Uint8Array | string | null;
}
/** What an object that keeps batches finds of a batch's key: kept now; the same batch, kept before (acknowledged again with `X-Duplicate: true`, not kept twice); other content under an `Idempotency-Key` kept before (422). */
export type Seen = "new" | "duplicate" | "keyReused";
/** A batch read and made ready to keep (`prepareIngest`). */
export interface PreparedBatch {
  /** What recognises the batch when it is sent again, the ingest partition that keeps it, and its content's hash (to tell a reused `Idempotency-Key`). */
  key: { key: string; partition: string; content: string };
  report: IngestReport;
  /** How many shards its entries go to (0: nothing to keep). */
  shards: number;
  /** The answer to send, by what the object that keeps the batch finds of its key (`LogEndpoints.batchSeen`): `answers.new` when nothing is kept. */
  answers: Record<Seen, HttpAnswer>;
  /** What is kept: the batch's rows split by shard (`ingestRecord` keeps it in a store). */
  record: Uint8Array;
}
export type RouteInfo =
  | { kind: "query" | "management" | "health" | "ingest-status"; methods: string[] }
  | { kind: "ingest"; methods: string[] };
export interface StoreStats {
  edgeEntries: number;
  functionRows: number;
  /** Entries of other sources (Logflare's ingest API), by source name. */
  otherSources: Record<string, number>;
  /** Bytes the store takes in memory (what `limits.maxStoreBytes` bounds). */
  storeBytes: number;
  /** Bytes of sealed text blocks in the `blockStorage` option's storage. */
  storageBytes: number;
  /** Full text blocks waiting for their seal job (`deferSeals`), read as open text meanwhile. */
  unsealedBlocks: number;
  cachedResults: number;
}
export interface WarmReport { refreshed: number; kept: number }
export interface Retention { cutoff: number; firstKeptDay: string }
export interface Catalog {
  edgeProjects: string[];
  functionProjects: string[];
  functions: string[];
  /** Microseconds since the Unix epoch; null when empty. */
  oldestTimestamp: number | null;
  newestTimestamp: number | null;
  /** A warning when a stream holds entries none of which names a project (no endpoint finds them); null otherwise. */
  unprojected: string | null;
}
"#;

/// A core error becomes a JS `Error` carrying its HTTP `status`, stable
/// `code`, the parameter it is about, and the answer's `headers` and `body`.
impl From<Error> for JsValue {
    fn from(error: Error) -> JsValue {
        let js = js_sys::Error::new(&error.to_string());
        js.set_name("LogEndpointsError");
        let answer = HttpAnswer::from(&error);
        let set = |name: &str, value: JsValue| {
            let _ = Reflect::set(&js, &name.into(), &value);
        };
        set("status", JsValue::from(error.status()));
        set("code", JsValue::from(error.code()));
        if let Some(parameter) = error.parameter() {
            set("parameter", JsValue::from(parameter));
        }
        if let Some(problem) = error.parameter_problem() {
            set("problem", JsValue::from(problem));
        }
        set("headers", to_js(&answer.headers).unwrap_or(JsValue::NULL));
        set("body", JsValue::from(answer.body));
        js.into()
    }
}

fn to_js<T: Serialize>(value: &T) -> Result<JsValue, JsValue> {
    value
        .serialize(&serde_wasm_bindgen::Serializer::json_compatible())
        .map_err(|e| js_sys::Error::new(&e.to_string()).into())
}

/// JS's `Number.MAX_SAFE_INTEGER`: the largest whole number a JS number holds exactly.
const MAX_SAFE_INTEGER: f64 = 9_007_199_254_740_991.0;

/// A JS value as a Rust one; `error` says what was expected.
fn from_js<T: serde::de::DeserializeOwned>(
    value: JsValue,
    error: impl FnOnce(String) -> Error,
) -> Result<T, Error> {
    // Its text is a JS error's (`Error: …`); the caller's error says the rest.
    serde_wasm_bindgen::from_value(value).map_err(|e| {
        let text = e.to_string();
        error(text.strip_prefix("Error: ").unwrap_or(&text).to_owned())
    })
}

/// JS options as a Rust value (absent: the defaults); `what` says what was expected.
fn options_from<T: serde::de::DeserializeOwned + Default>(
    value: JsValue,
    what: &str,
) -> Result<T, Error> {
    if value.is_undefined() || value.is_null() {
        return Ok(T::default());
    }
    from_js(value, |e| Error::InvalidConfig {
        reason: format!("{e} (expected {what})"),
    })
}

/// The field names `T`'s derived `Deserialize` reads (its JS names, after
/// `rename_all`): a struct names them when it asks to be deserialized, and
/// this deserializer answers with them.
fn field_names<'de, T: Deserialize<'de>>() -> &'static [&'static str] {
    #[derive(Debug)]
    struct Fields(&'static [&'static str]);
    impl std::fmt::Display for Fields {
        fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("field names")
        }
    }
    impl std::error::Error for Fields {}
    impl serde::de::Error for Fields {
        fn custom<M: std::fmt::Display>(_: M) -> Fields {
            Fields(&[])
        }
    }
    struct AskForFields;
    impl<'de> serde::Deserializer<'de> for AskForFields {
        type Error = Fields;
        fn deserialize_any<V: serde::de::Visitor<'de>>(self, _: V) -> Result<V::Value, Fields> {
            Err(Fields(&[]))
        }
        fn deserialize_struct<V: serde::de::Visitor<'de>>(
            self,
            _: &'static str,
            fields: &'static [&'static str],
            _: V,
        ) -> Result<V::Value, Fields> {
            Err(Fields(fields))
        }
        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes
            byte_buf option unit unit_struct newtype_struct seq tuple tuple_struct map
            enum identifier ignored_any
        }
    }
    match T::deserialize(AskForFields) {
        Err(Fields(fields)) => fields,
        Ok(_) => &[],
    }
}

/// Refuses an options object with a key `T` does not read (nor `also`): a
/// misspelt option (`apikeys`) would otherwise be ignored, and every call
/// then fail for another reason. serde-wasm-bindgen reads a struct's fields
/// by name, so `deny_unknown_fields` never sees the others.
fn refuse_unknown_options<'de, T: Deserialize<'de>>(
    value: &JsValue,
    also: &[&str],
    what: &str,
) -> Result<(), Error> {
    let Some(object) = value.dyn_ref::<Object>().filter(|_| is_plain_object(value)) else {
        return Ok(());
    };
    let known = field_names::<T>();
    let unknown = Object::keys(object)
        .iter()
        .filter_map(|key| key.as_string())
        .find(|key| !known.contains(&key.as_str()) && !also.contains(&key.as_str()));
    match unknown {
        Some(key) => Err(Error::InvalidConfig {
            reason: format!(
                "unknown {what} `{key}` (known: {})",
                known
                    .iter()
                    .chain(also)
                    .copied()
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }),
        None => Ok(()),
    }
}

/// The key a request (`HttpRequest`, as the worker reads it) presents.
fn presented_key_of(request: JsValue) -> Result<Option<String>, Error> {
    let request: HttpRequest = from_js(
        request,
        bad_answer("{ method, path, apiKey?, authorization? }"),
    )?;
    Ok(request.key())
}

/// What another object sent back cannot be read: a fault between objects.
fn bad_answer(what: &'static str) -> impl FnOnce(String) -> Error {
    move |e| Error::BadShardAnswer {
        reason: format!("{e} (expected {what})"),
    }
}

#[derive(Deserialize)]
#[serde(untagged)]
enum KeyOption {
    Plain(String),
    Restricted(RestrictedKey),
}

/// A query key with what it may read (absent: everything).
#[derive(Deserialize)]
struct RestrictedKey {
    key: String,
    endpoints: Option<Vec<String>>,
    projects: Option<Vec<String>>,
}

const OPTIONS_SHAPE: &str =
    "{ apiKeys: [\"key\" | { key, endpoints?, projects? }], ingestKeys?, now?: epoch ms, limits?, blockStorage?: { put(key, bytes), get(key) } }";

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
struct Options {
    api_keys: Vec<KeyOption>,
    ingest_keys: Vec<String>,
    now: Option<f64>,
    limits: Limits,
}

/// The service's config and fixed clock from JS options.
fn config_of(options: JsValue) -> Result<(Config, Option<f64>), Error> {
    refuse_unknown_options::<Options>(&options, &["blockStorage"], "option")?;
    if options.is_object() {
        let limits = Reflect::get(&options, &"limits".into()).unwrap_or(JsValue::UNDEFINED);
        refuse_unknown_options::<Limits>(&limits, &[], "limit")?;
        for keys in ["apiKeys", "ingestKeys"] {
            let value = Reflect::get(&options, &keys.into()).unwrap_or(JsValue::UNDEFINED);
            if !value.is_undefined() && !Array::is_array(&value) {
                return Err(Error::InvalidConfig {
                    reason: format!("{keys} must be an array of keys (expected {OPTIONS_SHAPE})"),
                });
            }
        }
        // A misspelt restriction would leave the key free to read everything.
        let api_keys = Reflect::get(&options, &"apiKeys".into()).unwrap_or(JsValue::UNDEFINED);
        if let Some(keys) = api_keys.dyn_ref::<Array>() {
            for key in keys.iter() {
                refuse_unknown_options::<RestrictedKey>(&key, &[], "field of a key in apiKeys")?;
            }
        }
        let now = Reflect::get(&options, &"now".into()).unwrap_or(JsValue::UNDEFINED);
        if !(now.is_undefined() || now.is_null() || now.as_f64().is_some_and(f64::is_finite)) {
            return Err(Error::InvalidConfig {
                reason: "now must be a time in epoch milliseconds (a number; `LogEndpoints.parseTime` reads text)".into(),
            });
        }
    }
    let block_storage = JsBlockStorage::of(&options)?;
    let options: Options = options_from(options, OPTIONS_SHAPE)?;
    let fixed_now_ms = options.now;
    let block_storage = block_storage.map(|storage| BlockStorageRef(std::sync::Arc::new(storage)));
    Ok((config_from(options, block_storage)?, fixed_now_ms))
}

/// The host's storage of sealed text blocks (`options.blockStorage`): `put`
/// keeps a block's bytes under a numeric key (a throw: the block stays in
/// memory), `get` gives them back (a `Uint8Array` or `ArrayBuffer`;
/// anything else, or a throw: the block is missing).
struct JsBlockStorage {
    target: JsValue,
    put: js_sys::Function,
    get: js_sys::Function,
}

impl JsBlockStorage {
    fn of(options: &JsValue) -> Result<Option<JsBlockStorage>, Error> {
        if !options.is_object() {
            return Ok(None);
        }
        let target = Reflect::get(options, &"blockStorage".into()).unwrap_or(JsValue::UNDEFINED);
        if target.is_undefined() || target.is_null() {
            return Ok(None);
        }
        let function = |name: &str| {
            Reflect::get(&target, &name.into())
                .ok()
                .and_then(|f| f.dyn_into::<js_sys::Function>().ok())
        };
        match (function("put"), function("get")) {
            (Some(put), Some(get)) => Ok(Some(JsBlockStorage { target, put, get })),
            _ => Err(Error::InvalidConfig {
                reason: "blockStorage must have put(key, bytes) and get(key) functions".into(),
            }),
        }
    }
}

// SAFETY: this module is built for wasm32-unknown-unknown, whose build
// without the `atomics` feature runs on one thread, so the JS values are never
// reached from another; a threaded build does not compile these.
#[cfg(not(target_feature = "atomics"))]
unsafe impl Send for JsBlockStorage {}
#[cfg(not(target_feature = "atomics"))]
unsafe impl Sync for JsBlockStorage {}

impl BlockStorage for JsBlockStorage {
    fn put(&self, key: u64, bytes: &[u8]) -> bool {
        let key = JsValue::from_f64(key as f64);
        self.put
            .call2(&self.target, &key, &Uint8Array::from(bytes))
            .is_ok()
    }

    fn get(&self, key: u64) -> Option<Vec<u8>> {
        let key = JsValue::from_f64(key as f64);
        let value = self.get.call1(&self.target, &key).ok()?;
        byte_view(&value).map(|bytes| bytes.to_vec())
    }
}

fn config_from(options: Options, block_storage: Option<BlockStorageRef>) -> Result<Config, Error> {
    let query_keys = options.api_keys.into_iter().map(|k| match k {
        KeyOption::Plain(secret) => ApiKey::new(secret),
        KeyOption::Restricted(RestrictedKey {
            key,
            endpoints,
            projects,
        }) => {
            let mut api_key = ApiKey::new(key)?;
            if let Some(endpoints) = endpoints {
                api_key = api_key.only_endpoints(&endpoints)?;
            }
            if let Some(projects) = projects {
                api_key = api_key.only_projects(&projects);
            }
            Ok(api_key)
        }
    });
    let ingest_keys = options.ingest_keys.into_iter().map(ApiKey::ingest);
    Ok(Config {
        api_keys: query_keys
            .chain(ingest_keys)
            .collect::<Result<Vec<_>, _>>()?,
        limits: options.limits,
        block_storage,
    })
}

/// A `Uint8Array` (a Node `Buffer`), or a view of a whole `ArrayBuffer`
/// (wasm-bindgen would read an `ArrayBuffer` as no bytes); else `None`.
fn byte_view(value: &JsValue) -> Option<Uint8Array> {
    match value.dyn_ref::<js_sys::ArrayBuffer>() {
        Some(buffer) => Some(Uint8Array::new(buffer)),
        None => value.dyn_ref::<Uint8Array>().cloned(),
    }
}

/// A `Uint8Array`'s or an `ArrayBuffer`'s bytes (`byte_view`); else 400
/// naming `name`.
fn bytes_of(value: &JsValue, name: &str) -> Result<Vec<u8>, Error> {
    let bytes = byte_view(value)
        .ok_or_else(|| Error::invalid(name, "must be a Uint8Array or an ArrayBuffer"))?;
    copied_in(&bytes, name)
}

/// The module's linear memory as it is now (an `ArrayBuffer`, replaced
/// whenever the memory grows).
fn module_memory() -> js_sys::ArrayBuffer {
    wasm_bindgen::memory()
        .unchecked_into::<js_sys::WebAssembly::Memory>()
        .buffer()
        .unchecked_into()
}

/// A host's buffer written from its start, each piece copied straight from
/// the module's memory (seal jobs: a block's text is copied out once).
struct HostBytes {
    out: Uint8Array,
    at: u32,
}

impl JobsSink for HostBytes {
    fn put(&mut self, bytes: &[u8]) {
        // Read again for each piece: writing a frame may grow the memory.
        let from = Uint8Array::new_with_byte_offset_and_length(
            &module_memory(),
            bytes.as_ptr() as u32,
            bytes.len() as u32,
        );
        self.out.set(&from, self.at);
        self.at += bytes.len() as u32;
    }
}

/// A `Uint8Array`'s bytes, copied into the module. A view of the module's
/// own memory (a `batchBuffer` view) detaches when the copy's allocation
/// grows that memory, and js-sys' `to_vec` then keeps bytes it never
/// wrote: such a view's copy is allocated first and its length read again.
/// A view that moved is a 400 naming `name`.
fn copied_in(bytes: &Uint8Array, name: &str) -> Result<Vec<u8>, Error> {
    if !js_sys::Object::is(&bytes.buffer(), &module_memory()) {
        return Ok(bytes.to_vec());
    }
    let len = bytes.length();
    let mut copy = vec![0; len as usize];
    if bytes.length() != len {
        return Err(Error::invalid(
            name,
            "is a view of the module's own memory that moved as it was read: hand a batchBuffer view to ingestBuffer",
        ));
    }
    bytes.copy_to(&mut copy);
    Ok(copy)
}

/// A whole number of bytes (a JS number up to `u32::MAX`); else 400 naming
/// `length`. Taken as a `JsValue`: wasm-bindgen's own conversion wraps
/// numbers past 32 bits and reads `NaN` or `undefined` as 0.
fn length_arg(value: &JsValue) -> Result<usize, Error> {
    match value.as_f64() {
        Some(n) if n >= 0.0 && n <= f64::from(u32::MAX) && n.fract() == 0.0 => Ok(n as usize),
        _ => Err(Error::invalid(
            "length",
            "must be a whole number of bytes, at most 4294967295",
        )),
    }
}

/// Text as its UTF-8 bytes, or a `Uint8Array`'s bytes (`copied_in`, naming
/// `name`); `None` for anything else.
fn text_or_bytes(value: &JsValue, name: &str) -> Option<Result<Vec<u8>, Error>> {
    match value.dyn_ref::<Uint8Array>() {
        Some(bytes) => Some(copied_in(bytes, name)),
        None => value.as_string().map(|text| Ok(text.into_bytes())),
    }
}

/// A batch as UTF-8 bytes: an array of entries, a JSON/NDJSON string, or a `Uint8Array` of either.
fn batch_bytes(batch: &JsValue) -> Result<Vec<u8>, Error> {
    if let Some(bytes) = text_or_bytes(batch, "batch") {
        return bytes;
    }
    if Array::is_array(batch) {
        let text = JSON::stringify(batch).map_err(|e| Error::UnreadableBatch {
            reason: format!(
                "the array cannot be written as JSON ({})",
                e.dyn_ref::<js_sys::Error>()
                    .map(|e| String::from(e.message()))
                    .unwrap_or_default()
            ),
        })?;
        return Ok(String::from(text).into_bytes());
    }
    Err(Error::UnreadableBatch {
        reason: "a batch must be an array of entries, a JSON or NDJSON string, or a Uint8Array"
            .into(),
    })
}

/// A string argument of the JS API (an endpoint, a stream, a path, a key):
/// anything else is a 400 naming it. Taken as a `JsValue`: wasm-bindgen's own
/// string conversion reads a number's missing length and traps the engine.
fn text_arg(value: &JsValue, name: &str) -> Result<String, Error> {
    value
        .as_string()
        .ok_or_else(|| Error::invalid(name, "must be a string"))
}

/// `text_arg` for an argument that may be left out (`undefined` or `null`).
fn optional_text_arg(value: &JsValue, name: &str) -> Result<Option<String>, Error> {
    match value.is_undefined() || value.is_null() {
        true => Ok(None),
        false => text_arg(value, name).map(Some),
    }
}

fn param_value(name: &str, value: &JsValue) -> Result<Option<String>, Error> {
    if value.is_null() || value.is_undefined() {
        return Ok(None);
    }
    if let Some(s) = value.as_string() {
        return Ok(Some(s));
    }
    if let Some(n) = value.as_f64() {
        // Rust prints integral floats without ".0", as JS's String(n) does.
        return Ok(Some(n.to_string()));
    }
    if let Some(b) = value.as_bool() {
        return Ok(Some(b.to_string()));
    }
    Err(Error::invalid(name, "must be a string"))
}

thread_local! {
    static OBJECT_PROTOTYPE: Object = Object::get_prototype_of(&Object::new());
}

/// Whether `value` is an object literal's kind (its prototype is
/// `Object.prototype`): one call, where asking its constructor's name
/// passes two strings in and one out (a third of a cached answer's 3 µs
/// through `queryRaw`, measured in Node).
fn is_plain_object(value: &JsValue) -> bool {
    value.is_object()
        && OBJECT_PROTOTYPE.with(|prototype| {
            let own: JsValue = Object::get_prototype_of(value).into();
            own == *AsRef::<JsValue>::as_ref(prototype)
        })
}

/// Parameters from a plain object, a `URLSearchParams` or a query string.
fn params_from(value: &JsValue) -> Result<Params, Error> {
    if value.is_null() || value.is_undefined() {
        return Ok(Params::new());
    }
    if let Some(query) = value.as_string() {
        return Params::parse_query_string(&query);
    }
    let is_search_params = !is_plain_object(value)
        && Reflect::get(value, &"constructor".into())
            .ok()
            .and_then(|c| Reflect::get(&c, &"name".into()).ok())
            .and_then(|n| n.as_string())
            .is_some_and(|n| n == "URLSearchParams");
    if is_search_params {
        let text = String::from(value.unchecked_ref::<Object>().to_string());
        return Params::parse_query_string(&text);
    }
    let Some(object) = value.dyn_ref::<Object>() else {
        return Err(Error::invalid(
            "params",
            "must be an object, a URLSearchParams or a query string",
        ));
    };
    let mut params = Params::new();
    for pair in Object::entries(object).iter() {
        let pair: Array = pair.unchecked_into();
        let name = pair.get(0).as_string().unwrap_or_default();
        if let Some(v) = param_value(&name, &pair.get(1))? {
            params.push(name, v)?;
        }
    }
    Ok(params)
}

/// A request as the host passes it, with the parameters it carries.
fn request_from(value: JsValue) -> Result<(HttpRequest, Params), Error> {
    let body = match js_sys::Reflect::get(&value, &"body".into()) {
        Ok(body) if body.is_undefined() || body.is_null() => None,
        Ok(body) => Some(text_or_bytes(&body, "params").ok_or_else(|| {
            Error::invalid("params", "a POST body must be text or a Uint8Array")
        })??),
        Err(_) => None,
    };
    let mut request: HttpRequest = from_js(value, |e| {
        Error::InvalidConfig {
        reason: format!(
            "{e} (expected {{ method, path, query?, apiKey?, authorization?, source?, collection?, contentType?, idempotencyKey?, body? }})"
        ),
    }
    })?;
    request.body = body;
    let params = request.params()?;
    Ok((request, params))
}

/// A partition's routes, as JS holds them (`undefined`: none).
fn routes_from(value: JsValue) -> Result<SplitRoutes, Error> {
    if value.is_undefined() || value.is_null() {
        return Ok(SplitRoutes::default());
    }
    let routes: Vec<SplitRoute> = from_js(value, |e| Error::InvalidConfig {
        reason: format!("{e} (expected routes [{{ projectKey, day, split }}])"),
    })?;
    Ok(SplitRoutes::new(routes))
}

fn micros_of(ms: f64) -> Micros {
    (ms * 1000.0).floor() as Micros
}

/// The service of the README's "npm package", as a JS class. The service
/// sits behind an `Rc<RefCell>` so that a `LogFeed` or a `ShardQuery` can
/// use it across calls.
#[wasm_bindgen(js_name = LogEndpoints)]
pub struct JsLogEndpoints {
    inner: Rc<RefCell<LogEndpoints>>,
    fixed_now_ms: Option<f64>,
    /// The bytes `batchBuffer` lends the host to read a batch into, in the
    /// module's own memory, and `ingestBuffer` ingests.
    batch_buffer: Vec<u8>,
}

#[derive(Serialize)]
struct RouteInfo {
    kind: &'static str,
    methods: &'static [&'static str],
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Constants {
    retention_days: i64,
    params_body_bytes: usize,
    max_concurrent: usize,
    sketch_relative_error: f64,
    resend_window_ms: i64,
    part_bytes: usize,
    warm_every_ms: u64,
    drain_bytes: usize,
    retry_ms: u32,
    reported_reasons: usize,
    directory_log_rows: usize,
    max_traps_per_wake: usize,
}

impl JsLogEndpoints {
    fn holding(service: LogEndpoints, fixed_now_ms: Option<f64>) -> JsLogEndpoints {
        JsLogEndpoints {
            inner: Rc::new(RefCell::new(service)),
            fixed_now_ms,
            batch_buffer: Vec::new(),
        }
    }
}

#[wasm_bindgen(js_class = LogEndpoints)]
impl JsLogEndpoints {
    /// `new LogEndpoints({ apiKeys, ingestKeys?, now?, limits? })`.
    #[wasm_bindgen(constructor)]
    pub fn new(options: JsValue) -> Result<JsLogEndpoints, JsValue> {
        let (config, fixed_now_ms) = config_of(options)?;
        Ok(JsLogEndpoints::holding(
            LogEndpoints::new(config),
            fixed_now_ms,
        ))
    }

    /// `LogEndpoints.fromSnapshot(bytes, options)`: a service holding the store
    /// `snapshot()` wrote, with these options' keys, clock and limits. Throws
    /// 400 `invalid_snapshot` for bytes that are not a whole snapshot.
    #[wasm_bindgen(js_name = fromSnapshot)]
    pub fn from_snapshot(bytes: JsValue, options: JsValue) -> Result<JsLogEndpoints, JsValue> {
        let bytes = bytes_of(&bytes, "bytes")?;
        let (config, fixed_now_ms) = config_of(options)?;
        let service = LogEndpoints::from_snapshot(&bytes, config)?;
        Ok(JsLogEndpoints::holding(service, fixed_now_ms))
    }

    /// `LogEndpoints.fromSnapshotParts(parts, bytes, options)`: as
    /// `fromSnapshot`, for a snapshot kept in pieces (an iterable of
    /// `Uint8Array`s, `bytes` in all, such as `snapshotParts` wrote), each
    /// read as it comes and then dropped (only a value straddling two is
    /// joined): the engine's memory holds the store and about a part, and a
    /// lazy iterable (a storage cursor) keeps the host's to one part too.
    /// Throws 400 `invalid_snapshot` when the parts do not hold exactly
    /// `bytes` of a snapshot, and again what the iterable throws.
    #[wasm_bindgen(js_name = fromSnapshotParts)]
    pub fn from_snapshot_parts(
        parts: JsValue,
        bytes: usize,
        options: JsValue,
    ) -> Result<JsLogEndpoints, JsValue> {
        let (config, fixed_now_ms) = config_of(options)?;
        let parts =
            js_sys::try_iter(&parts)
                .ok()
                .flatten()
                .ok_or_else(|| Error::InvalidSnapshot {
                    reason: "its parts are not an iterable of Uint8Arrays".into(),
                })?;
        // What the iterable throws (a storage error) is not the snapshot's
        // fault: it ends the parts and is thrown again as it was.
        let mut thrown = None;
        let restored = {
            let mut left = bytes;
            let parts = parts.map_while(|part| match part {
                Err(e) => {
                    thrown = Some(e);
                    None
                }
                Ok(part) => Some(match part.dyn_into::<Uint8Array>() {
                    Ok(part) if part.length() as usize > left => {
                        Err(format!("its parts hold more than {bytes} bytes"))
                    }
                    Ok(part) => {
                        left -= part.length() as usize;
                        Ok(part.to_vec())
                    }
                    Err(other) => Err(format!(
                        "a part is not a Uint8Array but {}",
                        describe_js(&other)
                    )),
                }),
            });
            LogEndpoints::from_snapshot_parts(parts, bytes, config)
        };
        if let Some(e) = thrown {
            return Err(e);
        }
        let service = restored?;
        Ok(JsLogEndpoints::holding(service, fixed_now_ms))
    }

    /// `parseTime(text)` → epoch ms of a time read as query parameters read
    /// one: ISO 8601 (no zone is UTC) or a number whose magnitude says its
    /// unit (s, ms, µs, ns). Throws 400 naming `time` for anything else.
    #[wasm_bindgen(js_name = parseTime)]
    pub fn parse_time(text: JsValue) -> Result<f64, JsValue> {
        let text = text_arg(&text, "time")?;
        let us =
            crate::timestamp::parse_iso(&text).map_err(|reason| Error::invalid("time", reason))?;
        Ok(us as f64 / 1000.0)
    }

    /// Whether bytes begin as a snapshot does (to tell a saved analysis from a log file).
    #[wasm_bindgen(js_name = isSnapshot)]
    pub fn is_snapshot(bytes: JsValue) -> Result<bool, JsValue> {
        Ok(LogEndpoints::is_snapshot(&bytes_of(&bytes, "bytes")?))
    }

    /// The store as versioned, checksummed bytes (a `Uint8Array`), for
    /// `LogEndpoints.fromSnapshot`; keys and the result cache are not in it.
    pub fn snapshot(&self) -> Vec<u8> {
        self.inner.borrow().snapshot()
    }

    /// `snapshotParts(write)` → the snapshot's length: the bytes `snapshot()`
    /// returns, handed to `write(index, part)` in parts of 1 MiB as they are
    /// written (part 0, which begins with the header, last), so neither the
    /// engine nor the host holds the whole snapshot. Each part is a fresh
    /// `Uint8Array` of its own buffer. Rethrows what `write` throws (later
    /// parts are then not handed on).
    #[wasm_bindgen(js_name = snapshotParts)]
    pub fn snapshot_parts(&self, write: &js_sys::Function) -> Result<f64, JsValue> {
        let mut thrown = None;
        let bytes = self.inner.borrow().snapshot_parts(&mut |index, part| {
            if thrown.is_none() {
                let part = Uint8Array::from(part);
                if let Err(e) = write.call2(&JsValue::NULL, &JsValue::from(index as f64), &part) {
                    thrown = Some(e);
                }
            }
        });
        match thrown {
            Some(e) => Err(e),
            None => Ok(bytes as f64),
        }
    }

    fn now_micros(&self) -> Micros {
        micros_of(self.fixed_now_ms.unwrap_or_else(js_sys::Date::now))
    }

    /// Sets (a number, epoch ms) or clears (`null`) the fixed clock.
    #[wasm_bindgen(js_name = setNow)]
    pub fn set_now(&mut self, now_ms: JsValue) -> Result<(), JsValue> {
        self.fixed_now_ms = match now_ms.as_f64() {
            Some(ms) if ms.is_finite() => Some(ms),
            _ if now_ms.is_undefined() || now_ms.is_null() => None,
            _ => Err(Error::invalid(
                "nowMs",
                "must be a number (epoch ms) or null",
            ))?,
        };
        Ok(())
    }

    /// `ingest(stream, batch)` → `{ accepted, rejected: [{ index, reason }], rejectedTotal, newestTimestamp }`.
    pub fn ingest(&mut self, stream: JsValue, batch: JsValue) -> Result<JsValue, JsValue> {
        let stream = text_arg(&stream, "stream")?;
        let bytes = batch_bytes(&batch)?;
        let report = self.inner.borrow_mut().ingest(&stream, &bytes)?;
        to_js(&report)
    }

    /// `batchBuffer(length)` → a `Uint8Array` of `length` bytes in the
    /// module's own memory, for the host to read a batch into (a file's
    /// next bytes) and hand to `ingestBuffer` without a copy into the
    /// module. The bytes stay from call to call (any past an earlier,
    /// shorter length are zero). A view is good until the next call into
    /// the module: its memory may grow (the view's length then reads 0), and
    /// a longer buffer may move, so ask again and never use an earlier view.
    /// `batchBuffer(0)` gives the buffer's memory back. Throws 400 naming
    /// `length` for anything but a whole number up to the `maxBatchBytes`
    /// limit, and 413 `batch_too_large` when the module cannot hold it.
    #[wasm_bindgen(js_name = batchBuffer)]
    pub fn batch_buffer(&mut self, length: JsValue) -> Result<Uint8Array, JsValue> {
        let length = length_arg(&length)?;
        let limit = self.inner.borrow().limits().max_batch_bytes;
        if length > limit {
            Err(Error::invalid(
                "length",
                format!("is {length} bytes, more than the limit of {limit} bytes (maxBatchBytes)"),
            ))?;
        }
        let buffer = &mut self.batch_buffer;
        if length == 0 {
            *buffer = Vec::new();
        }
        buffer
            .try_reserve_exact(length.saturating_sub(buffer.len()))
            .map_err(|_| Error::BatchTooLarge {
                reason: format!("a batch buffer of {length} bytes does not fit in the module's memory; read smaller batches"),
            })?;
        buffer.resize(length, 0);
        // A wasm32 address and length fit 32 bits.
        Ok(Uint8Array::new_with_byte_offset_and_length(
            &module_memory(),
            buffer.as_ptr() as u32,
            length as u32,
        ))
    }

    /// `ingestBuffer(stream, length)` → `ingest(stream, batch)`'s report for
    /// the first `length` bytes of the batch buffer (`batchBuffer`), which
    /// keeps all its bytes. Throws 400 naming `length` for anything but a
    /// whole number up to the buffer's length.
    #[wasm_bindgen(js_name = ingestBuffer)]
    pub fn ingest_buffer(&mut self, stream: JsValue, length: JsValue) -> Result<JsValue, JsValue> {
        let stream = text_arg(&stream, "stream")?;
        let length = length_arg(&length)?;
        let held = self.batch_buffer.len();
        let batch = self.batch_buffer.get(..length).ok_or_else(|| {
            Error::invalid(
                "length",
                format!("is {length} bytes, past the batch buffer's {held} (batchBuffer)"),
            )
        })?;
        let report = self.inner.borrow_mut().ingest(&stream, batch)?;
        to_js(&report)
    }

    /// `splitByShard(stream, batch)` → `{ parts: [{ shard, group, day,
    /// stream, body, entries, projects: [{ projectKey, urlBits }] }], report }`:
    /// the batch's entries grouped by shard (project group and UTC day; each
    /// part's `body` a JSON array of its `entries` as they arrived, `urlBits`
    /// the trigram bits of each project's request URLs), read as `ingest`
    /// would read them, but not kept; `report` lists the entries refused.
    #[wasm_bindgen(js_name = splitByShard)]
    pub fn split_by_shard(&self, stream: &str, batch: JsValue) -> Result<JsValue, JsValue> {
        let bytes = batch_bytes(&batch)?;
        let split = self.inner.borrow().split_by_shard(stream, &bytes)?;
        to_js(&split)
    }

    /// `prepareIngest(request, body)` → a `PreparedBatch`: an ingest
    /// request (`/api/logs/{stream}` or Logflare's ingest API; its parts as
    /// for `answerRequest`) and its decoded body, read as `ingest` reads it
    /// (Logflare's entries normalised, received now), with its key, its
    /// answer and its record. Throws 401/403 for the key, 400/404 for the
    /// source, 400/413 for the batch as a whole.
    #[wasm_bindgen(js_name = prepareIngest)]
    pub fn prepare_ingest(&self, request: JsValue, batch: JsValue) -> Result<JsValue, JsValue> {
        let now = self.now_micros();
        let (request, _) = request_from(request)?;
        let bytes = batch_bytes(&batch)?;
        let prepared = self.inner.borrow().prepare_request(&request, &bytes, now)?;
        let value = to_js(&prepared)?;
        Reflect::set(
            &value,
            &"record".into(),
            &Uint8Array::from(&prepared.record[..]),
        )?;
        Ok(value)
    }

    /// `ingestRecord(record)` → the report of a prepared batch's record kept
    /// in this store (a store that refuses part of it throws; the caller goes
    /// back to what it stored).
    #[wasm_bindgen(js_name = ingestRecord)]
    pub fn ingest_record(&mut self, record: &[u8]) -> Result<JsValue, JsValue> {
        to_js(&self.inner.borrow_mut().ingest_record(record)?)
    }

    /// `LogEndpoints.coalesce(partition, round, records, routes)` → a
    /// `Round`: the kept batches (`records`, as `prepareIngest` made them)
    /// coalesced into one delivery per shard and one registration per
    /// directory partition, each project-day's entries sent where `routes`
    /// (`[{ projectKey, day, split }]`, the partition's splits) says.
    pub fn coalesce(
        partition: &str,
        round: f64,
        records: Vec<Uint8Array>,
        routes: JsValue,
    ) -> Result<JsRound, JsValue> {
        let mut coalesced = Round::with_routes(partition, round as u64, routes_from(routes)?);
        for record in records {
            coalesced.add(&record.to_vec())?;
        }
        Ok(JsRound { round: coalesced })
    }

    /// `LogEndpoints.reroute(shards, overflows, routes, asRound?)` → a
    /// `Round`: the rows full shards handed back in one wave (`overflows[i]`,
    /// from the `ingestDelivery` answer of `shards[i]`), each project's sent
    /// to its next split, under round `asRound` when given (else theirs);
    /// `moved` lists the splits they went to.
    pub fn reroute(
        shards: Vec<String>,
        overflows: Vec<Uint8Array>,
        routes: JsValue,
        as_round: Option<f64>,
    ) -> Result<JsRound, JsValue> {
        if shards.len() != overflows.len() {
            return Err(Error::invalid("overflows", "one per shard").into());
        }
        let as_round = match as_round {
            Some(n) if n >= 1.0 && n.fract() == 0.0 && n <= MAX_SAFE_INTEGER => Some(n as u64),
            Some(_) => {
                return Err(
                    Error::invalid("asRound", "a round number is a whole number from 1").into(),
                )
            }
            None => None,
        };
        let handed_back: Vec<(String, Vec<u8>)> = shards
            .into_iter()
            .zip(overflows.iter().map(Uint8Array::to_vec))
            .collect();
        let round = Round::rerouted(&handed_back, routes_from(routes)?, as_round)?;
        Ok(JsRound { round })
    }

    /// `LogEndpoints.replayedAnswer(stored, lost?)` → the `X-Delivery` text
    /// for a round applied before: its stored answer (null: it kept nothing)
    /// marked a duplicate; `lost`, the error its handed-back rows no longer
    /// read with, names them as refused.
    #[wasm_bindgen(js_name = replayedAnswer)]
    pub fn replayed_answer(stored: Option<String>, lost: JsValue) -> Result<String, JsValue> {
        let lost = match lost.is_undefined() || lost.is_null() {
            true => None,
            false => Some(ErrorReport {
                status: Reflect::get(&lost, &"status".into())?
                    .as_f64()
                    .unwrap_or(500.0) as u16,
                code: Reflect::get(&lost, &"code".into())?
                    .as_string()
                    .unwrap_or_default(),
                message: Reflect::get(&lost, &"message".into())?
                    .as_string()
                    .unwrap_or_default(),
            }),
        };
        Ok(DeliveryAnswer::replayed(stored.as_deref(), lost)?.text())
    }

    /// `LogEndpoints.readDeliveryAnswer(text)` → `{ duplicate, accepted,
    /// refused, overflowEntries, refusedEntries }` of a shard's `X-Delivery`
    /// (null: none); 502 `bad_shard_answer` when it does not read.
    #[wasm_bindgen(js_name = readDeliveryAnswer)]
    pub fn read_delivery_answer(text: Option<String>) -> Result<JsValue, JsValue> {
        let answer = DeliveryAnswer::read(text.as_deref())?;
        let value = to_js(&answer)?;
        Reflect::set(
            &value,
            &"refusedEntries".into(),
            &(answer.refused_entries() as f64).into(),
        )?;
        Ok(value)
    }

    /// `LogEndpoints.deliveryHeader(bytes)` → `{ partition, round }` of a delivery.
    #[wasm_bindgen(js_name = deliveryHeader)]
    pub fn delivery_header(bytes: &[u8]) -> Result<JsValue, JsValue> {
        let (partition, round) = Delivery::header(bytes)?;
        to_js(&serde_json::json!({ "partition": partition, "round": round }))
    }

    /// `ingestDelivery(bytes, shard)` → `{ partition, round, report, refused,
    /// keep, kept?, overflow?, overflowEntries }`: each section of a delivery
    /// kept as far as it fits (`refused`: `[{ stream, entries, error }]`,
    /// rows that can never be kept); `keep` says whether any was kept (else
    /// the caller stores nothing); when not all was applied whole, `kept` is
    /// the delivery as applied, which the caller stores; `overflow` holds the
    /// rows with no room here, for the project-day's next split. Throws,
    /// changing nothing, for bytes that do not read.
    #[wasm_bindgen(js_name = ingestDelivery)]
    pub fn ingest_delivery(&mut self, bytes: &[u8], shard: &str) -> Result<JsValue, JsValue> {
        let delivered = self.inner.borrow_mut().ingest_delivery(bytes, shard)?;
        let value = to_js(&delivered)?;
        Reflect::set(&value, &"answer".into(), &delivered.answer().text().into())?;
        if let Some(kept) = &delivered.kept {
            Reflect::set(&value, &"kept".into(), &Uint8Array::from(&kept[..]))?;
        }
        if let Some(overflow) = &delivered.overflow {
            Reflect::set(&value, &"overflow".into(), &Uint8Array::from(&overflow[..]))?;
        }
        Ok(value)
    }

    /// `replayDelivery(bytes)` → as `ingestDelivery`, for a delivery this
    /// store applied before (a shard rebuilding from storage): applied whole,
    /// whatever the budget says now.
    #[wasm_bindgen(js_name = replayDelivery)]
    pub fn replay_delivery(&mut self, bytes: &[u8]) -> Result<JsValue, JsValue> {
        to_js(&self.inner.borrow_mut().replay_delivery(bytes)?)
    }

    /// `replayRecord(record)` → as `ingestRecord`, for a record this store
    /// kept before: applied whole, whatever the budget says now.
    #[wasm_bindgen(js_name = replayRecord)]
    pub fn replay_record(&mut self, record: &[u8]) -> Result<JsValue, JsValue> {
        to_js(&self.inner.borrow_mut().replay_record(record)?)
    }

    /// `snapshotDueAfterReplay()`: whether the stored batches this engine
    /// replayed since it was made are so many (a sixteenth of its budget) that
    /// its host should write its snapshot now rather than at the next
    /// maintenance, so that the next wake does not replay them again.
    #[wasm_bindgen(js_name = snapshotDueAfterReplay)]
    pub fn snapshot_due_after_replay(&self) -> bool {
        self.inner.borrow().snapshot_due_after_replay()
    }

    /// `LogEndpoints.refusalIsFinal(status)`: whether a shard's refusal of a
    /// delivery is final (recorded, not retried).
    #[wasm_bindgen(js_name = refusalIsFinal)]
    pub fn refusal_is_final(status: u16) -> bool {
        refusal_is_final(status)
    }

    /// `health()` → the answer of `GET /health`: 503 when this engine has no
    /// ingest key or no query key.
    pub fn health(&self) -> Result<JsValue, JsValue> {
        to_js(&self.inner.borrow().health())
    }

    /// `LogEndpoints.settings()` → `[{ name, meaning, default }]`: the edge
    /// worker's settings (README, "Edge worker").
    pub fn settings() -> Result<JsValue, JsValue> {
        to_js(&crate::settings::SETTINGS)
    }

    /// `LogEndpoints.readSettings(env)` → `{ apiKeys, ingestKeys, fixedNowMs,
    /// maxBodyBytes, maxStoreBytes, sharding }`: the settings an environment
    /// holds, read as the README says (400 `invalid_config` naming a setting
    /// that does not read, or keys an engine would refuse).
    #[wasm_bindgen(js_name = readSettings)]
    pub fn read_settings(env: JsValue) -> Result<JsValue, JsValue> {
        let env: crate::settings::Environment = options_from(env, "the worker's environment")?;
        let settings = to_js(&crate::settings::Settings::read(&env)?)?;
        // Keys are checked as an engine checks them, now: found when a
        // stored object wakes, they were taken for its snapshot's fault.
        let keys = Object::new();
        for name in ["apiKeys", "ingestKeys"] {
            let value = Reflect::get(&settings, &name.into()).unwrap_or(JsValue::UNDEFINED);
            Reflect::set(&keys, &name.into(), &value).ok();
        }
        config_of(keys.into()).map_err(|e| Error::InvalidConfig {
            reason: match e {
                Error::InvalidConfig { reason } => {
                    format!("setting API_KEYS or INGEST_KEYS: {reason}")
                }
                other => other.to_string(),
            },
        })?;
        Ok(settings)
    }

    /// `LogEndpoints.batchSeen(content, kept)` → a `Seen`: what an object
    /// that keeps batches finds of a batch of `content` (its prepared
    /// `key.content`). `kept`: undefined when its key was not kept within the
    /// resend window, else the content kept with it (null for a key kept
    /// before contents were). The request's answer is `answers[seen]`.
    #[wasm_bindgen(js_name = batchSeen, unchecked_return_type = "Seen")]
    pub fn batch_seen(
        content: &str,
        #[wasm_bindgen(unchecked_param_type = "string | null | undefined")] kept: JsValue,
    ) -> Result<JsValue, JsValue> {
        let kept = match (kept.is_undefined(), kept.is_null(), kept.as_string()) {
            (true, ..) => None,
            (_, true, _) => Some(None),
            (.., Some(text)) => Some(Some(text)),
            _ => {
                return Err(Error::InvalidParameter {
                    name: "kept".into(),
                    reason: format!(
                        "must be a batch's content hash, null or undefined, not {}",
                        describe_js(&kept)
                    ),
                }
                .into())
            }
        };
        to_js(&crate::shard::BatchKey::seen(
            content,
            kept.as_ref().map(|k| k.as_deref()),
        ))
    }

    /// `LogEndpoints.keepAnswer(seen)` → the ingest partition's answer to the
    /// front (a `KeepAnswer`'s JSON text), for what it found.
    #[wasm_bindgen(js_name = keepAnswer)]
    pub fn keep_answer(
        #[wasm_bindgen(unchecked_param_type = "Seen")] seen: JsValue,
    ) -> Result<String, JsValue> {
        let seen = from_js(seen, |reason| Error::InvalidParameter {
            name: "seen".into(),
            reason,
        })?;
        Ok(crate::shard::KeepAnswer::of(seen).text())
    }

    /// `LogEndpoints.readKeepAnswer(text)` → the `Seen` a partition's answer
    /// says (an earlier build's too); 503 `unavailable` if it does not read.
    #[wasm_bindgen(js_name = readKeepAnswer, unchecked_return_type = "Seen")]
    pub fn read_keep_answer(text: &str) -> Result<JsValue, JsValue> {
        to_js(&crate::shard::KeepAnswer::read(text)?)
    }

    /// `LogEndpoints.shardName(project, day)` → the name of the shard that
    /// holds `project`'s entries of `day` (`null`: entries with no project).
    #[wasm_bindgen(js_name = shardName)]
    pub fn shard_name(project: Option<String>, day: &str) -> String {
        let key = crate::shard::project_key(project.as_deref());
        crate::shard::shard_name(crate::shard::group_of(&key), day)
    }

    /// `LogEndpoints.ingestNames()` → every ingest partition's name.
    #[wasm_bindgen(js_name = ingestNames)]
    pub fn ingest_names() -> Vec<String> {
        (0..crate::shard::INGEST_PARTITIONS)
            .map(crate::shard::ingest_name)
            .collect()
    }

    /// `LogEndpoints.directoryNames()` → every directory partition's name.
    #[wasm_bindgen(js_name = directoryNames)]
    pub fn directory_names() -> Vec<String> {
        crate::shard::directory_names()
    }

    /// `LogEndpoints.gather(plan, shards)` → a `Gather`: the shards a
    /// directory partition found for a plan, asked in waves and merged.
    pub fn gather(plan: JsValue, shards: Vec<String>) -> Result<JsGather, JsValue> {
        let plan: QueryPlan = from_js(plan, bad_answer("a plan from shardQuery"))?;
        Ok(JsGather {
            gather: Gather::of_shards(&plan, shards)?,
        })
    }

    /// `planQuery(path, params, apiKey)` → `{ endpoint, projectKey, urlBits,
    /// firstDay, lastDay, newestFirst, warning }`: the call checked as
    /// `queryPath` checks it (throws the same errors), and which shards can
    /// hold its rows. Nothing is run.
    #[wasm_bindgen(js_name = planQuery)]
    pub fn plan_query(
        &self,
        path: &str,
        params: JsValue,
        api_key: Option<String>,
    ) -> Result<JsValue, JsValue> {
        let params = params_from(&params)?;
        let plan =
            self.inner
                .borrow()
                .plan_query(path, &params, api_key.as_deref(), self.now_micros())?;
        to_js(&plan)
    }

    /// `shardQuery(request)` → a `ShardQuery`: the request's call checked as
    /// `queryPath` checks it (throws the same errors) and planned; the host
    /// asks the shards it names, wave by wave, and serves its `answer()`.
    #[wasm_bindgen(js_name = shardQuery)]
    pub fn shard_query(&self, request: JsValue) -> Result<JsShardQuery, JsValue> {
        let (request, params) = request_from(request)?;
        let query = self.inner.borrow().shard_query(
            &request.path,
            &params,
            request.key().as_deref(),
            self.now_micros(),
        )?;
        Ok(JsShardQuery {
            service: self.inner.clone(),
            query,
        })
    }

    /// `LogEndpoints.mergeAnswers(endpoint, answers)` → the answer one store
    /// would give, from the shards' answers (each as `queryPath` returns it)
    /// to a plan for `endpoint`.
    #[wasm_bindgen(js_name = mergeAnswers)]
    pub fn merge_answers(endpoint: &str, answers: JsValue) -> Result<JsValue, JsValue> {
        let answers: Vec<QueryAnswer> =
            from_js(answers, bad_answer("[{ body, cache, maxAge, warning }]"))?;
        to_js(&LogEndpoints::merge_answers(endpoint, &answers)?)
    }

    /// `LogEndpoints.readAnswer(body, headers)` → the `QueryAnswer` an HTTP
    /// answer of a store carries (`headers`: `[name, value]` pairs).
    #[wasm_bindgen(js_name = readAnswer)]
    pub fn read_answer(body: String, headers: JsValue) -> Result<JsValue, JsValue> {
        let headers: Vec<(String, String)> = from_js(headers, bad_answer("[[name, value]]"))?;
        to_js(&QueryAnswer::from_http(body, &headers))
    }

    /// Throws (401 or 403) unless `apiKey` is one of the `ingestKeys`: hosts that
    /// take batches over a network call it before reading the body.
    #[wasm_bindgen(js_name = authorizeIngest)]
    pub fn authorize_ingest(&self, api_key: JsValue) -> Result<(), JsValue> {
        let api_key = optional_text_arg(&api_key, "apiKey")?;
        Ok(self.inner.borrow().authorize_ingest(api_key.as_deref())?)
    }

    /// `authorizeRequest(request)`: `authorizeIngest` with the key the request presents.
    #[wasm_bindgen(js_name = authorizeRequest)]
    pub fn authorize_request(&self, request: JsValue) -> Result<(), JsValue> {
        let key = presented_key_of(request)?;
        Ok(self.inner.borrow().authorize_ingest(key.as_deref())?)
    }

    /// `authorizeStatus(request)`: throws unless the request presents an
    /// unrestricted query key (`GET /api/ingest/status`).
    #[wasm_bindgen(js_name = authorizeStatus)]
    pub fn authorize_status(&self, request: JsValue) -> Result<(), JsValue> {
        let key = presented_key_of(request)?;
        Ok(self.inner.borrow().authorize_status(key.as_deref())?)
    }

    /// `LogEndpoints.ingestStatus(sharding, [[name, status], …])` → the
    /// answer of `GET /api/ingest/status`: each ingest partition's `/status`
    /// and their sum.
    #[wasm_bindgen(js_name = ingestStatus)]
    pub fn ingest_status(sharding: bool, statuses: JsValue) -> Result<JsValue, JsValue> {
        let statuses: Vec<(String, serde_json::Value)> =
            from_js(statuses, bad_answer("[[name, status], …]"))?;
        to_js(&LogEndpoints::ingest_status(sharding, statuses)?)
    }

    /// `query(endpointNameOrUuid, params, apiKey)` → `{ result: [...] }`.
    pub fn query(
        &mut self,
        endpoint: JsValue,
        params: JsValue,
        api_key: JsValue,
    ) -> Result<JsValue, JsValue> {
        let raw = self.run(&endpoint, &params, &api_key)?;
        JSON::parse(&raw.body)
    }

    /// Like `query`, but the body stays a JSON string, with the cache status:
    /// `{ body, cache: "HIT" | "MISS" | null, maxAge, warning }` (what the edge worker serves).
    #[wasm_bindgen(js_name = queryRaw)]
    pub fn query_raw(
        &mut self,
        endpoint: JsValue,
        params: JsValue,
        api_key: JsValue,
    ) -> Result<JsValue, JsValue> {
        let out = self.run(&endpoint, &params, &api_key)?;
        to_js(&out)
    }

    /// Like `queryRaw`, for a request path: `/api/endpoints/query/{name_or_uuid}`
    /// or Supabase's `/v1/projects/{ref}/analytics/endpoints/{name}`.
    #[wasm_bindgen(js_name = queryPath)]
    pub fn query_path(
        &mut self,
        path: JsValue,
        params: JsValue,
        api_key: JsValue,
    ) -> Result<JsValue, JsValue> {
        let path = text_arg(&path, "path")?;
        let api_key = optional_text_arg(&api_key, "apiKey")?;
        let now = self.now_micros();
        let params = params_from(&params)?;
        let out = self
            .inner
            .borrow_mut()
            .query_path(&path, &params, api_key.as_deref(), now)?;
        to_js(&out)
    }

    /// `answerRequest(request)` → the HTTP answer of a query request (its path,
    /// its parameters from the query string or a POST body, its key).
    #[wasm_bindgen(js_name = answerRequest)]
    pub fn answer_request(&mut self, request: JsValue) -> Result<JsValue, JsValue> {
        let now = self.now_micros();
        let (request, params) = request_from(request)?;
        let out = self.inner.borrow_mut().query_path(
            &request.path,
            &params,
            request.key().as_deref(),
            now,
        )?;
        to_js(&HttpAnswer::from(&out))
    }

    /// `answerPartial(request)` → `answerRequest`'s answer as one shard of a
    /// split project-day gives it to a directory: partial states where a
    /// bucket may span shards (`Gather.partialStates`).
    #[wasm_bindgen(js_name = answerPartial)]
    pub fn answer_partial(&mut self, request: JsValue) -> Result<JsValue, JsValue> {
        let now = self.now_micros();
        let (request, params) = request_from(request)?;
        let out = self.inner.borrow_mut().query_path_partial(
            &request.path,
            &params,
            request.key().as_deref(),
            now,
        )?;
        to_js(&HttpAnswer::from(&out))
    }

    /// What a request path is: `{ kind: "query" | "management" | "ingest" |
    /// "health" | "ingest-status", methods }`; throws 404 for any other path, and 405 when
    /// `method` is given and the route does not take it (OPTIONS it always takes).
    pub fn route(path: JsValue, method: JsValue) -> Result<JsValue, JsValue> {
        let route = Route::parse(&text_arg(&path, "path")?)?;
        if let Some(method) = optional_text_arg(&method, "method")? {
            route.check_method(&method)?;
        }
        let kind = match &route {
            Route::Query { .. } => "query",
            Route::Management { .. } => "management",
            Route::Ingest { .. } | Route::LogflareIngest => "ingest",
            Route::Health => "health",
            Route::IngestStatus => "ingest-status",
        };
        to_js(&RouteInfo {
            kind,
            methods: route.methods(),
        })
    }

    fn run(
        &mut self,
        endpoint: &JsValue,
        params: &JsValue,
        api_key: &JsValue,
    ) -> Result<QueryAnswer, Error> {
        let endpoint = text_arg(endpoint, "endpoint")?;
        let api_key = optional_text_arg(api_key, "apiKey")?;
        let now = self.now_micros();
        let params = params_from(params)?;
        self.inner
            .borrow_mut()
            .query(&endpoint, &params, api_key.as_deref(), now)
    }

    /// `endpoints()` → each endpoint's name, id, settings and described parameters.
    pub fn endpoints(&self) -> Result<JsValue, JsValue> {
        to_js(&self.inner.borrow().endpoints())
    }

    /// `LogEndpoints.storeBytesOfMiB(text, setting)`: the `limits.maxStoreBytes`
    /// a person's setting in MiB asks for (the CLI's `--max-store`, the page's
    /// `?max-store`); throws `invalid_config` naming `setting` otherwise.
    #[wasm_bindgen(js_name = storeBytesOfMiB)]
    pub fn store_bytes_of_mib(text: &str, setting: &str) -> Result<f64, JsValue> {
        Ok(store_bytes_of_mib(text, setting)? as f64)
    }

    /// Constants of the service that hosts need (`Constants` in the TypeScript above).
    pub fn constants() -> Result<JsValue, JsValue> {
        to_js(&Constants {
            retention_days: crate::endpoints::LONGEST_RETENTION / DAY,
            params_body_bytes: http::MAX_PARAMS_BODY_BYTES,
            max_concurrent: crate::shard::MAX_CONCURRENT,
            sketch_relative_error: crate::sketch::RELATIVE_ERROR,
            resend_window_ms: crate::shard::RESEND_WINDOW_HOURS * 3600 * 1000,
            part_bytes: crate::snapshot::PART_BYTES,
            warm_every_ms: crate::shard::schedule::warm_every_ms(),
            drain_bytes: http::DRAIN_BYTES,
            retry_ms: crate::shard::schedule::RETRY_MS,
            reported_reasons: crate::feed::REPORTED_REASONS,
            directory_log_rows: crate::shard::DIRECTORY_LOG_ROWS,
            max_traps_per_wake: crate::shard::schedule::MAX_TRAPS_PER_WAKE,
        })
    }

    /// `LogEndpoints.roundDelayMs(waitingBytes)`: how long until an ingest
    /// partition's next round starts, with that many bytes of batches kept.
    #[wasm_bindgen(js_name = roundDelayMs)]
    pub fn round_delay_ms(waiting_bytes: f64) -> u32 {
        crate::shard::schedule::round_delay_ms(waiting_bytes as usize)
    }

    /// `LogEndpoints.roundTakes(coveredBytes, nextBytes)`: whether a round
    /// that covers that many bytes of batches takes the next batch too.
    #[wasm_bindgen(js_name = roundTakes)]
    pub fn round_takes(covered_bytes: f64, next_bytes: f64) -> bool {
        crate::shard::schedule::round_takes(covered_bytes as usize, next_bytes as usize)
    }

    /// `LogEndpoints.outboxWaitMs(failures)`: how long a shard's outbox
    /// waits after that many failed tries in a row.
    #[wasm_bindgen(js_name = outboxWaitMs)]
    pub fn outbox_wait_ms(failures: u32) -> u32 {
        crate::shard::schedule::outbox_wait_ms(failures)
    }

    /// `LogEndpoints.retention(nowMs)` → `{ cutoff, firstKeptDay }`: stored
    /// batches whose newest entry is before `cutoff` (µs) are past retention,
    /// and so are the shards of days before `firstKeptDay`.
    pub fn retention(now_ms: f64) -> Result<JsValue, JsValue> {
        to_js(&Retention::at(micros_of(now_ms)))
    }

    /// `LogEndpoints.nextMaintenanceInMs(keepsWarm, newestStoredUs, nowMs)`:
    /// when a shard's maintenance comes next (ms from now), with cached
    /// results kept warm or not and its newest stored entry (`null`:
    /// nothing stored); `null` when it never comes.
    #[wasm_bindgen(js_name = nextMaintenanceInMs)]
    pub fn next_maintenance_in_ms(
        keeps_warm: bool,
        newest_stored_us: Option<f64>,
        now_ms: f64,
    ) -> Option<f64> {
        crate::shard::schedule::next_maintenance_in_ms(
            keeps_warm,
            newest_stored_us.map(|us| us as Micros),
            micros_of(now_ms),
        )
        .map(|ms| ms as f64)
    }

    /// Re-runs cached queries that are due (call it from a timer or a cron trigger every 300 s).
    #[wasm_bindgen(js_name = warmCache)]
    pub fn warm_cache(&mut self) -> Result<JsValue, JsValue> {
        let now = self.now_micros();
        to_js(&self.inner.borrow_mut().warm_cache(now))
    }

    #[wasm_bindgen(js_name = clearCache)]
    pub fn clear_cache(&mut self) {
        self.inner.borrow_mut().clear_cache();
    }

    /// `deferSeals(on)`: from now on, full text blocks wait for the host to
    /// compress them in another instance of the module (`takeSealJobs` →
    /// `LogEndpoints.sealBlocks` in a worker → `installSealed`), so ingest
    /// goes on while a second core compresses; they are read as open text
    /// meanwhile, so answers are the same. `false`: they are compressed as
    /// they fill, and those waiting now. Once every job is back, the store
    /// and its snapshot are those of a store that sealed in place.
    #[wasm_bindgen(js_name = deferSeals)]
    pub fn defer_seals(&mut self, on: bool) {
        self.inner.borrow_mut().defer_seals(on);
    }

    /// `takeSealJobs(spare?)` → the full text blocks not handed out yet, as
    /// one `Uint8Array` of seal jobs for `LogEndpoints.sealBlocks`;
    /// `undefined` when there are none. Given a `spare` buffer (a
    /// `Uint8Array` or an `ArrayBuffer`, such as the jobs' buffer a worker
    /// hands back once it has sealed them) at least as long, the jobs are
    /// written at its start and a view of them is returned: its buffer is
    /// `spare`'s, and longer than the jobs. The runtime zeroes every new
    /// buffer, and a new one for each hand-out took four fifths of the time
    /// handing jobs out costs.
    #[wasm_bindgen(js_name = takeSealJobs)]
    pub fn take_seal_jobs(&mut self, spare: JsValue) -> Option<Uint8Array> {
        let written = self.inner.borrow_mut().take_seal_jobs_into(|len| {
            // A wasm32 memory holds less than 4 GiB. A view of the module's
            // own memory is no spare: the frame would be written over it.
            let len = len as u32;
            let spare = byte_view(&spare)
                .filter(|spare| !js_sys::Object::is(&spare.buffer(), &module_memory()));
            let out = match spare {
                Some(spare) if spare.length() >= len => spare.subarray(0, len),
                _ => Uint8Array::new_with_length(len),
            };
            HostBytes { out, at: 0 }
        })?;
        debug_assert_eq!(
            written.at,
            written.out.length(),
            "the frame's length foreseen"
        );
        Some(written.out)
    }

    /// `LogEndpoints.sealBlocks(jobs)` → the sealed blocks (a `Uint8Array`)
    /// for `installSealed`: compresses seal jobs, in any instance of the
    /// module (a worker's). Throws 500 `bad_seal_jobs` for other bytes.
    #[wasm_bindgen(js_name = sealBlocks)]
    pub fn seal_blocks(jobs: JsValue) -> Result<Vec<u8>, JsValue> {
        Ok(LogEndpoints::seal_blocks(&bytes_of(&jobs, "jobs")?)?)
    }

    /// `readJob(stream)` → what reading a batch of `stream` here depends on
    /// (a `Uint8Array`), for `LogEndpoints.readBatch` in another instance of
    /// the module (a worker's): a second core reads batches while this one
    /// appends them (`ingestRead`). Throws 400 `unknown_stream` as `ingest` does.
    #[wasm_bindgen(js_name = readJob)]
    pub fn read_job(&self, stream: JsValue) -> Result<Vec<u8>, JsValue> {
        let stream = text_arg(&stream, "stream")?;
        Ok(self.inner.borrow().read_job(&stream)?)
    }

    /// `LogEndpoints.readBatch(job, batch)` → the batch read as `ingest`
    /// reads it in the store `job` came from, in any instance of the module:
    /// its report and rows (a `Uint8Array`) for that store's `ingestRead`.
    /// Throws as `ingest` would for the batch as a whole; 500
    /// `bad_read_job` for a job that does not read.
    #[wasm_bindgen(js_name = readBatch)]
    pub fn read_batch(job: JsValue, batch: JsValue) -> Result<Vec<u8>, JsValue> {
        let job = bytes_of(&job, "job")?;
        let batch = batch_bytes(&batch)?;
        Ok(LogEndpoints::read_batch(&job, &batch)?)
    }

    /// `ingestRead(read)` → the report of a batch `readBatch` read (as
    /// `ingest`'s), its rows appended: all, or none and a throw (as
    /// `ingest`). The store answers as had it read the batch itself.
    /// Throws 500 `bad_read_job` for other bytes.
    #[wasm_bindgen(js_name = ingestRead)]
    pub fn ingest_read(&mut self, read: JsValue) -> Result<JsValue, JsValue> {
        let read = bytes_of(&read, "read")?;
        to_js(&self.inner.borrow_mut().ingest_read(&read)?)
    }

    /// `installSealed(sealed)` → how many blocks `sealBlocks`' answer put in
    /// place (one compressed here since is passed over). Throws 500
    /// `bad_seal_jobs` for bytes that are not sealed blocks of this store's jobs.
    #[wasm_bindgen(js_name = installSealed)]
    pub fn install_sealed(&mut self, sealed: JsValue) -> Result<u32, JsValue> {
        let sealed = bytes_of(&sealed, "sealed")?;
        let installed = self.inner.borrow_mut().install_sealed(&sealed)?;
        Ok(installed as u32)
    }

    /// `{ edgeEntries, functionRows, otherSources, storeBytes, storageBytes, unsealedBlocks, cachedResults }`.
    pub fn stats(&self) -> Result<JsValue, JsValue> {
        to_js(&self.inner.borrow().stats())
    }

    /// Benchmark floor: sums the edge timestamp column (one 8-byte value per
    /// entry) and returns the sum, so nothing can skip the scan.
    #[wasm_bindgen(js_name = scanFloor)]
    pub fn scan_floor(&self) -> f64 {
        self.inner.borrow().scan_floor() as f64
    }

    /// Size of the module's linear memory in bytes; wasm memory never shrinks,
    /// so this is also the peak.
    #[wasm_bindgen(js_name = memoryBytes)]
    pub fn memory_bytes(&self) -> f64 {
        module_memory().byte_length() as f64
    }

    /// `{ edgeProjects, functionProjects, functions, oldestTimestamp, newestTimestamp }`.
    pub fn catalog(&self) -> Result<JsValue, JsValue> {
        to_js(&self.inner.borrow().catalog())
    }

    /// Newest entry time held, in epoch ms (unlike the µs of reports and
    /// `catalog()`), or `undefined` when empty.
    #[wasm_bindgen(js_name = newestTimestamp)]
    pub fn newest_timestamp(&self) -> Option<f64> {
        self.inner
            .borrow()
            .newest_timestamp()
            .map(|us| us as f64 / 1000.0)
    }
}

/// A call across shards (see `shard::ShardQuery`), for the front worker.
#[wasm_bindgen(js_name = ShardQuery)]
pub struct JsShardQuery {
    service: Rc<RefCell<LogEndpoints>>,
    query: ShardQuery,
}

#[wasm_bindgen(js_class = ShardQuery)]
impl JsShardQuery {
    /// What the directory partitions look up (and which ones to ask).
    #[wasm_bindgen(getter)]
    pub fn plan(&self) -> Result<JsValue, JsValue> {
        to_js(self.query.plan())
    }

    /// The directory partitions to ask next (at once); empty once the answers are enough.
    #[wasm_bindgen(js_name = nextWave)]
    pub fn next_wave(&mut self) -> Vec<String> {
        self.query.next_wave()
    }

    /// A directory partition's answer, or `null` when it holds no shard of the call.
    pub fn add(&mut self, name: &str, answer: JsValue) -> Result<(), JsValue> {
        Ok(self.query.add(name, answer_from(answer)?)?)
    }

    /// The HTTP answer: the shards' answers merged, or, when no shard holds a
    /// row of the call, what a store without entries answers.
    pub fn answer(&self) -> Result<JsValue, JsValue> {
        let answer = self.service.borrow_mut().answer_shard_query(&self.query)?;
        to_js(&HttpAnswer::from(&answer))
    }
}

/// An answer from another object, or `None` for `null`.
fn answer_from(value: JsValue) -> Result<Option<QueryAnswer>, Error> {
    if value.is_null() || value.is_undefined() {
        return Ok(None);
    }
    from_js(value, bad_answer("{ body, cache, maxAge, warning }")).map(Some)
}

/// A directory partition's gathering of its shards' answers (see `shard::Gather`).
#[wasm_bindgen(js_name = Gather)]
pub struct JsGather {
    gather: Gather,
}

#[wasm_bindgen(js_class = Gather)]
impl JsGather {
    /// Whether the shards are asked for partial states (`answerPartial`):
    /// a bucket may span the shards of a split project-day.
    #[wasm_bindgen(getter, js_name = partialStates)]
    pub fn partial_states(&self) -> bool {
        self.gather.partial_states()
    }

    /// The shards to ask next (at once); empty once the answers are enough.
    #[wasm_bindgen(js_name = nextWave)]
    pub fn next_wave(&mut self) -> Vec<String> {
        self.gather.next_wave()
    }

    /// A shard's answer, as `LogEndpoints.readAnswer` reads it.
    pub fn add(&mut self, name: &str, answer: JsValue) -> Result<(), JsValue> {
        Ok(self.gather.add(name, answer_from(answer)?)?)
    }

    /// The answers merged (`{ body, cache, maxAge, warning, shards, objects }`),
    /// or `null` when no shard answered.
    pub fn merged(&self) -> Result<JsValue, JsValue> {
        match self.gather.merged() {
            Some(answer) => to_js(&answer?),
            None => Ok(JsValue::NULL),
        }
    }
}

/// A round of distribution (see `shard::Round`), for an ingest partition.
#[wasm_bindgen(js_name = Round)]
pub struct JsRound {
    round: Round,
}

#[derive(Serialize)]
struct DeliveryInfo<'a> {
    shard: &'a str,
    entries: usize,
}

#[wasm_bindgen(js_class = Round)]
impl JsRound {
    /// `registrations(known)` → `[{ directory, entries, bytes }]`: what each
    /// directory partition records before the deliveries (`entries`
    /// project-days, as `bytes`), beyond what `known` (a
    /// `KnownRegistrations`) holds.
    pub fn registrations(&self, known: &JsKnownRegistrations) -> Result<Array, JsValue> {
        #[derive(Serialize)]
        struct Info<'a> {
            directory: &'a str,
            entries: usize,
        }
        let out = Array::new();
        for registration in self.round.registrations(&known.known) {
            let value = to_js(&Info {
                directory: &registration.directory,
                entries: registration.entries.len(),
            })?;
            Reflect::set(
                &value,
                &"bytes".into(),
                &Uint8Array::from(&registration.bytes()[..]),
            )?;
            out.push(&value);
        }
        Ok(out)
    }

    /// `[{ projectKey, day, split }]`: the splits `reroute` sent project-days
    /// to, which the partition's routes take once the round is over.
    #[wasm_bindgen(getter)]
    pub fn moved(&self) -> Result<JsValue, JsValue> {
        to_js(&self.round.moved())
    }

    /// `[{ shard, entries, bytes }]`: each shard's delivery.
    #[wasm_bindgen(getter)]
    pub fn deliveries(&self) -> Result<Array, JsValue> {
        let out = Array::new();
        for delivery in self.round.deliveries() {
            let value = to_js(&DeliveryInfo {
                shard: &delivery.shard,
                entries: delivery.entries,
            })?;
            Reflect::set(
                &value,
                &"bytes".into(),
                &Uint8Array::from(&delivery.bytes[..]),
            )?;
            out.push(&value);
        }
        Ok(out)
    }
}

/// What an ingest partition registered already (see `shard::KnownRegistrations`).
#[wasm_bindgen(js_name = KnownRegistrations)]
#[derive(Default)]
pub struct JsKnownRegistrations {
    known: KnownRegistrations,
}

#[wasm_bindgen(js_class = KnownRegistrations)]
impl JsKnownRegistrations {
    #[wasm_bindgen(constructor)]
    pub fn new() -> JsKnownRegistrations {
        JsKnownRegistrations::default()
    }

    /// Remembers a registration a directory partition recorded (its bytes).
    pub fn learn(&mut self, bytes: &[u8]) -> Result<(), JsValue> {
        Ok(self.known.learn(bytes)?)
    }
}

/// Errors the hosts answer with, made by the core so that their codes and
/// statuses are its own: a part that did not answer (503), a storage write
/// that failed (503), a fault in the engine (500), a body over its limit
/// (413) or one that cannot be read (400).
#[wasm_bindgen]
pub fn unavailable(reason: &str) -> JsValue {
    Error::Unavailable {
        reason: reason.to_owned(),
    }
    .into()
}

#[wasm_bindgen(js_name = storageUnavailable)]
pub fn storage_unavailable(reason: &str) -> JsValue {
    Error::StorageUnavailable {
        reason: reason.to_owned(),
    }
    .into()
}

#[wasm_bindgen(js_name = engineFault)]
pub fn engine_fault() -> JsValue {
    Error::Internal.into()
}

#[wasm_bindgen(js_name = bodyTooLarge)]
pub fn body_too_large(limit: usize, declared: Option<f64>) -> JsValue {
    // A declared length past 4 GiB is a number, not a wasm usize (it wrapped).
    http::body_too_large(limit, declared.map(|bytes| bytes as u64)).into()
}

/// `corsHeaders()` → `[[name, value], …]`: the CORS headers of every
/// answer of the worker, a preflight's too.
#[wasm_bindgen(js_name = corsHeaders)]
pub fn cors_headers() -> Result<JsValue, JsValue> {
    to_js(&http::cors_headers())
}

/// `unreadableStored(reason)`: 400 `unreadable_batch` for bytes a host kept
/// in parts that no longer add up (damaged storage), as the core's own
/// unreadable bytes are.
#[wasm_bindgen(js_name = unreadableStored)]
pub fn unreadable_stored(reason: &str) -> JsValue {
    Error::UnreadableBatch {
        reason: format!("its stored parts hold {reason}"),
    }
    .into()
}

#[wasm_bindgen(js_name = unreadableBody)]
pub fn unreadable_body(reason: &str) -> JsValue {
    Error::UnreadableBatch {
        reason: format!("the body could not be read ({reason})"),
    }
    .into()
}

/// `bodyDecoding(contentEncoding)` → `"gzip"`, or `null` for a plain body;
/// throws 400 for an encoding the service does not take.
#[wasm_bindgen(js_name = bodyDecoding)]
pub fn body_decoding(content_encoding: Option<String>) -> Result<Option<String>, JsValue> {
    Ok(http::body_decoding(content_encoding.as_deref())?.map(str::to_owned))
}

/// Whether a value is an error the core made (its answer is its `body`).
#[wasm_bindgen(js_name = isServiceError)]
pub fn is_service_error(value: &JsValue) -> bool {
    value
        .dyn_ref::<js_sys::Error>()
        .is_some_and(|e| e.name() == "LogEndpointsError")
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
struct FeedOptions {
    stream: Option<String>,
    source: Option<String>,
    batch_bytes: Option<usize>,
    skip_first: Option<usize>,
}

/// `new LogFeed(service, { stream?, source?, batchBytes?, skipFirst? })`: a log file fed in
/// pieces (`push(bytes)` … `finish()`), framed, routed by stream and ingested
/// in batches by the core.
#[wasm_bindgen(js_name = LogFeed)]
pub struct JsLogFeed {
    service: Rc<RefCell<LogEndpoints>>,
    feed: LogFeed,
}

#[wasm_bindgen(js_class = LogFeed)]
impl JsLogFeed {
    #[wasm_bindgen(constructor)]
    pub fn new(service: &JsLogEndpoints, options: JsValue) -> Result<JsLogFeed, JsValue> {
        refuse_unknown_options::<FeedOptions>(&options, &[], "LogFeed option")?;
        let options: FeedOptions =
            options_from(options, "{ stream?, source?, batchBytes?, skipFirst? }")?;
        let feed = LogFeed::new(
            options.stream.as_deref(),
            options.source.as_deref().unwrap_or("input"),
            options.batch_bytes.unwrap_or(DEFAULT_BATCH_BYTES),
        )?
        .skip_first(options.skip_first.unwrap_or(0));
        Ok(JsLogFeed {
            service: service.inner.clone(),
            feed,
        })
    }

    /// `LogFeed.laterFilesNotRead(later)`: what a reading of several files
    /// says of the later files it did not come to ("2 later files were not
    /// read"; `""` for none), in the CLI's and the page's words alike.
    #[wasm_bindgen(js_name = laterFilesNotRead)]
    pub fn later_files_not_read(later: u32) -> String {
        LogFeed::later_files_not_read(later as usize)
    }

    /// Adds the next piece of the input: a `Uint8Array` (split at any byte)
    /// or a string (split between characters). Taken as a `JsValue`:
    /// wasm-bindgen's own conversion read a string as other bytes, and its
    /// entries were refused as not JSON.
    pub fn push(&mut self, bytes: JsValue) -> Result<(), JsValue> {
        let piece = text_or_bytes(&bytes, "bytes")
            .ok_or_else(|| Error::invalid("bytes", "must be a Uint8Array or a string"))??;
        Ok(self.feed.push(&mut self.service.borrow_mut(), &piece)?)
    }

    /// Ingests what is pending → `{ entries, accepted, rejected, rejectedTotal, newestTimestamp }`.
    pub fn finish(&mut self) -> Result<JsValue, JsValue> {
        let report = self.feed.finish(&mut self.service.borrow_mut())?;
        to_js(&report)
    }

    /// `finish` for an input that broke off (a cut download, a read that
    /// failed or was stopped): the whole entries before the break are kept,
    /// the one it went through is left out.
    #[wasm_bindgen(js_name = finishCut)]
    pub fn finish_cut(&mut self) -> Result<JsValue, JsValue> {
        let report = self.feed.finish_cut(&mut self.service.borrow_mut())?;
        to_js(&report)
    }

    /// Entries seen so far.
    #[wasm_bindgen(getter)]
    pub fn entries(&self) -> usize {
        self.feed.entries()
    }

    /// Entries accepted so far.
    #[wasm_bindgen(getter)]
    pub fn accepted(&self) -> usize {
        self.feed.accepted()
    }

    /// Entries refused so far (not those a full store left out).
    #[wasm_bindgen(getter, js_name = rejectedTotal)]
    pub fn rejected_total(&self) -> usize {
        self.feed.rejected_total()
    }

    /// Why reading stopped (the store filled), once it has; else null. The
    /// rest of the input need not be read: `push` takes no more of it.
    #[wasm_bindgen(getter, js_name = storeFull)]
    pub fn store_full(&self) -> Option<String> {
        self.feed.store_full()
    }

    /// Whether the rest of the input need not be given (`push` takes no
    /// more of it): the store filled, or its gzip data broke. `finish` says which.
    #[wasm_bindgen(getter, js_name = readsNoMore)]
    pub fn reads_no_more(&self) -> bool {
        self.feed.reads_no_more()
    }
}

/// The directory of shards (see `shard::directory`), for the object that keeps it.
#[wasm_bindgen(js_name = ShardDirectory)]
pub struct JsShardDirectory {
    inner: ShardDirectory,
}

#[wasm_bindgen(js_class = ShardDirectory)]
impl JsShardDirectory {
    #[wasm_bindgen(constructor)]
    pub fn new() -> JsShardDirectory {
        JsShardDirectory {
            inner: ShardDirectory::default(),
        }
    }

    /// `register(bytes)`: applies a registration (as a `Round` made it); how
    /// many project-days it named.
    pub fn register(&mut self, bytes: &[u8]) -> Result<usize, JsValue> {
        Ok(self.inner.register(bytes)?)
    }

    /// Everything it knows, as bytes (`ShardDirectory.restore` reads them).
    pub fn snapshot(&self) -> Vec<u8> {
        self.inner.snapshot()
    }

    /// `ShardDirectory.restore(bytes)`: the directory a snapshot holds.
    pub fn restore(bytes: &[u8]) -> Result<JsShardDirectory, JsValue> {
        Ok(JsShardDirectory {
            inner: ShardDirectory::restore(bytes)?,
        })
    }

    /// `lookup(plan)` → the names of the shards a plan asks, newest day first.
    pub fn lookup(&self, plan: JsValue) -> Result<Vec<String>, JsValue> {
        let plan: QueryPlan = from_js(plan, bad_answer("a plan from planQuery"))?;
        Ok(self.inner.lookup(&plan))
    }

    /// Forgets the shards of days before `day`; how many.
    #[wasm_bindgen(js_name = dropBefore)]
    pub fn drop_before(&mut self, day: &str) -> usize {
        self.inner.drop_before(day)
    }

    /// How many project-days it lists.
    #[wasm_bindgen(js_name = projectDays)]
    pub fn project_days(&self) -> usize {
        self.inner.shards()
    }
}

/// What a JS value is, for a message: `null`, or its `typeof` with an article.
fn describe_js(value: &JsValue) -> String {
    match value.js_typeof().as_string().unwrap_or_default() {
        _ if value.is_null() => "null".to_owned(),
        _ if value.is_undefined() => "undefined".to_owned(),
        kind if kind.starts_with(['a', 'e', 'i', 'o', 'u']) => format!("an {kind}"),
        kind => format!("a {kind}"),
    }
}
