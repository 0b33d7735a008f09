#!/usr/bin/env bash
# The whole test suite: what CI runs (.ci/run) and what the README tells a new
# machine to type. Installs what it needs first; exits non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh

# What a developer's shell may have set that would make the wasm test runner
# (wasm-bindgen-test-runner 0.2.130) skip a stage, run it somewhere else, use
# another browser or driver, or wait for a person: not here.
unset WASM_BINDGEN_TEST_ONLY_NODE WASM_BINDGEN_TEST_ONLY_WEB NO_HEADLESS WASM_BINDGEN_TEST_WEBDRIVER_JSON \
  WASM_BINDGEN_USE_BROWSER WASM_BINDGEN_USE_DENO WASM_BINDGEN_USE_NODE_EXPERIMENTAL WASM_BINDGEN_USE_EMSCRIPTEN \
  WASM_BINDGEN_USE_NO_MODULE WASM_BINDGEN_USE_DEDICATED_WORKER WASM_BINDGEN_USE_SHARED_WORKER WASM_BINDGEN_USE_SERVICE_WORKER \
  GECKODRIVER SAFARIDRIVER MSEDGEDRIVER GECKODRIVER_REMOTE SAFARIDRIVER_REMOTE CHROMEDRIVER_REMOTE MSEDGEDRIVER_REMOTE

started=$(date +%s)
stage() { echo; echo "=== $* ($(( $(date +%s) - started ))s)"; }

stage "setup"
within 45 bash scripts/setup.sh --for-tests
load_wasm_toolchain

stage "cargo fmt --check"
within 5 cargo fmt --all -- --check

stage "cargo clippy"
within 20 cargo clippy --workspace --all-targets --quiet -- -D warnings

stage "cargo clippy for wasm32 (where usize is 32 bits)"
within 15 wasm_cargo clippy -p log-endpoints --lib --test wasm --quiet -- -D warnings

stage "native tests (cargo test)"
within 25 cargo test --workspace --quiet

stage "fuzzing: each cargo-fuzz target for 15 s from the committed seed corpus"
within 15 bash scripts/fuzz.sh 15

stage "build wasm package (pkg/)"
within 15 bash scripts/build.sh

stage "wasm tests in Node (wasm-bindgen-test-runner)"
within 15 wasm_cargo test --test wasm

stage "wasm tests in headless Chromium (wasm-bindgen-test-runner + chromedriver)"
WASM_BINDGEN_USE_BROWSER=1 CHROMEDRIVER=/usr/bin/chromedriver WASM_BINDGEN_TEST_TIMEOUT=600 within 15 wasm_cargo test --test wasm

stage "benchmark smoke run: 100k entries per stream, one repetition (checks the bench runs and the engines agree; no timing assertions)"
within 15 node bench/bench.mjs --smoke > /dev/null

stage "bench/ab.mjs on the smoke run's data: the package against itself (the tool runs; one build on both sides, so it checks only that two stores of the same data answer alike, not the answers)"
within 10 node bench/ab.mjs --a pkg --b pkg --size 100000 --reps 1 > /dev/null

stage "bench/ingest-threads.mjs on the smoke run's edge entries (the tool runs, and takes every entry; no timing assertions)"
within 5 node bench/ingest-threads.mjs --size 100000 > /dev/null

stage "Node tests: package by name and installed from its tarball (Node, Deno, workerd, Chromium, tsc, CLI), edge worker on workerd, load check, browser page, wasm = native on random logs, constant-time keys, the benchmark peers' SQL on edge cases"
# A test file that hangs fails after 10 minutes (Node 20 bounds each file, not each test),
# named by its file, instead of holding CI until it is killed. The files are
# named by the shell: Node 21 and later read a directory argument as a module.
within 40 node --test --test-reporter=spec --test-concurrency=1 --test-timeout=600000 tests/node/*.test.mjs

echo
echo "=== all test stages passed in $(( $(date +%s) - started ))s"
