#!/usr/bin/env bash
# Whole-job analysis at scale: N ranks made by fixtures/job/plant.py from
# DLRM's rank 0 (../shared/traces, repeated to STEPS steps, clock offsets,
# one planted late rank), analysed as one job (`gapscope analyze DIR`, ranks
# in parallel on the cores there are) against analysing the ranks one by
# one (`gapscope analyze FILE` per rank, one process each). Prints wall
# time, CPU time (user + sys) and peak RSS of each, from /usr/bin/time.
#
#   bash bench/job_scale.sh [RANKS...]        # default: 8 16 32 64
#   STEPS=20 GAPSCOPE=target/release/gapscope bash bench/job_scale.sh 64
#
# Results are written down in bench/README.md, "Whole-job analysis".
set -euo pipefail
cd "$(dirname "$0")/.."
GAPSCOPE="${GAPSCOPE:-${CARGO_TARGET_DIR:-target}/release/gapscope}"
STEPS="${STEPS:-20}"
BASE=../shared/traces/param/dlrm_8rank/worker0_step_12.1694128201545.pt.trace.json.gz
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
[ -x "$GAPSCOPE" ] || { echo "build it first: cargo build --release ($GAPSCOPE)" >&2; exit 2; }
measure() { # label, command...: one line of wall s, cpu s, peak MiB
  local label="$1"; shift
  /usr/bin/time -f "%e %U %S %M" -o "$TMP/t" "$@" >/dev/null 2>"$TMP/err" || { cat "$TMP/err" >&2; exit 1; }
  read -r wall user sys kb <"$TMP/t"
  printf '%-28s wall %6.2f s  cpu %6.2f s  peak %6.1f MiB\n' "$label" "$wall" "$(echo "$user + $sys" | bc)" "$(echo "$kb / 1024" | bc -l)"
}
echo "load: $(cut -d' ' -f1-3 /proc/loadavg), cores: $(nproc), steps per rank: $STEPS"
for n in "${@:-8 16 32 64}"; do
  dir="$TMP/job$n"
  python3 fixtures/job/plant.py "$BASE" "$dir" --ranks "$n" --steps "$STEPS" \
    --plant "$((n / 2)):11:1:5:dataloader" >/dev/null
  rm -f "$dir/truth.json"
  bytes=$(du -cb "$dir"/*.gz | tail -1 | cut -f1)
  echo "== $n ranks, $(echo "$bytes / 1048576" | bc -l | cut -c1-5) MiB of .json.gz"
  measure "job ($(nproc) threads)" "$GAPSCOPE" analyze -q --format json "$dir"
  measure "job (1 thread)" "$GAPSCOPE" analyze -q -j 1 --format json "$dir"
  # One by one: a process per rank, in turn; its peak is the largest one's.
  cat >"$TMP/each.sh" <<EACH
for f in "$dir"/*.gz; do "$GAPSCOPE" analyze -q --format json "\$f" >/dev/null; done
EACH
  measure "one by one ($n processes)" bash "$TMP/each.sh"
done
