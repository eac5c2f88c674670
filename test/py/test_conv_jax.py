"""JAX convolutions and windowed reductions through llvmaccel.jax.jit:
``conv_general_dilated`` in any layout (permuted to [N, C, *spatial]) with
asymmetric padding, strides, dilation and feature groups, and
``reduce_window`` max and sum (pooling), against jax.jit."""

from __future__ import annotations

import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402

import llvmaccel.jax as lj  # noqa: E402

RNG = np.random.default_rng(0)
X = RNG.standard_normal((2, 3, 12, 13), dtype=np.float32)
W = RNG.standard_normal((4, 3, 3, 3), dtype=np.float32)
XH = np.ascontiguousarray(np.transpose(X, (0, 2, 3, 1)))
WH = np.ascontiguousarray(np.transpose(W, (2, 3, 1, 0)))
X1 = RNG.standard_normal((2, 5, 40), dtype=np.float32)
W1 = RNG.standard_normal((3, 5, 7), dtype=np.float32)
WG = RNG.standard_normal((6, 1, 3, 3), dtype=np.float32)
conv = jax.lax.conv_general_dilated
window = jax.lax.reduce_window

CASES = {
    "nchw_same": (lambda x, w: conv(x, w, (1, 1), "SAME"), (X, W)),
    "asymmetric_padding_stride_dilation": (
        lambda x, w: conv(x, w, (2, 1), ((1, 2), (0, 3)), rhs_dilation=(1, 2)), (X, W)),
    "nhwc_hwio": (lambda x, w: conv(x, w, (1, 1), "SAME",
                                    dimension_numbers=("NHWC", "HWIO", "NHWC")), (XH, WH)),
    "depthwise": (lambda x, w: conv(x, w, (1, 1), "SAME", feature_group_count=3), (X, WG)),
    "conv1d": (lambda x, w: conv(x, w, (1,), "SAME"), (X1, W1)),
    "valid": (lambda x, w: conv(x, w, (1, 1), "VALID"), (X, W)),
    "max_pool_nhwc": (lambda x: window(x, -jnp.inf, jax.lax.max, (1, 3, 3, 1), (1, 2, 2, 1),
                                       "SAME"), (XH,)),
    "sum_pool_nchw": (lambda x: window(x, 0.0, jax.lax.add, (1, 1, 3, 3), (1, 1, 2, 2),
                                       ((0, 0), (0, 0), (1, 1), (1, 1))), (X,)),
    "avg_pool": (lambda x: window(x, 0.0, jax.lax.add, (1, 2, 2, 1), (1, 2, 2, 1),
                                  "VALID") / 4.0, (XH,)),
    "max_pool_dilated": (lambda x: window(x, -jnp.inf, jax.lax.max, (1, 1, 3, 3), (1, 1, 1, 1),
                                          "SAME", window_dilation=(1, 1, 2, 1)), (X,)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_jax_jit(name):
    fn, args = CASES[name]
    want = np.asarray(jax.jit(fn)(*args))
    got = np.asarray(lj.jit(fn)(*args))
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


WT = RNG.standard_normal((3, 4, 3, 3), dtype=np.float32)
TRANSPOSED = {
    "lhs_dilation": (lambda x, w: conv(x, w, (1, 1), ((1, 1), (1, 1)), lhs_dilation=(2, 2)),
                     (X, W)),
    "lhs_dilation_negative_padding": (
        lambda x, w: conv(x, w, (1, 2), ((-1, 2), (0, -1)), lhs_dilation=(3, 2)), (X, W)),
    "conv_transpose_same": (
        lambda x, w: jax.lax.conv_transpose(x, w, (2, 2), "SAME",
                                            dimension_numbers=("NCHW", "OIHW", "NCHW")),
        (X, W)),
    "conv_transpose_kernel_flipped": (
        lambda x, w: jax.lax.conv_transpose(x, w, (2, 1), ((1, 2), (0, 1)),
                                            rhs_dilation=(1, 2), transpose_kernel=True,
                                            dimension_numbers=("NCHW", "OIHW", "NCHW")),
        (X, WT)),
    "rev": (lambda x: jax.lax.rev(x, (1, 3)) + jnp.flip(x, 2), (X,)),
}


@pytest.mark.parametrize("name", sorted(TRANSPOSED))
def test_transposed_convolution_and_rev_match_jax_jit(name):
    """``lhs_dilation`` (``lax.conv_transpose``, negative padding: cropped)
    and ``rev`` compile (no fallback) and match ``jax.jit``."""
    fn, args = TRANSPOSED[name]
    want = np.asarray(jax.jit(fn)(*args))
    got = np.asarray(lj.jit(fn, fallback=False)(*args))
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
