//! The endpoint registry (names, fixed UUIDs, settings) and the typed, validated
//! parameters of each endpoint. The queries themselves live in one module each.

mod api_counts;
mod invocation_stats;
mod logs_all;

use std::sync::OnceLock;

use serde::Serialize;
use uuid::Uuid;

use crate::error::{Error, Result};
use crate::params::Params;
use crate::store::{EdgeTable, FunctionTable};
use crate::timestamp::Micros;

pub use api_counts::{ApiCountsInterval, REGEX_SIZE_LIMIT};
pub use invocation_stats::StatsInterval;
pub use logs_all::ProjectTier;

/// Upper bound on rows of every endpoint.
pub const MAX_ROWS: usize = 1000;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum EndpointKind {
    InvocationStats,
    LogsAll,
    ApiCounts,
}

/// What `endpoints()` lists about one endpoint.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EndpointInfo {
    pub name: &'static str,
    pub id: String,
    pub max_rows: usize,
    pub cache_seconds: Option<u64>,
    pub cache_warming_seconds: Option<u64>,
    pub sandboxing: bool,
    pub parameters: &'static [&'static str],
    #[serde(skip)]
    pub kind: EndpointKind,
}

pub const ALL: [EndpointKind; 3] = [
    EndpointKind::InvocationStats,
    EndpointKind::LogsAll,
    EndpointKind::ApiCounts,
];

impl EndpointKind {
    pub fn name(self) -> &'static str {
        match self {
            EndpointKind::InvocationStats => "functions.invocation-stats",
            EndpointKind::LogsAll => "logs.all",
            EndpointKind::ApiCounts => "usage.api-counts",
        }
    }

    pub fn parameters(self) -> &'static [&'static str] {
        match self {
            EndpointKind::InvocationStats => &["project", "interval", "function_id"],
            EndpointKind::LogsAll => &[
                "project",
                "project_tier",
                "iso_timestamp_start",
                "iso_timestamp_end",
            ],
            EndpointKind::ApiCounts => &["project", "interval"],
        }
    }

    /// Seconds a result stays cached; `None` when caching is disabled.
    pub fn cache_seconds(self) -> Option<u64> {
        match self {
            EndpointKind::LogsAll => None,
            _ => Some(900),
        }
    }

    pub fn cache_warming_seconds(self) -> Option<u64> {
        match self {
            EndpointKind::LogsAll => None,
            _ => Some(300),
        }
    }

    /// Version-5 UUID in the URL namespace of `logflare-endpoint:<name>`.
    pub fn id(self) -> Uuid {
        Uuid::new_v5(
            &Uuid::NAMESPACE_URL,
            format!("logflare-endpoint:{}", self.name()).as_bytes(),
        )
    }

    /// Resolves a path segment: the endpoint's name or its UUID (any case, with or without hyphens).
    pub fn resolve(name_or_uuid: &str) -> Result<EndpointKind> {
        let by_name = ALL.iter().find(|k| k.name() == name_or_uuid);
        let by_id = || {
            Uuid::try_parse(name_or_uuid)
                .ok()
                .and_then(|id| ALL.iter().find(|k| k.id() == id))
        };
        by_name
            .or_else(by_id)
            .copied()
            .ok_or_else(|| Error::EndpointNotFound {
                name_or_uuid: name_or_uuid.chars().take(200).collect(),
            })
    }

    pub fn info(self) -> EndpointInfo {
        EndpointInfo {
            name: self.name(),
            id: self.id().hyphenated().to_string(),
            max_rows: MAX_ROWS,
            cache_seconds: self.cache_seconds(),
            cache_warming_seconds: self.cache_warming_seconds(),
            sandboxing: false,
            parameters: self.parameters(),
            kind: self,
        }
    }
}

/// The endpoint list, built once.
pub fn registry() -> &'static [EndpointInfo] {
    static REGISTRY: OnceLock<Vec<EndpointInfo>> = OnceLock::new();
    REGISTRY.get_or_init(|| ALL.iter().map(|k| k.info()).collect())
}

/// A validated call of one endpoint: what the cache keys on and what runs.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Query {
    InvocationStats {
        project: String,
        interval: StatsInterval,
        function_id: Option<String>,
    },
    LogsAll {
        project: String,
        tier: ProjectTier,
        start: Option<Micros>,
        end: Option<Micros>,
    },
    ApiCounts {
        project: String,
        interval: ApiCountsInterval,
        /// Compiled-size limit of the `project` pattern (`Limits::max_regex_bytes`).
        regex_limit: usize,
        /// Set for project-restricted keys: only entries of this project count,
        /// whatever else the pattern matches (another project's URL may contain
        /// this project's ref in its path).
        entry_project: Option<String>,
    },
}

fn required<'a>(params: &'a Params, name: &'static str) -> Result<&'a str> {
    params
        .non_empty(name)
        .ok_or(Error::MissingParameter { name })
}

fn optional_timestamp(params: &Params, name: &str) -> Result<Option<Micros>> {
    params
        .non_empty(name)
        .map(|text| {
            crate::timestamp::parse_iso(text).map_err(|reason| Error::invalid(name, reason))
        })
        .transpose()
}

impl Query {
    pub fn parse(kind: EndpointKind, params: &Params, regex_limit: usize) -> Result<Query> {
        if let Some(name) = params.names().find(|n| *n == "sql" || *n == "lql") {
            return Err(Error::SandboxingDisabled {
                name: name.to_owned(),
                endpoint: kind.name(),
            });
        }
        Ok(match kind {
            EndpointKind::InvocationStats => Query::InvocationStats {
                project: required(params, "project")?.to_owned(),
                interval: StatsInterval::parse(required(params, "interval")?),
                function_id: params.non_empty("function_id").map(str::to_owned),
            },
            EndpointKind::LogsAll => Query::LogsAll {
                project: required(params, "project")?.to_owned(),
                tier: ProjectTier::parse(required(params, "project_tier")?),
                start: optional_timestamp(params, "iso_timestamp_start")?,
                end: optional_timestamp(params, "iso_timestamp_end")?,
            },
            // The pattern is compiled (and so validated) once, when the query runs;
            // an invalid one is an error, and errors are never cached.
            EndpointKind::ApiCounts => Query::ApiCounts {
                project: required(params, "project")?.to_owned(),
                interval: ApiCountsInterval::parse(required(params, "interval")?)?,
                regex_limit,
                entry_project: None,
            },
        })
    }

    pub fn kind(&self) -> EndpointKind {
        match self {
            Query::InvocationStats { .. } => EndpointKind::InvocationStats,
            Query::LogsAll { .. } => EndpointKind::LogsAll,
            Query::ApiCounts { .. } => EndpointKind::ApiCounts,
        }
    }

    /// Narrows usage.api-counts to entries of its literal project (for keys
    /// restricted to projects).
    pub(crate) fn only_entries_of_project(mut self) -> Query {
        if let Query::ApiCounts {
            project,
            entry_project,
            ..
        } = &mut self
        {
            *entry_project = Some(project.clone());
        }
        self
    }

    /// The `project` parameter (for usage.api-counts, the pattern as sent).
    pub fn project(&self) -> &str {
        match self {
            Query::InvocationStats { project, .. }
            | Query::LogsAll { project, .. }
            | Query::ApiCounts { project, .. } => project,
        }
    }

    /// Runs the query at instant `now`, returning the body `{"result":[…]}`.
    pub fn run(&self, edge: &EdgeTable, functions: &FunctionTable, now: Micros) -> Result<String> {
        let mut out = String::with_capacity(256);
        out.push_str("{\"result\":[");
        match self {
            Query::InvocationStats {
                project,
                interval,
                function_id,
            } => invocation_stats::run(
                functions,
                project,
                *interval,
                function_id.as_deref(),
                now,
                &mut out,
            ),
            Query::LogsAll {
                project,
                tier,
                start,
                end,
            } => logs_all::run(edge, project, *tier, *start, *end, now, &mut out),
            Query::ApiCounts {
                project,
                interval,
                regex_limit,
                entry_project,
            } => api_counts::run(
                edge,
                &api_counts::compile_project_regex(project, *regex_limit)?,
                entry_project.as_deref(),
                *interval,
                now,
                &mut out,
            ),
        }
        out.push_str("]}");
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_uuids_resolve_to_the_same_endpoint() {
        for kind in ALL {
            assert_eq!(EndpointKind::resolve(kind.name()), Ok(kind));
            let id = kind.id();
            assert_eq!(id.get_version_num(), 5);
            assert_eq!(
                EndpointKind::resolve(&id.hyphenated().to_string()),
                Ok(kind)
            );
            assert_eq!(
                EndpointKind::resolve(&id.simple().to_string().to_uppercase()),
                Ok(kind)
            );
        }
        assert_eq!(
            EndpointKind::resolve("logs.none").unwrap_err().status(),
            404
        );
        assert_eq!(
            EndpointKind::resolve("00000000-0000-0000-0000-000000000000")
                .unwrap_err()
                .status(),
            404
        );
    }

    #[test]
    fn registry_settings() {
        let list = registry();
        assert_eq!(list.len(), 3);
        assert!(list.iter().all(|e| e.max_rows == 1000 && !e.sandboxing));
        let logs = list.iter().find(|e| e.name == "logs.all").unwrap();
        assert_eq!(
            (logs.cache_seconds, logs.cache_warming_seconds),
            (None, None)
        );
        let stats = list
            .iter()
            .find(|e| e.name == "functions.invocation-stats")
            .unwrap();
        assert_eq!(
            (stats.cache_seconds, stats.cache_warming_seconds),
            (Some(900), Some(300))
        );
    }
}
