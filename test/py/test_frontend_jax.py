"""llvmaccel.jax.jit: primitives against jax.jit on CPU, models, fallback."""

from __future__ import annotations

import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402

import llvmaccel.jax as lj  # noqa: E402


@pytest.fixture(autouse=True)
def _cache_dir(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("LLVMACCEL_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "cache"))


RNG = np.random.default_rng(0)
X = RNG.standard_normal((6, 10)).astype(np.float32)
Y = RNG.standard_normal((6, 10)).astype(np.float32)
W = RNG.standard_normal((10, 4)).astype(np.float32)
IDX = np.array([0, 5, 9, 2], np.int32)


def _check(fn, *args, rtol=2e-5, atol=2e-5):
    got = lj.jit(fn)(*args)
    want = jax.jit(fn)(*args)
    jax.tree_util.tree_map(
        lambda a, b: np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=rtol,
                                                atol=atol), got, want)


PRIMS = {
    "arith": lambda x, y: (x + y, x - y, x * y, x / (jnp.abs(y) + 1), -x),
    "math": lambda x, y: (jnp.exp(x), jnp.log(jnp.abs(y) + 1), jnp.sqrt(jnp.abs(x)),
                          jax.lax.rsqrt(jnp.abs(y) + 1), jnp.tanh(x), jax.nn.sigmoid(y),
                          jax.lax.erf(x), jnp.log1p(jnp.abs(x)), jnp.expm1(y)),
    "activations": lambda x, y: (jax.nn.relu(x), jax.nn.gelu(x), jax.nn.gelu(y, approximate=False),
                                 jax.nn.silu(x)),
    "pow": lambda x, y: (x ** 3, x ** -2, jnp.abs(x) ** y, jnp.square(y)),
    "minmax_compare": lambda x, y: (jnp.maximum(x, y), jnp.minimum(x, y), x > y, x <= y,
                                    x == y, x != y, jnp.clip(x, -0.5, 0.5)),
    "select_n": lambda x, y: (jnp.where(x > 0, x, y), jax.lax.select_n(
        (x > y).astype(jnp.int32), x, y)),
    "convert": lambda x, y: ((x * 10).astype(jnp.int32), (x > 0).astype(jnp.float32),
                             jnp.round(x * 3), jnp.floor(y * 3)),
    "int_ops": lambda x, y: ((x * 10).astype(jnp.int32) // 3, (x * 10).astype(jnp.int32) % 4,
                             jax.lax.rem((y * 10).astype(jnp.int32), 3)),
    "reduce": lambda x, y: (x.sum(0), x.max(1), x.min(), x.prod(1), jnp.argmax(x, 1),
                            jnp.argmin(y, 0), (x > 0).any(1), (x > -5).all(),
                            x.mean(1, keepdims=True)),
    "softmax": lambda x, y: (jax.nn.softmax(x, -1), jax.nn.log_softmax(y, 0)),
    "broadcast": lambda x, y: (x + y[0], x * y[:, :1], x + 1.0),
    "views": lambda x, y: (x.reshape(3, 20), x.T, x[1:4, ::2], x[2], jnp.expand_dims(x, 1),
                           jnp.concatenate([x, y], 0), jnp.pad(x, ((1, 2), (0, 3))),
                           jax.lax.pad(x, 2.0, ((-1, 1, 0), (0, 2, 0)))),
    "dynamic_slice": lambda x, y: (jax.lax.dynamic_slice(x, (2, 3), (3, 4)),
                                   jax.lax.dynamic_slice(x, (jnp.argmax(y[0]), 0), (2, 10))),
    "iota": lambda x, y: (jnp.arange(7) * 2, jax.lax.broadcasted_iota(jnp.float32, (3, 4), 1)),
}


@pytest.mark.parametrize("name", sorted(PRIMS))
def test_primitives(name):
    _check(PRIMS[name], X, Y)


def test_dot_general():
    a = RNG.standard_normal((2, 3, 5)).astype(np.float32)
    b = RNG.standard_normal((2, 5, 4)).astype(np.float32)
    _check(lambda x, w, a, b: (x @ w, jnp.einsum("bij,bjk->bik", a, b),
                               jnp.einsum("bij,ij->b", a[:, :, :3], a[0, :, 2:]),
                               jnp.tensordot(a, b[0], axes=1),
                               (x * 4).astype(jnp.int32) @ (w * 4).astype(jnp.int32)),
           X, W, a, b)


@pytest.mark.parametrize("mode", ["clip", "fill", "promise_in_bounds"])
def test_gather_modes(mode):
    idx = np.array([0, 5, 9, 3], np.int32) if mode == "promise_in_bounds" else \
        np.array([0, 5, 12, -3], np.int32)
    table = RNG.standard_normal((10, 4)).astype(np.float32)

    def fn(t, i):
        out = (t.at[i].get(mode=mode), t.T.at[:, i].get(mode=mode))
        if mode != "promise_in_bounds":
            out += (jnp.take(t, i, axis=0, mode=mode), jnp.take(t.T, i, axis=1, mode=mode))
        return out
    _check(fn, table, idx)


def test_negative_indices_wrap():
    _check(lambda t, i: t[i], W, np.array([-1, 2, -10], np.int32))


def test_nested_jit_and_custom_derivatives():
    @jax.jit
    def inner(x):
        return jax.nn.softplus(x) * 2

    @jax.custom_jvp
    def f(x):
        return jnp.sin(x)

    f.defjvp(lambda p, t: (f(p[0]), jnp.cos(p[0]) * t[0]))

    @jax.custom_vjp
    def g(x):
        return x * 3

    g.defvjp(lambda x: (g(x), None), lambda r, ct: (ct * 3,))
    _check(lambda x: inner(x) + f(x) + g(x) + jax.nn.softmax(x), X)


def mlp(params, x):
    for w, b in params[:-1]:
        x = jax.nn.relu(x @ w + b)
    w, b = params[-1]
    return jax.nn.log_softmax(x @ w + b)


def dlrm(params, dense, indices, bag=4):
    tables, bottom, top = params
    x = mlp(bottom, dense)
    batch = dense.shape[0]
    feats = [x] + [jnp.take(t, indices[k], axis=0).reshape(batch, bag, -1).sum(1)
                   for k, t in enumerate(tables)]
    z = jnp.stack(feats, 1)
    n = len(feats)
    li, lj_ = np.tril_indices(n, -1)
    inter = jnp.einsum("bid,bjd->bij", z, z)[:, li, lj_]
    return jax.nn.sigmoid(mlp(top, jnp.concatenate([x, inter], 1)))


def block(p, x, heads=4):
    def ln(x, g, b):
        m = x.mean(-1, keepdims=True)
        v = ((x - m) ** 2).mean(-1, keepdims=True)
        return (x - m) * jax.lax.rsqrt(v + 1e-5) * g + b

    b_, t, d = x.shape
    qkv = ln(x, *p["ln1"]) @ p["qkv"]
    q, k, v = (z.reshape(b_, t, heads, d // heads).transpose(0, 2, 1, 3)
               for z in jnp.split(qkv, 3, axis=-1))
    att = jax.nn.softmax(q @ k.transpose(0, 1, 3, 2) / np.sqrt(d // heads), axis=-1)
    y = (att @ v).transpose(0, 2, 1, 3).reshape(b_, t, d)
    x = x + y @ p["proj"]
    return x + jax.nn.gelu(ln(x, *p["ln2"]) @ p["fc1"]) @ p["fc2"]


def _w(*shape):
    return (RNG.standard_normal(shape) / np.sqrt(shape[0])).astype(np.float32)


def test_mlp():
    params = [(_w(16, 32), _w(32)), (_w(32, 32), _w(32)), (_w(32, 4), _w(4))]
    _check(mlp, params, RNG.standard_normal((8, 16)).astype(np.float32))


def test_dlrm():
    tables = [_w(50, 8) for _ in range(3)]
    bottom = [(_w(5, 16), _w(16)), (_w(16, 8), _w(8))]
    top = [(_w(8 + 6, 16), _w(16)), (_w(16, 1), _w(1))]
    indices = RNG.integers(0, 50, (3, 6 * 4)).astype(np.int32)
    _check(dlrm, (tables, bottom, top), RNG.standard_normal((6, 5)).astype(np.float32), indices)


def test_transformer_block():
    d = 32
    p = {"ln1": (np.ones(d, np.float32), np.zeros(d, np.float32)),
         "ln2": (np.ones(d, np.float32), np.zeros(d, np.float32)),
         "qkv": _w(d, 3 * d), "proj": _w(d, d), "fc1": _w(d, 4 * d), "fc2": _w(4 * d, d)}
    _check(block, p, RNG.standard_normal((2, 5, d)).astype(np.float32), rtol=1e-4, atol=1e-4)


def test_unsupported_primitive_raises_or_falls_back():
    # A primitive with no lowering rule (the FFT stands for any of them).
    def fn(x):
        return jnp.fft.fft(x, axis=0).real + 1

    with pytest.raises(lj.UnsupportedPrimitive, match="fft"):
        lj.jit(fn)(X)
    with pytest.warns(UserWarning, match="fft"):
        got = lj.jit(fn, fallback=True)(X)
    np.testing.assert_allclose(got, np.fft.fft(X, axis=0).real + 1, rtol=1e-4, atol=1e-4)


def test_bad_inputs():
    with pytest.raises(TypeError, match="float8_e4m3fn"):  # (uint64 is supported since)
        lj.jit(lambda x: x + 1)(X.astype(jnp.float8_e4m3fn))
    # Without jax_enable_x64 a uint64 argument is canonicalized to uint32, as
    # jax.jit does (its high bits dropped).
    big = np.array([2**40 + 3, 2**64 - 1, 7], np.uint64)
    got, want = lj.jit(lambda x: x + 1)(big), jax.jit(lambda x: x + 1)(big)
    assert got.dtype == want.dtype == np.uint32
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    f = lj.jit(lambda x: jnp.exp(x).sum(0))
    np.testing.assert_allclose(f(np.zeros((0, 3), np.float32)), np.zeros(3))
    np.testing.assert_allclose(f(X.T), np.exp(X.T).sum(0), rtol=1e-5)  # non-contiguous


def test_retrace_per_shape_and_report():
    f = lj.jit(lambda x, w: jax.nn.relu(x @ w))
    for n in (2, 3, 5):
        x = RNG.standard_normal((n, 10)).astype(np.float32)
        np.testing.assert_allclose(f(x, W), np.maximum(x @ W, 0), rtol=1e-5, atol=1e-5)
    compiled = f.compiled_for(X, W)
    assert compiled is not None and compiled.report is not None


def test_take_in_fill_mode_reaches_accel_prefetch():
    # jnp.take's default mode fills out-of-range rows with NaN: the row copy
    # is conditional, and LLVM turns it into a memcpy; accel-prefetch
    # prefetches its source through the index (a 2 MiB table, too large to
    # be assumed cache-resident). Results match jax.jit with indices out of
    # range on both sides.
    def gather(table, ids):
        return jnp.take(table, ids, axis=0) * 2.0

    rng = np.random.default_rng(5)
    table = rng.standard_normal((8192, 64), dtype=np.float32)
    ids = rng.integers(0, 8192, 4096).astype(np.int32)
    ids[[3, 100, 4000]] = [-1, 8192, 1 << 30]
    fast = lj.jit(gather)
    np.testing.assert_array_equal(fast(table, ids), np.asarray(jax.jit(gather)(table, ids)))
    report = fast.compiled_for(table, ids).report
    assert any("via in1" in r.message for r in report.passed("accel-prefetch")), report.table()


def test_keyword_arguments_static_argnames_and_jax_array_outputs():
    """Keyword arguments are array pytrees as in jax.jit, static_argnames
    makes arguments static by name (positional or keyword-only), and the
    results are jax.Array values."""

    def f(x, w, *, scale=2.0, axis=0):
        return jnp.sum(x * w * scale, axis=axis)

    x = np.ones((3, 4), np.float32)
    w = np.arange(4, dtype=np.float32)
    ours = lj.jit(f, static_argnames=("axis",))
    ref = jax.jit(f, static_argnames=("axis",))
    for kwargs in ({}, {"axis": 1}, {"scale": np.float32(3.0), "axis": 1}):
        got = ours(x, w, **kwargs)
        assert isinstance(got, jax.Array)
        np.testing.assert_allclose(np.asarray(got), np.asarray(ref(x, w, **kwargs)))
    np.testing.assert_allclose(np.asarray(ours(x, w=w)), np.asarray(ref(x, w=w)))
    scaled = lj.jit(lambda x, n: x * n, static_argnames="n")
    assert float(scaled(x, n=3)[0, 0]) == 3.0 and float(scaled(x, 4)[0, 0]) == 4.0


def test_outputs_are_device_put_arrays_without_a_copy():
    """The outputs are what jax.device_put makes of the kernel's buffers:
    uncommitted jax.Arrays on the default device, sharing the buffer; under
    jax.default_device (and for non-canonical dtypes) jax.device_put itself."""
    from llvmaccel.jax import _host_put, _to_jax

    f = lj.jit(lambda x, k: (x * 2, jnp.argmax(x), k + 1))
    x = np.arange(12, dtype=np.float32)
    k = np.arange(3, dtype=np.int32)
    ref = jax.device_put([x * 2, np.int32(11), k + 1])
    got = f(x, k)
    for g, r in zip(got, ref, strict=True):
        assert isinstance(g, jax.Array)
        assert (g.dtype, g.shape, g.committed, g.devices()) == \
            (r.dtype, r.shape, r.committed, r.devices())
        np.testing.assert_array_equal(np.asarray(g), np.asarray(r))
    assert _host_put() is not None  # the fast path exists in this jax
    from llvmaccel.compiler import aligned_empty

    buf = aligned_empty((1 << 12,), np.float32)  # as the kernel's outputs are
    buf[:] = 1.0
    (arr,) = _to_jax([buf])
    assert arr.unsafe_buffer_pointer() == buf.ctypes.data
    with jax.default_device(jax.devices("cpu")[0]):
        np.testing.assert_array_equal(np.asarray(f(x, k)[0]), x * 2)
    wide = np.arange(3, dtype=np.int64)  # not canonical without x64
    (w,) = _to_jax([wide])
    assert w.dtype == jax.device_put(wide).dtype


def test_calls_on_jax_arrays_dispatch_through_xla(monkeypatch):
    """Concrete calls whose leaves are all jax.Arrays run the kernel as one
    jax.jit program (its custom call), traced once per signature; numpy
    arguments take the Python path (jax.jit would copy them), and so does a
    call the program fails, so that llvmaccel's own exception is raised."""
    import llvmaccel.jax as ljax

    def fn(x, w):
        return jnp.tanh(x @ w), jnp.argmax(x, axis=1)

    f = lj.jit(fn)
    want = jax.jit(fn)(X, W)
    f(X, W)  # numpy leaves: the Python path
    entry = f._resolve((X, W), {})[0]  # noqa: SLF001
    assert entry._dispatch is None  # noqa: SLF001
    xj, wj = jnp.asarray(X), jnp.asarray(W)
    for _ in range(2):
        got = f(xj, wj)
        for g, r in zip(got, want, strict=True):
            assert isinstance(g, jax.Array) and g.dtype == r.dtype
            np.testing.assert_allclose(np.asarray(g), np.asarray(r), rtol=2e-5, atol=2e-5)
    run = entry.dispatcher()
    assert run is not None and run._cache_size() == 1  # noqa: SLF001
    # A program that fails: the call is made again from Python.
    calls = []

    def failing(*a):
        calls.append(a)
        raise jax.errors.JaxRuntimeError("INTERNAL: kernel failed")

    monkeypatch.setattr(ljax._Entry, "dispatcher", lambda self: failing)  # noqa: SLF001
    got = f(xj, wj)
    assert len(calls) == 1
    np.testing.assert_allclose(np.asarray(got[0]), np.asarray(want[0]), rtol=2e-5, atol=2e-5)
    # Polymorphic shapes keep the Python path (a new size, no new XLA program).
    g = lj.jit(fn, polymorphic_shapes=["b, 10", None])
    np.testing.assert_array_equal(np.asarray(g(xj, wj)[1]), np.asarray(want[1]))
    assert len(calls) == 1


@pytest.mark.parametrize("mode", [None, "clip", "fill"])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_take_along_axis_matches_jax_jit(mode, axis):
    """``jnp.take_along_axis`` (a gather with batching dims: every operand
    dim but the axis), negative and out-of-range indices included, and the
    top-2 of ``argsort``."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((4, 6, 5)).astype(np.float32)
    shape = list(x.shape)
    shape[axis] = 3
    idx = rng.integers(-8, 8, shape).astype(np.int32)

    def fn(x, i):
        return jnp.take_along_axis(x, i, axis=axis, mode=mode)

    np.testing.assert_array_equal(np.asarray(lj.jit(fn, fallback=False)(x, idx)),
                                  np.asarray(jax.jit(fn)(x, idx)))
    top = lambda x: jnp.take_along_axis(x, jnp.argsort(x, axis=1)[:, :2], axis=1)  # noqa: E731
    np.testing.assert_array_equal(np.asarray(lj.jit(top, fallback=False)(x)),
                                  np.asarray(jax.jit(top)(x)))


@pytest.mark.parametrize("side", ["left", "right"])
@pytest.mark.parametrize("method", ["scan", "compare_all", "sort"])
def test_searchsorted_and_interp_match_jax_jit(side, method):
    """``jnp.searchsorted`` (a gather keeping its size-1 slice dim, unsigned
    indices, comparisons in IEEE total order: NaN after everything, -0
    before +0) and ``jnp.interp``."""
    a = np.sort(np.array([-2.0, -0.0, 0.0, 0.5, 0.5, 1.0, 3.0, np.nan], np.float32))
    v = np.array([-3.0, -0.0, 0.0, 0.5, 0.7, 3.0, 9.0, np.nan, -np.inf, np.inf], np.float32)

    def fn(a, v):
        return jnp.searchsorted(a, v, side=side, method=method)

    np.testing.assert_array_equal(np.asarray(lj.jit(fn, fallback=False)(a, v)),
                                  np.asarray(jax.jit(fn)(a, v)))
    xp, fp = np.array([-1.0, 0.0, 2.0], np.float32), np.array([0.0, 2.0, 1.0], np.float32)
    x = np.linspace(-2, 3, 11).astype(np.float32)
    np.testing.assert_allclose(np.asarray(lj.jit(jnp.interp, fallback=False)(x, xp, fp)),
                               np.asarray(jax.jit(jnp.interp)(x, xp, fp)), rtol=1e-6)


_BATCHED_SCATTER_X = np.random.default_rng(5).standard_normal((4, 6)).astype(np.float32)
_BATCHED_SCATTER_I = np.random.default_rng(6).integers(-2, 8, (4, 3)).astype(np.int32)


@pytest.mark.parametrize("case", ["top_k_grad", "take_along_axis_grad", "vmap_add",
                                  "vmap_set_drop", "vmap_max_clip"])
def test_scatter_with_batching_dims_matches_jax_jit(case):
    """Scatters with batching dims (the gradient of top_k and of
    take_along_axis, ``.at[]`` under vmap): each operand batching dim is
    the position along the indices' batching dim; out-of-range updates
    dropped or clamped as the mode says."""
    fn = {
        "top_k_grad": lambda x, i: jax.grad(lambda y: jax.lax.top_k(y, 2)[0].sum())(x),
        "take_along_axis_grad": lambda x, i: jax.grad(lambda y: (jnp.take_along_axis(
            y, jnp.clip(i, 0, 5), axis=1) ** 2).sum())(x),
        "vmap_add": lambda x, i: jax.vmap(lambda r, j: r.at[j].add(1.0))(x, i),
        "vmap_set_drop": lambda x, i: jax.vmap(lambda r, j: r.at[j].set(7.0, mode="drop"))(x, i),
        "vmap_max_clip": lambda x, i: jax.vmap(lambda r, j: r.at[j].max(3.0, mode="clip"))(x, i),
    }[case]
    args = (_BATCHED_SCATTER_X, _BATCHED_SCATTER_I)
    np.testing.assert_allclose(np.asarray(lj.jit(fn, fallback=False)(*args)),
                               np.asarray(jax.jit(fn)(*args)), rtol=1e-6)


def test_approx_top_k_and_interior_padding_match_jax_jit():
    """``lax.approx_max_k``/``approx_min_k`` (exact on the CPU, as XLA's:
    ties by index, NaN in total order) and ``lax.pad`` with interior and
    negative padding (``lax.associative_scan`` pads its halves)."""
    x = np.random.default_rng(7).standard_normal((4, 9)).astype(np.float32)
    x[1, 3] = x[1, 5]
    x[2, 2] = np.nan
    fns = [lambda x: jax.lax.approx_max_k(x, 3), lambda x: jax.lax.approx_min_k(x, 2),
           lambda x: jax.lax.approx_max_k(x.T, 2, reduction_dimension=0),
           lambda x: jax.lax.pad(x, 0.5, ((1, -2, 2), (-1, 3, 1))),
           lambda x: jax.lax.associative_scan(jnp.add, x, axis=1),
           lambda x: jax.lax.associative_scan(jnp.maximum, x, axis=0, reverse=True)]
    for fn in fns:
        for got, want in zip(jax.tree.leaves(lj.jit(fn, fallback=False)(x)),
                             jax.tree.leaves(jax.jit(fn)(x)), strict=True):
            np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6)


def test_unread_equations_are_not_computed():
    """make_jaxpr keeps equations whose results nothing reads (an
    exponential computed and dropped here): the lowered graph leaves them
    out (``Graph.pruned``), the inputs stay."""
    def fn(x, y):
        _ = jnp.exp(x) * 3.0  # computed, never used
        return x + 1.0

    x, y = np.ones((4, 8), np.float32), np.ones((2,), np.float32)
    fast = lj.jit(fn)
    np.testing.assert_allclose(np.asarray(fast(x, y)), x + 1.0)
    graph = fast.compiled_for(x, y).graph
    assert not [n for n in graph.nodes if n.op == "unary" and n.attrs.get("fn") == "exp"]
    assert len(graph.inputs) == 2
