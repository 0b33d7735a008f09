//! usage.api-requests-count: how many API requests one project served in the
//! last 24 hours, as Supabase's Management API route of that name answers
//! (`{"result":[{"count":n}]}`). Its window is not published; 24 hours is the
//! choice (docs/contract.md, "Supabase's Management API route"). This module owns the endpoint.

use serde::Serialize;
use ts_rs::TS;

use super::spec::{required, EndpointSpec, Parameter, Rows, MAX_ROWS};
use super::Endpoint;
use crate::error::Result;
use crate::limits::Limits;
use crate::params::Params;
use crate::reach::{Merge, Projects, Reach};
use crate::store::{lower_bound, Store};
use crate::timestamp::{Micros, DAY};

/// The window counted back from the time of the call.
const WINDOW: Micros = DAY;

pub(crate) struct ApiRequestsCount;

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ApiRequestsCountQuery {
    project: String,
}

/// The one row of the answer.
#[derive(Serialize, TS)]
pub struct ApiRequestsCountRow {
    /// Edge requests of the project in the last 24 hours.
    count: i64,
}

impl Endpoint for ApiRequestsCount {
    const SPEC: EndpointSpec = EndpointSpec {
        name: "usage.api-requests-count",
        aliases: &[],
        management_api: true,
        summary: "How many API requests (edge log entries) one project served in the last 24 hours: one row, {count}.",
        stream: "edge_logs",
        max_rows: MAX_ROWS,
        cache_seconds: Some(900),
        cache_warming_seconds: Some(300),
        parameters: &[Parameter::text(
            "project",
            true,
            "abcdefghijklmnopqrst",
            "project reference (from the path on the Management API route)",
        )],
    };
    type Query = ApiRequestsCountQuery;
    type Row = ApiRequestsCountRow;

    fn parse(params: &Params, _limits: &Limits) -> Result<ApiRequestsCountQuery> {
        Ok(ApiRequestsCountQuery {
            project: required(params, "project")?.to_owned(),
        })
    }

    fn project(query: &ApiRequestsCountQuery) -> &str {
        &query.project
    }

    const MERGE: Merge = Merge::AddAll;

    fn reach(query: &ApiRequestsCountQuery, now: Micros) -> Result<Reach> {
        Ok(Reach {
            projects: Projects::One(query.project.clone()),
            from: now.saturating_sub(WINDOW),
            to: None,
        })
    }

    fn run(
        query: &ApiRequestsCountQuery,
        store: &Store,
        now: Micros,
        rows: &mut Rows,
    ) -> Result<()> {
        let table = &store.edge;
        let count = match table.projects.lookup(&query.project) {
            Some(project) => {
                let window = lower_bound(&table.timestamp, now.saturating_sub(WINDOW))..table.len();
                table.count_of(project, window) as i64
            }
            None => 0,
        };
        rows.push(&ApiRequestsCountRow { count });
        Ok(())
    }
}
