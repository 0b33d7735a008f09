//! What every endpoint module declares about itself (settings, parameters), how
//! that is listed by `endpoints()`, and the row writer every endpoint's run
//! writes into. Also the helpers endpoint modules share for reading parameters.

use serde::Serialize;

use super::EndpointKind;
use crate::error::{Error, Result};
use crate::json;
use crate::params::Params;
use crate::timestamp::Micros;

/// Upper bound on rows of every endpoint.
pub const MAX_ROWS: usize = 1000;

/// An endpoint's settings and parameters, declared once in its module (and
/// listed by `endpoints()` as they are).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EndpointSpec {
    pub name: &'static str,
    /// Other names that address it (not other UUIDs).
    pub aliases: &'static [&'static str],
    /// Whether Supabase's Management API route
    /// (`/v1/projects/{ref}/analytics/endpoints/{name}`) serves it.
    pub management_api: bool,
    /// One line on what it answers.
    pub summary: &'static str,
    /// The log stream it reads (`edge_logs` or `function_edge_logs`).
    pub stream: &'static str,
    pub max_rows: usize,
    /// Seconds a result stays cached; `None` when caching is disabled.
    pub cache_seconds: Option<u64>,
    pub cache_warming_seconds: Option<u64>,
    pub parameters: &'static [Parameter],
}

/// One query parameter of an endpoint.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Parameter {
    pub name: &'static str,
    pub required: bool,
    /// The values it takes; empty when it is free text.
    pub values: &'static [&'static str],
    /// What a form should preselect.
    pub default: Option<&'static str>,
    /// An example value, for a placeholder.
    pub example: &'static str,
    /// What it means, and what other values do.
    pub meaning: &'static str,
}

impl Parameter {
    /// A free-text parameter.
    pub const fn text(
        name: &'static str,
        required: bool,
        example: &'static str,
        meaning: &'static str,
    ) -> Parameter {
        Parameter {
            name,
            required,
            values: &[],
            default: None,
            example,
            meaning,
        }
    }

    /// A required parameter with named values.
    pub const fn choice(
        name: &'static str,
        values: &'static [&'static str],
        default: &'static str,
        meaning: &'static str,
    ) -> Parameter {
        Parameter {
            name,
            required: true,
            values,
            default: Some(default),
            example: default,
            meaning,
        }
    }

    /// The same parameter, optional: absent, it is its `default`.
    pub const fn optional(self) -> Parameter {
        Parameter {
            required: false,
            ..self
        }
    }
}

/// What `endpoints()` lists about one endpoint: its spec, its id, and that
/// query sandboxing is disabled.
#[derive(Debug, Clone, Serialize)]
pub struct EndpointInfo {
    pub id: String,
    pub sandboxing: bool,
    #[serde(flatten)]
    pub spec: &'static EndpointSpec,
    #[serde(skip)]
    pub kind: EndpointKind,
}

impl EndpointInfo {
    pub(super) fn new(spec: &'static EndpointSpec, id: String, kind: EndpointKind) -> Self {
        EndpointInfo {
            id,
            sandboxing: false,
            spec,
            kind,
        }
    }
}

/// An enum of a parameter's named values. One list gives parsing, the names
/// `endpoints()` lists (and so the page's choices and the generated TypeScript
/// union).
macro_rules! named_values {
    ($(#[$meta:meta])* pub enum $name:ident { $($variant:ident = $text:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $name { $($variant),+ }

        impl $name {
            pub const NAMES: &'static [&'static str] = &[$($text),+];

            /// The value's name, as the parameter takes it (not every
            /// parameter's messages name their value).
            #[allow(dead_code)]
            pub fn name(self) -> &'static str {
                match self { $($name::$variant => $text),+ }
            }

            pub fn from_name(value: &str) -> Option<$name> {
                match value {
                    $($text => Some($name::$variant),)+
                    _ => None,
                }
            }

            /// The named value, or a 400 naming `parameter` and the values it takes.
            pub fn parse_named(value: &str, parameter: &str) -> $crate::error::Result<$name> {
                $name::from_name(value).ok_or_else(|| {
                    $crate::error::Error::invalid(
                        parameter,
                        format!(
                            "`{}` is not one of {}",
                            value.chars().take(50).collect::<String>(),
                            $name::NAMES.join(", ")
                        ),
                    )
                })
            }
        }
    };
}
pub(crate) use named_values;

/// A required parameter's value; empty counts as missing.
pub(crate) fn required<'a>(params: &'a Params, name: &'static str) -> Result<&'a str> {
    params
        .non_empty(name)
        .ok_or(Error::MissingParameter { name })
}

/// An optional ISO 8601 timestamp parameter; empty counts as absent.
pub(crate) fn optional_timestamp(params: &Params, name: &str) -> Result<Option<Micros>> {
    params
        .non_empty(name)
        .map(|text| {
            crate::timestamp::parse_iso(text).map_err(|reason| Error::invalid(name, reason))
        })
        .transpose()
}

/// The body `{"result":[…]}` being written, row by row, up to the endpoint's
/// max rows. Rows are serialised with serde (`json::push_value`); logs.all writes its raw
/// `metadata` by hand through `push_raw`.
pub struct Rows {
    out: String,
    count: usize,
    max: usize,
}

impl Rows {
    pub(crate) fn new(max: usize) -> Rows {
        let mut out = String::with_capacity(256);
        out.push_str("{\"result\":[");
        Rows { out, count: 0, max }
    }

    /// Whether no more rows may be added.
    pub fn is_full(&self) -> bool {
        self.count >= self.max
    }

    pub fn push<R: Serialize>(&mut self, row: &R) {
        // Serialising plain rows cannot fail; a row that did would be left out.
        self.push_if(|out| json::push_value(out, row));
    }

    /// Appends one row written by `write`, which must write one JSON value.
    pub fn push_raw(&mut self, write: impl FnOnce(&mut String)) {
        self.push_if(|out| {
            write(out);
            true
        });
    }

    /// Appends the row `write` writes, unless it says it wrote none.
    fn push_if(&mut self, write: impl FnOnce(&mut String) -> bool) {
        if self.is_full() {
            return;
        }
        let before = self.out.len();
        if self.count > 0 {
            self.out.push(',');
        }
        match write(&mut self.out) {
            true => self.count += 1,
            false => self.out.truncate(before),
        }
    }

    pub(crate) fn finish(mut self) -> String {
        self.out.push_str("]}");
        self.out
    }
}
