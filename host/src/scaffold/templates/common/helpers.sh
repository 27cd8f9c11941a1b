set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cd "$here"

say() { printf '==> %s\n' "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

# need COMMAND HINT: fail with HINT when COMMAND is not on PATH.
need() {
    command -v "$1" >/dev/null 2>&1 || die "\`$1\` is not on PATH; $2"
}

# install_component BUILT: copy the component to {{name}}.wasm unless it
# already has the same bytes, by renaming a complete copy into place, so a
# harness watching this folder never loads a half-written file.
install_component() {
    local built=$1 target="$here/{{name}}.wasm"
    [[ -s "$built" ]] || die "the build produced no component at $built"
    if ! cmp -s "$built" "$target"; then
        cp "$built" "$target.partial"
        mv -f "$target.partial" "$target"
    fi
    say "built $target ($(du -k "$target" | cut -f1) KiB)"
}
