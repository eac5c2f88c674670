"""jax.grad, jax.vmap and jax.jit composed over llvmaccel.jax.jit and
llvmaccel.jax.ffi.ffi_function (llvmaccel.jax.transforms)."""

from __future__ import annotations

import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402

import llvmaccel.jax as lj  # noqa: E402
import llvmaccel.jax.ffi as lffi  # noqa: E402

RNG = np.random.default_rng(3)


@pytest.fixture(autouse=True)
def _cache_dir(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("LLVMACCEL_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "cache"))


@pytest.fixture
def compiles(monkeypatch):
    """The graphs llvmaccel compiles during the test (their output shapes)."""
    seen: list[tuple] = []
    real = lj.compile_graph

    def spy(g, *args, **kwargs):
        seen.append(tuple(tuple(o.shape) for o in g.outputs))
        return real(g, *args, **kwargs)

    monkeypatch.setattr(lj, "compile_graph", spy)
    return seen


def _rand(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def _close(got, want, rtol=2e-5, atol=2e-5):
    jax.tree_util.tree_map(
        lambda a, b: np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=rtol,
                                                atol=atol), got, want)


def _mlp_loss(params, x):
    w1, w2 = params["w1"], params["w2"]
    h = jnp.tanh(x @ w1)
    return jnp.mean((h @ w2) ** 2)


PARAMS = {"w1": _rand(8, 16) * 0.3, "w2": _rand(16, 4) * 0.3}
X = _rand(6, 8)


def test_grad_of_a_pytree_loss_runs_a_compiled_backward(compiles):
    loss = lj.jit(_mlp_loss)
    got = jax.grad(loss)(PARAMS, X)
    _close(got, jax.grad(_mlp_loss)(PARAMS, X), rtol=1e-4, atol=1e-6)
    # The forward kernel (a scalar) and the backward kernel (the gradients
    # of the float inputs: w1, w2 and x) were both compiled by llvmaccel.
    assert compiles[0] == ((),)
    assert sorted(compiles[1]) == [(6, 8), (8, 16), (16, 4)]
    # The value and the second call reuse both compilations.
    n = len(compiles)
    value, _ = jax.value_and_grad(loss)(PARAMS, X)
    _close(value, _mlp_loss(PARAMS, X), rtol=1e-5)
    assert len(compiles) == n


def test_jit_over_grad_over_llvmaccel():
    loss = lj.jit(_mlp_loss)
    step = jax.jit(lambda p, x: jax.tree_util.tree_map(
        lambda a, g: a - 0.1 * g, p, jax.grad(loss)(p, x)))
    want = jax.jit(lambda p, x: jax.tree_util.tree_map(
        lambda a, g: a - 0.1 * g, p, jax.grad(_mlp_loss)(p, x)))
    _close(step(PARAMS, X), want(PARAMS, X), rtol=1e-4, atol=1e-6)
    # The step uses only the gradients: the forward kernel's value is dead
    # (its residuals are the inputs), so one custom call remains, the
    # backward; with the value used too, both.
    assert step.lower(PARAMS, X).as_text().count("custom_call @llvmaccel_kernel") == 1
    both = jax.jit(jax.value_and_grad(loss))
    assert both.lower(PARAMS, X).as_text().count("custom_call @llvmaccel_kernel") == 2
    _close(both(PARAMS, X), jax.value_and_grad(_mlp_loss)(PARAMS, X), rtol=1e-4, atol=1e-6)


def test_vmap_compiles_one_batched_kernel(compiles):
    f = lj.jit(lambda x, w: jax.nn.relu(x @ w).sum(-1))
    w = _rand(8, 5)
    xs = _rand(7, 3, 8)
    got = jax.vmap(f, in_axes=(0, None))(xs, w)
    _close(got, jax.vmap(lambda x, w: jax.nn.relu(x @ w).sum(-1), in_axes=(0, None))(xs, w),
           rtol=1e-5, atol=1e-5)
    # One kernel over the whole batch (the per-element one is compiled too,
    # when custom_vmap traces the unbatched call, but does not run).
    assert ((7, 3),) in compiles
    text = jax.jit(jax.vmap(f, in_axes=(0, None))).lower(xs, w).as_text()
    assert text.count("custom_call @llvmaccel_kernel") == 1
    assert "(tensor<7x3x8xf32>, tensor<8x5xf32>) -> tensor<7x3xf32>" in text
    # Batched along another axis of both arguments, and under jax.jit.
    ws = _rand(8, 5, 3)
    got = jax.jit(jax.vmap(f, in_axes=(1, 2)))(xs, ws)
    _close(got, jax.vmap(lambda x, w: jax.nn.relu(x @ w).sum(-1), in_axes=(1, 2))(xs, ws),
           rtol=1e-5, atol=1e-5)


def test_vmap_of_grad_and_grad_of_grad():
    f = lj.jit(lambda x, w: jnp.sin(x @ w).sum())
    w = _rand(8, 3)
    xs = _rand(4, 2, 8)
    ref = jax.vmap(jax.grad(lambda x, w: jnp.sin(x @ w).sum()), in_axes=(0, None))
    _close(jax.vmap(jax.grad(f), in_axes=(0, None))(xs, w), ref(xs, w), rtol=1e-4, atol=1e-5)

    g = lj.jit(lambda x: (jnp.sin(x) * x).sum())

    def second(s):
        return jax.grad(lambda t: g(t * jnp.ones(5, jnp.float32)))(s)

    def second_ref(s):
        return jax.grad(lambda t: (jnp.sin(t * jnp.ones(5)) * t * jnp.ones(5)).sum())(s)

    _close(jax.grad(second)(0.7), jax.grad(second_ref)(0.7), rtol=1e-4, atol=1e-5)
    _close(jax.jacrev(g)(X[0]), jax.jacrev(lambda x: (jnp.sin(x) * x).sum())(X[0]), rtol=1e-5)


def test_integer_inputs_and_outputs():
    def f(x, n):
        return (x * n.astype(jnp.float32)).sum(), jnp.argmax(x, axis=-1)

    fast = lj.jit(f)
    x = _rand(3, 4)
    n = RNG.integers(-3, 4, size=(3, 4)).astype(np.int32)
    (gx, aux) = jax.grad(lambda x, n: fast(x, n)[0], has_aux=False)(x, n), None
    _close(gx, n.astype(np.float32))
    grads = jax.grad(lambda x, n: fast(x, n)[0], argnums=(0, 1), allow_int=True)(x, n)
    assert grads[1].dtype == jax.dtypes.float0 and grads[1].shape == n.shape
    val, aux = jax.grad(lambda x: fast(x, n), has_aux=True)(x)
    _close(val, n.astype(np.float32))
    np.testing.assert_array_equal(np.asarray(aux), np.argmax(x, axis=-1))


def test_forward_mode_is_refused_with_jaxs_error():
    f = lj.jit(lambda x: jnp.sin(x))
    with pytest.raises(TypeError, match="forward-mode"):
        jax.jvp(f, (X,), (X,))


def test_ffi_function_is_differentiable_inside_jit(compiles):
    fast = lffi.ffi_function(_mlp_loss)
    got = jax.jit(jax.grad(fast))(PARAMS, X)
    _close(got, jax.grad(_mlp_loss)(PARAMS, X), rtol=1e-4, atol=1e-6)
    assert len(compiles) == 2


@pytest.mark.parametrize("method", ["compile", "sequential"])
def test_ffi_function_vmap_methods(method, compiles):
    fast = lffi.ffi_function(lambda x: jnp.tanh(x).sum(0), vmap_method=method)
    xs = _rand(5, 3, 4)
    _close(jax.vmap(fast)(xs), np.tanh(xs).sum(1), rtol=1e-5)
    # "compile" runs the batched function's kernel once; "sequential" the
    # per-element kernel once per batch element (a loop around the call).
    text = jax.jit(jax.vmap(fast)).lower(xs).as_text()
    assert text.count("custom_call @llvmaccel_kernel") == 1
    batched = "(tensor<5x3x4xf32>) -> tensor<5x4xf32>" in text
    assert batched == (method == "compile")
    assert ((5, 4),) in compiles if method == "compile" else compiles == [((4,),)]


def test_ffi_function_rejects_unknown_vmap_method():
    with pytest.raises(ValueError, match="vmap_method must be one of"):
        lffi.ffi_function(lambda x: x, vmap_method="parallel")


def test_gradients_through_the_newer_primitives():
    """jax.grad and vmap over the primitives lowered last: the composite
    math, cumlogsumexp, interior padding (associative_scan), conv_transpose
    (lhs_dilation, and its transpose: a convolution of the cotangent) and
    take_along_axis's batched gather and scatter, against jax.jit."""
    from jax import lax

    rng = np.random.default_rng(8)
    x = (rng.standard_normal((4, 6)) * 0.5).astype(np.float32)
    img = rng.standard_normal((1, 2, 5, 5)).astype(np.float32)
    w = rng.standard_normal((3, 2, 3, 3)).astype(np.float32)
    dn = ("NCHW", "OIHW", "NCHW")
    cases = [
        (jax.grad(lambda x: (jnp.sinh(x) + jnp.arcsin(x * 0.5) + jnp.cbrt(x + 3)
                             + jnp.arctanh(x * 0.3)).sum()), (x,)),
        (jax.grad(lambda x: lax.cumlogsumexp(x, axis=1).sum()), (x,)),
        (jax.grad(lambda x: lax.associative_scan(jnp.add, x, axis=1).sum()), (x,)),
        (jax.grad(lambda x, w: (lax.conv_transpose(x, w, (2, 2), "SAME",
                                                   dimension_numbers=dn) ** 2).sum(),
                  argnums=(0, 1)), (img, w)),
        (jax.vmap(lambda x, w: lax.conv_transpose(x[None], w, (2, 2), "VALID",
                                                  dimension_numbers=dn)[0],
                  in_axes=(0, None)), (np.concatenate([img] * 3), w)),
        (jax.grad(lambda x: jnp.take_along_axis(x, jnp.argsort(x, axis=1)[:, :2],
                                                axis=1).sum()), (x,)),
    ]
    for fn, args in cases:
        for got, want in zip(jax.tree.leaves(lj.jit(fn, fallback=False)(*args)),
                             jax.tree.leaves(jax.jit(fn)(*args)), strict=True):
            np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-4,
                                       atol=1e-4)
