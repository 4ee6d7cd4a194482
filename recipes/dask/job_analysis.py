#!/usr/bin/env python3
"""Whole-job analysis of many ranks as tasks of Dask distributed.

The map step summarises each rank's trace on a worker (`gapscope summarize`,
a pure function from one trace to a small Parquet summary); the reduce step
reads the summaries on the client (`gapscope analyze DIR`) and prints the
job analysis. Workers need the gapscope binary (built with the `parquet`
feature) and read access to the traces; they need no shared output
directory: each task returns its summary's files (a few kB) to the client,
which writes them into DIR.

    python job_analysis.py TRACE_OR_DIR... -o summaries/                  # local cluster
    python job_analysis.py /shared/log/ -o summaries/ --scheduler tcp://host:8786
    python job_analysis.py ... --format text                               # the job as text

Definitions: docs/job.md ("Past one machine"); the recipe: docs/distributed.md.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

TRACE_SUFFIXES = (".json", ".json.gz", ".gst")


def summarize(trace, gapscope):
    """On a worker: summarise one trace; returns {relative path: bytes}."""
    out = tempfile.mkdtemp(prefix="gapscope-summary-")
    try:
        r = subprocess.run(
            [gapscope, "summarize", "-q", "-j", "1", trace, "-o", out],
            capture_output=True, text=True,
        )
        if r.returncode != 0:
            raise RuntimeError(r.stderr.strip() or f"gapscope summarize {trace} failed ({r.returncode})")
        files = {}
        for table in sorted(os.listdir(out)):
            for name in sorted(os.listdir(os.path.join(out, table))):
                with open(os.path.join(out, table, name), "rb") as f:
                    files[f"{table}/{name}"] = f.read()
        return files
    finally:
        shutil.rmtree(out, ignore_errors=True)


def traces_of(paths):
    """Files as given; directories by their trace files (not recursive)."""
    out = []
    for p in paths:
        if os.path.isdir(p):
            out.extend(sorted(os.path.join(p, f) for f in os.listdir(p) if f.endswith(TRACE_SUFFIXES)))
        else:
            out.append(p)
    return out


def run(client, traces, out_dir, gapscope, fmt="json"):
    """Maps `summarize` over `traces` on `client`'s workers, writes the
    summaries into `out_dir`, reduces them; returns (job, failures)."""
    from distributed import as_completed

    os.makedirs(out_dir, exist_ok=True)
    futures = client.map(summarize, traces, gapscope=gapscope, pure=False)
    where = {f.key: t for f, t in zip(futures, traces)}
    failures = []
    for fut in as_completed(futures):
        try:
            files = fut.result()
        except Exception as e:  # one bad trace must not stop the job
            failures.append((where[fut.key], str(e)))
            continue
        for rel, data in files.items():
            path = os.path.join(out_dir, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path + ".partial", "wb") as f:
                f.write(data)
            os.replace(path + ".partial", path)
    if len(failures) == len(traces):
        raise RuntimeError("no trace could be summarised: " + "; ".join(f"{t}: {e}" for t, e in failures))
    r = subprocess.run([gapscope, "analyze", "-q", "--format", fmt, out_dir], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(r.stderr.strip())
    return (json.loads(r.stdout) if fmt == "json" else r.stdout), failures


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("paths", nargs="+", help="traces, or directories of them")
    ap.add_argument("-o", "--output", required=True, help="where the summaries go")
    ap.add_argument("--scheduler", help="address of a running Dask scheduler (default: a local cluster)")
    ap.add_argument("--workers", type=int, default=2, help="workers of the local cluster")
    ap.add_argument("--gapscope", default=shutil.which("gapscope") or "gapscope", help="the gapscope binary on the workers")
    ap.add_argument("--format", choices=["json", "text"], default="json")
    a = ap.parse_args()

    from distributed import Client, LocalCluster

    traces = traces_of(a.paths)
    if not traces:
        sys.exit("job_analysis.py: no traces in " + ", ".join(a.paths))
    if a.scheduler:
        client = Client(a.scheduler)
        cluster = None
    else:
        cluster = LocalCluster(n_workers=a.workers, threads_per_worker=1, processes=True, dashboard_address=None)
        client = Client(cluster)
    try:
        job, failures = run(client, traces, a.output, a.gapscope, a.format)
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
    for t, e in failures:
        print(f"job_analysis.py: warning: {t}: {e}; left out", file=sys.stderr)
    print(json.dumps(job, indent=1) if a.format == "json" else job, end="" if a.format == "text" else "\n")


if __name__ == "__main__":
    main()
