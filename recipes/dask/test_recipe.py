#!/usr/bin/env python3
"""Runs the Dask recipe on a local cluster of 2 worker processes and checks
it against the direct analysis: a planted job (fixtures/job/plant.py from
DLRM's rank 0 in ../shared/traces) with one unreadable file among the
traces. The job from the summaries must equal `gapscope analyze` of the
traces (less each rank's own analysis), name the planted late rank, and
leave the bad file out with its reason.

    python recipes/dask/test_recipe.py --gapscope target/debug/gapscope
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import job_analysis  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gapscope", required=True)
    a = ap.parse_args()
    gapscope = os.path.abspath(a.gapscope)
    base = os.path.join(REPO, "..", "shared", "traces", "param", "dlrm_8rank",
                        "worker0_step_12.1694128201545.pt.trace.json.gz")
    from distributed import Client, LocalCluster

    with tempfile.TemporaryDirectory() as tmp:
        ranks = os.path.join(tmp, "ranks")
        subprocess.run([sys.executable, os.path.join(REPO, "fixtures", "job", "plant.py"), base, ranks,
                        "--ranks", "6", "--steps", "3", "--plant", "4:11:1:7:dataloader"], check=True)
        truth = json.load(open(os.path.join(ranks, "truth.json")))
        os.remove(os.path.join(ranks, "truth.json"))
        with open(os.path.join(ranks, "broken.json"), "w") as f:
            f.write("{")
        traces = job_analysis.traces_of([ranks])
        assert len(traces) == 7, traces
        t0 = time.time()
        cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None)
        client = Client(cluster)
        try:
            assert len(client.scheduler_info()["workers"]) == 2
            job, failures = job_analysis.run(client, traces, os.path.join(tmp, "summaries"), gapscope)
            ran_on = client.run(os.getpid)
        finally:
            client.close()
            cluster.close()
        took = time.time() - t0
        assert len(ran_on) == 2, ran_on
        assert [os.path.basename(t) for t, _ in failures] == ["broken.json"], failures
        assert "truncated" in failures[0][1], failures
        direct = json.loads(subprocess.run([gapscope, "analyze", "-q", "--format", "json", ranks],
                                           check=True, capture_output=True, text=True).stdout)
        for r in direct["ranks"]:
            r.pop("analysis")
        assert job == direct, "the job from the Dask summaries differs from the direct analysis"
        p = truth["plants"][0]
        f = next(f for f in job["findings"] if f["id"] == "straggler_wait")
        assert (f["culprit_rank"], f["step"], f["cause"]) == (p["rank"], p["step"], p["cause"]), f
        for r, w in p["wait_ns"].items():
            assert abs(f["wait_ns"][r] - w) <= 0.01 * w, (r, f["wait_ns"][r], w)
        print(f"dask recipe: 6 ranks summarised on 2 workers, 1 bad file left out, job equal to the direct "
              f"analysis, rank {f['culprit_rank']} found late in step {f['step']} ({took:.1f} s with the cluster)")


if __name__ == "__main__":
    main()
