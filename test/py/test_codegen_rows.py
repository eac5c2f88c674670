"""Row groups (codegen.rows): softmax- and layer-norm-shaped chains of
row reductions and elementwise nests emitted in one loop over the rows, with
one-row temporaries; results against numpy, and the cases that must not be
grouped."""

from __future__ import annotations

import re

import numpy as np
import pytest

from llvmaccel import compiler
from llvmaccel.codegen import generate
from llvmaccel.graph import DType, Graph, Sym

RNG = np.random.default_rng(3)


@pytest.fixture(autouse=True)
def _cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("LLVMACCEL_CACHE_DIR", str(tmp_path / "cache"))


def _softmax(shape: tuple, axis: int = -1) -> Graph:
    g = Graph()
    x = g.input("x", shape, DType.f32)
    ax = axis % len(shape)
    m = g.reduce("max", x, (ax,), keepdim=True)
    e = g.unary("exp", g.binary("sub", x, m))
    s = g.reduce("sum", e, (ax,), keepdim=True)
    g.set_outputs([g.binary("div", e, s)])
    return g


def _np_softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:
    e = np.exp(x - x.max(axis, keepdims=True))
    return e / e.sum(axis, keepdims=True)


def _row_loops(ir: str) -> int:
    """Top-level loops: loop headers whose label has no enclosing node prefix
    (the row loop of a group is emitted outside any node's loop nest)."""
    return len(re.findall(r"^loop\d+:", ir, re.M))


@pytest.mark.parametrize("shape", [(7, 130), (3, 5, 257), (1, 64)])
def test_softmax_one_row_loop_and_row_temporaries(shape):
    """max, exp(x - max), sum and the division share one loop over the rows;
    the max, the exponentials and the sum are one-row temporaries."""
    g = _softmax(shape)
    kern = generate(g)
    assert _row_loops(kern.ir) == len(shape) - 1  # the row nest, nothing else outside
    rows = tuple(1 for _ in shape[:-1])
    assert sorted(t[0] for t in kern.temps) == sorted([rows + (1,), rows + (shape[-1],),
                                                       rows + (1,)])
    x = RNG.standard_normal(shape).astype(np.float32) * 4
    (y,) = compiler.compile_graph(g)(x)
    np.testing.assert_allclose(y, _np_softmax(x), rtol=1e-5, atol=1e-6)


def test_symbolic_rows_and_columns():
    g = _softmax((Sym("r"), Sym("c")))
    kern = generate(g, threads=False)  # one kernel (a parallel one repeats it per body)
    assert _row_loops(kern.ir) == 1
    c = compiler.compile_graph(g)
    for r, n in [(1, 1), (5, 3), (17, 1000), (0, 4)]:
        x = RNG.standard_normal((r, n)).astype(np.float32)
        (y,) = c(x)
        np.testing.assert_allclose(y, _np_softmax(x), rtol=1e-5, atol=1e-6)


def test_layer_norm_group():
    """mean, the centered squares' mean, rsqrt and the affine output in one
    row loop; the weight and bias are read at every row."""
    r, n = 9, 300
    g = Graph()
    x = g.input("x", (r, n), DType.f32)
    w = g.input("w", (n,), DType.f32)
    b = g.input("b", (n,), DType.f32)
    inv = g.scalar(1.0 / n, DType.f32)
    mean = g.binary("mul", g.reduce("sum", x, (1,), keepdim=True), inv)
    d = g.binary("sub", x, mean)
    var = g.binary("mul", g.reduce("sum", g.unary("square", d), (1,), keepdim=True), inv)
    rstd = g.unary("rsqrt", g.binary("add", var, g.scalar(1e-5, DType.f32)))
    g.set_outputs([g.binary("add", g.binary("mul", g.binary("mul", d, rstd), w), b)])
    kern = generate(g)
    assert _row_loops(kern.ir) == 1
    xs = RNG.standard_normal((r, n)).astype(np.float32) * 3 + 1
    ws, bs = RNG.standard_normal(n).astype(np.float32), RNG.standard_normal(n).astype(np.float32)
    (y,) = compiler.compile_graph(g)(xs, ws, bs)
    mu = xs.mean(1, keepdims=True)
    ref = (xs - mu) / np.sqrt(((xs - mu) ** 2).mean(1, keepdims=True) + 1e-5) * ws + bs
    np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-4)


def test_not_grouped_when_rows_are_mixed():
    """A stage that reads another row of an earlier member (through a
    permute) ends the group (the member it reads keeps a whole temporary);
    a softmax over the leading axis (rows-first reductions) is no group."""
    n = 64
    g = Graph()
    x = g.input("x", (n, n), DType.f32)
    m = g.reduce("max", x, (1,), keepdim=True)
    e = g.unary("exp", g.binary("sub", x, m))
    et = g.permute(e, (1, 0))  # row j of the next stage reads column j of e
    g.set_outputs([g.binary("add", et, g.reduce("sum", e, (1,), keepdim=True))])
    kern = generate(g)
    assert (n, n) in [t[0] for t in kern.temps]  # e is a whole temporary
    xs = RNG.standard_normal((n, n)).astype(np.float32)
    (y,) = compiler.compile_graph(g)(xs)
    ex = np.exp(xs - xs.max(1, keepdims=True))
    np.testing.assert_allclose(y, ex.T + ex.sum(1, keepdims=True), rtol=1e-5, atol=1e-5)
    # Softmax over the leading axis: not a row group (the reduction is rows-first).
    g = _softmax((40, 50), axis=0)
    assert _row_loops(generate(g).ir) == 0
    xs = RNG.standard_normal((40, 50)).astype(np.float32)
    (y,) = compiler.compile_graph(g)(xs)
    np.testing.assert_allclose(y, _np_softmax(xs, 0), rtol=1e-5, atol=1e-6)


def test_member_read_outside_keeps_full_buffer():
    """A member also read by a later loop nest outside the group (here a
    matmul) keeps its whole temporary; the group still shares the row loop."""
    g = Graph()
    x = g.input("x", (12, 40), DType.f32)
    v = g.input("v", (40, 8), DType.f32)
    m = g.reduce("max", x, (1,), keepdim=True)
    e = g.unary("exp", g.binary("sub", x, m))
    s = g.reduce("sum", e, (1,), keepdim=True)
    p = g.binary("div", e, s)
    g.set_outputs([g.matmul(p, v)])
    kern = generate(g)
    assert (12, 40) in [t[0] for t in kern.temps]
    xs = RNG.standard_normal((12, 40)).astype(np.float32)
    vs = RNG.standard_normal((40, 8)).astype(np.float32)
    (y,) = compiler.compile_graph(g)(xs, vs)
    np.testing.assert_allclose(y, _np_softmax(xs) @ vs, rtol=1e-4, atol=1e-5)
