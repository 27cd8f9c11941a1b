#!/usr/bin/env bash
# Builds python.wasm from app.py with componentize-py, which bundles a
# CPython interpreter and snapshots it after importing the app.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=SCRIPTDIR/../lib.sh
source "$here/../lib.sh"

ensure_pip componentize-py 0.25.1

# Built from a copy: the interpreter writes __pycache__ next to the sources.
out="$WORK_DIR/python"
rm -rf "$out/src"
mkdir -p "$out/src"
cp "$here/app.py" "$out/src/"
quiet componentize-py -d "$WIT_DIR" -w "$WORLD" componentize app \
    -p "$out/src" -o "$out/python.wasm"
install_component "$out/python.wasm" "$here/python.wasm"
