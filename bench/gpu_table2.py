#!/usr/bin/env python3
"""GPU time per model, train and eval, TorchBench's Table 2 way: how much of
each timed step the GPU computes, moves data, or sits idle.

Each model and mode is one `gapscope bench MODEL --device cuda --nvtx` run
under `gapscope record`: the bench's timed iterations are `ProfilerStep#N`
NVTX ranges and its operators `emit_nvtx()` ranges, so `gapscope analyze`
of the capture covers the timed steps alone and names the kernels'
operators. The table's shares are the analysis' breakdown of the GPU over
those steps (docs/analysis.md): active = compute + communication + memset,
data movement = memcpy, idle = the rest; they add up to 100%.

usage: bench/gpu_table2.py --gapscope G --gapscope-torch GT --out DIR
         [--models m1,m2,...] [--modes train,eval] [--iters 10] [--warmup 3]
         [--timeout 120]
  G: a `gapscope` with libgapscope_inject.so beside it; GT: `gapscope`
  built with --features torch (its torch/lib found through LD_LIBRARY_PATH,
  which this script sets from the python3 that runs it).
Writes DIR/<model>.<mode>.{gst,jsonl,analysis.json,log} and DIR/table2.md.
"""
import argparse
import json
import os
import subprocess
import sys
import time


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--gapscope", required=True)
    p.add_argument("--gapscope-torch", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--models", default="")
    p.add_argument("--modes", default="train,eval")
    p.add_argument("--iters", type=int, default=10)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--timeout", type=int, default=120)
    a = p.parse_args()
    os.makedirs(a.out, exist_ok=True)
    import torch

    env = dict(os.environ)
    lib = os.path.join(os.path.dirname(torch.__file__), "lib")
    env["LD_LIBRARY_PATH"] = lib + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    env.setdefault("OMP_NUM_THREADS", "8")
    # record picks the libcupti of the PyTorch that runs this script.
    cupti = [os.path.join(r, f) for r, _, fs in os.walk(os.path.join(os.path.dirname(lib), "..", "nvidia"))
             for f in fs if f.startswith("libcupti.so.")]
    if cupti:
        env["GAPSCOPE_CUPTI_LIBS"] = os.path.realpath(sorted(cupti)[0])
    models = [m for m in a.models.split(",") if m]
    if not models:
        listing = subprocess.run([a.gapscope_torch, "bench", "--list"], env=env, capture_output=True, text=True)
        models = [line.split()[0] for line in listing.stdout.splitlines() if line.strip()]
    rows = []
    for model in models:
        for mode in a.modes.split(","):
            stem = os.path.join(a.out, "%s.%s" % (model, mode))
            t0 = time.time()
            cmd = [a.gapscope, "record", "-o", stem + ".gst", "--", a.gapscope_torch, "bench", model,
                   "--device", "cuda", "--mode", mode, "--nvtx", "--iters", str(a.iters),
                   "--warmup", str(a.warmup), "-o", stem + ".jsonl", "--quiet"]
            with open(stem + ".log", "w") as log:
                try:
                    rc = subprocess.run(cmd, env=env, stdout=log, stderr=subprocess.STDOUT,
                                        timeout=a.timeout).returncode
                except subprocess.TimeoutExpired:
                    rc = "timeout"
            row = {"model": model, "mode": mode, "rc": rc, "wall_s": round(time.time() - t0, 1)}
            try:
                with open(stem + ".jsonl") as f:
                    rec = json.loads(f.readline())
                row["status"] = rec.get("status")
                row["median_ms"] = rec["median_ns"] / 1e6 if rec.get("median_ns") else None
                row["peak_gpu_mib"] = (rec.get("peak_gpu_memory_bytes") or 0) / 2**20
                row["batch"] = rec.get("config", {}).get("batch_size")
            except (OSError, ValueError, KeyError) as e:
                row["status"] = "no result (%s)" % e
            an = subprocess.run([a.gapscope, "analyze", "--format", "json", stem + ".gst"], env=env,
                                capture_output=True, text=True)
            if an.returncode == 0:
                with open(stem + ".analysis.json", "w") as f:
                    f.write(an.stdout)
                d = json.loads(an.stdout)
                d = d[0] if isinstance(d, list) else d
                dev = d["devices"][0]
                b = dev["breakdown"]
                w = b["window_ns"] or 1
                row["steps"] = d["window"].get("steps_in_trace")
                row["basis"] = d["window"].get("basis")
                row["active"] = 100.0 * (b["compute_ns"] + b["communication_ns"] + b["memset_ns"]) / w
                row["data"] = 100.0 * b["memcpy_ns"] / w
                row["idle"] = 100.0 * b["idle_ns"] / w
                row["kernels"] = dev.get("launch_stats", {}).get("count")
                causes = sorted(dev.get("idle_by_cause_ns", {}).items(), key=lambda kv: -kv[1])
                row["idle_mostly"] = causes[0][0] if causes and causes[0][1] > 0 else "-"
                unlinked = d["diagnostics"].get("gpu_rows_without_launch")
                row["unlinked"] = unlinked
            else:
                row["analyze_error"] = an.stderr.strip().splitlines()[-1:] if an.stderr else "?"
            rows.append(row)
            print(json.dumps(row), flush=True)
    with open(os.path.join(a.out, "rows.json"), "w") as f:
        json.dump(rows, f, indent=1)
    lines = ["| model | mode | batch | step ms | GPU active | data movement | idle | idle mostly | kernels | peak GPU MiB |",
             "| --- | --- | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: |"]
    for r in rows:
        if "active" not in r:
            lines.append("| %s | %s | | | %s | | | | | |" % (r["model"], r["mode"], r.get("status")))
            continue
        lines.append("| %s | %s | %s | %.2f | %.1f%% | %.1f%% | %.1f%% | %s | %s | %.0f |" % (
            r["model"], r["mode"], r.get("batch"), r.get("median_ms") or 0, r["active"], r["data"], r["idle"],
            r["idle_mostly"], r.get("kernels"), r.get("peak_gpu_mib") or 0))
    with open(os.path.join(a.out, "table2.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
