#!/usr/bin/env python3
"""Tile rows of llvmaccel's matmul kernel, A/B on this host: the rule before
2026-12-07 (the largest power of two leaving 4 registers) against the
present one (as many rows as the registers hold, at most 16 accumulators),
or against that rule without the cap (``--uncapped``: 6 x 4 tiles on
AVX-512's wide products). Own kernel only (``LLVMACCEL_BLAS=off``), each
variant compiled in the same process, interleaved, medians of ``--rounds``.

Usage::

    .venv/bin/python bench/gemm/tiles.py --threads 1 --uncapped
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

os.environ["LLVMACCEL_BLAS"] = "off"
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
from hostinfo import cpu_name, host  # noqa: E402
from tile_rules import PRESENT, power_of_two, uncapped  # noqa: E402

from llvmaccel import blas, compiler  # noqa: E402
from llvmaccel.codegen import matmul  # noqa: E402
from llvmaccel.graph import DType, Graph  # noqa: E402

SHAPES = [(256, 256, 256, False), (512, 768, 256, True), (1024, 1024, 1024, False),
          (256, 196, 2304, False), (32, 256, 64, False), (64, 512, 512, True),
          (2048, 2048, 256, False)]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--rounds", type=int, default=15)
    p.add_argument("--uncapped", action="store_true",
                   help="compare the present rule with the rule without its cap")
    args = p.parse_args()
    blas.set_num_threads(args.threads)
    a_rule, b_rule = (PRESENT, uncapped) if args.uncapped else (power_of_two, PRESENT)
    names = ("present", "uncapped") if args.uncapped else ("power of two", "present")
    print(f"{cpu_name()} ({host()['key']}), {args.threads} thread(s), median of {args.rounds}")
    print(f"| product | {names[0]} us | {names[1]} us | {names[1]} vs {names[0]} |")
    print("|---|---:|---:|---:|")
    rng = np.random.default_rng(0)
    for m, n, k, tb in SHAPES:
        a = rng.standard_normal((m, k)).astype(np.float32)
        b = rng.standard_normal((n, k) if tb else (k, n)).astype(np.float32)
        ref = a @ (b.T if tb else b)
        fns = []
        for rule in (a_rule, b_rule):
            matmul._matmul_tiling = rule
            try:
                g = Graph()
                x, y = g.input("a", (m, k), DType.f32), g.input("b", b.shape, DType.f32)
                g.set_outputs([g.matmul(x, g.permute(y, (1, 0)) if tb else y)])
                c = compiler.compile_private(g)
            finally:
                matmul._matmul_tiling = PRESENT
            assert np.allclose(c(a, b)[0], ref, rtol=1e-3, atol=1e-3)
            fns.append(c)
        reps = max(1, (1 << 25) // (m * n * k))
        times: list[list[float]] = [[], []]
        for r in range(args.rounds):
            for i in ((0, 1) if r % 2 == 0 else (1, 0)):
                t0 = time.perf_counter()
                for _ in range(reps):
                    fns[i](a, b)
                times[i].append((time.perf_counter() - t0) / reps * 1e6)
        t0, t1 = statistics.median(times[0]), statistics.median(times[1])
        print(f"| {m}x{n}x{k}{' (B^T)' if tb else ''} | {t0:.1f} | {t1:.1f} | {t0 / t1:.2f}x |",
              flush=True)


if __name__ == "__main__":
    main()
