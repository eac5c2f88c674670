#!/usr/bin/env python3
"""Intra-op threads as a JAX user meets them: ``llvmaccel.jax.jit`` of a
tanh map called back to back (no libgomp in the process: llvmaccel's own
pool runs the threads), on 1 and 2 threads, against ``jax.jit`` (XLA), for
2^17, 2^19 and 2^21 elements; median microseconds per call of 200 calls.

Reproduce: ``.venv/bin/python bench/parallel_jax.py`` (prints; the figures
quoted in the README, "Threads of generated kernels", came from it).
"""

from __future__ import annotations

import os
import statistics
import time

import jax
import jax.numpy as jnp
import numpy as np

import llvmaccel.jax as lj
from llvmaccel import blas
from llvmaccel._native import core


def _median_us(fn, calls: int = 200) -> float:
    ts = []
    for _ in range(calls):
        t0 = time.perf_counter()
        fn()
        ts.append((time.perf_counter() - t0) * 1e6)
    return statistics.median(ts)


def main() -> None:
    os.environ.setdefault("LLVMACCEL_CACHE_DIR", "off")
    f = lj.jit(lambda a: jnp.tanh(a) * 2.0)
    g = jax.jit(lambda a: jnp.tanh(a) * 2.0)
    print(f"CPU {core.host_cpu()}, runtime {core.parallel_runtime()}")
    for n in (1 << 17, 1 << 19, 1 << 21):
        a = np.random.default_rng(0).random((n // 512, 512), dtype=np.float32)
        ja = jnp.asarray(a)
        row = {}
        for threads in (1, 2):
            blas.set_num_threads(threads)
            f(a)
            row[f"llvmaccel {threads}t"] = _median_us(lambda a=a: f(a))
        blas.set_num_threads(None)
        g(ja).block_until_ready()
        row["xla"] = _median_us(lambda ja=ja: g(ja).block_until_ready())
        print(n, ", ".join(f"{k} {v:.1f} us" for k, v in row.items()), flush=True)


if __name__ == "__main__":
    main()
