//! A call across shards: its plan, the shards the directory named, asked in
//! waves (logs.all newest day first, in waves of 1, 2, 4 … shards, until
//! enough rows came: an older day cannot hold a row newer than a younger
//! day's; the other endpoints all at once), and the answers merged.

use super::merge::{merge_answers, rows_of};
use super::QueryPlan;
use crate::cache::QueryAnswer;
use crate::endpoints::Query;
use crate::error::Result;
use crate::reach::Merge;
use crate::timestamp::Micros;

pub struct ShardQuery {
    /// The validated call (what a store without entries answers when no shard can).
    pub(crate) query: Query,
    pub(crate) warning: Option<String>,
    pub(crate) now: Micros,
    plan: QueryPlan,
    merge: Merge,
    shards: Vec<String>,
    asked: usize,
    wave: usize,
    rows: usize,
    answers: Vec<QueryAnswer>,
}

impl ShardQuery {
    pub(crate) fn new(
        query: Query,
        warning: Option<String>,
        now: Micros,
        plan: QueryPlan,
        merge: Merge,
    ) -> ShardQuery {
        ShardQuery {
            query,
            warning,
            now,
            plan,
            merge,
            shards: Vec::new(),
            asked: 0,
            wave: 1,
            rows: 0,
            answers: Vec::new(),
        }
    }

    /// Which shards can hold the call's rows (the directory looks them up).
    pub fn plan(&self) -> &QueryPlan {
        &self.plan
    }

    /// The shards that exist for the plan, newest day first (the directory's answer).
    pub fn ask(&mut self, shards: Vec<String>) {
        self.shards = shards;
    }

    /// The shards to ask next; empty once the answers are enough.
    pub fn next_wave(&mut self) -> Vec<String> {
        let rest = self.shards.get(self.asked..).unwrap_or_default();
        let wave = match self.merge {
            Merge::NewestFirst { limit } if self.rows >= limit => 0,
            Merge::NewestFirst { .. } => self.wave,
            _ => rest.len(),
        };
        let wave: Vec<String> = rest.iter().take(wave).cloned().collect();
        self.asked += wave.len();
        self.wave = self.wave.saturating_mul(2);
        wave
    }

    /// One shard's answer.
    pub fn add(&mut self, answer: QueryAnswer) -> Result<()> {
        if let Merge::NewestFirst { .. } = self.merge {
            self.rows += rows_of(&answer.body)?.len();
        }
        self.answers.push(answer);
        Ok(())
    }

    /// The answers merged into one store's answer; `None` when no shard was asked.
    pub(crate) fn merged(&self) -> Option<Result<QueryAnswer>> {
        if self.answers.is_empty() {
            return None;
        }
        Some(merge_answers(self.merge, &self.answers).map(|mut answer| {
            answer.shards = Some(self.answers.len());
            answer
        }))
    }
}
