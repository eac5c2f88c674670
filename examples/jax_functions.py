"""The README's JAX examples, run as written from the repository's root
(test/py/test_examples.py runs it): llvmaccel.jax.jit on an MLP, symbolic
batch sizes, an XLA custom call inside jax.jit, and grad and vmap."""

import jax
import jax.numpy as jnp
import numpy as np
import llvmaccel.jax

rng = np.random.default_rng(0)
w1 = rng.standard_normal((16, 32), dtype=np.float32)
w2 = rng.standard_normal((32, 4), dtype=np.float32)


@llvmaccel.jax.jit                      # or llvmaccel.jax.jit(f, fallback=True, pipeline=...)
def mlp(x, w1, w2):
    return jax.nn.log_softmax(jax.nn.relu(x @ w1) @ w2)

y = mlp(np.ones((8, 16), np.float32), w1, w2)   # numpy or jax arrays in, jax.Array out

np.testing.assert_allclose(
    y, jax.nn.log_softmax(jax.nn.relu(np.ones((8, 16), np.float32) @ w1) @ w2),
    rtol=1e-4, atol=1e-4)

# Symbolic sizes: one compilation for every batch size.
x8 = rng.standard_normal((8, 16), dtype=np.float32)
x32 = rng.standard_normal((32, 16), dtype=np.float32)


@llvmaccel.jax.jit(polymorphic_shapes=["b, 16", None, None])
def mlp(x, w1, w2):
    return jax.nn.relu(x @ w1) @ w2

mlp(x8, w1, w2); mlp(x32, w1, w2)                 # one compilation

np.testing.assert_allclose(mlp(x32, w1, w2), jax.nn.relu(x32 @ w1) @ w2, rtol=1e-4, atol=1e-4)


# An llvmaccel kernel as one XLA custom call inside a jax.jit program.
def mlp_fn(x, w1, w2):
    return jax.nn.relu(x @ w1) @ w2


fast_mlp = llvmaccel.jax.ffi_function(mlp_fn)

@jax.jit
def step(x, w1, w2):
    return fast_mlp(x, w1, w2) * 2                # one custom call to llvmaccel code

np.testing.assert_allclose(step(x8, w1, w2), 2 * mlp_fn(x8, w1, w2), rtol=1e-4, atol=1e-4)

# grad and vmap over an llvmaccel kernel.
params = {"w": jnp.asarray(w1)}
x = x8
xs = rng.standard_normal((3, 8, 16), dtype=np.float32)
loss = llvmaccel.jax.jit(lambda p, x: jnp.mean(jnp.tanh(x @ p["w"]) ** 2))
grads = jax.jit(jax.grad(loss))(params, x)        # forward and backward kernels
ys = jax.vmap(loss, in_axes=(None, 0))(params, xs)  # one batched kernel

want = jax.grad(lambda p, x: jnp.mean(jnp.tanh(x @ p["w"]) ** 2))(params, x)
np.testing.assert_allclose(grads["w"], want["w"], rtol=1e-3, atol=1e-5)
assert ys.shape == (3,)
# Control flow: lax.scan (and fori_loop, while_loop, cond) as real loops.
@llvmaccel.jax.jit
def rnn(h0, xs, w, u, b):
    return jax.lax.scan(lambda h, x: (jnp.tanh(x @ w + h @ u + b),) * 2, h0, xs)


@jax.jit
def rnn_reference(h0, xs, w, u, b):
    return jax.lax.scan(lambda h, x: (jnp.tanh(x @ w + h @ u + b),) * 2, h0, xs)


h0 = np.zeros((2, 8), np.float32)
seq = rng.standard_normal((5, 2, 4), dtype=np.float32)
w, u, b = (rng.standard_normal(s, dtype=np.float32) for s in ((4, 8), (8, 8), (8,)))
for got, want in zip(rnn(h0, seq, w, u, b), rnn_reference(h0, seq, w, u, b), strict=True):
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
print("jax examples: ok")
