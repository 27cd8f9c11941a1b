#!/usr/bin/env bash
# Builds {{name}}.wasm from src/lib.rs: a wasm32-wasip2 cdylib built with the
# guest SDK is already a component, so cargo is the only tool. Adds the
# wasm32-wasip2 target with rustup when it is missing.
#
# CARGO_TARGET_DIR, when set, is used as the target dir (default: ./target).
{{helpers}}

need cargo "install Rust with rustup (https://rustup.rs)"
if command -v rustup >/dev/null 2>&1; then
    rustup target list --installed | grep -x wasm32-wasip2 >/dev/null || {
        say "adding the wasm32-wasip2 target with rustup"
        rustup target add wasm32-wasip2
    }
fi

target_dir=${CARGO_TARGET_DIR:-$here/target}
cargo build --release --target wasm32-wasip2 --manifest-path "$here/Cargo.toml" \
    --target-dir "$target_dir"
install_component "$target_dir/wasm32-wasip2/release/{{crate_file}}.wasm"
