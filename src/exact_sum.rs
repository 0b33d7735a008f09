//! An exact, mergeable sum of floats: the value is the exact sum of every
//! value added, rounded once (to nearest, ties to even), as IEEE addition
//! would round it with unbounded precision. So it depends neither on the
//! order the values came in nor on how they were split between stores
//! (docs/contract.md, "Percentiles of a split project-day": avg is exact).
//!
//! Every finite float is a whole number of units of 2⁻¹⁰⁷⁴ below 2²⁰⁹⁸ of
//! them, so sums are integers:
//! - positive values from 2⁻²⁸ up to 2⁴⁷ (every execution time in
//!   milliseconds a host writes) add into three 64-bit words counting units
//!   of 2⁻⁸⁰: a shift and two additions with carry;
//! - any other finite value adds into a 2,304-bit two's-complement integer
//!   of units of 2⁻¹⁰⁷⁴, made the first time one comes.

use serde::{Deserialize, Serialize};

/// The common part counts units of 2⁻⁸⁰.
const FRACTION_BITS: u64 = 80;
const MANTISSA_BITS: u32 = 52;
const MANTISSA_MASK: u64 = (1 << MANTISSA_BITS) - 1;
/// Biased exponents of the common values: 2⁻²⁸ ≤ value < 2⁴⁷, so that the
/// mantissa, shifted by 0 to 74 bits, is a whole number of units.
const COMMON_EXPONENTS: std::ops::RangeInclusive<u64> =
    1075 - FRACTION_BITS..=1075 - FRACTION_BITS + 74;
/// Words of the wide part: 2,304 bits, of which a finite float takes at most
/// 2,098, so 2²⁰⁵ of them add without overflow.
const WIDE_WORDS: usize = 36;
/// A unit of the common part, 2⁻⁸⁰.
const UNIT: f64 = 1.0 / (1u128 << FRACTION_BITS) as f64;
/// Where a unit of the common part (2⁻⁸⁰) sits in the wide part's units.
const COMMON_IN_WIDE: u32 = 1074 - FRACTION_BITS as u32;
const NEGATIVE_ZERO: u64 = 1 << 63;

type Wide = [u64; WIDE_WORDS];

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(into = "Wire", try_from = "Wire")]
pub struct ExactSum {
    /// The sum of the common values in units of 2⁻⁸⁰:
    /// `words[2]·2¹²⁸ + words[1]·2⁶⁴ + words[0]`.
    words: [u64; 3],
    /// The sum of the other finite values in units of 2⁻¹⁰⁷⁴, least
    /// significant word first, in two's complement.
    wide: Option<Box<Wide>>,
    /// Whether +∞ and −∞ were added (NaN counts as both: the sum is NaN).
    positive_infinity: bool,
    negative_infinity: bool,
    /// Whether a value other than −0.0 went to the wide part: an exact sum
    /// of zero is −0.0 only when none did (as IEEE addition gives), and a
    /// common value, positive, never leaves the sum at zero.
    not_only_negative_zeros: bool,
}

impl ExactSum {
    /// Adds one value (NaN makes the sum NaN, as IEEE addition does).
    #[inline]
    pub fn add(&mut self, value: f64) {
        self.extend([value]);
    }

    /// Adds every value, as `add` does, with the sum of the common ones kept
    /// in registers.
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
        let bits = value.to_bits();
        self.not_only_negative_zeros |= bits != NEGATIVE_ZERO;
        if !value.is_finite() {
            self.positive_infinity |= value != f64::NEG_INFINITY;
            self.negative_infinity |= value != f64::INFINITY;
            return;
        }
        // value = ±mantissa · 2^(max(exponent, 1) − 1075), as units of 2⁻¹⁰⁷⁴.
        let exponent = (bits >> MANTISSA_BITS) & 0x7ff;
        let mantissa = match exponent {
            0 => bits & MANTISSA_MASK,
            _ => bits & MANTISSA_MASK | 1 << MANTISSA_BITS,
        };
        if mantissa != 0 {
            let wide = self.wide_mut();
            let shift = (exponent.max(1) - 1) as u32;
            add_shifted(wide, mantissa, shift, bits >> 63 == 1);
        }
    }

    fn wide_mut(&mut self) -> &mut Wide {
        self.wide.get_or_insert_with(|| Box::new([0; WIDE_WORDS]))
    }

    pub fn merge(&mut self, other: &ExactSum) {
        add_words(&mut self.words, other.words);
        if let Some(theirs) = &other.wide {
            let ours = self.wide_mut();
            let mut carry = false;
            for (word, &add) in ours.iter_mut().zip(theirs.iter()) {
                let (sum, first) = word.overflowing_add(add);
                let (sum, second) = sum.overflowing_add(u64::from(carry));
                *word = sum;
                carry = first | second;
            }
        }
        self.positive_infinity |= other.positive_infinity;
        self.negative_infinity |= other.negative_infinity;
        self.not_only_negative_zeros |= other.not_only_negative_zeros;
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
        let sum = match (&self.wide, top) {
            // The conversion rounds once; scaling by a power of two is exact.
            (None, 0) => (u128::from(high) << 64 | u128::from(low)) as f64 * UNIT,
            _ => {
                let mut wide: Wide = self.wide.as_deref().copied().unwrap_or([0; WIDE_WORDS]);
                for (word, at) in self.words.into_iter().zip([0, 64, 128]) {
                    add_shifted(&mut wide, word, COMMON_IN_WIDE + at, false);
                }
                round_wide(&wide)
            }
        };
        if sum == 0.0 && !self.not_only_negative_zeros {
            -0.0
        } else {
            sum
        }
    }
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

/// Adds (or, when `negative`, subtracts) `value · 2^shift` to the wide
/// integer, carrying (or borrowing) only as far as it goes.
fn add_shifted(wide: &mut Wide, value: u64, shift: u32, negative: bool) {
    let (at, bit) = ((shift / 64) as usize, shift % 64);
    let low = value << bit;
    let high = if bit == 0 { 0 } else { value >> (64 - bit) };
    let mut carry = false;
    for (offset, word) in wide.iter_mut().skip(at).enumerate() {
        let part = match offset {
            0 => low,
            1 => high,
            _ if !carry => break,
            _ => 0,
        };
        let (next, first) = if negative {
            word.overflowing_sub(part)
        } else {
            word.overflowing_add(part)
        };
        let (next, second) = if negative {
            next.overflowing_sub(u64::from(carry))
        } else {
            next.overflowing_add(u64::from(carry))
        };
        *word = next;
        carry = first | second;
    }
}

/// The nearest float (ties to even) to a wide integer of units of 2⁻¹⁰⁷⁴;
/// ±∞ past the largest float.
fn round_wide(wide: &Wide) -> f64 {
    let negative = wide.last().is_some_and(|&top| top >> 63 == 1);
    let mut magnitude = *wide;
    if negative {
        // Two's complement: invert and add one.
        let mut carry = true;
        for word in magnitude.iter_mut() {
            let (next, over) = (!*word).overflowing_add(u64::from(carry));
            *word = next;
            carry = over;
        }
    }
    let bit = |at: u32| {
        magnitude
            .get((at / 64) as usize)
            .is_some_and(|word| word >> (at % 64) & 1 == 1)
    };
    let Some((top_word, &word)) = magnitude.iter().enumerate().rev().find(|(_, w)| **w != 0) else {
        return 0.0;
    };
    // The highest set bit; the float keeps it and the 52 below.
    let mut top = top_word as u32 * 64 + 63 - word.leading_zeros();
    let magnitude_value = if top < 53 {
        // Below 2⁵³ units: exact (a multiple of the smallest subnormal).
        (0..=top).fold(0u64, |m, at| m | u64::from(bit(at)) << at) as f64 * f64::from_bits(1)
    } else {
        let lowest = top - 52;
        let mut mantissa =
            (lowest..=top).fold(0u64, |m, at| m | u64::from(bit(at)) << (at - lowest));
        let round = bit(lowest - 1);
        let sticky = (0..lowest - 1).any(bit);
        if round && (sticky || mantissa & 1 == 1) {
            mantissa += 1;
            if mantissa == 1 << 53 {
                mantissa >>= 1;
                top += 1;
            }
        }
        // value = mantissa · 2^(top − 52 − 1074), the mantissa below 2⁵³.
        let exponent = i64::from(top) - 52 - 1074;
        if exponent > 1023 - 52 {
            f64::INFINITY
        } else {
            mantissa as f64 * power_of_two(exponent)
        }
    };
    if negative {
        -magnitude_value
    } else {
        magnitude_value
    }
}

/// 2^exponent, for −1074 ≤ exponent ≤ 1023.
fn power_of_two(exponent: i64) -> f64 {
    if exponent >= -1022 {
        f64::from_bits(((exponent + 1023) as u64) << MANTISSA_BITS)
    } else {
        f64::from_bits(1 << (exponent + 1074))
    }
}

/// How a sum travels between stores: its words as they are, so nothing is
/// rounded on the way.
#[derive(Serialize, Deserialize)]
struct Wire {
    words: [u64; 3],
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    wide: Vec<u64>,
    #[serde(default, skip_serializing_if = "is_false")]
    positive_infinity: bool,
    #[serde(default, skip_serializing_if = "is_false")]
    negative_infinity: bool,
    #[serde(default, skip_serializing_if = "is_false")]
    not_only_negative_zeros: bool,
}

fn is_false(flag: &bool) -> bool {
    !flag
}

impl From<ExactSum> for Wire {
    fn from(sum: ExactSum) -> Wire {
        Wire {
            words: sum.words,
            wide: sum.wide.map_or_else(Vec::new, |wide| wide.to_vec()),
            positive_infinity: sum.positive_infinity,
            negative_infinity: sum.negative_infinity,
            not_only_negative_zeros: sum.not_only_negative_zeros,
        }
    }
}

impl TryFrom<Wire> for ExactSum {
    type Error = String;

    fn try_from(wire: Wire) -> Result<ExactSum, String> {
        let wide = match wire.wide.len() {
            0 => None,
            _ => Some(Box::new(Wide::try_from(wire.wide).map_err(|wide| {
                format!(
                    "the sum's wide part has {} words, not {WIDE_WORDS}",
                    wide.len()
                )
            })?)),
        };
        Ok(ExactSum {
            words: wire.words,
            wide,
            positive_infinity: wire.positive_infinity,
            negative_infinity: wire.negative_infinity,
            not_only_negative_zeros: wire.not_only_negative_zeros,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_rng::xorshift as next;

    fn sum_of(values: &[f64]) -> f64 {
        let mut sum = ExactSum::default();
        values.iter().for_each(|&v| sum.extend([v]));
        sum.value()
    }

    #[test]
    fn the_sum_does_not_depend_on_order() {
        // Left to right in floats these give 2.5999999999999996 and 2.6; the
        // exact sum of the three is nearer the first.
        assert_eq!(sum_of(&[0.1, 0.2, 2.3]), 2.5999999999999996);
        assert_eq!(sum_of(&[0.1, 2.3, 0.2]), 2.5999999999999996);
        assert_eq!(sum_of(&[1e100, 1.0, -1e100]), 1.0);
        assert_eq!(sum_of(&[1e-30, 3.0, -3.0]), 1e-30);
        for order in [
            [f64::MAX, f64::MAX, -f64::MAX],
            [f64::MAX, -f64::MAX, f64::MAX],
        ] {
            assert_eq!(sum_of(&order), f64::MAX, "{order:?}");
        }
    }

    #[test]
    fn the_sum_is_the_exact_sum_rounded_once() {
        // 2⁵³ + 1 is a tie between 2⁵³ and 2⁵³ + 2: to even. A little more
        // (from a value far below) rounds up instead.
        let two_53 = 9_007_199_254_740_992.0;
        assert_eq!(sum_of(&[two_53, 1.0]), two_53);
        assert_eq!(sum_of(&[two_53, 1.0, 1e-200]), two_53 + 2.0);
        assert_eq!(sum_of(&[two_53, 1.0, -1e-200]), two_53);
        assert_eq!(sum_of(&[5e-324, 5e-324]), 1e-323);
        assert_eq!(sum_of(&[f64::MAX, -f64::MAX, 7.5]), 7.5);
        assert_eq!(sum_of(&[1.0, f64::INFINITY]), f64::INFINITY);
        assert!(sum_of(&[f64::NEG_INFINITY, f64::INFINITY]).is_nan());
        assert!(sum_of(&[1.0, f64::NAN]).is_nan());
        // Past the largest float, as IEEE addition rounds: just below half an
        // ulp past it stays, half an ulp goes to infinity.
        let half_ulp = 2f64.powi(970);
        assert_eq!(sum_of(&[f64::MAX, half_ulp, -5e-324]), f64::MAX);
        assert_eq!(sum_of(&[f64::MAX, half_ulp]), f64::INFINITY);
        assert_eq!(sum_of(&[f64::MAX, f64::MAX]), f64::INFINITY);
        assert_eq!(sum_of(&[-f64::MAX, -f64::MAX]), f64::NEG_INFINITY);
    }

    #[test]
    fn a_zero_sum_is_negative_only_when_every_value_was_negative_zero() {
        let sign = |values: &[f64]| sum_of(values).is_sign_negative();
        assert!(sign(&[]));
        assert!(sign(&[-0.0, -0.0]));
        assert!(!sign(&[-0.0, 0.0]));
        assert!(!sign(&[1.5, -1.5]));
        assert!(!sign(&[-1e-300, 1e-300]));
        let (mut a, mut b) = (ExactSum::default(), ExactSum::default());
        a.extend([-0.0]);
        b.extend([0.0]);
        a.merge(&b);
        assert!(!a.value().is_sign_negative());
    }

    /// Random values of every kind the common part takes and refuses, huge
    /// and subnormal ones too, shuffled and split in two: every order and
    /// split gives one value, through the wire as well.
    #[test]
    fn split_and_shuffled_sums_merge_to_one_value() {
        let mut state = 0x9e37_79b9_7f4a_7c15;
        for case in 0..2_000 {
            let values: Vec<f64> = (0..1 + next(&mut state) % 40)
                .map(|_| {
                    let r = next(&mut state);
                    let sign = if r & 2 == 0 { 1.0 } else { -1.0 };
                    match r % 5 {
                        0 => (r >> 20) as f64 / 1000.0,
                        1 => f64::from_bits(r >> 2) * sign,
                        2 => ((r >> 8) % 100_000) as f64 * 0.25,
                        3 => f64::from_bits(r >> 1) * sign,
                        _ => (r >> 30) as f64 * 1e-12,
                    }
                })
                .filter(|v| v.is_finite())
                .collect();
            let whole = sum_of(&values);
            let mut shuffled = values.clone();
            for at in (1..shuffled.len()).rev() {
                shuffled.swap(at, (next(&mut state) % (at as u64 + 1)) as usize);
            }
            let cut = (next(&mut state) as usize) % (shuffled.len() + 1);
            let (mut first, mut second) = (ExactSum::default(), ExactSum::default());
            first.extend(shuffled[..cut].iter().copied());
            shuffled[cut..].iter().for_each(|&v| second.extend([v]));
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

    /// Past 2¹²⁸ units the common part's words carry into the third.
    #[test]
    fn a_sum_past_two_words_stays_exact() {
        let big = 2f64.powi(46) + 0.5;
        let mut sum = ExactSum::default();
        sum.extend(std::iter::repeat_n(big, 1 << 20));
        sum.extend([2f64.powi(-80)]);
        assert_eq!(sum.value(), 2f64.powi(66) + 2f64.powi(19));
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
    fn a_wire_sum_of_the_wrong_shape_is_refused() {
        for body in [
            r#"{"words":[1,2]}"#,
            r#"{"words":[1,0,0],"wide":[1,2,3]}"#,
            r#"{"words":[1,0,0],"wide":[-1]}"#,
        ] {
            assert!(serde_json::from_str::<ExactSum>(body).is_err(), "{body}");
        }
        // Any wide part of the right length reads and rounds, to ±∞ at most.
        let top = format!(
            r#"{{"words":[0,0,0],"wide":[{}]}}"#,
            ["18446744073709551615"; 36].join(",")
        );
        let sum: ExactSum = serde_json::from_str(&top).unwrap();
        assert_eq!(sum.value(), -5e-324);
        let mut wide = vec!["0"; 36];
        wide[35] = "9223372036854775808";
        let most_negative = format!(r#"{{"words":[0,0,0],"wide":[{}]}}"#, wide.join(","));
        let sum: ExactSum = serde_json::from_str(&most_negative).unwrap();
        assert_eq!(sum.value(), f64::NEG_INFINITY);
    }
}
