#!/usr/bin/env bash
# The README's test command: installs what the tests need when it is
# missing (Chromium; node, npm and the Perfetto trace processor; the
# libcupti and NVTX wheels; venvs with pyarrow, Dask, PyTorch and maturin),
# then runs every test: the workspace, the feature tests (parquet, torch,
# cupti), the Dask recipe and the Python package's pytest suite. Run it from
# anywhere; it works from a fresh machine (Debian or Ubuntu, as root for
# apt-get when Chromium or node are missing) and takes cargo's
# CARGO_TARGET_DIR as it finds it. Downloads are cached under
# ~/.cache (GAPSCOPE_*_CACHE / GAPSCOPE_*_VENV move them).
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"
# Where the workspace run below builds the binary the recipe test runs.
target_dir="${CARGO_TARGET_DIR:-$PWD/target}"
# The report's browser test (tests/report_browser.rs) loads our HTML in
# headless Chromium: install Debian's package when missing.
if ! command -v chromium >/dev/null 2>&1; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
fi
# The export tests load our .pftrace files into the real Perfetto trace
# processor (../shared/tools/perfetto-check: Google's wasm build from npm,
# run by node). Install node/npm from Debian when missing, then fetch and
# checksum the trace processor once, so a failure shows here and not as a
# test panic.
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null
fi
bash ../shared/tools/perfetto-check/setup.sh
# CUPTI oracle (collectors/tests/cupti_oracle.rs): NVIDIA's libcupti from the
# PyPI wheels walks the decoder's test buffers. Downloaded once into a cache
# outside the clone, never committed; the test fails under CI=true without it.
cupti_lib_dir="${GAPSCOPE_CUPTI_CACHE:-$HOME/.cache/gapscope-cupti}/lib"
if [ ! -f "$cupti_lib_dir/libcupti.so.13" ] || [ ! -f "$cupti_lib_dir/libcupti.so.12" ]; then
  cupti_tmp="$(mktemp -d)"
  if pip download --quiet --no-deps --disable-pip-version-check -d "$cupti_tmp" \
      nvidia-cuda-cupti==13.0.85 nvidia-cuda-cupti-cu12==12.9.79 >/dev/null; then
    mkdir -p "$cupti_lib_dir"
    python3 - "$cupti_tmp" "$cupti_lib_dir" <<'PY'
import glob, os, shutil, sys, zipfile
src, dst = sys.argv[1:]
for whl in glob.glob(os.path.join(src, "*.whl")):
    with zipfile.ZipFile(whl) as z:
        for name in z.namelist():
            base = os.path.basename(name)
            if base in ("libcupti.so.12", "libcupti.so.13"):
                with z.open(name) as f, open(os.path.join(dst, base + ".part"), "wb") as out:
                    shutil.copyfileobj(f, out)
                os.replace(os.path.join(dst, base + ".part"), os.path.join(dst, base))
PY
  else
    echo "warning: could not download the libcupti wheels; cupti_oracle will fail" >&2
  fi
  rm -rf "$cupti_tmp"
fi
export GAPSCOPE_CUPTI_LIBS="$cupti_lib_dir/libcupti.so.13:$cupti_lib_dir/libcupti.so.12"
# gapscope record's injection library (collectors/inject; a workspace member
# outside default-members, so the workspace run below tests it and, through
# feature unification, the live collector): its NVTX test needs NVTX's own
# loader, libnvtx3interop.so.1 from the nvidia-nvtx wheel (148 KB), fetched
# into the same cache; tests/record_cli.rs needs the cdylib next to the
# gapscope binary, so it is built first.
if [ ! -f "$cupti_lib_dir/libnvtx3interop.so.1" ]; then
  nvtx_tmp="$(mktemp -d)"
  if pip download --quiet --no-deps --disable-pip-version-check -d "$nvtx_tmp" nvidia-nvtx==13.0.85 >/dev/null; then
    mkdir -p "$cupti_lib_dir"
    python3 - "$nvtx_tmp" "$cupti_lib_dir" <<'PY'
import glob, os, shutil, sys, zipfile
src, dst = sys.argv[1:]
for whl in glob.glob(os.path.join(src, "*.whl")):
    with zipfile.ZipFile(whl) as z:
        for name in z.namelist():
            if os.path.basename(name) == "libnvtx3interop.so.1":
                part = os.path.join(dst, "libnvtx3interop.so.1.part")
                with z.open(name) as f, open(part, "wb") as out:
                    shutil.copyfileobj(f, out)
                os.replace(part, os.path.join(dst, "libnvtx3interop.so.1"))
PY
  else
    echo "warning: could not download the nvidia-nvtx wheel; the injection's NVTX test will fail" >&2
  fi
  rm -rf "$nvtx_tmp"
fi
cargo build -p gapscope-inject --locked
cargo test --workspace --locked
# Parquet export (feature `parquet`, docs/parquet.md): its tests read the
# files back with pyarrow, installed once into a small venv outside the clone.
PYARROW_VENV="${GAPSCOPE_PYARROW_VENV:-$HOME/.cache/gapscope-pyarrow}"
if ! "$PYARROW_VENV/bin/python" -c 'import pyarrow, sys; sys.exit(pyarrow.__version__ != "26.0.1")' 2>/dev/null; then
  python3 -m venv "$PYARROW_VENV" 2>/dev/null || {
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null
    python3 -m venv "$PYARROW_VENV"
  }
  "$PYARROW_VENV/bin/pip" install -q --disable-pip-version-check --no-cache-dir pyarrow==26.0.1
fi
export GAPSCOPE_PYARROW_PYTHON="$PYARROW_VENV/bin/python"
cargo test -p gapscope --features parquet --bin gapscope --test export_parquet --test job_parquet --locked
# The distributed recipe (recipes/dask, docs/distributed.md): Dask
# distributed in a small venv outside the clone (70 MB), then the recipe's
# test on a local cluster of 2 worker processes, with the binary the line
# above built (it has the `parquet` feature `gapscope summarize` needs).
DASK_VENV="${GAPSCOPE_DASK_VENV:-$HOME/.cache/gapscope-dask}"
if ! "$DASK_VENV/bin/python" -c 'import distributed, sys; sys.exit(distributed.__version__ != "2026.8.0")' 2>/dev/null; then
  python3 -m venv "$DASK_VENV" 2>/dev/null || {
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null
    python3 -m venv "$DASK_VENV"
  }
  "$DASK_VENV/bin/pip" install -q --disable-pip-version-check --no-cache-dir distributed==2026.8.0
fi
"$DASK_VENV/bin/python" recipes/dask/test_recipe.py --gapscope "$target_dir/debug/gapscope"
# The model runner (feature `torch`: `gapscope bench`, the operator observer,
# docs/torch.md) links libtorch from PyTorch 2.11.0's pip wheel, installed
# once into a venv outside the clone: torch alone (--no-deps: no cuDNN,
# cuBLAS, NCCL or triton, 1.3 GB instead of 4.6 GB) plus the two CUDA
# libraries libtorch_cpu.so needs even on a CPU.
TORCH_VENV="${GAPSCOPE_TORCH_VENV:-$HOME/.cache/gapscope-torch}"
if [ ! -x "$TORCH_VENV/bin/python" ]; then
  python3 -m venv "$TORCH_VENV" 2>/dev/null || {
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null
    python3 -m venv "$TORCH_VENV"
  }
fi
TORCH_SITE="$("$TORCH_VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
if ! ls -d "$TORCH_SITE"/torch-2.11.0.dist-info "$TORCH_SITE"/nvidia_cuda_runtime-13.0.96.dist-info \
  "$TORCH_SITE"/nvidia_cuda_cupti-13.0.85.dist-info >/dev/null 2>&1; then
  "$TORCH_VENV/bin/pip" install -q --disable-pip-version-check --no-cache-dir --no-deps \
    torch==2.11.0 nvidia-cuda-runtime==13.0.96 nvidia-cuda-cupti==13.0.85
fi
export LIBTORCH="$TORCH_SITE/torch"
# Only the crates with torch code: the observer and models (collectors) and
# the CLI's bench tests. One OpenMP thread: libgomp spin-waits on a busy box.
OMP_NUM_THREADS=1 LD_LIBRARY_PATH="$LIBTORCH/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
  cargo test -p gapscope-collectors --features torch --test torch_models --locked
OMP_NUM_THREADS=1 LD_LIBRARY_PATH="$LIBTORCH/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
  cargo test -p gapscope --features torch --test bench_cli --locked
# The live CUPTI collector (feature `cupti`, cudarc): on this GPU-less
# machine, its missing-library and no-driver paths, with the libcupti
# libraries fetched above.
cargo test -p gapscope-collectors --features cupti --test cupti_live --locked
# The injection library (collectors/inject/tests) and `gapscope record`
# (tests/record_cli.rs) ran in the workspace pass above, against the cdylib
# built before it.
# The Python package (python/: `pip install gapscope`, python/README.md).
# The wheel is built in the dev profile (polars unoptimised, see
# python/Cargo.toml) into the same target dir, so the command-line program
# and injection library that go inside it are the ones built above. It is
# installed into a fresh venv with polars, pandas, pyarrow and pytest; torch
# (for on_trace_ready in a real torch.profiler run) comes from the torch venv
# above through a .pth file, with its pure-Python dependencies installed in
# the fresh venv, so the 1.3 GB wheel is not fetched twice. `import torch`,
# unlike the libtorch_cpu that tch links, loads every CUDA library torch is
# linked against, even on a CPU: those wheels (2.2 GB installed) go into the torch
# venv once.
TORCH_IMPORT_LIBS="nvidia-cublas==13.1.0.3 nvidia-cufft==12.0.0.61 nvidia-cufile==1.15.1.6 \
  nvidia-curand==10.4.0.35 nvidia-cusparse==12.6.3.3 nvidia-nvjitlink==13.0.88 nvidia-cudnn-cu13==9.19.0.56 \
  nvidia-cusparselt-cu13==0.8.0 nvidia-nccl-cu13==2.28.9 nvidia-nvshmem-cu13==3.4.5"
for pkg in $TORCH_IMPORT_LIBS; do
  dist="$(echo "${pkg%%==*}" | tr - _)-${pkg##*==}.dist-info"
  if [ ! -d "$TORCH_SITE/$dist" ]; then
    # shellcheck disable=SC2086
    "$TORCH_VENV/bin/pip" install -q --disable-pip-version-check --no-cache-dir --no-deps $TORCH_IMPORT_LIBS
    break
  fi
done
# `bench --nvtx` on real libtorch (libtorch's NVTX state through
# libtorch_cuda's profiler stubs): needs the CUDA libraries just installed.
OMP_NUM_THREADS=1 LD_LIBRARY_PATH="$LIBTORCH/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
  cargo test -p gapscope-collectors --features torch --test torch_nvtx --locked
MATURIN_VENV="${GAPSCOPE_MATURIN_VENV:-$HOME/.cache/gapscope-maturin}"
if ! "$MATURIN_VENV/bin/maturin" --version 2>/dev/null | grep -qx 'maturin 1.16.0'; then
  python3 -m venv "$MATURIN_VENV"
  "$MATURIN_VENV/bin/pip" install -q --disable-pip-version-check --no-cache-dir maturin==1.16.0
fi
wheel_dir="$(mktemp -d)"
MATURIN="$MATURIN_VENV/bin/maturin" python/build_wheel.sh -o "$wheel_dir"
PY_VENV="$(mktemp -d)/venv"
python3 -m venv "$PY_VENV"
"$PY_VENV/bin/pip" install -q --disable-pip-version-check "$wheel_dir"/gapscope-*.whl \
  polars==2.1.0 pandas==3.1.1 pyarrow==26.0.1 pytest==9.2.0 \
  filelock==4.2.12 typing-extensions==4.16.0 sympy==1.14.0 mpmath==1.3.0 networkx==3.6.1 jinja2==3.1.6 \
  markupsafe==3.0.4 fsspec==2026.9.0
"$PY_VENV/bin/python" -c 'import sysconfig, sys; print(sys.argv[1])' "$TORCH_SITE" \
  > "$("$PY_VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/gapscope-ci-torch.pth"
# From python/tests, so that the source tree's gapscope/ is not on sys.path:
# the tests import the installed wheel (and check that they do).
(cd python/tests && OMP_NUM_THREADS=1 PATH="$PY_VENV/bin:$PATH" "$PY_VENV/bin/pytest" -q -p no:cacheprovider .)
rm -rf "$wheel_dir" "$(dirname "$PY_VENV")"
