//! Prints the documentation's generated tables, or with `--write` rewrites
//! each between its file's markers (run from the repository's root).
//!
//!   cargo run -p log-endpoints-tools --bin doc_tables -- --write

use std::process::ExitCode;

use log_endpoints_tools::doc_tables::TABLES;

fn main() -> ExitCode {
    let write = match std::env::args().nth(1).as_deref() {
        None => false,
        Some("--write") => true,
        Some(_) => {
            eprintln!("usage: doc_tables [--write]");
            return ExitCode::from(2);
        }
    };
    for table in TABLES {
        if !write {
            println!("{}:\n{}", table.file, (table.markdown)());
            continue;
        }
        let written = std::fs::read_to_string(table.file)
            .map_err(|e| format!("cannot read {}: {e}", table.file))
            .and_then(|text| {
                table
                    .replace_in(&text)
                    .ok_or_else(|| format!("{} has no table markers", table.file))
            })
            .and_then(|text| {
                std::fs::write(table.file, text)
                    .map_err(|e| format!("cannot write {}: {e}", table.file))
            });
        if let Err(e) = written {
            eprintln!("doc_tables: {e}");
            return ExitCode::FAILURE;
        }
    }
    ExitCode::SUCCESS
}
