"""The inline view of an Analysis in Jupyter: the report's summary (per
device, where the window's time went and why it was idle) and its findings,
as one HTML fragment with its own scoped styles."""

from __future__ import annotations

from html import escape
from typing import Any, Dict

from ._diagnosis import ms

# The report's colours for the breakdown's parts.
_PARTS = (
    ("compute_ns", "compute", "#4e79a7"),
    ("communication_ns", "communication", "#f28e2b"),
    ("memcpy_ns", "memcpy", "#59a14f"),
    ("memset_ns", "memset", "#76b7b2"),
    ("idle_ns", "idle", "#e15759"),
)


def _pct(part: int, whole: int) -> str:
    return f"{part / whole:.1%}" if whole > 0 else "n/a"


def summary_html(s: Dict[str, Any], max_findings: int = 10) -> str:
    w = s["window"]
    e = escape
    out = ['<div class="gapscope-summary" style="font-family:system-ui,sans-serif;font-size:13px">']
    out.append(
        f"<div><b>gapscope</b> · {e(s['source']['path'])} · window {ms(w['duration_ns'])}"
        f" ({e(w['basis'])}{', steps ' + e(', '.join(map(str, w['steps_selected']))) if w['steps_selected'] else ''})</div>"
    )
    if not s["devices"]:
        out.append("<p>No GPU activity in the analysed window.</p>")
    for d in s["devices"]:
        b = d["breakdown"]
        total = b["window_ns"]
        bar = "".join(
            f'<span title="{label} {ms(b[key])} ({_pct(b[key], total)})" style="display:inline-block;height:12px;'
            f'width:{100 * b[key] / total if total else 0:.3f}%;background:{colour}"></span>'
            for key, label, colour in _PARTS
        )
        legend = " · ".join(f"{label} {_pct(b[key], total)}" for key, label, _ in _PARTS)
        causes = sorted(((ns, c) for c, ns in d["idle_by_cause_ns"].items() if ns > 0), reverse=True)
        cause_text = ", ".join(f"{e(c)} {ms(ns)} ({_pct(ns, total)})" for ns, c in causes) or "none"
        out.append(
            f"<div style='margin-top:6px'><b>GPU {d['device']}</b> {e(d['name'])}: idle "
            f"<b>{_pct(b['idle_ns'], total)}</b> of {ms(total)}"
            f"<div style='width:100%;max-width:640px;white-space:nowrap;font-size:0'>{bar}</div>"
            f"<div>{legend}</div><div>idle by cause: {cause_text}</div></div>"
        )
    findings = s["findings"]
    if findings:
        rows = []
        cell = "padding:4px 8px;vertical-align:top;border-top:1px solid #ddd"
        for i, f in enumerate(findings[:max_findings], 1):
            at = f.get("source") or f.get("operator") or f.get("annotation") or ""
            saves = f["est_savings_ns"]
            bound = f.get("savings_bound_ns")
            limit = f"; at most {ms(bound)}" if bound else ""
            if not f.get("primary", True):
                # A context finding saves nothing of its own.
                saving = f"<span style='color:#666'>context, not idle time{limit}</span>"
            elif f["estimable"] and saves > 0:
                saving = f"{ms(saves)}<br><span style='color:#666'>{_pct(saves, w['duration_ns'])} of the window</span>"
            elif f["estimable"]:
                # The replay's estimate: the step is no shorter without it.
                saving = "<span style='color:#666'>nothing on its own</span>"
            else:
                saving = f"<span style='color:#666'>not estimable{limit}</span>"

            rows.append(
                f"<tr><td style='{cell}'>{i}</td>"
                f"<td style='{cell}'>{e(f['title'])}<div style='color:#555;margin-top:2px'>{e(f['hint'])}</div></td>"
                f"<td style='{cell};white-space:nowrap;text-align:right'>{saving}</td>"
                f"<td style='{cell};min-width:200px;max-width:320px;overflow-wrap:anywhere'><code>{e(at)}</code>"
                f"<div style='color:#666'>{e(f['detector'])} · GPU {f['device']}</div></td></tr>"
            )
        more = f"<div>… and {len(findings) - max_findings} more in .findings</div>" if len(findings) > max_findings else ""
        head = "padding:4px 8px;text-align:left"
        out.append(
            "<table style='margin-top:8px;border-collapse:collapse;max-width:1000px'><thead><tr>"
            f"<th style='{head}'>#</th><th style='{head}'>finding and what to change</th>"
            f"<th style='{head}'>est. savings</th><th style='{head}'>where</th></tr></thead><tbody>"
            + "".join(rows) + "</tbody></table>" + more
        )
    else:
        out.append("<p>No findings.</p>")
    out.append("</div>")
    return "".join(out)
