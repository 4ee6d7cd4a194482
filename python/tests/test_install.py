"""What `pip install gapscope-*.whl` gives: the module (not the source
tree), the `gapscope` command on PATH, and `record` with the injection
library shipped in the wheel."""

import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import gapscope

from conftest import ROOT


def test_the_module_is_the_installed_wheel():
    site = Path(sysconfig.get_paths()["purelib"]).resolve()
    assert Path(gapscope.__file__).resolve().is_relative_to(site), gapscope.__file__
    assert gapscope.__version__ == "0.1.0"


def test_the_command_is_on_path_and_is_gapscope(cli):
    out = subprocess.run([cli, "--version"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == f"gapscope {gapscope.__version__}"
    demo = subprocess.run([cli, "analyze", "--demo", "--format", "json"], capture_output=True, text=True)
    assert demo.returncode == 0, demo.stderr
    assert '"schema_version": 1' in demo.stdout


def test_record_uses_the_injection_library_in_the_wheel(cli, tmp_path):
    # The injection library in self-test mode (a stand-in for CUPTI) in a
    # stand-in CUDA program: the whole record path without a GPU, with no
    # GAPSCOPE_INJECT_LIB, so the library must be found next to the
    # program inside the installed package.
    host = tmp_path / "host"
    subprocess.run(["cc", "-O1", "-o", str(host), str(ROOT / "collectors/inject/tests/host.c"), "-ldl"], check=True)
    cupti = tmp_path / "libcupti.so.13"
    cupti.write_bytes(b"")
    env = {k: v for k, v in os.environ.items() if not k.startswith("GAPSCOPE_")}
    env.update(GAPSCOPE_CUPTI_LIBS=str(cupti), GAPSCOPE_INJECT_SELFTEST="1")
    out = subprocess.run([cli, "record", "-o", "two.gst", "--", str(host), "0", "spawn"], cwd=tmp_path, env=env,
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.count("InitializeInjection returned 1") == 2, out.stdout
    assert "gapscope: recorded 2 processes" in out.stderr
    a = gapscope.analyze(tmp_path / "two.gst")
    assert a.summary["source"]["format"] == "gapscope-capture"
    assert a.summary["diagnostics"]["rows"]["gpu"] == 4
    assert a.kernels.height == 4


def test_python_m_gapscope_cli_runs_the_same_program():
    out = subprocess.run([sys.executable, "-m", "gapscope._cli", "--version"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("gapscope ")


def test_the_command_does_not_load_the_extension():
    # The shim hands over to the program without loading the extension or
    # polars (about 0.2 s of start-up per command otherwise).
    code = "import sys, gapscope._cli; print(sorted(m for m in sys.modules if m.startswith(('gapscope', 'polars'))))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "['gapscope', 'gapscope._cli']"


def test_the_error_type_is_gapscopes():
    assert gapscope.GapscopeError.__module__ == "gapscope"
    assert issubclass(gapscope.GapscopeError, Exception)
    assert set(gapscope.__all__) <= set(dir(gapscope))
