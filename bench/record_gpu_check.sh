#!/usr/bin/env bash
# GPU checks of `gapscope record` (docs/cupti.md, "Recording any program":
# "Not verified on a GPU"). NOT RUN YET: it was written in a session with no
# GPU and no CUDA driver, where only its syntax could be checked (bash -n,
# python3 -m py_compile of the embedded driver). Expect to fix things on its
# first run, and write what it prints into docs/cupti.md.
#
# usage: bench/record_gpu_check.sh [OUTDIR]
# needs: an NVIDIA GPU with its driver, PyTorch with CUDA (torch.cuda works),
#        torchvision for the ResNet-50 overhead check (skipped without it),
#        cargo; PYTHON (default python3) picks the interpreter.
# env:   STEPS recorded steps per scenario (default 20), SCENARIOS (default:
#        all of fixtures/scenarios), RESNET_STEPS (default 50),
#        LAUNCHES tiny kernels in the launch-bound loop (default 20000).
#
# What it checks, each printed as PASS/FAIL (exit 1 on any FAIL):
#  1. the live collector's own GPU smoke test (collectors/tests/cupti_live.rs);
#  2. every scenario x {planted, fixed}, run twice with the same seed and
#     steps: once under `gapscope record`, once under torch.profiler (never
#     both at once: CUPTI takes one subscriber). Counts of kernels, copies,
#     host-to-device copies, pageable host-to-device copies, device-to-host
#     copies and memsets must be equal; every kernel must link to its launch
#     (analyze: gpu_rows_without_launch = 0); no dropped records;
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
SCENARIOS="${SCENARIOS:-zero_grad_loop scalar_htod item_every_step pageable_copy offload_pingpong cpu_op dataloader baseline}"
fail=0
pass() { echo "PASS $*"; }
bad() { echo "FAIL $*"; fail=1; }

echo "== environment ($(date -u +%FT%TZ), output in $out)"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || { echo "no GPU: nothing to check"; exit 2; }
"$PY" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "available", torch.cuda.is_available())'
uptime

echo "== build (release)"
(cd "$repo" && cargo build --release -p gapscope -p gapscope-inject --locked) || exit 2
G="${CARGO_TARGET_DIR:-$repo/target}/release/gapscope"
[ -f "$(dirname "$G")/libgapscope_inject.so" ] || { echo "no libgapscope_inject.so next to $G"; exit 2; }

echo "== 1. live collector smoke test"
site="$("$PY" -c 'import torch, os; print(os.path.dirname(os.path.dirname(torch.__file__)))')"
cupti="$(ls "$site"/nvidia/*/lib/libcupti.so.* 2>/dev/null | head -n 1)"
if [ -n "$cupti" ] && (cd "$repo" && LD_LIBRARY_PATH="$(dirname "$cupti")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
    cargo test --release -p gapscope-collectors --features cupti --test cupti_live --locked gpu_smoke -- --ignored --nocapture); then
  pass "cupti_live gpu_smoke ($cupti)"
else
  bad "cupti_live gpu_smoke (libcupti: ${cupti:-none found next to torch})"
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
"""
import bisect, collections, json, sys

mode, path = sys.argv[1:3]
with open(path) as f:
    ev = json.load(f)
ev = ev["traceEvents"] if isinstance(ev, dict) else ev
x = [e for e in ev if e.get("ph") == "X"]
if mode == "counts":
    k = sum(1 for e in x if e.get("cat") == "kernel")
    cp = [e for e in x if e.get("cat") == "gpu_memcpy"]
    htod = [e for e in cp if "HtoD" in e.get("name", "")]
    print(k, len(cp), len(htod), sum(1 for e in htod if "Pageable" in e["name"]),
          sum(1 for e in cp if "DtoH" in e.get("name", "")),
          sum(1 for e in x if e.get("cat") == "gpu_memset"))
else:
    ranges = collections.defaultdict(list)
    for e in x:
        if e.get("cat") == "user_annotation" and e.get("name", "").startswith("aten::"):
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

echo "== 2. counts against torch.profiler ($STEPS steps per run)"
for s in $SCENARIOS; do
  for v in planted fixed; do
    flag=""; [ "$v" = fixed ] && flag="--fixed"
    name="$s.$v"
    "$G" record -o "$out/$name.gst" -- "$PY" "$driver" plain "$s" "$STEPS" $flag >"$out/$name.record.log" 2>&1
    rc=$?
    "$PY" "$driver" profile "$s" "$STEPS" $flag --out "$out/$name.kineto.json" >"$out/$name.profile.log" 2>&1 || rc=$?
    if [ $rc -ne 0 ]; then bad "$name: a run failed (rc $rc, see $out/$name.*.log)"; continue; fi
    ours="$(summary_counts "$out/$name.record.log")"
    theirs="$("$PY" "$counts" counts "$out/$name.kineto.json")"
    if [ -n "$ours" ] && [ "$ours" = "$theirs" ]; then
      pass "$name counts (kernels copies htod pageable dtoh memsets): $ours"
    else
      bad "$name counts: record [$ours] torch.profiler [$theirs]"
    fi
    "$G" analyze --format json "$out/$name.gst" >"$out/$name.analysis.json" 2>/dev/null
    unlinked="$("$PY" -c 'import json,sys; d=json.load(open(sys.argv[1])); d=d[0] if isinstance(d,list) else d; print(d["diagnostics"]["gpu_rows_without_launch"])' "$out/$name.analysis.json" 2>/dev/null)"
    [ "$unlinked" = 0 ] && pass "$name every GPU row linked to its launch" || bad "$name unlinked GPU rows: ${unlinked:-?}"
    grep -q "CUPTI dropped 0 records" "$out/$name.record.log" && pass "$name no dropped records" || bad "$name dropped records (see $out/$name.record.log)"
  done
done

echo "== 3. NVTX operator names (emit_nvtx)"
"$G" record -o "$out/nvtx.gst" -- "$PY" "$driver" nvtx baseline "$STEPS" >"$out/nvtx.record.log" 2>&1 \
  && "$G" export "$out/nvtx.gst" --format chrome -o "$out/nvtx.json" 2>>"$out/nvtx.record.log"
read -r nranges nkern nhit frac <<<"$("$PY" "$counts" nvtx "$out/nvtx.json" 2>/dev/null || echo "0 0 0 0")"
echo "NVTX aten:: ranges $nranges, kernels $nkern, launched inside an aten:: range $nhit ($frac)"
[ "${nranges:-0}" -gt 0 ] && pass "NVTX ranges recorded" || bad "no NVTX ranges (see $out/nvtx.record.log)"
"$PY" -c "import sys; sys.exit(0 if float('$frac') >= 0.95 else 1)" && pass "NVTX attribution >= 95%" || bad "NVTX attribution $frac < 95%"

echo "== 4. overhead (median step ms; machine load: $(uptime | sed 's/.*load average: //'))"
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
med() { sed -n 's/^median_step_ms //p' "$1" | tail -n 1; }
for w in resnet50 launch; do
  n="$RESNET_STEPS"; [ "$w" = launch ] && n="$LAUNCHES"
  if [ "$w" = resnet50 ] && ! "$PY" -c 'import torchvision' 2>/dev/null; then echo "SKIP resnet50: no torchvision"; continue; fi
  "$PY" "$bench" "$w" "$n" >"$out/$w.plain.log" 2>&1
  "$G" record -o "$out/$w.gst" -- "$PY" "$bench" "$w" "$n" >"$out/$w.record.log" 2>&1
  "$G" record --no-api-calls -o "$out/$w.noapi.gst" -- "$PY" "$bench" "$w" "$n" >"$out/$w.noapi.log" 2>&1
  "$PY" "$bench" "$w" "$n" profile >"$out/$w.profile.log" 2>&1
  p="$(med "$out/$w.plain.log")"; r="$(med "$out/$w.record.log")"; a="$(med "$out/$w.noapi.log")"; t="$(med "$out/$w.profile.log")"
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
PY
done

echo "== done: $([ $fail = 0 ] && echo all passed || echo some FAILED); files in $out"
exit $fail
