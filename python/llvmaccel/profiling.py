"""Seeing where compiled code spends its time, in the model's own terms.

Three views, each naming kernels after the frontend ops they came from (FX
nodes or jaxpr equations, with their source lines, :attr:`Graph.sources
<llvmaccel.graph.Graph.sources>`):

- **Linux perf.** With :func:`enable_perf_map` (or ``LLVMACCEL_PERF_MAP=1``
  in the environment) every function JIT-compiled from then on is written to
  ``/tmp/perf-<pid>.map``, the file ``perf report`` reads to name JIT'd
  code: ``llvmaccel:llvmaccel_main [addmm@model.py:12, relu@model.py:13]``.
- **torch.profiler.** While a :class:`torch.profiler.profile` is recording,
  every kernel call is a ``record_function`` range named like the perf
  symbol, nested under the Python frames that called the model, in the
  profiler's tables and Chrome traces. Nothing is recorded (and nothing is
  paid) when no profiler runs.
- **llvmaccel.profile.** :func:`profile` runs a function (a compiled torch
  model, a :func:`llvmaccel.jax.jit` function, anything calling compiled
  graphs) and times every kernel call: :class:`Profile` prints a table of
  kernels, their ops and source lines, calls, total and mean time, share of
  the run and the llvmaccel passes that transformed them.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .compiler import CompiledGraph

__all__ = ["KernelProfile", "Profile", "enable_perf_map", "perf_map_enabled",
           "perf_map_path", "profile"]

_perf_map: bool | None = None


def perf_map_enabled() -> bool:
    """Whether JIT compilations are written to the perf map
    (:func:`enable_perf_map`, else ``$LLVMACCEL_PERF_MAP`` is ``1``)."""
    if _perf_map is not None:
        return _perf_map
    return os.environ.get("LLVMACCEL_PERF_MAP", "") not in ("", "0")


def enable_perf_map(on: bool = True) -> None:
    """Writes every function JIT-compiled from now on to :func:`perf_map_path`.

    Kernels compiled before the call are not listed: enable it before the
    model's first call (or set ``LLVMACCEL_PERF_MAP=1``).
    """
    global _perf_map
    _perf_map = bool(on)


def perf_map_path() -> str:
    """The perf map of this process, ``/tmp/perf-<pid>.map``."""
    return f"/tmp/perf-{os.getpid()}.map"


@dataclass
class KernelProfile:
    """The calls of one compiled graph during a :func:`profile` run.

    Attributes:
        label: The kernel's name as perf and torch.profiler show it.
        sources: (op, source line) of the frontend ops it computes.
        calls: How many times it ran.
        total_ns: Time spent in it, nanoseconds (wall clock around each call,
            argument checks and output allocation included).
        passes: The llvmaccel passes that transformed it.
    """

    label: str
    sources: list[tuple[str, str]]
    calls: int = 0
    total_ns: int = 0
    passes: list[str] = field(default_factory=list)

    @property
    def mean_ns(self) -> float:
        """Mean time per call, nanoseconds."""
        return self.total_ns / self.calls if self.calls else 0.0


@dataclass
class Profile:
    """What :func:`profile` measured.

    Attributes:
        kernels: One entry per compiled graph that ran, slowest first.
        wall_ns: Wall-clock time of the whole run, nanoseconds.
        result: What the profiled function returned (its last run).
    """

    kernels: list[KernelProfile]
    wall_ns: int
    result: Any = None

    @property
    def kernel_ns(self) -> int:
        """Time spent in llvmaccel kernels, nanoseconds."""
        return sum(k.total_ns for k in self.kernels)

    def table(self) -> str:
        """The profile as a text table."""
        rows = [("#", "source: ops", "calls", "total ms", "mean us", "share", "passes")]
        for i, k in enumerate(self.kernels, 1):
            share = k.total_ns / self.wall_ns if self.wall_ns else 0.0
            rows.append((str(i), _by_source(k.sources), str(k.calls),
                         f"{k.total_ns / 1e6:.3f}", f"{k.mean_ns / 1e3:.1f}", f"{share:.1%}",
                         ", ".join(k.passes) or "-"))
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
        lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()
                 for r in rows]
        lines.insert(1, "  ".join("-" * w for w in widths))
        other = self.wall_ns - self.kernel_ns
        lines.append(f"wall {self.wall_ns / 1e6:.3f} ms: {self.kernel_ns / 1e6:.3f} ms in "
                     f"llvmaccel kernels, {other / 1e6:.3f} ms elsewhere")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.table()


def _by_source(sources: list[tuple[str, str]], limit: int = 100) -> str:
    """``model.py:12 (forward): addmm, relu; model.py:13 (forward): ...``"""
    groups: dict[str, list[str]] = {}
    for op, src in sources:
        groups.setdefault(src or "?", []).append(op)
    text = "; ".join(f"{src}: {', '.join(ops)}" for src, ops in groups.items()) or "-"
    return text if len(text) <= limit else text[:limit - 3] + "..."


class _Collector:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.by_graph: dict[int, tuple[CompiledGraph, KernelProfile]] = {}

    def add(self, graph: CompiledGraph, ns: int) -> None:
        with self.lock:
            hit = self.by_graph.get(id(graph))
            if hit is None:
                hit = (graph, KernelProfile(graph.label, list(graph.graph.sources),
                                            passes=graph.report.fired()))
                self.by_graph[id(graph)] = hit
            hit[1].calls += 1
            hit[1].total_ns += ns


_collector: _Collector | None = None
_collector_lock = threading.Lock()


def instrumented() -> bool:
    """Whether kernel calls are timed or recorded now (a :func:`profile`
    run, or a torch.profiler recording). Cheap: checked on every call."""
    if _collector is not None:
        return True
    prof = sys.modules.get("torch.autograd.profiler")
    return bool(prof is not None and getattr(prof, "_is_profiler_enabled", False))


def call_instrumented(graph: CompiledGraph, run: Callable[[], Any]) -> Any:
    """Runs one kernel call under the active profilers."""
    prof = sys.modules.get("torch.autograd.profiler")
    if prof is not None and getattr(prof, "_is_profiler_enabled", False):
        with prof.record_function(graph.label):
            return _timed(graph, run)
    return _timed(graph, run)


def _timed(graph: CompiledGraph, run: Callable[[], Any]) -> Any:
    col = _collector
    if col is None:
        return run()
    start = time.perf_counter_ns()
    try:
        return run()
    finally:
        col.add(graph, time.perf_counter_ns() - start)


def profile(fn: Callable[..., Any], *args: Any, repeat: int = 1, **kwargs: Any) -> Profile:
    """Runs ``fn(*args, **kwargs)`` ``repeat`` times and times every
    llvmaccel kernel call it makes (in any thread).

    Compile before profiling (call ``fn`` once) to keep compilation out of
    the wall time. The timing costs two clock reads per kernel call; calls
    made outside a profile pay nothing but one check.

    Raises:
        ValueError: ``repeat`` is below 1.
        RuntimeError: Another :func:`profile` run is active.
    """
    global _collector
    if not isinstance(repeat, int) or repeat < 1:
        raise ValueError(f"repeat must be an integer >= 1, got {repeat!r}")
    col = _Collector()
    with _collector_lock:
        if _collector is not None:
            raise RuntimeError("llvmaccel.profile: another profile run is active")
        _collector = col
    try:
        start = time.perf_counter_ns()
        result = None
        for _ in range(repeat):
            result = fn(*args, **kwargs)
        wall = time.perf_counter_ns() - start
    finally:
        with _collector_lock:
            _collector = None
    kernels = sorted((k for _, k in col.by_graph.values()), key=lambda k: -k.total_ns)
    return Profile(kernels, wall, result)
