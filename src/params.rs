//! Query parameters: decoding a query string, looking values up (last one wins,
//! as Logflare's Plug parser does), and the per-value length limit.

use crate::error::{Error, Result};

/// Hard ceiling on a parameter value, in bytes, whatever the service's limits say
/// (`Limits::max_param_bytes`, 4096 by default, is checked when a query runs).
pub const MAX_VALUE_BYTES: usize = 64 << 10;
/// Most parameters accepted in one call.
pub const MAX_PARAMS: usize = 64;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Params {
    pairs: Vec<(String, String)>,
}

impl Params {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn from_pairs<K: Into<String>, V: Into<String>>(
        pairs: impl IntoIterator<Item = (K, V)>,
    ) -> Result<Self> {
        let mut params = Params::new();
        for (k, v) in pairs {
            params.push(k.into(), v.into())?;
        }
        Ok(params)
    }

    pub fn push(&mut self, name: String, value: String) -> Result<()> {
        if self.pairs.len() >= MAX_PARAMS {
            return Err(Error::invalid(
                &name,
                format!("too many parameters (at most {MAX_PARAMS})"),
            ));
        }
        if value.len() > MAX_VALUE_BYTES {
            return Err(Error::invalid(
                &name,
                format!("longer than {MAX_VALUE_BYTES} bytes"),
            ));
        }
        self.pairs.push((name, value));
        Ok(())
    }

    /// `a=1&b=x%20y`, with or without a leading `?`; `+` is a space.
    pub fn parse_query_string(query: &str) -> Result<Self> {
        let mut params = Params::new();
        for part in query
            .trim_start_matches('?')
            .split('&')
            .filter(|p| !p.is_empty())
        {
            let (raw_name, raw_value) = part.split_once('=').unwrap_or((part, ""));
            let name = percent_decode(raw_name).ok_or_else(|| {
                Error::invalid(raw_name, "its name is not valid percent-encoded UTF-8")
            })?;
            let value = percent_decode(raw_value)
                .ok_or_else(|| Error::invalid(&name, "not valid percent-encoded UTF-8"))?;
            params.push(name, value)?;
        }
        Ok(params)
    }

    /// These parameters with `name` set to `value` (replacing any sent).
    pub fn with(&self, name: &str, value: &str) -> Params {
        let mut pairs: Vec<(String, String)> = self
            .pairs
            .iter()
            .filter(|(k, _)| k != name)
            .cloned()
            .collect();
        pairs.push((name.to_owned(), value.to_owned()));
        Params { pairs }
    }

    /// The value of `name`; the last one when it is repeated.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.pairs
            .iter()
            .rev()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// The value of `name`, treating an empty value as absent.
    pub fn non_empty(&self, name: &str) -> Option<&str> {
        self.get(name).filter(|v| !v.is_empty())
    }

    /// The first parameter whose value is longer than `limit` bytes.
    pub fn longer_than(&self, limit: usize) -> Option<(&str, usize)> {
        self.pairs
            .iter()
            .find(|(_, v)| v.len() > limit)
            .map(|(n, v)| (n.as_str(), v.len()))
    }

    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.pairs.iter().map(|(k, _)| k.as_str())
    }
}

/// A percent-encoded path segment (`+` stays `+`).
pub(crate) fn percent_decode_path(text: &str) -> Option<String> {
    decode(text, false)
}

fn percent_decode(text: &str) -> Option<String> {
    decode(text, true)
}

fn decode(text: &str, plus_is_space: bool) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        match b {
            b'+' if plus_is_space => out.push(b' '),
            b'%' => {
                let hex = bytes.get(i + 1..i + 3)?;
                let hex = std::str::from_utf8(hex).ok()?;
                out.push(u8::from_str_radix(hex, 16).ok()?);
                i += 2;
            }
            _ => out.push(b),
        }
        i += 1;
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_strings() {
        let p =
            Params::parse_query_string("?project=abc&interval=1hr&x=a%20b+c&project=def&empty=")
                .unwrap();
        assert_eq!(p.get("project"), Some("def"));
        assert_eq!(p.get("x"), Some("a b c"));
        assert_eq!(p.get("empty"), Some(""));
        assert_eq!(p.non_empty("empty"), None);
        assert_eq!(p.get("missing"), None);
        assert!(Params::parse_query_string("project=%zz").is_err());
        assert!(Params::parse_query_string("project=%ff").is_err());
        let long = format!("project={}", "a".repeat(MAX_VALUE_BYTES + 1));
        assert_eq!(
            Params::parse_query_string(&long).unwrap_err().code(),
            "invalid_parameter"
        );
    }
}
