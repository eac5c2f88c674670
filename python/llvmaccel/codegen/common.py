"""What every part of the code generator shares: the kernel description,
buffers, literals, and the target kernels are generated for."""

from __future__ import annotations

import itertools
import math
import re
import struct
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from ..graph import DType, GraphError, Node, dim_op
from ..target import TargetInfo
from ..target import host as host_target


class CodegenError(GraphError):
    """The graph cannot be turned into LLVM IR (an unsupported construct)."""


@dataclass
class Buffer:
    """A tensor the kernel reads or writes through a pointer parameter."""

    kind: str  # "input", "constant", "output", "temp"
    shape: tuple
    dtype: DType
    param: str  # LLVM parameter name
    node: int | None = None  # graph node id (inputs, constants)
    # A temporary holding one row of its node (codegen.rows): its first
    # row_local dims are 1 in ``shape``, and their indices are ignored.
    row_local: int = 0


@dataclass
class Kernel:
    """Generated code for a graph, and how to call it.

    Attributes:
        ir: The LLVM module as text.
        name: The entry function.
        inputs: Node ids of the graph inputs, in parameter order.
        constants: Node ids of the tensor constants, in parameter order.
        outputs: (shape, dtype) of every output buffer.
        temps: (shape, dtype) of every temporary buffer parameter (temporaries
            that share one, :mod:`.memplan`: raw bytes enough for the largest).
        symbols: Size symbols, in parameter order (after the pointers).
        errors: Return code -> (exception name, message).
        output_map: For graph output k, the output buffer index it is in.
        links: (function, custom op name) of every custom op body the module
            calls: :mod:`llvmaccel.custom_ops` bodies linked in before the
            pipeline runs.
        matmuls: (node id, kernel, reason) of every matmul: ``"blas"`` (a
            call of the tuned library, :mod:`llvmaccel.blas`), ``"own"``
            (llvmaccel's kernel) or ``"runtime"`` (both, chosen on the sizes).
        attention: (node id of the product by V, ``"fused"`` or
            ``"unfused"``, reason) of every matmul of a softmax by V
            (:mod:`.attention`): one loop nest over query blocks, or the
            matmuls and softmax of the graph as they are.
        uses_blas: The code calls the library (its threads are set before
            each call, :func:`llvmaccel.blas.sync_threads`).
        parallel: The entry chooses per call between the serial function
            and the SPMD body on several threads (:mod:`.parallel`; the
            thread count is set before each call).
    """

    ir: str
    name: str
    inputs: list[int]
    constants: list[int]
    outputs: list[tuple]
    temps: list[tuple]
    symbols: list[str]
    errors: dict[int, tuple[str, str]] = field(default_factory=dict)
    output_map: list[int] = field(default_factory=list)
    links: list[tuple[str, str]] = field(default_factory=list)
    matmuls: list[tuple[int, str, str]] = field(default_factory=list)
    attention: list[tuple[int, str, str]] = field(default_factory=list)
    uses_blas: bool = False
    parallel: bool = False


_VIEWS = frozenset({"broadcast", "reshape", "permute", "slice", "select", "pad",
                    "view_as_complex", "view_as_real"})
_KERNELS = frozenset({"reduce", "matmul", "embedding_bag", "conv", "pool", "custom",
                      "cumulative", "scatter", "col2im", "im2col"})
_BUFFERS = frozenset({"input", "constant"})


#: Placeholder for the loop metadata of a loop the loop vectorizer must
#: leave alone (``Emitter.loop(..., vectorize=False)``); each occurrence
#: becomes a loop ID of its own in :func:`number_loop_metadata`.
NO_VECTORIZE = "!<no-vectorize>"


def number_loop_metadata(lines: list[str]) -> list[str]:
    """The module ``lines`` with every :data:`NO_VECTORIZE` placeholder made
    a distinct loop ID (``!N = distinct !{!N, !P}``) that refers to one
    ``llvm.loop.vectorize.enable`` = false property, numbered after any
    metadata the lines have; the definitions appended."""
    if not any(NO_VECTORIZE in ln for ln in lines):
        return lines
    taken = [int(m) for ln in lines for m in re.findall(r"!(\d+)\b", ln)]
    prop = max(taken, default=-1) + 1
    ids = itertools.count(prop + 1)
    defs = []
    out = []
    for ln in lines:
        while NO_VECTORIZE in ln:
            k = next(ids)
            ln = ln.replace(NO_VECTORIZE, f"!{k}", 1)
            defs.append(f"!{k} = distinct !{{!{k}, !{prop}}}")
        out.append(ln)
    return out + [f'!{prop} = !{{!"llvm.loop.vectorize.enable", i1 false}}', *defs]


def _fconst(value: float, dtype: DType) -> str:
    """An LLVM floating-point literal (hex, exact; ``0xH`` half and ``0xR``
    bfloat bits for the half types, rounded to nearest even through f32, as
    PyTorch's and numpy's conversions of a Python float round)."""
    value = float(value)
    if dtype.is_half or dtype is DType.f32:
        with np.errstate(over="ignore", invalid="ignore"):
            value = float(np.float32(value))
    if dtype is DType.f16:
        with np.errstate(over="ignore", invalid="ignore"):
            return f"0xH{int(np.float32(value).astype(np.float16).view(np.uint16)):04X}"
    if dtype is DType.bf16:
        return f"0xR{bf16_bits(value):04X}"
    return "0x{:016X}".format(struct.unpack("<Q", struct.pack("<d", value))[0])


def bf16_bits(value: float) -> int:
    """The bits of the bfloat16 nearest ``value`` (an f32), ties to even; a
    quiet NaN for NaN."""
    if math.isnan(value):
        return 0x7FC0 | (0x8000 if math.copysign(1.0, value) < 0 else 0)
    b = struct.unpack("<I", struct.pack("<f", value))[0]
    return ((b + 0x7FFF + ((b >> 16) & 1)) >> 16) & 0xFFFF


def _const(value: object, dtype: DType) -> str:
    if dtype.is_complex:  # a constant struct: { float re, float im }
        z = complex(value)  # type: ignore[arg-type]
        if z == 0 and math.copysign(1, z.real) > 0 and math.copysign(1, z.imag) > 0:
            return "zeroinitializer"
        t = dtype.real
        return f"{{ {t.llvm} {_fconst(z.real, t)}, {t.llvm} {_fconst(z.imag, t)} }}"
    if dtype.is_float:
        return _fconst(float(value), dtype)  # type: ignore[arg-type]
    if dtype is DType.bool:
        return "true" if value else "false"
    return str(dtype.wrap(int(value)))  # type: ignore[call-overload]


def _strides(shape: tuple) -> list:
    out: list = []
    acc: object = 1
    for d in reversed(shape):
        out.append(acc)
        acc = dim_op("mul", acc, d)  # type: ignore[arg-type]
    return out[::-1]


def _root_for_buffer(node: Node) -> int:
    """The node to materialize so that ``node`` is a contiguous buffer."""
    while node.op == "reshape":
        node = node.inputs[0]
    return node.id


def buffered_reads(starts: list[tuple[Node, bool]], stop: set[int],
                   keeps: Callable[[Node, Node], bool]) -> dict[int, bool]:
    """The nodes with buffers (ids in ``stop``) a loop nest's expression
    reads, each with whether every read is at the nest's own position:
    walked from ``starts`` (the nest's operands, each with whether the nest
    reads it at its own position) through the nodes computed inline, where
    ``keeps(user, x)`` says whether ``user`` reads its operand ``x`` at the
    position ``user`` itself is read at."""
    out: dict[int, bool] = {}
    seen: set[tuple[int, bool]] = set()
    work = list(starts)
    while work:
        x, same = work.pop()
        if (x.id, same) in seen:
            continue
        seen.add((x.id, same))
        if x.id in stop:
            out[x.id] = out.get(x.id, True) and same
            continue
        for y in x.inputs:
            work.append((y, same and keeps(x, y)))
    return out


def default_target() -> TargetInfo:
    """The target kernels are generated for when none is named: this machine."""
    return host_target()
