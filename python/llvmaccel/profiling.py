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
  the run and the llvmaccel passes that transformed them. With
  :func:`enable_loop_timing` (``LLVMACCEL_PROFILE_LOOPS=1``) before
  compiling, the ``accel-loop-profile`` pass times every loop nest too, and
  the table gives each nest's time under its kernel, named after the
  frontend op it computes.
"""

from __future__ import annotations

import ctypes
import os
import re
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .compiler import CompiledGraph

__all__ = ["KernelProfile", "LoopProfile", "Profile", "enable_loop_timing",
           "enable_perf_map", "loop_timing_enabled", "perf_map_enabled", "perf_map_path",
           "profile"]

_perf_map: bool | None = None
_loop_timing: bool | None = None
LOOP_PASS = "accel-loop-profile"


def loop_timing_enabled() -> bool:
    """Whether graphs compiled now get their loops timed
    (:func:`enable_loop_timing`, else ``$LLVMACCEL_PROFILE_LOOPS`` is ``1``)."""
    if _loop_timing is not None:
        return _loop_timing
    return os.environ.get("LLVMACCEL_PROFILE_LOOPS", "") not in ("", "0")


def enable_loop_timing(on: bool = True) -> None:
    """Times the loop nests of every graph compiled from now on: the
    pipeline ends with the ``accel-loop-profile`` pass, which reads the
    cycle counter around each outermost loop, and :func:`profile` reports
    the time per loop nest and the frontend op it computes. The counters cost
    a few cycles per loop nest entered; graphs compiled without it pay
    nothing (it is part of the compilation cache key, through the pipeline).
    """
    global _loop_timing
    _loop_timing = bool(on)


def with_loop_timing(pipeline: str) -> str:
    """``pipeline``, ending with the loop-timing pass when it is enabled."""
    if loop_timing_enabled() and LOOP_PASS not in pipeline:
        return f"{pipeline},{LOOP_PASS}"
    return pipeline


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
class LoopProfile:
    """One timed loop nest of a kernel (:func:`enable_loop_timing`).

    Attributes:
        header: The loop's header block (``n<node>.loop<k>`` in generated code).
        op: The frontend op whose loop it is, or "".
        source: That op's source line, or "".
        entries: How many times the loop was entered.
        cycles: Counter ticks spent in it.
        seconds: The same in seconds (the counter's rate measured at start).
    """

    header: str
    op: str
    source: str
    entries: int
    cycles: int
    seconds: float


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
        loops: Its timed loop nests, slowest first (when it was compiled
            with :func:`enable_loop_timing`).
    """

    label: str
    sources: list[tuple[str, str]]
    calls: int = 0
    total_ns: int = 0
    passes: list[str] = field(default_factory=list)
    loops: list[LoopProfile] = field(default_factory=list)

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
            for lp in k.loops:
                what = f"{lp.op} ({lp.source})" if lp.source else lp.op or "?"
                mean = lp.seconds / lp.entries * 1e6 if lp.entries else 0.0
                rows.append(("", f"  loop {lp.header}: {what}", str(lp.entries),
                             f"{lp.seconds * 1e3:.3f}", f"{mean:.1f}",
                             f"{lp.seconds * 1e9 / self.wall_ns:.1%}" if self.wall_ns else "-",
                             ""))
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


class _LoopTables:
    """The loop-timing tables of one compiled graph (accel-loop-profile)."""

    def __init__(self, graph: CompiledGraph) -> None:
        module = graph._module  # noqa: SLF001 - the graph's own JIT
        n = ctypes.c_int64.from_address(module.address("__llvmaccel_loop_count")).value
        self.counters = (ctypes.c_int64 * (2 * n)).from_address(
            module.address("__llvmaccel_loop_counters"))
        names = ctypes.string_at(module.address("__llvmaccel_loop_names")).decode()
        self.loops = [line.split("\t") for line in names.splitlines()]
        self.graph = graph

    def snapshot(self) -> list[int]:
        return list(self.counters)

    def since(self, before: list[int]) -> list[LoopProfile]:
        hz = _counter_hz()
        g = self.graph.graph
        out = []
        now = list(self.counters)
        for k, (_function, header, _loc) in enumerate(self.loops):
            cycles = now[2 * k] - before[2 * k]
            entries = now[2 * k + 1] - before[2 * k + 1]
            if not entries:
                continue
            op, src = "", ""
            m = re.match(r"n(\d+)\.", header)
            if m and int(m.group(1)) in g.node_source:
                op, src = g.sources[g.node_source[int(m.group(1))]]
            out.append(LoopProfile(header, op, src, entries, cycles,
                                   cycles / hz if hz else 0.0))
        return sorted(out, key=lambda lp: -lp.cycles)


def _loop_tables(graph: CompiledGraph) -> _LoopTables | None:
    from .errors import JITError

    if LOOP_PASS not in graph.pipeline:
        return None
    try:
        return _LoopTables(graph)
    except JITError:  # a graph without loops has no tables
        return None


_hz: float | None = None


def _counter_hz() -> float:
    """Ticks per second of the counter accel-loop-profile reads on this host
    (measured once against the wall clock)."""
    global _hz
    if _hz is None:
        from . import jit
        from .target import host

        triple = host().triple
        name = "readcyclecounter" if triple.startswith(("x86_64", "i686")) else \
            "readsteadycounter" if triple.startswith("aarch64") else ""
        if not name:
            _hz = 0.0
            return _hz
        now = jit.compile(f"declare i64 @llvm.{name}()\n"
                          f"define i64 @now() {{\n  %t = call i64 @llvm.{name}()\n"
                          "  ret i64 %t\n}\n", "function(verify)")
        tick = now.ctypes_function("now", ctypes.c_int64)
        t0, c0 = time.perf_counter(), tick()
        while time.perf_counter() - t0 < 0.02:
            pass
        t1, c1 = time.perf_counter(), tick()
        _hz = (c1 - c0) / (t1 - t0)
    return _hz


class _Collector:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.by_graph: dict[int, tuple[CompiledGraph, KernelProfile]] = {}
        self.tables: dict[int, tuple[_LoopTables, list[int]]] = {}

    def begin(self, graph: CompiledGraph) -> None:
        """Before a call: the first time a graph is seen, its loop counters."""
        if id(graph) in self.tables or id(graph) in self.by_graph:
            return
        tables = _loop_tables(graph)
        if tables is not None:
            with self.lock:
                self.tables.setdefault(id(graph), (tables, tables.snapshot()))

    def finish(self) -> None:
        for gid, (tables, before) in self.tables.items():
            self.by_graph[gid][1].loops = tables.since(before)

    def add(self, graph: CompiledGraph, ns: int) -> None:
        with self.lock:
            hit = self.by_graph.get(id(graph))
            if hit is None:
                passes = [p for p in graph.report.fired() if p != LOOP_PASS]
                hit = (graph, KernelProfile(graph.label, list(graph.graph.sources),
                                            passes=passes))
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
    col.begin(graph)
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
    col.finish()
    kernels = sorted((k for _, k in col.by_graph.values()), key=lambda k: -k.total_ns)
    return Profile(kernels, wall, result)
