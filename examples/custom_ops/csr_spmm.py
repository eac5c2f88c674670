"""A CSR sparse-dense product declared once, used from PyTorch and JAX.

``csr_spmm(indptr, indices, values, x)`` is ``A @ x`` for the sparse matrix
``A`` in compressed sparse rows. The body is C, compiled by the clang of the
LLVM release llvmaccel uses; under ``torch.compile(backend="llvmaccel")`` and
``llvmaccel.jax.jit`` it is inlined into the generated module, where
accel-prefetch's CSR look-ahead prefetches the rows of ``x`` that later
nonzeros gather.

Run it: ``python examples/custom_ops/csr_spmm.py``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import torch

import llvmaccel
import llvmaccel.jax

SPMM_C = r"""
#include <stdint.h>

/* out[i, :] = sum over j in [indptr[i], indptr[i+1]) of values[j] * x[indices[j], :].
   Returns nonzero (and writes nothing more) on a malformed matrix. */
int32_t csr_spmm(const int64_t *indptr, const int64_t *indices, const float *values,
                 const float *x, float *out, int64_t m, int64_t nnz, int64_t n,
                 int64_t d) {
  if (indptr[0] != 0 || indptr[m] != nnz)
    return 1;
  for (int64_t i = 0; i < m; i++)
    if (indptr[i] > indptr[i + 1])
      return 1;
  for (int64_t j = 0; j < nnz; j++)
    if (indices[j] < 0 || indices[j] >= n)
      return 1;
  for (int64_t i = 0; i < m; i++) {
    float *o = out + i * d;
    for (int64_t k = 0; k < d; k++)
      o[k] = 0.0f;
    for (int64_t j = indptr[i]; j < indptr[i + 1]; j++) {
      const float *row = x + indices[j] * d;
      float v = values[j];
      for (int64_t k = 0; k < d; k++)
        o[k] += v * row[k];
    }
  }
  return 0;
}
"""


def reference(indptr, indices, values, x):
    """The same product in numpy."""
    out = np.zeros((len(indptr) - 1, x.shape[1]), np.float32)
    for i in range(len(indptr) - 1):
        lo, hi = indptr[i], indptr[i + 1]
        out[i] = (values[lo:hi, None] * x[indices[lo:hi]]).sum(0)
    return out


csr_spmm = llvmaccel.custom_op(
    "demo::csr_spmm",
    "(indptr: i64[m + 1], indices: i64[nnz], values: f32[nnz], x: f32[n, d]) -> f32[m, d]",
    SPMM_C, language="c", reference=reference,
    error="malformed CSR matrix (indptr not increasing from 0 to nnz, or a column "
          "index out of range)")


def random_graph(nodes: int, degree: int, seed: int = 0):
    """A random directed graph as CSR (indptr, indices, values), each row's
    columns sorted and distinct (as ``torch.sparse_csr_tensor`` wants)."""
    rng = np.random.default_rng(seed)
    counts = rng.integers(0, 2 * degree + 1, size=nodes)
    rows = np.repeat(np.arange(nodes, dtype=np.int64), counts)
    keys = np.unique(rows * nodes + rng.integers(0, nodes, size=len(rows)))
    indices = (keys % nodes).astype(np.int64)
    indptr = np.concatenate([[0], np.cumsum(np.bincount(keys // nodes, minlength=nodes))])
    values = rng.random(len(indices), dtype=np.float32)
    return indptr.astype(np.int64), indices, values


def main() -> None:
    indptr, indices, values = random_graph(2000, 8)
    rng = np.random.default_rng(1)
    h = rng.standard_normal((2000, 32), dtype=np.float32)
    w = rng.standard_normal((32, 16), dtype=np.float32) * 0.2

    # numpy, checked against the reference
    csr_spmm.check(indptr, indices, values, h, rtol=1e-4, atol=1e-4)

    # PyTorch: a graph convolution layer, relu(A @ (h @ W)), compiled
    class GraphConv(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.w = torch.nn.Parameter(torch.from_numpy(w))

        def forward(self, indptr, indices, values, h):
            return torch.relu(csr_spmm(indptr, indices, values, h @ self.w))

    layer = GraphConv().eval()
    args = [torch.from_numpy(a) for a in (indptr, indices, values, h)]
    with torch.no_grad():
        eager = layer(*args)
        compiled = torch.compile(layer, backend="llvmaccel")(*args)
    torch.testing.assert_close(compiled, eager, rtol=1e-4, atol=1e-4)

    # The README's lines: the op inside a compiled function, inlined.
    relu_spmm = torch.compile(lambda *a: torch.relu(csr_spmm(*a)), backend="llvmaccel")   # inlined
    relu_spmm_jax = llvmaccel.jax.jit(lambda *a: jax.nn.relu(csr_spmm(*a)))                    # inlined
    with torch.no_grad():
        torch.testing.assert_close(relu_spmm(*args), torch.relu(csr_spmm(*args)))
    with jax.enable_x64(True):
        np.testing.assert_allclose(np.asarray(relu_spmm_jax(indptr, indices, values, h)),
                                   np.maximum(reference(indptr, indices, values, h), 0),
                                   rtol=1e-4, atol=1e-4)

    # JAX: the same layer under llvmaccel.jax.jit
    @llvmaccel.jax.jit
    def graph_conv(indptr, indices, values, h, w):
        return jax.nn.relu(csr_spmm(indptr, indices, values, h @ w))

    with jax.enable_x64(True):  # int64 indices
        got = graph_conv(indptr, indices, values, h, w)
        want = jax.jit(lambda *a: jax.nn.relu(csr_spmm(*a[:3], a[3] @ a[4])))(
            indptr, indices, values, jnp.asarray(h), jnp.asarray(w))
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-4, atol=1e-4)
    print(f"csr_spmm: numpy, torch.compile and llvmaccel.jax.jit agree on "
          f"{len(indices)} nonzeros")


if __name__ == "__main__":
    main()
