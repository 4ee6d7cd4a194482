#!/usr/bin/env bash
# GPU checks of `gapscope record` (docs/cupti.md, "Recording any program").
# Results of its runs are in bench/gpu-record.md.
#
# usage: bench/record_gpu_check.sh [OUTDIR]
# needs: an NVIDIA GPU with its driver, PyTorch with CUDA (torch.cuda works),
#        torchvision for the ResNet-50 overhead check (skipped without it);
#        PYTHON (default python3) picks the interpreter. Builds release
#        binaries with cargo unless GAPSCOPE names a built `gapscope` (with
#        libgapscope_inject.so beside it) and CUPTI_LIVE_TEST the built
#        `cupti_live` test (cargo test --release -p gapscope-collectors
#        --features cupti --test cupti_live --no-run), for a GPU machine
#        without cargo.
# env:   STEPS recorded steps per scenario (default 20), SCENARIOS (default:
#        all of fixtures/scenarios), RESNET_STEPS (default 50),
#        LAUNCHES tiny kernels in the launch-bound loop (default 20000),
#        JOBS scenario checks at once in part 2 (default 1; counts do not
#        depend on timing), PARTS (default "smoke counts nvtx overhead"),
#        ROUNDS overhead rounds, each running the four ways in turn (default 1),
#        TIMEOUT seconds per program run (default 300).
#
# What it checks, each printed as PASS/FAIL (exit 1 on any FAIL):
#  1. the live collector's own GPU smoke test (collectors/tests/cupti_live.rs);
#  2. every scenario x {planted, fixed}, run twice with the same seed and
#     steps: once under `gapscope record`, once under torch.profiler (never
#     both at once: CUPTI takes one subscriber). Counts of kernels, copies,
#     host-to-device copies, pageable host-to-device copies, device-to-host
#     copies and memsets must be equal; every kernel must link to its launch
#     (analyze: gpu_rows_without_launch = 0); no dropped records; no GPU row
#     starts before the runtime call that launched it (clock alignment);
#  3. NVTX: one scenario under torch.autograd.profiler.emit_nvtx(); at least
#     95% of kernels launched inside an aten:: range (on the launching
#     thread), and NVTX ranges present at all;
#  4. overhead, median step time: ResNet-50 training (batch 32, fp32, AMP
#     off) and a launch-bound loop of tiny kernels, each plain, under
#     `gapscope record`, under `gapscope record --no-api-calls`, and under
#     torch.profiler (CPU + CUDA activities). Goal: record <= 3% on
#     ResNet-50 and below torch.profiler's; the launch-bound numbers are
#     reported, not judged.
set -u
repo="$(cd "$(dirname "$0")/.." && pwd)"
out="${1:-$(mktemp -d)}"
mkdir -p "$out"
PY="${PYTHON:-python3}"
STEPS="${STEPS:-20}"
RESNET_STEPS="${RESNET_STEPS:-50}"
LAUNCHES="${LAUNCHES:-20000}"
JOBS="${JOBS:-1}"
PARTS="${PARTS:-smoke counts nvtx overhead}"
ROUNDS="${ROUNDS:-1}"
TIMEOUT="${TIMEOUT:-300}"
part() { case " $PARTS " in *" $1 "*) return 0;; esac; return 1; }
T() { timeout -k 5 "$TIMEOUT" "$@"; }
SCENARIOS="${SCENARIOS:-zero_grad_loop scalar_htod item_every_step pageable_copy offload_pingpong cpu_op dataloader baseline}"
fail=0
pass() { echo "PASS $*"; }
bad() { echo "FAIL $*"; fail=1; }

echo "== environment ($(date -u +%FT%TZ), output in $out)"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || { echo "no GPU: nothing to check"; exit 2; }
"$PY" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "available", torch.cuda.is_available())'
uptime

if [ -n "${GAPSCOPE:-}" ]; then
  G="$GAPSCOPE"
else
  echo "== build (release)"
  (cd "$repo" && cargo build --release -p gapscope -p gapscope-inject --locked) || exit 2
  G="${CARGO_TARGET_DIR:-$repo/target}/release/gapscope"
fi
[ -f "$(dirname "$G")/libgapscope_inject.so" ] || { echo "no libgapscope_inject.so next to $G"; exit 2; }

site="$("$PY" -c 'import torch, os; print(os.path.dirname(os.path.dirname(torch.__file__)))')"
cupti="$(ls "$site"/nvidia/*/lib/libcupti.so.* 2>/dev/null | head -n 1)"
if part smoke; then
  echo "== 1. live collector smoke test"
  smoke() {
    if [ -n "${CUPTI_LIVE_TEST:-}" ]; then
      T "$CUPTI_LIVE_TEST" gpu_smoke --ignored --nocapture
    else
      (cd "$repo" && T cargo test --release -p gapscope-collectors --features cupti --test cupti_live --locked gpu_smoke -- --ignored --nocapture)
    fi
  }
  if [ -n "$cupti" ] && LD_LIBRARY_PATH="$(dirname "$cupti")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" smoke; then
    pass "cupti_live gpu_smoke ($cupti)"
  else
    bad "cupti_live gpu_smoke (libcupti: ${cupti:-none found next to torch})"
  fi
fi

driver="$out/record_driver.py"
cat > "$driver" <<'PY'
"""Runs one fixtures/scenarios scenario deterministically for the checks.

usage: record_driver.py MODE SCENARIO STEPS [--fixed] [--out FILE]
  MODE plain    build + STEPS steps (run it under `gapscope record`)
       nvtx     the same inside torch.autograd.profiler.emit_nvtx()
       profile  the same inside torch.profiler (CPU + CUDA), trace to --out
Prints the median step time in ms as `median_step_ms X`.
"""
import argparse, importlib, os, statistics, sys, time

p = argparse.ArgumentParser()
p.add_argument("mode", choices=["plain", "nvtx", "profile"])
p.add_argument("scenario")
p.add_argument("steps", type=int)
p.add_argument("--fixed", action="store_true")
p.add_argument("--out")
a = p.parse_args()
sys.path.insert(0, os.environ["SCENARIO_DIR"])
import _harness  # noqa: E402

mod = importlib.import_module(a.scenario)
args = _harness.parse_args(mod, ["--device", "cuda", "--seed", "0"] + (["--fixed"] if a.fixed else []))
import torch  # noqa: E402

_harness.seed_all(torch, 0)
ctx = _harness.Ctx(args, torch)


def work():
    step = mod.build(ctx)
    times = []
    for i in range(a.steps):
        ctx.sync()
        t0 = time.perf_counter()
        step(i)
        ctx.sync()
        times.append((time.perf_counter() - t0) * 1e3)
    return times


if a.mode == "plain":
    times = work()
elif a.mode == "nvtx":
    with torch.autograd.profiler.emit_nvtx():
        times = work()
else:
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        times = work()
    prof.export_chrome_trace(a.out)
print("median_step_ms %.4f" % statistics.median(times))
PY
counts="$out/record_counts.py"
cat > "$counts" <<'PY'
"""Counts GPU work in a Chrome/Kineto trace, or checks NVTX attribution.

usage: record_counts.py counts TRACE.json   -> kernels copies htod htod_pageable dtoh memsets
       record_counts.py nvtx TRACE.json     -> ranges kernels attributed fraction
       record_counts.py clock TRACE.json    -> gpu_rows linked early worst_early_us
         (GPU rows linked to a runtime call by correlation id; how many
         start before that call starts; by how much at worst)
"""
import bisect, collections, json, sys

mode, path = sys.argv[1:3]
with open(path) as f:
    ev = json.load(f)
ev = ev["traceEvents"] if isinstance(ev, dict) else ev
x = [e for e in ev if e.get("ph") == "X"]
if mode == "clock":
    # Correlation ids are unique in a capture (record keeps processes' apart).
    calls = {e["args"]["correlation"]: e for e in x
             if e.get("cat") in ("cuda_runtime", "cuda_driver") and e.get("args", {}).get("correlation")}
    gpu = [e for e in x if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    linked = early = 0
    worst = 0.0
    for g in gpu:
        c = calls.get(g.get("args", {}).get("correlation"))
        if c is None:
            continue
        linked += 1
        if g["ts"] < c["ts"]:
            early += 1
            worst = max(worst, c["ts"] - g["ts"])
    print(len(gpu), linked, early, "%.3f" % worst)
elif mode == "counts":
    k = sum(1 for e in x if e.get("cat") == "kernel")
    cp = [e for e in x if e.get("cat") == "gpu_memcpy"]
    htod = [e for e in cp if "HtoD" in e.get("name", "")]
    print(k, len(cp), len(htod), sum(1 for e in htod if "Pageable" in e["name"]),
          sum(1 for e in cp if "DtoH" in e.get("name", "")),
          sum(1 for e in x if e.get("cat") == "gpu_memset"))
else:
    ranges = collections.defaultdict(list)
    for e in x:
        if e.get("cat") in ("user_annotation", "cpu_op") and e.get("name", "").startswith("aten::"):
            ranges[(e["pid"], e["tid"])].append((e["ts"], e["ts"] + e["dur"]))
    for v in ranges.values():
        v.sort()
    calls = {e["args"]["correlation"]: e for e in x
             if e.get("cat") in ("cuda_runtime", "cuda_driver") and e.get("args", {}).get("correlation")}
    kernels = [e for e in x if e.get("cat") == "kernel"]
    hit = 0
    for kern in kernels:
        c = calls.get(kern.get("args", {}).get("correlation"))
        if not c:
            continue
        r = ranges.get((c["pid"], c["tid"]), [])
        i = bisect.bisect_right(r, (c["ts"], float("inf")))
        # any range that starts before the call and ends after it
        if any(s <= c["ts"] <= e for s, e in r[max(0, i - 64):i]):
            hit += 1
    n = len(kernels)
    print(sum(len(v) for v in ranges.values()), n, hit, "%.4f" % (hit / n if n else 0.0))
PY
"$PY" -m py_compile "$driver" "$counts" || exit 2
export SCENARIO_DIR="$repo/fixtures/scenarios"

summary_counts() {  # the counts in record's summary line, as record_counts.py prints them
  sed -n 's/.*recorded [0-9]* process.*: \([0-9]*\) kernels\{0,1\}, \([0-9]*\) cop[yies]* (\([0-9]*\) host-to-device, \([0-9]*\) of them from pageable memory; \([0-9]*\) device-to-host), \([0-9]*\) memsets\{0,1\}.*/\1 \2 \3 \4 \5 \6/p' "$1" | tail -n 1
}

check_scenario() {  # scenario variant: prints PASS/FAIL lines
  local s="$1" v="$2" flag="" name rc ours theirs unlinked clock
  [ "$v" = fixed ] && flag="--fixed"
  name="$s.$v"
  T "$G" record -o "$out/$name.gst" -- "$PY" "$driver" plain "$s" "$STEPS" $flag >"$out/$name.record.log" 2>&1
  rc=$?
  T "$PY" "$driver" profile "$s" "$STEPS" $flag --out "$out/$name.kineto.json" >"$out/$name.profile.log" 2>&1 || rc=$?
  if [ $rc -ne 0 ]; then echo "FAIL $name: a run failed (rc $rc, see $out/$name.*.log)"; return; fi
  ours="$(summary_counts "$out/$name.record.log")"
  theirs="$("$PY" "$counts" counts "$out/$name.kineto.json")"
  if [ -n "$ours" ] && [ "$ours" = "$theirs" ]; then
    echo "PASS $name counts (kernels copies htod pageable dtoh memsets): $ours"
  else
    echo "FAIL $name counts: record [$ours] torch.profiler [$theirs]"
  fi
  "$G" analyze --format json "$out/$name.gst" >"$out/$name.analysis.json" 2>"$out/$name.analysis.err"
  unlinked="$("$PY" -c 'import json,sys; d=json.load(open(sys.argv[1])); d=d[0] if isinstance(d,list) else d; print(d["diagnostics"]["gpu_rows_without_launch"])' "$out/$name.analysis.json" 2>/dev/null)"
  [ "$unlinked" = 0 ] && echo "PASS $name every GPU row linked to its launch" || echo "FAIL $name unlinked GPU rows: ${unlinked:-?}"
  grep -q "CUPTI dropped 0 records" "$out/$name.record.log" && echo "PASS $name no dropped records" || echo "FAIL $name dropped records (see $out/$name.record.log)"
  "$G" export "$out/$name.gst" --format chrome -o "$out/$name.gst.json" 2>>"$out/$name.analysis.err"
  read -r ngpu nlinked nearly worst <<<"$("$PY" "$counts" clock "$out/$name.gst.json" 2>/dev/null || echo "? ? ? ?")"
  [ "$nearly" = 0 ] && echo "PASS $name clocks: none of $nlinked linked GPU rows (of $ngpu) starts before its launch call" \
    || echo "FAIL $name clocks: $nearly of $nlinked linked GPU rows start before their launch call (worst ${worst} us early)"
  rm -f "$out/$name.gst.json"
}

if part counts; then
  echo "== 2. counts against torch.profiler ($STEPS steps per run, $JOBS at once)"
  for s in $SCENARIOS; do
    for v in planted fixed; do
      while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do wait -n; done
      check_scenario "$s" "$v" >"$out/$s.$v.check" 2>&1 &
    done
  done
  wait
  for s in $SCENARIOS; do
    for v in planted fixed; do cat "$out/$s.$v.check"; done
  done >"$out/counts.check"
  cat "$out/counts.check"
  grep -q "^FAIL" "$out/counts.check" && fail=1
fi

if part nvtx; then
  echo "== 3. NVTX operator names (emit_nvtx)"
  T "$G" record -o "$out/nvtx.gst" -- "$PY" "$driver" nvtx baseline "$STEPS" >"$out/nvtx.record.log" 2>&1 \
    && "$G" export "$out/nvtx.gst" --format chrome -o "$out/nvtx.json" 2>>"$out/nvtx.record.log"
  read -r nranges nkern nhit frac <<<"$("$PY" "$counts" nvtx "$out/nvtx.json" 2>/dev/null || echo "0 0 0 0")"
  echo "NVTX aten:: ranges $nranges, kernels $nkern, launched inside an aten:: range $nhit ($frac)"
  [ "${nranges:-0}" -gt 0 ] && pass "NVTX ranges recorded" || bad "no NVTX ranges (see $out/nvtx.record.log)"
  "$PY" -c "import sys; sys.exit(0 if float('$frac') >= 0.95 else 1)" && pass "NVTX attribution >= 95%" || bad "NVTX attribution $frac < 95%"
  rm -f "$out/nvtx.json"
fi

if part overhead; then
echo "== 4. overhead (median step ms; $ROUNDS round(s); machine load: $(uptime | sed 's/.*load average: //'))"
bench="$out/record_overhead.py"
cat > "$bench" <<'PY'
"""usage: record_overhead.py resnet50|launch STEPS [profile]
Prints `median_step_ms X`. resnet50: training, batch 32, fp32, SGD; launch:
STEPS tiny kernels (x.add_(1) on 1 element), in blocks of 1000, per-launch us x 1000."""
import statistics, sys, time
import torch

what, steps = sys.argv[1], int(sys.argv[2])
prof = len(sys.argv) > 3 and sys.argv[3] == "profile"
torch.manual_seed(0)
if what == "resnet50":
    import torchvision
    model = torchvision.models.resnet50().cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(32, 3, 224, 224, device="cuda")
    y = torch.randint(0, 1000, (32,), device="cuda")
    loss_fn = torch.nn.CrossEntropyLoss()

    def step():
        opt.zero_grad(set_to_none=True)
        loss_fn(model(x), y).backward()
        opt.step()
    blocks, per = steps, 1
else:
    x = torch.zeros(1, device="cuda")

    def step():
        for _ in range(1000):
            x.add_(1)
    blocks, per = max(1, steps // 1000), 1000


def run():
    for _ in range(5):
        step()
    torch.cuda.synchronize()
    t = []
    for _ in range(blocks):
        t0 = time.perf_counter()
        step()
        torch.cuda.synchronize()
        t.append((time.perf_counter() - t0) * 1e3)
    return t


if prof:
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]):
        t = run()
else:
    t = run()
print("median_step_ms %.4f" % statistics.median(t))
PY
med() {  # the median over rounds of each run's median step
  sed -n 's/^median_step_ms //p' "$@" | sort -g | awk '{v[NR]=$1} END {if (NR) print (NR%2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2)}'
}
for w in resnet50 launch; do
  n="$RESNET_STEPS"; [ "$w" = launch ] && n="$LAUNCHES"
  if [ "$w" = resnet50 ] && ! "$PY" -c 'import torchvision' 2>/dev/null; then echo "SKIP resnet50: no torchvision"; continue; fi
  for r in $(seq "$ROUNDS"); do  # the four ways in turn, so drift hits each alike
    T "$PY" "$bench" "$w" "$n" >"$out/$w.plain.$r.log" 2>&1
    T "$G" record -o "$out/$w.gst" -- "$PY" "$bench" "$w" "$n" >"$out/$w.record.$r.log" 2>&1
    T "$G" record --no-api-calls -o "$out/$w.noapi.gst" -- "$PY" "$bench" "$w" "$n" >"$out/$w.noapi.$r.log" 2>&1
    T "$PY" "$bench" "$w" "$n" profile >"$out/$w.profile.$r.log" 2>&1
  done
  p="$(med "$out/$w".plain.*.log)"; r="$(med "$out/$w".record.*.log)"; a="$(med "$out/$w".noapi.*.log)"; t="$(med "$out/$w".profile.*.log)"
  "$PY" - "$w" "$p" "$r" "$a" "$t" <<'PY' || fail=1
import sys
w, *v = sys.argv[1:]
try:
    p, r, a, t = map(float, v)
except ValueError:
    print("FAIL %s overhead: a run failed (%s)" % (w, v)); sys.exit(1)
pct = lambda x: 100.0 * (x - p) / p
print("%s median step ms: plain %.3f, record %.3f (%+.1f%%), record --no-api-calls %.3f (%+.1f%%), torch.profiler %.3f (%+.1f%%)"
      % (w, p, r, pct(r), a, pct(a), t, pct(t)))
if w == "resnet50":
    ok = pct(r) <= 3.0 and r < t
    print(("PASS" if ok else "FAIL") + " resnet50: record <= 3% and below torch.profiler")
    sys.exit(0 if ok else 1)
if w == "launch":
    ok = r < t
    print(("PASS" if ok else "FAIL") + " launch: record below torch.profiler")
    sys.exit(0 if ok else 1)
PY
done
fi

echo "== done: $([ $fail = 0 ] && echo all passed || echo some FAILED); files in $out"
exit $fail
