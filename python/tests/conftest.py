"""Shared paths for the wheel's tests. They run against the installed
wheel (never the source tree) and read the real traces in
../shared/traces beside the checkout."""

import os
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TRACES = ROOT.parent / "shared" / "traces"


@pytest.fixture(scope="session")
def traces() -> Path:
    assert TRACES.is_dir(), f"the shared traces are missing: {TRACES} (they sit beside the checkout)"
    return TRACES


@pytest.fixture(scope="session")
def cli() -> str:
    """The `gapscope` command the wheel put on the venv's PATH."""
    exe = Path(sys.executable).parent / "gapscope"
    assert exe.exists(), f"the wheel installed no gapscope command next to {sys.executable}"
    return str(exe)
