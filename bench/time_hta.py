#!/usr/bin/env python3
"""Times HolisticTraceAnalysis on one trace, for comparison with gapscope.

    python3 bench/time_hta.py TRACE.json[.gz]      (run under /usr/bin/time -v)

Needs `pip install HolisticTraceAnalysis` in the interpreter that runs it.
Loads the trace as one rank (HTA's defaults: last ProfilerStep dropped) and
runs the analyses that `gapscope analyze` covers: temporal breakdown, idle
time breakdown, kernel breakdown, launch stats, queue length; no plots.
Prints seconds per phase; the process's wall time and peak RSS come from the
caller's /usr/bin/time.
"""

import logging
import os
import sys
import time

logging.disable(logging.WARNING)

from hta.trace_analysis import TraceAnalysis  # noqa: E402


def main():
    path = os.path.abspath(sys.argv[1])
    t = time.perf_counter()
    phases = []
    ta = TraceAnalysis(trace_files={0: os.path.basename(path)}, trace_dir=os.path.dirname(path))
    phases.append(("load", time.perf_counter() - t))
    for name, run in [
        ("temporal", lambda: ta.get_temporal_breakdown(visualize=False)),
        ("idle", lambda: ta.get_idle_time_breakdown(visualize=False)),
        ("kernel", lambda: ta.get_gpu_kernel_breakdown(visualize=False)),
        ("launch", lambda: ta.get_cuda_kernel_launch_stats(visualize=False)),
        ("queue", lambda: ta.get_queue_length_summary()),
    ]:
        s = time.perf_counter()
        run()
        phases.append((name, time.perf_counter() - s))
    total = time.perf_counter() - t
    print("hta " + " ".join(f"{n} {s:.2f}" for n, s in phases) + f" total {total:.2f} s")


if __name__ == "__main__":
    main()
