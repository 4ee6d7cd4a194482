#!/usr/bin/env bash
# The speed benchmark (bench/README.md, "Analyse as fast as the trace can be
# read"): gapscope against the floors of merely reading the trace, side by
# side, on three big traces made from real ones.
#
#   bench/run.sh [RUNS]              default 3 runs of each command
#   HTA_PYTHON=/path/to/python bench/run.sh 3   plus one HTA 0.5.0 run per trace
#
# Traces (made by bench/make_big_trace.py when missing, with their .json.gz,
# in $BENCH_DIR, default ~/.cache/gapscope-bench; about 1.8 GB in all):
#   control  ../shared/traces/hta/trace_diff/control x17 (533 MB)
#   nsres    ../shared/traces/hta/ns_resolution_trace x40 (546 MB; DDP, flows, NCCL)
#   nccl     ../shared/traces/hta/nccl_parser_config x62 (551 MB; DDP rank 0 of 2,
#            NCCL collectives, flows a third of its events, instant events)
# BENCH_TRACES="control nsres" limits the set. GAPSCOPE_BIN and FLOOR_BIN
# name release builds of gapscope and collectors/examples/parse_floor to
# time instead of building them.
#
# Per trace and run, each command is one process under /usr/bin/time (wall,
# user + sys CPU, peak RSS), the files in the page cache:
#   analyze      gapscope analyze --format json --quiet FILE.json > /dev/null
#   floor        a bare serde_json IgnoredAny parse of FILE.json on one thread,
#                reading the file first (collectors/examples/parse_floor.rs)
#   analyze.gz   gapscope analyze --format json --quiet FILE.json.gz
#   gunzip       gzip -dc FILE.json.gz > /dev/null
#   report       gapscope report -o /dev/null FILE.json (HTML)
#   export       gapscope export -o /dev/null FILE.json (Perfetto)
# and, when HTA_PYTHON is set, HTA once (bench/time_hta.py). The commands of
# one run follow each other, so they share the machine's state; the summary
# gives each command's median and range, and the ratios the goals are stated
# in. The machine's load (uptime) is printed before and after: wall times
# taken at a load above the core count say little.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${1:-3}
DIR=${BENCH_DIR:-$HOME/.cache/gapscope-bench}
TRACES=${BENCH_TRACES:-control nsres nccl}
# A target dir of its own: cargo gives a workspace's crates the same hash
# wherever the checkout lives, so in a target dir shared by several checkouts
# release/gapscope is whichever checkout built last.
export CARGO_TARGET_DIR=${BENCH_TARGET_DIR:-$HOME/.cache/gapscope-bench-target}

# GAPSCOPE_BIN / FLOOR_BIN: release binaries built already (skips the build).
if [ -z "${GAPSCOPE_BIN:-}" ]; then
    cargo build --release --quiet --bin gapscope
    GAPSCOPE_BIN=$CARGO_TARGET_DIR/release/gapscope
fi
if [ -z "${FLOOR_BIN:-}" ]; then
    cargo build --release --quiet -p gapscope-collectors --example parse_floor
    FLOOR_BIN=$CARGO_TARGET_DIR/release/examples/parse_floor
fi
# Private copies, so a build during the runs cannot swap the binaries.
BIN=$(mktemp -d)
trap 'rm -rf "$BIN"' EXIT
cp "$GAPSCOPE_BIN" "$BIN"/gapscope
cp "$FLOOR_BIN" "$BIN"/parse_floor

source_of() {
    case $1 in
        control) echo ../shared/traces/hta/trace_diff/control/control.json.gz ;;
        nsres) echo ../shared/traces/hta/ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz ;;
        nccl) echo ../shared/traces/hta/nccl_parser_config/nccl_data.json.gz ;;
        *) echo "unknown trace $1" >&2; exit 2 ;;
    esac
}
mkdir -p "$DIR"
for t in $TRACES; do
    if [ ! -f "$DIR/$t.json" ]; then
        python3 bench/make_big_trace.py "$(source_of "$t")" "$DIR/$t.json" --target-mb 525
    fi
    if [ ! -f "$DIR/$t.json.gz" ]; then
        gzip -k -6 "$DIR/$t.json"
    fi
done

echo "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')"
echo "gapscope: $(git rev-parse --short HEAD)$(git diff --quiet || echo " (modified)")${GAPSCOPE_BIN:+, timing $GAPSCOPE_BIN}"
echo "load before: $(uptime | sed 's/.*load average: //')"

# time_one TRACE NAME CMD...: one run; appends "TRACE NAME wall_s rss_kb cpu_s".
time_one() {
    local trace=$1 name=$2
    shift 2
    /usr/bin/time -f '%e %M %U %S' -o "$BIN/t" "$@" > /dev/null 2> "$BIN/err" || {
        cat "$BIN/err" >&2
        return 1
    }
    read -r wall rss user sys < "$BIN/t"
    local cpu
    cpu=$(awk -v u="$user" -v s="$sys" 'BEGIN { print u + s }')
    echo "$trace $name $wall $rss $cpu" >> "$BIN/times"
    printf '  %-8s %-11s %6.2f s wall %6.2f s cpu %6.0f MiB\n' "$trace" "$name" "$wall" "$cpu" "$((rss / 1024))"
}

: > "$BIN/times"
for ((i = 1; i <= RUNS; i++)); do
    echo "run $i (load $(cut -d' ' -f1 /proc/loadavg))"
    for t in $TRACES; do
        f=$DIR/$t.json
        cat "$f" "$f.gz" > /dev/null # both in the page cache
        time_one "$t" analyze "$BIN/gapscope" analyze --format json --quiet "$f"
        time_one "$t" floor "$BIN/parse_floor" ignored "$f"
        time_one "$t" analyze.gz "$BIN/gapscope" analyze --format json --quiet "$f.gz"
        time_one "$t" gunzip sh -c 'exec gzip -dc "$1" > /dev/null' gunzip "$f.gz"
        time_one "$t" report "$BIN/gapscope" report --quiet -o /dev/null "$f"
        time_one "$t" export "$BIN/gapscope" export --quiet -o /dev/null "$f"
    done
done
if [ -n "${HTA_PYTHON:-}" ]; then
    for t in $TRACES; do
        echo "hta, once (load $(cut -d' ' -f1 /proc/loadavg))"
        time_one "$t" hta "$HTA_PYTHON" bench/time_hta.py "$DIR/$t.json"
    done
fi
echo "load after: $(uptime | sed 's/.*load average: //')"

python3 - "$BIN/times" "$DIR" <<'EOF'
import os, statistics, sys
rows = {}
for line in open(sys.argv[1]):
    trace, name, wall, rss, cpu = line.split()
    rows.setdefault((trace, name), []).append((float(wall), int(rss), float(cpu)))
def med(trace, name, i=0):
    v = rows.get((trace, name))
    return statistics.median(x[i] for x in v) if v else None
print("median (min-max) of each command: wall s, user+sys s, peak RSS MiB")
for (trace, name), v in rows.items():
    w = [x[0] for x in v]
    print(f"  {trace:8} {name:11} {med(trace, name):6.2f} ({min(w):.2f}-{max(w):.2f})  cpu {med(trace, name, 2):6.2f}  "
          f"{max(x[1] for x in v) / 1024:6.0f} MiB")
print("goals (medians of wall): analyze / floor <= 1.0, analyze.gz / gunzip <= 1.0, peak RSS / JSON size <= 0.25,")
print("report and export / analyze <= 1.2, HTA / analyze >= 60")
for trace in dict.fromkeys(t for t, _ in rows):
    size = os.path.getsize(os.path.join(sys.argv[2], trace + ".json"))
    a, f, az, g = (med(trace, n) for n in ("analyze", "floor", "analyze.gz", "gunzip"))
    rss = max(x[1] for n in ("analyze", "analyze.gz") for x in rows[(trace, n)]) * 1024
    out = [f"{trace:8} {size / 1e6:.0f} MB:", f"analyze/floor {a / f:.2f}", f"analyze.gz/gunzip {az / g:.2f}",
           f"RSS/size {rss / size:.2f}", f"report/analyze {med(trace, 'report') / a:.2f}",
           f"export/analyze {med(trace, 'export') / a:.2f}"]
    if med(trace, "hta"):
        out.append(f"hta/analyze {med(trace, 'hta') / a:.0f}x")
    print(f"  {out[0]} " + ", ".join(out[1:]))
EOF
