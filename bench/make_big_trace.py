#!/usr/bin/env python3
"""Makes a big Kineto trace by replicating a real one end to end.

    python3 bench/make_big_trace.py SOURCE.json[.gz] OUT.json [--target-mb 525]

Standard library only. The source (a real PyTorch profiler trace with
ProfilerSteps, e.g. ../shared/traces/hta/trace_diff/control/control.json.gz)
is copied N times, N chosen so the output reaches --target-mb. Copy k gets:

* every timestamp shifted by k x (span + 1 ms), span = last end - first start;
* correlation ids, flow ids (`id`), `External id`, `Profiler Event Index`,
  `Ev Idx` and `Sequence number` offset by k x 10^7 (above any id in the
  source: checked), so every kernel still has exactly one launch and every op
  its own external id;
* ProfilerStep numbers shifted by k x (number of steps in the source).

Metadata events (`ph: M`) are written once, from the first copy. The header
keys (deviceProperties, distributedInfo, ...) are kept. Output: one event per
line, json.dumps with default separators (the layout HTA's own synthetic
trace used). Prints the size and event count.
"""

import argparse
import gzip
import json
import math
import os
import re
import sys

ID_STRIDE = 10**7
ID_ARGS = ("correlation", "External id", "external id", "Profiler Event Index", "Ev Idx", "Sequence number")
STEP = re.compile(r"^ProfilerStep#(\d+)$")


def load(path):
    with open(path, "rb") as f:
        magic = f.read(2)
    opener = gzip.open if magic == b"\x1f\x8b" else open
    with opener(path, "rt", encoding="utf-8") as f:
        return json.load(f)


def span_of(events):
    starts = [e["ts"] for e in events if e.get("ph") != "M" and isinstance(e.get("ts"), (int, float))]
    ends = [e["ts"] + e.get("dur", 0) for e in events if e.get("ph") != "M" and isinstance(e.get("ts"), (int, float))]
    return min(starts), max(ends)


def check_ids(events):
    top = 0
    for e in events:
        if isinstance(e.get("id"), int):
            top = max(top, e["id"])
        for k in ID_ARGS:
            v = e.get("args", {}).get(k)
            if isinstance(v, int):
                top = max(top, v)
    if top >= ID_STRIDE:
        sys.exit(f"an id in the source ({top}) is >= {ID_STRIDE}: raise ID_STRIDE")


def shifted(e, k, dt, nsteps):
    """Copy k of event e."""
    if k == 0:
        return e
    e = dict(e)
    ts = e.get("ts")
    if isinstance(ts, int):
        e["ts"] = ts + k * dt
    elif isinstance(ts, float):
        e["ts"] = round(ts + k * dt, 3)
    if isinstance(e.get("id"), int):
        e["id"] = e["id"] + k * ID_STRIDE
    args = e.get("args")
    if args:
        args = dict(args)
        for key in ID_ARGS:
            v = args.get(key)
            if isinstance(v, int) and v >= 0:
                args[key] = v + k * ID_STRIDE
        e["args"] = args
    name = e.get("name")
    if isinstance(name, str) and name.startswith("ProfilerStep#"):
        m = STEP.match(name)
        if m:
            e["name"] = f"ProfilerStep#{int(m.group(1)) + k * nsteps}"
    return e


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("source")
    ap.add_argument("out")
    ap.add_argument("--target-mb", type=float, default=525.0, help="output size in MB (10^6 bytes)")
    a = ap.parse_args()

    doc = load(a.source)
    if isinstance(doc, list):
        doc = {"traceEvents": doc}
    events = doc["traceEvents"]
    check_ids(events)
    meta = [e for e in events if e.get("ph") == "M"]
    body = [e for e in events if e.get("ph") != "M"]
    first, last = span_of(body)
    dt = (last - first) + 1000  # µs: span + 1 ms
    if isinstance(dt, float):
        dt = math.ceil(dt)
    steps = {int(m.group(1)) for e in body if (m := STEP.match(str(e.get("name", ""))))}
    nsteps = (max(steps) - min(steps) + 1) if steps else 0

    header = {k: v for k, v in doc.items() if k != "traceEvents"}
    head = json.dumps(header)[:-1]  # without the closing brace
    head = (head + ", " if header else "{") + '"traceEvents": [\n'

    one_copy = sum(len(json.dumps(e)) + 2 for e in body)
    copies = max(1, math.ceil((a.target_mb * 1e6 - len(head)) / one_copy))

    tmp = a.out + ".part"
    n = 0
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(head)
        sep = ""
        for e in meta:
            f.write(sep + json.dumps(e))
            sep = ",\n"
            n += 1
        for k in range(copies):
            lines = [json.dumps(shifted(e, k, dt, nsteps)) for e in body]
            f.write(sep + ",\n".join(lines))
            sep = ",\n"
            n += len(lines)
        f.write("\n]}\n")
    os.replace(tmp, a.out)
    size = os.path.getsize(a.out)
    print(f"{a.out}: {size} bytes ({size / 1e6:.2f} MB), {n} events, {copies} copies of {len(body)} events "
          f"+ {len(meta)} metadata, {len(steps) * copies} ProfilerSteps")


if __name__ == "__main__":
    main()
