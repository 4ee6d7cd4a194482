"""A directory or several traces: the ranks of a job analysed together
(`gapscope analyze DIR`), each rank's own analysis in-process."""

import json
import subprocess

import polars as pl
import pytest

import gapscope

DLRM = "param/dlrm_8rank"
ALEXNET = "hta/critical_path/alexnet/benchmark_result_2869224_1695835535_trace.json.gz"
RESNET = "kineto-tb-plugin/resnet50_num_workers_0.worker0.1623143089861.pt.trace.json.gz"


def cli_json(cli, *args):
    out = subprocess.run([cli, "analyze", "--format", "json", "--quiet", *map(str, args)],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


@pytest.fixture(scope="module")
def job(traces):
    return gapscope.analyze(traces / DLRM)


def test_a_directory_of_ranks_is_one_job(job, traces, cli):
    assert isinstance(job, gapscope.Job)
    assert job.summary == cli_json(cli, traces / DLRM)
    assert job.summary["world_size"] == 8
    assert sorted(job.paths) == list(range(8))
    assert job.findings == job.summary["findings"]
    assert repr(job).startswith("<gapscope.Job 8 ranks of 8, step ")


def test_each_ranks_analysis_in_process_is_the_jobs(job):
    # The job's ranks[].analysis is the CLI's analysis of each file alone;
    # the in-process one must be the same, and comes with tables.
    by_rank = {r["rank"]: r for r in job.summary["ranks"]}
    for rank, a in job.ranks.items():
        assert isinstance(a, gapscope.Analysis)
        assert a.summary == by_rank[rank]["analysis"], rank
        d = a.summary["devices"][0]
        g = a.gaps.filter(pl.col("device") == d["device"])
        assert g["dur_ns"].sum() == d["breakdown"]["idle_ns"]


def test_a_list_of_ranks_is_the_same_job(job, traces):
    files = gapscope.trace_files(traces / DLRM)
    assert len(files) == 8
    again = gapscope.analyze(files[::-1])
    assert again.summary == job.summary


def test_unrelated_traces_are_analysed_each_alone(traces, cli):
    with pytest.warns(UserWarning, match=r"analysed apart from the job"):
        out = gapscope.analyze([traces / ALEXNET, traces / RESNET])
    assert isinstance(out, list) and len(out) == 2
    assert all(isinstance(a, gapscope.Analysis) for a in out)
    assert [a.summary for a in out] == cli_json(cli, traces / ALEXNET, traces / RESNET)
    # One trace in a list or a directory is that trace's Analysis.
    assert gapscope.analyze([traces / ALEXNET]).summary == out[0].summary


def test_job_options_reach_the_ranks(traces, cli):
    j = gapscope.analyze(traces / DLRM, exclude_last_step=True)
    assert j.summary == cli_json(cli, "--exclude-last-step", traces / DLRM)
    assert next(iter(j.ranks.values()))._exclude_last_step


def test_job_html_and_report(job, tmp_path, cli, traces):
    html = job._repr_html_()
    assert html.count("<tr><td") == 8
    for f in job.findings[:10]:
        assert f["title"].split("`")[0][:20].replace("&", "&amp;").replace("<", "&lt;") in html
    out = job.report(tmp_path / "job.md", format="md")
    subprocess.run([cli, "report", *gapscope.trace_files(traces / DLRM), "-o", str(tmp_path / "cli.md"),
                    "--format", "md", "--quiet"], check=True)
    assert open(out, "rb").read() == (tmp_path / "cli.md").read_bytes()


def test_an_unreadable_rank_is_a_warning(traces, tmp_path):
    bad = tmp_path / "rank9.json"
    bad.write_text("not a trace")
    with pytest.warns(UserWarning, match=r"^gapscope: .*rank9\.json"):
        out = gapscope.analyze([traces / ALEXNET, bad])
    assert isinstance(out, gapscope.Analysis)
    with pytest.warns(UserWarning, match=r"rank9\.json"), pytest.warns(UserWarning, match=r"missing\.json"):
        with pytest.raises(gapscope.GapscopeError, match=r"^none of the 2 input files could be analysed"):
            gapscope.analyze([bad, tmp_path / "missing.json"])
