#!/usr/bin/env bash
# Makes everything the build needs appear on this machine (with --for-tests,
# also what only the tests need: Chromium, the fuzz tools), and writes
# target/toolchain.env describing the wasm toolchain found. Every step checks
# first and is quick the second time.
#
# wasm32 toolchain, in order of preference:
#   1. a Rust toolchain that already has the wasm32-unknown-unknown std;
#   2. `rustup target add wasm32-unknown-unknown` (short timeout);
#   3. Debian's rustc-web/cargo-web 1.96 + rust-web-src + lld-22, building std
#      from source with -Zbuild-std.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh

DEBIAN_RUST_VERSION="1.96.0+dfsg1-1~deb12u2"
mkdir -p target

apt_install() {
  # Installs the named Debian packages unless they are all present already.
  local missing=()
  for pkg in "$@"; do
    local name=${pkg%%=*}
    dpkg-query -W -f='${Status}' "$name" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  log "installing Debian packages: ${missing[*]}"
  local sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

has_wasm_std() {
  local sysroot
  sysroot=$("$1" --print sysroot 2>/dev/null) || return 1
  compgen -G "$sysroot/lib/rustlib/wasm32-unknown-unknown/lib/libstd-*.rlib" >/dev/null
}

write_env() {
  cat > target/toolchain.env <<ENV
# Written by scripts/setup.sh: how to build for wasm32 on this machine.
WASM_ROUTE=$1
WASM_CARGO=$2
WASM_RUSTC=$3
WASM_BUILD_STD="$4"
WASM_BOOTSTRAP=$5
ENV
}

choose_wasm_toolchain() {
  # LOG_ENDPOINTS_WASM_ROUTE=debian forces the fallback (to test it on a machine that has a wasm std).
  if [ "${LOG_ENDPOINTS_WASM_ROUTE:-}" = debian ]; then
    use_debian_toolchain
    return
  fi
  if command -v rustc >/dev/null && has_wasm_std rustc; then
    log "wasm32 std found in $(rustc --version)"
    write_env installed cargo "$(command -v rustc)" "" 0
    return
  fi
  if command -v rustup >/dev/null; then
    log "trying: rustup target add wasm32-unknown-unknown"
    if timeout 60 rustup target add wasm32-unknown-unknown >/dev/null 2>&1 && has_wasm_std rustc; then
      write_env rustup cargo "$(command -v rustc)" "" 0
      return
    fi
    log "rustup could not add the wasm32 target; using Debian's rustc-web and building std from source"
  fi
  use_debian_toolchain
}

use_debian_toolchain() {
  apt_install "rustc-web=$DEBIAN_RUST_VERSION" "cargo-web=$DEBIAN_RUST_VERSION" \
    "rust-web-src=$DEBIAN_RUST_VERSION" "rust-web-llvm=$DEBIAN_RUST_VERSION" lld-22
  write_env debian /usr/bin/cargo /usr/bin/rustc "-Zbuild-std=std,panic_abort" 1
}

install_wasm_bindgen_cli() {
  local want
  want=$(awk '/^name = "wasm-bindgen"$/ { getline; gsub(/"/, "", $3); print $3; exit }' Cargo.lock)
  [ -n "$want" ] || die "no wasm-bindgen version in Cargo.lock"
  if command -v wasm-bindgen >/dev/null && [ "$(wasm-bindgen --version | awk '{print $2}')" = "$want" ] \
     && command -v wasm-bindgen-test-runner >/dev/null; then
    return
  fi
  log "installing wasm-bindgen-cli $want (2-3 minutes, once)"
  # The crate's published lock file pins a since-yanked dependency, so no --locked.
  cargo install -q wasm-bindgen-cli --version "$want" --force
}

install_node_packages() {
  command -v node >/dev/null || apt_install nodejs npm
  # 20.19: require() of an ES module (the package's CommonJS test), unflagged.
  node -e 'const [major, minor] = process.versions.node.split(".").map(Number); process.exit(major > 20 || (major === 20 && minor >= 19) ? 0 : 1)' \
    || die "Node.js >= 20.19 is needed (found $(node --version); Debian 12's own is 18): install it from nodejs.org or NodeSource"
  if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
    log "installing npm packages (npm ci)"
    npm ci --no-audit --no-fund --loglevel=error
  fi
}

install_browser() {
  # Debian's Chromium and ChromeDriver: the page tests (playwright-core) and the
  # wasm tests in a browser (wasm-bindgen-test-runner) drive them.
  apt_install chromium chromium-driver
}

install_lint_tools() {
  # The test command checks formatting and lints (cargo fmt, cargo clippy).
  cargo fmt --version >/dev/null 2>&1 && cargo clippy --version >/dev/null 2>&1 && return
  command -v rustup >/dev/null \
    || die "the tests run cargo fmt and cargo clippy: install rustfmt and clippy for this toolchain"
  log "adding rustfmt and clippy"
  rustup component add rustfmt clippy >/dev/null \
    || die "the tests run cargo fmt and cargo clippy, and 'rustup component add rustfmt clippy' failed"
}

install_fuzz_tools() {
  # cargo fuzz (libFuzzer) builds with a nightly toolchain; valgrind counts
  # instructions for the constant-time key check.
  if ! rustup toolchain list 2>/dev/null | grep -q '^nightly'; then
    log "installing the nightly toolchain (for cargo fuzz)"
    rustup toolchain install nightly --profile minimal >/dev/null \
      || die "cargo fuzz needs a nightly toolchain and 'rustup toolchain install nightly' failed"
  fi
  local want=0.13.1
  if [ "$(cargo fuzz --version 2>/dev/null | awk '{print $2}')" != "$want" ]; then
    log "installing cargo-fuzz $want (about a minute, once)"
    cargo install -q cargo-fuzz --version "$want" --locked 2>/dev/null \
      || cargo install -q cargo-fuzz --version "$want" --force
  fi
  apt_install valgrind
}

[ -f Cargo.lock ] || cargo generate-lockfile -q
choose_wasm_toolchain
install_wasm_bindgen_cli
install_node_packages
if [ "${1:-}" = "--for-tests" ]; then
  install_lint_tools
  install_browser
  install_fuzz_tools
fi
log "toolchain ready ($(grep WASM_ROUTE target/toolchain.env))"
