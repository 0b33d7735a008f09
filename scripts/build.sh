#!/usr/bin/env bash
# Builds the wasm module and fills pkg/ (the npm package) from pkg-template/.
# Usage: scripts/build.sh   (runs scripts/setup.sh first when needed)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh
[ -f target/toolchain.env ] || bash scripts/setup.sh
load_wasm_toolchain

log "compiling to wasm32 ($WASM_ROUTE toolchain)"
# simd128 (every runtime we target has had wasm SIMD for years: Node >= 16.4,
# Deno, workerd, Chrome 91, Firefox 89, Safari 16.4): the regex crate's literal
# search and the column scans use it; measured with node bench/bench.mjs
# (usage.api-counts daily at 1M entries 49 -> 30 ms, the scan floor 0.51 -> 0.31 ms).
# RUSTFLAGS from the environment replace .cargo/config.toml's, so it is repeated here.
RUSTFLAGS="${RUSTFLAGS:-} -C target-feature=+simd128 -D warnings" wasm_cargo build --release --lib --quiet
wasm="$WASM_TARGET_DIR/wasm32-unknown-unknown/release/log_endpoints.wasm"

rm -rf pkg && mkdir -p pkg
# The reset function lets a host re-instantiate the module after a trap (the edge worker does).
wasm-bindgen --target web --experimental-reset-state-function --out-dir pkg --out-name log_endpoints "$wasm"
# wasm-opt -O3 (binaryen from npm): about 14% smaller, no slower. It takes ~30 s,
# so its output is cached by the hash of its input.
opt_cache="target/wasm-opt/$(sha256sum pkg/log_endpoints_bg.wasm | cut -c1-32).wasm"
if [ ! -f "$opt_cache" ]; then
  log "optimising with wasm-opt -O3 (once per change of the module)"
  mkdir -p target/wasm-opt
  node_modules/.bin/wasm-opt -O3 --enable-bulk-memory --enable-nontrapping-float-to-int --enable-sign-ext \
    --enable-reference-types --enable-multivalue --enable-mutable-globals \
    pkg/log_endpoints_bg.wasm -o "$opt_cache.tmp"
  mv "$opt_cache.tmp" "$opt_cache"
fi
cp "$opt_cache" pkg/log_endpoints_bg.wasm
cp -R pkg-template/. pkg/
# Each endpoint's parameter and row types, generated from its Rust module.
cargo run --quiet -p log-endpoints-tools --bin typescript -- pkg/endpoints.d.ts
version=$(awk -F'"' '/^version = / { print $2; exit }' Cargo.toml)
node -e '
  const fs = require("fs");
  const p = JSON.parse(fs.readFileSync("pkg/package.json", "utf8"));
  p.version = process.argv[1];
  fs.writeFileSync("pkg/package.json", JSON.stringify(p, null, 2) + "\n");
' "$version"
# The browser page as static files: dist/page/ (serve it from any static host).
rm -rf dist/page && mkdir -p dist/page/pkg dist/page/vendor
cp www/page/* dist/page/
cp pkg/web.js pkg/seal-worker-node-only.js pkg/log_endpoints.js pkg/log_endpoints_bg.wasm dist/page/pkg/
cp node_modules/uplot/dist/uPlot.esm.js node_modules/uplot/dist/uPlot.min.css dist/page/vendor/

# Make the package importable by its name from this checkout's tests and tools.
mkdir -p node_modules && ln -sfn ../pkg node_modules/log-endpoints
log "pkg/ ready: $(stat -c %s pkg/log_endpoints_bg.wasm) bytes of wasm, $(gzip -9 -c pkg/log_endpoints_bg.wasm | wc -c) gzipped"
