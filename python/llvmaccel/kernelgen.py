"""A random generator of loop kernels in the shapes the llvmaccel passes target.

>>> k = kernelgen.generate(seed=7)
>>> k.shape, k.function, k.ir, k.args      # IR text and input specs for check()

Shapes: ``gather`` (``T[f(B[p(i)])]`` with strides 1, -1, 0 and k, loaded or
stored), ``chain`` (``T[A[B[i]]]``), ``csr`` (``offsets[r]..offsets[r+1]``
nests), ``embedding`` (rows ``T + idx[j]*D`` summed or copied with memcpy),
``hash`` (linear probing with a bounded probe count), ``guarded`` (loads and
stores under padding-style bounds tests and masks), ``aggphi`` (struct and
vector phis: argmax pairs, vector accumulators), ``tasks`` (a chain of
producer/consumer loops over a shared buffer); and, from
:mod:`llvmaccel.taskgen`, MLIR async task graphs lowered by mlir-opt
(``async-chain``, ``async-dag``, ``async-group``, ``async-loop``) and GPU host
launch loops compiled by clang (``launch-cuda``, ``launch-hip``,
``launch-ze``), run against the real MLIR async runtime and a recording GPU
runtime. Every kernel draws its value
type (float, double, i32, i64), index type (i32, i64), sizes, trip counts
(0, 1, the buffer size and, behind an early exit, 2^40), and sometimes an
early exit and fast-math flags. Each comes with :class:`~llvmaccel.inputs.ArgSpec`
specs so that inputs are mostly in bounds (with out-of-range indices in a
share of cases) and a well-defined original is what gets compared.
Kernels are free of undefined behaviour for in-range inputs: no ``nsw``/``nuw``
flags, no division, every loop bounded.
"""

from __future__ import annotations

import random
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .inputs import ArgSpec

if TYPE_CHECKING:
    from .taskgen import TaskProgram

__all__ = ["GeneratedKernel", "SHAPES", "LOOP_SHAPES", "VARIANTS", "available_shapes",
           "generate", "generate_many", "units"]


@dataclass
class GeneratedKernel:
    """A generated kernel: IR text, function name and input specs."""

    shape: str
    seed: int
    ir: str
    function: str = "kernel"
    args: dict[str, ArgSpec] = field(default_factory=dict)
    features: list[str] = field(default_factory=list)
    #: The pipeline both versions go through before the JIT compiles them
    #: (``"verify"``: none; coroutine splitting for MLIR async programs).
    compile_pipeline: str = "verify"
    #: Shared libraries the JIT'd code calls into (the MLIR async runtime,
    #: the recording GPU runtime).
    libraries: list[str] = field(default_factory=list)
    #: Seconds its generation took (for :func:`generate_many`, the MLIR
    #: tools' run shared out among the programs it lowered).
    seconds: float = 0.0


class _Gen:
    """Per-kernel random choices and IR helpers."""

    def __init__(self, rng: random.Random, variant: str | None = None) -> None:
        self.rng = rng
        self.variant = variant
        self.V = rng.choice(["float", "double", "i32", "i64", "float", "double"])
        self.I = rng.choice(["i32", "i64"])
        self.E = rng.choice([1, 2, 3, 7, 16, 64, 100, 257, 1000])
        self.fast = self.is_float and rng.random() < 0.15
        self.features: list[str] = [f"V={self.V}", f"I={self.I}", f"E={self.E}"]
        self.n = 0
        #: The index map masks with the kernel's ``%tmask`` argument.
        self.mask_arg = False

    def pick(self, choices: list[str]) -> str:
        """``rng.choice(choices)``, or the variant asked for (the draw is made
        all the same, so the rest of the kernel is the seed's)."""
        drawn = self.rng.choice(choices)
        return self.variant if self.variant is not None else drawn

    @property
    def is_float(self) -> bool:
        return self.V in ("float", "double")

    def tmp(self, stem: str = "t") -> str:
        self.n += 1
        return f"%{stem}{self.n}"

    def vsize(self) -> int:
        return {"float": 4, "double": 8, "i32": 4, "i64": 8}[self.V]

    def isize(self) -> int:
        return 4 if self.I == "i32" else 8

    def zero(self) -> str:
        return "0.0" if self.is_float else "0"

    def add(self, a: str, b: str) -> tuple[str, str]:
        d = self.tmp("acc")
        flags = " fast" if self.fast else ""
        op = f"fadd{flags} {self.V}" if self.is_float else f"add {self.V}"
        return d, f"  {d} = {op} {a}, {b}\n"

    def mul(self, a: str, b: str) -> tuple[str, str]:
        d = self.tmp("m")
        flags = " fast" if self.fast else ""
        op = f"fmul{flags} {self.V}" if self.is_float else f"mul {self.V}"
        return d, f"  {d} = {op} {a}, {b}\n"

    def load_index(self, base: str, pos: str) -> tuple[str, str]:
        """Loads an index of type I from base[pos] and widens it to i64."""
        p, v = self.tmp("pi"), self.tmp("ix")
        code = f"  {p} = getelementptr inbounds {self.I}, ptr {base}, i64 {pos}\n"
        code += f"  {v} = load {self.I}, ptr {p}, align {self.isize()}\n"
        if self.I == "i64":
            return v, code
        w = self.tmp("iw")
        ext = self.rng.choice(["sext", "zext"])
        return w, code + f"  {w} = {ext} i32 {v} to i64\n"

    def load_value(self, base: str, pos: str) -> tuple[str, str]:
        p, v = self.tmp("pv"), self.tmp("v")
        return v, (f"  {p} = getelementptr inbounds {self.V}, ptr {base}, i64 {pos}\n"
                   f"  {v} = load {self.V}, ptr {p}, align {self.vsize()}\n")

    def store_value(self, base: str, pos: str, val: str) -> str:
        p = self.tmp("ps")
        return (f"  {p} = getelementptr inbounds {self.V}, ptr {base}, i64 {pos}\n"
                f"  store {self.V} {val}, ptr {p}, align {self.vsize()}\n")

    def work(self, v: str) -> tuple[str, str]:
        """A random amount of arithmetic on ``v`` (so cost models see real loops)."""
        ops = self.rng.choice([0, 0, 4, 12, 24])
        if ops and f"work={ops}" not in self.features:
            self.features.append(f"work={ops}")
        code = ""
        for k in range(ops):
            m, c1 = self.mul(v, "1.5" if self.is_float else "3")
            d = self.tmp("w")
            op = "fadd" if self.is_float else "xor"
            c = f"{k + 1}.0" if self.is_float else str(k + 1)
            code += c1 + f"  {d} = {op} {self.V} {m}, {c}\n"
            v = d
        return v, code

    def counts(self, limit: int) -> ArgSpec:
        """A trip count spec: 0, 1, limit-1, limit and random values in between."""
        vals = {0, 1, max(0, limit - 1), limit, self.rng.randint(0, limit),
                self.rng.randint(0, limit)}
        return ArgSpec(values=tuple(sorted(vals)))

    def buf(self, elems: int, elem: str, bound: int | None = None,
            sorted_: bool = False) -> ArgSpec:
        size = {"float": 4, "double": 8, "i32": 4, "i64": 8, "i8": 1}[elem]
        return ArgSpec(bytes=max(1, elems) * size, elem=elem, bound=bound, sorted=sorted_)


def _loop(g: _Gen, n: str, body: Callable[[str], tuple[str, list[tuple[str, str, str]]]],
          early_exit: str | None = None) -> tuple[str, list[tuple[str, str]]]:
    """A counted loop ``for i in [0, n)`` (i64) around ``body(i)``.

    ``body`` returns its code and the loop-carried values as (name, type,
    initial value) whose next values it has defined as ``name.next``. With
    ``early_exit`` (an i64 scalar) the loop also leaves when ``i == early_exit``.
    Returns the code, entering from ``%entry`` and ending in ``%exit``, and the
    carried values' exit phis as (exit name, type).
    """
    code_body, carried = body("%i")
    phis = "".join(f"  {name} = phi {ty} [ {init}, %entry ], [ {name}.next, %latch ]\n"
                   for name, ty, init in carried)
    exit_phis, outs = "", []
    for name, ty, init in carried:
        out = name + ".out"
        srcs = f"[ {init}, %entry ], [ {name}.next, %latch ]"
        if early_exit:
            srcs += f", [ {name}, %loop ]"
        exit_phis += f"  {out} = phi {ty} {srcs}\n"
        outs.append((out, ty))
    code = (f"entry:\n  %empty = icmp sle i64 {n}, 0\n  br i1 %empty, label %exit, label %loop\n"
            f"loop:\n  %i = phi i64 [ 0, %entry ], [ %i.next, %latch ]\n{phis}")
    if early_exit:
        code += (f"  %stop = icmp eq i64 %i, {early_exit}\n"
                 "  br i1 %stop, label %exit, label %body\nbody:\n")
    else:
        code += "  br label %body\nbody:\n"
    code += code_body
    code += ("  br label %latch\nlatch:\n  %i.next = add i64 %i, 1\n"
             f"  %done = icmp eq i64 %i.next, {n}\n"
             f"  br i1 %done, label %exit, label %loop\nexit:\n{exit_phis}")
    return code, outs


def _finish(g: _Gen, shape: str, seed: int, params: list[str], code: str,
            ret: tuple[str, str] | None, args: dict[str, ArgSpec],
            decls: str = "") -> GeneratedKernel:
    rty = ret[1] if ret else "void"
    tail = f"  ret {rty} {ret[0]}\n" if ret else "  ret void\n"
    ir = (f"; generated by llvmaccel.kernelgen: shape {shape}, seed {seed}\n"
          f"define {rty} @kernel({', '.join(params)}) {{\n{code}{tail}}}\n{decls}")
    return GeneratedKernel(shape, seed, ir, "kernel", args, g.features)


def _position(g: _Gen) -> tuple[str, Callable[[str], tuple[str, str]], int]:
    """How the index array is walked: stride 1, -1, 0 or k (name, code, elems factor)."""
    kind = g.rng.choice(["unit", "unit", "negative", "zero", "strided"])
    g.features.append(f"stride={kind}")
    if kind == "negative":
        def pos(i: str) -> tuple[str, str]:
            a, b = g.tmp("r"), g.tmp("p")
            return b, f"  {a} = sub i64 %n, {i}\n  {b} = sub i64 {a}, 1\n"
        return kind, pos, 1
    if kind == "zero":
        return kind, lambda i: ("%k", ""), 1
    if kind == "strided":
        s = g.rng.choice([2, 3, 8])

        def pos_s(i: str) -> tuple[str, str]:
            p = g.tmp("p")
            return p, f"  {p} = mul i64 {i}, {s}\n"
        return kind, pos_s, s
    return kind, lambda i: (i, ""), 1


def _index_map(g: _Gen, ix: str, table: int) -> tuple[str, str, int]:
    """f(B[i]): identity, + c, & mask (a power of two table; a constant, or
    the ``%tmask`` argument, whose size accel-prefetch compares at run time),
    or * D (rows)."""
    kind = g.rng.choice(["id", "id", "offset", "mask", "row"])
    g.features.append(f"map={kind}")
    if kind == "offset":
        d = g.tmp("f")
        return d, f"  {d} = add i64 {ix}, 1\n", table - 1
    if kind == "mask":
        d = g.tmp("f")
        if g.rng.random() < 0.5:
            g.mask_arg = True
            g.features.append("mask=arg")
            return d, f"  {d} = and i64 {ix}, %tmask\n", table
        return d, f"  {d} = and i64 {ix}, 63\n", table  # T has at least 64 elements then
    if kind == "row":
        d = g.tmp("f")
        return d, f"  {d} = mul i64 {ix}, 16\n", max(1, table // 16)
    return ix, "", table


def _gather(g: _Gen, seed: int) -> GeneratedKernel:
    stride, pos, factor = _position(g)
    T = g.rng.choice([64, 128, 1024, 4096, 1 << 16])
    store = g.rng.random() < 0.35
    early = g.rng.random() < 0.25
    bound_holder: list[int] = []

    def body(i: str) -> tuple[str, list[tuple[str, str, str]]]:
        p, code = pos(i)
        ix, c2 = g.load_index("%B", p)
        f, c3, bound = _index_map(g, ix, T)
        bound_holder.append(bound)
        v, c4 = g.load_value("%T", f)
        v, c4w = g.work(v)
        code += c2 + c3 + c4 + c4w
        if store:
            code += g.store_value("%out", i, v)
            return code, []
        w, c5 = g.load_value("%w", i)
        m, c6 = g.mul(v, w)
        a, c7 = g.add("%acc", m)
        code += c5 + c6 + c7 + f"  %acc.next = {'fadd' if g.is_float else 'add'} {g.V} {a}, " \
                               f"{g.zero() if not g.is_float else '-0.0'}\n"
        return code, [("%acc", g.V, g.zero())]

    code, outs = _loop(g, "%n", body, "%m" if early else None)
    elems = g.E * factor if stride != "zero" else g.E
    args = {"B": g.buf(elems, g.I, bound=bound_holder[0]), "T": g.buf(T, g.V),
            "n": g.counts(g.E), "k": ArgSpec(range=(0, max(0, g.E - 1)))}
    params = ["ptr noalias %T", "ptr noalias %B", "i64 %n", "i64 %k"]
    if store:
        params.insert(0, "ptr noalias %out")
        args["out"] = g.buf(g.E, g.V)
    else:
        params.append("ptr noalias %w")
        args["w"] = g.buf(g.E, g.V)
    if g.mask_arg:  # T is a power of two, at least 64 elements
        params.append("i64 %tmask")
        args["tmask"] = ArgSpec(values=(0, 1, 63, T - 1))
    if early:
        params.append("i64 %m")
        g.features.append("early-exit")
        args["m"] = g.counts(g.E)
        args["n"] = ArgSpec(values=(0, 1, g.E, 1 << 40, (1 << 31) - 1))
        if stride == "negative":  # the walk starts at n-1: keep n in bounds
            args["n"] = g.counts(g.E)
    return _finish(g, "gather", seed, params, code, outs[0] if outs else None, args)


def _chain(g: _Gen, seed: int) -> GeneratedKernel:
    T = g.rng.choice([64, 1024, 1 << 14])
    A = g.rng.choice([16, 256, 4096])

    def body(i: str) -> tuple[str, list[tuple[str, str, str]]]:
        b, c1 = g.load_index("%B", i)
        a, c2 = g.load_index("%A", b)
        v, c3 = g.load_value("%T", a)
        v, c3w = g.work(v)
        s, c4 = g.add("%acc", v)
        step = (f"  %acc.next = {('fadd' if g.is_float else 'add')} {g.V} {s}, "
                f"{'-0.0' if g.is_float else '0'}\n")
        return c1 + c2 + c3 + c3w + c4 + step, [("%acc", g.V, g.zero())]

    code, outs = _loop(g, "%n", body)
    args = {"B": g.buf(g.E, g.I, bound=A), "A": g.buf(A, g.I, bound=T), "T": g.buf(T, g.V),
            "n": g.counts(g.E)}
    params = ["ptr noalias %T", "ptr noalias %A", "ptr noalias %B", "i64 %n"]
    return _finish(g, "chain", seed, params, code, outs[0], args)


def _csr_like(g: _Gen, seed: int, shape: str) -> GeneratedKernel:
    """CSR SpMV (shape csr) or an embedding bag (shape embedding)."""
    rows = g.E
    nnz = g.rng.choice([0, 1, 16, 300, 2000])
    X = g.rng.choice([32, 1000, 1 << 14])
    D = g.rng.choice([1, 4, 16, 33]) if shape == "embedding" else 1
    memcpy = shape == "embedding" and g.rng.random() < 0.3
    g.features.append(f"D={D}" + (",memcpy" if memcpy else ""))
    inner = []
    o0, c0 = g.load_index("%off", "%i")
    nx = g.tmp("i1n")
    c0 += f"  {nx} = add i64 %i, 1\n"
    o1, c1 = g.load_index("%off", nx)
    code = c0 + c1
    # inner loop over j in [o0, o1)
    col, cc = g.load_index("%col", "%j")
    inner.append(cc)
    if shape == "csr":
        x, cx = g.load_value("%x", col)
        a, ca = g.load_value("%val", "%j")
        m, cm = g.mul(a, x)
        s, cs = g.add("%sum", m)
        inner.append(cx + ca + cm + cs)
        step = f"  %sum.next = {('fadd' if g.is_float else 'add')} {g.V} {s}, " \
               f"{'-0.0' if g.is_float else '0'}\n"
        inner.append(step)
        carried_init = g.zero()
    else:
        rowbase = g.tmp("rb")
        inner.append(f"  {rowbase} = mul i64 {col}, {D}\n")
        ob = g.tmp("ob")
        inner.append(f"  {ob} = mul i64 %i, {D}\n")
        if memcpy:
            sp, dp = g.tmp("sp"), g.tmp("dp")
            inner.append(f"  {sp} = getelementptr inbounds {g.V}, ptr %x, i64 {rowbase}\n"
                         f"  {dp} = getelementptr inbounds {g.V}, ptr %y, i64 {ob}\n"
                         f"  call void @llvm.memcpy.p0.p0.i64(ptr {dp}, ptr {sp}, "
                         f"i64 {D * g.vsize()}, i1 false)\n")
        else:
            for d in range(min(D, 4)):
                ri, oi = g.tmp("ri"), g.tmp("oi")
                inner.append(f"  {ri} = add i64 {rowbase}, {d}\n  {oi} = add i64 {ob}, {d}\n")
                v, cv = g.load_value("%x", ri)
                o, co = g.load_value("%y", oi)
                s, cs = g.add(o, v)
                inner.append(cv + co + cs + g.store_value("%y", oi, s))
        inner.append("  %sum.next = add i64 %sum, 1\n")
        carried_init = "0"
    sty = g.V if shape == "csr" else "i64"
    code += (f"  %e = icmp slt i64 {o0}, {o1}\n  br i1 %e, label %inner.pre, label %row.end\n"
             "inner.pre:\n  br label %inner\n"
             f"inner:\n  %j = phi i64 [ {o0}, %inner.pre ], [ %j.next, %inner ]\n"
             f"  %sum = phi {sty} [ {carried_init}, %inner.pre ], [ %sum.next, %inner ]\n"
             + "".join(inner) +
             f"  %j.next = add i64 %j, 1\n  %jd = icmp eq i64 %j.next, {o1}\n"
             "  br i1 %jd, label %row.end.loopexit, label %inner\n"
             f"row.end.loopexit:\n  %sum.lcssa = phi {sty} [ %sum.next, %inner ]\n"
             "  br label %row.end\n"
             f"row.end:\n  %r = phi {sty} [ {carried_init}, %body ], "
             "[ %sum.lcssa, %row.end.loopexit ]\n")
    if shape == "csr":
        code += g.store_value("%y", "%i", "%r")
    else:
        code += "  %cnt.p = getelementptr inbounds i64, ptr %cnt, i64 %i\n" \
                "  store i64 %r, ptr %cnt.p, align 8\n"

    def body(i: str) -> tuple[str, list[tuple[str, str, str]]]:
        return code, []

    text, _ = _loop(g, "%n", body)
    xs = X * D if shape == "embedding" else X
    args = {"off": g.buf(rows + 1, g.I, bound=nnz + 1, sorted_=True),
            "col": g.buf(max(nnz, 1), g.I, bound=X), "x": g.buf(xs, g.V),
            "y": g.buf(rows * D, g.V), "n": g.counts(rows)}
    params = ["ptr noalias %y", "ptr noalias %x", "ptr noalias %off", "ptr noalias %col", "i64 %n"]
    if shape == "csr":
        params.append("ptr noalias %val")
        args["val"] = g.buf(max(nnz, 1), g.V)
    else:
        params.append("ptr noalias %cnt")
        args["cnt"] = g.buf(rows, "i64")
    decls = "declare void @llvm.memcpy.p0.p0.i64(ptr, ptr, i64, i1)\n" if memcpy else ""
    return _finish(g, shape, seed, params, text, None, args, decls)


def _hash(g: _Gen, seed: int) -> GeneratedKernel:
    size = g.rng.choice([16, 256, 4096])
    probes = g.rng.choice([1, 4, 16])
    g.I = "i64"
    code = (f"  %kp = getelementptr inbounds i64, ptr %keys, i64 %i\n"
            f"  %key = load i64, ptr %kp, align 8\n"
            f"  %h0 = mul i64 %key, -7046029254386353131\n"
            f"  %h1 = lshr i64 %h0, 17\n  %h = and i64 %h1, {size - 1}\n"
            "  %tp0 = getelementptr inbounds i64, ptr %table, i64 %h\n"
            "  %tk0 = load i64, ptr %tp0, align 8\n"
            "  %hit0 = icmp eq i64 %tk0, %key\n"
            "  br i1 %hit0, label %found, label %probe.pre\n"
            "probe.pre:\n"
            f"  %h.n = add i64 %h, 1\n  %h.1 = and i64 %h.n, {size - 1}\n"
            "  br label %probe\n"
            "probe:\n  %slot = phi i64 [ %h.1, %probe.pre ], [ %slot.next, %miss ]\n"
            "  %tries = phi i64 [ 0, %probe.pre ], [ %tries.next, %miss ]\n"
            "  %tp = getelementptr inbounds i64, ptr %table, i64 %slot\n"
            "  %tk = load i64, ptr %tp, align 8\n"
            "  %hit = icmp eq i64 %tk, %key\n"
            "  br i1 %hit, label %found, label %miss\n"
            "miss:\n  %slot.n1 = add i64 %slot, 1\n"
            f"  %slot.next = and i64 %slot.n1, {size - 1}\n"
            "  %tries.next = add i64 %tries, 1\n"
            f"  %give = icmp eq i64 %tries.next, {probes}\n"
            "  br i1 %give, label %probe.end, label %probe\n"
            "found:\n  %fs = phi i64 [ %h, %body ], [ %slot, %probe ]\n"
            "  %vp = getelementptr inbounds i64, ptr %vals, i64 %fs\n"
            "  %fv = load i64, ptr %vp, align 8\n  br label %probe.end\n"
            "probe.end:\n  %res = phi i64 [ -1, %miss ], [ %fv, %found ]\n"
            "  %op = getelementptr inbounds i64, ptr %out, i64 %i\n"
            "  store i64 %res, ptr %op, align 8\n")
    text, _ = _loop(g, "%n", lambda i: (code, []))
    g.features.append(f"table={size},probes={probes}")
    args = {"keys": ArgSpec(bytes=g.E * 8, elem="i64", bound=8), "table":
            ArgSpec(bytes=size * 8, elem="i64", bound=8), "vals": g.buf(size, "i64"),
            "out": g.buf(g.E, "i64"), "n": g.counts(g.E)}
    params = ["ptr noalias %out", "ptr noalias %keys", "ptr noalias %table",
              "ptr noalias %vals", "i64 %n"]
    return _finish(g, "hash", seed, params, text, None, args)


def _guarded(g: _Gen, seed: int) -> GeneratedKernel:
    """Padding-style guarded loads (index bounds tested first) and masked stores."""
    kind = g.pick(list(VARIANTS["guarded"]))
    g.features.append(f"guard={kind}")
    pad = g.rng.choice(["0.0", "-0.0", "1.0"]) if g.is_float else g.rng.choice(["0", "-1"])
    lim_elems = g.rng.choice([1, 8, 64, 1000])
    code = ""
    if kind in ("bounds", "both"):
        ix, c = g.load_index("%idx", "%i")
        code += c + (f"  %lo = icmp sge i64 {ix}, 0\n  %hi = icmp slt i64 {ix}, %lim\n"
                     "  %ok = and i1 %lo, %hi\n  br i1 %ok, label %ld, label %join\n"
                     "ld:\n")
        v, c = g.load_value("%src", ix)
        code += c + f"  br label %join\njoin:\n  %g = phi {g.V} [ {v}, %ld ], [ {pad}, %body ]\n"
        code += g.store_value("%out", "%i", "%g")
    if kind == "window":
        off = g.rng.choice([-2, -1, 1, 3])
        code += (f"  %q = add i64 %i, {off}\n  %lo = icmp sge i64 %q, 0\n"
                 "  %hi = icmp slt i64 %q, %lim\n  %ok = and i1 %lo, %hi\n"
                 "  br i1 %ok, label %ld, label %join\nld:\n")
        v, c = g.load_value("%src", "%q")
        code += c + f"  br label %join\njoin:\n  %g = phi {g.V} [ {v}, %ld ], [ {pad}, %body ]\n"
        code += g.store_value("%out", "%i", "%g")
    if kind in ("mask-store", "both"):
        code += ("  %mp = getelementptr inbounds i8, ptr %mask, i64 %i\n"
                 "  %mv = load i8, ptr %mp, align 1\n  %mb = and i8 %mv, 1\n"
                 "  %on = icmp ne i8 %mb, 0\n  br i1 %on, label %st, label %st.end\nst:\n")
        v, c = g.load_value("%x", "%i")
        code += c + g.store_value("%out2", "%i", v) + "  br label %st.end\nst.end:\n"
    text, _ = _loop(g, "%n", lambda i: (code, []))
    args = {"idx": g.buf(g.E, g.I, bound=lim_elems), "src": g.buf(lim_elems, g.V),
            "out": g.buf(g.E, g.V), "out2": g.buf(g.E, g.V), "x": g.buf(g.E, g.V),
            "mask": g.buf(g.E, "i8"), "n": g.counts(g.E),
            "lim": ArgSpec(values=(0, lim_elems, lim_elems))}
    params = ["ptr noalias %out", "ptr noalias %out2", "ptr noalias %src", "ptr noalias %idx",
              "ptr noalias %x", "ptr noalias %mask", "i64 %n", "i64 %lim"]
    return _finish(g, "guarded", seed, params, text, None, args)


def _aggphi(g: _Gen, seed: int) -> GeneratedKernel:
    """Struct phis (an argmax pair) or vector phis (a <W x V> accumulator)."""
    if g.rng.random() < 0.5:
        g.features.append("struct-phi")
        agg = f"{{ {g.V}, i64 }}"
        cmp = f"fcmp ogt {g.V}" if g.is_float else f"icmp sgt {g.V}"
        init = "-1.0" if g.is_float else "-1"
        v, c = g.load_value("%x", "%i")
        code = c + (f"  %best = extractvalue {agg} %st, 0\n"
                    f"  %gt = {cmp} {v}, %best\n"
                    f"  %s1 = insertvalue {agg} %st, {g.V} {v}, 0\n"
                    f"  %s2 = insertvalue {agg} %s1, i64 %i, 1\n"
                    f"  %st.next = select i1 %gt, {agg} %s2, {agg} %st\n")
        text, outs = _loop(g, "%n", lambda i: (code, [("%st", agg,
                                                        f"{{ {g.V} {init}, i64 -1 }}")]))
        text += (f"  %bi = extractvalue {agg} {outs[0][0]}, 1\n"
                 f"  %bv = extractvalue {agg} {outs[0][0]}, 0\n"
                 f"  store {g.V} %bv, ptr %res, align {g.vsize()}\n")
        args = {"x": g.buf(g.E, g.V), "res": g.buf(1, g.V), "n": g.counts(g.E)}
        return _finish(g, "aggphi", seed, ["ptr noalias %x", "ptr noalias %res", "i64 %n"],
                       text, ("%bi", "i64"), args)
    W = g.rng.choice([2, 4, 8])
    g.features.append(f"vector-phi W={W}")
    vt = f"<{W} x {g.V}>"
    op = "fadd" if g.is_float else "add"
    code = (f"  %vb = mul i64 %i, {W}\n"
            f"  %vp = getelementptr inbounds {g.V}, ptr %x, i64 %vb\n"
            f"  %vv = load {vt}, ptr %vp, align {g.vsize()}\n")
    decls = ""
    if g.is_float and g.rng.random() < 0.5:  # an elementwise intrinsic on the accumulator
        g.features.append("fmuladd")
        name = f"@llvm.fmuladd.v{W}f{g.vsize() * 8}"
        half = ", ".join([f"{g.V} 0.5"] * W)
        code += f"  %vacc.next = call {vt} {name}({vt} %vv, {vt} <{half}>, {vt} %vacc)\n"
        decls = f"declare {vt} {name}({vt}, {vt}, {vt})\n"
    else:
        code += f"  %vacc.next = {op} {vt} %vacc, %vv\n"
    text, outs = _loop(g, "%n", lambda i: (code, [("%vacc", vt, "zeroinitializer")]))
    text += f"  store {vt} {outs[0][0]}, ptr %res, align {g.vsize()}\n"
    args = {"x": g.buf(g.E * W, g.V), "res": g.buf(W, g.V), "n": g.counts(g.E)}
    return _finish(g, "aggphi", seed, ["ptr noalias %x", "ptr noalias %res", "i64 %n"],
                   text, None, args, decls)


def _tasks(g: _Gen, seed: int) -> GeneratedKernel:
    """A simple task graph: a producer loop writes tmp[], a consumer gathers from it."""
    g.features.append("producer-consumer")
    v, c1 = g.load_value("%x", "%i")
    prod = c1 + g.store_value("%tmp", "%i", v)
    text1, _ = _loop(g, "%n", lambda i: (prod, []))
    text1 = text1.replace("exit:", "mid:").replace("%exit", "%mid")
    ix, c2 = g.load_index("%B", "%i2")
    t, c3 = g.load_value("%tmp", ix)
    cons = c2 + c3 + g.store_value("%out", "%i2", t)
    text2 = (f"  %empty2 = icmp sle i64 %n, 0\n  br i1 %empty2, label %exit, label %loop2\n"
             f"loop2:\n  %i2 = phi i64 [ 0, %mid ], [ %i2.next, %loop2 ]\n{cons}"
             "  %i2.next = add i64 %i2, 1\n  %d2 = icmp eq i64 %i2.next, %n\n"
             "  br i1 %d2, label %exit, label %loop2\nexit:\n")
    args = {"x": g.buf(g.E, g.V), "tmp": g.buf(g.E, g.V), "out": g.buf(g.E, g.V),
            "B": g.buf(g.E, g.I, bound=g.E), "n": ArgSpec(values=(0, 1, g.E, g.E))}
    params = ["ptr noalias %out", "ptr noalias %tmp", "ptr noalias %x", "ptr noalias %B",
              "i64 %n"]
    return _finish(g, "tasks", seed, params, text1 + text2, None, args)


def _task_shape(shape: str) -> Callable[[_Gen, int], GeneratedKernel]:
    """A builder for a shape of :mod:`llvmaccel.taskgen`."""
    def build(g: _Gen, seed: int) -> GeneratedKernel:
        from . import taskgen
        if shape in taskgen.ASYNC_SHAPES:
            ir, prog = taskgen.generate_async(g.rng, shape)
        else:
            ir, prog = taskgen.generate_launch(g.rng, shape)
        return _task_kernel(shape, seed, ir, prog)
    return build


def _task_kernel(shape: str, seed: int, ir: str, prog: TaskProgram) -> GeneratedKernel:
    from . import taskgen
    if shape in taskgen.ASYNC_SHAPES:
        pipe, libs = taskgen.COROUTINE_LOWERING, [taskgen.async_runtime_library() or ""]
    else:
        pipe, libs = "verify", [taskgen.recorder_library()]
    ir = f"; generated by llvmaccel.kernelgen: shape {shape}, seed {seed}\n{ir}"
    return GeneratedKernel(shape, seed, ir, "kernel", prog.args, prog.features, pipe,
                           [lib for lib in libs if lib])


#: Shape name -> builder.
SHAPES: dict[str, Callable[[_Gen, int], GeneratedKernel]] = {
    "gather": _gather,
    "chain": _chain,
    "csr": lambda g, s: _csr_like(g, s, "csr"),
    "embedding": lambda g, s: _csr_like(g, s, "embedding"),
    "hash": _hash,
    "guarded": _guarded,
    "aggphi": _aggphi,
    "tasks": _tasks,
    **{name: _task_shape(name) for name in ("async-chain", "async-dag", "async-group",
                                            "async-loop", "launch-cuda", "launch-hip",
                                            "launch-ze")},
}

#: The variants a shape's generator can be asked for (``"guarded:window"``):
#: one choice of its kind, which a pass may act on in one variant and not in
#: another (accel-masked-load rewrites padding-style windows and bounds tests,
#: not masked stores), so that a fuzz run can weight them apart.
VARIANTS: dict[str, tuple[str, ...]] = {"guarded": ("bounds", "window", "mask-store", "both")}

#: Shapes whose generators need nothing but Python.
LOOP_SHAPES = ("aggphi", "chain", "csr", "embedding", "gather", "guarded", "hash", "tasks")


def available_shapes() -> list[str]:
    """The shapes that can be generated here (the task shapes need mlir-opt and clang)."""
    from . import taskgen
    return sorted(set(LOOP_SHAPES) | set(taskgen.available()))


def units(shapes: list[str] | None = None) -> list[str]:
    """``shapes`` (default: :func:`available_shapes`) with each shape that has
    :data:`VARIANTS` replaced by its variants (``"guarded:bounds"``, ...)."""
    out = []
    for shape in shapes or available_shapes():
        if ":" not in shape and shape in VARIANTS:
            out += [f"{shape}:{v}" for v in VARIANTS[shape]]
        else:
            out.append(shape)
    return sorted(set(out))


def generate(seed: int, shape: str | None = None) -> GeneratedKernel:
    """The kernel of ``seed`` (of ``shape``, or a shape chosen by the seed).

    ``shape`` may name a variant, ``"guarded:window"`` (:data:`VARIANTS`): the
    seed's kernel of that shape with that choice made.

    Raises:
        ValueError: an unknown shape or variant.
    """
    t0 = time.perf_counter()
    name, variant, g = _start(seed, shape)
    kernel = SHAPES[name](g, seed)
    if variant:
        kernel.shape = f"{name}:{variant}"
    kernel.seconds = time.perf_counter() - t0
    return kernel


def generate_many(requests: Sequence[tuple[int, str | None]]
                  ) -> list[GeneratedKernel | Exception]:
    """:func:`generate` of each ``(seed, shape)``, made faster: the MLIR async
    programs among them are lowered by one run of the MLIR tools
    (:func:`llvmaccel.taskgen.lower_mlir_many`). The same kernels, up to the
    names of the globals that hold MLIR's assertion messages (the lowering
    numbers them across the programs of a run).

    Returns:
        Per request, its kernel, or the :class:`RuntimeError` or
        :class:`subprocess.SubprocessError` of a program the MLIR tools or
        clang rejected (a bug of the generator).

    Raises:
        ValueError: an unknown shape or variant.
    """
    from . import taskgen
    out: list[GeneratedKernel | Exception | None] = [None] * len(requests)
    drafts: list[tuple[int, int, str, taskgen.AsyncDraft, float]] = []
    for i, (seed, shape) in enumerate(requests):
        t0 = time.perf_counter()
        name, variant, g = _start(seed, shape)
        if name in taskgen.ASYNC_SHAPES:
            draft = taskgen.draft_async(g.rng, name)
            drafts.append((i, seed, name, draft, time.perf_counter() - t0))
            continue
        try:
            out[i] = generate(seed, shape)
        except (RuntimeError, subprocess.SubprocessError) as err:
            out[i] = err
    t0 = time.perf_counter()
    lowered = taskgen.lower_mlir_many([d.program.source for _, _, _, d, _ in drafts])
    share = (time.perf_counter() - t0) / max(1, len(drafts))
    for (i, seed, name, draft, seconds), ir in zip(drafts, lowered, strict=True):
        if isinstance(ir, Exception):
            out[i] = ir
            continue
        t0 = time.perf_counter()
        kernel = _task_kernel(name, seed, draft.finish(ir), draft.program)
        kernel.seconds = seconds + share + time.perf_counter() - t0
        out[i] = kernel
    return [k for k in out if k is not None]


def _start(seed: int, shape: str | None) -> tuple[str, str, _Gen]:
    """(shape, variant, the generator's state) for the kernel of ``seed``."""
    rng = random.Random(f"kernelgen:{seed}")
    name = shape or rng.choice(available_shapes())
    name, _, variant = name.partition(":")
    if name not in SHAPES:
        raise ValueError(f"unknown shape {name!r} (known: {', '.join(sorted(SHAPES))})")
    if variant and variant not in VARIANTS.get(name, ()):
        raise ValueError(f"shape {name!r} has no variant {variant!r} (variants: "
                         f"{', '.join(VARIANTS.get(name, ())) or 'none'})")
    return name, variant, _Gen(rng, variant or None)
