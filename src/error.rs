//! The one error type of the core. Every failure a caller can see is a variant
//! here, declared once with its HTTP status, its stable machine-readable code
//! and when it happens (`errors!`); the documentation's error table is
//! generated from that list (`Error::TABLE`). Messages name what was wrong (the
//! parameter, the entry, the stream). Keys are never echoed.

use std::fmt;

use serde::{Deserialize, Serialize};

/// One row of the error table: what `Error::TABLE` lists per variant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ErrorKind {
    pub status: u16,
    pub code: &'static str,
    /// When a caller gets it.
    pub when: &'static str,
}

/// Declares the error enum from one list: each variant with its fields, its
/// status, its code and when it happens.
macro_rules! errors {
    ($(
        $(#[doc = $doc:literal])*
        $variant:ident $({ $($field:ident: $ty:ty),* $(,)? })? => $status:literal, $code:literal, $when:literal;
    )+) => {
        #[derive(Debug, Clone, PartialEq, Eq)]
        pub enum Error {
            $( $(#[doc = $doc])* $variant $({ $($field: $ty),* })?, )+
        }

        impl Error {
            /// Every variant's status, code and when, in declaration order.
            pub const TABLE: &'static [ErrorKind] = &[
                $( ErrorKind { status: $status, code: $code, when: $when }, )+
            ];

            /// This error's row of `TABLE`.
            pub fn kind(&self) -> &'static ErrorKind {
                let mut at = 0usize;
                $(
                    if let Error::$variant { .. } = self {
                        return Error::TABLE.get(at).unwrap_or(&UNKNOWN);
                    }
                    at += 1;
                )+
                let _ = at;
                &UNKNOWN
            }
        }
    };
}

/// Never returned (`kind` finds every variant); keeps `kind` free of panics.
const UNKNOWN: ErrorKind = ErrorKind {
    status: 500,
    code: "internal_error",
    when: "",
};

errors! {
    /// A required query parameter is absent or empty.
    MissingParameter { name: &'static str } => 400, "missing_parameter",
        "a required parameter is absent or empty";
    /// A parameter is present but its value cannot be used.
    InvalidParameter { name: String, reason: String } => 400, "invalid_parameter",
        "malformed timestamp, invalid or too large regex, unknown `usage.api-counts` or `functions.combined-stats` interval, a Management API `logs.all` range over 24 hours, a value over 4096 bytes, an object or array as a value (numbers and booleans are read as their text, as in a query string), a bad POST body, a JS argument of the wrong type (a number as the endpoint, stream, path or key)";
    /// No API key was supplied.
    MissingApiKey => 401, "missing_api_key",
        "no key in `X-API-KEY`, `Authorization: Bearer` or `api_key`; checked before anything else but whether the service has keys at all (`no_api_keys`), so nothing is revealed to a bad key";
    /// The API key is not one of the configured keys.
    InvalidApiKey => 401, "invalid_api_key",
        "the key is not one of the configured keys";
    /// The service holds no key of the kind a call needs (no query keys, or
    /// no ingest keys), so no such call can be let in: its configuration, not
    /// the caller, is at fault, and a shipper that retries loses nothing once
    /// keys are set (a 401 would make it drop the batch).
    NoApiKeys { purpose: &'static str } => 503, "no_api_keys",
        "the service has no keys of the kind the call needs (query: the `apiKeys` option, the worker's `API_KEYS`; ingest: `ingestKeys`, `INGEST_KEYS`)";
    /// The key is valid but restricted away from this endpoint or project.
    Forbidden { reason: String } => 403, "forbidden",
        "the key is restricted away from the endpoint or project, or is a key of the other kind (a query key used to ingest, an ingest key used to query)";
    /// No endpoint has this name or UUID.
    EndpointNotFound { name_or_uuid: String } => 404, "endpoint_not_found",
        "no endpoint has this name or UUID (only after a valid key)";
    /// The Management API route serves no endpoint of this name.
    NotOnManagementApi { name: String, served: String } => 404, "endpoint_not_found",
        "the Management API route does not serve this endpoint";
    /// No route has this path.
    NotFound { path: String } => 404, "not_found",
        "no route has this path";
    /// The route does not take this HTTP method.
    MethodNotAllowed { method: String, allowed: &'static [&'static str] } => 405, "method_not_allowed",
        "the route does not take this method (the answer's `Allow` lists those it takes)";
    /// The stream name of an ingest call is not one the endpoints read.
    UnknownStream { name: String } => 400, "unknown_stream",
        "`/api/logs/{stream}` names a stream the endpoints do not read (Logflare's `/api/logs?source_name=` takes any source)";
    /// The batch as a whole cannot be read (not JSON, not UTF-8, wrong top-level shape).
    UnreadableBatch { reason: String } => 400, "unreadable_batch",
        "a body that is not JSON, NDJSON or UTF-8, or whose encoding cannot be read";
    /// The body's `Content-Encoding` is not one the worker decodes.
    UnsupportedEncoding { encoding: String } => 415, "unsupported_encoding",
        "an ingest body in a `Content-Encoding` other than gzip or deflate (Vector: `compression` `gzip` or `zlib`; zstd and snappy are not read, nor by Logflare)";
    /// A file fed in pieces (`LogFeed`) cannot be read as a whole.
    UnreadableFile { reason: String } => 400, "unreadable_batch",
        "a file fed in pieces (`LogFeed`) that cannot be read as a whole";
    /// Bytes handed to `from_snapshot` are not a snapshot this build can read.
    InvalidSnapshot { reason: String } => 400, "invalid_snapshot",
        "bytes handed to `fromSnapshot` that are not a whole snapshot this build reads";
    /// Invalid service configuration (constructor options).
    InvalidConfig { reason: String } => 400, "invalid_config",
        "constructor options that cannot be used (an empty key, an unknown endpoint in a restriction, a misspelt option, limit or key field; the worker answers 503 for such settings), or a store budget in MiB that is not a whole number from 1 to 4095 (`storeBytesOfMiB`)";
    /// The batch exceeds a configured size limit.
    BatchTooLarge { reason: String } => 413, "payload_too_large",
        "a body or batch over its size or entry limit, or bigger than the store's whole budget";
    /// Not one entry of an ingested batch could be kept (each is listed with
    /// its reason): sending it again cannot help, so a shipper drops it.
    NothingKept { entries: usize, first_reason: String } => 422, "nothing_kept",
        "an ingested batch none of whose entries could be kept (the answer lists each one's reason)";
    /// An `Idempotency-Key` sent again within the resend window (docs/contract.md,
    /// "Resends") with a batch of other content: the first batch was kept
    /// under it, so this one is not; a retry cannot help, a new key can.
    IdempotencyKeyReused { key: String } => 422, "idempotency_key_reused",
        "an `Idempotency-Key` that came within 24 hours with a batch of other content: nothing of this batch is kept (send it under a new key)";
    /// Accepting the batch would take the store past its memory budget; the batch
    /// was refused whole and the store is unchanged. A capacity refusal: a
    /// shipper retries, and retention may make room.
    /// `of` names the budget: the store's, or other sources' share of it.
    StoreFull { needed: usize, used: usize, budget: usize, of: &'static str } => 503, "store_full",
        "the store's memory budget would be passed: the batch is refused whole; retry later";
    /// A fault inside the engine (a wasm trap); the instance was started again.
    Internal => 500, "internal_error",
        "a fault inside the engine; it was restarted, retry the request";
    /// A shard's answer (sharded deployment) cannot be combined with the others.
    BadShardAnswer { reason: String } => 502, "bad_shard_answer",
        "a shard's answer could not be merged or read (never expected; a bug to report)";
    /// Seal jobs or sealed blocks a host handed between the module's instances do not read.
    BadSealJobs { reason: String } => 500, "bad_seal_jobs",
        "seal jobs or sealed text blocks handed between two instances of the module (`takeSealJobs`, `sealBlocks`, `installSealed`) that do not read as the module wrote them (never expected; a bug to report)";
    /// A read job or its answer a host handed between the module's instances does not read.
    BadReadJob { reason: String } => 500, "bad_read_job",
        "a read job or a batch read by one, handed between two instances of the module (`readJob`, `readBatch`, `ingestRead`), that does not read as the module wrote it (never expected; a bug to report)";
    /// A part of the deployment (a shard, the directory, the engine) did not answer.
    Unavailable { reason: String } => 503, "unavailable",
        "a part of the deployment did not answer or is restarting; retry";
    /// The batch could not be written to durable storage and was not kept.
    StorageUnavailable { reason: String } => 503, "storage_unavailable",
        "a storage write failed (the batch was not kept; retry), or a text block the store keeps in the host's storage is missing or changed when read (logs.all)";
}

impl Error {
    /// Stable code, part of the public contract: never rename one.
    pub fn code(&self) -> &'static str {
        self.kind().code
    }

    /// HTTP status the edge worker answers with.
    pub fn status(&self) -> u16 {
        self.kind().status
    }

    /// The parameter the error is about, when it is about one.
    pub fn parameter(&self) -> Option<&str> {
        match self {
            Error::MissingParameter { name } => Some(name),
            Error::InvalidParameter { name, .. } => Some(name),
            _ => None,
        }
    }

    /// What is wrong with the parameter the error is about, in plain words
    /// (a form shows it beside that parameter's control).
    pub fn parameter_problem(&self) -> Option<String> {
        match self {
            Error::MissingParameter { name } => Some(format!("{name} is required")),
            Error::InvalidParameter { reason, .. } => Some(reason.clone()),
            _ => None,
        }
    }

    /// Seconds after which a retry may succeed (`Retry-After`), for the
    /// statuses a log shipper retries on.
    pub fn retry_after_seconds(&self) -> Option<u32> {
        match self {
            // Room comes back with retention or a bigger budget, and keys
            // with a deployment's settings: not in a second.
            Error::StoreFull { .. } | Error::NoApiKeys { .. } => Some(30),
            _ => matches!(self.status(), 429 | 503).then_some(1),
        }
    }

    /// The answer's headers beside `Content-Type`: `Allow` for 405,
    /// `Retry-After` where a retry may succeed.
    pub fn headers(&self) -> Vec<(&'static str, String)> {
        let mut headers = Vec::new();
        if let Error::MethodNotAllowed { allowed, .. } = self {
            let mut methods = allowed.to_vec();
            methods.push("OPTIONS");
            headers.push(("Allow", methods.join(", ")));
        }
        if let Some(seconds) = self.retry_after_seconds() {
            headers.push(("Retry-After", seconds.to_string()));
        }
        headers
    }

    /// The answer's body: `{"error": {"code", "message"}}`.
    pub fn body(&self) -> String {
        serde_json::json!({ "error": { "code": self.code(), "message": self.to_string() } })
            .to_string()
    }

    pub(crate) fn invalid(name: &str, reason: impl Into<String>) -> Self {
        Error::InvalidParameter {
            name: name.to_owned(),
            reason: reason.into(),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::MissingParameter { name } => {
                write!(f, "missing required parameter `{name}`")
            }
            Error::InvalidParameter { name, reason } => {
                write!(f, "invalid parameter `{name}`: {reason}")
            }
            Error::MissingApiKey => write!(
                f,
                "missing API key: send it in the X-API-KEY header (or Authorization: Bearer, or api_key)"
            ),
            Error::InvalidApiKey => write!(f, "invalid API key"),
            Error::NoApiKeys { purpose } => write!(
                f,
                "this service has no {purpose} keys, so it lets no such call in: configure at least one"
            ),
            Error::Forbidden { reason } => write!(f, "forbidden: {reason}"),
            Error::EndpointNotFound { name_or_uuid } => {
                write!(f, "no endpoint named or with id `{name_or_uuid}`")
            }
            Error::NotOnManagementApi { name, served } => write!(
                f,
                "the Management API route has no endpoint `{name}`; it serves {served}"
            ),
            Error::NotFound { path } => write!(f, "no such path: {path}"),
            Error::MethodNotAllowed { method, allowed } => write!(
                f,
                "method {method} is not allowed here; use {}",
                allowed.join(" or ")
            ),
            Error::UnknownStream { name } => write!(
                f,
                "unknown log stream `{name}`: expected edge_logs (cloudflare.logs.prod) or function_edge_logs (deno-relay-logs)"
            ),
            Error::UnreadableBatch { reason } => write!(f, "unreadable batch: {reason}"),
            Error::UnsupportedEncoding { encoding } => write!(
                f,
                "unsupported Content-Encoding `{encoding}`: send the body plain, gzip or deflate (Vector's http sink: `compression` \"gzip\" or \"zlib\")"
            ),
            Error::UnreadableFile { reason } => f.write_str(reason),
            Error::IdempotencyKeyReused { key } => write!(
                f,
                "Idempotency-Key `{key}` came within 24 hours with a batch of other content; nothing of this batch was kept: send it under a new key"
            ),
            Error::InvalidSnapshot { reason } => write!(f, "invalid snapshot: {reason}"),
            Error::InvalidConfig { reason } => write!(f, "invalid configuration: {reason}"),
            Error::BatchTooLarge { reason } => write!(f, "batch too large: {reason}"),
            Error::NothingKept {
                entries,
                first_reason,
            } => write!(
                f,
                "none of the batch's {entries} entries could be kept (the first: {first_reason})"
            ),
            Error::StoreFull {
                needed,
                used,
                budget,
                of,
            } => write!(
                f,
                "store full: the batch needs about {needed} bytes, {of} holds {used} of its {budget}-byte budget (limits.maxStoreBytes); nothing from this batch was kept"
            ),
            Error::Internal => write!(
                f,
                "internal error in the query engine; it was restarted, retry the request"
            ),
            Error::BadShardAnswer { reason } => {
                write!(f, "a shard's answer could not be combined: {reason}")
            }
            Error::BadSealJobs { reason } => write!(f, "seal jobs do not read: {reason}"),
            Error::BadReadJob { reason } => write!(f, "a read job does not read: {reason}"),
            Error::Unavailable { reason } => write!(f, "unavailable: {reason}; retry shortly"),
            Error::StorageUnavailable { reason } => write!(
                f,
                "the batch could not be stored and was not kept; retry later ({reason})"
            ),
        }
    }
}

impl std::error::Error for Error {}

/// An error as another object reported it (a shard's answer): what the
/// caller is told of a part that failed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorReport {
    pub status: u16,
    pub code: String,
    pub message: String,
}

impl From<&Error> for ErrorReport {
    fn from(error: &Error) -> ErrorReport {
        ErrorReport {
            status: error.status(),
            code: error.code().to_owned(),
            message: error.to_string(),
        }
    }
}

impl ErrorReport {
    /// What an object answered with `status` and an error `body`
    /// (`{"error": {"code", "message"}}`), or, when the body is not one, that
    /// it did not answer properly.
    pub fn from_answer(status: u16, body: &str) -> ErrorReport {
        #[derive(Deserialize)]
        struct Wire {
            error: Inner,
        }
        #[derive(Deserialize)]
        struct Inner {
            code: String,
            message: String,
        }
        match serde_json::from_str::<Wire>(body) {
            Ok(Wire { error }) => ErrorReport {
                status,
                code: error.code,
                message: error.message,
            },
            Err(_) => ErrorReport::from(&Error::Unavailable {
                reason: format!("it answered {status} without an error body"),
            }),
        }
    }
}

pub type Result<T> = std::result::Result<T, Error>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_variant_finds_its_row() {
        let samples = [
            (Error::MissingApiKey, 401, "missing_api_key"),
            (Error::Internal, 500, "internal_error"),
            (
                Error::Unavailable { reason: "x".into() },
                503,
                "unavailable",
            ),
            (
                Error::StoreFull {
                    needed: 1,
                    used: 2,
                    budget: 3,
                    of: "the store",
                },
                503,
                "store_full",
            ),
        ];
        for (error, status, code) in samples {
            assert_eq!((error.status(), error.code()), (status, code));
        }
        let codes: Vec<&str> = Error::TABLE.iter().map(|k| k.code).collect();
        assert!(codes.contains(&"method_not_allowed") && codes.contains(&"storage_unavailable"));
        let refused = Error::MethodNotAllowed {
            method: "PUT".into(),
            allowed: &["POST"],
        };
        assert_eq!(refused.headers(), [("Allow", "POST, OPTIONS".to_owned())]);
        assert_eq!(
            Error::Unavailable { reason: "x".into() }.headers(),
            [("Retry-After", "1".to_owned())]
        );
    }
}
