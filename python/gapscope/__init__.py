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

# Loaded on first use (PEP 562): the `gapscope` command's shim imports this
# package, and should not pay for loading the extension (and polars) before
# it hands over to the program.
_EXPORTS = {
    "Analysis": "._analysis",
    "GapscopeError": "._gapscope",
    "Job": "._job",
    "TABLES": "._analysis",
    "TraceHandler": "._torch",
    "__version__": "._gapscope",
    "analyze": "._api",
    "executable": "._cli",
    "export": "._commands",
    "on_trace_ready": "._torch",
    "report": "._commands",
    "trace_files": "._args",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'gapscope' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_EXPORTS))
