//! Helper programs of log-endpoints (`src/bin/`) and what they share with the
//! native tests: random multi-project logs and queries (`random_logs`), and the
//! generated TypeScript declarations of every endpoint (`typescript`).

pub mod random_logs;
pub mod typescript;
