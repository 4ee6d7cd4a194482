"""What the Python API accepts: paths (files, directories, lists) and step
selections, turned into what the command line and the extension take."""

from __future__ import annotations

import os
from typing import Any, List, Optional, Union

from ._gapscope import GapscopeError

PathLike = Union[str, "os.PathLike[str]"]

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
