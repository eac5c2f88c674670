"""The benchmark harnesses (prefetch, frontends) run end to end at tiny sizes.

This checks the harness (builds, correctness checks, report), not speed:
figures come from the full run recorded in bench/results/.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.skipif(not Path("/usr/lib/llvm-22/bin/clang").exists(), reason="needs clang 22")
def test_prefetch_bench_quick(tmp_path):
    out = subprocess.run(
        [sys.executable, str(ROOT / "bench/prefetch/run.py"), "--quick", "--no-torch",
         "--out-dir", str(tmp_path / "results"), "--work-dir", str(tmp_path / "work"),
         "--plugin", str(ROOT / "build/llvm-22/lib/LLVMAccel.so")],
        capture_output=True, text=True, timeout=600, cwd=ROOT,
    )
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    report = json.loads((tmp_path / "results" / "prefetch.json").read_text())
    kernels = {k["name"]: k for k in report["kernels"]}
    assert {"embbag", "spmv", "hashprobe", "gather", "stream"} <= set(kernels)
    assert not report["build_failures"]
    assert (tmp_path / "results" / "prefetch.md").read_text().startswith("# accel-prefetch")


def test_frontends_bench_quick(tmp_path):
    out = subprocess.run(
        [sys.executable, str(ROOT / "bench/frontends/run.py"), "--quick", "--rounds", "2",
         "--out", str(tmp_path)],
        capture_output=True, text=True, timeout=600, cwd=ROOT,
    )
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    report = json.loads((tmp_path / "frontends.json").read_text())
    models = {r["model"]: r for r in report["results"]}
    assert set(models) == {"dlrm", "dlrm_embeddings", "mlp", "transformer_block"}
    assert all(r["fully_compiled"] for r in models.values())
    variants = set(models["dlrm"]["median_ms"])
    assert {"llvmaccel", "llvmaccel-noaccel", "eager", "inductor"} <= variants
    assert all(len(v) == 2 for v in models["dlrm"]["all_ms"].values())
    assert (tmp_path / "frontends.md").read_text().startswith("# llvmaccel frontends")
