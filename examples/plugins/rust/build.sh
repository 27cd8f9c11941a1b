#!/usr/bin/env bash
# Builds rust.wasm: a wasm32-wasip2 cdylib built with the guest SDK is
# already a component.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=SCRIPTDIR/../lib.sh
source "$here/../lib.sh"

ensure_rust_target

# Its own target dir, so it never waits on the lock of the main build.
target="$WORK_DIR/rust"
cargo build --release --target wasm32-wasip2 \
    --manifest-path "$here/Cargo.toml" --target-dir "$target"
install_component "$target/wasm32-wasip2/release/example_rust.wasm" "$here/rust.wasm"
