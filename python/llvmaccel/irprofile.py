"""Profiling one function of an IR file: ``llvmaccel profile`` on the command line.

:func:`profile_ir` compiles a function for this machine through a pipeline,
runs it on generated inputs (the same argument specs and guarded buffers as
:func:`llvmaccel.check`), and measures

- the time per call, median of interleaved rounds, and with ``compare=True``
  the same function compiled without the llvmaccel passes in the same
  rounds (the ratio is what the passes buy on this input);
- with ``loops=True``, the time spent in every loop nest (the
  ``accel-loop-profile`` pass, run on a separate instrumented copy so the
  counters do not distort the call times), named by function, header block
  and source line when the IR carries debug locations;
- which llvmaccel passes transformed the function.

The runs happen in a forked child process: a function that faults or hangs
on the inputs is reported as a :class:`~llvmaccel.errors.ProfileError`, and
the calling interpreter survives it.
"""

from __future__ import annotations

import ctypes
import faulthandler
import json
import os
import re
import select
import signal
import statistics
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from .errors import LLVMAccelError
from .inputs import ArgSpec, GuardedBuffers, Layout, make_case
from .ir import Module, parse_ir
from .irinfo import describe
from .profiling import LOOP_PASS

__all__ = ["IRLoop", "IRProfile", "ProfileError", "profile_ir", "without_accel"]


class ProfileError(LLVMAccelError):
    """The function could not be profiled: it faulted, crashed or timed out on
    the generated inputs, or its parameters cannot be generated."""


@dataclass
class IRLoop:
    """One loop nest's share of the calls (``accel-loop-profile``).

    Attributes:
        function: The function holding the loop.
        header: The loop's header block.
        location: ``file:line`` of the loop from debug information, or "".
        entries: How many times the loop was entered, per call.
        seconds: Time spent in it per call.
    """

    function: str
    header: str
    location: str
    entries: float
    seconds: float


@dataclass
class IRProfile:
    """What :func:`profile_ir` measured.

    Attributes:
        function: The profiled function.
        pipeline: The pipeline it was compiled with.
        inputs: How its arguments were made (one line per parameter).
        rounds: Timed rounds (each a call of every variant, interleaved).
        calls_per_round: Calls per variant in each round.
        seconds: Median time per call with the pipeline.
        baseline_seconds: The same without the llvmaccel passes
            (``compare=True``), else None.
        passes: llvmaccel passes that transformed the module, with how many
            transformations each made.
        loops: Loop nests, slowest first (``loops=True``).
        counter_hz: The loop counter's rate (0: the target has none).
    """

    function: str
    pipeline: str
    inputs: str
    rounds: int
    calls_per_round: int
    seconds: float
    baseline_seconds: float | None = None
    passes: dict[str, int] = field(default_factory=dict)
    loops: list[IRLoop] = field(default_factory=list)
    counter_hz: float = 0.0

    @property
    def speedup(self) -> float | None:
        """Baseline time over time with the passes (above 1: the passes pay)."""
        if self.baseline_seconds is None or not self.seconds:
            return None
        return self.baseline_seconds / self.seconds

    def table(self) -> str:
        """The profile as text."""
        fired = ", ".join(f"{p} ({n})" for p, n in self.passes.items()) or "none"
        lines = [f"@{self.function} through '{self.pipeline}' "
                 f"(median of {self.rounds} rounds of {self.calls_per_round} calls)",
                 f"  inputs: {self.inputs}",
                 f"  llvmaccel passes that fired: {fired}",
                 f"  time per call: {_us(self.seconds)}"]
        if self.baseline_seconds is not None:
            lines.append(f"  without the llvmaccel passes: {_us(self.baseline_seconds)} "
                         f"({self.speedup:.2f}x with them)")
        if self.loops:
            rows = [("loop", "source", "entries/call", "us/call", "share")]
            for lp in self.loops:
                share = lp.seconds / self.seconds if self.seconds else 0.0
                rows.append((f"{lp.function}:{lp.header}", lp.location or "-",
                             f"{lp.entries:g}", f"{lp.seconds * 1e6:.2f}", f"{share:.1%}"))
            widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
            lines.append("")
            for k, r in enumerate(rows):
                lines.append("  " + "  ".join(c.ljust(w) for c, w in
                                              zip(r, widths, strict=True)).rstrip())
                if k == 0:
                    lines.append("  " + "  ".join("-" * w for w in widths))
            lines.append("  (loop times come from an instrumented copy; shares are of the "
                         "uninstrumented call time)")
        elif self.counter_hz == 0.0 and self.rounds:
            lines.append("  (no loop times: this target has no counter accel-loop-profile "
                         "reads)")
        return "\n".join(lines)

    def to_dict(self) -> dict:
        """The profile as plain data (``--json``)."""
        out = asdict(self)
        out["speedup"] = self.speedup
        return out

    def __str__(self) -> str:
        return self.table()


def _us(seconds: float) -> str:
    return f"{seconds * 1e6:.3f} us" if seconds < 1e-2 else f"{seconds * 1e3:.3f} ms"


def profile_ir(
    module: Module | str | bytes | os.PathLike,
    function: str,
    pipeline: str = "default<O3>",
    *,
    compare: bool = False,
    loops: bool = True,
    args: dict[str, ArgSpec] | None = None,
    rounds: int = 7,
    min_round_seconds: float = 0.02,
    seed: int = 0,
    timeout: float = 60.0,
) -> IRProfile:
    """Times ``function`` of ``module`` compiled through ``pipeline`` for this
    machine, on one generated input (:func:`llvmaccel.check`'s generator in
    its typical mode: indices in range, finite values, trip counts covering
    the buffers; ``args`` as check's ``args``; case 0 of ``seed``).

    Args:
        module: A Module, IR text or bitcode, or the path of a .ll/.bc file.
        function: The function to run.
        pipeline: The optimization pipeline (``default<O3>`` includes the
            llvmaccel passes at their extension points).
        compare: Also time the function compiled without the llvmaccel
            passes (taken out of the pipeline's text and of the default
            pipelines, ``auto="none"``), interleaved with the first.
        loops: Time each loop nest (an instrumented copy with
            ``accel-loop-profile``).
        args: Input specs by parameter name or index.
        rounds: Timed rounds (the median is reported; at least 1).
        min_round_seconds: Each round calls a variant enough times to last
            about this long.
        seed: Seed of the generated input.
        timeout: Seconds before the run is abandoned.

    Raises:
        ProfileError: The inputs cannot be made, or the function faulted,
            crashed or timed out.
        IRParseError: ``module`` is not valid IR.
        ValueError: ``rounds`` is below 1.
    """
    if not isinstance(rounds, int) or rounds < 1:
        raise ValueError(f"rounds must be an integer >= 1, got {rounds!r}")
    if isinstance(module, os.PathLike) or (isinstance(module, str) and "\n" not in module
                                           and Path(module).is_file()):
        module = parse_ir(Path(module).read_bytes() if str(module).endswith(".bc")
                          else Path(module).read_text())
    elif not isinstance(module, Module):
        module = parse_ir(module)
    text = str(module)
    try:
        info = describe(text, function)
        layout = Layout.build(info, args)
    except (KeyError, TypeError, ValueError) as err:
        raise ProfileError(f"@{function}: {err}") from err
    job = {"text": text, "function": function, "pipeline": pipeline, "compare": compare,
           "loops": loops, "rounds": rounds, "min_round": min_round_seconds, "seed": seed}
    result = _in_child(job, layout, timeout)
    prof = IRProfile(function, pipeline, layout.describe(), rounds, result["calls"],
                     result["seconds"], result.get("baseline"), result["passes"],
                     [IRLoop(**lp) for lp in result["loops"]], result["hz"])
    return prof


def without_accel(pipeline: str) -> str:
    """``pipeline`` with every llvmaccel pass taken out (``verify`` if
    nothing is left): ``function(sroa,accel-prefetch<distance=8>)`` becomes
    ``function(sroa)``."""
    text = re.sub(r"accel-[a-z-]+(<[^<>]*>)?", "", pipeline)
    while True:
        new = re.sub(r",\s*,", ",", text)
        new = re.sub(r"\(\s*,", "(", new)
        new = re.sub(r",\s*\)", ")", new)
        new = re.sub(r"[a-z-]+(<[^<>]*>)?\(\s*\)", "", new).strip(" ,")
        if new == text:
            break
        text = new
    return text or "verify"


def _in_child(job: dict, layout: Layout, timeout: float) -> dict:
    """Runs :func:`_measure` in a forked child; its JSON result comes back
    through a pipe."""
    rfd, wfd = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(rfd)
        faulthandler.disable()  # a fault is the parent's to report
        code = 0
        try:
            payload = json.dumps(_measure(job, layout)).encode()
        except BaseException as err:  # noqa: BLE001 - reported to the parent
            payload = json.dumps({"error": f"{type(err).__name__}: {err}"}).encode()
            code = 3
        with os.fdopen(wfd, "wb") as out:
            out.write(payload)
        os._exit(code)
    os.close(wfd)
    chunks = []
    deadline = time.monotonic() + timeout
    with os.fdopen(rfd, "rb") as inp:
        while True:
            left = deadline - time.monotonic()
            ready, _, _ = select.select([inp], [], [], max(left, 0))
            if not ready:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                raise ProfileError(f"@{job['function']}: no result after {timeout:g} s")
            chunk = os.read(inp.fileno(), 1 << 16)
            if not chunk:
                break
            chunks.append(chunk)
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        name = signal.Signals(os.WTERMSIG(status)).name
        raise ProfileError(f"@{job['function']} died of {name} on the generated input "
                           "(run `llvmaccel check` on it to see whether the pipeline "
                           "or the original is at fault)")
    data = json.loads(b"".join(chunks) or b"{}")
    if "error" in data:
        raise ProfileError(f"@{job['function']}: {data['error']}")
    return data


def _measure(job: dict, layout: Layout) -> dict:
    """In the child: compile the variants, time them, read the loop counters."""
    from . import jit
    from .profiling import _counter_hz

    fn = job["function"]
    variants = {"main": jit.compile(job["text"], job["pipeline"])}
    if job["compare"]:
        variants["baseline"] = jit.compile(job["text"], without_accel(job["pipeline"]),
                                           auto="none")
    fired: dict[str, int] = {}
    for r in variants["main"].report.passed():
        if r.pass_name.startswith("accel-"):
            fired[r.pass_name] = fired.get(r.pass_name, 0) + 1
    case = make_case(layout, job["seed"], 0, typical=True)
    bufs = GuardedBuffers(layout, case)
    try:
        call_args = [bufs.addresses[s.param.index] if s.param.is_pointer
                     else case.scalars[s.param.index] for s in layout.slots]
        kernels = {name: cm[fn] for name, cm in variants.items()}
        kernels["main"](*call_args)  # warm up and size the rounds
        t0 = time.perf_counter()
        kernels["main"](*call_args)
        once = max(time.perf_counter() - t0, 1e-7)
        calls = max(1, min(1_000_000, int(job["min_round"] / once)))
        times: dict[str, list[float]] = {name: [] for name in kernels}
        for _ in range(job["rounds"]):
            for name, kernel in kernels.items():
                start = time.perf_counter()
                for _ in range(calls):
                    kernel(*call_args)
                times[name].append((time.perf_counter() - start) / calls)
        out = {"calls": calls, "seconds": statistics.median(times["main"]),
               "baseline": statistics.median(times["baseline"]) if "baseline" in times
               else None, "passes": fired, "loops": [], "hz": 0.0}
        if job["loops"]:
            out["hz"] = hz = _counter_hz()
            if hz:
                out["loops"] = _loop_times(job, call_args, calls, hz)
    finally:
        bufs.close()
    return out


def _loop_times(job: dict, call_args: list, calls: int, hz: float) -> list[dict]:
    """Per-call loop times from a copy compiled with the loop-timing pass."""
    from . import jit

    timed = jit.compile(job["text"], f"{job['pipeline']},{LOOP_PASS}")
    try:
        count = ctypes.c_int64.from_address(timed.address("__llvmaccel_loop_count")).value
    except LLVMAccelError:  # no loop was timed: the pass adds no tables
        return []
    counters = (ctypes.c_int64 * (2 * count)).from_address(
        timed.address("__llvmaccel_loop_counters"))
    names = ctypes.string_at(timed.address("__llvmaccel_loop_names")).decode().splitlines()
    kernel = timed[job["function"]]
    before = list(counters)
    for _ in range(calls):
        kernel(*call_args)
    now = list(counters)
    loops = []
    for k, line in enumerate(names):
        parts = line.split("\t") + ["", ""]
        entries = now[2 * k + 1] - before[2 * k + 1]
        if not entries:
            continue
        loops.append({"function": parts[0], "header": parts[1], "location": parts[2],
                      "entries": entries / calls,
                      "seconds": (now[2 * k] - before[2 * k]) / hz / calls})
    return sorted(loops, key=lambda lp: -lp["seconds"])
