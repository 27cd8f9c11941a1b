#!/usr/bin/env bash
# Builds js.wasm from app.js with componentize-qjs, which embeds the QuickJS
# engine and snapshots it after evaluating the module.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=SCRIPTDIR/../lib.sh
source "$here/../lib.sh"

need npm "install Node.js 18 or later with npm (Debian: apt-get install nodejs npm)"
cd "$here"
installed=$(node -p 'require("./node_modules/componentize-qjs/package.json").version' 2>/dev/null || true)
wanted=$(node -p 'require("./package.json").devDependencies["componentize-qjs"]')
if [[ "$installed" != "$wanted" ]]; then
    say "installing componentize-qjs $wanted from npm"
    npm ci --no-audit --no-fund --loglevel=error
fi

# --sync: the harness does not enable the component-model async ABI.
mkdir -p "$WORK_DIR/js"
npx --no-install componentize-qjs --wit wit --world js-plugin --js app.js --sync \
    -o "$WORK_DIR/js/js.wasm" >/dev/null
install_component "$WORK_DIR/js/js.wasm" "$here/js.wasm"
