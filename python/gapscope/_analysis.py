"""`Analysis`: one analysed trace, with its summary, findings and tables."""

from __future__ import annotations

import os
import warnings
from functools import cached_property
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

from . import _gapscope
from ._gapscope import GapscopeError

PathLike = Union[str, "os.PathLike[str]"]

#: The tables of an Analysis, in the order the docs list them.
TABLES = ("gaps", "steps", "idle_by_cause", "kernels", "ops", "launches")

_TRACE_SUFFIXES = (".json", ".json.gz", ".gst")


def _steps_text(steps: Any) -> Optional[str]:
    """`steps` as the command line's `A..B` (both included)."""
    if steps is None:
        return None
    if isinstance(steps, str):
        return steps
    if isinstance(steps, bool):
        raise GapscopeError(f"steps={steps!r}: give a step number, a pair (first, last) or 'A..B'")
    if isinstance(steps, int):
        return f"{steps}..{steps}"
    if isinstance(steps, (tuple, list)) and len(steps) == 2 and all(
        isinstance(s, int) and not isinstance(s, bool) for s in steps
    ):
        if min(steps) < 0:
            raise GapscopeError(f"steps={steps!r}: step numbers are the N of ProfilerStep#N, 0 or more")
        return f"{steps[0]}..{steps[1]}"
    raise GapscopeError(f"steps={steps!r}: give a step number, a pair (first, last) or 'A..B'")


def trace_files(directory: PathLike) -> List[str]:
    """The trace files directly inside `directory`, sorted by name."""
    names = sorted(os.listdir(directory))
    return [
        os.path.join(directory, n)
        for n in names
        if n.endswith(_TRACE_SUFFIXES) and os.path.isfile(os.path.join(directory, n))
    ]


def _fspath(path: Any) -> str:
    try:
        p = os.fspath(path)
    except TypeError:
        raise GapscopeError(
            f"{path!r} is not a path; give the trace file's path as a str or pathlib.Path"
        ) from None
    return os.fsdecode(p) if isinstance(p, bytes) else p


def _paths(path: Any) -> List[str]:
    """The trace files `path` names: one file, a directory's traces, or a
    list of files and directories."""
    if isinstance(path, (list, tuple)):
        out = [p for x in path for p in _paths(x)]
        if not out:
            raise GapscopeError("no trace given: the list is empty")
        return out
    p = _fspath(path)
    if os.path.isdir(p):
        files = trace_files(p)
        if not files:
            raise GapscopeError(f"{p}: the directory holds no trace (.json, .json.gz or .gst files)")
        return files
    return [p]


def analyze(
    path: Any,
    steps: Any = None,
    exclude_last_step: bool = False,
    time_window: Optional[str] = None,
) -> Any:
    """Analyse a trace, as `gapscope analyze` does.

    path: a Kineto trace (``.json``, ``.json.gz``) or a gapscope capture
    (``.gst``): gives an Analysis. A directory or a list of several traces
    is read as `gapscope analyze` reads them: the ranks of a job together,
    as a Job (cross-rank waits, stragglers, each rank's Analysis), other
    traces each alone; one result is returned as it is, several as a list
    in input order.
    steps: only these ProfilerSteps: ``7``, ``(5, 9)`` or ``"5..9"`` (both
    included). exclude_last_step: leave out the last step (HTA's default).
    time_window: only this slice of time after the trace's first event,
    ``"2.5s..4s"``, ``"..500ms"`` (units ns, us, ms, s).

    Raises GapscopeError with the command line's one-line message when the
    trace cannot be read or the selection is empty.
    """
    if time_window is not None and not isinstance(time_window, str):
        raise GapscopeError(f"time_window={time_window!r}: write it as a string START..END, e.g. '2.5s..4s'")
    paths = _paths(path)
    steps_text = _steps_text(steps)
    if len(paths) > 1:
        from ._job import analyze_batch

        results = analyze_batch(paths, steps_text, bool(exclude_last_step), time_window)
        return results[0] if len(results) == 1 else results
    session = _gapscope.analyze_file(paths[0], steps_text, bool(exclude_last_step), time_window)
    for w in session.warnings():
        warnings.warn(f"gapscope: {w}", stacklevel=2)
    return Analysis(session, paths[0], steps=steps_text, exclude_last_step=bool(exclude_last_step),
                    time_window=time_window)


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
