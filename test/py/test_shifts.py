"""Bit shifts (PyTorch's << and >>, JAX's shift_left / shift_right_*),
including shift amounts of the width or more and negative ones, where LLVM's
own shifts are poison and the frameworks define the result."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402

import llvmaccel.jax as lj  # noqa: E402
import llvmaccel.torch as lt  # noqa: E402

VALUES = np.array([0, 1, -1, 5, -8, 2**30, -(2**31), 2**31 - 1, 123456], np.int32)
AMOUNTS = np.array([0, 1, 31, 32, 33, -1, 7, 64, 3], np.int32)


@pytest.fixture(autouse=True)
def _cache_dir(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("LLVMACCEL_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "cache"))


@pytest.mark.parametrize("f", [lambda a, b: a << b, lambda a, b: a >> b,
                               lambda a, b: torch.bitwise_left_shift(a, b) + 1,
                               lambda a, b: (a.long() >> b.long()) * 2],
                         ids=["lshift", "rshift", "bitwise_left_shift", "int64 rshift"])
def test_torch_shifts(f):
    a, b = torch.from_numpy(VALUES), torch.from_numpy(AMOUNTS)
    torch.testing.assert_close(torch.compile(f, backend="llvmaccel")(a, b), f(a, b))
    assert lt.explain(f, a, b).fully_compiled


@pytest.mark.parametrize("f", [jax.lax.shift_left, jax.lax.shift_right_logical,
                               jax.lax.shift_right_arithmetic,
                               lambda a, b: jnp.left_shift(a, 3) ^ (a >> 2)],
                         ids=["shift_left", "shift_right_logical", "shift_right_arithmetic",
                              "jnp"])
def test_jax_shifts(f):
    want = np.asarray(jax.jit(f)(VALUES, AMOUNTS))
    np.testing.assert_array_equal(np.asarray(lj.jit(f)(VALUES, AMOUNTS)), want)
