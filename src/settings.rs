//! The edge worker's settings: the names it reads from its environment
//! (Workers vars and secrets; the main job passes the same names through from
//! the shell), what each means, its default, and how its text reads. Listed
//! once (`SETTINGS`): the worker reads them here, the main job passes them
//! on by this list, and the README's table is generated from it.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// One setting, as the README lists it.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Setting {
    pub name: &'static str,
    pub meaning: &'static str,
    /// Its value when unset (the main job's own defaults are said in `meaning`).
    pub default: &'static str,
}

/// Above Vector's http sink default batch (`batch.max_bytes`, 10,000,000
/// bytes), which self-hosted Supabase's `vector.yml` keeps: a 413 makes
/// Vector drop the batch.
pub const DEFAULT_MAX_BODY_BYTES: usize = 16 << 20;
/// A Workers isolate has 128 MB for the wasm memory, the JS heap and a batch in
/// flight. With sealed text in the object's SQLite the store is mostly
/// columns and names, held in chunks and pieces that never move (`Chunked`,
/// `PiecedText`), so a full 72 MiB store's engine peaks about where a 52 MiB
/// one did when each grew as one `Vec` (`bench/cold-start.mjs`; README,
/// "Edge worker").
pub const DEFAULT_MAX_STORE_BYTES: usize = 72 << 20;

pub const SETTINGS: &[Setting] = &[
    Setting {
        name: "API_KEYS",
        meaning: "query keys: a comma-separated list, or a JSON array of keys and restricted keys (`[\"k1\", {\"key\": \"k2\", \"projects\": [\"abc\"], \"endpoints\": [\"logs.all\"]}]`); the main job makes a development key when unset",
        default: "none: every query is refused with 503 `no_api_keys`, and `/health` answers 503",
    },
    Setting {
        name: "INGEST_KEYS",
        meaning: "comma-separated ingest keys; the main job makes a development key when unset",
        default: "none: every batch is refused with 503 `no_api_keys` (a shipper retries it until keys are set), and `/health` answers 503",
    },
    Setting {
        name: "FIXED_NOW_MS",
        meaning: "a fixed clock, epoch ms (demos, tests)",
        default: "unset: the host clock",
    },
    Setting {
        name: "MAX_BODY_BYTES",
        meaning: "largest ingest body after decompression (above Vector's default batch of 10 MB, which it would drop on a 413)",
        default: "16 MiB",
    },
    Setting {
        name: "MAX_STORE_BYTES",
        meaning: "memory budget of a shard's in-memory store, of which other sources may hold a quarter; a project-day's entries past it, or past its other sources' quarter, go to stores of its own (`{day}/p/{ref}/{n}`)",
        default: "72 MiB",
    },
    Setting {
        name: "SHARDING",
        meaning: "`off`: one Durable Object holds everything (no ingest partitions, no directory), for comparison",
        default: "unset: ingest partitions, directory partitions and shards",
    },
];

/// A setting's value as the environment holds it: text (a secret, a var) or
/// a number (a var written as one).
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum Value {
    Text(String),
    Number(f64),
}

impl Value {
    fn text(&self) -> String {
        match self {
            Value::Text(text) => text.clone(),
            Value::Number(n) => n.to_string(),
        }
    }
}

/// The environment as the worker gets it: every setting, if set (anything
/// else in it, such as the objects' bindings, is not read).
#[derive(Debug, Default, Deserialize)]
pub struct Environment {
    #[serde(rename = "API_KEYS", default)]
    api_keys: Option<Value>,
    #[serde(rename = "INGEST_KEYS", default)]
    ingest_keys: Option<Value>,
    #[serde(rename = "FIXED_NOW_MS", default)]
    fixed_now_ms: Option<Value>,
    #[serde(rename = "MAX_BODY_BYTES", default)]
    max_body_bytes: Option<Value>,
    #[serde(rename = "MAX_STORE_BYTES", default)]
    max_store_bytes: Option<Value>,
    #[serde(rename = "SHARDING", default)]
    sharding: Option<Value>,
}

/// The settings read: keys as `new LogEndpoints` takes them, numbers as numbers.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Settings {
    pub api_keys: Vec<serde_json::Value>,
    pub ingest_keys: Vec<String>,
    pub fixed_now_ms: Option<f64>,
    pub max_body_bytes: usize,
    pub max_store_bytes: usize,
    pub sharding: bool,
}

fn invalid(name: &str, reason: impl std::fmt::Display) -> Error {
    Error::InvalidConfig {
        reason: format!("setting {name}: {reason}"),
    }
}

fn list(text: Option<&str>) -> Vec<String> {
    text.unwrap_or("")
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

fn number<T: std::str::FromStr>(name: &str, text: Option<&str>) -> Result<Option<T>> {
    match text.map(str::trim).filter(|t| !t.is_empty()) {
        None => Ok(None),
        Some(t) => t
            .parse()
            .map(Some)
            .map_err(|_| invalid(name, format!("`{t}` is not a number"))),
    }
}

impl Settings {
    pub fn read(env: &Environment) -> Result<Settings> {
        let text = |value: &Option<Value>| value.as_ref().map(Value::text);
        let api_keys = text(&env.api_keys);
        let api_keys = match api_keys.as_deref().map(str::trim) {
            Some(text) if text.starts_with('[') => {
                serde_json::from_str::<Vec<serde_json::Value>>(text)
                    .map_err(|e| invalid("API_KEYS", format!("not a JSON array ({e})")))?
            }
            text => list(text)
                .into_iter()
                .map(serde_json::Value::String)
                .collect(),
        };
        Ok(Settings {
            api_keys,
            ingest_keys: list(text(&env.ingest_keys).as_deref()),
            fixed_now_ms: number::<f64>("FIXED_NOW_MS", text(&env.fixed_now_ms).as_deref())?
                .map(|ms| match ms.is_finite() {
                    true => Ok(ms),
                    false => Err(invalid("FIXED_NOW_MS", format!("`{ms}` is not a time"))),
                })
                .transpose()?,
            max_body_bytes: number("MAX_BODY_BYTES", text(&env.max_body_bytes).as_deref())?
                .unwrap_or(DEFAULT_MAX_BODY_BYTES),
            max_store_bytes: number("MAX_STORE_BYTES", text(&env.max_store_bytes).as_deref())?
                .unwrap_or(DEFAULT_MAX_STORE_BYTES),
            sharding: text(&env.sharding).as_deref().map(str::trim) != Some("off"),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_read_from_text() {
        let env: Environment = serde_json::from_value(serde_json::json!({
            "API_KEYS": "[\"a\", {\"key\": \"b\", \"projects\": [\"p\"]}]",
            "INGEST_KEYS": " i1, i2 ,",
            "MAX_BODY_BYTES": "1000",
            "SHARDING": "off",
            "OTHER": "x"
        }))
        .unwrap();
        let settings = Settings::read(&env).unwrap();
        assert_eq!(settings.api_keys.len(), 2);
        assert_eq!(settings.ingest_keys, ["i1", "i2"]);
        assert_eq!(
            (
                settings.max_body_bytes,
                settings.max_store_bytes,
                settings.sharding
            ),
            (1000, DEFAULT_MAX_STORE_BYTES, false)
        );
        let plain: Environment =
            serde_json::from_value(serde_json::json!({ "API_KEYS": "k1,k2" })).unwrap();
        assert_eq!(Settings::read(&plain).unwrap().api_keys.len(), 2);
        for bad in ["soon", "NaN", "inf"] {
            let bad: Environment =
                serde_json::from_value(serde_json::json!({ "FIXED_NOW_MS": bad })).unwrap();
            assert!(Settings::read(&bad)
                .unwrap_err()
                .to_string()
                .contains("FIXED_NOW_MS"));
        }
    }
}
