//! The documentation's error table, generated from the core's one list of
//! errors (`Error::TABLE`: status, code and when each happens), so it is never
//! retyped. `docs/errors.md` holds it between two markers; the test below
//! fails when the file is out of step (`cargo run -p log-endpoints-tools --bin
//! error-table -- --write docs/errors.md` rewrites it).

use log_endpoints::Error;

pub const START: &str =
    "<!-- errors:start (generated from src/error.rs by cargo run -p log-endpoints-tools --bin error_table -- --write docs/errors.md) -->";
pub const END: &str = "<!-- errors:end -->";

/// The table in Markdown: one row per error, by status.
pub fn markdown() -> String {
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

/// `text` with the part between the markers replaced by the table; `None`
/// when it has no markers.
pub fn replace_in(text: &str) -> Option<String> {
    let start = text.find(START)? + START.len();
    let end = start + text.get(start..)?.find(END)?;
    Some(format!(
        "{}\n\n{}\n{}",
        text.get(..start)?,
        markdown(),
        text.get(end..)?
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn docs_errors_md_holds_the_table_the_code_declares() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/errors.md");
        let text = std::fs::read_to_string(path).expect("docs/errors.md");
        assert_eq!(
            replace_in(&text).as_deref(),
            Some(text.as_str()),
            "docs/errors.md is out of step with src/error.rs: run cargo run -p log-endpoints-tools --bin error_table -- --write docs/errors.md"
        );
    }
}
