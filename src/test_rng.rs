//! The tests' random numbers: xorshift64, the same values on every run and
//! every platform, with no dependency and no seed from the clock.

/// Steps `state` (never 0) to xorshift64's next state, and returns it.
pub(crate) fn xorshift(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}
