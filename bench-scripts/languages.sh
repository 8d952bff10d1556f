#!/usr/bin/env bash
# languages.sh: the same flat pricing in Rust, Python and JavaScript, and the
# Rust code run natively, measured side by side in one run (benches/languages.rs):
# per call and per container, instantiation, and loads with and without the
# compile cache.
#
#   bench-scripts/languages.sh [criterion arguments]
#
# It builds the release `weft`, writes the Python and JavaScript projects
# with `weft policy new` into a temporary directory outside the repository,
# runs each project's own printed install and build steps (componentize-py and
# componentize-qjs, pinned by the projects), then runs the bench with the two
# components. The temporary directory is removed at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -p weft-host
weft="$PWD/target/release/weft"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

"$weft" policy new flatpy --kind pricing --lang python --dir "$work/flatpy"
(cd "$work/flatpy" && python3 -m pip install -q -r requirements.txt && ./build.sh)
"$weft" policy new flatjs --kind pricing --lang js --dir "$work/flatjs"
(cd "$work/flatjs" && npm install --no-audit --no-fund && npm run build)

if [ $# -eq 0 ]; then set -- --warm-up-time 1 --measurement-time 3; fi
WEFT_BENCH_PYTHON_PRICING="$work/flatpy/flatpy.wasm" \
WEFT_BENCH_JS_PRICING="$work/flatjs/flatjs.wasm" \
    cargo bench -p weft-host --bench languages -- "$@"
