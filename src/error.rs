//! The one error type of the core. Every failure a caller can see is a variant here,
//! with a stable machine-readable code, an HTTP status and a message that names
//! what was wrong (the parameter, the entry, the stream). Keys are never echoed.

use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// A required query parameter is absent or empty.
    MissingParameter { name: &'static str },
    /// A parameter is present but its value cannot be used.
    InvalidParameter { name: String, reason: String },
    /// No API key was supplied.
    MissingApiKey,
    /// The API key is not one of the configured keys.
    InvalidApiKey,
    /// The key is valid but restricted away from this endpoint or project.
    Forbidden { reason: String },
    /// No endpoint has this name or UUID.
    EndpointNotFound { name_or_uuid: String },
    /// The Management API route serves no endpoint of this name.
    NotOnManagementApi { name: String, served: String },
    /// No route has this path.
    NotFound { path: String },
    /// The stream name of an ingest call is not one the endpoints read.
    UnknownStream { name: String },
    /// The batch as a whole cannot be read (not JSON, not UTF-8, wrong top-level shape).
    UnreadableBatch { reason: String },
    /// A file fed in pieces (`LogFeed`) cannot be read as a whole.
    UnreadableFile { reason: String },
    /// The batch exceeds a configured size limit.
    BatchTooLarge { reason: String },
    /// Accepting the batch would take the store past its memory budget; the batch
    /// was refused whole and the store is unchanged.
    StoreFull {
        needed: usize,
        used: usize,
        budget: usize,
    },
    /// Bytes handed to `from_snapshot` are not a snapshot this build can read.
    InvalidSnapshot { reason: String },
    /// Invalid service configuration (constructor options).
    InvalidConfig { reason: String },
    /// A shard's answer (sharded deployment) cannot be combined with the others.
    BadShardAnswer { reason: String },
}

impl Error {
    /// Stable code, part of the public contract (section 3): never rename one.
    pub fn code(&self) -> &'static str {
        match self {
            Error::MissingParameter { .. } => "missing_parameter",
            Error::InvalidParameter { .. } => "invalid_parameter",
            Error::MissingApiKey => "missing_api_key",
            Error::InvalidApiKey => "invalid_api_key",
            Error::Forbidden { .. } => "forbidden",
            Error::EndpointNotFound { .. } | Error::NotOnManagementApi { .. } => {
                "endpoint_not_found"
            }
            Error::NotFound { .. } => "not_found",
            Error::UnknownStream { .. } => "unknown_stream",
            Error::UnreadableBatch { .. } | Error::UnreadableFile { .. } => "unreadable_batch",
            Error::BatchTooLarge { .. } => "payload_too_large",
            Error::StoreFull { .. } => "store_full",
            Error::InvalidSnapshot { .. } => "invalid_snapshot",
            Error::InvalidConfig { .. } => "invalid_config",
            Error::BadShardAnswer { .. } => "bad_shard_answer",
        }
    }

    /// HTTP status the edge worker answers with.
    pub fn status(&self) -> u16 {
        match self {
            Error::MissingParameter { .. }
            | Error::InvalidParameter { .. }
            | Error::UnknownStream { .. }
            | Error::UnreadableBatch { .. }
            | Error::UnreadableFile { .. }
            | Error::InvalidSnapshot { .. }
            | Error::InvalidConfig { .. } => 400,
            Error::MissingApiKey | Error::InvalidApiKey => 401,
            Error::Forbidden { .. } => 403,
            Error::EndpointNotFound { .. }
            | Error::NotOnManagementApi { .. }
            | Error::NotFound { .. } => 404,
            Error::BatchTooLarge { .. } | Error::StoreFull { .. } => 413,
            Error::BadShardAnswer { .. } => 502,
        }
    }

    /// The parameter the error is about, when it is about one.
    pub fn parameter(&self) -> Option<&str> {
        match self {
            Error::MissingParameter { name } => Some(name),
            Error::InvalidParameter { name, .. } => Some(name),
            _ => None,
        }
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
            Error::Forbidden { reason } => write!(f, "forbidden: {reason}"),
            Error::EndpointNotFound { name_or_uuid } => {
                write!(f, "no endpoint named or with id `{name_or_uuid}`")
            }
            Error::NotOnManagementApi { name, served } => write!(
                f,
                "the Management API route has no endpoint `{name}`; it serves {served}"
            ),
            Error::NotFound { path } => write!(f, "no such path: {path}"),
            Error::UnknownStream { name } => write!(
                f,
                "unknown log stream `{name}`: expected edge_logs (cloudflare.logs.prod) or function_edge_logs (deno-relay-logs)"
            ),
            Error::UnreadableBatch { reason } => write!(f, "unreadable batch: {reason}"),
            Error::UnreadableFile { reason } => f.write_str(reason),
            Error::BatchTooLarge { reason } => write!(f, "batch too large: {reason}"),
            Error::StoreFull { needed, used, budget } => write!(
                f,
                "store full: the batch needs about {needed} bytes, the store holds {used} of its {budget}-byte budget (limits.maxStoreBytes); nothing from this batch was kept"
            ),
            Error::InvalidSnapshot { reason } => write!(f, "invalid snapshot: {reason}"),
            Error::InvalidConfig { reason } => write!(f, "invalid configuration: {reason}"),
            Error::BadShardAnswer { reason } => {
                write!(f, "a shard's answer could not be combined: {reason}")
            }
        }
    }
}

impl std::error::Error for Error {}

pub type Result<T> = std::result::Result<T, Error>;
