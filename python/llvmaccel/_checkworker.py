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


def _emit(event: dict) -> None:
    event["job"] = _JOB[0]
    if _SINK:
        _SINK[-1].append(event)
        return
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


def _run(kernel: jit.Kernel, layout: Layout, case: object, bufs: GuardedBuffers,
         timeout: float) -> Outcome:
    args = []
    for slot in layout.slots:
        i = slot.param.index
        args.append(bufs.addresses[i] if slot.param.is_pointer else case.scalars[i])
    ret_ty = layout.info.return_type
    pid = os.fork()
    if pid == 0:  # the child: run, store the result, leave without cleanup
        code = 0
        try:
            raw = _pack_ret(kernel(*args), ret_ty, bufs)
            ctypes.memmove(bufs.result, struct.pack("<I", len(raw)) + raw, 4 + len(raw))
        except BaseException:  # noqa: BLE001 - any failure is the child's exit status
            code = 3
        os._exit(code)
    fd = os.pidfd_open(pid)
    try:
        ready, _, _ = select.select([fd], [], [], timeout)
        if not ready:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return Outcome("timeout", f"no result after {timeout:g} s")
        _, status = os.waitpid(pid, 0)
    finally:
        os.close(fd)
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        kind = "fault" if sig in _FAULTS else "crash"
        return Outcome(kind, signal.Signals(sig).name)
    if os.WEXITSTATUS(status) != 0:
        return Outcome("crash", f"exit status {os.WEXITSTATUS(status)}")
    (length,) = struct.unpack("<I", ctypes.string_at(bufs.result, 4))
    return Outcome("ok", ret=ctypes.string_at(bufs.result + 4, length))


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


def _same(a: bytes, b: bytes, elem: str, layout: Layout, ulps: int) -> bool:
    if a == b:
        return True
    return layout.fast_math and elem in ("float", "double") and _ulp_distance(a, b, elem) <= ulps


def _first_difference(a: bytes, b: bytes, elem: str) -> str:
    va, vb = unpack(a, elem), unpack(b, elem)
    for k, (x, y) in enumerate(zip(va, vb, strict=False)):
        differs = struct.pack("<d", x) != struct.pack("<d", y) if isinstance(x, float) else x != y
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


def _signature(info: object) -> tuple:
    return (info.return_type, tuple(p.type for p in info.params))


def main(argv: list[str]) -> int:
    """Runs the jobs in the JSON file ``argv[0]`` from job ``argv[1]`` on; events go to
    stdout, each with its job's number; a job's failure to compile is an ``error`` event."""
    with open(argv[0]) as f:
        jobs = json.load(f)["jobs"]
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    for number in range(int(argv[1]) if len(argv) > 1 else 0, len(jobs)):
        _JOB[0] = number
        try:
            _run_job(jobs[number])
        except LLVMAccelError as err:
            _emit({"event": "error", "detail": f"{type(err).__name__}: {err}"})
        _emit({"event": "end"})
    return 0


def _run_job(job: dict) -> None:
    fn = job["function"]
    before_ir = job["before"]
    before = parse_ir(before_ir, "before")
    if job.get("after") is not None:
        after_ir = job["after"]
        after = parse_ir(after_ir, "after")
    else:
        after = before.clone()
        _emit({"event": "stage", "stage": "pipeline"})
        try:
            report = run_passes(after, job["pipeline"], verify_each=job.get("verify_each", True),
                                remarks=job.get("remarks", ".*"), target=job.get("target"))
        except VerifyError as err:
            _emit({"event": "finding", "kind": "verify", "stage": "pipeline", "detail": str(err)})
            return
        after_ir = str(after)
        fired: dict[str, int] = {}
        for r in report.passed():
            fired[r.pass_name] = fired.get(r.pass_name, 0) + 1
        _emit({"event": "pipeline", "after": after_ir, "fired": fired,
               "statistics": report.statistics})
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
            layout = Layout.build(info_b, specs, info_b.fast_math or info_a.fast_math)
        except (KeyError, TypeError) as err:
            _emit({"event": "error", "detail": f"ValueError: {err}"})
            return
        _emit({"event": "layout", "text": layout.describe(), "fast_math": layout.fast_math})
    if execute or job.get("compile", True):
        _emit({"event": "stage", "stage": "compile"})
        cb = jit.compile(before, "verify")  # an original that does not compile is an error
        cb.address(fn)
        try:
            ca = jit.compile(after, "verify")
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
    numbers = job.get("case_numbers") or range(job.get("cases", 64))
    deadline = time.monotonic() + job["seconds"] if job.get("seconds") else None
    for n in numbers:
        if deadline and time.monotonic() > deadline:
            break
        case = make_case(layout, seed, n)
        b_bufs, a_bufs = GuardedBuffers(layout, case), GuardedBuffers(layout, case)
        try:
            ob = _run(kb, layout, case, b_bufs, timeout)
            oa = _run(ka, layout, case, a_bufs, timeout)
            found = _compare(layout, ob, oa, b_bufs, a_bufs, ulps)
        finally:
            b_bufs.close()
            a_bufs.close()
        if found:
            _emit({"event": "finding", "kind": found[0], "stage": "execute", "case": n,
                   "seed": seed, "detail": found[1], "inputs": describe_case(layout, case)})
            if job.get("stop_at_first", True):
                break
        elif ob.kind == "ok":
            counts["ok"] += 1
        else:
            counts["both-undefined"] += 1
            if ob.kind == "timeout" and job.get("stop_at_timeout"):
                break
    _emit({"event": "done", "counts": counts})


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
