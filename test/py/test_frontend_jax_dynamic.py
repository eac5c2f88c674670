"""llvmaccel.jax.jit(polymorphic_shapes=...): symbolic sizes are run-time
arguments (one trace and one compilation for many batch sizes), results match
jax.jit, calls that do not fit the declared shapes raise ValueError, and forms
that need a static size raise UnsupportedPrimitive."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402
from jax import export  # noqa: E402

import llvmaccel.jax as lj  # noqa: E402
from llvmaccel import compiler  # noqa: E402
from llvmaccel.graph import Sym, SymExpr, dim_eval  # noqa: E402
from llvmaccel.jax.lowering import graph_dim  # noqa: E402


@pytest.fixture(autouse=True)
def _cache_dir(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("LLVMACCEL_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "cache"))


RNG = np.random.default_rng(1)
BATCHES = (3, 8, 17)


def _w(*shape):
    return (RNG.standard_normal(shape) / np.sqrt(shape[0])).astype(np.float32)


def _f32(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def _assert_close(got, want, tol):
    jax.tree_util.tree_map(
        lambda a, b: np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=tol, atol=tol),
        got, want)


def _one_compilation(fn, polymorphic_shapes, argsets, tol=2e-5, **kw):
    """Runs ``fn`` on every argument set with llvmaccel and jax.jit; checks the
    results, one trace and one compilation; returns the JitFunction."""
    traces = []

    def counted(*args):
        traces.append(1)
        return fn(*args)

    compiler.clear_memory_cache()  # a graph compiled by another test counts too
    compiler.reset_stats()
    f = lj.jit(counted, polymorphic_shapes=polymorphic_shapes, **kw)
    for args in argsets:
        _assert_close(f(*args), jax.jit(fn)(*args), tol)
    assert len(traces) == 1, f"traced {len(traces)} times"
    assert compiler.stats().compilations == 1
    assert compiler.stats().memory_hits == 0
    return f


# ---------------------------------------------------------------------------
# Models
# ---------------------------------------------------------------------------


def mlp(x, w1, w2):
    return jax.nn.relu(x @ w1) @ w2


def test_mlp_three_batches_one_compilation():
    w1, w2 = _w(16, 32), _w(32, 4)
    f = _one_compilation(mlp, ["b, 16", None, None], [(_f32(b, 16), w1, w2) for b in BATCHES])
    compiled = f.compiled_for(_f32(5, 16), w1, w2)
    assert compiled is not None and compiled.kernel.symbols == ["b"]
    assert compiler.stats().compilations == 1  # compiled_for reused it as well


def test_mlp_log_softmax_pytree_params():
    params = [(_w(16, 32), _w(32)), (_w(32, 32), _w(32)), (_w(32, 4), _w(4))]

    def net(params, x):
        for w, b in params[:-1]:
            x = jax.nn.relu(x @ w + b)
        w, b = params[-1]
        return jax.nn.log_softmax(x @ w + b), jax.nn.softmax(x @ w + b, 0)

    _one_compilation(net, [None, "b, 16"], [(params, _f32(b, 16)) for b in BATCHES])


def embedding_bag(table, idx, bag=4):
    b = idx.shape[0] // bag
    return jnp.take(table, idx, axis=0).reshape(b, bag, -1).sum(1)


def test_embedding_bag_symbolic_index_count():
    table = _w(50, 8)
    _one_compilation(embedding_bag, [None, "4*b"],
                     [(table, RNG.integers(0, 50, 4 * b).astype(np.int32)) for b in BATCHES])


def dlrm(params, dense, indices, bag=4):
    tables, bottom, top = params
    x = mlp(dense, *bottom)
    b = dense.shape[0]
    feats = [x] + [jnp.take(t, indices[k], axis=0).reshape(b, bag, -1).sum(1)
                   for k, t in enumerate(tables)]
    z = jnp.stack(feats, 1)
    inter = jnp.einsum("bid,bjd->bij", z, z).reshape(b, -1)
    return jax.nn.sigmoid(mlp(jnp.concatenate([x, inter], 1), *top))


def test_dlrm_three_batches_one_compilation():
    tables = [_w(100, 8) for _ in range(3)]
    params = (tables, (_w(13, 16), _w(16, 8)), (_w(8 + 16, 16), _w(16, 1)))
    argsets = [(params, _f32(b, 13), RNG.integers(0, 100, (3, 4 * b)).astype(np.int32))
               for b in BATCHES]
    _one_compilation(dlrm, [None, "b, 13", "3, 4*b"], argsets, tol=1e-4)


def test_transformer_block_symbolic_batch_and_length():
    d, heads = 32, 4

    def block(p, x):
        b, t, _ = x.shape
        m = x.mean(-1, keepdims=True)
        h = (x - m) * jax.lax.rsqrt(((x - m) ** 2).mean(-1, keepdims=True) + 1e-5)
        q, k, v = (z.reshape(b, t, heads, d // heads).transpose(0, 2, 1, 3)
                   for z in jnp.split(h @ p["qkv"], 3, axis=-1))
        att = jax.nn.softmax(q @ k.transpose(0, 1, 3, 2) / np.sqrt(d // heads), axis=-1)
        return x + (att @ v).transpose(0, 2, 1, 3).reshape(b, t, d) @ p["proj"]

    p = {"qkv": _w(d, 3 * d), "proj": _w(d, d)}
    argsets = [(p, _f32(b, t, d)) for b, t in ((2, 5), (3, 7), (1, 4))]
    _one_compilation(block, [None, "b, t, 32"], argsets, tol=1e-4)


# ---------------------------------------------------------------------------
# Primitives with a symbolic dim
# ---------------------------------------------------------------------------

PRIMS = {
    "elementwise": lambda x, y: (x * y + 1, jnp.exp(x) - jnp.tanh(y), jnp.where(x > y, x, y),
                                 (x * 10).astype(jnp.int32) // 3),
    "broadcast": lambda x, y: (x + y[:, :1], x * y[0], x + jnp.ones((1, 6), np.float32)),
    "reshape": lambda x, y: (x.reshape(-1), x.reshape(-1, 2, 3).sum(1), x.reshape(-1, 3),
                             jnp.expand_dims(x, 1), x.T.reshape(6, -1)),
    "reduce": lambda x, y: (x.sum(1), x.max(1), jnp.argmax(x, 1), x.sum(), x.max(0),
                            x.mean(0), x.mean(1, keepdims=True)),
    "softmax": lambda x, y: (jax.nn.softmax(x, -1), jax.nn.log_softmax(y, -1),
                             jax.nn.softmax(x, 0)),
    "concat_split": lambda x, y: (jnp.concatenate([x, y], 1), jnp.concatenate([x, y], 0),
                                  *jnp.split(x, 3, axis=1), jnp.stack([x, y], 1)),
    "iota_slice": lambda x, y: (x[:, 2:5], x[:, ::2], x[1:], x[:-1], jnp.arange(x.shape[0]),
                                jax.lax.broadcasted_iota(jnp.int32, (x.shape[0], 3), 1),
                                jnp.pad(x, ((1, 2), (0, 1)))),
    "dot": lambda x, y: (x @ y.T, x.T @ y, jnp.einsum("bi,bi->b", x, y)),
    "dynamic_slice": lambda x, y: (
        jax.lax.dynamic_slice(x, (0, jnp.argmax(y[0])), (x.shape[0], 2)),
        jax.lax.dynamic_slice(x, (jnp.argmax(y[:, 0]), 1), (1, 4)),
        jax.lax.dynamic_slice(x, (x.shape[0] + 5, 2), (1, 3))),
    "index_windows": lambda x, y: (x[-1], y[0], x[3:4], x[2:x.shape[0] - 1], x[:, 1:3][-2:]),
}


@pytest.mark.parametrize("name", sorted(PRIMS))
def test_primitives_symbolic_rows(name):
    _one_compilation(PRIMS[name], "b, 6", [(_f32(b, 6), _f32(b, 6)) for b in BATCHES])


@pytest.mark.parametrize("text, env", [
    ("b", {"b": 7}),
    ("4*b + 3", {"b": 5}),
    ("b - 1", {"b": 1}),
    ("2*b*c + c^2 - 3", {"b": 4, "c": 3}),
    ("floordiv(b, 3) + mod(c, 4)", {"b": 11, "c": 9}),
    ("max(b, 4) * min(c, 2)", {"b": 3, "c": 6}),
    ("max(b - 5, 0) + min(0, c - 2)", {"b": 3, "c": 1}),
])
def test_graph_dim_matches_jax_expressions(text, env):
    (d,) = export.symbolic_shape(text)
    got = graph_dim(d)
    assert isinstance(got, SymExpr) and got.symbols() <= set(env)
    fns = {"floordiv": lambda a, b: a // b, "mod": lambda a, b: a % b, "max": max, "min": min}
    assert dim_eval(got, env) == eval(text.replace("^", "**"), fns, dict(env))  # noqa: S307
    assert graph_dim(export.symbolic_shape("b")[0]) == Sym("b")
    assert graph_dim(8) == 8


# ---------------------------------------------------------------------------
# Calls that do not fit, unsupported forms, unchanged default
# ---------------------------------------------------------------------------


def test_shapes_that_do_not_fit_raise_value_error():
    f = lj.jit(lambda x, y, w: (x + y) @ w, polymorphic_shapes=["b, 16", "b, 16", None])
    w = _w(16, 4)
    np.testing.assert_allclose(f(_f32(4, 16) * 0, _f32(4, 16) * 0, w), np.zeros((4, 4)))
    with pytest.raises(ValueError, match=r"argument y dim 0 has size 5.*'b'.*4 from argument x "
                                         r"dim 0"):
        f(_f32(4, 16), _f32(5, 16), w)
    with pytest.raises(ValueError, match=r"argument x dim 1 has size 13.*declares 16"):
        f(_f32(4, 13), _f32(4, 16), w)
    with pytest.raises(ValueError, match=r"argument y has shape \(4, 16, 1\) of rank 3"):
        f(_f32(4, 16), _f32(4, 16, 1), w)
    with pytest.raises(ValueError, match=r"'b' would be 0 .*>= 1"):
        f(_f32(0, 16), _f32(0, 16), w)
    with pytest.raises(ValueError, match="polymorphic_shapes has 3 entries"):
        f(_f32(4, 16), _f32(4, 16), w, w)
    with pytest.raises(ValueError, match=r"argument w dim 1 has size 4.*declares 5"):
        lj.jit(lambda x, w: x @ w, polymorphic_shapes=["b, 16", "16, 5"])(_f32(2, 16), w)

    g = lj.jit(embedding_bag, polymorphic_shapes=[None, "4*b"])
    with pytest.raises(ValueError, match=r"argument idx dim 0 has size 10.*'4\*b'"):
        g(_w(50, 8), np.zeros(10, np.int32))
    with pytest.raises(ValueError, match="cannot solve 'b'"):
        lj.jit(lambda x: x + 1, polymorphic_shapes="b*b")(_f32(4))
    with pytest.raises(ValueError, match=r"argument x of shape \(4,\).*'b \+'"):
        lj.jit(lambda x: x + 1, polymorphic_shapes="b +")(_f32(4))
    with pytest.raises(ValueError, match="argument s is static"):
        lj.jit(lambda x, s: x * s, polymorphic_shapes=["b", "b"], static_argnums=(1,))(
            _f32(4), 2.0)
    with pytest.raises(TypeError, match="polymorphic_shapes must be"):
        lj.jit(lambda x: x, polymorphic_shapes=3)


def test_static_argnums_and_placeholders():
    traces = []

    def fn(x, s, t, u):
        traces.append(1)
        return x * s + t.sum(0) + u.sum(1, keepdims=True)

    f = lj.jit(fn, polymorphic_shapes=["b, c", None, "_, c", "b, ..."], static_argnums=(1,))
    for b, c, rows in ((2, 3, 6), (5, 3, 6), (4, 7, 6), (4, 7, 2)):
        x, t, u = _f32(b, c), _f32(rows, c), _f32(b, 2)
        np.testing.assert_allclose(f(x, 2.0, t, u), x * 2 + t.sum(0) + u.sum(1, keepdims=True),
                                   rtol=1e-5, atol=1e-5)
    # ``_`` and ``...`` take the call's static sizes: 2 rows of t is a new signature.
    assert len(traces) == 2


def _point_gather(x, i, j):
    return x[i, j] * 2


def test_symbolic_dim_unsupported_raises_or_falls_back():
    x = _f32(6, 16)
    i, j = np.array([0, 3, 5], np.int32), np.array([1, 15, 3], np.int32)
    poly = ["b, 16", "n", "n"]
    with pytest.raises(lj.UnsupportedPrimitive,
                       match=r"'gather'.*dim 0 of the operand.*is symbolic \(b\)"):
        lj.jit(_point_gather, polymorphic_shapes=poly)(x, i, j)
    f = lj.jit(_point_gather, polymorphic_shapes=poly, fallback=True)
    with pytest.warns(UserWarning, match="symbolic"):
        got = f(x, i, j)
    np.testing.assert_allclose(got, x[i, j] * 2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the fallback is chosen once per signature
        np.testing.assert_allclose(f(x[:4], i[:2], j[:2]), x[i[:2], j[:2]] * 2)
    # The same function with static shapes is compiled.
    f = lj.jit(_point_gather)
    np.testing.assert_allclose(f(x, i, j), x[i, j] * 2)
    assert f.compiled_for(x, i, j) is not None


def test_without_polymorphic_shapes_each_shape_compiles():
    compiler.clear_memory_cache()
    compiler.reset_stats()
    f = lj.jit(lambda x: jnp.tanh(x).sum(1) * 3)
    for b in BATCHES:
        x = _f32(b, 6)
        np.testing.assert_allclose(f(x), np.tanh(x).sum(1) * 3, rtol=1e-5, atol=1e-5)
        assert f.compiled_for(x).kernel.symbols == []
    assert compiler.stats().compilations == len(BATCHES)
