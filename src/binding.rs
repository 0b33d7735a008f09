//! The JavaScript boundary, and the only module that knows about JS values: it
//! turns batches, parameters and options into Rust, and results and `Error`s
//! (with `status` and `code`) back into JS. Contract section 4 is its spec.

use js_sys::{Array, Object, Reflect, Uint8Array, JSON};
use serde::{Deserialize, Serialize};
use wasm_bindgen::prelude::*;

use crate::{ApiKey, Config, Error, Limits, LogEndpoints, Params};

// Parameter and row types of each endpoint, emitted into the generated
// `log_endpoints.d.ts`; `pkg-template/index.d.ts` builds the typed `query` on them.
#[wasm_bindgen(typescript_custom_section)]
const ENDPOINT_TYPES: &str = r#"
export type InvocationStatsInterval = "5min" | "15min" | "1hr" | "1day" | "7day";
export type ProjectTier = "FREE" | "PRO" | "PAYG" | "ENTERPRISE";
export type ApiCountsInterval = "minutely" | "hourly" | "daily";

export interface InvocationStatsParams { project: string; interval: InvocationStatsInterval; function_id?: string }
export interface LogsAllParams { project: string; project_tier: ProjectTier; iso_timestamp_start?: string; iso_timestamp_end?: string }
export interface ApiCountsParams { project: string; interval: ApiCountsInterval }

export interface InvocationStatsRow {
  /** Bucket start, microseconds since the Unix epoch. */
  timestamp: number;
  min_execution_time: number | null;
  max_execution_time: number | null;
  avg_execution_time: number | null;
  p95_execution_time: number | null;
  p99_execution_time: number | null;
  count: number;
  error_count: number;
}
export interface LogsAllRow {
  id: string;
  /** Microseconds since the Unix epoch. */
  timestamp: number;
  event_message: string | null;
  /** Exactly as ingested; its shape depends on the log stream. */
  metadata: unknown;
}
export interface ApiCountsRow {
  /** Bucket start as a UTC datetime, e.g. "2026-11-20T12:00:00". */
  timestamp: string;
  total_rest_requests: number;
  total_storage_requests: number;
  total_auth_requests: number;
  total_realtime_requests: number;
}

export interface EndpointParams {
  "functions.invocation-stats": InvocationStatsParams;
  "logs.all": LogsAllParams;
  "usage.api-counts": ApiCountsParams;
}
export interface EndpointRows {
  "functions.invocation-stats": InvocationStatsRow;
  "logs.all": LogsAllRow;
  "usage.api-counts": ApiCountsRow;
}
export type EndpointName = keyof EndpointParams;
export type StreamName = "edge_logs" | "cloudflare.logs.prod" | "function_edge_logs" | "deno-relay-logs";

export interface ApiKeyOption { key: string; endpoints?: string[]; projects?: string[] }
export interface LogEndpointsOptions {
  apiKeys?: (string | ApiKeyOption)[];
  /** Fixed clock, epoch milliseconds; the host clock when absent. */
  now?: number;
  limits?: { maxBatchBytes?: number; maxBatchEntries?: number; maxStoreBytes?: number; maxReportedRejections?: number; maxParamBytes?: number; maxRegexBytes?: number };
}
export interface IngestReport {
  accepted: number;
  rejected: { index: number; reason: string }[];
  rejectedTotal: number;
  /** Newest accepted timestamp, microseconds; null when nothing was accepted. */
  newestTimestamp: number | null;
}
export interface EndpointInfo {
  name: EndpointName;
  id: string;
  maxRows: number;
  cacheSeconds: number | null;
  cacheWarmingSeconds: number | null;
  sandboxing: boolean;
  parameters: string[];
}
export interface RawQueryResult { body: string; cache: "HIT" | "MISS" | null; maxAge: number | null }
export interface StoreStats { edgeEntries: number; functionRows: number; storeBytes: number; cachedResults: number }
export interface WarmReport { refreshed: number; kept: number }
export interface Catalog {
  edgeProjects: string[];
  functionProjects: string[];
  functions: string[];
  /** Microseconds since the Unix epoch; null when empty. */
  oldestTimestamp: number | null;
  newestTimestamp: number | null;
}
"#;

/// A JS `Error` carrying the HTTP `status` and stable `code` of a core error.
fn js_error(error: &Error) -> JsValue {
    let js = js_sys::Error::new(&error.to_string());
    js.set_name("LogEndpointsError");
    let _ = Reflect::set(&js, &"status".into(), &JsValue::from(error.status()));
    let _ = Reflect::set(&js, &"code".into(), &JsValue::from(error.code()));
    js.into()
}

fn to_js<T: Serialize>(value: &T) -> Result<JsValue, JsValue> {
    value
        .serialize(&serde_wasm_bindgen::Serializer::json_compatible())
        .map_err(|e| js_sys::Error::new(&e.to_string()).into())
}

#[derive(Deserialize)]
#[serde(untagged)]
enum KeyOption {
    Plain(String),
    Restricted {
        key: String,
        endpoints: Option<Vec<String>>,
        projects: Option<Vec<String>>,
    },
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
struct LimitOptions {
    max_batch_bytes: Option<usize>,
    max_batch_entries: Option<usize>,
    max_store_bytes: Option<usize>,
    max_reported_rejections: Option<usize>,
    max_param_bytes: Option<usize>,
    max_regex_bytes: Option<usize>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
struct Options {
    api_keys: Vec<KeyOption>,
    now: Option<f64>,
    limits: LimitOptions,
}

fn config_from(options: Options) -> Result<Config, Error> {
    let api_keys = options
        .api_keys
        .into_iter()
        .map(|k| match k {
            KeyOption::Plain(secret) => ApiKey::new(secret),
            KeyOption::Restricted {
                key,
                endpoints,
                projects,
            } => {
                let mut api_key = ApiKey::new(key)?;
                if let Some(endpoints) = endpoints {
                    api_key = api_key.only_endpoints(&endpoints)?;
                }
                if let Some(projects) = projects {
                    api_key = api_key.only_projects(&projects);
                }
                Ok(api_key)
            }
        })
        .collect::<Result<Vec<_>, _>>()?;
    let (given, default) = (options.limits, Limits::default());
    Ok(Config {
        api_keys,
        limits: Limits {
            max_batch_bytes: given.max_batch_bytes.unwrap_or(default.max_batch_bytes),
            max_batch_entries: given.max_batch_entries.unwrap_or(default.max_batch_entries),
            max_store_bytes: given.max_store_bytes.unwrap_or(default.max_store_bytes),
            max_reported_rejections: given
                .max_reported_rejections
                .unwrap_or(default.max_reported_rejections),
            max_param_bytes: given
                .max_param_bytes
                .unwrap_or(default.max_param_bytes)
                .min(crate::params::MAX_VALUE_BYTES),
            max_regex_bytes: given.max_regex_bytes.unwrap_or(default.max_regex_bytes),
        },
    })
}

/// A batch as UTF-8 bytes: an array of entries, a JSON/NDJSON string, or a `Uint8Array` of either.
fn batch_bytes(batch: &JsValue) -> Result<Vec<u8>, Error> {
    if let Some(text) = batch.as_string() {
        return Ok(text.into_bytes());
    }
    if let Some(bytes) = batch.dyn_ref::<Uint8Array>() {
        return Ok(bytes.to_vec());
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

/// Parameters from a plain object, a `URLSearchParams` or a query string.
fn params_from(value: &JsValue) -> Result<Params, Error> {
    if value.is_null() || value.is_undefined() {
        return Ok(Params::new());
    }
    if let Some(query) = value.as_string() {
        return Params::parse_query_string(&query);
    }
    let is_search_params = Reflect::get(value, &"constructor".into())
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

/// The service of contract section 4, as a JS class.
#[wasm_bindgen(js_name = LogEndpoints)]
pub struct JsLogEndpoints {
    inner: LogEndpoints,
    fixed_now_ms: Option<f64>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct RawQueryResult<'a> {
    body: &'a str,
    cache: Option<&'static str>,
    max_age: Option<u64>,
}

#[wasm_bindgen(js_class = LogEndpoints)]
impl JsLogEndpoints {
    /// `new LogEndpoints({ apiKeys, now?, limits? })`.
    #[wasm_bindgen(constructor)]
    pub fn new(options: JsValue) -> Result<JsLogEndpoints, JsValue> {
        let options: Options = if options.is_undefined() || options.is_null() {
            Options::default()
        } else {
            serde_wasm_bindgen::from_value(options).map_err(|e| {
                js_error(&Error::InvalidConfig {
                    reason: format!("{e} (expected {{ apiKeys: [\"key\" | {{ key, endpoints?, projects? }}], now?: epoch ms }})"),
                })
            })?
        };
        let fixed_now_ms = options.now;
        let config = config_from(options).map_err(|e| js_error(&e))?;
        Ok(JsLogEndpoints {
            inner: LogEndpoints::new(config),
            fixed_now_ms,
        })
    }

    fn now_micros(&self) -> i64 {
        let ms = self.fixed_now_ms.unwrap_or_else(js_sys::Date::now);
        (ms * 1000.0).floor() as i64
    }

    /// Sets (a number, epoch ms) or clears (`null`) the fixed clock.
    #[wasm_bindgen(js_name = setNow)]
    pub fn set_now(&mut self, now_ms: Option<f64>) {
        self.fixed_now_ms = now_ms;
    }

    /// `ingest(stream, batch)` → `{ accepted, rejected: [{ index, reason }], rejectedTotal }`.
    pub fn ingest(&mut self, stream: &str, batch: JsValue) -> Result<JsValue, JsValue> {
        let bytes = batch_bytes(&batch).map_err(|e| js_error(&e))?;
        let report = self
            .inner
            .ingest(stream, &bytes)
            .map_err(|e| js_error(&e))?;
        to_js(&report)
    }

    /// `query(endpointNameOrUuid, params, apiKey)` → `{ result: [...] }`.
    pub fn query(
        &mut self,
        endpoint: &str,
        params: JsValue,
        api_key: Option<String>,
    ) -> Result<JsValue, JsValue> {
        let raw = self.run(endpoint, &params, api_key.as_deref())?;
        JSON::parse(&raw.body)
    }

    /// Like `query`, but the body stays a JSON string, with the cache status:
    /// `{ body, cache: "HIT" | "MISS" | null, maxAge }` (what the edge worker serves).
    #[wasm_bindgen(js_name = queryRaw)]
    pub fn query_raw(
        &mut self,
        endpoint: &str,
        params: JsValue,
        api_key: Option<String>,
    ) -> Result<JsValue, JsValue> {
        let out = self.run(endpoint, &params, api_key.as_deref())?;
        to_js(&RawQueryResult {
            body: &out.body,
            cache: out.cache.map(|c| if c.hit { "HIT" } else { "MISS" }),
            max_age: out.cache.map(|c| c.max_age_seconds),
        })
    }

    fn run(
        &mut self,
        endpoint: &str,
        params: &JsValue,
        api_key: Option<&str>,
    ) -> Result<crate::QueryOutput, JsValue> {
        let now = self.now_micros();
        let params = params_from(params).map_err(|e| js_error(&e))?;
        self.inner
            .query(endpoint, &params, api_key, now)
            .map_err(|e| js_error(&e))
    }

    /// `endpoints()` → `[{ name, id, maxRows, cacheSeconds, cacheWarmingSeconds, sandboxing, parameters }]`.
    pub fn endpoints(&self) -> Result<JsValue, JsValue> {
        to_js(&self.inner.endpoints())
    }

    /// Re-runs cached queries that are due (call it from a timer or a cron trigger every 300 s).
    #[wasm_bindgen(js_name = warmCache)]
    pub fn warm_cache(&mut self) -> Result<JsValue, JsValue> {
        let now = self.now_micros();
        to_js(&self.inner.warm_cache(now))
    }

    #[wasm_bindgen(js_name = clearCache)]
    pub fn clear_cache(&mut self) {
        self.inner.clear_cache();
    }

    /// `{ edgeEntries, functionRows, storeBytes, cachedResults }`.
    pub fn stats(&self) -> Result<JsValue, JsValue> {
        to_js(&self.inner.stats())
    }

    /// Benchmark floor: sums the edge timestamp column (one 8-byte value per
    /// entry) and returns the sum, so nothing can skip the scan.
    #[wasm_bindgen(js_name = scanFloor)]
    pub fn scan_floor(&self) -> f64 {
        self.inner.scan_floor() as f64
    }

    /// Size of the module's linear memory in bytes; wasm memory never shrinks,
    /// so this is also the peak.
    #[wasm_bindgen(js_name = memoryBytes)]
    pub fn memory_bytes(&self) -> f64 {
        wasm_bindgen::memory()
            .unchecked_into::<js_sys::WebAssembly::Memory>()
            .buffer()
            .unchecked_into::<js_sys::ArrayBuffer>()
            .byte_length() as f64
    }

    /// `{ edgeProjects, functionProjects, functions, oldestTimestamp, newestTimestamp }`.
    pub fn catalog(&self) -> Result<JsValue, JsValue> {
        to_js(&self.inner.catalog())
    }

    /// Newest entry time held, epoch ms, or `null` when empty.
    #[wasm_bindgen(js_name = newestTimestamp)]
    pub fn newest_timestamp(&self) -> Option<f64> {
        self.inner.newest_timestamp().map(|us| us as f64 / 1000.0)
    }
}
