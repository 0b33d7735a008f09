//! JSON by hand: writing a row (logs.all's `metadata` is copied through as
//! the raw text it arrived as; other rows derive `Serialize`), and reading an
//! object's fields in their order with their values unparsed.

use std::fmt::Write;
use std::marker::PhantomData;

use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;

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

/// An object's fields in their order, each value as its raw text; names as
/// `K` (`&str` where names need no unescaping, else `String`).
pub struct Fields<'a, K>(pub Vec<(K, &'a RawValue)>);

impl<'de: 'a, 'a, K: Deserialize<'de>> Deserialize<'de> for Fields<'a, K> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visit<'a, K>(PhantomData<(&'a (), K)>);
        impl<'de: 'a, 'a, K: Deserialize<'de>> Visitor<'de> for Visit<'a, K> {
            type Value = Fields<'a, K>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<Fields<'a, K>, M::Error> {
                let mut fields = Vec::new();
                while let Some(entry) = map.next_entry::<K, &'de RawValue>()? {
                    fields.push(entry);
                }
                Ok(Fields(fields))
            }
        }
        deserializer.deserialize_map(Visit(PhantomData))
    }
}
