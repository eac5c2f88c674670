"""The process :func:`llvmaccel.check` runs jobs in (``python -m llvmaccel._checkworker``).

It applies the pipeline (so a crashing pass kills this process, not the
caller), JIT-compiles the function before and after, and runs the cases in
forked children, on buffers that end before guard pages: a fault, a crash or
a hang ends that child only and is reported with the case. A child runs call
after call: a job's cases per version, or the cases of several jobs' loop
kernels, before and after (a finding there is checked again in children of
its own). Jobs come as JSON lines on stdin and the process serves them until
stdin ends (the caller keeps it for many jobs); events go to stdout as JSON
lines.
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

from . import _guard, jit
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
from .ir import parse_ir, same_module_text
from .irinfo import describe
from .pipeline import run_passes

_FAULTS = {signal.SIGSEGV, signal.SIGBUS}


_JOB = [0]
_SINK: list[list[dict]] = []

#: Seconds spent per stage in the current job (sent with its ``end`` event):
#: ``parse``, ``pipeline``, ``print`` (the after IR as text), ``describe``
#: (reading the IR for inputs), ``jit``, ``inputs`` (making cases and guarded
#: buffers), ``execute`` (the forked children), ``compare``, ``confirm`` (a
#: shared child's finding run again alone) and ``emit``; and ``children``,
#: the number of children forked (a count).
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


def _outcome_of_signal(sig: int) -> Outcome:
    kind = "fault" if sig in _FAULTS else "crash"
    return Outcome(kind, signal.Signals(sig).name)


def _outcome_of_status(status: int) -> Outcome:
    if os.WIFSIGNALED(status):
        return _outcome_of_signal(os.WTERMSIG(status))
    return Outcome("crash", f"exit status {os.WEXITSTATUS(status)}")


#: In a result page's length word: the call ended by the signal in the next word.
_SIGNALLED = 0xFFFFFFFF


def _result(bufs: GuardedBuffers) -> Outcome:
    (length,) = struct.unpack("<I", ctypes.string_at(bufs.result, 4))
    if length == _SIGNALLED:
        (sig,) = struct.unpack("<I", ctypes.string_at(bufs.result + 4, 4))
        return _outcome_of_signal(sig)
    return Outcome("ok", ret=ctypes.string_at(bufs.result + 4, length))


@dataclass
class _Run:
    """One call to make in a child: the compiled function, its arguments, and the
    guarded buffers it runs on (whose result page gets the return value); with
    ``thunk``, a call that a fault ends without ending the child
    (:mod:`llvmaccel._guard`), its arguments packed in ``slots``."""

    kernel: jit.Kernel
    args: list
    ret_ty: str
    bufs: GuardedBuffers
    thunk: int = 0
    slots: ctypes.Array | None = None


def _runs_of(kernel: jit.Kernel, layout: Layout, cases: list,
             bufs: list[GuardedBuffers], thunk: int = 0) -> list[_Run]:
    ret_ty = layout.info.return_type
    runs = [_Run(kernel, _args(layout, c, b), ret_ty, b) for c, b in zip(cases, bufs, strict=True)]
    if thunk:
        params = [p.type for p in layout.info.params]
        for run in runs:
            try:
                run.thunk, run.slots = thunk, _guard.pack_args(params, run.args)
            except TypeError:  # a value the thunk cannot pass: through ctypes
                run.thunk, run.slots = 0, None
    return runs


def _run_batch(kernel: jit.Kernel, layout: Layout, cases: list, bufs: list[GuardedBuffers],
               timeout: float, thunk: int = 0) -> list[Outcome]:
    """Runs the cases of one function in order in forked children (see :func:`_run_all`)."""
    return _run_all(_runs_of(kernel, layout, cases, bufs, thunk), timeout)


_GUARD: list[_guard.Guard] = []


def _the_guard() -> _guard.Guard:
    """This process's :class:`llvmaccel._guard.Guard` (compiled on first use)."""
    if not _GUARD:
        _GUARD.append(_guard.Guard())
    return _GUARD[0]


def _thunk_for(job: dict, info: object, before_ir: str, after_ir: str) -> int:
    """The guarded thunk for the job's function, or 0 where calls go through
    ctypes and a fault ends the child: a signature a thunk cannot pass, or
    guarded calls turned off (``$LLVMACCEL_CHECK_GUARD=0``, or
    ``$LLVMACCEL_CHECK_CASES_PER_CHILD`` set, to measure against)."""
    if os.environ.get("LLVMACCEL_CHECK_GUARD") == "0" or os.environ.get(
            "LLVMACCEL_CHECK_CASES_PER_CHILD"):
        return 0
    fn = job["function"]
    params = [p.type for p in info.params]
    lines = [_define_line(ir, fn) for ir in (before_ir, after_ir)]
    if not all(_guard.supported(line, info.return_type, params) for line in lines):
        return 0
    return _the_guard().thunk(info.return_type, params)


def _define_line(ir: str, fn: str) -> str:
    m = re.search(r"^define\b[^\n]*@(?:" + re.escape(fn) + r'|"' + re.escape(fn) + r'")\(.*$',
                  ir, re.M)
    return m.group(0) if m else "signext"  # not found: no thunk


class _Progress:
    """A shared page where a child says which run it started and which it finished."""

    def __init__(self) -> None:
        import mmap
        self._map = mmap.mmap(-1, mmap.PAGESIZE)
        self._view = (ctypes.c_int64 * 2).from_buffer(self._map)

    def __getitem__(self, i: int) -> int:
        return self._view[i]

    def __setitem__(self, i: int, value: int) -> None:
        self._view[i] = value


_PROGRESS: list[_Progress] = []


def _run_all(runs: list[_Run], timeout: float) -> list[Outcome]:
    """Runs the calls in order in forked children: one child makes call after
    call (a fork of this process costs more than most runs), and a call that
    faults, crashes or hangs ends its child only; the next child goes on from
    the call after it. A call may take ``timeout`` seconds from the moment the
    parent sees it started (up to twice that from its start)."""
    outcomes: list[Outcome | None] = [None] * len(runs)
    if not _PROGRESS:
        _PROGRESS.append(_Progress())
    progress = _PROGRESS[0]
    start = 0
    guard = _the_guard() if any(r.thunk for r in runs) else None
    while start < len(runs):
        progress[0], progress[1] = -1, start - 1  # started, done
        _TIMES["children"] = _TIMES.get("children", 0) + 1  # a count, not seconds
        pid = os.fork()
        if pid == 0:  # the child: run, store the results, leave without cleanup
            _child(runs, start, progress, guard)
        fd = os.pidfd_open(pid)
        hung = None
        try:
            seen, deadline = progress[0], time.monotonic() + timeout
            while True:
                ready, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
                if ready:
                    break
                now_at = progress[0]
                if now_at != seen:  # a new call started: it gets its own time
                    seen, deadline = now_at, time.monotonic() + timeout
                    continue
                os.kill(pid, signal.SIGKILL)
                hung = max(now_at, start)
                break
            _, status = os.waitpid(pid, 0)
        finally:
            os.close(fd)
        done = int(progress[1])
        for i in range(start, min(done, len(runs) - 1) + 1):
            outcomes[i] = _result(runs[i].bufs)
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


def _child(runs: list[_Run], start: int, progress: _Progress,
           guard: _guard.Guard | None) -> None:
    """A forked child: makes the calls from ``start`` on, stores each result
    in its page, and leaves without cleanup (exit status 0; 3 when Python
    itself failed). A guarded call that a signal ended stores the signal and
    the child goes on."""
    try:
        if guard is not None:
            guard.install()
    except OSError:
        guard = None  # calls through ctypes: a fault ends this child
    for i in range(start, len(runs)):
        progress[0] = i
        run = runs[i]
        try:
            if guard is not None and run.thunk:
                ret = (ctypes.c_uint64 * 2)()
                sig = guard.call(run.thunk, run.kernel.address, run.slots, ret)
                if sig:
                    ctypes.memmove(run.bufs.result, struct.pack("<II", _SIGNALLED, sig), 8)
                    progress[1] = i
                    continue
                value = _guard.return_value(run.ret_ty, ret)
            else:
                value = run.kernel(*run.args)
            raw = _pack_ret(value, run.ret_ty, run.bufs)
            ctypes.memmove(run.bufs.result, struct.pack("<I", len(raw)) + raw, 4 + len(raw))
        except BaseException:  # noqa: BLE001 - any failure is the child's exit status
            os._exit(3)
        progress[1] = i
    os._exit(0)


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
    """Serves jobs until standard input ends.

    Each line of standard input is a JSON message ``{"numbers": [...], "jobs":
    [...], "group": G}``: jobs (from :func:`llvmaccel.check.make_job`) and the
    numbers their events carry; loop kernels run up to G at a time in shared
    children (see :func:`_run_group`). Events go to stdout as JSON lines, each
    with its job's number; every job ends with an ``end`` event carrying the
    seconds it spent per stage (``times``); a job's failure to compile is an
    ``error`` event.
    """
    del argv
    import gc
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    # What the imports made lives as long as the process: left out of the
    # collections below, which then only look at what the jobs made.
    gc.freeze()
    _JOB[0] = -1
    _emit({"event": "ready"})
    for line in sys.stdin:
        if not line.strip():
            continue
        message = json.loads(line)
        numbers, jobs = message["numbers"], message["jobs"]
        group = max(1, int(message.get("group", 1)))
        if os.environ.get("LLVMACCEL_CHECK_CASES_PER_CHILD"):
            group = 1  # the old one-function-per-child batching, to measure against
        pending: list[_Prepared] = []
        for number, job in zip(numbers, jobs, strict=True):
            _JOB[0] = number
            _TIMES.clear()
            prepared = None
            try:
                prepared = _prepare(job)
            except LLVMAccelError as err:
                _emit({"event": "error", "detail": f"{type(err).__name__}: {err}"})
            if prepared is not None and group > 1 and prepared.groupable:
                prepared.number, prepared.times = number, _take_times()
                pending.append(prepared)
                if len(pending) >= group:
                    _run_group(pending)
                    pending = []
                continue
            if prepared is not None:
                try:
                    _execute(prepared)
                except LLVMAccelError as err:
                    _emit({"event": "error", "detail": f"{type(err).__name__}: {err}"})
            _emit({"event": "end", "times": _take_times()})
        if pending:
            _run_group(pending)
        # A compiled module and its kernels refer to each other: collected
        # here, or their JIT sessions (code, LLVM contexts) would pile up in a
        # worker that serves a whole fuzz run, and every fork would copy their
        # page tables.
        pending, prepared = [], None
        gc.collect()
    return 0


@dataclass
class _Prepared:
    """A job compiled and ready to run: both versions, the input layout, the
    case numbers and how many cases a child may run."""

    job: dict
    layout: Layout
    kb: jit.Kernel
    ka: jit.Kernel
    numbers: list[int]
    size: int
    groupable: bool
    thunk: int = 0
    number: int = 0
    times: dict | None = None


def _run_job(job: dict) -> None:
    prepared = _prepare(job)
    if prepared is not None:
        _execute(prepared)


def _printed(module: object, target: str | None) -> str:
    """The original as the pipeline would print it had no pass changed it: the
    job's text may be spelled otherwise (a generator's, a hand-written
    module's), and ``target`` sets the triple, layout and CPU attributes."""
    if not target:
        return str(module)
    base = module.clone()
    run_passes(base, "verify", verify_each=False, remarks=None, target=target)
    return str(base)


def _prepare(job: dict) -> _Prepared | None:
    """Applies the pipeline, reads the IR and compiles both versions, emitting
    the events of these stages; None when the job is over (a finding before
    execution, or a job that does not execute)."""
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
            return None
        with _Timed("print"):
            after_ir = str(after)
        fired: dict[str, int] = {}
        for r in report.passed():
            fired[r.pass_name] = fired.get(r.pass_name, 0) + 1
        with _Timed("print"):
            changed = not same_module_text(after_ir, _printed(before, job.get("target")))
        _emit({"event": "pipeline", "after": after_ir, "fired": fired,
               "statistics": report.statistics, "changed": changed})
        if not changed and not job.get("execute_unchanged", True):
            # Nothing to compare: the pipeline verified the module and left it.
            _emit({"event": "done", "counts": {"ok": 0, "both-undefined": 0}})
            return None
    execute = job.get("execute", True) is not False
    with _Timed("describe"):
        # Without runs only the signatures matter, not what the bodies do.
        info_b = describe(before_ir, fn, body=execute)
        info_a = describe(after_ir, fn, body=execute)
    if _signature(info_b) != _signature(info_a):
        _emit({"event": "finding", "kind": "signature", "stage": "compare",
               "detail": f"before {_signature(info_b)}, after {_signature(info_a)}"})
        return None
    layout = None
    if execute:
        specs = {k: ArgSpec(**{f: tuple(v) if isinstance(v, list) else v for f, v in s.items()})
                 for k, s in job.get("args", {}).items()}
        try:
            with _Timed("describe"):
                layout = Layout.build(info_b, specs, info_b.fast_math or info_a.fast_math)
        except (KeyError, TypeError) as err:
            _emit({"event": "error", "detail": f"ValueError: {err}"})
            return None
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
            return None
    if not execute or layout is None:
        _emit({"event": "done", "counts": {"ok": 0, "both-undefined": 0}})
        return None
    numbers = list(job.get("case_numbers") or range(job.get("cases", 64)))
    # Cases run in batches, one child per version for a whole batch, unless
    # the module has writable globals (a case could then see what the one
    # before it left there, and a restarted child would not).
    # $LLVMACCEL_CHECK_CASES_PER_CHILD sets the batch (1: a child per run,
    # to measure what batching saves).
    size = int(os.environ.get("LLVMACCEL_CHECK_CASES_PER_CHILD") or 16)
    with _Timed("describe"):
        if _has_writable_globals(before_ir) or _has_writable_globals(after_ir):
            size = 1
    # Several functions' cases share a child, and a fault ends a call rather
    # than its child, only when nothing outlives a call: no writable globals
    # and no library with state of its own (the MLIR async runtime's thread
    # pool, the recording GPU runtime).
    stateless = size > 1 and not job.get("libraries") and lowering == "verify"
    # A job with a time limit (``seconds``) shares a child only when all its
    # cases fit in one batch, which _execute would run whatever the limit.
    groupable = (stateless and not job.get("stop_at_timeout")
                 and (not job.get("seconds") or len(numbers) <= size))
    thunk = _thunk_for(job, info_b, before_ir, after_ir) if stateless else 0
    return _Prepared(job, layout, cb[fn], ca[fn], numbers, size, groupable, thunk)


def _tally(prepared: _Prepared, n: int, made: object, found: tuple[str, str] | None,
           ob: Outcome, counts: dict[str, int], note: str = "") -> bool:
    """Counts one compared case or emits its finding; True when the job stops here."""
    job = prepared.job
    if note == _UNDEFINED:  # the original does not behave the same every time
        counts["both-undefined"] += 1
        return False
    if found:
        _emit({"event": "finding", "kind": found[0], "stage": "execute", "case": n,
               "seed": job.get("seed", 0), "detail": found[1] + note,
               "inputs": describe_case(prepared.layout, made)})
        return job.get("stop_at_first", True)
    if ob.kind == "ok":
        counts["ok"] += 1
        return False
    counts["both-undefined"] += 1
    return ob.kind == "timeout" and bool(job.get("stop_at_timeout"))


def _execute(prepared: _Prepared) -> None:
    """Runs a job's cases, ``size`` cases per child and version, and compares them."""
    job, layout = prepared.job, prepared.layout
    counts = {"ok": 0, "both-undefined": 0}
    timeout, ulps, seed = job.get("timeout", 2.0), job.get("ulps", 16), job.get("seed", 0)
    numbers, size = prepared.numbers, prepared.size
    deadline = time.monotonic() + job["seconds"] if job.get("seconds") else None
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
                obs = _run_batch(prepared.kb, layout, made, b_bufs, timeout, prepared.thunk)
                oas = _run_batch(prepared.ka, layout, made, a_bufs, timeout, prepared.thunk)
            for k, n in enumerate(chunk):
                with _Timed("compare"):
                    found = _compare(layout, obs[k], oas[k], b_bufs[k], a_bufs[k], ulps)
                found, note = _confirmed(prepared, n, found, 0, len(chunk) > 1, a_bufs[k])
                if _tally(prepared, n, made[k], found, obs[k], counts, note):
                    stop = True
                    break
        finally:
            with _Timed("inputs"):
                for b in b_bufs + a_bufs:
                    b.close()
    _emit({"event": "done", "counts": counts})


def _run_group(group: list[_Prepared]) -> None:
    """Runs the cases of several jobs, before and after, in one forked child
    (restarted after a call that faults, crashes or hangs, from the call after
    it), then compares each job's cases and ends each job.

    A finding made in a child shared with other jobs is checked again in
    children of its own (that case, before and after, on fresh buffers), so
    it names the job and the input that cause it: the finding reported is
    the lone run's when that run shows one too, else the shared run's, with
    a note that the case alone agreed.
    """
    _TIMES.clear()
    made: list[list] = []
    bufs: list[tuple[list[GuardedBuffers], list[GuardedBuffers]]] = []
    runs: list[_Run] = []
    try:
        with _Timed("inputs"):
            for p in group:
                cases = [make_case(p.layout, p.job.get("seed", 0), n) for n in p.numbers]
                b_bufs = [GuardedBuffers(p.layout, c) for c in cases]
                a_bufs = [GuardedBuffers(p.layout, c) for c in cases]
                made.append(cases)
                bufs.append((b_bufs, a_bufs))
                runs += _runs_of(p.kb, p.layout, cases, b_bufs, p.thunk)
                runs += _runs_of(p.ka, p.layout, cases, a_bufs, p.thunk)
        timeout = max(p.job.get("timeout", 2.0) for p in group)
        _JOB[0] = group[0].number
        _emit({"event": "stage", "stage": "execute", "group": [p.number for p in group]})
        with _Timed("execute"):
            outcomes = _run_all(runs, timeout)
        shared = _take_times()
        at = 0
        for g, p in enumerate(group):
            _JOB[0] = p.number
            n_cases = len(p.numbers)
            obs, oas = outcomes[at:at + n_cases], outcomes[at + n_cases:at + 2 * n_cases]
            at += 2 * n_cases
            counts = {"ok": 0, "both-undefined": 0}
            ulps = p.job.get("ulps", 16)
            b_bufs, a_bufs = bufs[g]
            for k, n in enumerate(p.numbers):
                with _Timed("compare"):
                    found = _compare(p.layout, obs[k], oas[k], b_bufs[k], a_bufs[k], ulps)
                found, note = _confirmed(p, n, found, len(group) - 1, True, a_bufs[k])
                if _tally(p, n, made[g][k], found, obs[k], counts, note):
                    break
            _emit({"event": "done", "counts": counts})
            # The shared stages (inputs, execute) are split evenly over the jobs.
            times = dict(p.times or {})
            for k, v in shared.items():
                times[k] = times.get(k, 0.0) + v / len(group)
            for k, v in _take_times().items():
                times[k] = times.get(k, 0.0) + v
            _emit({"event": "end", "times": {k: round(v, 6) for k, v in times.items()}})
    finally:
        for b_bufs, a_bufs in bufs:
            for b in b_bufs + a_bufs:
                b.close()


#: Runs of the original, each in a child of its own, that decide whether a
#: finding's case is one the original itself behaves the same on every time.
ORIGINAL_RUNS = 8
#: The note of a case whose original does not behave the same every time.
_UNDEFINED = "undefined"


def _confirmed(p: _Prepared, n: int, found: tuple[str, str] | None, others: int,
               batch: bool = True, after_bufs: GuardedBuffers | None = None,
               ) -> tuple[tuple[str, str] | None, str]:
    """A finding of case ``n``, checked: (the finding to report, a note for
    its detail), or (None, ``"undefined"``) when the original itself does not
    behave the same on this case every time.

    First the original runs on the very buffers the transformed version ran
    on (``after_bufs``, refilled with the case; :func:`_original_moves`): an
    original that reads or writes outside its buffers may run to completion
    on one placement of them and fault on another (a gather whose index is
    out of range reads some 16 GiB past its table, mapped or not), and the
    transformed version, given other addresses than the original, would take
    the blame. Made in a child that ran other cases before it (``batch``: of
    this job; ``others``: of other jobs), the case runs again alone
    (:func:`_alone`): the lone run's finding when it shows one, else the
    shared run's with a note that the case alone agreed. Then the original
    runs the case :data:`ORIGINAL_RUNS` times more, each in a child of its
    own: if it faults, crashes or hangs in one of them, or its results differ
    between them, the case is undefined in the original (as one where the
    original faulted the first time) and not compared. The MLIR async
    programs' error paths fault now and then in the original program (2-5 of
    25 runs of 16 cases with the verify pipeline alone): those are not
    findings of a pass. A pass's fault on an input the original always runs,
    wherever its buffers are, is still one."""
    if not found:
        return found, ""
    if after_bufs is not None and _original_moves(p, n, after_bufs):
        return None, _UNDEFINED
    note = ""
    if others or batch:
        alone, moves = _alone(p, n)
        if moves:
            return None, _UNDEFINED
        if alone is not None:
            found = alone
        else:
            where = (f"a child shared with {others} other function(s)' runs" if others
                     else "a child that ran earlier cases of this function")
            note = (f" [in {where}; this case alone, before and after in children of "
                    f"their own, agreed]")
    if _original_varies(p, n):
        return None, _UNDEFINED
    return found, note


def _original_varies(p: _Prepared, n: int) -> bool:
    """True when the original, run :data:`ORIGINAL_RUNS` times on case ``n``
    (each in a child of its own, on fresh buffers), does not run to completion
    every time with the same results."""
    return _original_differs(p, n, [None] * (ORIGINAL_RUNS - 1))


def _original_moves(p: _Prepared, n: int, bufs: GuardedBuffers) -> bool:
    """True when the original, run on case ``n`` in ``bufs`` (the buffers
    another run had, refilled with the case), does not run to completion or
    gives other results than on buffers of its own: what it does depends on
    where its buffers are, so it reads or writes outside them."""
    return _original_differs(p, n, [bufs])


def _original_differs(p: _Prepared, n: int, places: list[GuardedBuffers | None]) -> bool:
    """True when the original, run on case ``n`` on fresh buffers and then
    once per entry of ``places`` (fresh buffers for None, else those buffers
    refilled with the case), each run in a child of its own, does not run
    to completion every time or gives other results than its first run."""
    with _Timed("confirm"):
        case = make_case(p.layout, p.job.get("seed", 0), n)
        timeout, ulps = p.job.get("timeout", 2.0), p.job.get("ulps", 16)
        first = GuardedBuffers(p.layout, case)
        try:
            ref = _run_batch(p.kb, p.layout, [case], [first], timeout)[0]
            if ref.kind != "ok":
                return True
            for place in places:
                bufs = GuardedBuffers(p.layout, case) if place is None else place
                try:
                    if place is not None:
                        bufs.refill(case)
                    out = _run_batch(p.kb, p.layout, [case], [bufs], timeout)[0]
                    if out.kind != "ok" or _compare(p.layout, ref, out, first, bufs, ulps):
                        return True
                finally:
                    if place is None:
                        bufs.close()
            return False
        finally:
            first.close()


def _alone(p: _Prepared, n: int) -> tuple[tuple[str, str] | None, bool]:
    """Case ``n`` of a prepared job again, before and after each in a child of
    its own on fresh buffers: the finding it gives (None when they agree),
    and whether the original, on the buffers the transformed version had,
    behaves otherwise than on its own (:func:`_original_moves`)."""
    with _Timed("confirm"):
        case = make_case(p.layout, p.job.get("seed", 0), n)
        b, a = GuardedBuffers(p.layout, case), GuardedBuffers(p.layout, case)
    try:
        with _Timed("confirm"):
            timeout = p.job.get("timeout", 2.0)
            ob = _run_batch(p.kb, p.layout, [case], [b], timeout)[0]
            oa = _run_batch(p.ka, p.layout, [case], [a], timeout)[0]
            found = _compare(p.layout, ob, oa, b, a, p.job.get("ulps", 16))
        return found, found is not None and _original_moves(p, n, a)
    finally:
        b.close()
        a.close()


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
