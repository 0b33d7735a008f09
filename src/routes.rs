//! The HTTP paths the service answers and what each one asks for: Logflare's
//! endpoint path, Supabase's Management API analytics path, the ingest paths
//! (ours and Logflare's), the ingest status and the health check. Hosts (the edge worker) ask the core which route a path is, rather
//! than matching paths themselves.

use crate::error::{Error, Result};
use crate::params::percent_decode_path;

/// What a path asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    /// `/api/endpoints/query/{name_or_uuid}`: Logflare's endpoint path.
    Query { endpoint: String },
    /// `/v1/projects/{ref}/analytics/endpoints/{name}` (and `/v0/…`): Supabase's
    /// Management API, with the project in the path.
    Management {
        project_ref: String,
        endpoint: String,
    },
    /// `/api/logs/{stream}`: a batch of log entries.
    Ingest { stream: String },
    /// `/api/logs`, `/logs`, `/api/events`: Logflare's ingest API, the source
    /// named in the query string, a header or beside the body's batch
    /// (`http::IngestCall`). Also `/logs/typecasts`, where
    /// `logflare-transport-core-js` posts when asked to typecast: the entries
    /// are kept as sent (no cast).
    LogflareIngest,
    /// `/health`: whether the service is up (no key).
    Health,
    /// `/api/ingest/status`: what the edge deployment's ingest partitions
    /// hold and have not yet distributed, what waits for a shard, and what
    /// was not kept (an unrestricted query key).
    IngestStatus,
}

impl Route {
    pub fn parse(path: &str) -> Result<Route> {
        let not_found = || Error::NotFound {
            path: path.chars().take(200).collect(),
        };
        let trimmed = path.strip_suffix('/').unwrap_or(path);
        let segments: Vec<&str> = trimmed.split('/').collect();
        let decode = |segment: &str| {
            percent_decode_path(segment)
                .filter(|s| !s.is_empty())
                .ok_or_else(not_found)
        };
        match segments.as_slice() {
            ["", "api", "endpoints", "query", endpoint] => Ok(Route::Query {
                endpoint: decode(endpoint)?,
            }),
            ["", "v1" | "v0", "projects", project_ref, "analytics", "endpoints", endpoint] => {
                Ok(Route::Management {
                    project_ref: decode(project_ref)?,
                    endpoint: decode(endpoint)?,
                })
            }
            ["", "api", "logs", stream] => Ok(Route::Ingest {
                stream: decode(stream)?,
            }),
            ["", "api", "logs"]
            | ["", "logs"]
            | ["", "logs", "typecasts"]
            | ["", "api", "events"] => Ok(Route::LogflareIngest),
            ["", "health"] => Ok(Route::Health),
            ["", "api", "ingest", "status"] => Ok(Route::IngestStatus),
            _ => Err(not_found()),
        }
    }

    /// 405 unless the route takes `method` (every route takes OPTIONS, the CORS preflight).
    pub fn check_method(&self, method: &str) -> Result<()> {
        if method == "OPTIONS" || self.methods().contains(&method) {
            return Ok(());
        }
        Err(Error::MethodNotAllowed {
            method: method.chars().take(20).collect(),
            allowed: self.methods(),
        })
    }

    /// The HTTP methods the route takes (besides OPTIONS).
    pub fn methods(&self) -> &'static [&'static str] {
        match self {
            Route::Query { .. } | Route::Management { .. } => &["GET", "POST"],
            Route::Ingest { .. } | Route::LogflareIngest => &["POST"],
            Route::Health | Route::IngestStatus => &["GET"],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths() {
        assert_eq!(Route::parse("/api/ingest/status"), Ok(Route::IngestStatus));
        assert_eq!(Route::IngestStatus.methods(), ["GET"]);
        assert_eq!(
            Route::parse("/api/endpoints/query/logs.all/"),
            Ok(Route::Query {
                endpoint: "logs.all".into()
            })
        );
        assert_eq!(
            Route::parse("/v0/projects/default/analytics/endpoints/usage.api-counts"),
            Ok(Route::Management {
                project_ref: "default".into(),
                endpoint: "usage.api-counts".into()
            })
        );
        assert_eq!(
            Route::parse("/api/logs/deno-relay-logs"),
            Ok(Route::Ingest {
                stream: "deno-relay-logs".into()
            })
        );
        assert_eq!(
            Route::parse("/api/logs/a%2Bb").map(|r| r.methods()),
            Ok(&["POST"][..])
        );
        for logflare in [
            "/api/logs",
            "/api/logs/",
            "/logs",
            "/logs/typecasts",
            "/api/events",
        ] {
            assert_eq!(
                Route::parse(logflare),
                Ok(Route::LogflareIngest),
                "{logflare}"
            );
        }
        assert_eq!(
            Route::parse("/health").map(|r| r.check_method("POST").is_err()),
            Ok(true)
        );
        for bad in [
            "/",
            "/api",
            "/api/endpoints/query/",
            "/v2/projects/p/analytics/endpoints/x",
            "/api/logs/%zz",
        ] {
            assert_eq!(
                Route::parse(bad).map_err(|e| e.code()),
                Err("not_found"),
                "{bad}"
            );
        }
    }
}
