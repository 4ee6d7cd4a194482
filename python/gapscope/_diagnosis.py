"""The few lines that say why a trace's GPUs sat idle: what
`on_trace_ready` prints after each profiling cycle."""

from __future__ import annotations

from typing import Any, Dict, List


def ms(ns: int) -> str:
    """`12.345 ms`."""
    return f"{ns / 1e6:.3f} ms"


def _share(part: int, whole: int) -> str:
    return f"{part / whole:.1%}" if whole > 0 else "n/a"


def lines(summary: Dict[str, Any], top: int = 3) -> List[str]:
    """The diagnosis of one analysis: per device its idle share and top
    causes, then the top findings with their estimated savings and hints."""
    w = summary["window"]
    steps = w["steps_selected"]
    where = f"steps {steps[0]}-{steps[-1]}" if len(steps) > 1 else (f"step {steps[0]}" if steps else "whole trace")
    out = []
    if not summary["devices"]:
        out.append(f"{where}, {ms(w['duration_ns'])}: no GPU activity in the trace")
    for d in summary["devices"]:
        b = d["breakdown"]
        causes = sorted(((ns, c) for c, ns in d["idle_by_cause_ns"].items() if ns > 0), reverse=True)[:top]
        cause_text = ", ".join(f"{c} {_share(ns, b['window_ns'])}" for ns, c in causes)
        out.append(
            f"{where}, GPU {d['device']}: idle {_share(b['idle_ns'], b['window_ns'])} of {ms(b['window_ns'])}"
            + (f" ({cause_text})" if cause_text else "")
        )
    for i, f in enumerate(summary["findings"][:top], 1):
        at = f.get("source") or f.get("operator") or f.get("annotation")
        saves = f["est_savings_ns"]
        text = f"  {i}. {f['title']}"
        if not f.get("primary", True):
            text += " (context, not idle time)"
        elif saves > 0:
            text += f" (saves ~{ms(saves)}, {_share(saves, w['duration_ns'])})"
        elif f.get("estimable", True):
            text += " (saves nothing on its own)"
        elif f.get("savings_bound_ns"):
            text += f" (saving not estimable; at most {ms(f['savings_bound_ns'])})"
        if at:
            text += f" at {at}"
        out.append(text)
        if f.get("hint"):
            out.append(f"     fix: {f['hint']}")
    return out
