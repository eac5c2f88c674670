"""``llvmaccel demo``: bundled kernels, optimized with and without the accel passes.

Each kernel's IR (``kernels/*.ll``, generated from the C next to it) is
JIT-compiled twice for this machine: with ``default<O3>`` alone and with
``default<O3>`` plus the llvmaccel passes at their extension points. Then a
PyTorch model goes through ``torch.compile(backend="llvmaccel")`` and a JAX
function through ``llvmaccel.jax.jit``, each compiled with and without the
passes and checked against eager PyTorch and ``jax.jit``. Both variants run on
the same inputs, their results are compared, and the table shows which passes
fired, their remarks, the median time of each variant (runs interleaved) and
the speedup.
"""

from __future__ import annotations

import importlib.util
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from . import jit
from .ir import load_module
from .pipeline import Report

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

    name: str
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


def _interleaved_medians(base: Callable[[], object], accel: Callable[[], object],
                         runs: int) -> tuple[float, float]:
    """Median times of ``base`` and ``accel``, run alternately so that drift
    (frequency, other processes) hits both alike."""
    times: dict[str, list[float]] = {"base": [], "accel": []}
    for _ in range(runs):
        times["base"].append(_time_ms(base))
        times["accel"].append(_time_ms(accel))
    return statistics.median(times["base"]), statistics.median(times["accel"])


def _result(name: str, report: Report, base_ms: float, accel_ms: float,
            match: bool) -> DemoResult:
    passed, missed = report.passed(), report.missed()
    first = passed[0].message if passed else missed[0].message if missed else ""
    return DemoResult(name, report.fired(), len(passed), len(missed), first,
                      base_ms, accel_ms, match)


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
    match = all(np.array_equal(e, o) for e, o in zip(expected, outputs, strict=True))
    base_ms, accel_ms = _interleaved_medians(lambda: base_fn(*args),
                                             lambda: accel_fn(*args), runs)
    return _result(kernel.name, accel.report, base_ms, accel_ms, match)


def run_torch_model(quick: bool, runs: int) -> DemoResult:
    """A PyTorch recommendation model through ``torch.compile(backend="llvmaccel")``."""
    import torch

    from .torch import explain

    torch.manual_seed(0)
    rows = 1 << 12 if quick else 1 << 22  # 1 GiB table
    batch, per_bag = (64, 32) if quick else (4096, 32)

    class Recommender(torch.nn.Module):
        """Embedding bags of sparse features, then a small dense tower."""

        def __init__(self) -> None:
            super().__init__()
            self.bags = torch.nn.EmbeddingBag(rows, 64, mode="sum")
            self.top = torch.nn.Linear(64, 16)

        def forward(self, indices: torch.Tensor, offsets: torch.Tensor) -> torch.Tensor:
            return torch.relu(self.top(self.bags(indices, offsets)))

    model = Recommender().eval()
    indices = torch.randint(0, rows, (batch * per_bag,))
    offsets = torch.arange(0, batch * per_bag, per_bag)
    base = torch.compile(model, backend="llvmaccel", options={"auto": "none"})
    accel = torch.compile(model, backend="llvmaccel", options={"auto": "all"})
    with torch.no_grad():
        expected = model(indices, offsets)
        match = all(
            torch.allclose(fn(indices, offsets), expected, rtol=1e-4, atol=1e-4)
            for fn in (base, accel)
        )
        base_ms, accel_ms = _interleaved_medians(lambda: base(indices, offsets),
                                                 lambda: accel(indices, offsets), runs)
        report = Report(remarks=list(explain(model, indices, offsets).remarks))
    return _result("torch EmbeddingBag+Linear", report, base_ms, accel_ms, match)


def run_torch_conv(quick: bool, runs: int) -> DemoResult:
    """A padded 1-D CNN through ``torch.compile(backend="llvmaccel")``."""
    import torch

    from .torch import explain

    torch.manual_seed(0)
    batch, length = (2, 256) if quick else (8, 4096)

    class SequenceCNN(torch.nn.Module):
        """A depthwise-separable block over a sequence: zero-padded depthwise
        convolutions (direct loops whose padding is a bounds check:
        accel-masked-load's case) around a pointwise one (a GEMM)."""

        def __init__(self) -> None:
            super().__init__()
            self.d1 = torch.nn.Conv1d(16, 16, 7, padding=3, groups=16)
            self.p = torch.nn.Conv1d(16, 32, 1)
            self.d2 = torch.nn.Conv1d(32, 32, 7, padding=3, groups=32)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.d2(torch.relu(self.p(self.d1(x))))

    model = SequenceCNN().eval()
    x = torch.randn(batch, 16, length)
    base = torch.compile(model, backend="llvmaccel", options={"auto": "none"})
    accel = torch.compile(model, backend="llvmaccel", options={"auto": "all"})
    with torch.no_grad():
        expected = model(x)
        match = all(torch.allclose(fn(x), expected, rtol=1e-3, atol=1e-3)
                    for fn in (base, accel))
        base_ms, accel_ms = _interleaved_medians(lambda: base(x), lambda: accel(x), runs)
        report = Report(remarks=list(explain(model, x).remarks))
    return _result("torch Conv1d (padded)", report, base_ms, accel_ms, match)


def run_jax_fill_gather(quick: bool, runs: int) -> DemoResult:
    """A JAX fill-mode gather (out-of-range ids give 0) through ``llvmaccel.jax.jit``."""
    import jax
    import jax.numpy as jnp

    from .jax import jit as jax_jit

    size, lookups = (1 << 12, 1 << 12) if quick else (1 << 14, 1 << 22)

    def gather(x: jax.Array, ids: jax.Array) -> jax.Array:
        return jnp.take(x, ids, mode="fill", fill_value=0.0) * 2.0 + 1.0

    rng = np.random.default_rng(4)
    x = rng.standard_normal(size, dtype=np.float32)
    ids = rng.integers(-size // 8, size + size // 8, lookups, dtype=np.int32)
    base = jax_jit(gather, auto="none")
    accel = jax_jit(gather, auto="all")
    expected = np.asarray(jax.jit(gather)(x, ids))
    match = all(np.array_equal(np.asarray(fn(x, ids)), expected) for fn in (base, accel))
    base_ms, accel_ms = _interleaved_medians(lambda: base(x, ids), lambda: accel(x, ids), runs)
    compiled = accel.compiled_for(x, ids)
    report = compiled.report if compiled is not None else Report()
    return _result("jax take (fill mode)", report, base_ms, accel_ms, match)


def run_jax_function(quick: bool, runs: int) -> DemoResult:
    """A JAX gather-and-reduce function through ``llvmaccel.jax.jit``."""
    import jax
    import jax.numpy as jnp

    from .jax import jit as jax_jit

    rows = 1 << 12 if quick else 1 << 22
    lookups = 2048 if quick else 1 << 17

    def pooled(table: jax.Array, ids: jax.Array) -> jax.Array:
        """Sum of the looked-up rows, each scaled by its norm."""
        rows_ = jnp.take(table, ids, axis=0)
        return jnp.sum(rows_ * jnp.sqrt(jnp.sum(rows_ * rows_, axis=1, keepdims=True)), axis=0)

    rng = np.random.default_rng(3)
    table = rng.standard_normal((rows, 64), dtype=np.float32)
    ids = rng.integers(0, rows, lookups, dtype=np.int32)
    base = jax_jit(pooled, auto="none")
    accel = jax_jit(pooled, auto="all")
    expected = np.asarray(jax.jit(pooled)(table, ids))
    match = all(np.allclose(np.asarray(fn(table, ids)), expected, rtol=1e-3, atol=1e-2)
                for fn in (base, accel))
    base_ms, accel_ms = _interleaved_medians(lambda: base(table, ids),
                                             lambda: accel(table, ids), runs)
    compiled = accel.compiled_for(table, ids)
    report = compiled.report if compiled is not None else Report()
    return _result("jax take+reduce", report, base_ms, accel_ms, match)


def format_table(results: Sequence[DemoResult]) -> str:
    """The demo table in Markdown."""
    lines = [
        "| kernel | passes fired | remarks (passed/missed) | O3 ms | O3+accel ms | speedup "
        "| same result |",
        "|---|---|---|---:|---:|---:|---|",
    ]
    for r in results:
        lines.append(
            f"| {r.name} | {', '.join(r.fired) or '-'} | {r.passed}/{r.missed} "
            f"| {r.baseline_ms:.2f} | {r.accel_ms:.2f} | {r.speedup:.2f}x "
            f"| {'yes' if r.results_match else 'NO'} |"
        )
    return "\n".join(lines)


FRONTENDS: dict[str, Callable[[bool, int], DemoResult]] = {
    "torch": run_torch_model,
    "torch-conv": run_torch_conv,
    "jax": run_jax_function,
    "jax-fill": run_jax_fill_gather,
}
# The package each frontend row needs: rows whose package is missing are
# skipped with a note.
_NEEDS = {"torch": "torch", "torch-conv": "torch", "jax": "jax", "jax-fill": "jax"}


def run_demo(quick: bool = False, runs: int | None = None,
             kernels: Sequence[str] | None = None) -> int:
    """Runs the demo and prints its table; returns a process exit code."""
    runs = runs or (3 if quick else 7)
    known = [k.name for k in KERNELS] + list(FRONTENDS)
    unknown = sorted(set(kernels or ()) - set(known))
    if unknown:
        print(f"llvmaccel demo: unknown kernel {', '.join(unknown)} (known: {', '.join(known)})")
        return 2
    results = []
    for kernel in KERNELS:
        if kernels and kernel.name not in kernels:
            continue
        print(f"-- {kernel.name}: {kernel.description}", flush=True)
        results.append(run_kernel(kernel, quick, runs))
        _say_remark(results[-1])
    for name, run in FRONTENDS.items():
        if kernels and name not in kernels:
            continue
        if not _installed(_NEEDS[name]):
            print(f"-- {name}: skipped ({_NEEDS[name]} is not installed)", flush=True)
            continue
        print(f"-- {name}: {run.__doc__.splitlines()[0]}", flush=True)
        results.append(run(quick, runs))
        _say_remark(results[-1])
    print()
    print(format_table(results))
    print(f"\nmedian of {runs} interleaved runs each, single thread;"
          f"{' quick sizes;' if quick else ''} JIT for this CPU")
    return 0 if all(r.results_match for r in results) else 1


def _installed(package: str) -> bool:
    try:
        return importlib.util.find_spec(package) is not None
    except (ImportError, ValueError):  # a module set to None in sys.modules
        return False


def _say_remark(result: DemoResult) -> None:
    if result.first_remark:
        print(f"   accel remark: {result.first_remark}", flush=True)
