//! A call across objects: the front asks the directory partitions its plan
//! names, and each of those asks the shards it knows of; both gather the
//! answers the same way (`Gather`): at most `MAX_CONCURRENT` objects at once,
//! logs.all newest day first in waves of 1, 2, 4 … until enough rows came (an
//! older day cannot hold a row newer than a younger day's), the others in
//! waves until every object answered, merged by the endpoint's rule. The
//! answer names every object asked.

use super::merge::merge_answers;
use super::{day_of_shard, QueryPlan, MAX_CONCURRENT};
use crate::cache::QueryAnswer;
use crate::endpoints::{EndpointKind, Query};
use crate::error::Result;
use crate::reach::answer_rows;
use crate::reach::Merge;
use crate::timestamp::Micros;

/// Objects asked in waves, and their answers merged.
pub struct Gather {
    merge: Merge,
    /// The shards are asked for partial states, which this endpoint merges
    /// (a bucket may span the shards of a split project-day).
    partial_states: Option<EndpointKind>,
    /// Names are shards (`{day}/…`): a newest-first wave never stops inside a
    /// day, whose shards (a split project-day) hold rows in any order.
    whole_days: bool,
    names: Vec<String>,
    asked: usize,
    wave: usize,
    rows: usize,
    answers: Vec<QueryAnswer>,
    /// Every object asked, and every object those asked, in order.
    objects: Vec<String>,
    /// How many shards answered, here or below.
    shards: usize,
}

impl Gather {
    /// Asks `names` (in the order given: newest day first for logs.all).
    pub fn new(merge: Merge, names: Vec<String>) -> Gather {
        Gather {
            merge,
            partial_states: None,
            whole_days: false,
            names,
            asked: 0,
            wave: 1,
            rows: 0,
            answers: Vec::new(),
            objects: Vec::new(),
            shards: 0,
        }
    }

    /// A directory partition's gathering of the shards it found for `plan`
    /// (newest day first).
    pub fn of_shards(plan: &QueryPlan, shards: Vec<String>) -> Result<Gather> {
        let kind = EndpointKind::resolve(&plan.endpoint)?;
        let merge = kind.merge();
        let split_day = shards
            .iter()
            .zip(shards.iter().skip(1))
            .any(|(a, b)| day_of_shard(a) == day_of_shard(b));
        let mut gather = Gather::new(merge, shards);
        gather.whole_days = true;
        if split_day && matches!(merge, Merge::BucketStates { .. }) {
            gather.partial_states = Some(kind);
        }
        Ok(gather)
    }

    /// Whether shards answer partial states (`LogEndpoints::query_path_partial`).
    pub fn partial_states(&self) -> bool {
        self.partial_states.is_some()
    }

    /// The objects to ask next, at once; empty once the answers are enough.
    pub fn next_wave(&mut self) -> Vec<String> {
        let rest = self.names.get(self.asked..).unwrap_or_default();
        let last_day = self
            .asked
            .checked_sub(1)
            .and_then(|i| self.names.get(i))
            .map(|name| day_of_shard(name));
        let wave = match self.merge {
            Merge::NewestFirst { limit } if self.rows >= limit && self.whole_days => rest
                .iter()
                .take(MAX_CONCURRENT)
                .take_while(|name| Some(day_of_shard(name)) == last_day)
                .count(),
            Merge::NewestFirst { limit } if self.rows >= limit => 0,
            Merge::NewestFirst { .. } => self.wave.min(MAX_CONCURRENT),
            _ => MAX_CONCURRENT,
        };
        let wave: Vec<String> = rest.iter().take(wave).cloned().collect();
        self.asked += wave.len();
        self.wave = self.wave.saturating_mul(2);
        wave
    }

    /// What object `name` answered: its answer, or none when it holds no
    /// shard of the call (a directory partition without one).
    pub fn add(&mut self, name: &str, answer: Option<QueryAnswer>) -> Result<()> {
        self.objects.push(name.to_owned());
        let Some(answer) = answer else {
            return Ok(());
        };
        if let Merge::NewestFirst { .. } = self.merge {
            self.rows += answer_rows(&answer.body)?.len();
        }
        // A shard answers for itself; a directory partition for the shards it asked.
        self.shards += answer.shards.unwrap_or(1);
        self.objects.extend(answer.objects.iter().cloned());
        self.answers.push(answer);
        Ok(())
    }

    /// The answers merged into one store's answer; `None` when no object answered.
    pub fn merged(&self) -> Option<Result<QueryAnswer>> {
        if self.answers.is_empty() {
            return None;
        }
        let merged = match self.partial_states {
            Some(kind) => {
                let bodies: Vec<&str> = self.answers.iter().map(|a| &*a.body).collect();
                let warning = self.answers.iter().find_map(|a| a.warning.clone());
                kind.merge_states(&bodies)
                    .map(|body| QueryAnswer::new(body.into(), None, warning))
            }
            None => merge_answers(self.merge, &self.answers),
        };
        Some(merged.map(|mut answer| {
            answer.shards = Some(self.shards);
            answer.objects = self.objects.clone();
            answer
        }))
    }

    /// Every object asked so far.
    pub fn objects(&self) -> &[String] {
        &self.objects
    }
}

/// The front's call across the deployment: the validated call (what a store
/// without entries answers when no shard holds a row of it), its plan, and
/// the directory partitions' answers.
pub struct ShardQuery {
    pub(crate) query: Query,
    pub(crate) warning: Option<String>,
    pub(crate) now: Micros,
    plan: QueryPlan,
    pub(crate) gather: Gather,
}

impl ShardQuery {
    pub(crate) fn new(
        query: Query,
        warning: Option<String>,
        now: Micros,
        plan: QueryPlan,
        merge: Merge,
    ) -> ShardQuery {
        let gather = Gather::new(merge, plan.directories.clone());
        ShardQuery {
            query,
            warning,
            now,
            plan,
            gather,
        }
    }

    /// What the directory partitions look up.
    pub fn plan(&self) -> &QueryPlan {
        &self.plan
    }

    /// The directory partitions to ask next; empty once the answers are enough.
    pub fn next_wave(&mut self) -> Vec<String> {
        self.gather.next_wave()
    }

    /// A directory partition's answer (none: it holds no shard of the call).
    pub fn add(&mut self, name: &str, answer: Option<QueryAnswer>) -> Result<()> {
        self.gather.add(name, answer)
    }
}
