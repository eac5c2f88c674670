#!/usr/bin/env python3
"""Where splitting a loop nest between threads starts to pay: the
measurement behind ``llvmaccel.codegen.parallel.MIN_WORK``, on llvmaccel's
own pool (no libgomp in the process, as with JAX) or, with ``--openmp``,
which loads libgomp first as PyTorch does, on GNU OpenMP's threads.

For each size, a kernel compiled with every loop nest parallel (MIN_WORK
set to 1 for the compilation) is called with 1 thread (the serial function)
and with ``--threads`` threads (the pool), interleaved, median of
``--rounds`` rounds of ``--calls`` calls each; the ratio says whether the
threads gain. Ops: a cheap elementwise map (``x * 2 + 1``), ``tanh`` (a
vector math call per element) and a row sum (``x.sum(-1)``, rows of 256).

Reproduce: ``.venv/bin/python bench/parallel_threshold.py --threads 2 [--openmp]``
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

import llvmaccel
from llvmaccel._native import core
from llvmaccel.codegen import parallel
from llvmaccel.compiler import compile_graph
from llvmaccel.graph import DType, Graph

sys.path.insert(0, str(Path(__file__).resolve().parent))
import hostinfo  # noqa: E402  (bench/hostinfo.py: no framework imported)

F32 = DType.f32
OPS = {
    "affine": lambda g, x: g.binary("add", g.binary("mul", x, g.scalar(2.0, F32)),
                                    g.scalar(1.0, F32)),
    "tanh": lambda g, x: g.unary("tanh", x),
    "rowsum": lambda g, x: g.reduce("sum", x, axes=(1,)),
}


def _graph(op: str, n: int) -> Graph:
    g = Graph()
    x = g.input("x", (n // 256, 256), F32)
    g.set_outputs([OPS[op](g, x)])
    return g


def _time(fn: object, x: np.ndarray, calls: int) -> float:
    t = time.perf_counter()
    for _ in range(calls):
        fn(x)  # type: ignore[operator]
    return (time.perf_counter() - t) / calls * 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--calls", type=int, default=50)
    ap.add_argument("--out", default="bench/results/parallel")
    ap.add_argument("--openmp", action="store_true",
                    help="load libgomp first: runs go to OpenMP's threads")
    args = ap.parse_args()
    if args.openmp:
        import ctypes

        ctypes.CDLL("libgomp.so.1", mode=ctypes.RTLD_GLOBAL)
    runtime = core.parallel_runtime()
    # Kernels compiled with another threshold than the default: kept out of
    # the user's disk cache.
    os.environ["LLVMACCEL_CACHE_DIR"] = "off"
    sizes = [1 << k for k in range(10, 21)]
    load_start = os.getloadavg()
    saved = parallel.MIN_WORK
    rows = []
    for op in OPS:
        for n in sizes:
            parallel.MIN_WORK = 1
            try:
                fn = compile_graph(_graph(op, n))
            finally:
                parallel.MIN_WORK = saved
            assert fn.kernel.parallel
            x = np.random.default_rng(0).standard_normal((n // 256, 256)).astype(np.float32)
            t1, tn = [], []
            for r in range(args.rounds):
                for k in ((1, args.threads) if r % 2 == 0 else (args.threads, 1)):
                    llvmaccel.blas.set_num_threads(k)
                    fn(x)
                    (t1 if k == 1 else tn).append(_time(fn, x, args.calls))
            llvmaccel.blas.set_num_threads(None)
            m1, mn = statistics.median(t1), statistics.median(tn)
            rows.append({"op": op, "elements": n, "serial_us": round(m1, 2),
                         "threads_us": round(mn, 2), "speedup": round(m1 / mn, 3)})
            print(f"{op:7s} {n:8d} 1 thread {m1:9.2f} us  {args.threads} threads "
                  f"{mn:9.2f} us  {m1 / mn:5.2f}x", flush=True)
    load = [round(v, 2) for v in (*load_start, *os.getloadavg())]
    meta = {"command": "bench/parallel_threshold.py " + " ".join(sys.argv[1:]),
            "cpu": hostinfo.cpu_name(), "host": hostinfo.host(),
            "threads": args.threads, "rounds": args.rounds, "calls": args.calls,
            "load_average": load, "min_work": saved, "runtime": runtime,
            "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    Path(args.out + ".json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))
    lines = [f"# Intra-op threads: where splitting a loop nest pays ({meta['date']})", "",
             f"Reproduce: `.venv/bin/python {meta['command']}`", "",
             f"CPU: {meta['cpu']} ({meta['host']['key']}); {args.threads} threads ({runtime}) "
             "against 1; "
             f"median of {args.rounds} interleaved rounds of {args.calls} calls; load average "
             f"(1/5/15 min) at start {load[:3]}, at end {load[3:]} (a machine shared "
             "with other sessions). Times are whole calls from Python (about 18 us of "
             "them the call itself).", "",
             "| op | elements | 1 thread us | threads us | speed-up |", "|---|---:|---:|---:|---:|"]
    lines += [f"| {r['op']} | {r['elements']} | {r['serial_us']} | {r['threads_us']} | "
              f"{r['speedup']}x |" for r in rows]
    Path(args.out + ".md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
