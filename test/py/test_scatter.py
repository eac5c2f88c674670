"""The scatter family (torch scatter/scatter_add/scatter_reduce, index_put,
index_add, index_copy, setitem with index tensors; JAX .at[].set/add/mul/
max/min) lowered to one scatter loop nest, against eager and jax.jit."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import llvmaccel.torch as lt


def _run(fn, *args):
    torch._dynamo.reset()
    with torch.no_grad():
        report = lt.explain(fn, *args)
        assert report.fallbacks == [], str(report)
        torch._dynamo.reset()
        return torch.compile(fn, backend="llvmaccel", options={"strict": True})(*args)


X = torch.randn(6, 5)
IDX = torch.tensor([0, 2, 2, 5, -1])
SRC = torch.randn(5, 5)


@pytest.mark.parametrize("name", [
    "index_add", "index_put", "index_put_acc", "setitem", "setitem_cols", "index_copy",
    "scatter_src", "scatter_value", "scatter_add", "scatter_partial", "amax", "amin", "prod",
    "sum", "two_index_tensors", "broadcast_values",
])
def test_torch_scatter_family(name):
    col = torch.tensor([[0, 1, 2, 3, 4], [4, 3, 2, 1, 0], [1, 1, 1, 1, 1], [5, 0, 5, 0, 5]])
    pos = IDX.clamp(min=0)
    fns = {
        "index_add": lambda x, i, s: x.index_add(0, i.clamp(min=0), s, alpha=2.0),
        "index_put": lambda x, i, s: x.index_put((torch.tensor([1, 3, 4, 0, 5]),), s),
        "index_put_acc": lambda x, i, s: x.index_put((i,), s, accumulate=True),
        "setitem": lambda x, i, s: _setitem(x, (torch.tensor([4, 1]),), s[:2]),
        "setitem_cols": lambda x, i, s: _setitem(x, (slice(None), torch.tensor([0, 3])),
                                                 s[:6 - 1, :2].sum() * 0 + 7.0),
        "index_copy": lambda x, i, s: x.index_copy(0, torch.tensor([5, 0, 1, 3, 2]), s),
        "scatter_src": lambda x, i, s: x.scatter(0, col, s),
        "scatter_value": lambda x, i, s: x.scatter(1, col[:, :3].clamp(max=4), 3.5),
        "scatter_add": lambda x, i, s: x.scatter_add(0, col, s),
        "scatter_partial": lambda x, i, s: x.scatter_add(1, col[:3, :2].clamp(max=4), s),
        "amax": lambda x, i, s: x.scatter_reduce(0, col, s, "amax"),
        "amin": lambda x, i, s: x.scatter_reduce(0, col, s, "amin"),
        "prod": lambda x, i, s: x.scatter_reduce(0, col, s, "prod"),
        "sum": lambda x, i, s: x.scatter_reduce(0, col, s, "sum"),
        "two_index_tensors": lambda x, i, s: x.index_put((pos, torch.tensor([0, 1, 1, 4, 2])),
                                                         s[0], accumulate=True),
        "broadcast_values": lambda x, i, s: x.index_put((i,), s[0]),
    }
    fn = fns[name]
    want = fn(X, IDX, SRC)
    got = _run(fn, X, IDX, SRC)
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)


def _setitem(x, key, value):
    y = x.clone()
    y[key] = value
    return y


def test_integer_scatter_add_is_exact():
    x = torch.zeros(10, dtype=torch.int64)
    i = torch.tensor([1, 1, 9, 0, 1])
    v = torch.tensor([3, 4, 5, -6, 2**40])
    fn = lambda x, i, v: x.index_put((i,), v, accumulate=True)  # noqa: E731
    assert torch.equal(_run(fn, x, i, v), fn(x, i, v))


def test_out_of_range_index_is_an_error():
    fn = lambda x, i, s: x.index_put((i,), s)  # noqa: E731
    torch._dynamo.reset()
    compiled = torch.compile(fn, backend="llvmaccel", options={"strict": True})
    with torch.no_grad():
        compiled(X, IDX, SRC)  # compiles
        with pytest.raises(IndexError, match="index out of range in index_put"):
            compiled(X, torch.tensor([0, 1, 6, 2, 3]), SRC)
        with pytest.raises(IndexError):
            compiled(X, torch.tensor([0, 1, -7, 2, 3]), SRC)


def test_scatter_gradient_through_index_add():
    """index_add's backward is an index_select; the forward's scatter compiles."""
    x = torch.randn(6, 3, requires_grad=True)
    s = torch.randn(4, 3, requires_grad=True)
    i = torch.tensor([0, 5, 5, 2])

    def fn(x, s):
        return (x.index_add(0, i, s) ** 2).sum()

    torch._dynamo.reset()
    compiled = torch.compile(fn, backend="llvmaccel")
    out = compiled(x, s)
    gx, gs = torch.autograd.grad(out, (x, s))
    ex, es = torch.autograd.grad(fn(x, s), (x, s))
    torch.testing.assert_close(gx, ex)
    torch.testing.assert_close(gs, es)


jax = pytest.importorskip("jax")


@pytest.mark.parametrize("op", ["set", "add", "mul", "max", "min", "set_rows", "add_2d",
                                "drop", "negative"])
def test_jax_scatter(op):
    import jax.numpy as jnp

    import llvmaccel.jax as lj

    x = np.arange(24, dtype=np.float32).reshape(6, 4) / 7
    i = np.array([0, 2, 2, 5], dtype=np.int32)
    v = np.linspace(-1, 1, 16, dtype=np.float32).reshape(4, 4)
    fns = {
        "set": lambda x, i, v: x.at[i, 1].set(v[:, 0]),
        "add": lambda x, i, v: x.at[i].add(v),
        "mul": lambda x, i, v: x.at[i].multiply(v),
        "max": lambda x, i, v: x.at[i].max(v),
        "min": lambda x, i, v: x.at[i, :2].min(v[:, :2]),
        "set_rows": lambda x, i, v: x.at[jnp.array([5, 0, 1, 3])].set(v),
        "add_2d": lambda x, i, v: x.at[i, jnp.array([3, 0, 0, 1])].add(v[:, 0]),
        "drop": lambda x, i, v: x.at[i + 3].add(v),  # 5+3 and others out of range: dropped
        "negative": lambda x, i, v: x.at[-i - 1].set(v),
    }
    fn = fns[op]
    want = jax.jit(fn)(x, i, v)
    got = lj.jit(fn, fallback=False)(x, i, v)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6)


@pytest.mark.parametrize("op", ["clip", "window_start", "columns", "rank3", "window_drop",
                                "window_clip", "int_add"])
def test_jax_scatter_windows_and_modes(op):
    """Scatters whose indexed dims also carry a window offset, CLIP mode, and
    windows that do not fit (skipped whole, or clamped whole, as XLA does)."""
    import jax.numpy as jnp
    from jax import lax

    import llvmaccel.jax as lj

    x = np.arange(24, dtype=np.float32).reshape(6, 4) / 7
    i = np.array([0, 2, 7, 5], dtype=np.int32)
    v = np.linspace(-1, 1, 16, dtype=np.float32).reshape(4, 4)
    dn = lax.ScatterDimensionNumbers(update_window_dims=(1,), inserted_window_dims=(0,),
                                     scatter_dims_to_operand_dims=(0, 1))
    starts = np.array([[0, 0], [1, 2], [3, 3], [5, 1]], dtype=np.int32)  # [3,3]: 3+2 > 4
    fns = {
        "clip": lambda x, i, v: x.at[i].set(v, mode="clip"),
        "window_start": lambda x, i, v: x.at[i, 1:3].add(v[:, :2]),
        "columns": lambda x, i, v: x.at[:, i % 4].add(v[0]),
        "rank3": lambda x, i, v: x.reshape(2, 3, 4).at[i % 2, :, i % 4].max(v[:, :3]),
        "window_drop": lambda x, i, v: lax.scatter_add(x, jnp.asarray(starts), v[:, :2], dn),
        "window_clip": lambda x, i, v: lax.scatter_add(x, jnp.asarray(starts), v[:, :2], dn,
                                                       mode="clip"),
        "int_add": lambda x, i, v: (x * 7).astype(np.int32).at[i].add(3),
    }
    fn = fns[op]
    want = jax.jit(fn)(x, i, v)
    got = lj.jit(fn, fallback=False)(x, i, v)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


@pytest.mark.parametrize("name", ["scatter", "scatter_add", "index_add", "index_copy",
                                  "index_add_vector"])
def test_out_of_range_error_kinds_match_eager(name):
    """The compiled graph raises what eager raises (KernelIndexError is both
    an IndexError and a RuntimeError: eager raises either, by op and rank)."""
    x = torch.zeros(4, 3)
    fns = {
        "scatter": lambda x, i: x.scatter(0, i.view(-1, 1).expand(-1, 3), 1.0),
        "scatter_add": lambda x, i: x.scatter_add(0, i.view(-1, 1).expand(-1, 3),
                                                  torch.ones(2, 3)),
        "index_add": lambda x, i: x.index_add(0, i, torch.ones(2, 3)),
        "index_copy": lambda x, i: x.index_copy(0, i, torch.ones(2, 3)),
        "index_add_vector": lambda x, i: x[:, 0].index_add(0, i, torch.ones(2)),
    }
    fn = fns[name]
    torch._dynamo.reset()
    compiled = torch.compile(fn, backend="llvmaccel", options={"strict": True})
    with torch.no_grad():
        torch.testing.assert_close(compiled(x, torch.tensor([1, 3])), fn(x, torch.tensor([1, 3])))
        bad = torch.tensor([0, 4])
        with pytest.raises((IndexError, RuntimeError)) as eager:
            fn(x, bad)
        with pytest.raises(eager.type):
            compiled(x, bad)
