"""The frontends' inter-op mode (llvmaccel.interop) against the sequential
kernel: run by ``bench/async-fusion/run.py --interop`` (and by its full run).

Workloads, each compiled three ways from the same graph:

``sequential``
    the ordinary kernel (one function, loop nests one after the other);
``inter-op``
    ``inter_op=True``: the graph's branches as tasks of MLIR's async runtime,
    accel-async-fusion in the pipeline (the default);
``inter-op-nopass``
    the same without accel-async-fusion (every branch a task): what the pass
    changes (it must not slow anything down).

``dlrm``
    bench/frontends' DLRM (embedding bags, bottom MLP, dot interaction, top
    MLP) through ``torch.compile(backend="llvmaccel")``, with
    ``options={"inter_op": True}`` for the inter-op variants;
``fanout``
    a fan-out/fan-in graph with real work per branch: a shared input, 4
    branches of two 192x192 matmuls with a tanh between them, a sum of the
    branches at the end; run with each GEMM library (OpenBLAS, PyTorch's
    MKL), since the sequential kernel runs the library's GEMMs on every
    thread and the inter-op mode on one per branch.

Rounds interleave the variants (round r starts with variant r mod 3); each
round times ``calls`` calls of each variant and keeps the mean; medians over
the rounds, ratio = median(sequential) / median(variant). Outputs must be
bit-identical to the sequential kernel's, or the run fails; where a graph
calls a library GEMM (its bits depend on the number of threads it runs on:
the sequential kernel gives it every thread, a branch task one), within a
relative 1e-5, recorded.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent

VARIANTS = ("sequential", "inter-op", "inter-op-nopass")


def _auto_without_fusion() -> str:
    from llvmaccel.pipeline import passes

    return ",".join(p.name for p in passes() if p.name != "accel-async-fusion")


def fanout_graph(n: int, branches: int):
    from llvmaccel.graph import DType, Graph

    g = Graph()
    x = g.input("x", (n, n), DType.f32)
    rng = np.random.default_rng(0)
    outs = []
    for _ in range(branches):
        w1 = g.constant(rng.standard_normal((n, n)).astype(np.float32) / n, DType.f32)
        w2 = g.constant(rng.standard_normal((n, n)).astype(np.float32) / n, DType.f32)
        outs.append(g.matmul(g.unary("tanh", g.matmul(x, w1)), w2))
    acc = outs[0]
    for o in outs[1:]:
        acc = g.binary("add", acc, o)
    g.set_outputs([acc])
    return g


def _interleaved(fns: dict[str, Any], inputs: list[tuple], rounds: int, calls: int
                 ) -> dict[str, list[float]]:
    names = list(fns)
    times: dict[str, list[float]] = {k: [] for k in names}
    for r in range(rounds):
        for k in names[r % len(names):] + names[:r % len(names)]:
            t0 = time.perf_counter()
            for c in range(calls):
                fns[k](*inputs[(r + c) % len(inputs)])
            times[k].append((time.perf_counter() - t0) / calls * 1e3)
    return times


def _summary(times: dict[str, list[float]]) -> dict[str, Any]:
    med = {k: statistics.median(v) for k, v in times.items()}
    low = {k: min(v) for k, v in times.items()}
    return {k: {"median_ms": med[k], "min_ms": low[k], "all_ms": times[k],
                "ratio_vs_sequential": med["sequential"] / med[k],
                "min_ratio_vs_sequential": low["sequential"] / low[k]} for k in times}


def _arrays(a: Any) -> list[np.ndarray]:
    if isinstance(a, (list, tuple)):
        return [x for v in a for x in _arrays(v)]
    return [np.asarray(a.detach().numpy() if hasattr(a, "detach") else a)]


def _check_same(name: str, variant: str, got: Any, ref: Any, library_gemms: bool) -> float:
    """The largest difference of ``got`` from the sequential kernel's ``ref``
    relative to ref's largest magnitude; exits unless the outputs are
    bit-identical, or, where the graph calls a library GEMM (whose bits depend
    on the number of threads it runs on: the sequential kernel gives it all
    threads, a branch task one), within 1e-5."""
    worst = 0.0
    for x, y in zip(_arrays(got), _arrays(ref), strict=True):
        if x.tobytes() == y.tobytes():
            continue
        scale = float(np.max(np.abs(y))) or 1.0
        worst = max(worst, float(np.max(np.abs(x.astype(np.float64) - y))) / scale)
    if worst and (not library_gemms or worst > 1e-5):
        raise SystemExit(f"{name}: {variant} differs from the sequential kernel "
                         f"(relative difference {worst:.3g})")
    return worst


def _library_gemms(compiled: list[Any]) -> bool:
    """Whether any of these compiled graphs calls a library GEMM."""
    return any(c.kernel.uses_blas for c in compiled)


def bench_fanout(quick: bool, rounds: int, library: str) -> dict[str, Any]:
    """The fan-out graph with ``library`` (``"torch"``: PyTorch's MKL, whose
    thread count each branch sets for its own thread; ``"openblas"``: one
    process-wide count, 1 for inter-op calls)."""
    from llvmaccel import blas
    from llvmaccel.compiler import compile_graph

    os.environ["LLVMACCEL_BLAS_LIBRARY"] = library
    if library == "torch":
        import torch  # noqa: F401 - PyTorch's MKL is the library once imported
    n, branches = (48, 4) if quick else (192, 4)
    g = fanout_graph(n, branches)
    fns = {
        "sequential": compile_graph(g, inter_op=False),
        "inter-op": compile_graph(g, inter_op=True),
        "inter-op-nopass": compile_graph(g, inter_op=True, auto=_auto_without_fusion()),
    }
    rng = np.random.default_rng(1)
    inputs = [(rng.standard_normal((n, n)).astype(np.float32),) for _ in range(4)]
    ref = fns["sequential"](*inputs[0])
    lib = _library_gemms([fns["sequential"]])
    diffs = {k: _check_same("fanout", k, f(*inputs[0]), ref, lib) for k, f in fns.items()}
    remarks = [f"{r.kind}: {r.message}" for r in fns["inter-op"].report.remarks
               if r.pass_name == "accel-async-fusion"]
    res = _summary(_interleaved(fns, inputs, rounds, 5 if quick else 20))
    library = blas.library() if lib else "no library GEMM"
    return {"name": f"fanout ({library})", "shape": f"{branches} branches of 2 matmuls {n}x{n}x{n}",
            "branches": len(fns["inter-op"].branches or []), "variants": res,
            "library_gemms": lib, "max_relative_difference": diffs, "remarks": remarks}


def bench_dlrm(quick: bool, rounds: int) -> dict[str, Any]:
    import torch

    sys.path.insert(0, str(REPO / "bench" / "frontends"))
    from run import DLRM, QUICK, Sizes, dlrm_inputs  # noqa: PLC0415 - the frontends' model

    from llvmaccel import compiler

    s = QUICK if quick else Sizes(tables=4, rows=1 << 18, dim=64, batch=2048, bag=32,
                                  dense=13, mlp_batch=0, mlp_width=0, block_batch=0,
                                  block_seq=0, block_dim=0, rounds=rounds)
    torch.manual_seed(0)
    model = DLRM(s).eval()
    torch._dynamo.reset()
    compiler.clear_memory_cache()
    fns = {
        "sequential": torch.compile(model, backend="llvmaccel", dynamic=False),
        "inter-op": torch.compile(model, backend="llvmaccel", dynamic=False,
                                  options={"inter_op": True}),
        "inter-op-nopass": torch.compile(model, backend="llvmaccel", dynamic=False,
                                         options={"inter_op": True,
                                                  "auto": _auto_without_fusion()}),
    }
    inputs = [dlrm_inputs(s, seed=k) for k in range(4)]
    with torch.no_grad():
        ref = fns["sequential"](*inputs[0])
        lib = _library_gemms(list(compiler._cache.values()))
        diffs = {k: _check_same("dlrm", k, f(*inputs[0]), ref, lib) for k, f in fns.items()}
        par = [c for c in compiler._cache.values() if c.branches is not None]
        remarks = sorted({f"{r.kind}: {r.message}" for c in par for r in c.report.remarks
                          if r.pass_name == "accel-async-fusion"})
        res = _summary(_interleaved(fns, inputs, rounds, 2 if quick else 10))
    return {"name": "dlrm",
            "shape": f"{s.tables} tables of {s.rows}x{s.dim}, batch {s.batch}, bag {s.bag}",
            "branches": max((len(c.branches) for c in par), default=0), "variants": res,
            "library_gemms": lib, "max_relative_difference": diffs, "remarks": remarks}


def run_interop(quick: bool, rounds: int) -> dict[str, Any]:
    """Both workloads, with the load average before and after."""
    from llvmaccel import interop

    why = interop.available()
    if why is not None:
        return {"skipped": why}
    load0 = list(os.getloadavg())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        before = os.environ.get("LLVMACCEL_BLAS_LIBRARY")
        try:
            workloads = [bench_fanout(quick, rounds, "openblas"),
                         bench_fanout(quick, rounds, "torch")]
        finally:
            if before is None:
                os.environ.pop("LLVMACCEL_BLAS_LIBRARY", None)
            else:
                os.environ["LLVMACCEL_BLAS_LIBRARY"] = before
        workloads.append(bench_dlrm(quick, rounds))
    return {"load_average_before": load0, "load_average_after": list(os.getloadavg()),
            "cpus": os.cpu_count(), "workloads": workloads}


def render_interop(section: dict[str, Any], host: str, date: str, command: str) -> str:
    if "skipped" in section:
        return f"### {host}\n\nSkipped: {section['skipped']}\n"
    la, lb = section["load_average_before"], section["load_average_after"]
    out = [f"### {host}", "",
           f"Command: `{command}`  ", f"Date: {date}; {section['cpus']} CPUs; load average "
           f"{la[0]:.1f} before, {lb[0]:.1f} after (1-minute)", "",
           "| workload | variant | median ms per call | vs sequential | fastest round ms |"
           " vs sequential |", "|---|---|---:|---:|---:|---:|"]
    for w in section["workloads"]:
        for v, r in w["variants"].items():
            out.append(f"| {w['name']} ({w['shape']}, {w['branches']} branches) | {v} | "
                       f"{r['median_ms']:.3f} | {r['ratio_vs_sequential']:.2f}x | "
                       f"{r['min_ms']:.3f} | {r['min_ratio_vs_sequential']:.2f}x |")
    out.append("")
    for w in section["workloads"]:
        diffs = w.get("max_relative_difference", {})
        worst = max(diffs.values(), default=0.0)
        same = ("outputs bit-identical to the sequential kernel's" if not worst else
                f"outputs within {worst:.1e} (relative) of the sequential kernel's: its"
                " library GEMMs run on all threads, a branch's on one")
        out.append(f"- {w['name']}: {same}; accel-async-fusion: " + "; ".join(w["remarks"]))
    return "\n".join(out) + "\n"
