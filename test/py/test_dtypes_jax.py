"""The narrow dtypes through llvmaccel.jax.jit, against jax.jit: bfloat16
and float16, int8/uint8/int16/uint16/uint32/uint64 with XLA's wrap-around and
saturating conversions, JAX's promotion lattice, and PRNG draws (threefry is
uint32 arithmetic) identical to jax.jit's bits."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402

import llvmaccel.jax as lj  # noqa: E402
from llvmaccel.graph import DType, promote  # noqa: E402


@pytest.fixture(autouse=True)
def _strict(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("LLVMACCEL_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "cache"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a fallback to jax.jit warns: fail
        yield


def _jit(f):
    return lj.jit(f, fallback=False)


def _same(got, expected, exact=False, rtol=None):
    for g, e in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(expected),
                    strict=True):
        g, e = np.atleast_1d(np.asarray(g)), np.atleast_1d(np.asarray(e))
        assert g.dtype == e.dtype, (g.dtype, e.dtype)
        floating = e.dtype.name == "bfloat16" or np.issubdtype(e.dtype, np.inexact)
        if exact or not floating:
            np.testing.assert_array_equal(g.view(np.uint8), e.view(np.uint8))
        else:
            tol = rtol or {"bfloat16": 1.6e-2, "float16": 1e-3}.get(e.dtype.name, 1.3e-6)
            np.testing.assert_allclose(g.astype(np.float32), e.astype(np.float32),
                                       rtol=tol, atol=1e-5)


# ---------------------------------------------------------------------------
# PRNG
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("make_key", [jax.random.PRNGKey, jax.random.key],
                         ids=["PRNGKey", "key"])
def test_prng_bits_identical_to_jax_jit(make_key):
    def f(seed):
        key = make_key(seed)
        k1, k2 = jax.random.split(key)
        ks = jax.random.split(k1, 3)
        return (jax.random.bits(k1, (7,)), jax.random.bits(jax.random.fold_in(k2, 11), (2, 3)),
                jax.random.uniform(k2, (64,)), jax.vmap(lambda k: jax.random.bits(k, (4,)))(ks),
                jax.random.randint(k1, (5,), 0, 100))

    _same(_jit(f)(1234), jax.jit(f)(1234), exact=True)


def test_prng_raw_key_argument():
    key = jax.random.PRNGKey(7)
    uniform = lambda k: jax.random.uniform(k, (1000,))  # noqa: E731
    _same(_jit(uniform)(key), jax.jit(uniform)(key), exact=True)
    normal = lambda k: jax.random.normal(k, (1000,))  # noqa: E731
    got, want = np.asarray(_jit(normal)(key)), np.asarray(jax.jit(normal)(key))
    # erf_inv is XLA's polynomial; log1p may differ in the last bit.
    np.testing.assert_allclose(got, want, rtol=2e-6, atol=2e-6)
    assert np.mean(got == want) > 0.5


def test_threefry_is_uint32_arithmetic():
    """uint32 adds wrap, shifts by 32 give 0, rotates: the hash's parts."""
    def f(x, y):
        rot = (x << 13) | (x >> 19)
        return x + y, x * y, rot, x >> jnp.uint32(31), x // (y | 1), x % (y | 1), x > y

    x = np.array([0, 1, 0xFFFFFFFF, 0x80000000, 12345678], np.uint32)
    y = np.array([0xFFFFFFFF, 5, 1, 0x80000000, 99], np.uint32)
    _same(_jit(f)(x, y), jax.jit(f)(x, y))


# ---------------------------------------------------------------------------
# Half precision and small integers
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [jnp.bfloat16, jnp.float16], ids=["bf16", "f16"])
def test_half_precision_mlp(dtype):
    rng = np.random.default_rng(0)
    x = jnp.asarray(rng.standard_normal((8, 32)), dtype)
    w1 = jnp.asarray(rng.standard_normal((32, 64)) * 0.2, dtype)
    w2 = jnp.asarray(rng.standard_normal((64, 16)) * 0.2, dtype)

    def mlp(x, w1, w2):
        h = jax.nn.gelu(x @ w1)
        y = jax.nn.softmax(h @ w2, axis=-1)
        # (Sums of |h|: a sum that cancels to near zero has no relative
        # accuracy in any 8-bit mantissa, whichever way it rounds.)
        return y, jnp.sum(jnp.abs(h), axis=0), jnp.max(h), jnp.exp(x) * 0.5 + 1

    got, want = _jit(mlp)(x, w1, w2), jax.jit(mlp)(x, w1, w2)
    _same(got[1:], want[1:])
    # A last-bit difference of f32 math (erf, exp: glibc's vector variants
    # against XLA's polynomials) may flip the rounding of an element of h and
    # so of a logit by one unit: 2^-8 at |logit| < 4, a relative change of
    # the softmax up to that much.
    _same(got[0], want[0], rtol={jnp.bfloat16: 1.6e-2, jnp.float16: 4e-3}[dtype])


def test_small_integer_wraparound_and_conversions():
    def f(a, b, c, f32):
        return (a + a, a * jnp.int8(3), b + b, b // jnp.uint8(3), c - jnp.int16(30000),
                a.astype(jnp.uint8), b.astype(jnp.int8), f32.astype(jnp.uint8),
                f32.astype(jnp.int8), f32.astype(jnp.uint32), f32.astype(jnp.int16),
                jnp.sum(a), jnp.max(b), a < 0, b.astype(jnp.float16), a.astype(jnp.bfloat16))

    a = np.array([-128, -1, 0, 1, 127, 100], np.int8)
    b = np.array([0, 1, 128, 255, 200, 7], np.uint8)
    c = np.array([-32768, -1, 0, 30000, 32767, 5], np.int16)
    f32 = np.array([-1.0, 0.7, 255.5, 300.0, np.nan, 5e9], np.float32)
    _same(_jit(f)(a, b, c, f32), jax.jit(f)(a, b, c, f32))


def test_uint16_and_bitcast():
    def f(x, y):
        bits = jax.lax.bitcast_convert_type(y, jnp.uint32)
        return x + x, x >> jnp.uint16(3), x.astype(jnp.float32), bits ^ jnp.uint32(0x80000000)

    x = np.array([0, 1, 65535, 40000], np.uint16)
    y = np.array([1.0, -2.5, 0.0, np.inf], np.float32)
    _same(_jit(f)(x, y), jax.jit(f)(x, y))


def test_uint64_wraparound_and_conversions_with_x64():
    """uint64 (JAX needs jax_enable_x64 for it): wrapping arithmetic,
    unsigned division, comparison, min/max, shifts, reductions and arg
    reductions, sort and cumsum, conversions both ways (XLA's saturating
    float conversions, NaN to 0), bitcasts, and JAX's promotion of uint64
    with a signed integer to float64; bit for bit against jax.jit."""
    def f(x, y, s, i, f64, f32):
        return (x + y, x * y, x - y, x // (y | 1), x % (y | 1), x > y, jnp.maximum(x, y),
                jnp.minimum(x, y), x >> jnp.uint64(63), x << jnp.uint64(1), x ^ y, -x,
                jax.lax.shift_right_arithmetic(x, jnp.uint64(3)), jnp.sum(x), jnp.max(x),
                jnp.min(x), jnp.prod(x), jnp.argmax(x), jnp.argmin(x), jnp.cumsum(x),
                jnp.sort(x), x.astype(jnp.float64), x.astype(jnp.float32),
                x.astype(jnp.int64), x.astype(jnp.uint32), x.astype(jnp.int8),
                s.astype(jnp.uint64), i.astype(jnp.uint64), f64.astype(jnp.uint64),
                f32.astype(jnp.uint64), x * 3, x + s, x + i,
                jax.lax.bitcast_convert_type(x, jnp.float64),
                jax.lax.bitcast_convert_type(f64, jnp.uint64))

    x = np.array([0, 1, 2**64 - 1, 2**63, 2**63 - 1, 12345678901234567890], np.uint64)
    y = np.array([2**64 - 1, 5, 1, 2**63, 3, 99], np.uint64)
    s = np.array([0, 1, 7, 255, 2, 3], np.uint32)
    i = np.array([-1, -2**63, 0, 5, 2**63 - 1, 7], np.int64)
    f64 = np.array([-1.0, 0.7, 1.8e19, 9.3e18, np.nan, 2e19])
    with jax.enable_x64(True):
        got, want = _jit(f)(x, y, s, i, f64, f64.astype(np.float32)), \
            jax.jit(f)(x, y, s, i, f64, f64.astype(np.float32))
        assert np.asarray(want[-3]).dtype == np.float64  # uint64 + int64
        _same(got, want, exact=True)
        # uint64 window starts clamp as unsigned values (2**63 and up too).
        def windows(x, i):
            return [(jax.lax.dynamic_slice(x, (i[k],), (2,)), x[i[k]],
                     jax.lax.dynamic_update_slice(x, x[:2], (i[k],))) for k in range(6)]
        _same(_jit(windows)(f64, x), jax.jit(windows)(f64, x), exact=True)
        # Inside jax.jit programs too (the jax.ffi custom call).
        _same(jax.jit(_jit(lambda x, y: (x * y, x // (y | 1))))(x, y),
              jax.jit(lambda x, y: (x * y, x // (y | 1)))(x, y), exact=True)


def test_uint64_promotion_matches_jax_x64():
    """promote(u64, b) is jnp.promote_types under x64: u64 with a signed
    integer is f64, with an unsigned one or bool u64, with a float the float."""
    with jax.enable_x64(True):
        for b, jb in {**_JNP, DType.i64: jnp.int64, DType.u64: jnp.uint64,
                      DType.f64: jnp.float64}.items():
            want = np.dtype(jnp.promote_types(jnp.uint64, jb))
            assert promote(DType.u64, b).numpy == want.name == promote(b, DType.u64).numpy, b


_JNP = {DType.bool: jnp.bool_, DType.i8: jnp.int8, DType.i16: jnp.int16, DType.i32: jnp.int32,
        DType.u8: jnp.uint8, DType.u16: jnp.uint16, DType.u32: jnp.uint32,
        DType.bf16: jnp.bfloat16, DType.f16: jnp.float16, DType.f32: jnp.float32}


@pytest.mark.parametrize("a", list(_JNP), ids=repr)
def test_promotion_lattice_matches_jax(a):
    """Graph promotion agrees with jnp.promote_types (x64 off: JAX's i64
    becomes i32, which the graph never sees: jaxprs carry the dtypes)."""
    for b in _JNP:
        want = np.dtype(jnp.promote_types(_JNP[a], _JNP[b]))
        got = promote(a, b)
        if {a, b} == {DType.u32, DType.i32} or {a, b} == {DType.u32, DType.i8} or \
                {a, b} == {DType.u32, DType.i16}:
            assert got is DType.i64 and want == np.int32  # the x64 lattice, canonicalized
            continue
        assert got.numpy == want.name, (a, b)


def test_typed_key_arguments_and_results():
    """A ``jax.random.key`` passed in and returned: its data crosses the
    kernel's boundary, and comes back a key of the same implementation."""
    def f(key, x):
        k1, k2 = jax.random.split(key)
        return x + jax.random.uniform(k1, x.shape), k2

    key, x = jax.random.key(42), jnp.ones(5)
    (a, ka), (b, kb) = _jit(f)(key, x), jax.jit(f)(key, x)
    _same(a, b, exact=True)
    assert ka.dtype == kb.dtype
    _same(jax.random.key_data(ka), jax.random.key_data(kb), exact=True)


def test_narrow_dtypes_under_jax_jit():
    """Under jax.jit the kernel runs as an XLA FFI call: bf16 and uint8
    buffers cross it with their XLA element types."""
    def f(x, y):
        return jnp.exp(x) * 2, y + jnp.uint8(250)

    x = jnp.arange(8, dtype=jnp.bfloat16) * 0.25
    y = jnp.arange(8, dtype=jnp.uint8)
    _same(jax.jit(_jit(f))(x, y), jax.jit(f)(x, y))
