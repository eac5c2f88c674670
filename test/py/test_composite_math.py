"""Math written in the graph's own ops (llvmaccel.composite): hyperbolic and
inverse trigonometric functions, ``cbrt``, ``is_finite`` and XLA's
``reduce_precision``, through both frontends, against a float64 reference
(accuracy in ulp), against ``jax.jit`` (non-finite results; reduce_precision
bit for bit) and against eager PyTorch."""

from __future__ import annotations

import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402
from jax import lax  # noqa: E402

import llvmaccel.jax as lj  # noqa: E402

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(0)
VALUES = np.concatenate(
    [RNG.standard_normal(100) * s for s in (1e-6, 1e-2, 0.5, 3, 30, 1e3, 1e20)]
    + [np.array([0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 0.999999, 1.000001, 88.5,
                 -88.5, 710.0, 1e-40])])

FUNCS = {"sinh": (jnp.sinh, np.sinh), "cosh": (jnp.cosh, np.cosh), "tan": (jnp.tan, np.tan),
         "atan": (jnp.arctan, np.arctan), "asin": (jnp.arcsin, np.arcsin),
         "acos": (jnp.arccos, np.arccos), "asinh": (jnp.arcsinh, np.arcsinh),
         "acosh": (jnp.arccosh, np.arccosh), "atanh": (jnp.arctanh, np.arctanh),
         "cbrt": (jnp.cbrt, np.cbrt)}


@pytest.fixture(autouse=True)
def _x64():
    with jax.enable_x64(True):
        yield


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", sorted(FUNCS))
def test_composite_unary_accuracy(name, dtype):
    """Within 4 ulp of the float64 (float32: correctly rounded) reference
    where the result is finite, or as close as XLA's own; NaN and infinities
    where ``jax.jit`` has them."""
    fn, ref_fn = FUNCS[name]
    x = VALUES.astype(dtype)
    got = np.asarray(lj.jit(fn, fallback=False)(x))
    want = np.asarray(jax.jit(fn)(x))
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    inf = np.isinf(want)
    np.testing.assert_array_equal(got[inf], want[inf])
    with np.errstate(all="ignore"):
        ref = ref_fn(x.astype(np.float64))
        ok = np.isfinite(ref) & (np.abs(ref) < np.finfo(dtype).max) & np.isfinite(want)
        spacing = np.spacing(np.abs(ref[ok]).astype(dtype)).astype(np.float64)
        ours = np.abs(got[ok].astype(np.float64) - ref[ok]) / spacing
        xla = np.abs(want[ok].astype(np.float64) - ref[ok]) / spacing
    assert np.all(ours <= np.maximum(4.0, xla * 1.01)), float(np.max(ours - xla))


def test_is_finite_and_logsumexp():
    x = VALUES.astype(np.float32)
    np.testing.assert_array_equal(np.asarray(lj.jit(jnp.isfinite, fallback=False)(x)),
                                  np.isfinite(x))
    m = RNG.standard_normal((4, 7)).astype(np.float32)
    m[1, 2] = -np.inf
    fn = lambda m: jax.nn.logsumexp(m, axis=1)  # noqa: E731  (is_finite inside)
    np.testing.assert_allclose(np.asarray(lj.jit(fn, fallback=False)(m)),
                               np.asarray(jax.jit(fn)(m)), rtol=1e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(("exponent", "mantissa"),
                         [(5, 10), (8, 7), (4, 3), (2, 0), (8, 23), (11, 52)])
def test_reduce_precision_bit_for_bit(dtype, exponent, mantissa):
    """XLA's rounding (to nearest even, overflow to inf, flush below the
    smallest normal, NaN kept), bit for bit against ``jax.jit``; it was the
    identity before."""
    if dtype is np.float32 and (exponent > 8 or mantissa > 23):
        pytest.skip("wider than float32")
    x = np.concatenate([VALUES, [1.5, 2.5, 1.0009765625, 65504.0, 65520.0, 6e-8, 1e-5]])
    x = x.astype(dtype)
    fn = lambda x: lax.reduce_precision(x, exponent, mantissa)  # noqa: E731
    got = np.asarray(lj.jit(fn, fallback=False)(x))
    want = np.asarray(jax.jit(fn)(x))
    view = np.uint32 if dtype is np.float32 else np.uint64
    nan = np.isnan(want)
    np.testing.assert_array_equal(np.isnan(got), nan)
    np.testing.assert_array_equal(got[~nan].view(view), want[~nan].view(view))


@pytest.mark.parametrize("name", ["sinh", "cosh", "tan", "atan", "asin", "acos", "asinh",
                                  "acosh", "atanh"])
def test_torch_composite_unary_and_isfinite(name):
    x = torch.from_numpy(VALUES.astype(np.float32))
    fn = getattr(torch, name)
    torch._dynamo.reset()
    fast = torch.compile(lambda x: (fn(x), torch.isfinite(fn(x))), backend="llvmaccel",
                         options={"strict": True})
    with torch.no_grad():
        got, finite = fast(x)
    # The float64 result rounded: PyTorch's own vectorized float32 sinh and
    # cosh overflow near 89 (e^x / 2 computed as e^x first).
    want = fn(x.double()).float()
    torch.testing.assert_close(got, want, rtol=4e-6, atol=1e-30, equal_nan=True)
    assert torch.equal(finite, torch.isfinite(want))
    ints = torch.arange(-3, 4)  # promoted to float32, as eager does
    if name in ("sinh", "cosh", "tan", "atan", "asinh"):
        torch._dynamo.reset()
        got = torch.compile(fn, backend="llvmaccel", options={"strict": True})(ints)
        torch.testing.assert_close(got, fn(ints))
