#!/usr/bin/env bash
# Starts the conformance agent: builds its plugin, then serves tiny-harness with
# tiny-harness.toml (JSON-RPC and HTTP+JSON on 127.0.0.1:9999, gRPC on
# 127.0.0.1:9998). Extra arguments go to `serve` (e.g. --listen 127.0.0.1:0).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
"$here/build.sh"
cd "$here/../.."
exec cargo run --release -- serve --config "$here/tiny-harness.toml" \
    --plugins "$here/plugins" "$@"
