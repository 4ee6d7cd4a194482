#!/usr/bin/env bash
# One short GPU session for issue 15's checks, on a machine without cargo:
# the binaries are built elsewhere and carried in BIN (default .gpu/:
# gapscope, libgapscope_inject.so beside it, the cupti_live test, and
# gapscope-torch, `gapscope` built with --features torch, if any).
#
# usage: bench/gpu_session.sh OUTDIR [STAGE...]
#   stages (default: check overhead scenarios ddp):
#     check      bench/record_gpu_check.sh parts smoke, counts, nvtx
#     overhead   bench/record_gpu_check.sh part overhead
#     scenarios  fixtures/scenarios recorded with `gapscope record` (.gst),
#                then the same runs unprofiled (their step times)
#     ddp        fixtures/ddp/ddp_stall.py: torch.profiler per rank, then
#                every rank under one `gapscope record --per-process`
#     bench      gapscope bench on CUDA (needs BIN/gapscope-torch): every
#                model, train and eval, under `record` with --nvtx, and the
#                table of GPU active / data movement / idle
#                (bench/gpu_table2.py), then resnet50 eval --bs-sweep --until-oom
# env: LIMIT seconds for the whole session (default 420): a stage that
#      would start past LIMIT minus its own estimate is skipped, and says so.
# Writes OUTDIR/session.log and one OUTDIR/<stage>.tar.gz per stage (logs,
# captures, analyses, traces; the count checks' traces and captures are
# left out, being only counted), two for scenarios and bench (their whole
# captures apart): 9 files with every stage, one more than the device
# returns, so run bench in a call of its own (it also needs the time).
set -u
repo="$(cd "$(dirname "$0")/.." && pwd)"
out="${1:?usage: bench/gpu_session.sh OUTDIR [STAGE...]}"; shift
stages="${*:-check overhead scenarios ddp}"
BIN="$(cd "${BIN:-$repo/.gpu}" && pwd)"
LIMIT="${LIMIT:-420}"
PY="${PYTHON:-python3}"
W="$(mktemp -d)"
mkdir -p "$out"
start=$(date +%s)
exec > >(tee "$out/session.log") 2>&1
left() { echo $(( LIMIT - ($(date +%s) - start) )); }
stage() {  # name estimate_s: whether to run it
  local l; l=$(left)
  if [ "$l" -lt "$2" ]; then echo "### SKIP $1: $l s left, it needs about $2 s"; return 1; fi
  echo "### $1 (at $(( $(date +%s) - start )) s, $l s left)"
}
want() { case " $stages " in *" $1 "*) return 0;; esac; return 1; }

echo "### environment $(date -u +%FT%TZ)"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
"$PY" -c 'import torch, platform; print("torch", torch.__version__, "cuda", torch.version.cuda, "python", platform.python_version(), platform.platform())'
"$PY" -m pip show nvidia-cuda-cupti torchvision 2>/dev/null | grep -E '^(Name|Version)'
nproc; uptime
ls -la "$BIN"

export PYTHONUNBUFFERED=1
if want check && stage check 120; then
  GAPSCOPE="$BIN/gapscope" CUPTI_LIVE_TEST="$BIN/cupti_live" PARTS="smoke counts nvtx" JOBS=8 STEPS=20 TIMEOUT=100 \
    timeout -k 5 200 "$repo/bench/record_gpu_check.sh" "$W/check"
  echo "### check exit $?"
  rm -f "$W"/check/*.kineto.json
fi
if want overhead && stage overhead 100; then
  GAPSCOPE="$BIN/gapscope" PARTS=overhead ROUNDS="${ROUNDS:-1}" RESNET_STEPS=30 TIMEOUT=90 \
    timeout -k 5 240 "$repo/bench/record_gpu_check.sh" "$W/overhead"
  echo "### overhead exit $?"
fi
if want scenarios && stage scenarios 120; then
  GAPSCOPE="$BIN/gapscope" SCENARIO_TIMEOUT=60 timeout -k 5 200 \
    "$repo/fixtures/scenarios/record_all.sh" "$W/recorded" --blocks 8
  echo "### scenarios recorded exit $?"
  # Each capture cut to its active steps (the result's profile.active_steps),
  # as the fixture: what `analyze --steps` of the whole capture reads.
  for f in "$W"/recorded/*.gst; do
    [ -e "$f" ] || continue
    stem="${f%.gst}"
    steps="$("$PY" -c 'import json,sys; a,b=json.load(open(sys.argv[1]))["profile"]["active_steps"]; print("%d..%d" % (a, b))' "$stem.result.json" 2>/dev/null)"
    [ -n "$steps" ] && "$BIN/gapscope" export "$f" --steps "$steps" --format gst -o "$stem.window.gst"
    "$BIN/gapscope" analyze "$stem.window.gst" >"$stem.analysis.txt" 2>&1
    "$BIN/gapscope" analyze --format json "$stem.window.gst" >"$stem.analysis.json" 2>/dev/null
  done
  if stage "scenarios unprofiled" 90; then
    SCENARIO_TIMEOUT=60 timeout -k 5 150 "$repo/fixtures/scenarios/record_all.sh" "$W/plain" --blocks 8 --no-trace
    echo "### scenarios unprofiled exit $?"
  fi
fi
if want ddp && stage ddp 60; then
  mkdir -p "$W/ddp/torch" "$W/ddp/record"
  timeout -k 5 90 "$PY" "$repo/fixtures/ddp/ddp_stall.py" --out "$W/ddp/torch"
  echo "### ddp torch.profiler exit $?"
  timeout -k 5 90 "$BIN/gapscope" record --per-process -o "$W/ddp/record/ranks" -- \
    "$PY" "$repo/fixtures/ddp/ddp_stall.py" --out "$W/ddp/record" --trace-with nvtx --port 29534
  echo "### ddp record exit $?"
  # Each rank's capture cut to the active steps, as the job's fixtures.
  steps="$("$PY" -c 'import json,sys; a,b=json.load(open(sys.argv[1]))["active_steps"]; print("%d..%d" % (a, b))' "$W/ddp/record/rank0.result.json" 2>/dev/null)"
  mkdir -p "$W/ddp/record/window"
  for f in "$W"/ddp/record/ranks/*.gst; do
    [ -e "$f" ] && [ -n "$steps" ] && "$BIN/gapscope" export "$f" --steps "$steps" --format gst -o "$W/ddp/record/window/$(basename "$f")"
  done
  "$BIN/gapscope" analyze "$W"/ddp/torch/*.pt.trace.json.gz >"$W/ddp/torch.analysis.txt" 2>&1
  "$BIN/gapscope" analyze "$W/ddp/record/window" >"$W/ddp/record.analysis.txt" 2>&1
  tail -n 30 "$W/ddp/torch.analysis.txt"
fi
if want bench && [ -x "$BIN/gapscope-torch" ] && stage bench 150; then
  # Table 2: each built-in model, train and eval, under `record` (--nvtx).
  timeout -k 5 "${BENCH_TIMEOUT:-300}" "$PY" "$repo/bench/gpu_table2.py" --gapscope "$BIN/gapscope" \
    --gapscope-torch "$BIN/gapscope-torch" --out "$W/bench" ${BENCH_MODELS:+--models "$BENCH_MODELS"} --timeout 60
  echo "### bench table exit $?"
  if stage "bench --bs-sweep" 60; then
    lib="$("$PY" -c 'import torch, os; print(os.path.join(os.path.dirname(torch.__file__), "lib"))')"
    LD_LIBRARY_PATH="$lib" OMP_NUM_THREADS=8 timeout -k 5 "$(( $(left) - 10 ))" "$BIN/gapscope-torch" bench resnet50 \
      --device cuda --mode eval --bs-sweep --until-oom --iters 3 --warmup 1 -o "$W/bench/resnet50.eval.sweep.jsonl"
    echo "### bench --bs-sweep exit $?"
  fi
fi
echo "### done at $(( $(date +%s) - start )) s"
# What comes back: at most 8 files of at most 16 MiB. The count checks'
# and overhead runs' captures only fed their checks; the scenarios'
# captures cut to their active steps are the fixtures.
rm -f "$W"/check/*.gst "$W"/overhead/*.gst
pack() { [ -d "$W/$2" ] && tar -C "$W" -czf "$out/$1.tar.gz" "${@:2}" 2>/dev/null; }
pack check check
pack overhead overhead
if [ -d "$W/recorded" ]; then
  # The cut captures with everything else; the whole ones apart (the
  # biggest archive, so the one that may not fit).
  (cd "$W" && find recorded -type f ! \( -name '*.gst' ! -name '*.window.gst' \) | tar -czf "$out/recorded.tar.gz" -T -)
  (cd "$W" && find recorded -name '*.gst' ! -name '*.window.gst' | tar -czf "$out/recorded-whole.tar.gz" -T -)
fi
pack plain plain
pack ddp ddp
if [ -d "$W/bench" ]; then  # the table and logs; the captures apart (the larger part)
  (cd "$W" && find bench -type f ! -name '*.gst' | tar -czf "$out/bench.tar.gz" -T -)
  (cd "$W" && find bench -name '*.gst' | tar -czf "$out/bench-captures.tar.gz" -T -)
fi
ls -la "$out"
