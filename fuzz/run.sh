#!/usr/bin/env bash
# Runs the cargo-fuzz (libFuzzer) targets for SECONDS each, one after the
# other, on the stable toolchain (RUSTC_BOOTSTRAP=1 lets cargo-fuzz pass its
# -Z flags; libfuzzer-sys builds libFuzzer with the system C++ compiler).
# Seeds: fuzz/corpus/, built from ../shared/traces and fixtures/ by
# make_corpus.py when missing; libFuzzer adds what it finds there. A crash
# or a timeout (over 10 s) is saved in fuzz/artifacts/<target>/ and stops
# that target; the script then exits 1. Each target's final stats go to
# fuzz/logs/<target>-<date>.log.
#
#   fuzz/run.sh 600                        # ten minutes per target
#   fuzz/run.sh 60 kineto_gz               # one target
#   NICE=19 fuzz/run.sh 3600 &             # an hour each, on idle CPU only
#   fuzz/run.sh replay fuzz/artifacts/kineto_json/crash-...   # rerun one input
#   GAPSCOPE=target/debug/gapscope fuzz/run.sh 600 capture   # seeds that are .gst captures too
#
# Needs: cargo install cargo-fuzz (crates.io), a C++ compiler.
set -euo pipefail
cd "$(dirname "$0")"
export RUSTC_BOOTSTRAP=1
# A thread's exit racing the leak check after an input (lsan.supp says why).
export LSAN_OPTIONS="suppressions=$PWD/lsan.supp${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/gapscope-cargo-fuzz}"
all=(kineto_json kineto_gz kineto_window cupti_decode capture)
if [ "${1:-}" = replay ]; then
  input="$2"
  target="$(basename "$(dirname "$input")")"
  exec cargo fuzz run -O "$target" "$input"
fi
seconds="${1:-60}"
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=("${all[@]}")
[ -d corpus ] || python3 make_corpus.py ${GAPSCOPE:+--gapscope "$GAPSCOPE"}
cargo fuzz build -O
mkdir -p logs
status=0
for t in "${targets[@]}"; do
  mkdir -p "corpus/$t" "artifacts/$t"
  log="logs/$t-$(date +%Y%m%d-%H%M%S).log"
  echo "fuzz: $t for ${seconds}s, log $log" >&2
  if ! nice -n "${NICE:-0}" cargo fuzz run -O "$t" "corpus/$t" -- \
      -max_total_time="$seconds" -timeout=10 -print_final_stats=1 \
      -artifact_prefix="artifacts/$t/" >"$log" 2>&1; then
    status=1
    echo "fuzz: $t FAILED; see $log and artifacts/$t/" >&2
  fi
  grep -E '^(stat::|Done )' "$log" >&2 || true
done
exit "$status"
