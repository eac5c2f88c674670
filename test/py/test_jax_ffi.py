"""llvmaccel kernels inside jax.jit through jax.ffi (llvmaccel.jax.ffi)."""

from __future__ import annotations

import threading

import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402

import llvmaccel.jax.ffi as lffi  # noqa: E402
from llvmaccel import _core, compiler  # noqa: E402
from llvmaccel.graph import DType, Graph, Sym  # noqa: E402
from llvmaccel.jax import UnsupportedPrimitive  # noqa: E402

RNG = np.random.default_rng(0)


@pytest.fixture(autouse=True)
def _cache_dir(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("LLVMACCEL_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "cache"))


def _rand(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def _close(got, want, rtol=2e-5, atol=2e-5):
    jax.tree_util.tree_map(
        lambda a, b: np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=rtol,
                                                atol=atol), got, want)


def _custom_calls(fn, *args):
    return jax.jit(fn).lower(*args).as_text().count("custom_call @llvmaccel_kernel")


def _elementwise(x, y):
    return jnp.tanh(x) * y + 1.0, jnp.maximum(x, y) - jnp.exp(-jnp.abs(y))


def _mlp(x, w1, b1, w2):
    h = jax.nn.relu(x @ w1 + b1)
    return {"logits": h @ w2, "probs": jax.nn.softmax(h @ w2, axis=-1)}


def test_handler_is_exported():
    assert _core.xla_ffi_handler_address() > 0
    assert _core.xla_ffi_api_version() == (0, 3)
    lffi.register_target()
    lffi.register_target()  # idempotent


def test_elementwise_inside_jit_repeatedly():
    fast = lffi.ffi_function(_elementwise)

    @jax.jit
    def g(x, y):
        a, b = fast(x, y)
        return a * 2, b + a

    @jax.jit
    def ref(x, y):
        a, b = _elementwise(x, y)
        return a * 2, b + a

    assert _custom_calls(g, _rand(6, 10), _rand(6, 10)) == 1
    for _ in range(5):
        x, y = _rand(6, 10), _rand(6, 10)
        got = g(x, y)
        assert all(isinstance(o, jax.Array) for o in got)
        _close(got, ref(x, y))


def test_mlp_with_matmuls_and_pytree_outputs():
    fast = lffi.ffi_function(_mlp)
    x, w1, b1, w2 = _rand(16, 32), _rand(32, 64) * 0.1, _rand(64), _rand(64, 8) * 0.1

    @jax.jit
    def g(x, w1, b1, w2):
        out = fast(x, w1, b1, w2)
        return out["logits"].sum(), out["probs"]

    assert _custom_calls(g, x, w1, b1, w2) == 1
    for _ in range(3):
        got = g(x, w1, b1, w2)
        want = _mlp(x, w1, b1, w2)
        _close(got, (want["logits"].sum(), want["probs"]), rtol=1e-4, atol=1e-4)
        x = _rand(16, 32)
    cg = fast.compiled_for(x, w1, b1, w2)
    assert cg is not None and "matmul" in {n.op for n in cg.graph.nodes}


def test_static_shapes_recompile():
    fast = lffi.ffi_function(_elementwise)
    g = jax.jit(lambda x, y: fast(x, y)[0])
    kernels = set()
    for shape in ((4, 8), (3, 5), (128,), (4, 8)):
        x, y = _rand(*shape), _rand(*shape)
        _close(g(x, y), _elementwise(x, y)[0])
        kernels.add(fast.kernel_for(x, y).kernel_id)
    assert len(kernels) == 3
    assert fast.kernel_for(_rand(3, 5), _rand(3, 5)).input_specs == [((3, 5), "float32")] * 2


def test_constants_static_args_and_eager_calls():
    table = _rand(7)

    def f(x, scale):
        return x * jnp.asarray(table) * scale  # table is a graph constant

    fast = lffi.ffi_function(f, static_argnums=(1,))
    x = _rand(5, 7)
    _close(jax.jit(lambda x: fast(x, 3.0))(x), x * table * 3.0)
    _close(fast(x, 2.0), x * table * 2.0)  # outside jit: an eager custom call
    assert fast.compiled_for(x, 2.0).graph.constants


def test_dtypes_scalars_empty_arrays_and_passthrough():
    fast = lffi.ffi_function(lambda x, y: (x > y, (x * 3).astype(jnp.int32), x))
    g = jax.jit(fast)
    for shape in ((0, 5), (3, 5), ()):
        x = np.asarray(RNG.standard_normal(shape), np.float32)
        y = np.asarray(RNG.standard_normal(shape), np.float32)
        gt, scaled, same = g(x, y)
        assert gt.dtype == jnp.bool_ and scaled.dtype == jnp.int32 and gt.shape == shape
        np.testing.assert_array_equal(gt, x > y)
        np.testing.assert_array_equal(scaled, (x * 3).astype(np.int32))
        np.testing.assert_array_equal(same, x)
    # A Python scalar argument becomes a float32 array (JAX's default dtype).
    scale = lffi.ffi_function(lambda x, s: x * s)
    _close(jax.jit(scale)(np.ones(3, np.float32), 2.0), np.full(3, 2.0))


def test_inside_control_flow_and_vmap():
    fast = lffi.ffi_function(lambda x, w: jnp.tanh(x @ w))
    w = _rand(8, 8) * 0.3
    x = _rand(4, 8)

    @jax.jit
    def loop(x, w):
        return jax.lax.fori_loop(0, 5, lambda i, h: fast(h, w), x)

    want = x
    for _ in range(5):
        want = np.tanh(want @ w)
    _close(loop(x, w), want, rtol=1e-4, atol=1e-5)

    xs = _rand(3, 4, 8)
    _close(jax.jit(jax.vmap(fast, in_axes=(0, None)))(xs, w), np.tanh(xs @ w),
           rtol=1e-4, atol=1e-5)


def test_threads():
    fast = lffi.ffi_function(_elementwise)
    g = jax.jit(lambda x, y: fast(x, y))
    x, y = _rand(64, 64), _rand(64, 64)
    want = _elementwise(x, y)
    errors = []

    def work():
        try:
            for _ in range(20):
                _close(g(x, y), want)
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


def _checked_take():
    g = Graph()
    x = g.input("x", (5, 3), DType.f32)
    i = g.input("i", (Sym("n"),), DType.i32)
    g.set_outputs([g.take(x, i, 0, "check"), g.unary("exp", x)])
    return compiler.compile_graph(g)


def test_index_error_becomes_python_exception():
    c = _checked_take()
    f = jax.jit(lambda t, idx: lffi.call(c, t, idx)[0] * 2)
    xs = _rand(5, 3)
    ok = np.array([0, 4, 2], np.int32)
    _close(f(xs, ok), xs[ok] * 2)
    with pytest.raises(jax.errors.JaxRuntimeError, match="IndexError: index out of range"):
        np.asarray(f(xs, np.array([0, 5, 1, 1], np.int32)))
    with pytest.raises(jax.errors.JaxRuntimeError, match="OUT_OF_RANGE"):
        np.asarray(f(xs, np.array([-1], np.int32)))
    _close(f(xs, ok), xs[ok] * 2)  # still usable afterwards
    # Symbolic sizes: one kernel per bound value.
    k1 = lffi.ffi_kernel(c, xs, ok)
    k2 = lffi.ffi_kernel(c, xs, np.zeros(7, np.int32))
    assert k1.symbols == {"n": 3} and k2.symbols == {"n": 7} and k1.kernel_id != k2.kernel_id
    assert lffi.ffi_kernel(c, jax.ShapeDtypeStruct((5, 3), jnp.float32),
                           jax.ShapeDtypeStruct((3,), jnp.int32)) is k1


def test_trace_time_misuse_raises_clear_errors():
    c = _checked_take()
    xs = _rand(5, 3)
    k = lffi.ffi_kernel(c, xs, np.zeros(3, np.int32))
    with pytest.raises(TypeError, match="takes 2 arrays"):
        k(xs)
    with pytest.raises(TypeError, match="expected dtype int32"):
        k(xs, np.zeros(3, np.float32))
    with pytest.raises(ValueError, match=r"expected shape \(3,\)"):
        k(xs, np.zeros(4, np.int32))
    with pytest.raises(TypeError, match="expected an array"):
        k(xs, [0, 1, 2])
    with pytest.raises(TypeError, match="expected dtype int32"):
        lffi.call(c, xs, np.zeros(3, np.float32))
    with pytest.raises(ValueError, match="rank"):
        lffi.call(c, xs, np.zeros((3, 1), np.int32))
    with pytest.raises(TypeError, match="CompiledGraph"):
        lffi.ffi_kernel(object(), xs)
    with pytest.raises(ValueError, match="vmap_method"):
        lffi.ffi_function(_elementwise, vmap_method="broadcast_all")
    with pytest.raises(UnsupportedPrimitive):
        jax.jit(lffi.ffi_function(lambda x: jnp.linalg.inv(x)))(_rand(4, 4) + 4 * np.eye(4))
    with pytest.warns(UserWarning, match="jax.jit instead"):
        got = jax.jit(lffi.ffi_function(lambda x: jnp.linalg.inv(x), fallback=True))(
            np.eye(3, dtype=np.float32) * 2)
    _close(got, np.eye(3) / 2)
    # A raw kernel call knows no function to differentiate (ffi_function's
    # calls do: test_jax_transforms.py).
    kernel = lffi.ffi_kernel(lffi.ffi_function(_elementwise).compiled_for(xs, xs), xs, xs)
    with pytest.raises(Exception, match="cannot be differentiated"):
        jax.grad(lambda x: kernel(x, x)[0].sum())(xs)


def test_64_bit_kernels_need_x64():
    g = Graph()
    x = g.input("x", (4,), DType.i64)
    g.set_outputs([g.binary("add", x, x)])
    c = compiler.compile_graph(g)
    if jax.config.jax_enable_x64:
        pytest.skip("jax_enable_x64 is on")
    with pytest.raises(TypeError, match="jax_enable_x64"):
        lffi.call(c, np.arange(4, dtype=np.int64))


def test_handler_rejects_bad_calls_without_crashing():
    lffi.register_target()
    c = _checked_take()
    xs = _rand(5, 3)
    k = lffi.ffi_kernel(c, xs, np.zeros(3, np.int32))
    out = (jax.ShapeDtypeStruct((3, 3), jnp.float32), jax.ShapeDtypeStruct((5, 3), jnp.float32))

    def raw(*args, results=out, **attrs):
        return jax.ffi.ffi_call(lffi.TARGET_NAME, results)(*args, **attrs)

    ok = raw(xs, np.array([1, 2, 3], np.int32), kernel_id=np.int64(k.kernel_id), kernel_key=k.key)
    _close(ok[0], xs[[1, 2, 3]])
    cases = [
        ((xs,), {}, "needs the attributes kernel_id"),
        ((xs,), {"kernel_id": np.int64(10**9), "kernel_key": k.key}, "NOT_FOUND"),
        ((xs,), {"kernel_id": np.int64(k.kernel_id), "kernel_key": "forged"}, "NOT_FOUND"),
        ((xs,), {"kernel_id": np.int64(k.kernel_id), "kernel_key": k.key}, "1 arguments"),
        ((xs, np.zeros(4, np.int32)), {"kernel_id": np.int64(k.kernel_id), "kernel_key": k.key},
         r"argument 1: shape \(4,\), expected \(3,\)"),
        ((xs, np.zeros(3, np.float32)), {"kernel_id": np.int64(k.kernel_id), "kernel_key": k.key},
         "argument 1: element type float32, expected int32"),
        ((xs.T.copy(), np.zeros(3, np.int32)),
         {"kernel_id": np.int64(k.kernel_id), "kernel_key": k.key}, "argument 0: shape"),
    ]
    for args, attrs, message in cases:
        with pytest.raises(jax.errors.JaxRuntimeError, match=message):
            jax.block_until_ready(raw(*args, **attrs))
    with pytest.raises(jax.errors.JaxRuntimeError, match="result 1"):
        jax.block_until_ready(raw(xs, np.zeros(3, np.int32), kernel_id=np.int64(k.kernel_id),
                                  kernel_key=k.key, results=out[:1] + out[:1]))
