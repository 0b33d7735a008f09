//! logs.all: the newest edge request log entries of one project, within the
//! tier's retention window and an optional (start, end] range.

use crate::json;
use crate::store::{upper_bound, EdgeTable, Span};
use crate::timestamp::{Micros, DAY};

/// Fixed row limit of the logs.all query (below the endpoint's 1000 max rows).
pub const LIMIT: usize = 100;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ProjectTier {
    Free,
    Pro,
    PayAsYouGo,
    Enterprise,
}

impl ProjectTier {
    /// Any value other than the four named tiers behaves as FREE.
    pub fn parse(value: &str) -> ProjectTier {
        match value {
            "PRO" => ProjectTier::Pro,
            "PAYG" => ProjectTier::PayAsYouGo,
            "ENTERPRISE" => ProjectTier::Enterprise,
            _ => ProjectTier::Free,
        }
    }

    pub fn retention(self) -> Micros {
        match self {
            ProjectTier::Free => DAY,
            ProjectTier::Pro => 7 * DAY,
            ProjectTier::PayAsYouGo | ProjectTier::Enterprise => 90 * DAY,
        }
    }
}

pub(super) fn run(
    table: &EdgeTable,
    project: &str,
    tier: ProjectTier,
    start: Option<Micros>,
    end: Option<Micros>,
    now: Micros,
    out: &mut String,
) {
    let Some(project) = table.projects.lookup(project) else {
        return;
    };
    // Both lower bounds are exclusive: timestamp > now − retention and > start.
    let lower = start
        .map_or(Micros::MIN, |s| s)
        .max(now.saturating_sub(tier.retention()));
    let from = upper_bound(&table.timestamp, lower);
    let to = end.map_or(table.len(), |e| upper_bound(&table.timestamp, e));
    if from >= to {
        return;
    }

    // Newest first. Entries that share the timestamp of the last row kept are all
    // gathered and ordered by id, so the answer does not depend on ingestion order.
    let (Some(timestamps), Some(projects)) =
        (table.timestamp.get(from..to), table.project.get(from..to))
    else {
        return;
    };
    let mut picked: Vec<(Micros, usize)> = Vec::with_capacity(LIMIT);
    for (offset, (&timestamp, &row_project)) in timestamps.iter().zip(projects).enumerate().rev() {
        if row_project != project {
            continue;
        }
        if picked.len() >= LIMIT && picked.last().is_some_and(|&(kept, _)| kept != timestamp) {
            break;
        }
        picked.push((timestamp, from + offset));
    }
    let text = |column: &[Span], i: usize| column.get(i).and_then(|&span| table.text.get(span));
    let id = |i: usize| text(&table.id, i).unwrap_or("");
    picked.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| id(a.1).cmp(id(b.1))));
    picked.truncate(LIMIT);

    for (n, &(timestamp, i)) in picked.iter().enumerate() {
        if n > 0 {
            out.push(',');
        }
        out.push('{');
        json::push_key(out, "id");
        json::push_str(out, id(i));
        out.push(',');
        json::push_key(out, "timestamp");
        json::push_int(out, timestamp);
        out.push(',');
        json::push_key(out, "event_message");
        json::push_opt_str(out, text(&table.event_message, i));
        out.push(',');
        json::push_key(out, "metadata");
        out.push_str(text(&table.metadata, i).unwrap_or("null"));
        out.push('}');
    }
}
