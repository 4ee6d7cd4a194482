#!/usr/bin/env python3
"""Checks that two gapscope builds export the same timeline: each trace is
exported to Perfetto by both, loaded into the real trace processor
(../shared/tools/perfetto-check), and every slice (track, times, depth,
name, category, parent), flow, counter sample, arg and track (name, parent,
kind) of the two loads is compared, together with the stats above zero.
The files' bytes may differ (packet order, sequences, uuids); what the
trace processor loads must not. Left out: how long its parsing took, and
`legacy_event.passthrough_utid`, the trace processor's own note of which
thread a packet sequence's events default to.

    bench/same_export.py REF_BIN NEW_BIN [TRACE...]

Without TRACEs: every shared trace and fixture trace (a file both builds
refuse the same way counts as the same). Prints one line per
trace that differs (and the first differing rows) and exits 1 if any does.
"""

import glob
import hashlib
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
QUERY = os.path.join(REPO, "..", "shared", "tools", "perfetto-check", "query.sh")

# Tracks are named by their own name or their thread's, and by their
# parent's, so uuids (which may differ) never enter a comparison.
TRACK_NAME = "coalesce(t.name, th.name, 'tid ' || th.tid, p.name, 'pid ' || p.pid, '')"
QUERIES = {
    "tracks": f"""
        select {TRACK_NAME} as name, t.type as type,
               coalesce(pt.name, '') as parent, count(*) as n
        from track t
        left join thread_track tt using (id) left join thread th using (utid)
        left join process_track ptk on ptk.id = t.id left join process p on p.upid = ptk.upid
        left join track pt on pt.id = t.parent_id
        group by 1, 2, 3 order by 1, 2, 3""",
    "slices": f"""
        select {TRACK_NAME} as track, s.ts, s.dur, s.depth, s.name, s.category,
               coalesce(ps.name, '') as parent
        from slice s join track t on s.track_id = t.id
        left join thread_track tt on tt.id = t.id left join thread th using (utid)
        left join process_track ptk on ptk.id = t.id left join process p on p.upid = ptk.upid
        left join slice ps on ps.id = s.parent_id
        order by 1, 2, 3, 4, 5, 6, 7""",
    "flows": """
        select so.name as src, so.ts as src_ts, si.name as dst, si.ts as dst_ts
        from flow f join slice so on f.slice_out = so.id join slice si on f.slice_in = si.id
        order by 1, 2, 3, 4""",
    "counters": """
        select t.name, c.ts, c.value from counter c join counter_track t on c.track_id = t.id
        order by 1, 2, 3""",
    "args": """
        select s.name, s.ts, s.dur, a.key, a.display_value
        from slice s join args a on a.arg_set_id = s.arg_set_id
        where a.key != 'legacy_event.passthrough_utid'
        order by 1, 2, 3, 4, 5""",
    "stats": """
        select name, idx, severity, value from stats
        where value > 0 and name not like '%duration_ns' and name != 'clock_sync_cache_miss'
        order by 1, 2""",
}


def load(gapscope, trace, out):
    """What the trace processor loads from `gapscope export` of `trace`,
    or, when gapscope refuses the file, its exit status and message."""
    res = subprocess.run(
        [gapscope, "export", "--quiet", "-o", out, trace], capture_output=True, text=True
    )
    if res.returncode != 0:
        return {"refused": [res.returncode, res.stderr.replace(out, "OUT")]}
    # To a file: node cuts a pipe short when the trace processor exits.
    with open(out + ".rows", "w") as rows:
        subprocess.run([QUERY, out, *QUERIES.values()], check=True, stdout=rows)
    with open(out + ".rows") as rows:
        lines = [json.loads(x) for x in rows if x.strip()]
    # The first line is the load's (trace, bytes, load_ms).
    return {q: line["rows"] for q, line in zip(QUERIES, lines[1:])}


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    ref, new, traces = sys.argv[1], sys.argv[2], sys.argv[3:]
    if not traces:
        traces = sorted(
            glob.glob(os.path.join(REPO, "..", "shared", "traces", "**", "*.json*"), recursive=True)
            + glob.glob(os.path.join(REPO, "fixtures", "**", "*.json*"), recursive=True)
        )
    bad = 0
    with tempfile.TemporaryDirectory() as tmp:
        for trace in traces:
            name = os.path.relpath(trace, REPO)
            try:
                a = load(ref, trace, os.path.join(tmp, "ref.pftrace"))
                b = load(new, trace, os.path.join(tmp, "new.pftrace"))
            except subprocess.CalledProcessError as e:
                print(f"{name}: export or load failed: {e}")
                bad += 1
                continue
            if "refused" in a or "refused" in b:
                same = a == b
                print(f"{name}: {'same' if same else 'differs'}: refused {a.get('refused')} / {b.get('refused')}")
                bad += not same
                continue
            diff = [q for q in QUERIES if a[q] != b[q]]
            sizes = {q: len(a[q]) for q in ("slices", "flows", "counters", "args")}
            digest = hashlib.sha256(json.dumps(b, sort_keys=True).encode()).hexdigest()[:12]
            if diff:
                bad += 1
                print(f"{name}: differs in {', '.join(diff)}")
                for q in diff:
                    only_a = [r for r in a[q] if r not in b[q]][:3]
                    only_b = [r for r in b[q] if r not in a[q]][:3]
                    print(f"  {q}: ref only {only_a}\n  {q}: new only {only_b}")
            else:
                print(f"{name}: same ({sizes}, {digest})")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
