"""llvmaccel.jax.jit: lax.scan, fori_loop, while_loop, cond and switch as real
loops and branches, against jax.jit."""

from __future__ import annotations

import re

import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402
from jax import lax  # noqa: E402

import llvmaccel.jax as lj  # noqa: E402


@pytest.fixture(autouse=True)
def _cache_dir(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("LLVMACCEL_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "cache"))


RNG = np.random.default_rng(3)


def _r(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


def _check(fn, *args, rtol=2e-5, atol=2e-5, **kw):
    got = lj.jit(fn, **kw)(*args)
    want = jax.jit(fn)(*args)
    jax.tree_util.tree_map(
        lambda a, b: np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=rtol,
                                                atol=atol), got, want)
    return got


def _ir(fn, *args, **kw):
    compiled = lj.jit(fn, **kw).compiled_for(*args)
    assert compiled is not None
    return compiled.kernel.ir


def rnn(h0, xs, w, u, b):
    def cell(h, x):
        h = jnp.tanh(x @ w + h @ u + b)
        return h, h.sum(-1)
    return lax.scan(cell, h0, xs)


RNN_ARGS = (_r(4, 16), _r(12, 4, 8), _r(8, 16) * 0.3, _r(16, 16) * 0.3, _r(16))


def test_scan_rnn_cell_is_one_loop_not_unrolled():
    _check(rnn, *RNN_ARGS, rtol=1e-4, atol=1e-5)
    h0, xs, *params = RNN_ARGS
    ir12, ir3 = _ir(rnn, h0, xs, *params), _ir(rnn, h0, xs[:3], *params)
    # One body inside a loop over the steps: 12 steps emit what 3 steps do.
    assert ir12.count("tanh") == ir3.count("tanh")
    assert len(ir12.splitlines()) == len(ir3.splitlines())
    assert "icmp slt i64 %t" in ir12


def test_scan_reverse_and_stacked_outputs():
    def f(xs, c0):
        def body(c, x):
            c = c * 0.5 + x
            return c, (c, x * 2.0)
        return lax.scan(body, c0, xs, reverse=True)
    _check(f, _r(7, 3), _r(3))


def test_scan_length_without_xs_and_unroll():
    def f(c):
        return lax.scan(lambda c, _: (c * 1.5 + 1.0, c), c, None, length=6, unroll=2)
    _check(f, _r(2, 2))


def test_scan_zero_length():
    def f(c, xs):
        return lax.scan(lambda c, x: (c + x, c * x), c, xs)
    got = _check(f, _r(3), np.zeros((0, 3), np.float32))
    assert np.asarray(got[1]).shape == (0, 3)


def test_scan_carry_passed_through_and_swapped():
    def f(a, b, xs):
        def body(c, x):
            p, q, k = c
            return (q, p + x, k), p
        return lax.scan(body, (a, b, jnp.int32(3)), xs)
    _check(f, _r(4), _r(4), _r(5, 4))


def test_fori_loop_static_bounds_decode_loop():
    # A decode-style loop: a state updated from a table, one token a step.
    def decode(h, emb, w):
        def step(i, c):
            h, toks = c
            logits = h @ w
            tok = jnp.argmax(logits).astype(jnp.int32)
            h = jnp.tanh(h + emb[tok])
            return h, toks.at[i].set(tok)
        return lax.fori_loop(0, 10, step, (h, jnp.zeros(10, jnp.int32)))
    args = (_r(16), _r(32, 16), _r(16, 32))
    _check(decode, *args, rtol=1e-4, atol=1e-5)


def test_loop_body_matmul_takes_the_top_level_kernel():
    """A decode step's ``h @ W`` in a fori_loop body is emitted as the same
    ``h @ W`` at top level is: the streaming kernel of few-row products
    (B read row after row, the k loop ``%srow``), not the register tile
    reading B a few cache lines per row; and no buffer of W is made."""
    h, w = _r(512), _r(512, 512) * 0.05

    def loop(h, w):
        return lax.fori_loop(0, 6, lambda i, h: jnp.tanh(h @ w), h)

    top, body = _ir(lambda h, w: h @ w, h, w), _ir(loop, h, w)
    assert "%srow" in top and "%srow" in body
    assert "%pk" not in top and "%pk" not in body
    kernel = lj.jit(loop).compiled_for(h, w).kernel
    assert [tuple(s) for s, _ in kernel.temps if len(s) == 2] == [(1, 512)]  # h @ W, no W
    _check(loop, h, w, rtol=1e-4, atol=1e-5)


def test_jit_outputs_are_jax_arrays_without_a_copy(monkeypatch):
    """The kernel's outputs become jax.Arrays on the CPU holding the buffers
    the kernel wrote (aligned for XLA's CPU client: no copy), read-only,
    each call's its own; a value returned twice is one buffer."""
    from llvmaccel import compiler

    made = []

    def recorded(shape, dtype):
        out = aligned(shape, dtype)
        made.append(out.ctypes.data)
        return out

    aligned = compiler.aligned_empty
    monkeypatch.setattr(compiler, "aligned_empty", recorded)
    f = lj.jit(lambda x: (x * 2.0, jnp.sum(x), x * 2.0))
    x = _r(300, 7)
    a, s, b = f(x)
    a2, _, _ = f(x)  # the second call runs through the plan of the first
    for y in (a, s, b, a2):
        assert isinstance(y, jax.Array) and y.devices() == {jax.devices("cpu")[0]}
        assert y.unsafe_buffer_pointer() in made  # the kernel's buffer itself
        assert not np.asarray(y).flags.writeable
    assert a.unsafe_buffer_pointer() != a2.unsafe_buffer_pointer()
    np.testing.assert_array_equal(np.asarray(a), x * 2.0)
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    # Each output of a call through a numpy plan is aligned too.
    k = f.compiled_for(x)
    for _ in range(2):
        assert all(o.ctypes.data % compiler.OUTPUT_ALIGNMENT == 0 for o in k(x))


def test_fori_loop_dynamic_bounds():
    def f(n, x):
        return lax.fori_loop(0, n, lambda i, c: c * 1.1 + i.astype(jnp.float32), x)
    x = _r(5)
    for n in (0, 1, 7):
        _check(f, np.int32(n), x)


def test_while_loop_data_dependent_exit():
    def f(x):
        def cond(c):
            v, k = c
            return (jnp.abs(v).sum() < 100.0) & (k < 1000)
        def body(c):
            v, k = c
            return v * 1.7 + 0.1, k + 1
        return lax.while_loop(cond, body, (x, jnp.int32(0)))
    for scale in (0.01, 1.0, 1000.0):  # many steps, a few, none
        _check(f, _r(6) * scale, rtol=1e-4)
    ir = _ir(f, _r(6))
    # The condition is evaluated in the loop header; one exit branch.
    assert re.search(r"^n\d+\.while\d+:", ir, re.M)
    assert re.search(r"br i1 %\S+, label %n\d+\.do\d+, label %n\d+\.wend\d+", ir)


def test_nested_loops():
    def f(x):
        def outer(c, xi):
            def inner(j, d):
                return d * 0.9 + xi * j.astype(jnp.float32)
            c = lax.fori_loop(0, 4, inner, c)
            c = lax.while_loop(lambda d: d.sum() > 10.0, lambda d: d * 0.5, c)
            return c, c.max()
        return lax.scan(outer, jnp.zeros(3, jnp.float32), x)
    _check(f, _r(5, 3), rtol=1e-4, atol=1e-5)


def test_cond_inside_scan():
    def f(xs):
        def body(c, x):
            c = lax.cond(x.sum() > 0, lambda c: c + x, lambda c: c * x, c)
            return c, c.sum()
        return lax.scan(body, jnp.ones(4, jnp.float32), xs)
    _check(f, _r(9, 4), rtol=1e-4)


def test_cond_branches_are_real_branches():
    def f(p, x):
        return lax.cond(p, lambda x: jnp.sin(x) @ x.T, lambda x: x @ x.T, x)
    for p in (True, False):
        _check(f, np.bool_(p), _r(3, 5), rtol=1e-4)
    assert "switch i64" in _ir(f, np.bool_(True), _r(3, 5))


def test_switch_index_out_of_range_is_clamped():
    branches = [lambda x: x + 1.0, lambda x: x * 3.0, lambda x: jnp.exp(x)]

    def f(i, x):
        return lax.switch(i, branches, x)
    x = _r(4)
    for i in (-5, 0, 1, 2, 3, 100):
        _check(f, np.int32(i), x)


def test_switch_branch_returning_an_operand():
    def f(i, x, y):
        return lax.switch(i, [lambda x, y: (x, y), lambda x, y: (y, x + y)], x, y)
    for i in (0, 1):
        _check(f, np.int32(i), _r(3), _r(3))


def test_scan_symbolic_length_and_batch():
    def f(h, xs):
        return lax.scan(lambda c, x: (jnp.tanh(c + x), c.sum(-1)), h, xs)
    fn = lj.jit(f, polymorphic_shapes=["b, 8", "t, b, 8"])
    for b, t in ((2, 3), (5, 1), (3, 9)):
        h, xs = _r(b, 8), _r(t, b, 8)
        got = fn(h, xs)
        want = jax.jit(f)(h, xs)
        for a, w in zip(got, want, strict=True):
            np.testing.assert_allclose(np.asarray(a), np.asarray(w), rtol=1e-5, atol=1e-6)


def test_grad_over_llvmaccel_jit_of_scan():
    def loss(w, xs):
        def body(h, x):
            h = jnp.tanh(h @ w + x)
            return h, (h * h).sum()
        h, ys = lax.scan(body, jnp.zeros(4, jnp.float32), xs)
        return ys.sum() + h.sum()
    w, xs = _r(4, 4) * 0.5, _r(6, 4)
    got = jax.grad(lj.jit(loss))(w, xs)
    want = jax.grad(loss)(w, xs)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-4, atol=1e-5)


def test_vmap_over_llvmaccel_jit_of_while_and_scan():
    # Batched, a while loop runs until every lane is done (reduce_or of the
    # predicates) and selects per lane; the scan's body is batched.
    def f(x):
        v, k = lax.while_loop(lambda c: c[0].sum() < 50.0, lambda c: (c[0] * 1.5 + 0.2, c[1] + 1),
                              (x, jnp.int32(0)))
        return v, k, lax.scan(lambda c, y: (c + y, c * y), x[0], x)[1]
    xs = np.abs(_r(5, 4)) * np.array([[0.01], [0.1], [1.0], [10.0], [100.0]], np.float32)
    got = jax.vmap(lj.jit(f))(xs)
    want = jax.vmap(f)(xs)
    for a, b in zip(got, want, strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-6)


def test_fori_loop_body_with_a_constant_table():
    table = np.linspace(-1.0, 1.0, 24, dtype=np.float32).reshape(4, 6)

    def f(x):  # the table is a constant of the body: lifted into an operand
        return lax.fori_loop(0, 4, lambda i, c: c + jnp.asarray(table)[i] * c.sum(), x)
    _check(f, _r(6), rtol=1e-4)
    compiled = lj.jit(f).compiled_for(_r(6))
    assert len(compiled.kernel.constants) == 1


def test_readme_rnn_example():
    @lj.jit
    def rnn(h0, xs, w, u, b):
        return jax.lax.scan(lambda h, x: (jnp.tanh(x @ w + h @ u + b),) * 2, h0, xs)
    got = rnn(*RNN_ARGS)
    want = jax.jit(rnn.fun)(*RNN_ARGS)
    for a, b in zip(got, want, strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-4, atol=1e-5)


def test_loops_and_sorts_inside_branches():
    def f(p, x):
        def looped(x):
            return lax.scan(lambda c, y: (c + jnp.sort(y), c.max()), x[0], x)[0]

        def sorted_(x):
            return jnp.sort(x, axis=0)[0] * 2.0
        return lax.cond(p, looped, sorted_, x)
    x = _r(5, 6)
    for p in (True, False):
        _check(f, np.bool_(p), x)


def test_platform_dependent_takes_the_cpu_branch_inlined():
    """``lax.platform_dependent`` (inside ``jnp.diag``): ``platform_index``
    is the CPU's branch, known when tracing, and the ``cond`` it feeds is
    that branch inlined (no switch left in the graph)."""
    x = np.arange(20, dtype=np.float32).reshape(4, 5)

    def fn(x):
        picked = jax.lax.platform_dependent(x, cpu=lambda x: x * 2, default=lambda x: x * 3)
        return jnp.diag(x), jnp.trace(x), jnp.diag(x, 1), picked

    f = lj.jit(fn, fallback=False)
    for got, want in zip(f(x), jax.jit(fn)(x), strict=True):
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    assert not any(n.op == "switch" for n in f.compiled_for(x).graph.nodes)
