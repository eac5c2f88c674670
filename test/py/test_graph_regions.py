"""Graph regions (Graph.scan, Graph.while_loop, Graph.switch) built directly:
results, validation, fingerprints, index checks inside a loop body."""

from __future__ import annotations

import numpy as np
import pytest

from llvmaccel.compiler import compile_graph
from llvmaccel.graph import DType, Graph, GraphError


@pytest.fixture(autouse=True)
def _cache_dir(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("LLVMACCEL_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "cache"))


def _branch(fn) -> Graph:
    b = Graph()
    x = b.input("x", (3,), DType.f32)
    b.set_outputs([fn(b, x)])
    return b


def test_switch_out_of_range_takes_the_last_branch():
    g = Graph()
    i = g.input("i", (), DType.i32)
    x = g.input("x", (3,), DType.f32)
    branches = [_branch(lambda b, x: b.binary("add", x, b.scalar(1.0, DType.f32))),
                _branch(lambda b, x: b.binary("mul", x, b.constant(np.array([2, 3, 4]),
                                                                    DType.f32)))]
    (out,) = g.switch(i, branches, [x])
    g.set_outputs([out])
    fn = compile_graph(g)
    xv = np.array([1.0, 2.0, 3.0], np.float32)
    np.testing.assert_array_equal(fn(np.int32(0), xv)[0], xv + 1)
    for k in (1, 2, 99, -1):  # XLA's conditional: out of range is the last branch
        np.testing.assert_array_equal(fn(np.int32(k), xv)[0], xv * [2, 3, 4])


def test_region_signature_is_checked():
    g = Graph()
    x = g.input("x", (3,), DType.f32)
    body = Graph()
    c = body.input("c", (4,), DType.f32)
    body.set_outputs([c])
    with pytest.raises(GraphError, match="scan"):
        g.scan(body, [], [x], [], 5)
    cond = Graph()
    cond.set_outputs([cond.scalar(1, DType.i32)])
    with pytest.raises(GraphError, match="while_loop cond"):
        g.while_loop(cond, _branch(lambda b, x: x), [], [], [x])
    with pytest.raises(GraphError, match="xs of shape"):
        g.scan(_branch(lambda b, x: x), [], [], [g.input("xs", (4, 3), DType.f32)], 5)


def test_fingerprint_covers_the_body():
    def graph(scale: float) -> Graph:
        g = Graph()
        x = g.input("x", (3,), DType.f32)
        body = _branch(lambda b, c: b.binary("mul", c, b.scalar(scale, DType.f32)))
        g.set_outputs(g.scan(body, [], [x], [], 4))
        return g
    assert graph(2.0).fingerprint() != graph(3.0).fingerprint()
    assert graph(2.0).fingerprint() == graph(2.0).fingerprint()
    np.testing.assert_allclose(compile_graph(graph(2.0))(np.ones(3, np.float32))[0], 16.0)


def test_index_check_inside_a_loop_body_raises():
    # A take in "check" mode inside a scan: each iteration's index is checked.
    g = Graph()
    table = g.input("t", (5,), DType.f32)
    idx = g.input("idx", (4, 1), DType.i64)
    body = Graph()
    tb = body.input("t", (5,), DType.f32)
    acc = body.input("acc", (1,), DType.f32)
    i = body.input("i", (1,), DType.i64)
    body.set_outputs([body.binary("add", acc, body.take(tb, i, 0))])
    (out,) = g.scan(body, [table], [g.constant(np.zeros(1), DType.f32)], [idx], 4)
    g.set_outputs([out])
    fn = compile_graph(g)
    t = np.arange(5, dtype=np.float32)
    np.testing.assert_array_equal(fn(t, np.array([[0], [1], [4], [4]]))[0], [9.0])
    with pytest.raises(IndexError):
        fn(t, np.array([[0], [1], [5], [4]]))
