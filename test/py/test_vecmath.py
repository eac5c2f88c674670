"""Vector math variants (llvmaccel.vecmath): math in vectorized loops calls
the C library's vector functions, with the same results as the scalar ones."""

from __future__ import annotations

import math

import numpy as np
import pytest

from llvmaccel import compiler, vecmath
from llvmaccel.codegen import generate
from llvmaccel.graph import DType, Graph, Sym

RNG = np.random.default_rng(0)
HAVE_LIBMVEC = vecmath.variant("exp", 32, 1, 16) is not None
needs_libmvec = pytest.mark.skipif(not HAVE_LIBMVEC, reason="no libmvec on this host")

REFERENCE = {
    "exp": np.exp,
    "log": np.log,
    "tanh": np.tanh,
    "erf": np.vectorize(math.erf, otypes=[np.float64]),
    "expm1": np.expm1,
    "log1p": np.log1p,
    "sin": np.sin,
}
SPECIAL = [0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 1e-30, -1e-30, 88.0, -104.0, 1e30]


@pytest.fixture(autouse=True)
def _cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("LLVMACCEL_CACHE_DIR", str(tmp_path / "cache"))


def _graph(fn: str, dt: DType) -> Graph:
    g = Graph()
    x = g.input("x", (Sym("n"),), dt)
    g.set_outputs([g.unary(fn, x)])
    return g


@needs_libmvec
@pytest.mark.parametrize("dt", [DType.f32, DType.f64])
@pytest.mark.parametrize("fn", sorted(REFERENCE))
def test_vector_variants_match_scalar_math(fn, dt):
    g = _graph(fn, dt)
    c = compiler.compile_graph(g)
    assert "vector-function-abi-variant" in c.kernel.ir
    assert "@_ZGV" in c.optimized_ir  # the vectorized loop calls the variant
    x = RNG.standard_normal(1000) * 4
    if fn in ("log", "log1p"):
        x = np.abs(x) + (0.0 if fn == "log" else -0.5)
    x = np.concatenate([x, SPECIAL]).astype(dt.numpy)
    (got,) = c(x)
    with np.errstate(all="ignore"):
        want = REFERENCE[fn](x.astype(np.float64)).astype(dt.numpy)
    tol = 2e-6 if dt is DType.f32 else 1e-14
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol, equal_nan=True)


@needs_libmvec
def test_binary_variant_atan2():
    g = Graph()
    a = g.input("a", (Sym("n"),), DType.f32)
    b = g.input("b", (Sym("n"),), DType.f32)
    g.set_outputs([g.binary("atan2", a, b)])
    c = compiler.compile_graph(g)
    assert "vv_atan2f(_ZGV" in c.kernel.ir  # two vector arguments
    x, y = (RNG.standard_normal(999).astype(np.float32) for _ in range(2))
    (got,) = c(x, y)
    np.testing.assert_allclose(got, np.arctan2(x, y), rtol=2e-6, atol=2e-6)


def test_disabled_by_environment(monkeypatch):
    monkeypatch.setenv("LLVMACCEL_VECMATH", "0")
    vecmath.load.cache_clear()
    vecmath.variant.cache_clear()
    try:
        ir = generate(_graph("erf", DType.f32)).ir
        assert "vector-function-abi-variant" not in ir and "@erff" in ir
    finally:
        monkeypatch.delenv("LLVMACCEL_VECMATH")
        vecmath.load.cache_clear()
        vecmath.variant.cache_clear()
    assert ("vector-function-abi-variant" in generate(_graph("erf", DType.f32)).ir) == \
        HAVE_LIBMVEC


def test_unknown_widths_and_types_have_no_variant():
    assert vecmath.variant("exp", 32, 1, 128) is None  # no such ISA
    assert vecmath.variant("exp", 16, 1, 64) is None  # no half-precision variants
    assert vecmath.variant("no_such_function", 32, 1, 64) is None
