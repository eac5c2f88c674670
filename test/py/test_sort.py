"""sort, argsort, topk and msort in both frontends against eager PyTorch and
jax.jit: ties, NaN and signed zeros, empty dims, integer types, long rows."""

from __future__ import annotations

import numpy as np
import pytest

from llvmaccel.graph import DType, Graph

RNG = np.random.default_rng(11)


@pytest.fixture(autouse=True)
def _cache_dir(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("LLVMACCEL_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "cache"))


def _special(shape, dtype=np.float32):
    """Values with ties, NaN, infinities and both zeros."""
    pool = np.array([0.0, -0.0, 1.0, -1.0, 2.5, np.nan, np.inf, -np.inf, 1.0, 0.0], dtype)
    return RNG.choice(pool, size=shape).astype(dtype)


# -- the graph op directly --------------------------------------------------


@pytest.mark.parametrize("n", [1, 2, 3, 7, 16, 33, 1000])
def test_graph_sort_matches_numpy_stable(n):
    from llvmaccel.compiler import compile_graph

    g = Graph()
    x = g.input("x", (3, n), DType.f32)
    v, i = g.sort([x, g.iota((3, n), 1, DType.i64)], 1)
    g.set_outputs([v, i])
    data = _special((3, n))
    got_v, got_i = compile_graph(g)(data)
    want_i = np.argsort(data, axis=1, kind="stable")
    np.testing.assert_array_equal(got_i, want_i)
    np.testing.assert_array_equal(got_v, np.take_along_axis(data, want_i, 1))


def test_graph_sort_two_keys_and_a_passenger():
    from llvmaccel.compiler import compile_graph

    g = Graph()
    a = g.input("a", (50,), DType.i32)
    b = g.input("b", (50,), DType.f64)
    c = g.input("c", (50,), DType.bool)
    g.set_outputs(g.sort([a, b, c], 0, num_keys=2))
    av = RNG.integers(-3, 3, 50).astype(np.int32)
    bv = RNG.integers(0, 4, 50).astype(np.float64)
    cv = RNG.random(50) < 0.5
    got = compile_graph(g)(av, bv, cv)
    order = np.lexsort((bv, av))  # stable: a first, then b
    for got_k, want in zip(got, (av, bv, cv), strict=True):
        np.testing.assert_array_equal(got_k, want[order])


# -- PyTorch ----------------------------------------------------------------

torch = pytest.importorskip("torch")
from test_frontend_torch import opinfos  # noqa: E402


def _compiled(fn):
    torch._dynamo.reset()
    return torch.compile(fn, backend="llvmaccel", fullgraph=True)


@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("descending", [False, True])
def test_torch_sort_stable_with_nan_and_zeros(dim, descending):
    x = torch.from_numpy(_special((9, 13)))

    def f(x):
        return torch.sort(x, dim=dim, descending=descending, stable=True)
    got, want = _compiled(f)(x), f(x)
    torch.testing.assert_close(got[0], want[0], equal_nan=True)
    torch.testing.assert_close(got[1], want[1])
    # -0.0 and 0.0 tie: the stable order keeps their signs where eager has them
    assert torch.equal(torch.signbit(got[0]), torch.signbit(want[0]))


@pytest.mark.parametrize("dtype", [torch.int32, torch.int64, torch.float64, torch.bool])
def test_torch_sort_argsort_msort_types(dtype):
    x = torch.from_numpy(RNG.integers(-4, 4, (6, 40))).to(dtype)

    def f(x):
        v, i = torch.sort(x, stable=True)
        return v, i, torch.argsort(x, dim=0, descending=True, stable=True), torch.msort(x)
    for got, want in zip(_compiled(f)(x), f(x), strict=True):
        torch.testing.assert_close(got, want)


def test_torch_sort_unstable_values():
    x = torch.randn(4, 300)
    got, want = _compiled(lambda x: torch.sort(x, 1))(x), torch.sort(x, 1)
    torch.testing.assert_close(got[0], want[0])
    torch.testing.assert_close(got[1], want[1])  # distinct values: one answer


@pytest.mark.parametrize("largest", [True, False])
@pytest.mark.parametrize("dim", [0, -1])
def test_torch_topk(largest, dim):
    x = torch.from_numpy(_special((12, 10)))

    def f(x):
        return torch.topk(x, 4, dim=dim, largest=largest)
    (gv, gi), (wv, _) = _compiled(f)(x), f(x)
    torch.testing.assert_close(gv, wv, equal_nan=True)
    # Ties may pick any of the equal elements: the indices must hold the values.
    torch.testing.assert_close(torch.gather(x, dim, gi), gv, equal_nan=True)


def test_torch_topk_unsorted_is_the_same_set():
    x = torch.randn(5, 20)
    gv, gi = _compiled(lambda x: torch.topk(x, 6, sorted=False))(x)
    wv, _ = torch.topk(x, 6, sorted=True)
    torch.testing.assert_close(gv.sort(-1, descending=True)[0], wv)
    torch.testing.assert_close(torch.gather(x, 1, gi), gv)


def test_torch_sort_empty_dim():
    x = torch.zeros(3, 0)
    got = _compiled(lambda x: torch.sort(x, 1))(x)
    assert got[0].shape == (3, 0) and got[1].shape == (3, 0)


def test_torch_sort_compiles_without_fallback():
    import llvmaccel.torch as lt

    torch._dynamo.reset()
    report = lt.explain(lambda x: (torch.topk(torch.sort(x)[0], 2)[1], torch.argsort(x),
                                   torch.msort(x)), torch.randn(3, 5))
    assert report.fallbacks == []
    assert {"sort", "topk"} <= set(report.compiled)


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64])
@pytest.mark.parametrize("op", opinfos(["sort", "argsort", "topk", "msort"]),
                         ids=lambda op: op.name)
def test_opinfo_samples(op, dtype):
    """PyTorch's own sample inputs: values exactly as eager; indices exactly
    where the input has no ties (with ties, any order of equal values is
    eager's choice for an unstable sort)."""
    if dtype not in op.supported_dtypes("cpu"):
        pytest.skip("dtype not supported by the op")
    ran = 0
    for sample in list(op.sample_inputs("cpu", dtype, requires_grad=False))[:8]:
        x = sample.input
        args, kwargs = sample.args, dict(sample.kwargs)

        def fn(x, _a=args, _k=kwargs):
            return op(x, *_a, **_k)
        want = fn(x)
        got = _compiled(fn)(x)
        want = want if isinstance(want, tuple) else (want,)
        got = got if isinstance(got, tuple) else (got,)
        distinct = x.numel() == torch.unique(x).numel()
        indices = {"argsort": 0, "sort": 1, "topk": 1}.get(op.name)
        for k, (g_, w) in enumerate(zip(got, want, strict=True)):
            if k == indices and not distinct:
                continue
            torch.testing.assert_close(g_, w, equal_nan=True)
        ran += 1
    assert ran


# -- JAX ----------------------------------------------------------------------

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402
from jax import lax  # noqa: E402

import llvmaccel.jax as lj  # noqa: E402


def _check_jax(fn, *args):
    got = lj.jit(fn)(*args)
    want = jax.jit(fn)(*args)
    jax.tree_util.tree_map(lambda a, b: np.testing.assert_array_equal(np.asarray(a),
                                                                       np.asarray(b)), got, want)
    return got, want


@pytest.mark.parametrize("axis", [0, 1])
def test_jax_sort_argsort_nan_zeros_stable(axis):
    x = _special((11, 17))

    def f(x):
        return (jnp.sort(x, axis=axis), jnp.argsort(x, axis=axis),
                jnp.sort(x, axis=axis, descending=True),
                jnp.argsort(x, axis=axis, descending=True))
    got, want = _check_jax(f, x)
    for a, b in zip(got, want, strict=True):
        assert np.array_equal(np.signbit(np.asarray(a)), np.signbit(np.asarray(b)))


def test_jax_lax_sort_multiple_operands_num_keys():
    a = RNG.integers(0, 3, (4, 30)).astype(np.int32)
    b = _special((4, 30))
    c = RNG.standard_normal((4, 30)).astype(np.float32)
    _check_jax(lambda a, b, c: lax.sort((a, b, c), dimension=1, num_keys=2), a, b, c)
    _check_jax(lambda a, b, c: lax.sort((b, a, c), dimension=0, num_keys=1, is_stable=True),
               a, b, c)


def test_jax_top_k_total_order():
    x = np.array([[1.0, np.nan, -0.0, 0.0, -np.nan, 2.0, -1.0, 0.0, -0.0, 2.0]], np.float32)
    _check_jax(lambda x: lax.top_k(x, 10), x)
    _check_jax(lambda x: lax.top_k(x, 3), RNG.integers(0, 5, (6, 9)).astype(np.int32))


def test_jax_sort_empty_and_long():
    _check_jax(jnp.sort, np.zeros((2, 0), np.float32))
    _check_jax(lambda x: (jnp.sort(x), jnp.argsort(x)), RNG.standard_normal(5000)
               .astype(np.float32))
    _check_jax(lambda x: jnp.argsort(x, stable=True), RNG.integers(0, 9, 777).astype(np.int64))


def test_sort_symbolic_sizes_both_frontends():
    torch._dynamo.reset()
    fast = torch.compile(lambda x: torch.sort(x, -1, descending=True), backend="llvmaccel",
                         dynamic=True)
    for n in (5, 17, 64):
        x = torch.from_numpy(_special((3, n)))
        got, want = fast(x), torch.sort(x, -1, descending=True)
        torch.testing.assert_close(got[0], want[0], equal_nan=True)
    fn = lj.jit(lambda x: (jnp.sort(x, axis=0), jnp.argsort(x, axis=1)),
                polymorphic_shapes=["n, m"])
    for n, m in ((2, 9), (31, 4)):
        x = _special((n, m))
        for a, b in zip(fn(x), jax.jit(lambda x: (jnp.sort(x, axis=0),
                                                  jnp.argsort(x, axis=1)))(x), strict=True):
            np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
