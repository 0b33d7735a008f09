//! An exact, mergeable sum of floats: the value is the exact sum of every
//! value added, rounded once, so it does not depend on the order the values
//! came in or on how they were split between stores (docs/contract.md,
//! "Percentiles of a split project-day": avg is exact).
//!
//! Positive values that are whole multiples of 2⁻⁸⁰ below 2⁴⁷ (every
//! execution time in milliseconds a host writes) add as integers into three
//! 64-bit words; any other finite value goes to a short list of
//! non-overlapping float partials (Shewchuk's exact summation), which the
//! rounding reads together with the words.

use serde::{Deserialize, Serialize};

/// The common part counts units of 2⁻⁸⁰.
const FRACTION_BITS: u64 = 80;
const MANTISSA_BITS: u32 = 52;
const MANTISSA_MASK: u64 = (1 << MANTISSA_BITS) - 1;
/// Biased exponents of the common values: 2⁻²⁸ ≤ value < 2⁴⁷, so that the
/// mantissa, shifted by 0 to 74 bits, is a whole number of units.
const COMMON_EXPONENTS: std::ops::RangeInclusive<u64> =
    1075 - FRACTION_BITS..=1075 - FRACTION_BITS + 74;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(into = "Wire", try_from = "Wire")]
pub struct ExactSum {
    /// The sum of the common values (positive multiples of 2⁻⁸⁰ below 2⁴⁷,
    /// every execution time in milliseconds a host writes) in units of
    /// 2⁻⁸⁰: `words[2]·2¹²⁸ + words[1]·2⁶⁴ + words[0]`.
    words: [u64; 3],
    /// Non-overlapping partials of the other finite values, in increasing
    /// magnitude; their exact sum is theirs.
    partials: Vec<f64>,
    positive_infinity: bool,
    negative_infinity: bool,
}

impl ExactSum {
    /// Adds one value; NaN makes the sum NaN, as IEEE addition does.
    #[inline]
    pub fn add(&mut self, value: f64) {
        match common_units(value) {
            Some((low, high)) => add_words(&mut self.words, [low, high, 0]),
            None => self.add_other(value),
        }
    }

    /// Adds every value, as `add` does one by one, with the sum of the
    /// common ones kept in registers.
    pub fn extend(&mut self, values: impl IntoIterator<Item = f64>) {
        let mut words = self.words;
        for value in values {
            match common_units(value) {
                Some((low, high)) => add_words(&mut words, [low, high, 0]),
                None => self.add_other(value),
            }
        }
        self.words = words;
    }

    #[cold]
    fn add_other(&mut self, value: f64) {
        if value.is_finite() {
            if value != 0.0 {
                add_partial(&mut self.partials, value);
            }
        } else {
            self.positive_infinity |= value != f64::NEG_INFINITY;
            self.negative_infinity |= value != f64::INFINITY;
        }
    }

    pub fn merge(&mut self, other: &ExactSum) {
        add_words(&mut self.words, other.words);
        for &partial in &other.partials {
            add_partial(&mut self.partials, partial);
        }
        self.positive_infinity |= other.positive_infinity;
        self.negative_infinity |= other.negative_infinity;
    }

    /// The exact sum, rounded to the nearest float (ties to even).
    pub fn value(&self) -> f64 {
        match (self.positive_infinity, self.negative_infinity) {
            (true, true) => return f64::NAN,
            (true, false) => return f64::INFINITY,
            (false, true) => return f64::NEG_INFINITY,
            (false, false) => {}
        }
        let [low, high, top] = self.words;
        if self.partials.is_empty() && top == 0 {
            // The conversion rounds once; scaling by a power of two is exact.
            return (u128::from(high) << 64 | u128::from(low)) as f64 * unit(0);
        }
        let mut partials = self.partials.clone();
        for (word, scale) in self.words.iter().zip([0, 64, 128]) {
            for (piece, at) in [(word & 0xffff_ffff, 0), (word >> 32, 32)] {
                if piece != 0 {
                    add_partial(&mut partials, piece as f64 * unit(scale + at));
                }
            }
        }
        round_partials(&partials)
    }
}

/// 2^(shift − 80).
fn unit(shift: u64) -> f64 {
    f64::from_bits((1023 + shift - FRACTION_BITS) << MANTISSA_BITS)
}

/// A common value as a whole number of units, in two words (low, high).
#[inline]
fn common_units(value: f64) -> Option<(u64, u64)> {
    // The sign bit, when set, takes the exponent out of the range.
    let bits = value.to_bits();
    let exponent = bits >> MANTISSA_BITS;
    if !COMMON_EXPONENTS.contains(&exponent) {
        return None;
    }
    let mantissa = bits & MANTISSA_MASK | 1 << MANTISSA_BITS;
    let shift = (exponent - COMMON_EXPONENTS.start()) as u32;
    Some(if shift < 64 {
        (mantissa << shift, (mantissa >> 1) >> (63 - shift))
    } else {
        (0, mantissa << (shift - 64))
    })
}

/// Adds two three-word numbers (least significant word first); the top word
/// counts carries, which cannot overflow (2⁶⁴ sums of values below 2⁴⁷).
#[inline]
fn add_words(into: &mut [u64; 3], other: [u64; 3]) {
    let (low, carry) = into[0].overflowing_add(other[0]);
    let (high, first) = into[1].overflowing_add(other[1]);
    let (high, second) = high.overflowing_add(u64::from(carry));
    *into = [
        low,
        high,
        into[2]
            .wrapping_add(other[2])
            .wrapping_add(u64::from(first | second)),
    ];
}

/// Shewchuk's grow-expansion: after it, the partials' exact sum has grown by
/// `value` exactly, and they stay non-overlapping in increasing magnitude.
fn add_partial(partials: &mut Vec<f64>, mut value: f64) {
    let mut kept = 0;
    for at in 0..partials.len() {
        let Some(mut other) = partials.get(at).copied() else {
            break;
        };
        if value.abs() < other.abs() {
            std::mem::swap(&mut value, &mut other);
        }
        let high = value + other;
        let low = other - (high - value);
        if low != 0.0 {
            // `kept` ≤ `at`: the slot was read already.
            if let Some(slot) = partials.get_mut(kept) {
                *slot = low;
            }
            kept += 1;
        }
        value = high;
    }
    partials.truncate(kept);
    partials.push(value);
}

/// The partials' exact sum rounded to nearest, ties to even: add from the
/// largest down while that is exact, then correct a result that sits exactly
/// half-way when the partials below push it one way.
fn round_partials(partials: &[f64]) -> f64 {
    let Some((&largest, below)) = partials.split_last() else {
        return 0.0;
    };
    let (mut high, mut low) = (largest, 0.0);
    let mut rest = below;
    while let Some((&next, smaller)) = rest.split_last() {
        rest = smaller;
        let sum = high + next;
        low = next - (sum - high);
        high = sum;
        if low != 0.0 {
            break;
        }
    }
    if let Some(&next) = rest.last() {
        if (low < 0.0 && next < 0.0) || (low > 0.0 && next > 0.0) {
            let doubled = low * 2.0;
            let moved = high + doubled;
            if doubled == moved - high {
                high = moved;
            }
        }
    }
    high
}

/// How a sum travels between stores: words and floats as they are (floats
/// as their bits), so nothing is rounded on the way.
#[derive(Serialize, Deserialize)]
struct Wire {
    words: [u64; 3],
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    partials: Vec<u64>,
    #[serde(default, skip_serializing_if = "is_false")]
    positive_infinity: bool,
    #[serde(default, skip_serializing_if = "is_false")]
    negative_infinity: bool,
}

fn is_false(flag: &bool) -> bool {
    !flag
}

impl From<ExactSum> for Wire {
    fn from(sum: ExactSum) -> Wire {
        Wire {
            words: sum.words,
            partials: sum.partials.iter().map(|p| p.to_bits()).collect(),
            positive_infinity: sum.positive_infinity,
            negative_infinity: sum.negative_infinity,
        }
    }
}

impl TryFrom<Wire> for ExactSum {
    type Error = String;

    fn try_from(wire: Wire) -> Result<ExactSum, String> {
        let mut sum = ExactSum {
            words: wire.words,
            positive_infinity: wire.positive_infinity,
            negative_infinity: wire.negative_infinity,
            ..ExactSum::default()
        };
        // Added again rather than taken as they are, so a partial list that
        // overlaps (hand-written or corrupted) still sums exactly.
        for bits in wire.partials {
            let partial = f64::from_bits(bits);
            if !partial.is_finite() {
                return Err("a partial of the sum is not finite".to_owned());
            }
            sum.add_other(partial);
        }
        Ok(sum)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sum_of(values: &[f64]) -> f64 {
        let mut sum = ExactSum::default();
        values.iter().for_each(|&v| sum.add(v));
        sum.value()
    }

    /// xorshift64: the same values on every run.
    fn next(state: &mut u64) -> u64 {
        *state ^= *state << 13;
        *state ^= *state >> 7;
        *state ^= *state << 17;
        *state
    }

    #[test]
    fn the_sum_does_not_depend_on_order() {
        // Left to right in floats these give 2.5999999999999996 and 2.6; the
        // exact sum of the three is nearer the first.
        assert_eq!(sum_of(&[0.1, 0.2, 2.3]), 2.5999999999999996);
        assert_eq!(sum_of(&[0.1, 2.3, 0.2]), 2.5999999999999996);
        assert_eq!(sum_of(&[1e100, 1.0, -1e100]), 1.0);
        assert_eq!(sum_of(&[1e-30, 3.0, -3.0]), 1e-30);
    }

    #[test]
    fn the_sum_is_the_exact_sum_rounded_once() {
        // 2⁵³ + 1 is a tie between 2⁵³ and 2⁵³ + 2: to even. A little more
        // (from a partial far below) rounds up instead.
        let two_53 = 9_007_199_254_740_992.0;
        assert_eq!(sum_of(&[two_53, 1.0]), two_53);
        assert_eq!(sum_of(&[two_53, 1.0, 1e-200]), two_53 + 2.0);
        assert_eq!(sum_of(&[two_53, 1.0, -1e-200]), two_53);
        assert_eq!(sum_of(&[]), 0.0);
        assert_eq!(sum_of(&[5e-324, 5e-324]), 1e-323);
        assert_eq!(sum_of(&[f64::MAX, -f64::MAX, 7.5]), 7.5);
        assert_eq!(sum_of(&[1.0, f64::INFINITY]), f64::INFINITY);
        assert!(sum_of(&[f64::NEG_INFINITY, f64::INFINITY]).is_nan());
    }

    /// Random values of every kind the fixed-point part takes and refuses,
    /// shuffled and split in two: every order and split gives one value,
    /// through the wire as well.
    #[test]
    fn split_and_shuffled_sums_merge_to_one_value() {
        let mut state = 0x9e37_79b9_7f4a_7c15;
        for case in 0..2_000 {
            let values: Vec<f64> = (0..1 + next(&mut state) % 40)
                .map(|_| {
                    let r = next(&mut state);
                    match r % 4 {
                        0 => (r >> 20) as f64 / 1000.0,
                        1 => f64::from_bits(r >> 2) * if r & 2 == 0 { 1.0 } else { -1.0 },
                        2 => ((r >> 8) % 100_000) as f64 * 0.25,
                        _ => (r >> 30) as f64 * 1e-12,
                    }
                })
                .filter(|v| v.is_finite() && v.abs() < 1e300)
                .collect();
            let whole = sum_of(&values);
            let mut shuffled = values.clone();
            for at in (1..shuffled.len()).rev() {
                shuffled.swap(at, (next(&mut state) % (at as u64 + 1)) as usize);
            }
            let cut = (next(&mut state) as usize) % (shuffled.len() + 1);
            let (mut first, mut second) = (ExactSum::default(), ExactSum::default());
            first.extend(shuffled[..cut].iter().copied());
            shuffled[cut..].iter().for_each(|&v| second.add(v));
            let travelled: ExactSum =
                serde_json::from_str(&serde_json::to_string(&second).unwrap()).unwrap();
            first.merge(&travelled);
            assert_eq!(
                first.value().to_bits(),
                whole.to_bits(),
                "case {case}: {values:?}"
            );
        }
    }

    /// Past 2¹²⁸ units the common case's words carry, and the sum goes on
    /// exactly in the partials.
    #[test]
    fn a_sum_past_the_fixed_point_range_stays_exact() {
        let big = 2f64.powi(46) + 0.5;
        let mut sum = ExactSum::default();
        sum.extend(std::iter::repeat_n(big, 1 << 20));
        sum.add(2f64.powi(-80));
        let mut again = ExactSum::default();
        (0..1 << 20).for_each(|_| again.add(big));
        assert_eq!(sum.value(), 2f64.powi(66) + 2f64.powi(19));
        assert_eq!(again.value(), sum.value());
    }

    #[test]
    fn common_values_are_whole_units_below_their_range() {
        assert_eq!(common_units(1.0), Some((0, 1 << 16)));
        assert_eq!(common_units(0.25), Some((0, 1 << 14)));
        assert_eq!(common_units(2f64.powi(-28)), Some((1 << 52, 0)));
        assert_eq!(common_units(2f64.powi(-29)), None);
        assert_eq!(common_units(2f64.powi(46)), Some((0, 1 << 62)));
        assert_eq!(common_units(2f64.powi(47)), None);
        for other in [-1.0, 0.0, -0.0, f64::NAN, f64::INFINITY, 5e-324] {
            assert_eq!(common_units(other), None, "{other}");
        }
    }

    #[test]
    fn a_corrupted_wire_sum_is_refused() {
        for body in [
            r#"{"fixed":"1.5"}"#,
            r#"{"fixed":"1","partials":[9218868437227405312]}"#,
        ] {
            assert!(serde_json::from_str::<ExactSum>(body).is_err(), "{body}");
        }
    }
}
