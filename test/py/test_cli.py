"""The llvmaccel command line."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import GATHER_IR


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "llvmaccel", *args],
                          capture_output=True, text=True, timeout=120)


def test_plugin_path():
    import llvmaccel

    out = run("plugin-path")
    assert out.returncode == 0
    assert out.stdout.strip() == llvmaccel.plugin_path()


def test_passes_listing_and_json():
    out = run("passes")
    assert out.returncode == 0 and "accel-prefetch" in out.stdout
    catalog = json.loads(run("passes", "--json").stdout)
    assert catalog[0]["name"] == "accel-prefetch"


@pytest.fixture
def gather_file(tmp_path):
    path = tmp_path / "gather.ll"
    path.write_text(GATHER_IR)
    return path


def test_opt_writes_text_and_bitcode(gather_file, tmp_path):
    out = run("opt", str(gather_file), "-passes=accel-prefetch<distance=8>", "--remarks")
    assert out.returncode == 0, out.stderr
    assert "define double @gather" in out.stdout
    assert "accel-prefetch" in out.stderr
    bc = tmp_path / "out.bc"
    assert run("opt", str(gather_file), "-passes=default<O2>", "-o", str(bc)).returncode == 0
    assert bc.read_bytes()[:4] == b"BC\xc0\xde"


def test_opt_errors_are_clear(gather_file, tmp_path):
    bad_param = run("opt", str(gather_file), "-passes=accel-prefetch<nope>")
    assert bad_param.returncode == 1
    assert "invalid accel-prefetch pass parameter 'nope'" in bad_param.stderr
    assert "Traceback" not in bad_param.stderr

    unknown = run("opt", str(gather_file), "-passes=frobnicate")
    assert unknown.returncode == 1 and "unknown pass name 'frobnicate'" in unknown.stderr

    broken = tmp_path / "broken.ll"
    broken.write_text("define void @f() {\n  ret i32 0\n}\n")
    parse = run("opt", str(broken), "-passes=default<O2>")
    assert parse.returncode == 1
    assert f"{broken}:2:" in parse.stderr and "error:" in parse.stderr

    invalid = tmp_path / "invalid.ll"
    invalid.write_text("define i32 @f() {\n  %x = add i32 %x, 1\n  ret i32 %x\n}\n")
    verify = run("opt", str(invalid), "-passes=default<O2>")
    assert verify.returncode == 1 and "input module is invalid" in verify.stderr

    missing = run("opt", str(tmp_path / "missing.ll"), "-passes=default<O2>")
    assert missing.returncode == 1 and "cannot read" in missing.stderr


def test_demo_quick_runs_and_results_match():
    out = run("demo", "--quick", "--runs", "1")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "| embedding_bag |" in out.stdout
    assert "| torch Conv1d (padded) |" in out.stdout and "| jax take (fill mode) |" in out.stdout
    assert "| NO |" not in out.stdout


def test_demo_skips_frontends_that_are_not_installed(tmp_path):
    """Without torch and jax the kernel rows still run, and the frontend
    rows say they were skipped (a sitecustomize hides both packages)."""
    (tmp_path / "sitecustomize.py").write_text(
        "import sys\nsys.modules.update(torch=None, jax=None, jaxlib=None)\n")
    env = dict(os.environ, PYTHONPATH=str(tmp_path))
    out = subprocess.run([sys.executable, "-m", "llvmaccel", "demo", "--quick", "--runs", "1"],
                         capture_output=True, text=True, timeout=300, env=env)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "torch-conv: skipped (torch is not installed)" in out.stdout
    assert "jax-fill: skipped (jax is not installed)" in out.stdout
    assert "| embedding_bag |" in out.stdout


def test_package_plugin_loads_into_opt_and_clang(tmp_path):
    import llvmaccel

    major = llvmaccel.llvm_version().split(".")[0]
    bindir = Path(f"/usr/lib/llvm-{major}/bin")
    kernel = Path(llvmaccel.__file__).parent / "kernels" / "embedding_bag.c"
    out = subprocess.run([str(bindir / "clang"), "-O2", f"-fpass-plugin={llvmaccel.plugin_path()}",
                          "-Rpass=accel-prefetch", "-S", "-emit-llvm", str(kernel), "-o", "-"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert re.search(r"remark: prefetched \S+\[\.\.\.\] via \S+, \d+ iterations ahead, 4 lines",
                     out.stderr), out.stderr
    assert "call void @llvm.prefetch" in out.stdout
    ll = tmp_path / "kernel.ll"
    ll.write_text(out.stdout)
    opt = subprocess.run([str(bindir / "opt"), f"-load-pass-plugin={llvmaccel.plugin_path()}",
                          "-passes=accel-prefetch", "-disable-output", str(ll)],
                         capture_output=True, text=True, timeout=120)
    assert opt.returncode == 0, opt.stderr


def test_blas_reports_the_library_and_its_threshold(tmp_path):
    """``llvmaccel blas``: the library, and the size from which matmuls call
    it with its source: given (``LLVMACCEL_BLAS_MIN_FLOPS``), the static
    rule, or measured (the table of timings, then read back from the cache
    by the next process); bad values are errors, not tracebacks."""
    env = dict(os.environ, LLVMACCEL_CACHE_DIR=str(tmp_path))

    def blas(*args: str, **extra: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "llvmaccel", "blas", *args],
                              capture_output=True, text=True, timeout=300,
                              env=dict(env, **extra))

    out = blas("--json", "--library", "openblas")
    assert out.returncode == 0, out.stderr
    info = json.loads(out.stdout)
    assert info["library"] == "openblas"
    if "min_flops" not in info:
        pytest.skip(f"no BLAS library: {info['status']}")
    assert info["source"].startswith("measured") and len(info["shapes"]) == 6
    assert not info["cached"] and (tmp_path / "blas-thresholds.json").exists()
    again = json.loads(blas("--json", "--library", "openblas").stdout)
    assert again["cached"] and again["min_flops"] == info["min_flops"]
    given = blas("--library", "openblas", LLVMACCEL_BLAS_MIN_FLOPS="never")
    assert given.returncode == 0 and "call the library never (LLVMACCEL_BLAS_MIN_FLOPS" in \
        given.stdout, given.stdout
    static = json.loads(blas("--json", "--threads", "2", LLVMACCEL_BLAS_CALIBRATE="off").stdout)
    assert static["source"] == "static rule" and static["min_flops"] == 1 << 22
    bad = blas(LLVMACCEL_BLAS_MIN_FLOPS="lots")
    assert bad.returncode == 1 and "LLVMACCEL_BLAS_MIN_FLOPS" in bad.stderr
    assert "Traceback" not in bad.stderr
    bad = blas("--threads", "0")
    assert bad.returncode == 1 and "positive int" in bad.stderr
