"""`Analysis`: one analysed trace, with its summary, findings and tables."""

from __future__ import annotations

import os
import warnings
from functools import cached_property
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

from . import _gapscope
from ._gapscope import GapscopeError

#: The tables of an Analysis, in the order the docs list them.
TABLES = ("gaps", "steps", "idle_by_cause", "kernels", "ops", "launches")


def analyze_one(path: str, steps: Optional[str], exclude_last_step: bool,
                time_window: Optional[str], stacklevel: int = 2) -> "Analysis":
    """One trace file analysed in-process (the selection already in the
    command line's words); the reader's warnings as Python warnings."""
    session = _gapscope.analyze_file(path, steps, exclude_last_step, time_window)
    for w in session.warnings():
        warnings.warn(f"gapscope: {w}", stacklevel=stacklevel + 1)
    return Analysis(session, path, steps=steps, exclude_last_step=exclude_last_step, time_window=time_window)


class Analysis:
    """One analysed trace.

    ``summary`` is the analysis as ``gapscope analyze --format json`` writes
    it (the same schema, as Python dicts and lists); ``findings`` its ranked
    findings. The tables are polars DataFrames, built on first use:
    ``gaps``, ``steps``, ``idle_by_cause``, ``kernels``, ``ops``,
    ``launches`` (columns: the package README). Times are integer ns since
    the trace's origin (``summary["source"]["origin_ns"]``).
    """

    def __init__(self, session: Any, path: str, *, steps: Optional[str] = None,
                 exclude_last_step: bool = False, time_window: Optional[str] = None) -> None:
        self._session = session
        self.path = path
        self._steps = steps
        self._exclude_last_step = exclude_last_step
        self._time_window = time_window

    @cached_property
    def summary(self) -> Dict[str, Any]:
        """The analysis, shaped as the JSON schema (docs/json-schema.md)."""
        return self._session.summary()

    @property
    def findings(self) -> List[Dict[str, Any]]:
        """What to fix, ranked by estimated savings (as the JSON's findings)."""
        return self.summary["findings"]

    @property
    def devices(self) -> List[Dict[str, Any]]:
        """One entry per GPU with activity (as the JSON's devices)."""
        return self.summary["devices"]

    def table(self, name: str):
        """The table `name` (one of TABLES) as a polars DataFrame."""
        import polars as pl

        if name not in TABLES:
            raise KeyError(f"no table named {name!r}; the tables are {', '.join(TABLES)}")
        return pl.DataFrame(self._session.table(name))

    @cached_property
    def gaps(self):
        """One row per idle segment: device, start_ns, dur_ns, cause, operator,
        annotation, source, op_row. ``dur_ns`` sums to each device's idle time."""
        return self.table("gaps")

    @cached_property
    def steps(self):
        """One row per selected step and device: its breakdown and idle by cause."""
        return self.table("steps")

    @cached_property
    def idle_by_cause(self):
        """One row per device and cause over the window."""
        return self.table("idle_by_cause")

    @cached_property
    def kernels(self):
        """One row per kernel, copy and memset in the window."""
        return self.table("kernels")

    @cached_property
    def ops(self):
        """One row per CPU range in the window (operators, annotations, frames, steps)."""
        return self.table("ops")

    @cached_property
    def launches(self):
        """One row per launch: its CPU time, launch delay and GPU time."""
        return self.table("launches")

    def arrow(self, name: str):
        """The table `name` as an object speaking the Arrow PyCapsule stream
        protocol, for pyarrow (``pa.table(a.arrow("gaps"))``), duckdb and others."""
        if name not in TABLES:
            raise KeyError(f"no table named {name!r}; the tables are {', '.join(TABLES)}")
        return self._session.table(name)

    def report(self, output: PathLike, format: Optional[str] = None) -> str:
        """Write gapscope's report of this trace (HTML, or ``format="md"``)."""
        from ._commands import report

        if self._time_window is not None:
            raise GapscopeError("the report has no time window option; analyse without time_window to report")
        return report(self.path, output, format=format, steps=self._steps,
                      exclude_last_step=self._exclude_last_step)

    def _repr_html_(self) -> str:
        from ._html import summary_html

        return summary_html(self.summary)

    def __repr__(self) -> str:
        s = self.summary
        w = s["window"]
        parts = [f"window {w['duration_ns'] / 1e6:.3f} ms ({w['basis']})"]
        for d in s["devices"]:
            b = d["breakdown"]
            share = b["idle_ns"] / b["window_ns"] if b["window_ns"] else 0.0
            parts.append(f"GPU {d['device']} idle {share:.1%}")
        parts.append(f"{len(s['findings'])} findings")
        return f"<gapscope.Analysis {self.path}: {', '.join(parts)}>"
