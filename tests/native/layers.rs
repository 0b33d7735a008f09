//! The core is layered: `src/lib.rs` lists its modules in layer order, and no
//! module uses one listed after it. This reads the sources (every `crate::`
//! path outside `#[cfg(test)]` code) and names each back-edge it finds.
use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};

use regex::Regex;

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// The modules `lib.rs` declares, in order.
fn layer_order(lib: &str) -> Vec<String> {
    let declaration = Regex::new(r"(?m)^\s*(?:pub(?:\([a-z]+\))?\s+)?mod\s+([a-z_]+)\s*;").unwrap();
    declaration
        .captures_iter(lib)
        .map(|c| c[1].to_owned())
        .collect()
}

/// Names `lib.rs` re-exports at the root (`pub use module::{A, B}`), by the
/// module they come from.
fn root_exports(lib: &str) -> HashMap<String, String> {
    let statement = Regex::new(r"(?s)pub use ([a-z_]+)::(\{[^}]*\}|[A-Za-z_]+)").unwrap();
    let name = Regex::new(r"(?:[A-Za-z_]+ as )?([A-Za-z_]+)\s*(?:,|\}|$)").unwrap();
    let mut exports = HashMap::new();
    for statement in statement.captures_iter(lib) {
        for name in name.captures_iter(&statement[2]) {
            exports.insert(name[1].to_owned(), statement[1].to_owned());
        }
    }
    exports
}

fn rust_files(path: &Path, out: &mut Vec<PathBuf>) {
    if path.is_dir() {
        for entry in fs::read_dir(path).unwrap() {
            rust_files(&entry.unwrap().path(), out);
        }
    } else if path.is_file() && path.extension().is_some_and(|e| e == "rs") {
        out.push(path.to_owned());
    }
}

/// The first path segment of every `crate::` path in `code` (including each
/// item of a `crate::{a::x, b}` group).
fn crate_paths(code: &str) -> Vec<String> {
    let single = Regex::new(r"crate::([A-Za-z_]+)").unwrap();
    let group = Regex::new(r"crate::\{([^;]*)\}").unwrap();
    let item = Regex::new(r"(?:^|,)\s*([A-Za-z_]+)").unwrap();
    let mut out: Vec<String> = single
        .captures_iter(code)
        .map(|c| c[1].to_owned())
        .collect();
    for group in group.captures_iter(code) {
        // Only the top level of the group: nested braces belong to their item.
        let mut depth = 0;
        let top: String = group[1]
            .chars()
            .map(|c| {
                let kept = if depth == 0 { c } else { ' ' };
                match c {
                    '{' => depth += 1,
                    '}' => depth -= 1,
                    _ => {}
                }
                kept
            })
            .collect();
        out.extend(item.captures_iter(&top).map(|c| c[1].to_owned()));
    }
    out
}

/// Source without comments and without its `#[cfg(test)]` part (tests may use
/// the whole crate).
fn production_code(text: &str) -> String {
    let text = text.split("#[cfg(test)]").next().unwrap_or("");
    text.lines()
        .filter(|line| !line.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn no_module_uses_one_listed_after_it_in_lib_rs() {
    let lib = fs::read_to_string(src().join("lib.rs")).unwrap();
    let order = layer_order(&lib);
    assert!(order.len() > 10, "lib.rs declares {order:?}");
    let rank: HashMap<&str, usize> = order
        .iter()
        .enumerate()
        .map(|(i, m)| (m.as_str(), i))
        .collect();
    let exports = root_exports(&lib);
    let mut back_edges = Vec::new();
    for module in &order {
        let mut files = Vec::new();
        let dir = src().join(module);
        rust_files(&dir, &mut files);
        rust_files(&src().join(format!("{module}.rs")), &mut files);
        assert!(!files.is_empty(), "no source for module {module}");
        for file in files {
            let code = production_code(&fs::read_to_string(&file).unwrap());
            for used in crate_paths(&code) {
                let target = match rank.get(used.as_str()) {
                    Some(_) => used.clone(),
                    None => match exports.get(&used) {
                        Some(from) => from.clone(),
                        None => continue,
                    },
                };
                if rank[target.as_str()] > rank[module.as_str()] {
                    back_edges.push(format!(
                        "{} uses crate::{used} (module `{target}`, listed after `{module}`)",
                        file.strip_prefix(src()).unwrap_or(&file).display()
                    ));
                }
            }
        }
    }
    back_edges.sort();
    back_edges.dedup();
    assert!(
        back_edges.is_empty(),
        "modules use modules listed after them in lib.rs:\n{}",
        back_edges.join("\n")
    );
}

#[test]
fn the_reader_sees_grouped_and_inline_paths() {
    let code = "use crate::{a::B, c, d::{E, F}};\nfn f() { crate::g::h(); $crate::i::J }";
    let mut paths = crate_paths(code);
    paths.sort();
    paths.dedup();
    assert_eq!(paths, ["a", "c", "d", "g", "i"]);
}
