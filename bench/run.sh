#!/usr/bin/env bash
# The importer-and-analyze benchmark (bench/README.md, "Importer and analyze").
#
#   bench/run.sh [RUNS]            default 5 runs of each command
#
# Builds release, makes the ~525 MB trace if it is missing, then times, each
# as a whole process under /usr/bin/time -v (wall seconds, peak RSS):
#   analyze  gapscope analyze --format json FILE > /dev/null
#   import   the importer alone (collectors/examples/import_only.rs)
#   typed    serde_json parse into borrowed typed events, one thread
#   ignored  serde_json parse as IgnoredAny, one thread (parse_floor.rs)
#   hta      HolisticTraceAnalysis (bench/time_hta.py), once, when HTA_PYTHON
#            names a python that has it (pip install HolisticTraceAnalysis)
# and prints the median of each and the ratios.
#
# Environment: BENCH_TRACE (the big file; default $TMPDIR/gapscope-bench-525mb.json,
# kept outside the repo), BENCH_SOURCE (the real trace it replicates),
# BENCH_TARGET_DIR (default ~/.cache/gapscope-bench-target), HTA_PYTHON.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${1:-5}
FILE=${BENCH_TRACE:-${TMPDIR:-/tmp}/gapscope-bench-525mb.json}
SOURCE=${BENCH_SOURCE:-../shared/traces/hta/trace_diff/control/control.json.gz}
# A target dir of its own: cargo gives a workspace's crates the same hash
# wherever the checkout lives, so in a target dir shared by several checkouts
# release/gapscope is whichever checkout built last, and an older checkout's
# build can even count as up to date.
export CARGO_TARGET_DIR=${BENCH_TARGET_DIR:-$HOME/.cache/gapscope-bench-target}

cargo build --release --quiet --bin gapscope
cargo build --release --quiet -p gapscope-collectors --examples
# Private copies, so a build during the runs cannot swap the binaries.
BIN=$(mktemp -d)
trap 'rm -rf "$BIN"' EXIT
cp "$CARGO_TARGET_DIR"/release/gapscope "$CARGO_TARGET_DIR"/release/examples/{import_only,parse_floor} "$BIN"/

if [ ! -f "$FILE" ]; then
    python3 bench/make_big_trace.py "$SOURCE" "$FILE" --target-mb 525
fi
echo "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')"
echo "file: $FILE, $(stat -c %s "$FILE") bytes"
cat "$FILE" > /dev/null # in the page cache for every command alike

# time_one NAME CMD...: one run; appends "NAME wall_s rss_kb cpu_s" to $BIN/times.
time_one() {
    local name=$1
    shift
    /usr/bin/time -v -o "$BIN/t" "$@" > /dev/null 2> "$BIN/err" || {
        cat "$BIN/err" >&2
        return 1
    }
    local wall rss cpu
    wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {n = split($2, a, ":"); s = 0; for (i = 1; i <= n; i++) s = s * 60 + a[i]; print s}' "$BIN/t")
    rss=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$BIN/t")
    cpu=$(awk -F': ' '/(User|System) time \(seconds\)/ {s += $2} END {print s}' "$BIN/t")
    echo "$name $wall $rss $cpu" >> "$BIN/times"
    printf '  %-8s %6.2f s wall %6.2f s cpu %6.0f MiB\n' "$name" "$wall" "$cpu" "$((rss / 1024))"
}

: > "$BIN/times"
for ((i = 1; i <= RUNS; i++)); do
    echo "run $i"
    time_one analyze "$BIN/gapscope" analyze --format json --quiet "$FILE"
    time_one import "$BIN/import_only" "$FILE"
    time_one typed "$BIN/parse_floor" typed "$FILE"
    time_one ignored "$BIN/parse_floor" ignored "$FILE"
done
"$BIN/import_only" "$FILE"
if [ -n "${HTA_PYTHON:-}" ]; then
    echo "hta (once)"
    time_one hta "$HTA_PYTHON" bench/time_hta.py "$FILE"
fi

echo "median of $RUNS runs (hta: 1): wall s (min-max), user+sys s, peak RSS MiB:"
python3 - "$BIN/times" <<'EOF'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    name, wall, rss, cpu = line.split()
    rows.setdefault(name, []).append((float(wall), int(rss), float(cpu)))
med = {n: tuple(statistics.median(x[i] for x in v) for i in range(3)) for n, v in rows.items()}
for n, (w, r, c) in med.items():
    walls = [x[0] for x in rows[n]]
    print(f"  {n:8} {w:6.2f} s ({min(walls):.2f}-{max(walls):.2f})  cpu {c:6.2f} s  {r / 1024:6.0f} MiB")
a = med["analyze"][0]
for n in ("import", "typed", "ignored", "hta"):
    if n in med:
        print(f"  analyze / {n}: {a / med[n][0]:.2f}" + (f"  ({med[n][0] / a:.1f}x faster)" if n == "hta" else ""))
EOF
