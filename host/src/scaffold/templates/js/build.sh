#!/usr/bin/env bash
# Builds {{name}}.wasm from app.js with componentize-qjs, which embeds the
# QuickJS engine and snapshots it after evaluating the module. Installs the
# version package.json pins from npm when node_modules lacks it.
{{helpers}}

need node "install Node.js 18 or later"
need npm "install Node.js 18 or later with npm"
wanted=$(node -p 'require("./package.json").devDependencies["componentize-qjs"]')
installed=$(node -p 'require("./node_modules/componentize-qjs/package.json").version' 2>/dev/null || true)
if [[ "$installed" != "$wanted" ]]; then
    say "installing componentize-qjs $wanted from npm"
    npm install --no-audit --no-fund --loglevel=error
fi

# --sync: the harness does not enable the component-model async ABI.
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
npx --no-install componentize-qjs --wit wit --world command-plugin --js app.js --sync \
    -o "$scratch/{{name}}.wasm" >/dev/null
install_component "$scratch/{{name}}.wasm"
