//! Prints the error table generated from `src/error.rs`, or with `--write
//! FILE` rewrites it between the file's markers.
//!
//!   cargo run -p log-endpoints-tools --bin error_table -- --write docs/errors.md

use std::process::ExitCode;

use log_endpoints_tools::error_table;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.as_slice() {
        [] => {
            print!("{}", error_table::markdown());
            ExitCode::SUCCESS
        }
        [flag, path] if flag == "--write" => {
            let written = std::fs::read_to_string(path)
                .map_err(|e| format!("cannot read {path}: {e}"))
                .and_then(|text| {
                    error_table::replace_in(&text)
                        .ok_or_else(|| format!("{path} has no error table markers"))
                })
                .and_then(|text| {
                    std::fs::write(path, text).map_err(|e| format!("cannot write {path}: {e}"))
                });
            match written {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("error_table: {e}");
                    ExitCode::FAILURE
                }
            }
        }
        _ => {
            eprintln!("usage: error_table [--write FILE]");
            ExitCode::from(2)
        }
    }
}
