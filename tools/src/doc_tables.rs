//! The documentation's generated tables, each from the one list in the core
//! that declares what it shows, so none is ever retyped:
//! - the error table (`docs/errors.md`, and the npm package's README), from
//!   `Error::TABLE` (status, code and when each error happens);
//! - the edge worker's settings (`README.md`), from `SETTINGS`.
//!
//! Each file holds its table between two markers; the test below fails when
//! a file is out of step (`cargo run -p log-endpoints-tools --bin doc_tables
//! -- --write` rewrites them).

use log_endpoints::{Error, SETTINGS};

/// One generated table: where it lives and how it is made.
pub struct Table {
    pub file: &'static str,
    pub start: &'static str,
    pub end: &'static str,
    pub markdown: fn() -> String,
}

pub const TABLES: &[Table] = &[
    Table {
        file: "docs/errors.md",
        start: "<!-- errors:start (generated from src/error.rs by cargo run -p log-endpoints-tools --bin doc_tables -- --write) -->",
        end: "<!-- errors:end -->",
        markdown: errors,
    },
    Table {
        file: "pkg-template/README.md",
        start: "<!-- errors:start (generated from src/error.rs by cargo run -p log-endpoints-tools --bin doc_tables -- --write) -->",
        end: "<!-- errors:end -->",
        markdown: errors,
    },
    Table {
        file: "README.md",
        start: "<!-- settings:start (generated from src/settings.rs by cargo run -p log-endpoints-tools --bin doc_tables -- --write) -->",
        end: "<!-- settings:end -->",
        markdown: settings,
    },
];

/// The error table: one row per error, by status.
pub fn errors() -> String {
    let mut rows: Vec<_> = Error::TABLE.iter().collect();
    rows.sort_by_key(|kind| kind.status);
    let mut out = String::from("| status | code | when |\n|---|---|---|\n");
    for kind in rows {
        out.push_str(&format!(
            "| {} | `{}` | {} |\n",
            kind.status, kind.code, kind.when
        ));
    }
    out
}

/// The settings table: one row per setting.
pub fn settings() -> String {
    let mut out = String::from("| name | meaning | when unset |\n|---|---|---|\n");
    for setting in SETTINGS {
        out.push_str(&format!(
            "| `{}` | {} | {} |\n",
            setting.name, setting.meaning, setting.default
        ));
    }
    out
}

impl Table {
    /// `text` with the part between the markers replaced by the table; `None`
    /// when it has no markers.
    pub fn replace_in(&self, text: &str) -> Option<String> {
        let start = text.find(self.start)? + self.start.len();
        let end = start + text.get(start..)?.find(self.end)?;
        Some(format!(
            "{}\n\n{}\n{}",
            text.get(..start)?,
            (self.markdown)(),
            text.get(end..)?
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_file_holds_the_table_the_code_declares() {
        for table in TABLES {
            let path = format!("{}/../{}", env!("CARGO_MANIFEST_DIR"), table.file);
            let text = std::fs::read_to_string(&path).expect("the table's file");
            assert_eq!(
                table.replace_in(&text).as_deref(),
                Some(text.as_str()),
                "{} is out of step with the code: run cargo run -p log-endpoints-tools --bin doc_tables -- --write",
                table.file
            );
        }
    }
}
