//! Any text as an ISO 8601 timestamp: parsed or refused with a reason, never a
//! panic or an overflow; what parses is in range and survives a round trip.
#![no_main]

use libfuzzer_sys::fuzz_target;
use log_endpoints::timestamp::{format_rfc3339, parse_iso, MAX_MICROS, MIN_MICROS};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match parse_iso(text) {
        Ok(us) => {
            assert!((MIN_MICROS..=MAX_MICROS).contains(&us), "{text:?} → {us}");
            let printed = format_rfc3339(us);
            assert_eq!(parse_iso(&printed), Ok(us), "{text:?} → {printed}");
        }
        Err(reason) => assert!(!reason.is_empty()),
    }
});
