#!/bin/sh
# Builds {{name}}.wasm from app.py with the componentize-py that
# requirements.txt pins, from the project's virtual environment (.venv) when
# there is one (README.md: the install step).
set -eu
cd "$(dirname "$0")"
if [ -x .venv/bin/componentize-py ]; then
    PATH="$PWD/.venv/bin:$PATH"
fi
pinned=$(sed -n 's/^componentize-py==//p' requirements.txt)
installed=$(componentize-py --version 2>/dev/null | sed -n 's/^componentize-py //p' || true)
if [ "$installed" != "$pinned" ]; then
    echo "build.sh: componentize-py $pinned is needed, found ${installed:-none}: python3 -m venv --system-site-packages .venv && .venv/bin/python -m pip install -r requirements.txt" >&2
    exit 1
fi
exec componentize-py -d wit -w {{kind}}-policy componentize app -p . -o {{name}}.wasm
