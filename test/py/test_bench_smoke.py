"""The benchmark harnesses (prefetch, frontends, async fusion, ...) run end to end at
tiny sizes.

This checks the harness (builds, correctness checks, report), not speed:
figures come from the full run recorded in bench/results/.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


# The LLVM release under test (`make test LLVM=19` exports it).
LLVM = os.environ.get("LLVMACCEL_LLVM_VERSION", "22")
LLVM_BIN = Path(f"/usr/lib/llvm-{LLVM}/bin")
PLUGIN = ROOT / f"build/llvm-{LLVM}/lib/LLVMAccel.so"


@pytest.mark.skipif(not (LLVM_BIN / "clang").exists() or not PLUGIN.exists(),
                    reason=f"needs clang {LLVM} and the plugin built for it")
def test_prefetch_bench_quick(tmp_path):
    out = subprocess.run(
        [sys.executable, str(ROOT / "bench/prefetch/run.py"), "--quick", "--no-torch",
         "--out-dir", str(tmp_path / "results"), "--work-dir", str(tmp_path / "work"),
         "--plugin", str(PLUGIN)],
        capture_output=True, text=True, timeout=600, cwd=ROOT,
        env={**os.environ, "LLVM_BIN": str(LLVM_BIN)},
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
    (host,) = report["hosts"].values()  # one entry, named after this CPU
    assert host["meta"]["host"]["llvm_cpu"]
    models = {r["model"]: r for r in host["results"]}
    ops = {"op_tanh", "op_tanh_sum", "op_exp", "op_gelu", "op_softmax", "op_affine_sum",
           "op_layer_norm", "op_sdpa"}
    small = {"mlp_batch1", "block_batch1", "op_small_softmax"}
    pools = {"maxpool_3x3_s2", "avgpool_2x2", "adaptive_avg_15_to_7",
             "adaptive_avg_10x9_to_4x5", "adaptive_max_15_to_4"}
    assert set(models) == {"dlrm", "dlrm_embeddings", "mlp", "transformer_block",
                           "rope"} | ops | small | pools
    assert models["op_small_softmax"]["calls_per_timing"] > 1  # microseconds a call
    assert all(r["fully_compiled"] for r in models.values())
    variants = set(models["dlrm"]["median_ms"])
    assert {"llvmaccel", "llvmaccel-noaccel", "eager", "inductor"} <= variants
    assert all(len(v) == 2 for v in models["dlrm"]["all_ms"].values())
    assert (tmp_path / "frontends.md").read_text().startswith("# llvmaccel frontends")
    assert sum(models["mlp"]["matmul_kernels"].values()) == 3  # which kernel each matmul got
    for name in ("op_sdpa", "transformer_block"):  # codegen.attention's choice
        assert models[name]["attention"] == {"fused": 1}


def test_frontend_models_bench_quick(tmp_path):
    """bench/frontends/models.py end to end at tiny sizes: every set, its
    outputs checked against eager (a training step against eager's), and
    the results file one host entry with every set."""
    out = subprocess.run(
        [sys.executable, str(ROOT / "bench/frontends/models.py"), "--quick", "--rounds", "1",
         "--out", str(tmp_path)],
        capture_output=True, text=True, timeout=900, cwd=ROOT,
    )
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    (host,) = json.loads((tmp_path / "frontends-models.json").read_text())["hosts"].values()
    assert set(host) == {"grad", "train", "cnn", "mobile"}
    grad = {r["model"]: r for r in host["grad"]["rows"]}
    assert set(grad) == {"mlp", "transformer_block", "dlrm"}
    assert all(r["fully_compiled_with_grad"] for r in grad.values())
    cnn = host["cnn"]["rows"]
    assert {r["dtype"] for r in cnn} == {"float32", "bfloat16"}
    assert all(r["fallbacks"] == 0 for r in cnn + host["mobile"]["rows"])
    assert (tmp_path / "frontends-models.md").read_text().startswith("# llvmaccel torch")


def test_gemm_bench_quick(tmp_path):
    out = subprocess.run(
        [sys.executable, str(ROOT / "bench/gemm/run.py"), "--quick", "--rounds", "1",
         "--out", str(tmp_path)],
        capture_output=True, text=True, timeout=600, cwd=ROOT,
    )
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    (host,) = json.loads((tmp_path / "gemm.json").read_text())["hosts"].values()
    assert len(host["results"]) == 3
    for r in host["results"]:
        assert set(r["median_us"]) == {"llvmaccel-own", "llvmaccel-blas", "torch"}
        assert r["auto_choice"] in ("own", "blas")
    assert (tmp_path / "gemm.md").read_text().startswith("# Matmul shape classes")


def test_custom_ops_bench_quick(tmp_path):
    pytest.importorskip("torch")
    pytest.importorskip("jax")
    out = subprocess.run(
        [sys.executable, str(ROOT / "bench/custom-ops/run.py"), "--quick", "--out",
         str(tmp_path)], capture_output=True, text=True, timeout=900, cwd=ROOT)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    report = json.loads((tmp_path / "custom-ops.json").read_text())
    (host,) = report["hosts"].values()
    assert host["machine"]["llvm_cpu"] and host["machine"]["cpu_model"]
    names = [b["name"] for b in host["benchmarks"]]
    assert names == ["GNN layer relu(A @ (h @ W))", "segment sum"]
    assert all(ms > 0 for b in host["benchmarks"] for ms in b["ms"].values())
    assert (tmp_path / "custom-ops.md").read_text().startswith("# Custom ops")


def test_jax_control_bench_quick():
    pytest.importorskip("jax")
    out = subprocess.run(
        [sys.executable, str(ROOT / "bench/frontends/jax_control.py"), "--quick"],
        capture_output=True, text=True, timeout=900, cwd=ROOT)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert "rnn_scan_T8" in out.stdout and "decode_fori_T8" in out.stdout
    assert "decode_while_T8" in out.stdout
    assert "load average" in out.stdout


def test_jax_control_markdown_keeps_earlier_runs():
    """A host's earlier runs stay beside its latest in the Markdown section
    (newest first), each with its own text on what the columns measure."""
    pytest.importorskip("jax")
    import importlib.util

    spec = importlib.util.spec_from_file_location("jax_control",
                                                  ROOT / "bench/frontends/jax_control.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)

    def run(date, ms, **extra):
        meta = {"date": date, "cpu": "CPU", "jax": "0", "llvm": "22", "rounds": 5,
                "load_start": [1, 1, 1], "load_end": [1, 1, 1], **extra}
        res = [{"workload": "w", "median_ms": {"llvmaccel.jax.jit": ms, "kernel": ms,
                                                "jax.jit": 1.0},
                "speedup_vs_jax_jit": 1.0 / ms, "kernel_speedup_vs_jax_jit": 1.0 / ms}]
        return {"meta": meta, "results": res}

    note = "one jax.device_put of the outputs."
    host = {**run("new", 0.5, columns=mod.COLUMNS),
            "earlier": [run("mid", 2.0, note=note), run("old", 4.0)]}
    text = mod.markdown({"CPU (x)": host})
    assert (text.index("| w | 0.500") < text.index("Earlier run (mid)") < text.index("| w | 2.000")
            < text.index("Earlier run (old)") < text.index("| w | 4.000"))
    assert mod.COLUMNS in text and f"column adds {note}" in text and mod._OLD_NOTE in text
    assert text.index(mod.COLUMNS) < text.index("Earlier run (mid)")
    # A run with more threads is a host entry of its own, with its command.
    two = run("two", 0.25, columns=mod.COLUMNS, threads=2,
              command="bench/frontends/jax_control.py --threads 2")
    key = mod.host_key("CPU", "x", 2)
    assert key == "CPU (x), 2 threads" and mod.host_key("CPU", "x", 1) == "CPU (x)"
    text = mod.markdown({"CPU (x)": host, key: two})
    assert "### CPU (x), 2 threads\n\nReproduce: `bench/frontends/jax_control.py --threads 2`" \
        in text
    assert "two, CPU, 2 threads," in text and "new, CPU, 1 thread," in text


def test_interleaved_timings_follow_their_own_variant():
    """Every timed call of the frontends' harness comes right after an
    untimed call of the same variant (never after another framework's,
    whose OpenMP workers may still spin), every round times each variant
    once, and the rounds do not all take the same order."""
    import importlib.util

    sys.path.insert(0, str(ROOT / "bench/frontends"))
    spec = importlib.util.spec_from_file_location("frontends_run",
                                                  ROOT / "bench/frontends/run.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # its dataclasses look their module up
    spec.loader.exec_module(mod)
    log: list[tuple[str, str, int]] = []
    names = ["llvmaccel", "llvmaccel-noaccel", "eager", "inductor"]

    def time_one(k, r):
        log.append(("time", k, r))
        return float(r)

    times = mod.interleaved(names, 12, time_one, lambda k, r: log.append(("settle", k, r)))
    assert times == {k: [float(r) for r in range(12)] for k in names}
    for i, (what, k, r) in enumerate(log):
        if what == "time":
            assert log[i - 1] == ("settle", k, r)
    orders = {tuple(k for what, k, rr in log if what == "time" and rr == r) for r in range(12)}
    assert len(orders) > 1 and all(sorted(o) == sorted(names) for o in orders)


def test_verify_markdown_keeps_hand_sections(tmp_path):
    """bench/verify/run.py replaces only its own part of verify.md: sections
    written after it (per host, by hand) stay, and a file without the markers
    keeps its whole text after the new part."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("verify_run", ROOT / "bench/verify/run.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    md = tmp_path / "verify.md"
    mod.write_markdown(md, "# figures 1\n")
    md.write_text(md.read_text() + "\n## A host, by hand\nkept\n")
    mod.write_markdown(md, "# figures 2\n")
    text = md.read_text()
    assert "figures 1" not in text and "# figures 2" in text
    assert text.index("# figures 2") < text.index("## A host, by hand\nkept")
    old = tmp_path / "old.md"
    old.write_text("# old figures\n\n## hand\n")
    mod.write_markdown(old, "# new\n")
    assert old.read_text().index("# new") < old.read_text().index("# old figures")


@pytest.mark.skipif(not (LLVM_BIN / "mlir-opt").exists() or not PLUGIN.exists(),
                    reason=f"needs mlir-opt {LLVM} and the plugin built for it")
def test_async_fusion_bench_quick(tmp_path):
    """Every graph builds, runs through the real runtime with equal outputs,
    and the results keep an earlier host's section beside this run's."""
    out_dir = tmp_path / "results"
    out_dir.mkdir()
    earlier = {"Earlier CPU, LLVM 0": {
        "command": "x", "date": "2026-01-01", "quick": False, "rounds": 1, "graphs": [],
        "machine": {"Model name": "Earlier CPU", "llvm": "clang 0", "runtime": "r",
                    "load_average_at_start": [0.0], "CPU(s)": "2"}}}
    (out_dir / "async-fusion.json").write_text(json.dumps(earlier))
    out = subprocess.run(
        [sys.executable, str(ROOT / "bench/async-fusion/run.py"), "--quick", "--llvm", LLVM,
         "--out", str(out_dir)],
        capture_output=True, text=True, timeout=900, cwd=ROOT,
    )
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    sections = json.loads((out_dir / "async-fusion.json").read_text())
    assert "Earlier CPU, LLVM 0" in sections and len(sections) == 2
    mine = next(v for k, v in sections.items() if k != "Earlier CPU, LLVM 0")
    graphs = {g["name"]: g for g in mine["graphs"]}
    assert set(graphs) == {"chain500", "tiny500", "fanout", "fanout-wait"}
    assert "chain(s) fused" in graphs["chain500"]["remarks"]
    assert "resumed on the pool" in graphs["fanout-wait"]["remarks"]
    launches = mine["gpu_launch_loop"]
    assert launches["fused, again call"]["cudaLaunchKernel"] == 0
    assert launches["fused, again call"]["kernels_run"] == \
        launches["unfused, again call"]["kernels_run"]
    md = (out_dir / "async-fusion.md").read_text()
    assert "## Earlier CPU" in md
