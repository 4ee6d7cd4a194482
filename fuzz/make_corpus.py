#!/usr/bin/env python3
"""Builds the cargo-fuzz seed corpus (fuzz/corpus/<target>/) from the real
traces: the same seeds the stable fuzzer (collectors/examples/fuzz_import.rs)
cuts, 8 small traces per .json/.json.gz file under the given folders (its
header keys and 1-24 consecutive events), never committed.

    python3 fuzz/make_corpus.py [--seed N] [--gapscope BIN] [DIR ...]
                                  # default DIRs: ../shared/traces fixtures

Standard library only. Writes:
  kineto_json/   the small traces, pretty-printed;
  kineto_gz/     each as 0x00 + JSON (the target compresses it) and, for one
                 in four, 0x01 + the gzip file itself (mutated as bytes);
  kineto_window/ 5 bytes choosing a time window + the JSON;
  capture/       0x80 or 0xc0 + the JSON (the target writes it as a .gst
                 capture); with --gapscope, also 0x00 + the capture that
                 `gapscope export --format gst` writes;
  cupti_decode/  0x80 + random bytes (the target builds records of known
                 kinds from them) and raw random buffers.
"""

import argparse
import gzip
import hashlib
import json
import os
import random
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def traces(dirs):
    for d in dirs:
        for root, _, files in os.walk(d):
            for f in sorted(files):
                if f.endswith(".json") or f.endswith(".json.gz"):
                    yield os.path.join(root, f)


def load(path):
    with open(path, "rb") as f:
        raw = f.read()
    if raw[:2] == b"\x1f\x8b":
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError):
            return None
    try:
        return json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        return None


def capture(gapscope, text):
    """`text` written as a .gst capture by `gapscope export`, or None."""
    with tempfile.TemporaryDirectory() as d:
        src, dst = os.path.join(d, "t.json"), os.path.join(d, "t.gst")
        with open(src, "wb") as f:
            f.write(text)
        r = subprocess.run([gapscope, "export", "--format", "gst", "-q", "-o", dst, src], capture_output=True)
        if r.returncode != 0 or not os.path.exists(dst):
            return None
        with open(dst, "rb") as f:
            return f.read()


def put(folder, data):
    os.makedirs(folder, exist_ok=True)
    name = hashlib.sha1(data).hexdigest()
    with open(os.path.join(folder, name), "wb") as f:
        f.write(data)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dirs", nargs="*")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", default=os.path.join(HERE, "corpus"))
    ap.add_argument("--gapscope", help="a gapscope binary, to add seeds that are captures")
    a = ap.parse_args()
    dirs = a.dirs or [os.path.join(HERE, "..", "..", "shared", "traces"), os.path.join(HERE, "..", "fixtures")]
    rng = random.Random(a.seed)
    n = 0
    for path in traces(dirs):
        doc = load(path)
        if isinstance(doc, list):
            doc = {"traceEvents": doc}
        if not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"), list):
            continue
        events = doc.pop("traceEvents")
        for _ in range(8):
            k = 1 + rng.randrange(24)
            at = rng.randrange(max(1, len(events) - k + 1))
            small = dict(doc)
            small["traceEvents"] = events[at : at + k]
            text = json.dumps(small, indent=2).encode()
            put(os.path.join(a.out, "kineto_json"), text)
            put(os.path.join(a.out, "kineto_gz"), b"\x00" + text)
            # A window somewhere in the first 65 ms, either end open.
            window = bytes([1 + rng.randrange(7)]) + rng.randbytes(4)
            put(os.path.join(a.out, "kineto_window"), window + text)
            if rng.randrange(4) == 0:
                put(os.path.join(a.out, "kineto_gz"), b"\x01" + gzip.compress(text, 1))
            put(os.path.join(a.out, "capture"), bytes([0x80 | rng.randrange(2) << 6]) + text)
            if a.gapscope:
                gst = capture(a.gapscope, text)
                if gst:
                    put(os.path.join(a.out, "capture"), b"\x00" + gst)
            n += 1
    for _ in range(64):
        size = 64 + rng.randrange(2048)
        put(os.path.join(a.out, "cupti_decode"), b"\x80" + rng.randbytes(size))
        put(os.path.join(a.out, "cupti_decode"), rng.randbytes(size))
    if n == 0:
        sys.exit(f"no trace found under {dirs}")
    print(f"{a.out}: {n} Kineto seeds, 128 CUPTI seeds")


if __name__ == "__main__":
    main()
