#!/usr/bin/env bash
# Builds the gapscope wheel: the command-line program and the injection
# library that `gapscope record` loads (built by the main workspace), copied
# into the package, then the Python extension with maturin.
#
#   python/build_wheel.sh [--release] [-o DIR]     (default: dev profile, dist/)
#
# Needs cargo and maturin (`pip install maturin`; $MATURIN names another).
# CARGO_TARGET_DIR is honoured, so a target dir kept outside the clone makes
# repeated builds incremental.
set -euo pipefail
profile=dev
out=dist
while [ $# -gt 0 ]; do
  case "$1" in
    --release) profile=release ;;
    -o) out="$2"; shift ;;
    *) echo "usage: python/build_wheel.sh [--release] [-o DIR]" >&2; exit 2 ;;
  esac
  shift
done
cd "$(dirname "$0")/.."
root="$PWD"
target="${CARGO_TARGET_DIR:-$root/target}"
dir=debug
[ "$profile" = release ] && dir=release
# --workspace: the program as `cargo test --workspace` builds it (features
# unified with the injection library), so CI reuses what its tests built.
cargo build --locked --profile "$profile" --workspace
bin="$root/python/gapscope/_bin"
rm -rf "$bin"
mkdir -p "$bin"
cp "$target/$dir/gapscope" "$target/$dir/libgapscope_inject.so" "$bin/"
# Debug info out of the copies (a dev build's is hundreds of MB); symbols
# stay, so backtraces still name functions.
strip --strip-debug "$bin/gapscope" "$bin/libgapscope_inject.so"
case "$out" in /*) ;; *) out="$root/$out" ;; esac
"${MATURIN:-maturin}" build --locked --profile "$profile" -m python/Cargo.toml -o "$out"
