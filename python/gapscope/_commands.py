"""`gapscope.report` and `gapscope.export`: the command line's report and
export, run by the program shipped in the wheel, so that they are exactly
what `gapscope report` and `gapscope export` write."""

from __future__ import annotations

import os
import subprocess
from typing import Any, List, Optional

from ._args import _paths, _steps_text
from ._cli import executable
from ._gapscope import GapscopeError


def _run(args: List[str]) -> None:
    exe = executable()
    if not os.access(exe, os.X_OK):
        raise GapscopeError(
            f"the gapscope program is missing from this installation ({exe}); reinstall the wheel"
        )
    done = subprocess.run([exe, *args, "--quiet"], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True)
    if done.returncode != 0:
        # The program's error is one line, `gapscope: <file>: <problem>; <what
        # to do>` (clap's usage errors start with `error: `).
        lines = [l for l in done.stderr.splitlines() if l.startswith(("gapscope: ", "error: "))]
        if lines:
            msg = lines[-1].split(": ", 1)[1]
        else:
            msg = f"gapscope {args[0]} failed with exit status {done.returncode}: {done.stderr.strip()}"
        raise GapscopeError(msg)


def report(path: Any, output: Any, *, format: Optional[str] = None, steps: Any = None,
           exclude_last_step: bool = False) -> str:
    """Write the report of a trace, or of the ranks of a job (a directory
    or a list of traces): one self-contained HTML page, or Markdown with
    ``format="md"`` (or an ``.md`` output name). Returns the output path."""
    out = os.fspath(output)
    args = ["report", *_paths(path), "-o", out]
    if format is not None:
        args += ["--format", format]
    s = _steps_text(steps)
    if s is not None:
        args += ["--steps", s]
    if exclude_last_step:
        args.append("--exclude-last-step")
    _run(args)
    return out


def export(path: Any, output: Any, *, format: str = "perfetto", compress: bool = True, steps: Any = None,
           exclude_last_step: bool = False, time_window: Optional[str] = None) -> str:
    """Write the trace as a timeline: ``perfetto`` (open in ui.perfetto.dev,
    idle gaps drawn with their causes), ``chrome`` (Kineto-compatible JSON)
    or ``gst`` (a gapscope capture), as `gapscope export` does; the ranks
    of a job (a directory or a list of traces) as one timeline on the
    job's aligned clock. ``steps``, ``exclude_last_step`` and
    ``time_window`` (one trace only) export the part that ``analyze`` reads
    with the same options, e.g. a few steps of a long recording as a small
    ``.gst``. Returns the output path."""
    out = os.fspath(output)
    args = ["export", *_paths(path), "-o", out, "--format", format]
    if not compress:
        args.append("--no-compress")
    s = _steps_text(steps)
    if s is not None:
        args += ["--steps", s]
    if exclude_last_step:
        args.append("--exclude-last-step")
    if time_window is not None:
        if not isinstance(time_window, str):
            raise GapscopeError(f"time_window={time_window!r}: write it as a string START..END, e.g. '2.5s..4s'")
        args += ["--time-window", time_window]
    _run(args)
    return out
