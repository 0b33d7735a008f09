#!/usr/bin/env bash
# The main job: builds the wasm module and serves the edge worker on real
# workerd at http://127.0.0.1:8787 with sample logs, printing a curl line per
# endpoint. Extra arguments go to www/dev.mjs (e.g. --port 9000, --fresh).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh
bash scripts/setup.sh
bash scripts/build.sh
exec node www/dev.mjs "$@"
