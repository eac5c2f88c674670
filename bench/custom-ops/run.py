"""Custom ops (llvmaccel.custom_op) against the frameworks' own kernels.

Two ops declared once in examples/custom_ops/ and used from both frontends:

- a graph convolution layer, relu(A @ (h @ W)), with A a random sparse graph in
  CSR (``demo::csr_spmm``, a C body): llvmaccel through torch.compile (the
  body inlined, accel-prefetch on), the same with the llvmaccel passes off,
  eager PyTorch with ``torch.sparse.mm`` on a CSR tensor, llvmaccel.jax.jit,
  and jax.jit with the sparse product written as a gather and
  ``jax.ops.segment_sum``, and jax.jit with a ``jax.experimental.sparse``
  BCOO matrix;
- a segment sum (``demo::segment_sum``, an LLVM IR body): llvmaccel through
  torch.compile, eager ``index_add_``, llvmaccel.jax.jit and jax.jit's
  ``jax.ops.segment_sum``.

Every variant is timed in the same process, interleaved round by round in a
rotating order; the figures are medians of the rounds, and ratios are against
the eager framework kernel measured in the same run. One thread (torch and
XLA are pinned to one thread; llvmaccel kernels are single-threaded).

    .venv/bin/python bench/custom-ops/run.py            # writes bench/results/custom-ops.{json,md}
    .venv/bin/python bench/custom-ops/run.py --quick    # small sizes, writes to bench/work/
"""

from __future__ import annotations

import os

os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false "
                      "intra_op_parallelism_threads=1")

import argparse  # noqa: E402
import datetime as dt  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import shlex  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "examples" / "custom_ops"))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402

import llvmaccel  # noqa: E402
import llvmaccel.jax  # noqa: E402
from llvmaccel.target import host  # noqa: E402

jax.config.update("jax_enable_x64", True)  # int64 indices, as torch uses
torch.set_num_threads(1)

import csr_spmm as spmm_ex  # noqa: E402
import segment_sum as seg_ex  # noqa: E402


def machine() -> dict[str, Any]:
    """The CPU as LLVM and the kernel see it, and the load."""
    model = ""
    for line in open("/proc/cpuinfo"):
        if line.startswith("model name"):
            model = line.split(":", 1)[1].strip()
            break
    t = host()
    return {"cpu_model": model, "llvm_cpu": t.cpu, "triple": t.triple,
            "vector_bits": t.vector_bits, "cpus": os.cpu_count(),
            "kernel": platform.release(), "llvm": llvmaccel.llvm_version(),
            "torch": torch.__version__, "jax": jax.__version__,
            "load_average_at_start": list(os.getloadavg())}


def timed(fn: Callable[[], Any], calls: int) -> float:
    """Seconds per call over ``calls`` calls."""
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - start) / calls


def interleave(variants: dict[str, Callable[[], Any]], rounds: int, calls: int
               ) -> dict[str, float]:
    """Median ms per call of each variant, over rounds in rotating order."""
    names = list(variants)
    for n in names:  # compile and warm up
        variants[n]()
        variants[n]()
    samples: dict[str, list[float]] = {n: [] for n in names}
    for r in range(rounds):
        for n in names[r % len(names):] + names[:r % len(names)]:
            samples[n].append(timed(variants[n], calls) * 1e3)
    return {n: statistics.median(v) for n, v in samples.items()}


def gnn_variants(nodes: int, degree: int, dim: int, out_dim: int
                 ) -> tuple[dict[str, Callable[[], Any]], str]:
    indptr, indices, values = spmm_ex.random_graph(nodes, degree, seed=0)
    rng = np.random.default_rng(1)
    h = rng.standard_normal((nodes, dim), dtype=np.float32)
    w = rng.standard_normal((dim, out_dim), dtype=np.float32) * 0.1
    t = [torch.from_numpy(a) for a in (indptr, indices, values, h, w)]
    op = spmm_ex.csr_spmm

    def layer(ip, ix, v, x, w):
        return torch.relu(op(ip, ix, v, x @ w))

    accel = torch.compile(layer, backend="llvmaccel", dynamic=False)
    plain = torch.compile(layer, backend="llvmaccel", dynamic=False,
                          options={"auto": "none"})
    a_csr = torch.sparse_csr_tensor(t[0], t[1], t[2], size=(nodes, nodes),
                                    check_invariants=True)

    def eager():
        return torch.relu(torch.sparse.mm(a_csr, t[3] @ t[4]))

    rows = np.repeat(np.arange(nodes), np.diff(indptr))
    jrows, jidx, jv, jh, jw = (jnp.asarray(a) for a in (rows, indices, values, h, w))

    @jax.jit
    def jax_layer(rows, idx, v, x, w):
        xw = x @ w
        return jax.nn.relu(jax.ops.segment_sum(v[:, None] * xw[idx], rows, nodes))

    from jax.experimental import sparse as jsparse

    a_bcoo = jsparse.BCOO((jnp.asarray(values), jnp.stack([jrows, jidx], axis=1)),
                          shape=(nodes, nodes))
    bcoo_layer = jax.jit(lambda a, x, w: jax.nn.relu(a @ (x @ w)))

    lj = llvmaccel.jax.jit(lambda ip, ix, v, x, w: jax.nn.relu(op(ip, ix, v, x @ w)))
    want = eager()
    for f in (accel, plain):
        torch.testing.assert_close(f(*t), want, rtol=1e-3, atol=1e-3)
    np.testing.assert_allclose(np.asarray(jax_layer(jrows, jidx, jv, jh, jw)), want.numpy(),
                               rtol=1e-3, atol=1e-3)
    np.testing.assert_allclose(np.asarray(lj(indptr, indices, values, h, w)), want.numpy(),
                               rtol=1e-3, atol=1e-3)
    np.testing.assert_allclose(np.asarray(bcoo_layer(a_bcoo, jh, jw)), want.numpy(),
                               rtol=1e-3, atol=1e-3)
    variants = {
        "eager torch.sparse.mm": eager,
        "llvmaccel torch.compile": lambda: accel(*t),
        "llvmaccel, passes off": lambda: plain(*t),
        "jax.jit (gather + segment_sum)":
            lambda: jax_layer(jrows, jidx, jv, jh, jw).block_until_ready(),
        "jax.jit BCOO": lambda: bcoo_layer(a_bcoo, jh, jw).block_until_ready(),
        "llvmaccel.jax.jit": lambda: lj(indptr, indices, values, h, w).block_until_ready(),
    }
    return variants, f"{nodes} nodes, {len(indices)} edges, {dim} -> {out_dim} features"


def segment_variants(rows: int, dim: int, segments: int
                     ) -> tuple[dict[str, Callable[[], Any]], str]:
    rng = np.random.default_rng(2)
    data = rng.standard_normal((rows, dim), dtype=np.float32)
    ids = rng.integers(0, segments, size=rows).astype(np.int64)
    td, tids = torch.from_numpy(data), torch.from_numpy(ids)
    op = seg_ex.segment_sum
    accel = torch.compile(lambda x, i: op(x, i, segments), backend="llvmaccel", dynamic=False)

    def eager():
        return torch.zeros(segments, dim).index_add_(0, tids, td)

    jd, jids = jnp.asarray(data), jnp.asarray(ids)
    jseg = jax.jit(lambda x, i: jax.ops.segment_sum(x, i, segments))
    lj = llvmaccel.jax.jit(lambda x, i: op(x, i, segments))
    want = eager()
    torch.testing.assert_close(accel(td, tids), want, rtol=1e-3, atol=1e-3)
    np.testing.assert_allclose(np.asarray(jseg(jd, jids)), want.numpy(), rtol=1e-3, atol=1e-3)
    np.testing.assert_allclose(np.asarray(lj(data, ids)), want.numpy(), rtol=1e-3, atol=1e-3)
    variants = {
        "eager index_add_": eager,
        "llvmaccel torch.compile": lambda: accel(td, tids),
        "jax.jit segment_sum": lambda: jseg(jd, jids).block_until_ready(),
        "llvmaccel.jax.jit": lambda: lj(data, ids).block_until_ready(),
    }
    return variants, f"{rows} rows of {dim} into {segments} segments"


def profiling_overhead(rounds: int, calls: int) -> dict[str, float]:
    """Microseconds per call of a tiny compiled graph: plain, inside
    llvmaccel.profile and inside torch.profiler (interleaved medians)."""
    from llvmaccel import profiling

    f = torch.compile(lambda x: (x * 2.0 + 1.0).sum(), backend="llvmaccel", dynamic=False)
    x = torch.ones(64)
    f(x)

    def plain() -> None:
        for _ in range(calls):
            f(x)

    def profiled() -> None:
        profiling.profile(plain)

    def torch_profiled() -> None:
        with torch.profiler.profile():
            plain()

    ms = interleave({"plain": plain, "llvmaccel.profile": profiled,
                     "torch.profiler": torch_profiled}, rounds, 1)
    return {k: v * 1e3 / calls for k, v in ms.items()}


def render(report: dict[str, Any]) -> str:
    m = report["machine"]
    lines = [
        "# Custom ops: llvmaccel.custom_op against the frameworks' kernels", "",
        f"Command: `{report['command']}`  ",
        f"Date: {report['date']}  ",
        f"CPU: {m['cpu_model']} (LLVM cpu `{m['llvm_cpu']}`, {m['vector_bits']}-bit vectors "
        f"preferred), {m['cpus']} CPUs; LLVM {m['llvm']}, torch {m['torch']}, jax {m['jax']}  ",
        f"One thread; {report['rounds']} interleaved rounds, medians; load average at start "
        f"{', '.join(f'{x:.1f}' for x in m['load_average_at_start'])}", ""]
    for bench in report["benchmarks"]:
        base = next(iter(bench["ms"]))
        lines += [f"## {bench['name']} ({bench['shape']})", "",
                  f"| variant | ms | vs {base} |", "|---|---:|---:|"]
        for name, ms in bench["ms"].items():
            lines.append(f"| {name} | {ms:.3f} | {bench['ms'][base] / ms:.2f}x |")
        lines.append("")
    over = report.get("profiling_overhead_us")
    if over:
        base = over["plain"]
        lines += ["## Profiling overhead (a tiny compiled graph, us per call)", "",
                  "| mode | us per call | added |", "|---|---:|---:|"]
        lines += [f"| {k} | {v:.2f} | {v - base:+.2f} |" for k, v in over.items()]
        lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small sizes; results to bench/work/")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--out", type=Path, help="results directory (default bench/results, "
                    "or bench/work with --quick)")
    args = ap.parse_args(argv)
    quick = args.quick
    if quick:
        args.rounds = 2
    out_dir = args.out or (ROOT / "bench" / ("work" if quick else "results"))
    out_dir.mkdir(parents=True, exist_ok=True)
    benches = []
    torch.set_grad_enabled(False)  # inference
    gnn, gshape = gnn_variants(*((2000, 4, 16, 8) if quick else (200_000, 16, 64, 64)))
    seg, sshape = segment_variants(*((5000, 8, 50) if quick else (2_000_000, 32, 10_000)))
    for name, variants, shape, calls in (("GNN layer relu(A @ (h @ W))", gnn, gshape, 3),
                                         ("segment sum", seg, sshape, 3)):
        ms = interleave(variants, args.rounds, 1 if quick else calls)
        benches.append({"name": name, "shape": shape, "ms": ms})
    overhead = profiling_overhead(args.rounds, 200 if quick else 5000)
    report = {"command": " ".join(shlex.quote(a) for a in [".venv/bin/python",
                                                            "bench/custom-ops/run.py",
                                                            *(argv or sys.argv[1:])]),
              "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
              "machine": machine(), "rounds": args.rounds, "benchmarks": benches,
              "profiling_overhead_us": overhead}
    md = render(report)
    stem = "custom-ops"
    json_path, md_path = out_dir / f"{stem}.json", out_dir / f"{stem}.md"
    hosts: dict[str, Any] = {}
    if json_path.exists() and not quick:
        hosts = json.loads(json_path.read_text()).get("hosts", {})
    hosts[report["machine"]["cpu_model"]] = report
    json_path.write_text(json.dumps({"hosts": hosts}, indent=1) + "\n")
    md_path.write_text("\n\n".join(render(r) for r in hosts.values()) + "\n")
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
