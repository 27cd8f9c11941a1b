#!/usr/bin/env bash
# Builds python-status.wasm from app.py with componentize-py, for the
# `command-plugin` world (it exports only the typed `command.run`).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=SCRIPTDIR/../lib.sh
source "$here/../lib.sh"

ensure_pip componentize-py 0.25.1

# Built from a copy: the interpreter writes __pycache__ next to the sources.
out="$WORK_DIR/python-status"
rm -rf "$out/src"
mkdir -p "$out/src"
cp "$here/app.py" "$out/src/"
quiet componentize-py -d "$WIT_DIR" -w command-plugin componentize app \
    -p "$out/src" -o "$out/python-status.wasm"
install_component "$out/python-status.wasm" "$here/python-status.wasm"
