#!/usr/bin/env bash
# Coverage-guided fuzzing of every target in tiny_harness::fuzz with cargo fuzz
# (libFuzzer), for a bounded time each, on stable Rust (`--sanitizer none`:
# AddressSanitizer needs nightly; Rust's own checks and debug assertions stay
# on). Starts from the committed corpus (tests/fuzz/corpus/<target>) and keeps
# what it finds in target/fuzz/corpus/<target>, so the repository is not
# touched; a crash or hang leaves its input in target/fuzz/artifacts/<target>
# and fails the run.
#
#   tests/fuzz/run.sh              # every target, 20 s each
#   tests/fuzz/run.sh 300          # every target, 5 minutes each
#   tests/fuzz/run.sh 60 jsonrpc   # one target
#
# Per input: at most 10 s (a hang), 2 GiB resident, one allocation of at most
# 256 MiB, 64 KiB of input (bodies are bounded before they are parsed).
set -euo pipefail
cd "$(dirname "$0")/../.."

seconds=${1:-20}
shift || true
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
    targets=(jsonrpc http_json classifier plugin_manifest declarations provider_stream)
fi

if ! cargo fuzz --version >/dev/null 2>&1; then
    cargo install cargo-fuzz --version 0.13.2 --locked
fi

fuzz=(--fuzz-dir tests/fuzz --target-dir target/fuzz --dev --sanitizer none)
cargo fuzz build "${fuzz[@]}"
for target in "${targets[@]}"; do
    found=target/fuzz/corpus/$target
    artifacts=target/fuzz/artifacts/$target/
    mkdir -p "$found" "$artifacts"
    log=target/fuzz/$target.log
    echo "fuzzing $target for ${seconds}s"
    if ! cargo fuzz run "${fuzz[@]}" "$target" "$found" "tests/fuzz/corpus/$target" -- \
        -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=256 \
        -max_len=65536 -artifact_prefix="$artifacts" -print_final_stats=1 >"$log" 2>&1; then
        tail -n 60 "$log" >&2
        echo "fuzz target $target failed: its input is in $artifacts, the whole log in $log" >&2
        exit 1
    fi
    grep -E '^stat::(number_of_executed_units|peak_rss_mb|new_units_added)' "$log" | tr '\n' ' '
    echo
done
