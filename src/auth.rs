//! API keys: which keys exist, what each may do (query, ingest) and read
//! (endpoints, projects), and checking a presented key without leaking through
//! timing which key (or which prefix) came close. Hosts (the edge worker, the
//! CLI) pass the key through; every scope rule is decided here, once.

use crate::endpoints::{EndpointKind, Query};
use crate::error::{Error, Result};

/// What a key is presented for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Purpose {
    Query,
    Ingest,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiKey {
    secret: String,
    /// Query keys run endpoints; ingest keys write batches.
    purpose: Purpose,
    /// `None`: every endpoint.
    endpoints: Option<Vec<EndpointKind>>,
    /// `None`: every project.
    projects: Option<Vec<String>>,
}

impl ApiKey {
    /// A query key (every endpoint and project until restricted).
    pub fn new(secret: impl Into<String>) -> Result<ApiKey> {
        ApiKey::with_purpose(secret.into(), Purpose::Query)
    }

    /// A key that may ingest batches (and nothing else).
    pub fn ingest(secret: impl Into<String>) -> Result<ApiKey> {
        ApiKey::with_purpose(secret.into(), Purpose::Ingest)
    }

    fn with_purpose(secret: String, purpose: Purpose) -> Result<ApiKey> {
        if secret.is_empty() {
            return Err(Error::InvalidConfig {
                reason: "an API key is empty".into(),
            });
        }
        Ok(ApiKey {
            secret,
            purpose,
            endpoints: None,
            projects: None,
        })
    }

    /// Restricts the key to these endpoints (names or UUIDs).
    pub fn only_endpoints<S: AsRef<str>>(mut self, endpoints: &[S]) -> Result<ApiKey> {
        let kinds = endpoints
            .iter()
            .map(|e| {
                EndpointKind::resolve(e.as_ref()).map_err(|_| Error::InvalidConfig {
                    reason: format!(
                        "API key restriction names unknown endpoint `{}`",
                        e.as_ref()
                    ),
                })
            })
            .collect::<Result<Vec<_>>>()?;
        self.endpoints = Some(kinds);
        Ok(self)
    }

    /// Restricts the key to these project references.
    pub fn only_projects<S: AsRef<str>>(mut self, projects: &[S]) -> ApiKey {
        self.projects = Some(projects.iter().map(|p| p.as_ref().to_owned()).collect());
        self
    }

    /// Whether the key reads every endpoint and project.
    pub(crate) fn is_unrestricted(&self) -> bool {
        self.endpoints.is_none() && self.projects.is_none()
    }

    pub(crate) fn may_use(&self, kind: EndpointKind) -> Result<()> {
        match &self.endpoints {
            Some(allowed) if !allowed.contains(&kind) => Err(Error::Forbidden {
                reason: format!("this API key may not query endpoint {}", kind.name()),
            }),
            _ => Ok(()),
        }
    }

    /// The query as this key may run it: a project-restricted key counts only
    /// its own project's entries in usage.api-counts.
    pub(crate) fn scope(&self, mut query: Query) -> Query {
        if self.projects.is_some() {
            query.restrict_to_project();
        }
        query
    }

    /// For usage.api-counts the project is a pattern; a restricted key must send
    /// one of its projects literally, so it cannot match other projects' URLs
    /// with a wider pattern.
    pub(crate) fn may_read(&self, query: &Query) -> Result<()> {
        match &self.projects {
            Some(allowed) if !allowed.iter().any(|p| p == query.project()) => {
                Err(Error::Forbidden {
                    reason: "this API key may not read the requested project".into(),
                })
            }
            _ => Ok(()),
        }
    }
}

/// Equality whose running time depends only on the lengths, not on where the
/// inputs first differ.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    let mut diff = (a.len() ^ b.len()) as u64;
    for i in 0..a.len().max(b.len()) {
        let x = a.get(i).copied().unwrap_or(0);
        let y = b.get(i).copied().unwrap_or(0);
        // black_box keeps the optimiser from turning the fold into anything that
        // branches on the bytes (checked by counting instructions under callgrind).
        diff = std::hint::black_box(diff | u64::from(x ^ y));
    }
    std::hint::black_box(diff) == 0
}

#[derive(Debug, Clone, Default)]
pub struct KeyRing {
    keys: Vec<ApiKey>,
}

impl KeyRing {
    pub fn new(keys: Vec<ApiKey>) -> KeyRing {
        KeyRing { keys }
    }

    /// Whether any key serves `purpose`.
    pub fn holds(&self, purpose: Purpose) -> bool {
        self.keys.iter().any(|key| key.purpose == purpose)
    }

    /// The key matching `presented` for `purpose`; every configured key is
    /// compared, always. A query key presented for ingest is refused with 403
    /// (it is a real key, just not one that may write); any other mismatch is 401.
    pub fn check(&self, presented: Option<&str>, purpose: Purpose) -> Result<&ApiKey> {
        if !self.keys.iter().any(|key| key.purpose == purpose) {
            return Err(Error::NoApiKeys {
                purpose: match purpose {
                    Purpose::Query => "query (`apiKeys`, API_KEYS)",
                    Purpose::Ingest => "ingest (`ingestKeys`, INGEST_KEYS)",
                },
            });
        }
        let presented = presented
            .filter(|k| !k.is_empty())
            .ok_or(Error::MissingApiKey)?;
        let mut found = None;
        let mut other_purpose = false;
        for key in &self.keys {
            let same = constant_time_eq(key.secret.as_bytes(), presented.as_bytes());
            if same && key.purpose == purpose && found.is_none() {
                found = Some(key);
            }
            other_purpose |= same && key.purpose != purpose;
        }
        match found {
            Some(key) => Ok(key),
            None if other_purpose && purpose == Purpose::Ingest => Err(Error::Forbidden {
                reason: "this key may query but not ingest logs".into(),
            }),
            // Said as plainly the other way: the holder has the key, and a
            // 401 would send them looking for a typo.
            None if other_purpose => Err(Error::Forbidden {
                reason: "this key may ingest but not query logs".into(),
            }),
            None => Err(Error::InvalidApiKey),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys() {
        let ring = KeyRing::new(vec![
            ApiKey::new("secret").unwrap(),
            ApiKey::new("other").unwrap(),
        ]);
        let query = |key| ring.check(key, Purpose::Query);
        assert!(query(Some("secret")).is_ok());
        assert!(query(Some("other")).is_ok());
        assert_eq!(query(Some("secre")).unwrap_err(), Error::InvalidApiKey);
        assert_eq!(query(Some("secrets")).unwrap_err(), Error::InvalidApiKey);
        assert_eq!(query(None).unwrap_err(), Error::MissingApiKey);
        assert_eq!(query(Some("")).unwrap_err(), Error::MissingApiKey);
        assert!(ApiKey::new("").is_err());
        let ring = KeyRing::new(vec![
            ApiKey::new("reader").unwrap(),
            ApiKey::ingest("writer").unwrap(),
        ]);
        assert!(ring.check(Some("writer"), Purpose::Ingest).is_ok());
        assert_eq!(
            ring.check(Some("reader"), Purpose::Ingest)
                .unwrap_err()
                .status(),
            403
        );
        assert_eq!(
            ring.check(Some("writer"), Purpose::Query).unwrap_err(),
            Error::Forbidden {
                reason: "this key may ingest but not query logs".into()
            }
        );
        assert_eq!(
            ring.check(Some("nope"), Purpose::Ingest).unwrap_err(),
            Error::InvalidApiKey
        );
        // With no keys of a kind, the configuration is at fault: 503, which a
        // shipper retries (a 401 would make it drop the batch).
        let readers_only = KeyRing::new(vec![ApiKey::new("reader").unwrap()]);
        let none = readers_only
            .check(Some("reader"), Purpose::Ingest)
            .unwrap_err();
        assert_eq!((none.status(), none.code()), (503, "no_api_keys"));
        assert_eq!(none.retry_after_seconds(), Some(30));
        assert!(none
            .to_string()
            .contains("no ingest (`ingestKeys`, INGEST_KEYS) keys"));
        let empty = KeyRing::new(Vec::new());
        let none = empty.check(None, Purpose::Query).unwrap_err();
        assert!(
            none.to_string()
                .contains("no query (`apiKeys`, API_KEYS) keys"),
            "{none}"
        );
        assert!(constant_time_eq(b"", b""));
        assert!(!constant_time_eq(b"a", b""));
    }
}
