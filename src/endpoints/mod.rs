//! The endpoint registry and dispatch. Everything about one endpoint (its
//! parameters and their parsing, its run, its row type, its settings and the
//! description `endpoints()` gives) lives in that endpoint's module; this module
//! only lists the endpoints, resolves a name or UUID, and routes a call.

mod api_counts;
mod api_requests_count;
mod combined_stats;
mod function_buckets;
mod invocation_stats;
mod logs_all;
mod spec;

use std::sync::OnceLock;

use uuid::Uuid;

use crate::error::{Error, Result};
use crate::limits::Limits;
use crate::params::Params;
use crate::reach::{Merge, Reach};
use crate::store::Store;
use crate::timestamp::Micros;

pub use api_counts::ApiCountsInterval;
pub use invocation_stats::StatsInterval;
pub use logs_all::{ProjectTier, LONGEST_RETENTION};
pub use spec::{EndpointInfo, EndpointSpec, Parameter, Rows, MAX_ROWS};

/// What an endpoint module provides. `Query` is the validated call: what the
/// cache keys on and what runs.
pub(crate) trait Endpoint {
    const SPEC: EndpointSpec;
    type Query: std::fmt::Debug + Clone + PartialEq + Eq + std::hash::Hash;
    /// The row type, for the generated TypeScript.
    type Row: ts_rs::TS;

    fn parse(params: &Params, limits: &Limits) -> Result<Self::Query>;
    /// Parses a call of Supabase's Management API route, whose path names the
    /// project. By default: the path's project as the `project` parameter.
    fn parse_management(
        project_ref: &str,
        params: &Params,
        limits: &Limits,
    ) -> Result<Self::Query> {
        Self::parse(&params.with("project", project_ref), limits)
    }
    /// Parameters of its own that the Management API route sets itself
    /// (`project` comes from the path), which a caller's value does not change.
    const MANAGEMENT_SETS: &'static [&'static str] = &[];
    /// The `project` parameter as sent (for usage.api-counts, the pattern).
    fn project(query: &Self::Query) -> &str;
    /// Narrows a call for a key restricted to projects; most endpoints already
    /// read exactly one project and need nothing.
    fn restrict_to_project(_query: &mut Self::Query) {}
    fn run(query: &Self::Query, store: &Store, now: Micros, rows: &mut Rows) -> Result<()>;
    /// How answers of several shards (sharded deployment) combine into this one.
    const MERGE: Merge;
    /// A shard's answer when a bucket may span shards (`Merge::BucketStates`
    /// and a project-day split across shards): rows of partial state that
    /// `merge_states` combines. Other endpoints' rows already merge: theirs.
    fn run_partial(query: &Self::Query, store: &Store, now: Micros, rows: &mut Rows) -> Result<()> {
        Self::run(query, store, now, rows)
    }
    /// The rows one store would answer, from shards' `run_partial` answers.
    fn merge_states(_bodies: &[&str], _rows: &mut Rows) -> Result<()> {
        Err(Error::BadShardAnswer {
            reason: format!("{} does not merge partial states", Self::SPEC.name),
        })
    }
    /// Which shards can hold the rows a call at `now` reads.
    fn reach(query: &Self::Query, now: Micros) -> Result<Reach>;
    /// What the answer should tell beside its rows: a call that is valid but
    /// cannot match what its sender likely meant (it answers as the reference
    /// does, with rows or none, and the warning says why).
    fn warning(_query: &Self::Query, _now: Micros) -> Option<String> {
        None
    }
}

/// The registry: one line per endpoint gives its kind, its `Query` variant and
/// the dispatch of every call.
macro_rules! registry {
    ($($kind:ident => $module:ident::$endpoint:ident),+ $(,)?) => {
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum EndpointKind { $($kind),+ }

        pub const ALL: &[EndpointKind] = &[$(EndpointKind::$kind),+];

        /// A validated call of one endpoint.
        #[derive(Debug, Clone, PartialEq, Eq, Hash)]
        pub(crate) enum Query { $($kind(<$module::$endpoint as Endpoint>::Query)),+ }

        impl EndpointKind {
            pub fn spec(self) -> &'static EndpointSpec {
                match self { $(EndpointKind::$kind => &<$module::$endpoint as Endpoint>::SPEC),+ }
            }

            pub fn merge(self) -> Merge {
                match self { $(EndpointKind::$kind => <$module::$endpoint as Endpoint>::MERGE),+ }
            }

            /// `Endpoint::MANAGEMENT_SETS`.
            pub fn management_sets(self) -> &'static [&'static str] {
                match self { $(EndpointKind::$kind => <$module::$endpoint as Endpoint>::MANAGEMENT_SETS),+ }
            }

            /// The body one store would answer, from shards' partial answers
            /// (`Query::run_partial`).
            pub fn merge_states(self, bodies: &[&str]) -> Result<String> {
                let mut rows = Rows::new(self.spec().max_rows);
                match self { $(EndpointKind::$kind => <$module::$endpoint as Endpoint>::merge_states(bodies, &mut rows)?),+ }
                Ok(rows.finish())
            }

            /// The row type's TypeScript name and declaration.
            pub fn row_typescript(self, config: &ts_rs::Config) -> (String, String) {
                use ts_rs::TS;
                match self {
                    $(EndpointKind::$kind => (
                        <<$module::$endpoint as Endpoint>::Row as TS>::name(config),
                        <<$module::$endpoint as Endpoint>::Row as TS>::decl(config),
                    )),+
                }
            }
        }

        impl Query {
            pub fn parse(kind: EndpointKind, params: &Params, limits: &Limits) -> Result<Query> {
                match kind {
                    $(EndpointKind::$kind => $module::$endpoint::parse(params, limits).map(Query::$kind)),+
                }
            }

            pub fn parse_management(
                kind: EndpointKind,
                project_ref: &str,
                params: &Params,
                limits: &Limits,
            ) -> Result<Query> {
                match kind {
                    $(EndpointKind::$kind => $module::$endpoint::parse_management(project_ref, params, limits)
                        .map(Query::$kind)),+
                }
            }

            pub fn kind(&self) -> EndpointKind {
                match self { $(Query::$kind(_) => EndpointKind::$kind),+ }
            }

            pub fn project(&self) -> &str {
                match self { $(Query::$kind(q) => $module::$endpoint::project(q)),+ }
            }

            pub(crate) fn restrict_to_project(&mut self) {
                match self { $(Query::$kind(q) => $module::$endpoint::restrict_to_project(q)),+ }
            }

            pub(crate) fn reach(&self, now: Micros) -> Result<Reach> {
                match self { $(Query::$kind(q) => $module::$endpoint::reach(q, now)),+ }
            }

            /// `Endpoint::warning` of the call at `now`.
            pub(crate) fn warning(&self, now: Micros) -> Option<String> {
                match self { $(Query::$kind(q) => $module::$endpoint::warning(q, now)),+ }
            }

            /// Runs the call at instant `now`, returning the body `{"result":[…]}`.
            pub fn run(&self, store: &Store, now: Micros) -> Result<String> {
                let mut rows = Rows::new(self.kind().spec().max_rows);
                match self { $(Query::$kind(q) => $module::$endpoint::run(q, store, now, &mut rows)?),+ }
                Ok(rows.finish())
            }

            /// `run` as one shard of a split project-day answers (`Endpoint::run_partial`).
            pub fn run_partial(&self, store: &Store, now: Micros) -> Result<String> {
                // Partial states are merged before the row limit applies.
                let mut rows = Rows::new(usize::MAX);
                match self { $(Query::$kind(q) => $module::$endpoint::run_partial(q, store, now, &mut rows)?),+ }
                Ok(rows.finish())
            }
        }
    };
}

/// `sql` and `lql` replace an endpoint's query where query sandboxing is
/// enabled. It is disabled for every endpoint here, so, as Logflare does, they
/// are ignored, but never silently.
const SANDBOX_PARAMETERS: [&str; 2] = ["sql", "lql"];

/// Taken by every route beside an endpoint's own parameters: the key, when a
/// query string carries it (`http`).
const ROUTE_PARAMETERS: [&str; 1] = ["api_key"];

/// What the answer says of the parameters as sent, beside its rows: `sql` and
/// `lql` ignored; a name the endpoint does not take (a misspelt
/// `project_tier` would otherwise answer with the default tier's rows
/// without a word), with the closest one it takes; a name given more than
/// once, whose last value counts (as Logflare's parser does).
pub fn parameters_warning(kind: EndpointKind, params: &Params) -> Option<String> {
    let mut warnings = Vec::new();
    let ignored: Vec<String> = SANDBOX_PARAMETERS
        .into_iter()
        .filter(|name| params.get(name).is_some())
        .map(|name| format!("`{name}`"))
        .collect();
    if !ignored.is_empty() {
        let stream = kind.spec().stream;
        let elsewhere: Vec<String> = SANDBOX_PARAMETERS
            .into_iter()
            .filter_map(|name| params.get(name))
            .flat_map(sources_read)
            .filter(|source| !source.eq_ignore_ascii_case(stream))
            .map(|source| format!("`{source}`"))
            .collect();
        let reads = match elsewhere.is_empty() {
            true => String::new(),
            false => format!(
                "; the query asks for {}, which {} does not read",
                elsewhere.join(" and "),
                kind.name()
            ),
        };
        warnings.push(format!(
            "parameter {} ignored: query sandboxing is disabled for endpoint {}, which reads {stream} whatever the query{reads}",
            ignored.join(" and "),
            kind.name()
        ));
    }
    let taken = kind.spec().parameters;
    for (at, name) in params.names().enumerate() {
        // Each name once, where it first comes.
        if params.names().position(|other| other == name) != Some(at) {
            continue;
        }
        // A name another endpoint takes is a client's usual set (Studio
        // sends `interval` and `function_id` to logs.all too), not a slip.
        let known = ALL
            .iter()
            .any(|other| other.spec().parameters.iter().any(|p| p.name == name))
            || SANDBOX_PARAMETERS.contains(&name)
            || ROUTE_PARAMETERS.contains(&name);
        if !known {
            let shown: String = name.chars().take(64).collect();
            warnings.push(match closest(name, taken) {
                Some(meant) => {
                    format!("unknown parameter `{shown}` ignored (did you mean `{meant}`?)")
                }
                None => format!(
                    "unknown parameter `{shown}` ignored ({} takes {})",
                    kind.name(),
                    taken.iter().map(|p| p.name).collect::<Vec<_>>().join(", ")
                ),
            });
        }
        let times = params.names().filter(|&other| other == name).count();
        if known && times > 1 {
            warnings.push(format!(
                "parameter `{name}` given {times} times: the last value is used"
            ));
        }
    }
    (!warnings.is_empty()).then(|| warnings.join("; "))
}

/// The log sources (`…_logs`) a query names after `from` or `join`, each
/// once, at most four: what a sandboxed query would have read.
fn sources_read(query: &str) -> Vec<&str> {
    let mut sources: Vec<&str> = Vec::new();
    let mut words = query
        .split(|c: char| c.is_whitespace() || c == ',')
        .filter(|word| !word.is_empty());
    while let Some(word) = words.next() {
        if !(word.eq_ignore_ascii_case("from") || word.eq_ignore_ascii_case("join")) {
            continue;
        }
        let Some(table) = words.next() else {
            break;
        };
        let table = table.trim_matches(|c: char| matches!(c, '`' | '"' | ';' | ')'));
        // `dataset.edge_logs` is `edge_logs`; `extract(hour from timestamp)`
        // names no table: log sources are named `…_logs`.
        let table = table.rsplit('.').next().unwrap_or_default();
        let is_source = table.len() > "_logs".len()
            && table
                .get(table.len() - "_logs".len()..)
                .is_some_and(|end| end.eq_ignore_ascii_case("_logs"))
            && table.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if is_source && !sources.contains(&table) && sources.len() < 4 {
            sources.push(table);
        }
    }
    sources
}

/// The parameter a misspelling of `name` most likely meant: at most two
/// edits (one for a short name) away, ignoring case.
fn closest(name: &str, parameters: &[Parameter]) -> Option<&'static str> {
    let name = name.to_ascii_lowercase();
    let allowed = if name.len() <= 4 { 1 } else { 2 };
    parameters
        .iter()
        // Lengths further apart than the edits allowed cannot match, and a
        // long name (a POST body's may be any length) is never measured.
        .filter(|p| name.len().abs_diff(p.name.len()) <= allowed)
        .map(|p| (edit_distance(&name, p.name), p.name))
        .filter(|&(distance, _)| distance <= allowed)
        .min_by_key(|&(distance, _)| distance)
        .map(|(_, meant)| meant)
}

/// Levenshtein distance over bytes.
fn edit_distance(a: &str, b: &str) -> usize {
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    for (i, x) in a.bytes().enumerate() {
        let mut row = Vec::with_capacity(b.len() + 1);
        row.push(i + 1);
        for ((y, diagonal), above) in b.bytes().zip(&previous).zip(previous.iter().skip(1)) {
            let left = row.last().copied().unwrap_or(usize::MAX - 1);
            row.push(
                (diagonal + usize::from(x != y))
                    .min(above + 1)
                    .min(left + 1),
            );
        }
        previous = row;
    }
    previous.last().copied().unwrap_or(0)
}

registry! {
    InvocationStats => invocation_stats::InvocationStats,
    LogsAll => logs_all::LogsAll,
    ApiCounts => api_counts::ApiCounts,
    ApiRequestsCount => api_requests_count::ApiRequestsCount,
    CombinedStats => combined_stats::CombinedStats,
}

impl EndpointKind {
    pub fn name(self) -> &'static str {
        self.spec().name
    }

    /// Version-5 UUID in the URL namespace of `logflare-endpoint:<name>`.
    pub fn id(self) -> Uuid {
        Uuid::new_v5(
            &Uuid::NAMESPACE_URL,
            format!("logflare-endpoint:{}", self.name()).as_bytes(),
        )
    }

    /// Resolves a path segment: the endpoint's name, one of its aliases, or its
    /// UUID (any case, with or without hyphens).
    pub fn resolve(name_or_uuid: &str) -> Result<EndpointKind> {
        let by_name = ALL
            .iter()
            .find(|k| k.name() == name_or_uuid || k.spec().aliases.contains(&name_or_uuid));
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

    /// Resolves the name in a Management API path: names only, and only the
    /// endpoints that route serves.
    pub fn resolve_management(name: &str) -> Result<EndpointKind> {
        let served = || ALL.iter().filter(|k| k.spec().management_api);
        served()
            .find(|k| k.name() == name)
            .copied()
            .ok_or_else(|| Error::NotOnManagementApi {
                name: name.chars().take(200).collect(),
                served: served().map(|k| k.name()).collect::<Vec<_>>().join(", "),
            })
    }

    pub fn info(self) -> EndpointInfo {
        EndpointInfo::new(self.spec(), self.id().hyphenated().to_string(), self)
    }
}

/// The endpoint list, built once.
pub fn registry() -> &'static [EndpointInfo] {
    static REGISTRY: OnceLock<Vec<EndpointInfo>> = OnceLock::new();
    REGISTRY.get_or_init(|| ALL.iter().map(|k| k.info()).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_uuids_resolve_to_the_same_endpoint() {
        for &kind in ALL {
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
        assert_eq!(list.len(), 5);
        assert!(list
            .iter()
            .all(|e| e.spec.max_rows == 1000 && !e.sandboxing));
        let logs = list.iter().find(|e| e.spec.name == "logs.all").unwrap();
        assert_eq!(
            (logs.spec.cache_seconds, logs.spec.cache_warming_seconds),
            (None, None)
        );
        let stats = list
            .iter()
            .find(|e| e.spec.name == "functions.invocation-stats")
            .unwrap();
        assert_eq!(
            (stats.spec.cache_seconds, stats.spec.cache_warming_seconds),
            (Some(900), Some(300))
        );
    }
}
