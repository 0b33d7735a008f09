//! HTTP as the edge worker speaks it, decided here so that the worker only
//! carries bytes: which key a request presents, a POST body's parameters, the
//! bodies the worker accepts (size, encoding), and an answer's status, headers
//! and body, both ways (a shard's HTTP answer is read back into a
//! `QueryAnswer` by the front).

use serde::{Deserialize, Serialize};

use crate::cache::{CacheStatus, QueryAnswer};
use crate::error::{Error, Result};
use crate::ingest::{
    envelope_strings, BatchForm, EntryForm, Framing, IngestReport, Rejection, Source,
};
use crate::json::Fields;
use crate::params::Params;
use crate::routes::Route;
use crate::timestamp::Micros;

/// Largest POST body of query parameters.
pub const MAX_PARAMS_BODY_BYTES: usize = 64 << 10;

/// Most bytes of a refused request's body read only to be dropped, so that
/// the client's keep-alive connection stays usable; past it, the connection
/// is given up rather than the bytes read.
pub const DRAIN_BYTES: usize = 64 << 20;

/// The request headers the service reads that a browser sends only when a
/// preflight allows them (`HttpRequest`'s, and the body's encoding).
const READ_HEADERS: [&str; 7] = [
    "X-API-KEY",
    "Authorization",
    "Content-Type",
    "Content-Encoding",
    "Idempotency-Key",
    "X-Source",
    "X-Collection",
];

/// The answer headers of the service a page's script may read (`Allow`
/// comes with a 405, `Retry-After` with a 503 or 429).
const ANSWER_HEADERS: [&str; 8] = [
    "X-Cache",
    "Cache-Control",
    "X-Endpoint-Warning",
    "X-Shards",
    "X-Objects",
    "X-Duplicate",
    "Retry-After",
    "Allow",
];

/// The CORS headers of every answer, a preflight's too: any origin may
/// call, with the headers the service reads, and read the ones it answers.
pub fn cors_headers() -> [(&'static str, String); 5] {
    [
        ("Access-Control-Allow-Origin", "*".into()),
        ("Access-Control-Allow-Methods", "GET, POST, OPTIONS".into()),
        ("Access-Control-Allow-Headers", READ_HEADERS.join(", ")),
        ("Access-Control-Expose-Headers", ANSWER_HEADERS.join(", ")),
        ("Access-Control-Max-Age", "86400".into()),
    ]
}

/// An answer as HTTP: status, headers (besides `Content-Type`) and the JSON body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HttpAnswer {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl HttpAnswer {
    fn new(status: u16, headers: Vec<(&'static str, String)>, body: String) -> HttpAnswer {
        let headers = headers
            .into_iter()
            .map(|(name, value)| (name.to_owned(), value))
            .collect();
        HttpAnswer {
            status,
            headers,
            body,
        }
    }
}

impl From<&Error> for HttpAnswer {
    fn from(error: &Error) -> HttpAnswer {
        HttpAnswer::new(error.status(), error.headers(), error.body())
    }
}

impl HttpAnswer {
    /// `GET /health` (reveals nothing of the data, needs no key): up, or
    /// 503 naming the keys that are missing (`missing`: the settings' names),
    /// since without them every batch or query is refused (503 `no_api_keys`) and a
    /// green health check would hide it.
    pub fn health(missing: &[&str]) -> HttpAnswer {
        match missing {
            [] => HttpAnswer::new(200, Vec::new(), r#"{"status":"ok"}"#.to_owned()),
            _ => {
                let reason = format!(
                    "no {} configured: every call that needs one is refused (503 no_api_keys)",
                    missing.join(" and no ")
                );
                let body = serde_json::json!({"status": "unconfigured", "reason": reason});
                HttpAnswer::new(503, Vec::new(), body.to_string())
            }
        }
    }
}

impl HttpAnswer {
    /// 200 with `body`, JSON that is never cached.
    pub fn fresh_json(body: String) -> HttpAnswer {
        HttpAnswer::new(200, vec![("Cache-Control", "no-store".to_owned())], body)
    }
}

impl From<&QueryAnswer> for HttpAnswer {
    fn from(answer: &QueryAnswer) -> HttpAnswer {
        HttpAnswer::new(200, answer.headers(), answer.body.to_string())
    }
}

impl QueryAnswer {
    /// `Cache-Control` (`max-age=<remaining>` for cached endpoints, else
    /// `no-store`), `X-Cache`, and `X-Endpoint-Warning` and `X-Shards` when set.
    pub fn headers(&self) -> Vec<(&'static str, String)> {
        let mut headers = match self.cache {
            Some(cache) => vec![
                (
                    "Cache-Control",
                    format!("max-age={}", cache.max_age_seconds),
                ),
                ("X-Cache", cache.label().to_owned()),
            ],
            None => vec![("Cache-Control", "no-store".to_owned())],
        };
        if let Some(warning) = &self.warning {
            headers.push(("X-Endpoint-Warning", header_value(warning)));
        }
        if let Some(shards) = self.shards {
            headers.push(("X-Shards", shards.to_string()));
            headers.push(("X-Objects", header_value(&objects_header(&self.objects))));
        }
        headers
    }

    /// The answer an HTTP body and its headers (as a store answers: no
    /// `X-Objects`, which only the front sends) (`headers`' names in any case) carry.
    pub fn from_http(body: String, headers: &[(String, String)]) -> QueryAnswer {
        let header = |name: &str| {
            headers
                .iter()
                .find(|(n, _)| n.eq_ignore_ascii_case(name))
                .map(|(_, v)| v.as_str())
        };
        let max_age = header("Cache-Control")
            .and_then(|v| v.trim().strip_prefix("max-age="))
            .and_then(|v| v.parse().ok());
        QueryAnswer {
            body: body.into(),
            cache: CacheStatus::from_parts(header("X-Cache"), max_age),
            warning: header("X-Endpoint-Warning").map(str::to_owned),
            shards: header("X-Shards").and_then(|v| v.parse().ok()),
            objects: Vec::new(),
        }
    }
}

/// Most objects `X-Objects` names one by one (a header has a size limit).
const MAX_OBJECTS_NAMED: usize = 100;

/// `text` as a header value may hold it: printable ASCII as it is, every
/// other byte percent-encoded. A warning names what the caller sent (a
/// parameter, a project), and a line break or a character past U+00FF makes
/// a host's `Headers` throw: the answer would be lost, and the object that
/// gave it taken for broken.
fn header_value(text: &str) -> String {
    let mut value = String::with_capacity(text.len());
    for byte in text.bytes() {
        match byte {
            b' '..=b'~' => value.push(char::from(byte)),
            other => value.push_str(&format!("%{other:02X}")),
        }
    }
    value
}

/// The objects on a request's path, comma-separated; past
/// `MAX_OBJECTS_NAMED`, how many more there were.
fn objects_header(objects: &[String]) -> String {
    let mut header = objects
        .iter()
        .take(MAX_OBJECTS_NAMED)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if objects.len() > MAX_OBJECTS_NAMED {
        header.push_str(&format!(", +{} more", objects.len() - MAX_OBJECTS_NAMED));
    }
    header
}

/// What a host passes of an HTTP request: the core reads the key, the
/// parameters and an ingest's source from it (the host only carries them).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct HttpRequest {
    pub method: String,
    pub path: String,
    /// The query string, with or without `?`.
    pub query: String,
    /// The `X-API-KEY` header.
    pub api_key: Option<String>,
    /// The `Authorization` header.
    pub authorization: Option<String>,
    /// The `X-Source` header (Logflare's ingest API).
    pub source: Option<String>,
    /// The `X-Collection` header (Logflare's other name of `X-Source`).
    pub collection: Option<String>,
    /// The `Content-Type` header.
    pub content_type: Option<String>,
    /// The `Idempotency-Key` header.
    pub idempotency_key: Option<String>,
    /// A POST body of parameters, as its bytes: read by the binding apart
    /// (text or a `Uint8Array`), so that bytes that are not UTF-8 reach
    /// `post_params`, which names them.
    #[serde(skip)]
    pub body: Option<Vec<u8>>,
}

impl HttpRequest {
    fn query_params(&self) -> Result<Params> {
        Params::parse_query_string(&self.query)
    }

    /// The key it presents (see `presented_key`).
    pub fn key(&self) -> Option<String> {
        let from_query = self.query_params().ok();
        presented_key(
            self.api_key.as_deref(),
            self.authorization.as_deref(),
            from_query.as_ref().and_then(|p| p.get("api_key")),
        )
    }

    /// What an ingest request with `body` (decoded) asks for; 404 for a
    /// path that is no ingest route, 400 naming `source_name` when Logflare's
    /// route names no source.
    pub fn ingest_call(&self, body: &[u8]) -> Result<IngestCall> {
        let idempotency_key = self.idempotency_key.clone().filter(|k| !k.is_empty());
        match Route::parse(&self.path)? {
            Route::Ingest { stream } => Ok(IngestCall {
                source: Source::stream(&stream)?,
                logflare: false,
                json_body: false,
                idempotency_key,
            }),
            Route::LogflareIngest => {
                let (parameter, name) =
                    self.logflare_source(body)?.ok_or(Error::MissingParameter {
                        name: "source_name",
                    })?;
                // As Logflare: a body sent as JSON is one JSON value (NDJSON is `application/x-ndjson`).
                let json_body = self.content_type.as_deref().is_some_and(|t| {
                    t.split(';')
                        .next()
                        .is_some_and(|t| t.trim().eq_ignore_ascii_case("application/json"))
                });
                Ok(IngestCall {
                    source: Source::logflare(&name, parameter)?,
                    logflare: true,
                    json_body,
                    idempotency_key,
                })
            }
            _ => Err(Error::NotFound {
                path: self.path.chars().take(200).collect(),
            }),
        }
    }

    /// Its parameters: a POST's body (a JSON object), else the query string's.
    pub fn params(&self) -> Result<Params> {
        if self.method.eq_ignore_ascii_case("POST") {
            post_params(self.body.as_deref().unwrap_or_default())
        } else {
            self.query_params()
        }
    }
}

/// Where Logflare's ingest API finds the source, in its order: by name,
/// then by id (docs/contract.md, "Ingest"). Each is looked for in the query
/// string, then in the body's batch envelope; then come the headers.
const SOURCE_PARAMETERS: [&str; 4] = ["source_name", "collection_name", "source", "collection"];

impl HttpRequest {
    /// The source Logflare's ingest API names, and where it was named; an
    /// empty value is no value (the next place is looked at).
    fn logflare_source(&self, body: &[u8]) -> Result<Option<(&'static str, String)>> {
        let params = self.query_params()?;
        let envelope = std::cell::OnceCell::new();
        let in_envelope = |name: &str| {
            envelope
                .get_or_init(|| envelope_strings(body))
                .iter()
                .find(|(field, _)| field == name)
                .map(|(_, value)| value.clone())
        };
        let named = SOURCE_PARAMETERS.into_iter().find_map(|name| {
            params
                .get(name)
                .map(str::to_owned)
                .filter(|v| !v.is_empty())
                .or_else(|| in_envelope(name).filter(|v| !v.is_empty()))
                .map(|v| (name, v))
        });
        Ok(named.or_else(|| {
            [
                ("X-Source", &self.source),
                ("X-Collection", &self.collection),
            ]
            .into_iter()
            .find_map(|(header, value)| {
                value.clone().filter(|v| !v.is_empty()).map(|v| (header, v))
            })
        }))
    }
}

/// What an ingest request asks for (`HttpRequest::ingest_call`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IngestCall {
    pub source: Source,
    /// Logflare's ingest API: entries normalised as Logflare does, and its
    /// answer's `message` (docs/contract.md, "Logflare's ingest API").
    pub logflare: bool,
    /// A body sent to Logflare's route as `application/json`: one JSON value.
    pub json_body: bool,
    /// The client's `Idempotency-Key`, if it sent one.
    pub idempotency_key: Option<String>,
}

impl IngestCall {
    /// How the batch reads, received at `now`; `seed` (the batch's content
    /// hash) makes the ids generated for it the same every time it is sent.
    pub fn form(&self, now: Micros, seed: u128) -> BatchForm {
        BatchForm {
            received_at: Some(now),
            framing: if self.json_body {
                Framing::Json
            } else {
                Framing::Detect
            },
            entries: if self.logflare {
                EntryForm::Logflare {
                    received: now,
                    seed,
                }
            } else {
                EntryForm::Contract
            },
        }
    }

    /// The answer to the batch `report` describes: 200 when an entry was
    /// kept; when none was, 422 `nothing_kept` (every entry refused: sending
    /// it again cannot help, so a shipper drops it) or, for a batch of no
    /// entries, 400. Logflare's route keeps its `"message": "Logged!"`.
    pub fn answer(&self, report: &IngestReport) -> HttpAnswer {
        #[derive(Serialize)]
        #[serde(rename_all = "camelCase")]
        struct Wire<'a> {
            #[serde(skip_serializing_if = "Option::is_none")]
            message: Option<&'static str>,
            #[serde(skip_serializing_if = "Option::is_none")]
            error: Option<serde_json::Value>,
            accepted: usize,
            rejected: &'a [Rejection],
            rejected_total: usize,
        }
        let refusal = match (report.accepted, report.rejected_total) {
            (0, 0) => Some(Error::UnreadableBatch {
                reason: "it holds no entries".into(),
            }),
            (0, entries) => Some(Error::NothingKept {
                entries,
                first_reason: report.rejected.first().map_or_else(
                    || "not listed".to_owned(),
                    |first| format!("entry {}: {}", first.index, first.reason),
                ),
            }),
            _ => None,
        };
        let wire = Wire {
            message: (self.logflare && refusal.is_none()).then_some("Logged!"),
            error: refusal
                .as_ref()
                .map(|e| serde_json::json!({ "code": e.code(), "message": e.to_string() })),
            accepted: report.accepted,
            rejected: &report.rejected,
            rejected_total: report.rejected_total,
        };
        let body = serde_json::to_string(&wire).unwrap_or_default();
        match refusal {
            Some(error) => HttpAnswer::new(error.status(), error.headers(), body),
            None => HttpAnswer::new(200, Vec::new(), body),
        }
    }
}

/// The key a request presents: `X-API-KEY`, else `Authorization: Bearer`,
/// else the `api_key` query parameter (README, "Edge worker").
pub fn presented_key(
    x_api_key: Option<&str>,
    authorization: Option<&str>,
    api_key_parameter: Option<&str>,
) -> Option<String> {
    let bearer = || {
        let value = authorization?.trim();
        let (scheme, token) = value.split_once(char::is_whitespace)?;
        scheme
            .eq_ignore_ascii_case("bearer")
            .then(|| token.trim())
            .filter(|t| !t.is_empty())
    };
    x_api_key
        .filter(|k| !k.is_empty())
        .or_else(bearer)
        .or(api_key_parameter)
        .map(str::to_owned)
}

/// The parameters a POST body carries: a JSON object of strings (numbers and
/// booleans are taken as their text; null is absent). Empty is no parameters.
pub fn post_params(body: &[u8]) -> Result<Params> {
    let not_an_object = |detail: String| {
        Error::invalid(
            "params",
            format!("the POST body must be a JSON object of parameters{detail}"),
        )
    };
    if body.len() > MAX_PARAMS_BODY_BYTES {
        return Err(not_an_object(format!(
            " of at most {MAX_PARAMS_BODY_BYTES} bytes"
        )));
    }
    let text =
        std::str::from_utf8(body).map_err(|e| not_an_object(format!(" (not UTF-8: {e})")))?;
    if text.trim().is_empty() {
        return Ok(Params::new());
    }
    // The fields in their order (the last of a repeated one wins, as in a query string).
    let fields = serde_json::from_str::<Fields<String>>(text)
        .map(|f| f.0)
        .map_err(|e| not_an_object(format!(" ({e})")))?;
    let mut params = Params::new();
    for (name, value) in fields {
        let text = value.get();
        let value = match text.as_bytes().first() {
            Some(b'"') => serde_json::from_str::<String>(text)
                .map_err(|e| Error::invalid(&name, e.to_string()))?,
            Some(b'n') => continue,
            Some(b't' | b'f' | b'-' | b'0'..=b'9') => number_text(text),
            _ => return Err(Error::invalid(&name, "must be a string")),
        };
        params.push(name, value)?;
    }
    Ok(params)
}

/// A JSON number or boolean as JS's `String(value)` writes it (`2.0` is `2`).
fn number_text(text: &str) -> String {
    match text.parse::<f64>() {
        Ok(n) if n.fract() == 0.0 && n.abs() < 1e21 => format!("{n}"),
        Ok(n) => n.to_string(),
        Err(_) => text.to_owned(),
    }
}

/// How an ingest body is encoded (`Content-Encoding`): the decompression the
/// host applies before handing the bytes in, if any.
pub fn body_decoding(content_encoding: Option<&str>) -> Result<Option<&'static str>> {
    match content_encoding
        .map(|e| e.trim().to_ascii_lowercase())
        .as_deref()
    {
        None | Some("" | "identity") => Ok(None),
        Some("gzip" | "x-gzip") => Ok(Some("gzip")),
        Some("deflate") => Ok(Some("deflate")),
        Some(other) => Err(Error::UnsupportedEncoding {
            encoding: other.chars().take(40).collect(),
        }),
    }
}

/// The refusal of a body longer than `limit` bytes (`declared`: its
/// `Content-Length`, when that already says so).
pub fn body_too_large(limit: usize, declared: Option<u64>) -> Error {
    Error::BatchTooLarge {
        reason: match declared {
            Some(bytes) => format!(
                "body of {bytes} bytes is larger than the limit of {limit} bytes; split it into smaller batches"
            ),
            None => format!(
                "body is larger than the limit of {limit} bytes (after decompression); split it into smaller batches"
            ),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_in_their_order() {
        assert_eq!(
            presented_key(Some("a"), Some("Bearer b"), Some("c")).as_deref(),
            Some("a")
        );
        assert_eq!(
            presented_key(None, Some("bearer  b "), Some("c")).as_deref(),
            Some("b")
        );
        assert_eq!(
            presented_key(Some(""), Some("Basic x"), Some("c")).as_deref(),
            Some("c")
        );
        assert_eq!(presented_key(None, None, None), None);
    }

    #[test]
    fn the_encodings_a_body_may_have() {
        for (header, decoding) in [
            (None, None),
            (Some(" Identity "), None),
            (Some("GZIP"), Some("gzip")),
            (Some("x-gzip"), Some("gzip")),
            (Some("deflate"), Some("deflate")),
        ] {
            assert_eq!(body_decoding(header).ok(), Some(decoding), "{header:?}");
        }
        for header in ["zstd", "snappy", "br", "gzip, br"] {
            let refused = body_decoding(Some(header)).unwrap_err();
            assert_eq!(
                (refused.status(), refused.code()),
                (415, "unsupported_encoding")
            );
            assert!(
                refused.to_string().contains(&format!("`{header}`")),
                "{refused}"
            );
        }
    }

    #[test]
    fn post_bodies() {
        let params = post_params(br#"{"project":"p","n":2,"b":true,"x":null}"#).unwrap();
        assert_eq!(
            (
                params.get("project"),
                params.get("n"),
                params.get("b"),
                params.get("x")
            ),
            (Some("p"), Some("2"), Some("true"), None)
        );
        assert_eq!(post_params(b"  ").unwrap(), Params::new());
        for bad in [&b"[1]"[..], b"{", b"{\"a\":{}}", b"\xff"] {
            assert_eq!(post_params(bad).unwrap_err().code(), "invalid_parameter");
        }
    }

    #[test]
    fn answers_through_headers_and_back() {
        let answer = QueryAnswer {
            body: "{\"result\":[]}".into(),
            cache: Some(CacheStatus {
                hit: true,
                max_age_seconds: 42,
            }),
            warning: Some("w".into()),
            shards: Some(3),
            objects: Vec::new(),
        };
        let headers = HttpAnswer::from(&answer).headers;
        assert_eq!(
            QueryAnswer::from_http(answer.body.to_string(), &headers),
            answer
        );
        assert!(headers.contains(&("X-Objects".to_owned(), String::new())));
        let plain = QueryAnswer::new("{}".into(), None, None);
        assert_eq!(plain.headers(), [("Cache-Control", "no-store".to_owned())]);
    }
}
