"""``llvmaccel demo``: bundled kernels, optimized with and without the accel passes.

Each kernel's IR (``kernels/*.ll``, generated from the C next to it) is
JIT-compiled twice for this machine: with ``default<O3>`` alone and with
``default<O3>`` plus the llvmaccel passes at their extension points. Both run
on the same inputs, their results are compared, and the table shows which
passes fired, their remarks, the median time of each variant (runs
interleaved) and the speedup.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from . import jit
from .ir import load_module

__all__ = ["DemoKernel", "KERNELS", "run_demo"]

_KERNEL_DIR = Path(__file__).resolve().parent / "kernels"

# A workload: the argument list and the output arrays that the kernel fills
# (kernels only write their outputs, so every run computes the same values).
Workload = tuple[list, list]


@dataclass(frozen=True)
class DemoKernel:
    """A bundled kernel and how to feed it."""

    name: str
    ir_file: str
    function: str
    description: str
    make_workload: Callable[[bool], Workload]


def _embedding_bag(quick: bool) -> Workload:
    rng = np.random.default_rng(0)
    rows = 1 << 12 if quick else 1 << 22  # 1 GiB of float32 rows of 64
    bags, per_bag = (256, 32) if quick else (32768, 32)
    table = rng.standard_normal((rows, 64), dtype=np.float32)
    indices = rng.integers(0, rows, bags * per_bag, dtype=np.int64)
    offsets = np.arange(0, bags * per_bag + 1, per_bag, dtype=np.int64)
    out = np.empty((bags, 64), dtype=np.float32)
    return [table, indices, offsets, bags, out], [out]


def _spmv(quick: bool) -> Workload:
    rng = np.random.default_rng(1)
    n = 1 << 12 if quick else 1 << 26  # x: 512 MiB of float64
    rows, per_row = (1024, 16) if quick else (1 << 19, 16)
    row_ptr = np.arange(0, rows * per_row + 1, per_row, dtype=np.int64)
    cols = rng.integers(0, n, rows * per_row, dtype=np.int32)
    vals = rng.standard_normal(rows * per_row)
    x = rng.standard_normal(n)
    y = np.empty(rows)
    return [row_ptr, cols, vals, x, rows, y], [y]


def _scale_add(quick: bool) -> Workload:
    rng = np.random.default_rng(2)
    n = 1 << 12 if quick else 1 << 25
    x = rng.standard_normal(n, dtype=np.float32)
    y = rng.standard_normal(n, dtype=np.float32)
    out = np.empty(n, dtype=np.float32)
    return [out, x, y, 0.5, n], [out]


KERNELS: tuple[DemoKernel, ...] = (
    DemoKernel("embedding_bag", "embedding_bag.ll", "embedding_bag_sum",
               "embedding-bag sum, 1 GiB table, bags of 32 random rows", _embedding_bag),
    DemoKernel("spmv_csr", "spmv.ll", "spmv_csr",
               "CSR sparse matrix-vector product, random columns over 512 MiB", _spmv),
    DemoKernel("scale_add", "scale_add.ll", "scale_add",
               "control: contiguous stream, left to the hardware prefetcher", _scale_add),
)


@dataclass
class DemoResult:
    """One row of the demo table."""

    kernel: DemoKernel
    fired: list[str]
    passed: int
    missed: int
    first_remark: str
    baseline_ms: float
    accel_ms: float
    results_match: bool

    @property
    def speedup(self) -> float:
        return self.baseline_ms / self.accel_ms if self.accel_ms else float("nan")


def _time_ms(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1e3


def run_kernel(kernel: DemoKernel, quick: bool, runs: int) -> DemoResult:
    """Compiles ``kernel`` both ways, checks they agree and times them interleaved."""
    module = load_module(_KERNEL_DIR / kernel.ir_file)
    baseline = jit.compile(module, "default<O3>", auto="none")
    accel = jit.compile(module, "default<O3>", auto="all")
    base_fn, accel_fn = baseline[kernel.function], accel[kernel.function]

    args, outputs = kernel.make_workload(quick)
    base_fn(*args)
    expected = [out.copy() for out in outputs]
    accel_fn(*args)
    match = all(np.array_equal(e, o) for e, o in zip(expected, outputs, strict=False))

    times: dict[str, list[float]] = {"base": [], "accel": []}
    for _ in range(runs):  # interleaved, so drift hits both variants alike
        times["base"].append(_time_ms(lambda: base_fn(*args)))
        times["accel"].append(_time_ms(lambda: accel_fn(*args)))

    report = accel.report
    passed = report.passed()
    return DemoResult(
        kernel=kernel,
        fired=report.fired(),
        passed=len(passed),
        missed=len(report.missed()),
        first_remark=(passed[0].message if passed else
                      report.missed()[0].message if report.missed() else ""),
        baseline_ms=statistics.median(times["base"]),
        accel_ms=statistics.median(times["accel"]),
        results_match=match,
    )


def format_table(results: Sequence[DemoResult]) -> str:
    """The demo table in Markdown."""
    lines = [
        "| kernel | passes fired | remarks (passed/missed) | O3 ms | O3+accel ms | speedup "
        "| same result |",
        "|---|---|---|---:|---:|---:|---|",
    ]
    for r in results:
        lines.append(
            f"| {r.kernel.name} | {', '.join(r.fired) or '-'} | {r.passed}/{r.missed} "
            f"| {r.baseline_ms:.2f} | {r.accel_ms:.2f} | {r.speedup:.2f}x "
            f"| {'yes' if r.results_match else 'NO'} |"
        )
    return "\n".join(lines)


def run_demo(quick: bool = False, runs: int | None = None,
             kernels: Sequence[str] | None = None) -> int:
    """Runs the demo and prints its table; returns a process exit code."""
    runs = runs or (3 if quick else 7)
    chosen = [k for k in KERNELS if not kernels or k.name in kernels]
    if kernels and len(chosen) != len(set(kernels)):
        known = ", ".join(k.name for k in KERNELS)
        print(f"llvmaccel demo: unknown kernel in {list(kernels)} (known: {known})")
        return 2
    results = []
    for kernel in chosen:
        print(f"-- {kernel.name}: {kernel.description}", flush=True)
        result = run_kernel(kernel, quick, runs)
        if result.first_remark:
            print(f"   accel remark: {result.first_remark}")
        results.append(result)
    print()
    print(format_table(results))
    print(f"\nmedian of {runs} interleaved runs each, single thread;"
          f"{' quick sizes;' if quick else ''} JIT for this CPU")
    return 0 if all(r.results_match for r in results) else 1
