#!/usr/bin/env python3
"""Where each thread of one gapscope run spends its time, slice by slice:
the serial stretches (one thread busy, the other core idle) and what runs
in them, which a flat profile hides.

    perf record -F 2000 --call-graph dwarf,32768 -o run.data \\
        gapscope analyze --format json --quiet TRACE.json > /dev/null
    perf script -i run.data -F tid,time,ip,sym > run.script
    bench/perf_timeline.py run.script [--slice 0.01] [--from 0] [--depth 2]

One line per time slice (seconds since the first sample): for each thread
busy in it, its samples (at 2 kHz, 20 in a 10 ms slice means the thread
ran the whole slice) and the gapscope function it spent the most samples
in, with `--depth` of its callers. A slice whose total is well below
20 per core had an idle core. `--from` starts the listing there (say,
where the parse ends: printed first).
"""
import argparse
import collections
import re
import signal
import sys

HEAD = re.compile(r"\s*(\d+)\s+([\d.]+):\s*(?:[0-9a-f]+\s+(.*))?$")


def samples(lines):
    """(tid, time, frames innermost first) of each sample."""
    cur = None
    for line in lines:
        if not line.strip():
            if cur:
                yield cur
            cur = None
            continue
        m = HEAD.match(line)
        if m and cur is None:
            frames = [m.group(3).strip()] if m.group(3) else []
            cur = (int(m.group(1)), float(m.group(2)), frames)
            continue
        if cur is not None:
            parts = line.strip().split(None, 1)
            if len(parts) == 2:
                cur[2].append(parts[1])
    if cur:
        yield cur


def short(frame):
    frame = re.sub(r"<[^<>]*>|\{closure[^}]*\}|::\{\{closure\}\}", "", frame)
    frame = frame.replace("gapscope_analyzers::", "A::").replace("gapscope_collectors::", "C::")
    return frame.replace("gapscope::", "")[:60]


def where(frames, depth):
    ours = [short(f) for f in frames if "gapscope" in f and "(inlined)" not in f]
    if not ours:
        return frames[0][:40] if frames else "?"
    return " <- ".join(ours[:depth])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("script", help="`perf script -F tid,time,ip,sym` output of a --call-graph dwarf record")
    ap.add_argument("--slice", type=float, default=0.01, help="seconds per line (0.01)")
    ap.add_argument("--from", dest="start", type=float, default=None, help="first second shown (default: the parse's end)")
    ap.add_argument("--depth", type=int, default=2, help="callers shown per thread (2)")
    args = ap.parse_args()
    try:
        with open(args.script, errors="replace") as f:
            rows = list(samples(f))
    except OSError as e:
        sys.exit(f"{args.script}: cannot read ({e.strerror}); give the output of `perf script`")
    if not rows:
        sys.exit(f"{args.script}: no samples; record with --call-graph dwarf and write it with "
                 "`perf script -F tid,time,ip,sym`")
    t0 = min(t for _, t, _ in rows)
    parse_end = max((t - t0 for _, t, fr in rows if any("parse_chunk" in f for f in fr)), default=0.0)
    print(f"{len(rows)} samples over {max(t for _, t, _ in rows) - t0:.3f} s; the parse's last sample at {parse_end:.3f} s")
    start = parse_end if args.start is None else args.start
    by_slice = collections.defaultdict(lambda: collections.defaultdict(collections.Counter))
    for tid, t, frames in rows:
        if t - t0 >= start:
            by_slice[int((t - t0) / args.slice)][tid][where(frames, args.depth)] += 1
    for k in sorted(by_slice):
        threads = sorted(by_slice[k].items())
        cells = [f"{tid % 1000}:{sum(c.values())} {c.most_common(1)[0][0]}" for tid, c in threads]
        print(f"{k * args.slice:.3f}", " || ".join(cells))


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `| head` ends it quietly
    main()
