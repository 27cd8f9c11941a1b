#!/usr/bin/env bash
# Builds c.wasm: `wit-bindgen c` generates the bindings, clang compiles a
# WASI preview1 reactor module, and `wasm-tools component new` turns it into
# a component with the preview1 -> preview2 reactor adapter.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=SCRIPTDIR/../lib.sh
source "$here/../lib.sh"

ensure_apt clang-19 lld-19 wasi-libc libclang-rt-19-dev-wasm32
ensure_wit_bindgen
ensure_wasm_tools
adapter=$(reactor_adapter)

out="$WORK_DIR/c"
rm -rf "$out/bindings"
mkdir -p "$out/bindings"
quiet wit-bindgen c --world "$WORLD" --out-dir "$out/bindings" "$WIT_DIR"
# plugin_component_type.o carries the world, so `component new` needs no
# separate `component embed`.
clang-19 --target=wasm32-wasi --sysroot=/usr -mexec-model=reactor \
    -O2 -Wall -Wextra -Werror -I "$out/bindings" \
    -o "$out/core.wasm" \
    "$here/example.c" "$here/json.c" \
    "$out/bindings/plugin.c" "$out/bindings/plugin_component_type.o"
wasm-tools component new "$out/core.wasm" \
    --adapt "wasi_snapshot_preview1=$adapter" -o "$out/c.wasm"
install_component "$out/c.wasm" "$here/c.wasm"
