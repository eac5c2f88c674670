"""A JAX function's kernel generated for an AArch64 server CPU and run there
(under qemu-user on an x86-64 machine): the same results as this machine's.

Needs the cross tools: ./scripts/setup.sh --cross (qemu-user, gcc-aarch64-linux-gnu).
"""

import jax.numpy as jnp
import numpy as np

import llvmaccel.jax
from llvmaccel import crossrun


def mlp(x, w1, w2):
    return jnp.tanh(x @ w1) @ w2


rng = np.random.default_rng(0)
x = rng.standard_normal((64, 256), dtype=np.float32)
w1 = rng.standard_normal((256, 128), dtype=np.float32)
w2 = rng.standard_normal((128, 10), dtype=np.float32)

f = llvmaccel.jax.jit(mlp)
here = np.asarray(f(x, w1, w2))
graph = f.compiled_for(x, w1, w2).graph                      # the lowered graph
program = crossrun.compile_for(graph, "aarch64", "neoverse-v1")  # LLVM's facts for that CPU
(there,) = program.run(x, w1, w2)                             # under qemu-aarch64
print(f"{program.target.cpu}: {program.target.vector_bits}-bit vectors,",
      "same results" if np.allclose(there, here, rtol=1e-4, atol=1e-4) else "DIFFERENT")
