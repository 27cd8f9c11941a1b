#!/usr/bin/env bash
# The side-by-side benchmark (issue 14): tiny-harness, in memory and on
# SQLite, beside the official A2A Python SDK (a2a-sdk 1.3.0 from PyPI, serving
# tests/bench/sdk_echo_agent.py), each server pinned to CPU 0 with taskset,
# the load generator (a Rust client in host/benches/side_by_side.rs) on CPU 1.
#
#   tests/bench/run.sh            # the full run (about 25 minutes)
#   tests/bench/run.sh --quick    # one round, shorter measurements
#
# Prints Markdown tables (ratios to the SDK, same run) and writes every figure
# as JSON to target/bench/side_by_side.json (cargo runs a bench in host/, so
# the path is absolute). Not part of tests/run.sh: too
# slow, and timing belongs to benchmarks, not tests.
set -euo pipefail
cd "$(dirname "$0")/../.."

venv=target/bench/venv
if ! "$venv/bin/python3" -c 'import a2a, uvicorn, starlette' 2>/dev/null; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet 'a2a-sdk[http-server]==1.3.0' uvicorn
fi
command -v taskset >/dev/null || echo "taskset missing (apt-get install util-linux): servers run unpinned" >&2

mkdir -p target/bench
PATH="$PWD/$venv/bin:$PATH" cargo bench -p tiny-harness --bench side_by_side -- \
    --out "$PWD/target/bench/side_by_side.json" "$@"
