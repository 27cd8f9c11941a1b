#!/usr/bin/env bash
# Builds python-tool.wasm from app.py with componentize-py, against the 0.2.0
# contract's `tool-plugin` world (tools came with 0.2.0).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=SCRIPTDIR/../lib.sh
source "$here/../lib.sh"

ensure_pip componentize-py 0.25.1

# Built from a copy: the interpreter writes __pycache__ next to the sources.
out="$WORK_DIR/python-tool"
rm -rf "$out/src"
mkdir -p "$out/src"
cp "$here/app.py" "$out/src/"
quiet componentize-py -d "$LATEST_WIT_DIR" -w tool-plugin componentize app \
    -p "$out/src" -o "$out/python-tool.wasm"
install_component "$out/python-tool.wasm" "$here/python-tool.wasm"
