"""`gapscope.analyze`: one trace in-process, several (the ranks of a job,
or lone traces) through the command line's grouping."""

from __future__ import annotations

from typing import Any, Optional

from ._analysis import analyze_one
from ._args import _paths, _steps_text
from ._gapscope import GapscopeError
from ._job import analyze_batch


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
        results = analyze_batch(paths, steps_text, bool(exclude_last_step), time_window)
        return results[0] if len(results) == 1 else results
    return analyze_one(paths[0], steps_text, bool(exclude_last_step), time_window, stacklevel=2)
