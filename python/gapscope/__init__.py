"""gapscope: why your GPU sits idle.

    import gapscope
    a = gapscope.analyze("run.pt.trace.json.gz")
    a.summary, a.findings          # the `gapscope analyze --format json` data
    a.gaps, a.steps, a.idle_by_cause, a.kernels, a.ops, a.launches   # polars DataFrames
    gapscope.report("run.pt.trace.json.gz", "report.html")

and, in a training loop, ``torch.profiler.profile(...,
on_trace_ready=gapscope.on_trace_ready("log"))`` to be told after each
profiling cycle why the GPUs sat idle in it. The ``gapscope`` command is
installed with the package.
"""

from ._gapscope import GapscopeError, __version__
from ._analysis import TABLES, Analysis, analyze, trace_files
from ._commands import export, report
from ._cli import executable
from ._torch import TraceHandler, on_trace_ready

__all__ = [
    "Analysis",
    "GapscopeError",
    "TABLES",
    "TraceHandler",
    "__version__",
    "analyze",
    "executable",
    "export",
    "on_trace_ready",
    "report",
    "trace_files",
]
