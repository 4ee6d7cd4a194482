"""Bad input raises GapscopeError with the command line's one-line message."""

import gzip
import os
import subprocess

import pytest

import gapscope
from gapscope import GapscopeError


def cli_error(cli, *args):
    out = subprocess.run([cli, "analyze", "--quiet", *map(str, args)], capture_output=True, text=True)
    assert out.returncode == 2, out.stdout
    lines = out.stderr.splitlines()
    assert len(lines) == 1, out.stderr
    assert lines[0].startswith("gapscope: ")
    return lines[0].removeprefix("gapscope: ")


def raised(*args, **kwargs) -> str:
    with pytest.raises(GapscopeError) as e:
        gapscope.analyze(*args, **kwargs)
    msg = str(e.value)
    assert "\n" not in msg
    return msg


def test_a_missing_file_is_the_clis_message(cli, tmp_path):
    p = tmp_path / "nope.json.gz"
    msg = raised(p)
    assert msg == cli_error(cli, p)
    assert str(p) in msg


@pytest.mark.parametrize(
    "name,content",
    [
        ("not-json.json", b"this is not a trace\n"),
        ("cut.json", b'{"traceEvents": [{"ph": "X", "name": "a", "ts": 1, "dur": 2, "pid": 1, "tid": 1}, {"ph": "X"'),
        ("empty.json", b""),
        ("bad.json.gz", b"\x1f\x8b\x08\x00garbage"),
        ("array.json", b"[1, 2, 3]"),
    ],
)
def test_damaged_files_give_the_clis_message(cli, tmp_path, name, content):
    p = tmp_path / name
    p.write_bytes(content)
    cli_out = subprocess.run([cli, "analyze", "--quiet", "--format", "json", str(p)], capture_output=True, text=True)
    if cli_out.returncode == 0:
        # A trace read in part is analysed, with the CLI's warning line.
        with pytest.warns(UserWarning, match=r"^gapscope: "):
            a = gapscope.analyze(p)
        import json

        assert a.summary == json.loads(cli_out.stdout)
    else:
        assert raised(p) == cli_error(cli, p)


def test_a_damaged_capture_is_the_clis_message(cli, tmp_path):
    src = tmp_path / "a.json.gz"
    with gzip.open(src, "wt") as f:
        f.write('{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": 10, "dur": 5, "pid": 0, "tid": 7,'
                ' "args": {"device": 0, "stream": 7, "correlation": 1}}]}')
    gst = tmp_path / "a.gst"
    gapscope.export(src, gst, format="gst")
    data = bytearray(gst.read_bytes())
    data[len(data) // 2] ^= 0xFF
    gst.write_bytes(bytes(data))
    assert raised(gst) == cli_error(cli, gst)


def test_selections_that_select_nothing(cli, traces):
    p = traces / "kineto-tb-plugin/resnet50_num_workers_0.worker0.1623143089861.pt.trace.json.gz"
    msg = raised(p, time_window="100s..200s")
    assert msg == cli_error(cli, "--time-window", "100s..200s", p)
    assert "outside the trace" in msg
    assert raised(p, steps=(90, 95), time_window="..1s") == cli_error(cli, "--steps", "90..95", "--time-window", "..1s", p)


@pytest.mark.parametrize(
    "kwargs,needle",
    [
        ({"steps": "9..5"}, "steps 9..5: the range 9..5 is empty"),
        ({"steps": "x"}, "is not a step number"),
        ({"steps": (1, 2, 3)}, "give a step number, a pair"),
        ({"steps": True}, "give a step number, a pair"),
        ({"time_window": "4s..2s"}, "time_window 4s..2s: the window is empty"),
        ({"time_window": "2.5"}, "write it as START..END"),
        ({"time_window": 5}, "write it as a string START..END"),
    ],
)
def test_bad_options(traces, kwargs, needle):
    p = traces / "hta/critical_path/alexnet/benchmark_result_2869224_1695835535_trace.json.gz"
    assert needle in raised(p, **kwargs)


def test_paths_that_name_no_trace(tmp_path):
    assert "holds no trace" in raised(tmp_path)
    assert "the list is empty" in raised([])
    assert "is not a path" in raised(42)
    assert "is not a path" in raised([tmp_path / "a.json", 42])


def test_report_and_export_errors_are_the_clis(tmp_path):
    with pytest.raises(GapscopeError, match=r"nope\.json"):
        gapscope.report(tmp_path / "nope.json", tmp_path / "r.html")
    with pytest.raises(GapscopeError, match=r"invalid value 'svg'"):
        gapscope.export(tmp_path / "nope.json", tmp_path / "x", format="svg")
    demo = os.path.join(os.path.dirname(__file__), "..", "..", "fixtures", "demo", "demo.pt.trace.json.gz")
    with pytest.raises(GapscopeError, match=r"--steps 40\.\.41 selects no step \(its steps are ProfilerStep#10 to #14\)"):
        gapscope.export(demo, tmp_path / "x.gst", format="gst", steps=(40, 41))
    with pytest.raises(GapscopeError, match=r"time_window=5: write it as a string"):
        gapscope.export(demo, tmp_path / "x.gst", format="gst", time_window=5)
