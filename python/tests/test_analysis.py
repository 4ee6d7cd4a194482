"""gapscope.analyze against the command line: the same numbers (its JSON,
value for value), the documented tables, and tables that add up to the
breakdown."""

import json
import subprocess

import polars as pl
import pytest

import gapscope

# Real traces of different shapes: CUDA and ROCm, one and several streams,
# NCCL, Triton, graphs, CPU only, a DataLoader on the training thread.
SHARED = [
    "hta/critical_path/alexnet/benchmark_result_2869224_1695835535_trace.json.gz",
    "hta/critical_path/cuda_event_sync_multi_stream/event_sync_trace.json.gz",
    "hta/amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz",
    "hta/cpu_only/rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz",
    "hta/triton_example/triton_example.json.gz",
    "hta/nccl_parser_config/nccl_data.json.gz",
    "param/dlrm_8rank/worker0_step_12.1694128201545.pt.trace.json.gz",
    "kineto-tb-plugin/resnet50_num_workers_0.worker0.1623143089861.pt.trace.json.gz",
    "tracelens/h100/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz",
    "tracelens/inference/sglang_decode/sglang_Qwen3-8B_decode.json.gz",
    "tracelens/inference/vllm_decode_full/graph_execution.json.gz",
]

COLUMNS = {
    "gaps": {
        "device": pl.UInt32, "start_ns": pl.Int64, "dur_ns": pl.Int64, "cause": pl.String,
        "operator": pl.String, "annotation": pl.String, "source": pl.String, "op_row": pl.UInt32,
    },
    "steps": {
        "step": pl.UInt64, "device": pl.UInt32, "start_ns": pl.Int64, "dur_ns": pl.Int64,
        "compute_ns": pl.Int64, "communication_ns": pl.Int64, "memcpy_ns": pl.Int64, "memset_ns": pl.Int64,
        "idle_ns": pl.Int64, "idle_profiler_ns": pl.Int64, "idle_sync_ns": pl.Int64,
        "idle_dataloader_ns": pl.Int64, "idle_cpu_op_ns": pl.Int64, "idle_framework_overhead_ns": pl.Int64,
        "idle_launch_overhead_ns": pl.Int64, "idle_untraced_ns": pl.Int64, "idle_queued_ns": pl.Int64,
        "idle_graph_capture_ns": pl.Int64,
    },
    "idle_by_cause": {
        "device": pl.UInt32, "cause": pl.String, "idle_ns": pl.Int64, "share_of_idle": pl.Float64,
        "share_of_window": pl.Float64,
    },
    "kernels": {
        "device": pl.UInt32, "stream": pl.Int64, "start_ns": pl.Int64, "dur_ns": pl.Int64, "kind": pl.String,
        "name": pl.String, "correlation": pl.UInt64, "bytes": pl.UInt64, "copy_kind": pl.String,
        "grid_x": pl.UInt32, "grid_y": pl.UInt32, "grid_z": pl.UInt32, "block_x": pl.UInt32,
        "block_y": pl.UInt32, "block_z": pl.UInt32, "registers": pl.UInt32, "shared_mem_bytes": pl.UInt32,
        "est_achieved_occupancy_pct": pl.Float64,
        "launch": pl.String, "operator": pl.String, "annotation": pl.String, "source": pl.String,
        "op_row": pl.UInt32,
    },
    "ops": {
        "row": pl.UInt32, "pid": pl.Int64, "tid": pl.Int64, "start_ns": pl.Int64, "dur_ns": pl.Int64,
        "name": pl.String, "kind": pl.String, "depth": pl.UInt32, "parent": pl.UInt32,
        "external_id": pl.UInt64, "sequence": pl.Int64, "shapes": pl.String, "source": pl.String,
    },
    "launches": {
        "device": pl.UInt32, "api": pl.String, "pid": pl.Int64, "tid": pl.Int64, "start_ns": pl.Int64,
        "cpu_dur_ns": pl.Int64, "launch_delay_ns": pl.Int64, "gpu_dur_ns": pl.Int64, "gpu_rows": pl.UInt32,
        "graph": pl.Boolean, "correlation": pl.UInt64, "operator": pl.String, "op_row": pl.UInt32,
    },
}


def cli_json(cli, *args):
    out = subprocess.run([cli, "analyze", "--format", "json", "--quiet", *map(str, args)],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


@pytest.fixture(scope="module", params=SHARED)
def pair(request, traces, cli):
    path = traces / request.param
    return gapscope.analyze(path), cli_json(cli, path)


def test_summary_equals_the_cli_json(pair):
    a, j = pair
    assert a.summary == j
    assert a.findings == j["findings"]
    assert a.devices == j["devices"]


@pytest.mark.parametrize(
    "kwargs,flags",
    [
        ({"exclude_last_step": True}, ["--exclude-last-step"]),
        ({"steps": (6, 8)}, ["--steps", "6..8"]),
        ({"steps": 7}, ["--steps", "7"]),
        ({"steps": "6..=7", "exclude_last_step": True}, ["--steps", "6..7", "--exclude-last-step"]),
        ({"time_window": "100ms..300ms"}, ["--time-window", "100ms..300ms"]),
    ],
)
def test_selections_equal_the_cli(traces, cli, kwargs, flags):
    path = traces / SHARED[7]  # resnet50: ProfilerStep#5..10
    a = gapscope.analyze(path, **kwargs)
    j = cli_json(cli, *flags, path)
    assert a.summary == j
    assert j["window"]["steps_selected"], "the selection kept no step"
    # The tables are of the selection too.
    assert a.steps["step"].unique().sort().to_list() == j["window"]["steps_selected"]
    assert a.gaps["dur_ns"].sum() == j["devices"][0]["breakdown"]["idle_ns"]
    assert a.kernels.height == j["diagnostics"]["rows_selected"]["gpu"] - j["diagnostics"]["sync_records"]


def test_tables_have_the_documented_columns(pair):
    a, _ = pair
    assert gapscope.TABLES == tuple(COLUMNS)
    for name, columns in COLUMNS.items():
        df = getattr(a, name)
        assert isinstance(df, pl.DataFrame)
        assert dict(df.schema) == columns, name


def test_gaps_add_up_to_each_devices_idle_time(pair):
    a, j = pair
    gaps = a.gaps
    if not j["devices"]:
        assert gaps.height == 0
        return
    assert gaps["dur_ns"].min() > 0
    per_device = dict(gaps.group_by("device").agg(pl.col("dur_ns").sum()).iter_rows())
    for d in j["devices"]:
        assert per_device.get(d["device"], 0) == d["breakdown"]["idle_ns"], d["device"]
        by_cause = dict(
            gaps.filter(pl.col("device") == d["device"]).group_by("cause").agg(pl.col("dur_ns").sum()).iter_rows()
        )
        assert {c: by_cause.get(c, 0) for c in d["idle_by_cause_ns"]} == d["idle_by_cause_ns"]
    # Segments lie in the window and do not overlap on a device.
    w = j["window"]
    assert gaps["start_ns"].min() >= w["start_ns"]
    assert (gaps["start_ns"] + gaps["dur_ns"]).max() <= w["end_ns"]
    ordered = gaps.sort("device", "start_ns").with_columns(end=pl.col("start_ns") + pl.col("dur_ns"))
    overlaps = ordered.filter(
        (pl.col("device") == pl.col("device").shift(-1)) & (pl.col("end") > pl.col("start_ns").shift(-1))
    )
    assert overlaps.height == 0


def test_gaps_name_what_the_summary_names(pair):
    # The string columns (views into the trace's string pool) carry the
    # names the analysis reports: every top idle operator's time is found
    # under its cause, operator, annotation and source, and every top gap
    # holds a segment with its cause and culprit.
    a, j = pair
    g = a.gaps

    # Top idle operators group module instances by class
    # (`nn.Module: FusedMoE_0` .. `_35` are `nn.Module: FusedMoE`); the
    # gaps keep the instance.
    module_class = pl.col("annotation").str.replace(r"^(nn\.Module: .*)_[0-9]+$", "${1}")

    def match(df, d, item, by_class=False):
        cond = (pl.col("device") == d) & (pl.col("cause") == item["cause"])
        for k in ("operator", "annotation", "source"):
            col = module_class if by_class and k == "annotation" else pl.col(k)
            cond &= col.is_null() if item[k] is None else (col == item[k])
        return df.filter(cond)

    for d in j["devices"]:
        for t in d["top_idle_operators"]:
            m = match(g, d["device"], t, by_class=True)
            # Stacks that show the same frame are one row here, so never less.
            assert m["dur_ns"].sum() >= t["idle_ns"] and m.height >= t["count"], t
        for t in d["top_gaps"]:
            inside = g.filter((pl.col("start_ns") >= t["start_ns"])
                              & (pl.col("start_ns") + pl.col("dur_ns") <= t["start_ns"] + t["dur_ns"]))
            assert inside["dur_ns"].sum() == t["dur_ns"], t
            assert match(inside, d["device"], t).height >= 1, t


def test_idle_by_cause_is_the_breakdowns_idle(pair):
    a, j = pair
    t = a.idle_by_cause
    assert t.height == 9 * len(j["devices"])
    for d in j["devices"]:
        rows = t.filter(pl.col("device") == d["device"])
        assert dict(zip(rows["cause"], rows["idle_ns"])) == d["idle_by_cause_ns"]
        assert rows["idle_ns"].sum() == d["breakdown"]["idle_ns"]
        if d["breakdown"]["idle_ns"]:
            assert rows["share_of_idle"].sum() == pytest.approx(1.0)


def test_steps_table_is_the_steps_breakdown(pair):
    a, j = pair
    t = a.steps
    assert t.height == sum(len(s["devices"]) for s in j["steps"])
    for row, (s, d) in zip(t.iter_rows(named=True), [(s, d) for s in j["steps"] for d in s["devices"]]):
        b = d["breakdown"]
        assert (row["step"], row["device"], row["start_ns"], row["dur_ns"]) == (
            s["step"], d["device"], s["start_ns"], s["end_ns"] - s["start_ns"])
        assert row["dur_ns"] == b["window_ns"]
        parts = ["compute_ns", "communication_ns", "memcpy_ns", "memset_ns", "idle_ns"]
        assert [row[p] for p in parts] == [b[p] for p in parts]
        assert sum(row[p] for p in parts) == row["dur_ns"]
        assert {c: row[f"idle_{c}_ns"] for c in d["idle_by_cause_ns"]} == d["idle_by_cause_ns"]


def test_row_tables_match_the_row_counts(pair):
    a, j = pair
    sel = j["diagnostics"]["rows_selected"]
    assert a.kernels.height == sel["gpu"] - j["diagnostics"]["sync_records"]
    assert a.ops.height == sel["cpu_ops"]
    assert a.launches.height == sum(d["launch_stats"]["count"] for d in j["devices"])
    if a.kernels.height:
        assert set(a.kernels["kind"].unique()) <= {"kernel", "memcpy", "memset"}
        assert a.kernels["dur_ns"].min() >= 0
    # op_row points into .ops: for a gap, at the operator it names.
    for name in ("gaps", "kernels", "launches"):
        rows = getattr(a, name)["op_row"].drop_nulls()
        assert rows.is_empty() or rows.max() < a.ops.height
    blamed = a.gaps.filter(pl.col("op_row").is_not_null())
    assert (blamed["operator"] == a.ops["name"].gather(blamed["op_row"])).all()
    assert a.gaps.filter(pl.col("op_row").is_null())["operator"].null_count() == a.gaps["op_row"].null_count()
    assert (a.ops["row"] == pl.Series(range(a.ops.height))).all()


def test_launch_percentiles_come_from_the_launches_table(pair):
    a, j = pair
    for d in j["devices"]:
        l = a.launches.filter(pl.col("device") == d["device"])
        s = d["launch_stats"]
        assert l.height == s["count"]
        if l.height:
            assert l["launch_delay_ns"].max() == s["launch_delay_ns"]["max"]
            assert l["cpu_dur_ns"].max() == s["cpu_duration_ns"]["max"]
            assert l["graph"].sum() == s["graph_launches"]


def test_to_pandas(pair):
    a, j = pair
    g = a.gaps.to_pandas()
    assert list(g.columns) == list(COLUMNS["gaps"])
    assert len(g) == a.gaps.height
    if len(g):
        assert int(g["dur_ns"].sum()) == sum(d["breakdown"]["idle_ns"] for d in j["devices"])
    k = a.kernels.to_pandas()
    assert len(k) == a.kernels.height


def test_tables_are_arrow_streams_for_pyarrow(pair):
    import pyarrow as pa

    a, _ = pair
    t = pa.table(a.arrow("kernels"))
    assert t.num_rows == a.kernels.height
    assert t.column_names == list(COLUMNS["kernels"])


def test_repr_html_shows_summary_and_findings(pair):
    a, j = pair
    html = a._repr_html_()
    assert html.startswith('<div class="gapscope-summary"')
    for d in j["devices"]:
        assert f"<b>GPU {d['device']}</b>" in html
    for f in j["findings"][:10]:
        assert f["detector"] in html
    if not j["findings"]:
        assert "No findings." in html
    assert "<script" not in html


def test_unestimable_findings_show_their_bound(pair):
    a, j = pair
    html = a._repr_html_()
    for f in j["findings"][:10]:
        if f["primary"] and not f["estimable"] and f.get("savings_bound_ns"):
            assert f"not estimable; at most {f['savings_bound_ns'] / 1e6:.3f} ms" in html
            break
    for f in j["findings"][:10]:
        if not f["primary"]:
            assert "context, not idle time" in html
            break
    for f in j["findings"]:
        assert ("savings_bound_ns" in f) == (not f["estimable"] and f.get("savings_bound_ns", 0) > 0)


def test_report_and_export_are_the_clis_files(traces, cli, tmp_path):
    p = traces / SHARED[0]
    for fmt, name in [(None, "r.html"), ("md", "r.md")]:
        ours = gapscope.report(p, tmp_path / name, format=fmt)
        flags = ["--format", fmt] if fmt else []
        subprocess.run([cli, "report", str(p), "-o", str(tmp_path / f"cli-{name}"), "--quiet", *flags], check=True)
        assert open(ours, "rb").read() == (tmp_path / f"cli-{name}").read_bytes()
    html = (tmp_path / "r.html").read_text()
    assert html.lstrip().lower().startswith("<!doctype html")
    a = gapscope.analyze(p, exclude_last_step=True)
    a.report(tmp_path / "a.md", format="md")
    subprocess.run([cli, "report", str(p), "-o", str(tmp_path / "cli-a.md"), "--format", "md", "--quiet",
                    "--exclude-last-step"], check=True)
    assert (tmp_path / "a.md").read_bytes() == (tmp_path / "cli-a.md").read_bytes()
    for fmt in ("perfetto", "chrome", "gst"):
        out = gapscope.export(p, tmp_path / f"x.{fmt}", format=fmt)
        subprocess.run([cli, "export", str(p), "-o", str(tmp_path / f"cli.{fmt}"), "--format", fmt, "--quiet"],
                       check=True)
        assert open(out, "rb").read() == (tmp_path / f"cli.{fmt}").read_bytes(), fmt
    # The capture reads back as the same analysis.
    assert gapscope.analyze(tmp_path / "x.gst").summary["devices"] == gapscope.analyze(p).summary["devices"]
    # A part of a trace with steps (the ROCm one has two): what analyze reads
    # with the same options, as the CLI writes it.
    q = traces / SHARED[2]
    steps = gapscope.analyze(q).summary["window"]["steps_selected"]
    assert len(steps) == 2
    part = gapscope.export(q, tmp_path / "part.gst", format="gst", steps=steps[-1])
    subprocess.run([cli, "export", str(q), "-o", str(tmp_path / "cli-part.gst"), "--format", "gst", "--quiet",
                    "--steps", f"{steps[-1]}..{steps[-1]}"], check=True)
    assert open(part, "rb").read() == (tmp_path / "cli-part.gst").read_bytes()
    assert gapscope.analyze(part).summary["devices"] == gapscope.analyze(q, steps=steps[-1]).summary["devices"]
    assert gapscope.analyze(part).summary["devices"] != gapscope.analyze(q).summary["devices"]
