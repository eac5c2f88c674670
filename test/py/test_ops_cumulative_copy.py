"""Cumulative ops (cumsum, cumprod, cummax, cummin) through both frontends,
and PyTorch's aten.copy (a functionalized copy_),
against eager PyTorch and jax.jit."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402

import llvmaccel.jax as lj  # noqa: E402
import llvmaccel.torch as lt  # noqa: E402
from llvmaccel.graph import DType, Graph, GraphError  # noqa: E402

RNG = np.random.default_rng(4)


@pytest.fixture(autouse=True)
def _cache_dir(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("LLVMACCEL_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "cache"))


TORCH_CASES = [
    ("cumsum dim 1", lambda x: torch.cumsum(x, 1)),
    ("cumsum last dim, fused producer", lambda x: torch.cumsum(x * 2.0 + 1.0, -1)),
    ("cumprod", lambda x: torch.cumprod(x * 0.5 + 1.0, 0)),
    ("int32 cumsum promotes to int64", lambda x: torch.cumsum((x * 10).to(torch.int32), 2)),
    ("cumsum with dtype", lambda x: torch.cumsum(x, 1, dtype=torch.float64)),
]


@pytest.mark.parametrize("name,f", TORCH_CASES, ids=[c[0] for c in TORCH_CASES])
def test_torch_cumulative(name, f):
    x = torch.from_numpy(RNG.standard_normal((4, 6, 5)).astype(np.float32))
    want = f(x)
    got = torch.compile(f, backend="llvmaccel")(x)
    assert got.dtype == want.dtype
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
    assert lt.explain(f, x).fully_compiled


def test_torch_cumsum_of_a_long_row_keeps_precision_and_empty_axes():
    x = torch.full((1, 100_000), 0.1)
    got = torch.compile(lambda x: x.cumsum(1), backend="llvmaccel")(x)
    torch.testing.assert_close(got, x.cumsum(1), rtol=1e-6, atol=0)  # double accumulator
    e = torch.zeros(3, 0)
    assert torch.compile(lambda x: x.cumsum(1), backend="llvmaccel")(e).shape == (3, 0)


JAX_CASES = [
    ("cumsum", lambda x: jnp.cumsum(x, 1)),
    ("cumprod", lambda x: jnp.cumprod(x * 0.5 + 1.0, 0)),
    ("cummax reverse", lambda x: jax.lax.cummax(x, 2, reverse=True)),
    ("cummin", lambda x: jax.lax.cummin(x, 1)),
    ("cumsum int", lambda x: jnp.cumsum((x * 10).astype(jnp.int32), 0)),
]


@pytest.mark.parametrize("name,f", JAX_CASES, ids=[c[0] for c in JAX_CASES])
def test_jax_cumulative(name, f):
    x = RNG.standard_normal((4, 6, 5)).astype(np.float32)
    want = jax.jit(f)(x)
    got = lj.jit(f)(x)
    assert got.dtype == want.dtype
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5, atol=1e-5)


def test_graph_rejects_bad_cumulative():
    g = Graph()
    x = g.input("x", (3,), DType.f32)
    with pytest.raises(GraphError, match="unknown function"):
        g.cumulative("mean", x, 0)
    with pytest.raises(GraphError, match="out of range"):
        g.cumulative("sum", x, 1)
    with pytest.raises(GraphError, match="not supported"):
        g.cumulative("sum", g.input("b", (3,), DType.bool), 0)


def test_torch_copy_into_a_tensor():
    # Functionalized `z.copy_(y)`: aten.copy, y cast and broadcast into z.
    def f(x, y):
        z = x.clone()
        z.copy_(y)
        return z * 2

    x = torch.randn(4, 3)
    y = torch.arange(3, dtype=torch.int32)
    torch.testing.assert_close(torch.compile(f, backend="llvmaccel")(x, y), f(x, y))
    assert lt.explain(f, x, y).fully_compiled


@pytest.mark.parametrize("reverse", [False, True])
def test_logcumsumexp_torch_and_jax(reverse):
    """``torch.logcumsumexp`` and ``lax.cumlogsumexp``: a running
    ``max + log1p(exp(min - max))`` (no overflow at 30-sigma values), -inf
    until the first finite element, +inf and NaN carried on."""
    x = np.random.default_rng(0).standard_normal((3, 9)).astype(np.float32) * 30
    x[0, 0] = x[0, 2] = -np.inf
    x[1, 4] = np.inf
    x[2, 5] = np.nan
    fn = lambda x: jax.lax.cumlogsumexp(x, axis=1, reverse=reverse)  # noqa: E731
    np.testing.assert_allclose(np.asarray(lj.jit(fn, fallback=False)(x)),
                               np.asarray(jax.jit(fn)(x)), rtol=1e-6)
    t = torch.from_numpy(x).flip(1) if reverse else torch.from_numpy(x)
    tf = lambda t: torch.logcumsumexp(t, 1)  # noqa: E731
    torch._dynamo.reset()
    got = torch.compile(tf, backend="llvmaccel", options={"strict": True})(t)
    torch.testing.assert_close(got, tf(t), rtol=1e-6, atol=0, equal_nan=True)
