"""Several traces at once (a directory, or a list of paths): the ranks of
a job analysed together, as `gapscope analyze DIR` does.

The grouping into jobs and the cross-rank analysis (clock alignment,
waits, stragglers) are the command line's, run by the program shipped in
the wheel; each rank's own analysis and tables are read in-process, on
first use, as gapscope.analyze(file) gives them."""

from __future__ import annotations

import json
import os
import subprocess
import warnings
from functools import cached_property
from html import escape
from typing import Any, Dict, List, Optional

from ._analysis import analyze_one
from ._cli import executable
from ._commands import report
from ._gapscope import GapscopeError


def analyze_batch(paths: List[str], steps: Optional[str], exclude_last_step: bool,
                  time_window: Optional[str]) -> List[Any]:
    """`gapscope analyze --format json PATHS...`: one result per job or
    lone trace, in input order (a Job, or an Analysis of the lone trace)."""
    args = [executable(), "analyze", "--format", "json"]
    if steps is not None:
        args += ["--steps", steps]
    if exclude_last_step:
        args.append("--exclude-last-step")
    if time_window is not None:
        args += ["--time-window", time_window]
    done = subprocess.run([*args, *paths], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True)
    lines = [l for l in done.stderr.splitlines() if l.startswith("gapscope: ")]
    # The files left out, as the command line's warnings (before an error,
    # which refers to them).
    for l in lines:
        if l.startswith("gapscope: warning: "):
            warnings.warn("gapscope: " + l.removeprefix("gapscope: warning: "), stacklevel=3)
    if done.returncode != 0:
        errors = [l for l in lines if not l.startswith("gapscope: warning: ")]
        msg = (errors or [f"gapscope: analyze failed with exit status {done.returncode}"])[-1]
        raise GapscopeError(msg.removeprefix("gapscope: "))
    out = json.loads(done.stdout)
    options = dict(steps=steps, exclude_last_step=exclude_last_step, time_window=time_window)
    return [
        Job(r, options) if r.get("kind") == "job" else analyze_one(r["source"]["path"], steps, exclude_last_step, time_window, stacklevel=3)
        for r in (out if isinstance(out, list) else [out])
    ]


class Job:
    """The ranks of one job, analysed together.

    ``summary`` is the job as ``gapscope analyze --format json`` writes it
    (docs/job-schema.md: ranks, clock alignment, steps, collectives, waits);
    ``findings`` its cross-rank findings (stragglers, imbalance, exposed
    communication), ranked by estimated savings; ``ranks`` maps each rank to
    its own ``Analysis`` (summary, findings and tables), made on first use.
    """

    def __init__(self, summary: Dict[str, Any], options: Dict[str, Any]) -> None:
        self.summary = summary
        self._options = options

    @property
    def findings(self) -> List[Dict[str, Any]]:
        return self.summary["findings"]

    @property
    def paths(self) -> Dict[int, str]:
        """Each rank's trace file."""
        return {r["rank"]: r["source"] for r in self.summary["ranks"]}

    @cached_property
    def ranks(self) -> Dict[int, Any]:
        """rank -> Analysis of its trace alone (the same as the job's
        ``ranks[].analysis``, with tables)."""
        o = self._options
        return {
            rank: analyze_one(path, o["steps"], o["exclude_last_step"], o["time_window"])
            for rank, path in self.paths.items()
        }

    def report(self, output: Any, format: Optional[str] = None) -> str:
        """Write gapscope's report of the job (HTML, or ``format="md"``)."""
        if self._options.get("time_window") is not None:
            raise GapscopeError("the report has no time window option; analyse without time_window to report")
        return report(list(self.paths.values()), output, format=format, steps=self._options.get("steps"),
                      exclude_last_step=self._options.get("exclude_last_step", False))

    def __repr__(self) -> str:
        s = self.summary
        step = s["summary"].get("step_time_ns")
        parts = [f"{len(s['ranks'])} ranks"]
        if s.get("world_size") is not None:
            parts[0] += f" of {s['world_size']}"
        if step is not None:
            parts.append(f"step {step / 1e6:.3f} ms")
        parts.append(f"{len(s['findings'])} findings")
        return f"<gapscope.Job {', '.join(parts)}>"

    def _repr_html_(self) -> str:
        s = self.summary
        e = escape
        cell = "padding:3px 8px;text-align:right"
        def row(r: Dict[str, Any]) -> str:
            step = r["step_time_median_ns"]
            b = r["breakdown"]
            idle = b["idle_ns"] / b["window_ns"] if b["window_ns"] else 0.0
            cells = [str(r["rank"]), "" if step is None else f"{step / 1e6:.3f} ms", f"{idle:.1%}",
                     f"{r['wait_ns'] / 1e6:.3f} ms", str(r["late"])]
            return ("<tr>" + "".join(f"<td style='{cell}'>{c}</td>" for c in cells)
                    + f"<td style='padding:3px 8px'>{e(os.path.basename(r['source']))}</td></tr>")

        rows = "".join(row(r) for r in s["ranks"])
        finds = "".join(
            f"<li>{e(f['title'])}"
            + (f" <b>(saves ~{f['est_savings_ns'] / 1e6:.3f} ms)</b>" if f["est_savings_ns"] > 0 else "")
            + (f" <b>(saving not estimable, at most ~{f['savings_bound_ns'] / 1e6:.3f} ms)</b>"
               if f.get("savings_bound_ns") else "")
            + f"<div style='color:#555'>{e(f['hint'])}</div></li>"
            for f in s["findings"][:10]
        )
        warn = "".join(f"<div style='color:#a40'>{e(w)}</div>" for w in s.get("warnings", []))
        return (
            "<div class='gapscope-job' style='font-family:system-ui,sans-serif;font-size:13px'>"
            f"<div>{e(repr(self))}</div>{warn}"
            "<table style='border-collapse:collapse;margin-top:6px'><thead><tr><th>rank</th><th>step (median)</th>"
            "<th>GPU idle</th><th>waiting for peers</th><th>late</th><th>trace</th></tr></thead>"
            f"<tbody>{rows}</tbody></table>"
            + (f"<ol>{finds}</ol>" if finds else "<p>No cross-rank findings.</p>")
            + "</div>"
        )
