#!/usr/bin/env bash
# Installs what the renderer tests need, skipping whatever is already there: Debian's
# chromium and tmux (apt), and playwright-core (npm, from the lockfile). Node.js 20+
# comes with the machine.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"

missing=()
[ -x /usr/bin/chromium ] || missing+=(chromium)
command -v tmux >/dev/null || missing+=(tmux)
if [ ${#missing[@]} -gt 0 ]; then
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}"
fi

if ! command -v node >/dev/null; then
    echo "error: the browser tests need Node.js 20 or later (node is not installed)" >&2
    exit 1
fi
# Again when the lockfile changed since the last install.
if [ ! -d node_modules/playwright-core ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
    npm ci --no-audit --no-fund --loglevel=error
fi
