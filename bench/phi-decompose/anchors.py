#!/usr/bin/env python3
"""Shape anchors through the JAX frontend: the same row-sum kernel compiled
for static shapes, for symbolic shapes, and for symbolic shapes with the
constraints ``n >= 8`` and ``mod(n, 8) == 0`` stated to the kernel
(``llvmaccel.jax.jit(..., symbolic_constraints=...)``). Reports how much of
the gap between the dynamic and the static kernel the anchors close.

Interleaved rounds, medians, one thread (run it under ``taskset -c N`` for
a fixed core); writes ``bench/results/phi-decompose-anchors.{json,md}``.

Usage::

    .venv/bin/python bench/phi-decompose/anchors.py [--rounds 31] [--quick]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import jax.numpy as jnp
import numpy as np

import llvmaccel.jax as lj
from llvmaccel.target import host

REPO = Path(__file__).resolve().parents[2]


def cpu_description() -> str:
    """Model name, vendor and family/model as /proc/cpuinfo gives them."""
    info: dict[str, str] = {}
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            info.setdefault(key.strip(), value.strip())
    except OSError:
        return platform.machine()
    return (f"{info.get('model name', '?')} ({info.get('vendor_id', '?')} family "
            f"{info.get('cpu family', '?')} model {info.get('model', '?')})")


def row_sums(x):
    return jnp.sum(x * 2.0 + 1.0, axis=1)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=31)
    ap.add_argument("--quick", action="store_true", help="tiny sizes; writes bench/work")
    opts = ap.parse_args(argv)
    os.environ.setdefault("LLVMACCEL_CACHE_DIR", "off")
    variants = {
        "static": lj.jit(row_sums),
        "dynamic": lj.jit(row_sums, polymorphic_shapes=["b, n"]),
        "dynamic+anchors": lj.jit(row_sums, polymorphic_shapes=["b, n"],
                                  symbolic_constraints=("n >= 8", "mod(n, 8) == 0")),
    }
    cases = [(64, 24), (32, 120)] if opts.quick else [(1 << 17, 24), (1 << 15, 120)]
    results = []
    for rows, n in cases:
        x = np.random.default_rng(0).standard_normal((rows, n), dtype=np.float32)
        ref = np.asarray(variants["static"](x))
        for v in variants.values():
            np.testing.assert_allclose(np.asarray(v(x)), ref, rtol=1e-5)
        times: dict[str, list[float]] = {k: [] for k in variants}
        for r in range(opts.rounds):
            names = list(variants)
            for k in names[r % 3:] + names[:r % 3]:
                t0 = time.perf_counter()
                variants[k](x)
                times[k].append((time.perf_counter() - t0) * 1e3)
        med = {k: statistics.median(v) for k, v in times.items()}
        gap = med["dynamic"] - med["static"]
        closed = (med["dynamic"] - med["dynamic+anchors"]) / gap if gap > 0 else None
        results.append({"rows": rows, "n": n, "median_ms": med, "gap_closed": closed})
    cpu = host()
    meta = {"command": " ".join([".venv/bin/python", "bench/phi-decompose/anchors.py",
                                 *(argv if argv is not None else sys.argv[1:])]),
            "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
            "cpu": cpu_description(), "llvm_cpu": cpu.cpu,
            "load_average": os.getloadavg(), "rounds": opts.rounds}
    lines = ["# Shape anchors through the JAX frontend", "",
             f"Reproduce: `{meta['command']}`", "",
             f"{meta['date']}, {meta['cpu']}, LLVM CPU `{cpu.cpu}`, load average "
             f"{meta['load_average']}; "
             f"median of {opts.rounds} interleaved rounds.", "",
             "| rows x n | static ms | dynamic ms | dynamic + anchors ms | gap closed |",
             "|---|---:|---:|---:|---:|"]
    for r in results:
        m = r["median_ms"]
        closed = "-" if r["gap_closed"] is None else f"{r['gap_closed']:.0%}"
        lines.append(f"| {r['rows']} x {r['n']} | {m['static']:.3f} | {m['dynamic']:.3f} | "
                     f"{m['dynamic+anchors']:.3f} | {closed} |")
    out = REPO / "bench" / ("work" if opts.quick else "results")
    out.mkdir(parents=True, exist_ok=True)
    (out / "phi-decompose-anchors.json").write_text(
        json.dumps({"meta": meta, "results": results}, indent=2) + "\n")
    (out / "phi-decompose-anchors.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
