#!/usr/bin/env bash
# Perfetto export size and time on the shared traces: for each Kineto trace,
# the size of its uncompressed JSON, of our .pftrace (default: compressed
# packet chunks), their ratio, the plain (--no-compress) .pftrace, and the
# export wall time (import + idle attribution + encode) of the release binary.
#   bash bench/export_size.sh            (from the repository root)
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/gapscope-target}"
cargo build -q --release -p gapscope
bin="$CARGO_TARGET_DIR/release/gapscope"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
printf '%-70s %12s %12s %7s %12s %8s\n' trace json_bytes pftrace_bytes ratio plain_bytes export_s
find ../shared/traces -name '*.json' -o -name '*.json.gz' | sort | while read -r f; do
  if [[ $f == *.gz ]]; then json=$(gzip -dc "$f" | wc -c); else json=$(wc -c <"$f"); fi
  start=$(date +%s.%N)
  "$bin" export -q "$f" -o "$tmp/out.pftrace"
  end=$(date +%s.%N)
  pf=$(stat -c %s "$tmp/out.pftrace")
  "$bin" export -q --no-compress "$f" -o "$tmp/plain.pftrace"
  plain=$(stat -c %s "$tmp/plain.pftrace")
  printf '%-70s %12d %12d %6.1f%% %12d %8.2f\n' "${f#../shared/traces/}" "$json" "$pf" \
    "$(echo "100 * $pf / $json" | bc -l)" "$plain" "$(echo "$end - $start" | bc -l)"
done
