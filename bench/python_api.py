#!/usr/bin/env python3
"""The Python API's speed (bench/README.md, "Python API").

    python bench/python_api.py cli [--runs N] TRACE...
        gapscope.analyze(TRACE).summary in this process against
        `gapscope analyze --format json --quiet TRACE` as a process (the
        command the wheel installed), N runs each, interleaved; medians.
    python bench/python_api.py tables [--runs N] TRACE
        gapscope.analyze(TRACE) and then all six tables as polars
        DataFrames, timed apart; rows per table.

Run it with the python of a venv where a release wheel is installed
(python/build_wheel.sh --release). Wall seconds (time.perf_counter) and
CPU seconds (this process's, or the child's from wait4); the machine's load
average is printed with the results, since the machine is shared.
"""

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time

import gapscope


def load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def cpu_self() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def cpu_children() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def time_cli(trace):
    c0, t0 = cpu_children(), time.perf_counter()
    subprocess.run([gapscope.executable(), "analyze", "--format", "json", "--quiet", trace],
                   stdout=subprocess.DEVNULL, check=True)
    return time.perf_counter() - t0, cpu_children() - c0


def time_python(trace):
    c0, t0 = cpu_self(), time.perf_counter()
    gapscope.analyze(trace).summary
    return time.perf_counter() - t0, cpu_self() - c0


def cmd_cli(args):
    print(f"load before: {load()}")
    print(f"{'trace':60} {'MB':>6} {'cli wall':>9} {'py wall':>9} {'cli cpu':>8} {'py cpu':>8} {'py/cli':>7}")
    for trace in args.traces:
        time_python(trace)  # page cache and first-use costs out of the way
        cli, py = [], []
        for _ in range(args.runs):
            cli.append(time_cli(trace))
            py.append(time_python(trace))
        cw, cc = statistics.median(x[0] for x in cli), statistics.median(x[1] for x in cli)
        pw, pc = statistics.median(x[0] for x in py), statistics.median(x[1] for x in py)
        name = os.path.relpath(trace, args.relative_to) if args.relative_to else trace
        print(f"{name[-60:]:60} {os.path.getsize(trace) / 1e6:6.1f} {cw:8.3f}s {pw:8.3f}s {cc:7.3f}s {pc:7.3f}s "
              f"{pw / cw:7.2f}")
    print(f"load after: {load()}")


def cmd_tables(args):
    import polars as pl

    print(f"load before: {load()}, polars {pl.__version__}")
    for run in range(args.runs):
        c0, t0 = cpu_self(), time.perf_counter()
        a = gapscope.analyze(args.trace)
        t_analyze, c_analyze = time.perf_counter() - t0, cpu_self() - c0
        rows = {}
        c1, t1 = cpu_self(), time.perf_counter()
        for name in gapscope.TABLES:
            rows[name] = getattr(a, name).height
        t_tables, c_tables = time.perf_counter() - t1, cpu_self() - c1
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"run {run + 1}: analyze {t_analyze:.2f} s wall {c_analyze:.2f} s cpu; six tables {t_tables:.2f} s wall "
              f"{c_tables:.2f} s cpu; total {t_analyze + t_tables:.2f} s; peak RSS {peak:.0f} MiB")
        del a
    print("rows: " + ", ".join(f"{k} {v:,}" for k, v in rows.items()))
    print(f"load after: {load()}")


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("cli")
    c.add_argument("--runs", type=int, default=5)
    c.add_argument("--relative-to")
    c.add_argument("traces", nargs="+")
    t = sub.add_parser("tables")
    t.add_argument("--runs", type=int, default=3)
    t.add_argument("trace")
    args = p.parse_args()
    {"cli": cmd_cli, "tables": cmd_tables}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
