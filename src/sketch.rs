//! A mergeable quantile sketch with a relative error bound (the DDSketch
//! idea): each value counts in the bucket `ceil(log_γ |v|)` of its sign, with
//! γ = (1 + α) / (1 − α), so the bucket's representative `2γⁱ / (γ + 1)` is
//! within `α` of every value in it. Two sketches merge by adding their bucket
//! counts, exactly, in any order. Percentiles of buckets whose values sit in
//! several shards come from here (docs/contract.md, "Percentiles of a split project-day").

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The relative error bound of every quantile a sketch answers: 1%.
pub const RELATIVE_ERROR: f64 = 0.01;

fn gamma() -> f64 {
    (1.0 + RELATIVE_ERROR) / (1.0 - RELATIVE_ERROR)
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sketch {
    /// Values equal to zero (either sign).
    zero: u64,
    /// Bucket index → count, for positive and for negative values (by magnitude).
    positive: BTreeMap<i32, u64>,
    negative: BTreeMap<i32, u64>,
}

/// The bucket of a magnitude (> 0); infinities go to the last bucket (`as`
/// saturates), whose estimate the caller clamps to the exact maximum.
fn index_of(magnitude: f64) -> i32 {
    (magnitude.ln() / gamma().ln()).ceil() as i32
}

/// `2γⁱ / (γ + 1)`, computed as `γ^(i−1) · 2γ / (γ + 1)` through `exp`, so
/// that it neither underflows for subnormal values (`powi` of a large negative
/// index is 1 / ∞ = 0) nor overflows for values near `f64::MAX` (`2γⁱ` does;
/// only a bucket past `f64::MAX` itself gives ∞, which the caller clamps).
fn estimate_of(index: i32) -> f64 {
    let gamma = gamma();
    ((f64::from(index) - 1.0) * gamma.ln()).exp() * (2.0 * gamma / (gamma + 1.0))
}

impl Sketch {
    /// Counts a value (NaN is not a value and is left out).
    pub fn add(&mut self, value: f64) {
        if value.is_nan() {
        } else if value == 0.0 {
            self.zero += 1;
        } else if value > 0.0 {
            *self.positive.entry(index_of(value)).or_default() += 1;
        } else {
            *self.negative.entry(index_of(-value)).or_default() += 1;
        }
    }

    pub fn merge(&mut self, other: &Sketch) {
        self.zero += other.zero;
        for (store, from) in [
            (&mut self.positive, &other.positive),
            (&mut self.negative, &other.negative),
        ] {
            for (&index, &count) in from {
                *store.entry(index).or_default() += count;
            }
        }
    }

    #[cfg(test)]
    pub fn count(&self) -> u64 {
        self.zero + self.positive.values().sum::<u64>() + self.negative.values().sum::<u64>()
    }

    /// The value of rank `rank` (0-based, ascending), within `RELATIVE_ERROR`
    /// of the exact one; `None` past the last value.
    pub fn value_at(&self, rank: u64) -> Option<f64> {
        let mut below = 0u64;
        // Most negative first: the largest magnitudes of the negative values.
        for (&index, &count) in self.negative.iter().rev() {
            below += count;
            if rank < below {
                return Some(-estimate_of(index));
            }
        }
        below += self.zero;
        if rank < below {
            return Some(0.0);
        }
        for (&index, &count) in &self.positive {
            below += count;
            if rank < below {
                return Some(estimate_of(index));
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exact(sorted: &[f64], rank: usize) -> f64 {
        sorted[rank]
    }

    #[test]
    fn every_rank_is_within_the_bound_and_merging_is_exact() {
        let mut values: Vec<f64> = (0..5000)
            .map(|i| {
                let x = ((i * 7919) % 5000) as f64;
                match i % 7 {
                    0 => 0.0,
                    1 => -x / 3.0,
                    _ => x * x / 97.0 + 0.001,
                }
            })
            .collect();
        let (mut left, mut right, mut whole) =
            (Sketch::default(), Sketch::default(), Sketch::default());
        for (i, &v) in values.iter().enumerate() {
            whole.add(v);
            if i % 3 == 0 {
                left.add(v)
            } else {
                right.add(v)
            }
        }
        left.merge(&right);
        assert_eq!(left, whole);
        values.sort_by(f64::total_cmp);
        for rank in 0..values.len() {
            let (got, want) = (whole.value_at(rank as u64).unwrap(), exact(&values, rank));
            assert!(
                (got - want).abs() <= RELATIVE_ERROR * want.abs() + f64::EPSILON * want.abs(),
                "rank {rank}: {got} for {want}"
            );
        }
        assert_eq!(whole.value_at(values.len() as u64), None);
        assert_eq!(whole.count(), values.len() as u64);
    }

    #[test]
    fn extremes_stay_in_a_bucket() {
        let mut sketch = Sketch::default();
        for v in [
            f64::INFINITY,
            f64::MIN_POSITIVE / 4.0,
            1e300,
            -f64::INFINITY,
            f64::NAN,
        ] {
            sketch.add(v);
        }
        assert_eq!(sketch.count(), 4);
        assert_eq!(sketch.value_at(3), Some(f64::INFINITY));
        assert!(sketch.value_at(1).unwrap() > 0.0);
    }

    #[test]
    fn the_bound_holds_from_subnormal_values_to_near_the_largest() {
        for v in [1e-310, 3e-308, 1e-5, 7.0, 1e300, 1e308, f64::MAX / 1.02] {
            let mut sketch = Sketch::default();
            sketch.add(v);
            let got = sketch.value_at(0).unwrap();
            assert!(
                (got - v).abs() <= RELATIVE_ERROR * v * (1.0 + 1e-9),
                "{got} for {v}"
            );
        }
    }
}
