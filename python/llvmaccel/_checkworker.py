"""The process :func:`llvmaccel.check` runs each job in (``python -m llvmaccel._checkworker``).

It applies the pipeline (so a crashing pass kills this process, not the
caller), JIT-compiles the function before and after, and runs every case in a
forked child per version, on buffers that end before guard pages: a fault, a
crash or a hang ends that child only and is reported with the case. Events go
to stdout as JSON lines; the job comes as a JSON file named on the command line.
"""

from __future__ import annotations

import ctypes
import json
import os
import re
import resource
import select
import signal
import struct
import sys
import time
from dataclasses import dataclass

from . import jit
from .errors import LLVMAccelError, VerifyError
from .inputs import (
    ArgSpec,
    GuardedBuffers,
    Layout,
    describe_case,
    format_value,
    make_case,
    unpack,
)
from .ir import parse_ir
from .irinfo import describe
from .pipeline import run_passes

_FAULTS = {signal.SIGSEGV, signal.SIGBUS}


_JOB = [0]
_SINK: list[list[dict]] = []

#: Seconds spent per stage in the current job (sent with its ``end`` event):
#: ``parse``, ``pipeline``, ``print`` (the after IR as text), ``describe``
#: (reading the IR for inputs), ``jit``, ``inputs`` (making cases and guarded
#: buffers), ``execute`` (the forked children), ``compare`` and ``emit``.
_TIMES: dict[str, float] = {}


class _Timed:
    """Adds the time of a ``with`` block to :data:`_TIMES` under ``stage``."""

    __slots__ = ("stage", "start")

    def __init__(self, stage: str) -> None:
        self.stage = stage
        self.start = 0.0

    def __enter__(self) -> None:
        self.start = time.perf_counter()

    def __exit__(self, *exc: object) -> None:
        _TIMES[self.stage] = _TIMES.get(self.stage, 0.0) + time.perf_counter() - self.start


def _take_times() -> dict[str, float]:
    out = {k: round(v, 6) for k, v in _TIMES.items()}
    _TIMES.clear()
    return out


def _emit(event: dict) -> None:
    event["job"] = _JOB[0]
    if _SINK:
        _SINK[-1].append(event)
        return
    with _Timed("emit"):
        sys.stdout.write(json.dumps(event) + "\n")
        sys.stdout.flush()


def run_job_here(job: dict) -> list[dict]:
    """Runs one job in this process and returns its events (a crash of the
    pipeline or the compiler takes this process down: use it where that is fine)."""
    _SINK.append([])
    try:
        try:
            _run_job(job)
        except LLVMAccelError as err:
            _emit({"event": "error", "detail": f"{type(err).__name__}: {err}"})
        return _SINK[-1]
    finally:
        _SINK.pop()


@dataclass
class Outcome:
    """How one run ended: ``ok`` (with the return value's bytes), ``fault``,
    ``crash`` or ``timeout``."""

    kind: str
    detail: str = ""
    ret: bytes = b""


def _pack_ret(value: object, ty: str, bufs: GuardedBuffers) -> bytes:
    if ty == "void":
        return b""
    if ty.startswith("ptr"):  # addresses differ from run to run: say where it points
        if not value:
            return b"null"
        for i, addr in bufs.addresses.items():
            if addr <= value <= addr + bufs.sizes[i]:
                return f"param {i} + {value - addr}".encode()
        return b"elsewhere"
    if ty == "float":
        return struct.pack("<f", value)
    if ty == "double":
        return struct.pack("<d", value)
    return struct.pack("<q", int(value))


def _args(layout: Layout, case: object, bufs: GuardedBuffers) -> list:
    return [bufs.addresses[slot.param.index] if slot.param.is_pointer
            else case.scalars[slot.param.index] for slot in layout.slots]


def _outcome_of_status(status: int) -> Outcome:
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        kind = "fault" if sig in _FAULTS else "crash"
        return Outcome(kind, signal.Signals(sig).name)
    return Outcome("crash", f"exit status {os.WEXITSTATUS(status)}")


def _result(bufs: GuardedBuffers) -> Outcome:
    (length,) = struct.unpack("<I", ctypes.string_at(bufs.result, 4))
    return Outcome("ok", ret=ctypes.string_at(bufs.result + 4, length))


def _run(kernel: jit.Kernel, layout: Layout, case: object, bufs: GuardedBuffers,
         timeout: float) -> Outcome:
    """Runs one case in a forked child of its own."""
    return _run_batch(kernel, layout, [case], [bufs], timeout)[0]


def _run_batch(kernel: jit.Kernel, layout: Layout, cases: list, bufs: list[GuardedBuffers],
               timeout: float) -> list[Outcome]:
    """Runs the cases in order in forked children: one child runs case after
    case (a fork of this process costs more than most runs), and a case that
    faults, crashes or hangs ends its child only; the next child goes on from
    the case after it. A case may take ``timeout`` seconds from the moment the
    parent sees it started (up to twice that from its start)."""
    ret_ty = layout.info.return_type
    outcomes: list[Outcome | None] = [None] * len(cases)
    args = [_args(layout, c, b) for c, b in zip(cases, bufs, strict=True)]
    progress = ctypes.cast(bufs[0].result + 2048, ctypes.POINTER(ctypes.c_int64))
    start = 0
    while start < len(cases):
        progress[0], progress[1] = -1, start - 1  # started, done
        pid = os.fork()
        if pid == 0:  # the child: run, store the results, leave without cleanup
            for i in range(start, len(cases)):
                progress[0] = i
                try:
                    raw = _pack_ret(kernel(*args[i]), ret_ty, bufs[i])
                    ctypes.memmove(bufs[i].result, struct.pack("<I", len(raw)) + raw,
                                   4 + len(raw))
                except BaseException:  # noqa: BLE001 - any failure is the child's exit status
                    os._exit(3)
                progress[1] = i
            os._exit(0)
        fd = os.pidfd_open(pid)
        hung = None
        try:
            seen, deadline = progress[0], time.monotonic() + timeout
            while True:
                ready, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
                if ready:
                    break
                now_at = progress[0]
                if now_at != seen:  # a new case started: it gets its own time
                    seen, deadline = now_at, time.monotonic() + timeout
                    continue
                os.kill(pid, signal.SIGKILL)
                hung = max(now_at, start)
                break
            _, status = os.waitpid(pid, 0)
        finally:
            os.close(fd)
        done = int(progress[1])
        for i in range(start, min(done, len(cases) - 1) + 1):
            outcomes[i] = _result(bufs[i])
        if hung is not None:
            outcomes[hung] = Outcome("timeout", f"no result after {timeout:g} s")
            start = hung + 1
            continue
        if os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0:
            break
        failed = done + 1
        outcomes[failed] = _outcome_of_status(status)
        start = failed + 1
    return [o if o is not None else Outcome("crash", "not run") for o in outcomes]


def _ordered(bits: int, width: int) -> int:
    """Maps float bits to integers whose order is the floats' order."""
    sign = 1 << (width - 1)
    return sign - (bits & (sign - 1)) if bits & sign else sign + bits


def _ulp_distance(a: bytes, b: bytes, elem: str) -> int:
    """Largest ULP distance between corresponding floats (NaN == NaN)."""
    width = 32 if elem == "float" else 64
    fmt, ufmt = ("<f", "<I") if width == 32 else ("<d", "<Q")
    size = width // 8
    worst = 0
    for off in range(0, len(a) - size + 1, size):
        x, y = a[off:off + size], b[off:off + size]
        if x == y:
            continue
        fx, fy = struct.unpack(fmt, x)[0], struct.unpack(fmt, y)[0]
        if fx != fx and fy != fy:
            continue
        if (fx != fx) != (fy != fy):
            return 1 << 62
        ix = _ordered(struct.unpack(ufmt, x)[0], width)
        iy = _ordered(struct.unpack(ufmt, y)[0], width)
        worst = max(worst, abs(ix - iy))
    return worst


def _nans_only(a: bytes, b: bytes, elem: str) -> bool:
    """True when every float that differs in its bits is a NaN in both.

    LLVM's LangRef leaves the sign and payload of a NaN that an arithmetic
    instruction produces unspecified (any input NaN, quieted, or the
    preferred NaN), so a backend that commutes an ``fadd`` may change them:
    only NaN-ness is behaviour.
    """
    width = 32 if elem == "float" else 64
    fmt = "<f" if width == 32 else "<d"
    size = width // 8
    for off in range(0, len(a) - size + 1, size):
        x, y = a[off:off + size], b[off:off + size]
        if x == y:
            continue
        fx, fy = struct.unpack(fmt, x)[0], struct.unpack(fmt, y)[0]
        if not (fx != fx and fy != fy):
            return False
    return len(a) == len(b) and a[len(a) - len(a) % size:] == b[len(b) - len(b) % size:]


def _same(a: bytes, b: bytes, elem: str, layout: Layout, ulps: int) -> bool:
    if a == b:
        return True
    if elem not in ("float", "double"):
        return False
    if layout.fast_math:
        return _ulp_distance(a, b, elem) <= ulps
    return _nans_only(a, b, elem)


def _first_difference(a: bytes, b: bytes, elem: str) -> str:
    va, vb = unpack(a, elem), unpack(b, elem)
    for k, (x, y) in enumerate(zip(va, vb, strict=False)):
        if isinstance(x, float):
            differs = struct.pack("<d", x) != struct.pack("<d", y) and not (x != x and y != y)
        else:
            differs = x != y
        if differs:
            return f"element {k}: before {format_value(x)}, after {format_value(y)}"
    return "differs in trailing bytes"


def _compare(layout: Layout, before: Outcome, after: Outcome, b_bufs: GuardedBuffers,
             a_bufs: GuardedBuffers, ulps: int) -> tuple[str, str] | None:
    """(kind, detail) of a finding, or None when the two runs agree."""
    if after.kind in ("fault", "crash", "timeout") and before.kind == "ok":
        return after.kind, f"after: {after.kind} ({after.detail}); before ran to completion"
    if before.kind != "ok" or after.kind != "ok":
        return None  # the original's behaviour is undefined or it never ends
    ret_ty = layout.info.return_type
    if ret_ty.startswith("ptr") and before.ret != after.ret:
        return "mismatch", (f"returned pointer: before {before.ret.decode()}, "
                            f"after {after.ret.decode()}")
    if not _same(before.ret, after.ret, ret_ty, layout, ulps):
        rb = unpack(before.ret, ret_ty if ret_ty in ("float", "double") else "i64")
        ra = unpack(after.ret, ret_ty if ret_ty in ("float", "double") else "i64")
        return "mismatch", (f"return value: before {format_value(rb[0])}, "
                            f"after {format_value(ra[0])}")
    for slot in layout.slots:
        if not slot.param.is_pointer:
            continue
        i = slot.param.index
        x, y = b_bufs.read(i), a_bufs.read(i)
        if not _same(x, y, slot.elem, layout, ulps):
            return "mismatch", f"buffer %{slot.param.name}, " + _first_difference(x, y, slot.elem)
    return None


_LOADED: set[str] = set()
_WRITABLE_GLOBAL = re.compile(r"^@([-\w.$]+|\"[^\"]+\") = (?![^=]*\bconstant\b).*\bglobal\b",
                              re.M)


def _has_writable_globals(ir: str) -> bool:
    """True when the module defines or declares a global variable that is not
    constant and that its code refers to (LLVM's own ``@llvm.*`` lists and
    globals only those lists name, such as HIP's ``__hip_cuid_*``, are not
    program state)."""
    for m in _WRITABLE_GLOBAL.finditer(ir):
        name = m.group(1)
        if name.startswith("llvm."):
            continue
        uses = [line for line in ir.splitlines() if f"@{name}" in line
                and not line.startswith(("@llvm.", f"@{name} ="))]
        if uses:
            return True
    return False


def _load_libraries(job: dict, ir: str) -> None:
    """Loads the job's shared libraries (and the MLIR async runtime when the
    module calls it) into this process, where the JIT resolves symbols."""
    libs = list(job.get("libraries") or [])
    if "@mlirAsyncRuntime" in ir and not any("mlir_async_runtime" in lib for lib in libs):
        from .taskgen import async_runtime_library
        rt = async_runtime_library()
        if rt is None:
            raise LLVMAccelError("the module calls the MLIR async runtime and no "
                                 "libmlir_async_runtime.so is installed (libmlir-NN-dev)")
        libs.append(rt)
    for lib in libs:
        if lib not in _LOADED:
            try:
                ctypes.CDLL(lib, mode=ctypes.RTLD_GLOBAL)
            except OSError as err:
                raise LLVMAccelError(f"cannot load {lib}: {err}") from err
            _LOADED.add(lib)


def _compile_pipeline(job: dict, ir: str) -> str:
    """What both versions go through before the JIT: the job's choice, else
    coroutine splitting when the module has presplit coroutines (which the
    code generator cannot compile), else nothing."""
    if job.get("compile_pipeline"):
        return job["compile_pipeline"]
    if "@llvm.coro.id(" in ir or "presplitcoroutine" in ir:
        from .taskgen import COROUTINE_LOWERING
        return COROUTINE_LOWERING
    return "verify"


def _signature(info: object) -> tuple:
    return (info.return_type, tuple(p.type for p in info.params))


def main(argv: list[str]) -> int:
    """Runs the jobs in the JSON file ``argv[0]`` from job ``argv[1]`` on; events go to
    stdout, each with its job's number; a job's failure to compile is an ``error`` event.
    Each job's ``end`` event carries the seconds it spent per stage (``times``)."""
    first = int(argv[1]) if len(argv) > 1 else 0
    _JOB[0] = first
    _emit({"event": "ready"})
    with open(argv[0]) as f:
        jobs = json.load(f)["jobs"]
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    for number in range(first, len(jobs)):
        _JOB[0] = number
        _TIMES.clear()
        try:
            _run_job(jobs[number])
        except LLVMAccelError as err:
            _emit({"event": "error", "detail": f"{type(err).__name__}: {err}"})
        _emit({"event": "end", "times": _take_times()})
    return 0


def _run_job(job: dict) -> None:
    fn = job["function"]
    before_ir = job["before"]
    with _Timed("parse"):
        before = parse_ir(before_ir, "before")
        if job.get("after") is not None:
            after_ir = job["after"]
            after = parse_ir(after_ir, "after")
        else:
            after = before.clone()
    if job.get("after") is None:
        _emit({"event": "stage", "stage": "pipeline"})
        try:
            with _Timed("pipeline"):
                report = run_passes(after, job["pipeline"],
                                    verify_each=job.get("verify_each", True),
                                    remarks=job.get("remarks", ".*"), target=job.get("target"))
        except VerifyError as err:
            _emit({"event": "finding", "kind": "verify", "stage": "pipeline", "detail": str(err)})
            return
        with _Timed("print"):
            after_ir = str(after)
        fired: dict[str, int] = {}
        for r in report.passed():
            fired[r.pass_name] = fired.get(r.pass_name, 0) + 1
        _emit({"event": "pipeline", "after": after_ir, "fired": fired,
               "statistics": report.statistics})
    with _Timed("describe"):
        info_b = describe(before_ir, fn)
        info_a = describe(after_ir, fn)
    if _signature(info_b) != _signature(info_a):
        _emit({"event": "finding", "kind": "signature", "stage": "compare",
               "detail": f"before {_signature(info_b)}, after {_signature(info_a)}"})
        return
    execute = job.get("execute", True) is not False
    if execute:
        specs = {k: ArgSpec(**{f: tuple(v) if isinstance(v, list) else v for f, v in s.items()})
                 for k, s in job.get("args", {}).items()}
        try:
            with _Timed("describe"):
                layout = Layout.build(info_b, specs, info_b.fast_math or info_a.fast_math)
        except (KeyError, TypeError) as err:
            _emit({"event": "error", "detail": f"ValueError: {err}"})
            return
        _emit({"event": "layout", "text": layout.describe(), "fast_math": layout.fast_math})
    if execute or job.get("compile", True):
        _emit({"event": "stage", "stage": "compile"})
        with _Timed("jit"):
            _load_libraries(job, before_ir + after_ir)
            lowering = _compile_pipeline(job, before_ir)
            # an original that does not compile is an error
            cb = jit.compile(before, lowering, auto="none")
            cb.address(fn)
        try:
            with _Timed("jit"):
                ca = jit.compile(after, lowering, auto="none")
                ca.address(fn)
        except LLVMAccelError as err:
            _emit({"event": "finding", "kind": "codegen", "stage": "compile",
                   "detail": f"the original compiles, the result does not: {err}"})
            return
    if not execute:
        _emit({"event": "done", "counts": {"ok": 0, "both-undefined": 0}})
        return
    kb, ka = cb[fn], ca[fn]
    counts = {"ok": 0, "both-undefined": 0}
    timeout, ulps, seed = job.get("timeout", 2.0), job.get("ulps", 16), job.get("seed", 0)
    numbers = list(job.get("case_numbers") or range(job.get("cases", 64)))
    deadline = time.monotonic() + job["seconds"] if job.get("seconds") else None
    # Cases run in batches, one child per version for a whole batch, unless
    # the module has writable globals (a case could then see what the one
    # before it left there, and a restarted child would not).
    # $LLVMACCEL_CHECK_CASES_PER_CHILD sets the batch (1: a child per run,
    # to measure what batching saves).
    size = int(os.environ.get("LLVMACCEL_CHECK_CASES_PER_CHILD") or 16)
    with _Timed("describe"):
        if _has_writable_globals(before_ir) or _has_writable_globals(after_ir):
            size = 1
    stop = False
    for first in range(0, len(numbers), size):
        if stop or (deadline and time.monotonic() > deadline):
            break
        chunk = numbers[first:first + size]
        with _Timed("inputs"):
            made = [make_case(layout, seed, n) for n in chunk]
            b_bufs = [GuardedBuffers(layout, c) for c in made]
            a_bufs = [GuardedBuffers(layout, c) for c in made]
        try:
            with _Timed("execute"):
                obs = _run_batch(kb, layout, made, b_bufs, timeout)
                oas = _run_batch(ka, layout, made, a_bufs, timeout)
            for k, n in enumerate(chunk):
                ob, oa = obs[k], oas[k]
                with _Timed("compare"):
                    found = _compare(layout, ob, oa, b_bufs[k], a_bufs[k], ulps)
                if found:
                    _emit({"event": "finding", "kind": found[0], "stage": "execute", "case": n,
                           "seed": seed, "detail": found[1],
                           "inputs": describe_case(layout, made[k])})
                    if job.get("stop_at_first", True):
                        stop = True
                        break
                elif ob.kind == "ok":
                    counts["ok"] += 1
                else:
                    counts["both-undefined"] += 1
                    if ob.kind == "timeout" and job.get("stop_at_timeout"):
                        stop = True
                        break
        finally:
            with _Timed("inputs"):
                for b in b_bufs + a_bufs:
                    b.close()
    _emit({"event": "done", "counts": counts})


def _profiled_main(argv: list[str]) -> int:
    """:func:`main` under cProfile when ``$LLVMACCEL_CHECKWORKER_PROFILE`` names a
    directory (the statistics go to ``worker-<pid>.prof`` there)."""
    where = os.environ.get("LLVMACCEL_CHECKWORKER_PROFILE")
    if not where:
        return main(argv)
    import cProfile
    prof = cProfile.Profile()
    try:
        return prof.runcall(main, argv)
    finally:
        prof.dump_stats(os.path.join(where, f"worker-{os.getpid()}.prof"))


if __name__ == "__main__":
    sys.exit(_profiled_main(sys.argv[1:]))
