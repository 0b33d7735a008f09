//! Any text as a query string: decoded or refused with a 400 naming a parameter,
//! never a panic; what is decoded respects the count and length ceilings.
#![no_main]

use libfuzzer_sys::fuzz_target;
use log_endpoints::Params;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match Params::parse_query_string(text) {
        Ok(params) => {
            let names: Vec<&str> = params.names().collect();
            assert!(names.len() <= log_endpoints::MAX_PARAMS);
            assert!(params.longer_than(log_endpoints::MAX_VALUE_BYTES).is_none());
            for name in names {
                assert!(params.get(name).is_some());
            }
        }
        Err(error) => {
            assert_eq!(error.status(), 400);
            assert_eq!(error.code(), "invalid_parameter");
        }
    }
});
