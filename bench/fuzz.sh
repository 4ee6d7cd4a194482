#!/usr/bin/env bash
# Runs the stable-toolchain mutation fuzzer (collectors/examples/fuzz_import.rs)
# for SECONDS in all (split between the targets): the Kineto importer, plain
# and gzip, and the CUPTI record decoder, seeded from ../shared/traces and
# fixtures/. Inputs that panic or take over a second are saved in
# fuzz/crashes/ (ignored by git; copy a fixed one into fuzz/regressions/).
# Exit status 1 when any crashed.
#
#   bench/fuzz.sh 600                   # ten minutes
#   bench/fuzz.sh 60 --target cupti     # one target
#   bench/fuzz.sh 0 --replay fuzz/crashes/kineto-crash-....bin
#
# The coverage-guided fuzzer (cargo-fuzz and libFuzzer, on stable through
# RUSTC_BOOTSTRAP=1) has the same targets and more: fuzz/run.sh SECONDS
# (fuzz/README.md).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
shift || true
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/gapscope-fuzz}"
cargo build --quiet --release -p gapscope-collectors --example fuzz_import
seed="${FUZZ_SEED:-$(date +%s)}"
echo "fuzz: ${seconds}s, seed $seed" >&2
exec "$CARGO_TARGET_DIR/release/examples/fuzz_import" --seconds "$seconds" --seed "$seed" \
  --seeds ../shared/traces --seeds fixtures --crashes fuzz/crashes "$@"
