//! Helper programs of log-endpoints (`src/bin/`) and what they share with the
//! native tests: random multi-project logs and queries (`random_logs`), and the
//! generated TypeScript declarations of every endpoint (`typescript`), and
//! the documentation's generated tables (`doc_tables`).

pub mod doc_tables;
pub mod random_logs;
pub mod typescript;
