"""Calls into compiled functions that a fault ends, not the process making them.

:mod:`llvmaccel._checkworker` runs the cases of a check in forked children, and
a case whose function faults (the guard page after a buffer), traps or
divides by zero used to end its child: the next child, forked anew, went on
with the next case. Generated kernels are given out-of-range indices in a
share of their cases on purpose, so most children ended that way, and forks
were most of the time spent.

Here a call is made from a ``sigsetjmp`` frame, with handlers for SIGSEGV,
SIGBUS, SIGILL, SIGFPE and SIGTRAP (on an alternate stack, so a stack
overflow is caught too) that ``siglongjmp`` back to it when the signal came
from the calling thread during such a call; the call then ends with the
signal's number and the child goes on with the next case. Any other signal,
a signal from another thread, or one outside a call keeps its default action
and ends the child, as before. Only code with no state outside its buffers
runs this way (no runtime library of its own, no writable globals): its
faults leave nothing behind that the next call could see.

The helper and one thunk per signature are written in LLVM IR here and
compiled by the JIT once per process: the thunk takes the function's address
and its arguments as 64-bit slots (:func:`pack_args`) and stores the return
value, so the modules under test are not touched.
"""

from __future__ import annotations

import ctypes
import signal
import struct

from . import jit
from .errors import LLVMAccelError

__all__ = ["Guard", "SUPPORTED_PARAMS", "SUPPORTED_RETURNS", "pack_args", "supported"]

#: Parameter and return types a thunk passes (others: called through ctypes).
SUPPORTED_PARAMS = ("ptr", "i32", "i64", "float", "double")
SUPPORTED_RETURNS = ("void", "ptr", "i32", "i64", "float", "double")
#: The signals a guarded call survives.
CAUGHT = (signal.SIGSEGV, signal.SIGBUS, signal.SIGILL, signal.SIGFPE, signal.SIGTRAP)

# sigjmp_buf is 200 bytes on x86-64 glibc and 312 on AArch64: 1 KiB is room.
_HELPER_IR = """
@llvmaccel.guard.jump = internal global [128 x i64] zeroinitializer, align 16
@llvmaccel.guard.armed = internal global i32 0
@llvmaccel.guard.thread = internal global i64 0
@llvmaccel.guard.caught = internal global i32 0

declare i32 @__sigsetjmp(ptr, i32) returns_twice
declare void @siglongjmp(ptr, i32) noreturn
declare i64 @pthread_self()
declare ptr @signal(i32, ptr)
declare i32 @raise(i32)

define void @llvmaccel_guard_on_signal(i32 %sig) {
entry:
  %armed = load volatile i32, ptr @llvmaccel.guard.armed
  %self = call i64 @pthread_self()
  %owner = load volatile i64, ptr @llvmaccel.guard.thread
  %mine = icmp eq i64 %self, %owner
  %on = icmp ne i32 %armed, 0
  %both = and i1 %on, %mine
  br i1 %both, label %back, label %default
back:
  store volatile i32 %sig, ptr @llvmaccel.guard.caught
  store volatile i32 0, ptr @llvmaccel.guard.armed
  call void @siglongjmp(ptr @llvmaccel.guard.jump, i32 1)
  unreachable
default:
  %old = call ptr @signal(i32 %sig, ptr null)
  %r = call i32 @raise(i32 %sig)
  ret void
}

define i32 @llvmaccel_guarded_call(ptr %thunk, ptr %fn, ptr %args, ptr %ret) {
entry:
  %j = call i32 @__sigsetjmp(ptr @llvmaccel.guard.jump, i32 1) returns_twice
  %jumped = icmp ne i32 %j, 0
  br i1 %jumped, label %caught, label %run
run:
  %self = call i64 @pthread_self()
  store volatile i64 %self, ptr @llvmaccel.guard.thread
  store volatile i32 0, ptr @llvmaccel.guard.caught
  store volatile i32 1, ptr @llvmaccel.guard.armed
  call void %thunk(ptr %fn, ptr %args, ptr %ret)
  store volatile i32 0, ptr @llvmaccel.guard.armed
  ret i32 0
caught:
  %sig = load volatile i32, ptr @llvmaccel.guard.caught
  ret i32 %sig
}
"""


def supported(define_line: str, ret: str, params: list[str]) -> bool:
    """True when a thunk can call a function of this signature (and its
    ``define`` line has no ``signext``/``zeroext``, which a thunk would not
    honour)."""
    return (ret in SUPPORTED_RETURNS and all(p in SUPPORTED_PARAMS for p in params)
            and "signext" not in define_line and "zeroext" not in define_line)


def _thunk_ir(name: str, ret: str, params: list[str]) -> str:
    lines = [f"define void @{name}(ptr %fn, ptr %args, ptr %ret) {{", "entry:"]
    values = []
    for i, ty in enumerate(params):
        lines.append(f"  %p{i} = getelementptr i64, ptr %args, i64 {i}")
        lines.append(f"  %a{i} = load {ty}, ptr %p{i}, align 8")
        values.append(f"{ty} %a{i}")
    call = f"call {ret} %fn({', '.join(values)})"
    if ret == "void":
        lines.append(f"  {call}")
    else:
        lines.append(f"  %r = {call}")
        lines.append(f"  store {ret} %r, ptr %ret, align 8")
    lines += ["  ret void", "}"]
    return "\n".join(lines) + "\n"


def pack_args(params: list[str], values: list) -> ctypes.Array:
    """The arguments as the thunk reads them: one 64-bit slot each (integers
    in two's complement, floats as their bits in the low bytes).

    Raises:
        TypeError: a value does not fit its parameter's type.
    """
    slots = (ctypes.c_uint64 * max(1, len(params)))()
    for i, (ty, v) in enumerate(zip(params, values, strict=True)):
        if ty == "ptr":
            slots[i] = int(v or 0)
        elif ty in ("i32", "i64"):
            if isinstance(v, bool) or not isinstance(v, int):
                raise TypeError(f"argument {i}: expected an int for {ty}, got {v!r}")
            slots[i] = v & ((1 << 64) - 1)
        elif ty == "float":
            slots[i] = struct.unpack("<I", struct.pack("<f", float(v)))[0]
        else:
            slots[i] = struct.unpack("<Q", struct.pack("<d", float(v)))[0]
    return slots


def return_value(ret: str, slot: ctypes.Array) -> object:
    """What the function returned, as ctypes would give it (None for void)."""
    raw = bytes(slot)
    if ret == "void":
        return None
    if ret == "ptr":
        return struct.unpack("<Q", raw[:8])[0] or None
    if ret == "i32":
        return struct.unpack("<i", raw[:4])[0]
    if ret == "i64":
        return struct.unpack("<q", raw[:8])[0]
    if ret == "float":
        return struct.unpack("<f", raw[:4])[0]
    return struct.unpack("<d", raw[:8])[0]


class _Sigaction(ctypes.Structure):
    # glibc's struct sigaction on Linux (x86-64, AArch64, RISC-V alike).
    _fields_ = [("sa_handler", ctypes.c_void_p), ("sa_mask", ctypes.c_ulong * 16),
                ("sa_flags", ctypes.c_int), ("sa_restorer", ctypes.c_void_p)]


class _StackT(ctypes.Structure):
    _fields_ = [("ss_sp", ctypes.c_void_p), ("ss_flags", ctypes.c_int),
                ("ss_size", ctypes.c_size_t)]


_SA_ONSTACK = 0x08000000


class Guard:
    """The compiled helper and thunks of this process (:meth:`thunk` per
    signature); :meth:`install` in a child before its first guarded call."""

    def __init__(self) -> None:
        self._helper = jit.compile(_HELPER_IR, "verify", auto="none")
        self._call = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p,
                                      ctypes.c_void_p, ctypes.c_void_p)(
            self._helper.address("llvmaccel_guarded_call"))
        self._handler = self._helper.address("llvmaccel_guard_on_signal")
        self._thunks: dict[tuple[str, tuple[str, ...]], tuple[object, int]] = {}
        self._altstack = ctypes.create_string_buffer(1 << 16)

    def thunk(self, ret: str, params: list[str]) -> int:
        """The address of the thunk for ``ret (params)`` (compiled on first use).

        Raises:
            LLVMAccelError: the signature is not supported or does not compile.
        """
        key = (ret, tuple(params))
        if key not in self._thunks:
            if not supported("", ret, list(params)):
                raise LLVMAccelError(f"no guarded thunk for {ret} ({', '.join(params)})")
            name = f"llvmaccel_thunk_{len(self._thunks)}"
            compiled = jit.compile(_thunk_ir(name, ret, list(params)), "verify", auto="none")
            self._thunks[key] = (compiled, compiled.address(name))
        return self._thunks[key][1]

    def install(self) -> None:
        """Handlers for :data:`CAUGHT` on an alternate stack, in this process
        (a forked child: the worker itself keeps the default actions).

        Raises:
            OSError: sigaltstack or sigaction failed.
        """
        libc = ctypes.CDLL(None, use_errno=True)
        ss = _StackT(ctypes.addressof(self._altstack), 0, len(self._altstack))
        if libc.sigaltstack(ctypes.byref(ss), None) != 0:
            raise OSError(ctypes.get_errno(), "sigaltstack failed")
        for sig in CAUGHT:
            sa = _Sigaction()
            sa.sa_handler = self._handler
            sa.sa_flags = _SA_ONSTACK
            if libc.sigaction(int(sig), ctypes.byref(sa), None) != 0:
                raise OSError(ctypes.get_errno(), f"sigaction({sig.name}) failed")

    def call(self, thunk: int, fn: int, args: ctypes.Array, ret: ctypes.Array) -> int:
        """Calls ``fn`` through ``thunk``: 0 when it returned (its value in
        ``ret``), else the number of the signal that ended it."""
        return self._call(thunk, fn, ctypes.addressof(args), ctypes.addressof(ret))
