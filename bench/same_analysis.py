#!/usr/bin/env python3
"""Checks that a new gapscope build analyses every shared trace and every
fixture trace as an older build did.

    bench/same_analysis.py OLD_GAPSCOPE NEW_GAPSCOPE [--traces DIR]...

Runs `analyze --format json --quiet` (and the same with
`--exclude-last-step`) with both binaries on every `.json`, `.json.gz` and
`.gst` file under ../shared/traces and fixtures/, and compares the outputs.
The new output may add fields (a key missing from the old object); every
field the old one has must be present and equal, lists item by item. With
`--views`, the text output, the Markdown report and the Chrome export must
also be byte for byte the same. Prints one line per difference and exits 1
if there is any, else 0.
"""

import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
DEFAULT_DIRS = [os.path.join(ROOT, "..", "shared", "traces"), os.path.join(ROOT, "fixtures")]
# The TensorBoard plugin's metrics test input is a trace too; the expected
# file beside it is not.
SKIP = {"gpu_metrics_expected.json", "results.json"}


def traces(dirs):
    for d in dirs:
        for base, _, files in os.walk(d):
            for f in sorted(files):
                if f in SKIP:
                    continue
                if f.endswith((".json", ".json.gz", ".gst")) and not f.endswith(".jsonl"):
                    yield os.path.join(base, f)


def run(binary, path, extra):
    p = subprocess.run(
        [binary, "analyze", "--format", "json", "--quiet", *extra, path],
        capture_output=True,
        text=True,
    )
    return p.returncode, p.stdout, p.stderr.strip()


def view_outputs(binary, path, tmp):
    """The text output, Markdown report and Chrome export of `path`."""
    out = {}
    p = subprocess.run([binary, "analyze", "--quiet", path], capture_output=True)
    out["text"] = (p.returncode, p.stdout)
    p = subprocess.run([binary, "report", "--quiet", "--format", "md", "-o", "-", path], capture_output=True)
    out["report.md"] = (p.returncode, p.stdout)
    chrome = os.path.join(tmp, "chrome.json")
    p = subprocess.run([binary, "export", "--quiet", "--format", "chrome", "-o", chrome, path], capture_output=True)
    body = open(chrome, "rb").read() if p.returncode == 0 else b""
    out["export chrome"] = (p.returncode, body)
    return out


def compare(old, new, where, out):
    """Differences between `old` and `new`, where `new` may add object keys."""
    if isinstance(old, dict) and isinstance(new, dict):
        for k, v in old.items():
            if k not in new:
                out.append(f"{where}.{k}: missing in the new output")
            else:
                compare(v, new[k], f"{where}.{k}", out)
    elif isinstance(old, list) and isinstance(new, list):
        if len(old) != len(new):
            out.append(f"{where}: {len(old)} items before, {len(new)} now")
        for i, (a, b) in enumerate(zip(old, new)):
            compare(a, b, f"{where}[{i}]", out)
    elif old != new:
        out.append(f"{where}: {json.dumps(old)[:120]} before, {json.dumps(new)[:120]} now")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("--traces", action="append", help="directories to search (default: ../shared/traces, fixtures/)")
    ap.add_argument("--views", action="store_true", help="also compare text, Markdown report and Chrome export")
    args = ap.parse_args()
    files = list(traces(args.traces or DEFAULT_DIRS))
    if not files:
        print("no traces found", file=sys.stderr)
        return 2
    bad = 0
    runs = 0
    for path in files:
        for extra in ([], ["--exclude-last-step"]):
            runs += 1
            a, b = run(args.old, path, extra), run(args.new, path, extra)
            name = os.path.relpath(path, ROOT) + (" " + " ".join(extra) if extra else "")
            if a[0] != b[0]:
                print(f"{name}: exit {a[0]} before, {b[0]} now ({b[2][:200]})")
                bad += 1
                continue
            if a[0] != 0:
                if a[2] != b[2]:
                    print(f"{name}: error before: {a[2][:200]}; now: {b[2][:200]}")
                    bad += 1
                continue
            diffs = []
            compare(json.loads(a[1]), json.loads(b[1]), "$", diffs)
            for d in diffs[:20]:
                print(f"{name}: {d}")
            if len(diffs) > 20:
                print(f"{name}: ... {len(diffs) - 20} more differences")
            bad += bool(diffs)
    if args.views:
        import tempfile

        with tempfile.TemporaryDirectory() as tmp:
            for path in files:
                runs += 1
                a, b = view_outputs(args.old, path, tmp), view_outputs(args.new, path, tmp)
                name = os.path.relpath(path, ROOT)
                differ = [k for k in a if a[k] != b[k]]
                for k in differ:
                    print(f"{name}: {k} differs")
                bad += bool(differ)
    print(f"{runs} runs over {len(files)} traces: {bad} differ")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
