//! Writes the generated TypeScript declarations of every endpoint to the given
//! file (`scripts/build.sh` puts them into the package as `endpoints.d.ts`).
//!
//!   cargo run -p log-endpoints-tools --bin typescript -- pkg/endpoints.d.ts

use std::process::ExitCode;

fn main() -> ExitCode {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: typescript <output .d.ts file>");
        return ExitCode::from(2);
    };
    match std::fs::write(&path, log_endpoints_tools::typescript::declarations()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("typescript: cannot write {path}: {e}");
            ExitCode::FAILURE
        }
    }
}
