"""`on_trace_ready`: a drop-in for `torch.profiler.tensorboard_trace_handler`
that writes each cycle's trace and then says why the GPUs sat idle in it,
while training goes on."""

from __future__ import annotations

import os
import socket
import sys
import threading
import time
from typing import Any, Callable, List, Optional

from . import _diagnosis


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


class TraceHandler:
    """Called by torch.profiler at the end of every profiling cycle
    (``on_trace_ready=``). Writes the trace as tensorboard_trace_handler
    does (same directory layout and file names, so TensorBoard and HTA
    still read it), then analyses it in a background thread (the analysis
    releases the GIL) and logs the diagnosis. An analysis that fails is
    logged, never raised: profiling must not stop training."""

    def __init__(self, dir_name: str, worker_name: Optional[str] = None, use_gzip: bool = False, *,
                 log: Optional[Callable[[str], Any]] = None, top: int = 3, background: bool = True) -> None:
        self.dir_name = os.fspath(dir_name)
        self.worker_name = worker_name
        self.use_gzip = use_gzip
        self.log = log or _stderr
        self.top = top
        self.background = background
        #: Every trace written, in order.
        self.traces: List[str] = []
        #: The latest cycle's Analysis (None until one has been analysed).
        self.last = None
        self._lock = threading.Lock()
        self._threads: List[threading.Thread] = []

    def __call__(self, prof: Any) -> None:
        # As tensorboard_trace_handler: the directory made on first use, the
        # default worker name taken at the call (a forked worker's own pid).
        try:
            os.makedirs(self.dir_name, exist_ok=True)
        except Exception as e:
            raise RuntimeError("Can't create directory: " + self.dir_name) from e
        worker = self.worker_name or f"{socket.gethostname()}_{os.getpid()}"
        name = f"{worker}.{time.time_ns()}.pt.trace.json"
        if self.use_gzip:
            name += ".gz"
        path = os.path.join(self.dir_name, name)
        prof.export_chrome_trace(path)
        self.traces.append(path)
        cycle = len(self.traces)
        if not self.background:
            self._diagnose(path, cycle)
            return
        # Not a daemon: the last cycle's diagnosis is printed before the
        # interpreter exits.
        t = threading.Thread(target=self._diagnose, args=(path, cycle), name=f"gapscope-cycle-{cycle}")
        self._threads = [x for x in self._threads if x.is_alive()] + [t]
        t.start()

    def wait(self) -> None:
        """Waits until every cycle written so far has been diagnosed."""
        for t in list(self._threads):
            t.join()

    def _diagnose(self, path: str, cycle: int) -> None:
        from ._api import analyze

        # One analysis at a time: cycles that come faster than they are
        # analysed wait their turn instead of piling up in memory.
        with self._lock:
            try:
                a = analyze(path)
                summary = a.summary
            except Exception as e:  # noqa: BLE001 (never stop training)
                self.log(f"gapscope: cycle {cycle}: could not analyse {path}: {e}")
                return
            self.last = a
            text = _diagnosis.lines(summary, self.top)
            self.log(f"gapscope: cycle {cycle} ({path}):")
            for line in text:
                self.log(f"gapscope: {line}")


def on_trace_ready(dir_name: Any, worker_name: Optional[str] = None, use_gzip: bool = False, *,
                   log: Optional[Callable[[str], Any]] = None, top: int = 3,
                   background: bool = True) -> TraceHandler:
    """A drop-in for ``torch.profiler.tensorboard_trace_handler(dir_name,
    worker_name, use_gzip)`` that also diagnoses each cycle::

        with torch.profiler.profile(schedule=..., on_trace_ready=gapscope.on_trace_ready("log")) as p:
            for batch in loader:
                train_step(batch)
                p.step()

    log: where the lines go (default: stderr), e.g. ``logging.getLogger("train").info``.
    top: how many causes and findings to show. background: analyse in a
    thread (default) or before returning to the training loop.
    """
    return TraceHandler(dir_name, worker_name, use_gzip, log=log, top=top, background=background)
