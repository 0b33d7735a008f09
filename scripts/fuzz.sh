#!/usr/bin/env bash
# Runs the cargo-fuzz targets (fuzz/fuzz_targets/) for a bounded time each and
# fails on the first crash or on an input that takes over 30 s, printing each
# target's executions.
#
#   bash scripts/fuzz.sh [seconds per target] [target ...]
#
# The test command runs every target for 15 s from the committed seed corpus
# (fuzz/corpus/<target>, never written to). Longer runs by hand keep what they
# find in target/fuzz-corpus/<target>:  bash scripts/fuzz.sh 600 ingest_batch
# A crash leaves its input in fuzz/artifacts/<target>/ and the run fails;
# replay it with: cd fuzz && cargo +nightly fuzz run -s none <target> <file>
# Needs the nightly toolchain and cargo-fuzz: scripts/setup.sh --for-tests installs them.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh

seconds=${1:-15}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(ingest_batch query_string iso_timestamp query_path from_snapshot)

# No unsafe code in the crate, so no sanitizer: the fuzz build still has debug
# assertions and overflow checks, and runs several times faster without ASan.
log "building the fuzz targets (nightly, cargo fuzz)"
(cd fuzz && cargo +nightly fuzz build -s none)
for target in "${targets[@]}"; do
  scratch=target/fuzz-corpus/$target
  mkdir -p "$scratch"
  log "fuzzing $target for ${seconds}s"
  out=$(mktemp)
  if ! (cd fuzz && cargo +nightly fuzz run -s none "$target" "../$scratch" "corpus/$target" -- \
        -max_total_time="$seconds" -timeout=30 -print_final_stats=1) >"$out" 2>&1; then
    tail -40 "$out" >&2
    die "fuzz target $target crashed or took over 30 s on one input (input saved under fuzz/artifacts/$target/)"
  fi
  runs=$(grep -a -o 'stat::number_of_executed_units: *[0-9]*' "$out" | grep -o '[0-9]*$' || echo '?')
  log "$target: $runs executions in ${seconds}s, no crash"
  rm -f "$out"
done
