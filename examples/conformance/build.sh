#!/usr/bin/env bash
# Builds the conformance agent's plugin into plugins/conformance/conformance.wasm
# (a wasm32-wasip2 cdylib built with the guest SDK is already a component).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=SCRIPTDIR/../plugins/lib.sh
source "$here/../plugins/lib.sh"

ensure_rust_target

# Not the main build's target dir, so it never waits on that lock; the Rust
# example's, whose dependencies (the SDK, wit-bindgen) it shares.
target="$WORK_DIR/rust"
cargo build --release --target wasm32-wasip2 \
    --manifest-path "$here/plugin/Cargo.toml" --target-dir "$target"
install_component "$target/wasm32-wasip2/release/conformance_plugin.wasm" \
    "$here/plugins/conformance/conformance.wasm"
