//! logs.all: the newest edge request log entries of one project, within the
//! tier's retention window and an optional (start, end] range. This module owns
//! the endpoint: settings, parameters, parsing, the run and the row.

use serde::Serialize;
use ts_rs::TS;

use super::spec::{
    named_values, optional_timestamp, required, EndpointSpec, Parameter, Rows, MAX_ROWS,
};
use super::Endpoint;
use crate::error::{Error, Result};
use crate::json;
use crate::limits::Limits;
use crate::params::Params;
use crate::reach::{Merge, Projects, Reach};
use crate::store::{upper_bound, EdgeTable, Span, Store};
use crate::timestamp::{format_rfc3339, Micros, DAY, MINUTE};

/// Fixed row limit of the logs.all query (below the endpoint's 1000 max rows).
pub const LIMIT: usize = 100;

/// The longest retention of any tier: stored logs older than this are never read.
pub const LONGEST_RETENTION: Micros = 90 * DAY;

named_values! {
    /// The `project_tier` parameter: the retention window.
    pub enum ProjectTier {
        Free = "FREE",
        Pro = "PRO",
        PayAsYouGo = "PAYG",
        Enterprise = "ENTERPRISE",
    }
}

impl ProjectTier {
    /// Any value other than the four named tiers behaves as FREE.
    pub fn parse(value: &str) -> ProjectTier {
        ProjectTier::from_name(value).unwrap_or(ProjectTier::Free)
    }

    pub fn retention(self) -> Micros {
        match self {
            ProjectTier::Free => DAY,
            ProjectTier::Pro => 7 * DAY,
            ProjectTier::PayAsYouGo | ProjectTier::Enterprise => LONGEST_RETENTION,
        }
    }
}

pub(crate) struct LogsAll;

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct LogsAllQuery {
    project: String,
    tier: ProjectTier,
    start: Option<Micros>,
    end: Option<Micros>,
    /// No bounds on the Management API route: the last minute before the call.
    window_from_now: bool,
}

/// Longest range the Management API route answers.
const MANAGEMENT_MAX_RANGE: Micros = DAY;

/// One log entry. Written by hand (`write_row`) so that `metadata` is copied as
/// the raw text it arrived as, with no parse and re-serialisation per row; this
/// type gives its TypeScript shape.
#[derive(Serialize, TS)]
#[allow(dead_code)]
pub struct LogsAllRow {
    id: String,
    /// Microseconds since the Unix epoch.
    timestamp: Micros,
    event_message: Option<String>,
    /// Exactly as ingested; its shape depends on the log stream.
    #[ts(type = "unknown")]
    metadata: (),
}

impl Endpoint for LogsAll {
    const SPEC: EndpointSpec = EndpointSpec {
        name: "logs.all",
        aliases: &[],
        management_api: true,
        summary: "The newest edge request log entries of one project (at most 100), within its tier's retention.",
        stream: "edge_logs",
        max_rows: MAX_ROWS,
        cache_seconds: None,
        cache_warming_seconds: None,
        parameters: &[
            Parameter::text("project", true, "abcdefghijklmnopqrst", "project reference; only its entries are returned"),
            Parameter::choice("project_tier", ProjectTier::NAMES, "FREE", "retention window: 1 day FREE, 7 days PRO, 90 days PAYG and ENTERPRISE; any other value, or none, behaves as FREE").optional(),
            Parameter::text("iso_timestamp_start", false, "2026-11-20T10:00:00Z", "exclusive lower bound (ISO 8601); empty means none"),
            Parameter::text("iso_timestamp_end", false, "2026-11-20 12:00:00", "inclusive upper bound (ISO 8601); empty means none"),
        ],
    };
    type Query = LogsAllQuery;
    type Row = LogsAllRow;

    fn parse(params: &Params, _limits: &Limits) -> Result<LogsAllQuery> {
        Ok(LogsAllQuery {
            project: required(params, "project")?.to_owned(),
            // Logflare binds a missing parameter as NULL, which takes the
            // "any other value" branch: FREE.
            tier: ProjectTier::parse(params.non_empty("project_tier").unwrap_or("")),
            start: optional_timestamp(params, "iso_timestamp_start")?,
            end: optional_timestamp(params, "iso_timestamp_end")?,
            window_from_now: false,
        })
    }

    /// The Management API's rules: no tier (the longest retention); no bounds
    /// is the last minute, one bound a minute beside it, and a range over 24
    /// hours is refused.
    /// The route reads every project's 90 days (`ProjectTier::Enterprise`).
    const MANAGEMENT_SETS: &'static [&'static str] = &["project_tier"];

    fn parse_management(
        project_ref: &str,
        params: &Params,
        _limits: &Limits,
    ) -> Result<LogsAllQuery> {
        let start = optional_timestamp(params, "iso_timestamp_start")?;
        let end = optional_timestamp(params, "iso_timestamp_end")?;
        let (start, end) = match (start, end) {
            (Some(start), Some(end)) => {
                if end < start {
                    return Err(Error::invalid(
                        "iso_timestamp_end",
                        "it is before iso_timestamp_start",
                    ));
                }
                if end.saturating_sub(start) > MANAGEMENT_MAX_RANGE {
                    return Err(Error::invalid(
                        "iso_timestamp_end",
                        "the range from iso_timestamp_start is longer than 24 hours; ask for at most 24 hours",
                    ));
                }
                (Some(start), Some(end))
            }
            (Some(start), None) => (Some(start), Some(start.saturating_add(MINUTE))),
            (None, Some(end)) => (Some(end.saturating_sub(MINUTE)), Some(end)),
            (None, None) => (None, None),
        };
        Ok(LogsAllQuery {
            project: project_ref.to_owned(),
            tier: ProjectTier::Enterprise,
            start,
            end,
            window_from_now: start.is_none(),
        })
    }

    fn project(query: &LogsAllQuery) -> &str {
        &query.project
    }

    const MERGE: Merge = Merge::NewestFirst { limit: LIMIT };

    fn reach(query: &LogsAllQuery, now: Micros) -> Result<Reach> {
        let (lower, upper) = bounds(query, now);
        Ok(Reach {
            projects: Projects::One(query.project.clone()),
            from: lower.saturating_add(1),
            to: upper,
        })
    }

    fn run(query: &LogsAllQuery, store: &Store, now: Micros, rows: &mut Rows) -> Result<()> {
        run(&store.edge, query, now, rows)
    }

    /// A range that holds no instant, or that reaches before the tier's
    /// retention: the answer is the reference's (no rows, or fewer), and the
    /// warning says why, where an empty list alone would look like no logs.
    fn warning(query: &LogsAllQuery, now: Micros) -> Option<String> {
        if query.window_from_now {
            return None;
        }
        let cutoff = now.saturating_sub(query.tier.retention());
        let retention = || {
            let days = query.tier.retention() / DAY;
            // The longest is every tier's limit (and the Management API route's, which takes none).
            let who = match query.tier.retention() {
                LONGEST_RETENTION => "logs are kept".to_owned(),
                _ => format!("{} keeps", query.tier.name()),
            };
            format!(
                "{who} {days} day{}, from {}",
                if days == 1 { "" } else { "s" },
                format_rfc3339(cutoff)
            )
        };
        match (query.start, query.end) {
            (Some(start), Some(end)) if end <= start => Some(
                "iso_timestamp_end is not after iso_timestamp_start: the range holds no instant"
                    .to_owned(),
            ),
            (_, Some(end)) if end <= cutoff => Some(format!(
                "the range ends before the retention window ({}): nothing in it is searched",
                retention()
            )),
            (Some(start), _) if start < cutoff => Some(format!(
                "the range begins before the retention window ({}): only the part after that is searched",
                retention()
            )),
            _ => None,
        }
    }
}

/// The call's time bounds: timestamps above the first (exclusive: above both
/// now − retention and `start`) and up to the second (inclusive; none: no bound).
fn bounds(query: &LogsAllQuery, now: Micros) -> (Micros, Option<Micros>) {
    let (start, end) = if query.window_from_now {
        (Some(now.saturating_sub(MINUTE)), Some(now))
    } else {
        (query.start, query.end)
    };
    let lower = start
        .map_or(Micros::MIN, |s| s)
        .max(now.saturating_sub(query.tier.retention()));
    (lower, end)
}

fn run(table: &EdgeTable, query: &LogsAllQuery, now: Micros, rows: &mut Rows) -> Result<()> {
    let Some(project) = table.projects.lookup(&query.project) else {
        return Ok(());
    };
    let (lower, end) = bounds(query, now);
    let from = upper_bound(&table.timestamp, lower);
    let to = end.map_or(table.len(), |e| upper_bound(&table.timestamp, e));
    if from >= to {
        return Ok(());
    }

    // Newest first, over the project's own rows in the window. Entries that
    // share the timestamp of the last row kept are all gathered and ordered by
    // id, so the answer does not depend on ingestion order.
    let mut picked: Vec<(Micros, usize)> = Vec::with_capacity(LIMIT);
    for &row in table.by_project.within(project, from..to).iter().rev() {
        let (row, Some(&timestamp)) = (row as usize, table.timestamp.get(row as usize)) else {
            continue;
        };
        if picked.len() >= LIMIT && picked.last().is_some_and(|&(kept, _)| kept != timestamp) {
            break;
        }
        picked.push((timestamp, row));
    }
    // Text is read back (decoded) for the rows returned only.
    let mut text = table.text.reader();
    let record = |i: usize| table.record.get(i).copied().unwrap_or(Span::NULL);
    let mut picked: Vec<(Micros, usize, String)> = picked
        .into_iter()
        .map(|(timestamp, i)| {
            let id = text.record::<2>(record(i)).map_or("", |r| r.id).to_owned();
            (timestamp, i, id)
        })
        .collect();
    picked.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.2.cmp(&b.2)));
    picked.truncate(LIMIT);

    for (timestamp, i, id) in &picked {
        let [event_message, metadata] =
            text.record::<2>(record(*i)).map_or([None; 2], |r| r.fields);
        rows.push_raw(|out| {
            out.push('{');
            json::push_key(out, "id");
            json::push_str(out, id);
            out.push(',');
            json::push_key(out, "timestamp");
            json::push_int(out, *timestamp);
            out.push(',');
            json::push_key(out, "event_message");
            json::push_opt_str(out, event_message);
            out.push(',');
            json::push_key(out, "metadata");
            out.push_str(metadata.unwrap_or("null"));
            out.push('}');
        });
    }
    if text.storage_failed() {
        return Err(Error::StorageUnavailable {
            reason: "a text block of the rows logs.all returns is missing from the host's storage, or not as it was stored".into(),
        });
    }
    if text.damaged() {
        return Err(Error::InvalidSnapshot {
            reason: "the stored text of rows logs.all returns does not decode (a damaged snapshot was restored)".into(),
        });
    }
    Ok(())
}
