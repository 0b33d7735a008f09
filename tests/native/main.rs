//! The native integration tests, one binary: each module tests one endpoint or
//! one concern of the service through the public Rust API. The fixture suite is
//! shared with the wasm tests (`tests/wasm.rs`).
#![cfg(not(target_arch = "wasm32"))]
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod common;
#[path = "../fixture_suite/mod.rs"]
mod fixture_suite;

mod api_counts;
mod bad_inputs;
mod fixtures;
mod invocation_stats;
mod layers;
mod logflare_ingest;
mod logs_all;
mod management_api;
mod properties;
mod security;
mod service;
mod shard;
