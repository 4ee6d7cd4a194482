"""gapscope.on_trace_ready in a real torch.profiler run on the CPU."""

import gzip
import json
import os

import pytest
import torch

import gapscope


def train(handler, cycles=2, active=2):
    model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(32, 64), torch.randint(0, 10, (32,))
    schedule = torch.profiler.schedule(wait=1, warmup=1, active=active, repeat=cycles)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], schedule=schedule,
                                on_trace_ready=handler, with_stack=True, record_shapes=True) as prof:
        for _ in range(cycles * (2 + active)):
            with torch.profiler.record_function("train_step"):
                opt.zero_grad()
                torch.nn.functional.cross_entropy(model(x), y).backward()
                opt.step()
            prof.step()


def test_each_cycle_is_written_and_diagnosed(tmp_path):
    lines = []
    handler = gapscope.on_trace_ready(tmp_path / "log", worker_name="w0", log=lines.append)
    train(handler)
    handler.wait()
    files = sorted(os.listdir(tmp_path / "log"))
    assert len(files) == 2 and all(f.startswith("w0.") and f.endswith(".pt.trace.json") for f in files), files
    assert handler.traces == [str(tmp_path / "log" / f) for f in files] or sorted(handler.traces) == [
        str(tmp_path / "log" / f) for f in files]
    for cycle, path in enumerate(handler.traces, 1):
        header = f"gapscope: cycle {cycle} ({path}):"
        assert header in lines, lines
        body = lines[lines.index(header) + 1]
        # A CPU run: the trace's steps are found, and the line says there
        # was no GPU work rather than inventing an idle share.
        assert body.startswith("gapscope: steps ") and body.endswith("no GPU activity in the trace"), body
        a = gapscope.analyze(path)
        assert a.summary["window"]["basis"] == "steps"
        assert len(a.summary["window"]["steps_selected"]) == 2
        assert a.ops.filter(a.ops["name"] == "train_step").height == 2
    assert handler.last is not None and handler.last.path == handler.traces[-1]
    # The log directory: one worker's cycles, each analysed alone.
    cycles = gapscope.analyze(tmp_path / "log")
    assert [a.path for a in cycles] == handler.traces


def test_gzip_and_the_same_files_as_tensorboard_trace_handler(tmp_path):
    handler = gapscope.on_trace_ready(str(tmp_path), worker_name="w1", use_gzip=True, background=False,
                                      log=lambda line: None)
    train(handler, cycles=1)
    (path,) = handler.traces
    assert path.endswith(".pt.trace.json.gz")
    with gzip.open(path, "rt") as f:
        trace = json.load(f)
    assert any(e.get("name", "").startswith("ProfilerStep#") for e in trace["traceEvents"])
    theirs = tmp_path / "tb"
    train(torch.profiler.tensorboard_trace_handler(str(theirs), worker_name="w1", use_gzip=True), cycles=1)
    (tb,) = os.listdir(theirs)
    # Same naming scheme: worker.<ms timestamp>.pt.trace.json.gz
    assert tb.split(".")[0] == os.path.basename(path).split(".")[0]
    assert tb.split(".", 2)[2] == os.path.basename(path).split(".", 2)[2]
    assert len(tb.split(".")[1]) == len(os.path.basename(path).split(".")[1])


def test_a_failed_analysis_is_logged_not_raised(tmp_path):
    lines = []

    class Broken:
        def export_chrome_trace(self, path):
            with open(path, "w") as f:
                f.write("{ not a trace")

    handler = gapscope.on_trace_ready(tmp_path, worker_name="w", log=lines.append)
    handler(Broken())
    handler.wait()
    assert len(lines) == 1 and lines[0].startswith("gapscope: cycle 1: could not analyse "), lines


def test_the_diagnosis_of_a_gpu_trace(traces):
    # What a cycle's lines say on a real GPU trace: idle share, causes and
    # findings as the analysis has them.
    from gapscope import _diagnosis

    a = gapscope.analyze(traces / "kineto-tb-plugin/resnet50_num_workers_0.worker0.1623143089861.pt.trace.json.gz")
    text = _diagnosis.lines(a.summary, top=3)
    d = a.summary["devices"][0]
    b = d["breakdown"]
    assert text[0].startswith(f"steps 5-10, GPU 0: idle {b['idle_ns'] / b['window_ns']:.1%} of ")
    top_cause = max(d["idle_by_cause_ns"], key=d["idle_by_cause_ns"].get)
    assert f"({top_cause} " in text[0]
    f = a.findings[0]
    assert text[1].startswith(f"  1. {f['title']}")
    assert any(line == f"     fix: {f['hint']}" for line in text)
