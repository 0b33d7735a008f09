//! Helpers for writing a row's JSON by hand, for logs.all, whose `metadata` is
//! copied through as the raw text it arrived as (other rows derive `Serialize`).

use std::fmt::Write;

pub fn push_str(out: &mut String, value: &str) {
    // serde_json's string escaping is the one the rest of the wire format uses.
    match serde_json::to_string(value) {
        Ok(escaped) => out.push_str(&escaped),
        Err(_) => out.push_str("null"),
    }
}

pub fn push_opt_str(out: &mut String, value: Option<&str>) {
    match value {
        Some(v) => push_str(out, v),
        None => out.push_str("null"),
    }
}

pub fn push_int(out: &mut String, value: i64) {
    let _ = write!(out, "{value}");
}

/// `"name":` — `name` must need no escaping (field names are fixed).
pub fn push_key(out: &mut String, name: &str) {
    out.push('"');
    out.push_str(name);
    out.push_str("\":");
}
