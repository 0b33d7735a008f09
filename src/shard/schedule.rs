//! When the edge worker's objects act: how long an ingest partition's kept
//! batches gather before a round, how many bytes one round covers, how long
//! a shard's outbox waits after failed tries, and when a shard's maintenance
//! comes next. The objects ask; the numbers live here.

use super::Retention;
use crate::timestamp::Micros;

/// How long kept batches gather before a round starts (ms): the longer, the
/// more batches a shard takes in one delivery (one storage write), and the
/// later they are queryable. At 1,500 ms a batch was queryable 2.9 s after
/// its ack (p50; max 4.7 s, near the 5 s target); at 750 ms, 1.4 s (max
/// 2.3–2.5 s), for the same throughput (`node bench/edge-ingest.mjs
/// --sharding on`, three runs each).
pub const COALESCE_MS: u32 = 750;

/// Most bytes of kept batches one round covers. A round holds its batches in
/// the isolate about three times over (as read, in the core's round, as
/// deliveries), which a Workers isolate's 128 MB must hold beside the engine:
/// 48 MiB rounds could pass it. Only a backlog fills a round: at 37 MiB/s of
/// mixed batches, a 750 ms round of one partition holds about 7 MiB.
pub const ROUND_BYTES: usize = 16 << 20;

/// The wait before a round that could not finish (a directory did not
/// answer) is tried again, and before a failed shard's first retry (ms).
pub const RETRY_MS: u32 = 1000;

/// The longest wait before a shard's outbox is tried again (ms).
pub const MAX_RETRY_MS: u32 = 60_000;

/// Traps one shard's wake may meet while it replays its stored batches
/// before it leaves the rest for a later wake (past a few, memory is the
/// likely cause, and each trap would replay everything again).
pub const MAX_TRAPS_PER_WAKE: usize = 3;

/// How long until the next round starts, with `waiting` bytes kept: at
/// once when a round's worth waits.
pub fn round_delay_ms(waiting: usize) -> u32 {
    match waiting >= ROUND_BYTES {
        true => 0,
        false => COALESCE_MS,
    }
}

/// Whether a round that covers `covered` bytes so far takes a batch of
/// `next` bytes more: its first batch always (a batch larger than a round
/// is a round of its own), the others while it stays within `ROUND_BYTES`.
pub fn round_takes(covered: usize, next: usize) -> bool {
    covered == 0 || covered.saturating_add(next) <= ROUND_BYTES
}

/// How long a shard's outbox waits after `failures` failed tries in a row:
/// `RETRY_MS`, twice as long after each further failure, at most `MAX_RETRY_MS`.
pub fn outbox_wait_ms(failures: u32) -> u32 {
    // Past 16 doublings the wait is long at its most anyway; u64 holds them.
    let doublings = failures.saturating_sub(1).min(16);
    let wait = (u64::from(RETRY_MS) << doublings).min(u64::from(MAX_RETRY_MS));
    u32::try_from(wait).unwrap_or(MAX_RETRY_MS)
}

/// How often a shard's maintenance comes while it keeps cached results
/// warm: the shortest cache-warming interval of any endpoint (ms).
pub fn warm_every_ms() -> u64 {
    crate::endpoints::ALL
        .iter()
        .filter_map(|kind| kind.spec().cache_warming_seconds)
        .min()
        .unwrap_or(300)
        * 1000
}

/// When a shard's maintenance comes next, in ms from `now`: every
/// `warm_every_ms` while it keeps cached results warm; else once its newest
/// stored entry (`newest_stored`) passes retention, and so its storage can
/// go, but not sooner than `warm_every_ms`; never when nothing is stored.
pub fn next_maintenance_in_ms(
    keeps_warm: bool,
    newest_stored: Option<Micros>,
    now: Micros,
) -> Option<u64> {
    let every = warm_every_ms();
    if keeps_warm {
        return Some(every);
    }
    let wait_us = Retention::ends_after(newest_stored?).saturating_sub(now);
    let wait_ms = u64::try_from(wait_us).unwrap_or(0).div_ceil(1000);
    Some(wait_ms.max(every))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maintenance_comes_while_results_are_warm_then_when_retention_ends() {
        let every = warm_every_ms();
        assert_eq!(every, 300_000);
        let now: Micros = 1_764_000_000_000_000;
        assert_eq!(next_maintenance_in_ms(true, None, now), Some(every));
        assert_eq!(next_maintenance_in_ms(false, None, now), None);
        // Kept 90 days from its newest entry, to the next whole ms.
        let newest = now - 1_000 + 2;
        let ninety_days_ms = 90 * 24 * 3600 * 1000;
        assert_eq!(
            next_maintenance_in_ms(false, Some(newest), now),
            Some(ninety_days_ms)
        );
        // Already past: at the warming interval, not at once.
        let old = now - (ninety_days_ms as Micros + 5) * 1000;
        assert_eq!(next_maintenance_in_ms(false, Some(old), now), Some(every));
    }

    #[test]
    fn a_round_starts_at_once_only_when_a_round_s_worth_waits() {
        assert_eq!(round_delay_ms(0), COALESCE_MS);
        assert_eq!(round_delay_ms(ROUND_BYTES - 1), COALESCE_MS);
        assert_eq!(round_delay_ms(ROUND_BYTES), 0);
    }

    #[test]
    fn a_round_takes_its_first_batch_whatever_its_size_then_stays_within_its_bytes() {
        assert!(round_takes(0, ROUND_BYTES * 3));
        assert!(round_takes(1, ROUND_BYTES - 1));
        assert!(!round_takes(1, ROUND_BYTES));
        assert!(!round_takes(usize::MAX, 1));
    }

    #[test]
    fn outbox_waits_double_from_a_second_to_a_minute() {
        let waits: Vec<u32> = (1..=9).map(outbox_wait_ms).collect();
        assert_eq!(
            waits,
            [1000, 2000, 4000, 8000, 16000, 32000, 60000, 60000, 60000]
        );
        assert_eq!(outbox_wait_ms(0), RETRY_MS);
        assert_eq!(outbox_wait_ms(u32::MAX), MAX_RETRY_MS);
    }
}
