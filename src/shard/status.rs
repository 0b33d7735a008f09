//! What the ingest partitions hold and have not yet distributed, declared
//! once: each partition's `/status` (written by the worker from its tables)
//! and the front's `GET /api/ingest/status`, all partitions together.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// One ingest partition's `/status`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PartitionStatus {
    /// Batches kept (acknowledged) and not yet distributed, and their bytes.
    pub pending_batches: u64,
    pub pending_bytes: u64,
    /// Deliveries waiting in the outbox for a shard that did not take them,
    /// their entries, the shards they wait for, and how long the oldest has waited.
    pub outbox_deliveries: u64,
    pub outbox_entries: u64,
    pub outbox_shards: u64,
    /// Their names (a shard waited for in several partitions is one shard).
    pub outbox_shard_names: Vec<String>,
    pub oldest_outbox_ms: u64,
    /// What was not kept, for good (recorded in the partition's `refused` table).
    pub refused_deliveries: u64,
    pub refused_entries: u64,
}

/// Every ingest partition's status and their sum (`oldestOutboxMs`: the
/// longest wait of any; `outboxShards`: the shards waited for, each once).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct IngestStatus {
    /// `false` with `SHARDING=off`: one object keeps each batch before it
    /// answers, and nothing waits to be distributed.
    pub sharding: bool,
    pub total: PartitionStatus,
    pub partitions: Vec<NamedStatus>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NamedStatus {
    pub name: String,
    #[serde(flatten)]
    pub status: PartitionStatus,
}

impl IngestStatus {
    /// The partitions' `/status` answers (`[name, status]` as the worker
    /// read them) together; a status that does not read is a fault between
    /// objects (502 `bad_shard_answer`).
    pub fn of(statuses: Vec<(String, serde_json::Value)>) -> Result<IngestStatus> {
        let mut total = PartitionStatus::default();
        let mut partitions = Vec::with_capacity(statuses.len());
        let mut waited_for = std::collections::BTreeSet::new();
        for (name, value) in statuses {
            let status: PartitionStatus =
                serde_json::from_value(value).map_err(|e| Error::BadShardAnswer {
                    reason: format!(
                        "ingest partition {name} answered a status that does not read ({e})"
                    ),
                })?;
            total.pending_batches += status.pending_batches;
            total.pending_bytes += status.pending_bytes;
            total.outbox_deliveries += status.outbox_deliveries;
            total.outbox_entries += status.outbox_entries;
            waited_for.extend(status.outbox_shard_names.iter().cloned());
            total.oldest_outbox_ms = total.oldest_outbox_ms.max(status.oldest_outbox_ms);
            total.refused_deliveries += status.refused_deliveries;
            total.refused_entries += status.refused_entries;
            partitions.push(NamedStatus { name, status });
        }
        total.outbox_shards = waited_for.len() as u64;
        total.outbox_shard_names = waited_for.into_iter().collect();
        Ok(IngestStatus {
            sharding: true,
            total,
            partitions,
        })
    }

    /// `SHARDING=off`: no partitions, nothing waiting.
    pub fn unsharded() -> IngestStatus {
        IngestStatus {
            sharding: false,
            total: PartitionStatus::default(),
            partitions: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(outbox_ms: u64, refused: u64, shards: &[&str]) -> serde_json::Value {
        serde_json::json!({
            "pendingBatches": 2, "pendingBytes": 100, "outboxDeliveries": 1, "outboxEntries": 10,
            "outboxShards": shards.len(), "outboxShardNames": shards, "oldestOutboxMs": outbox_ms,
            "refusedDeliveries": refused, "refusedEntries": refused * 3,
        })
    }

    #[test]
    fn partitions_add_up_and_the_longest_wait_shows() {
        // One shard waited for in both partitions is one shard.
        let all = IngestStatus::of(vec![
            ("ingest/0".into(), status(500, 0, &["2026-11-20/g/3"])),
            (
                "ingest/1".into(),
                status(61_000, 2, &["2026-11-20/g/3", "2026-11-20/g/9"]),
            ),
        ])
        .unwrap();
        assert_eq!(
            all.total,
            PartitionStatus {
                pending_batches: 4,
                pending_bytes: 200,
                outbox_deliveries: 2,
                outbox_entries: 20,
                outbox_shards: 2,
                outbox_shard_names: vec!["2026-11-20/g/3".into(), "2026-11-20/g/9".into()],
                oldest_outbox_ms: 61_000,
                refused_deliveries: 2,
                refused_entries: 6,
            }
        );
        let json = serde_json::to_string(&all).unwrap();
        assert!(
            json.contains(r#"{"name":"ingest/1","pendingBatches":2,"#),
            "{json}"
        );
    }

    /// A field the worker renamed, or left out, is said, not read as zero.
    #[test]
    fn a_status_that_does_not_read_is_said() {
        let mut renamed = status(0, 0, &[]);
        renamed["pendingDeliveries"] = renamed["outboxDeliveries"].take();
        for value in [renamed, serde_json::json!({"error": "x"})] {
            let error = IngestStatus::of(vec![("ingest/2".into(), value)]).unwrap_err();
            assert_eq!(error.code(), "bad_shard_answer");
            assert!(error
                .to_string()
                .contains("ingest partition ingest/2 answered a status"));
        }
    }
}
