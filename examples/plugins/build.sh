#!/usr/bin/env bash
# Builds the example plugins, each into examples/plugins/<lang>/<lang>.wasm,
# installing missing toolchains from the package registries first.
#
#   examples/plugins/build.sh            # all of them
#   examples/plugins/build.sh c python   # some
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=SCRIPTDIR/lib.sh
source "$here/lib.sh"

all=(rust c go python js python-status python-tool)
langs=("${@:-${all[@]}}")
for lang in "${langs[@]}"; do
    [[ -x "$here/$lang/build.sh" ]] || die "no example called \`$lang\` (have: ${all[*]})"
done

summary=()
for lang in "${langs[@]}"; do
    say "building the $lang example"
    start=$(date +%s%N)
    "$here/$lang/build.sh" || die "building the $lang example failed (see above)"
    millis=$((($(date +%s%N) - start) / 1000000))
    size=$(du -k "$here/$lang/$lang.wasm" | cut -f1)
    summary+=("$(printf '%-14s %6d.%01d s %8d KiB' "$lang" $((millis / 1000)) $((millis % 1000 / 100)) "$size")")
done

printf '\n%-14s %8s %12s\n' example time component
printf '%s\n' "${summary[@]}"
