# Shared helpers for the scripts in this folder (sourced, not run).
log() { echo "[$(basename "$0" .sh)] $*" >&2; }
die() { echo "[$(basename "$0" .sh)] error: $*" >&2; exit 1; }

# Puts cargo's bin folder on PATH (wasm-bindgen is installed there).
export PATH="$HOME/.cargo/bin:$PATH"

# Loads target/toolchain.env and sets up the variables the wasm build needs.
load_wasm_toolchain() {
  [ -f target/toolchain.env ] || die "run scripts/setup.sh first"
  # shellcheck disable=SC1091
  source target/toolchain.env
  WASM_TARGET_DIR=target/wasm
  export CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUNNER=wasm-bindgen-test-runner
}

# Runs the wasm toolchain's cargo with its compiler and flags: wasm_cargo build|test ...
wasm_cargo() {
  local sub=$1; shift
  local build_std=()
  [ -n "$WASM_BUILD_STD" ] && build_std=("$WASM_BUILD_STD")
  local bootstrap=()
  [ "$WASM_BOOTSTRAP" = 1 ] && bootstrap=(RUSTC_BOOTSTRAP=1)
  env "${bootstrap[@]}" RUSTC="$WASM_RUSTC" CARGO_TARGET_DIR="$WASM_TARGET_DIR" \
    "$WASM_CARGO" "$sub" --target wasm32-unknown-unknown "${build_std[@]}" "$@"
}

# Runs a command, or one of these functions, for at most `minutes`: past that
# it is stopped (with what it started) and the run fails naming it, rather
# than hanging until CI's limit with no stage named. timeout runs it in a
# process group of its own, which a terminal's Ctrl-C does not reach: the
# trap passes it on.
within() {
  local minutes=$1; shift
  local rc=0 stage=
  trap '[ -z "$stage" ] || { kill -INT "$stage" 2>/dev/null || true; wait "$stage" || true; }; exit 130' INT
  trap '[ -z "$stage" ] || { kill -TERM "$stage" 2>/dev/null || true; wait "$stage" || true; }; exit 143' TERM
  timeout --verbose -k 30 "${minutes}m" bash -c 'source scripts/lib.sh; [ ! -f target/toolchain.env ] || load_wasm_toolchain; "$@"' within "$@" &
  stage=$!
  wait "$stage" || rc=$?
  trap - INT TERM
  [ "$rc" -ne 124 ] || die "did not finish within $minutes minutes: $*"
  [ "$rc" -ne 137 ] || die "killed (exit 137; at the $minutes-minute limit if timeout says so above, else out of memory): $*"
  return "$rc"
}
