"""A segment sum declared once in LLVM IR, used from PyTorch and JAX.

``segment_sum(data, segment_ids, num_segments)`` adds the rows of ``data``
into ``num_segments`` rows by ``segment_ids`` (as ``jax.ops.segment_sum`` and
``torch.zeros(...).index_add_(0, ids, data)`` do). The body is LLVM IR text
that returns nonzero when an id is out of range, which becomes a ValueError.

Run it: ``python examples/custom_ops/segment_sum.py``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import torch

import llvmaccel
import llvmaccel.jax

SEGMENT_SUM_IR = r"""
define i32 @segment_sum(ptr %data, ptr %ids, ptr %out, i64 %n, i64 %d, i64 %num) {
entry:
  %total = mul i64 %num, %d
  br label %zero
zero:                                   ; out[:] = 0
  %z = phi i64 [ 0, %entry ], [ %z.next, %zero.body ]
  %z.done = icmp eq i64 %z, %total
  br i1 %z.done, label %rows, label %zero.body
zero.body:
  %zp = getelementptr inbounds float, ptr %out, i64 %z
  store float 0.0, ptr %zp
  %z.next = add nuw i64 %z, 1
  br label %zero
rows:                                   ; for each row i: out[ids[i]] += data[i]
  %i = phi i64 [ 0, %zero ], [ %i.next, %cols.done ]
  %i.done = icmp eq i64 %i, %n
  br i1 %i.done, label %ok, label %row
row:
  %idp = getelementptr inbounds i64, ptr %ids, i64 %i
  %id = load i64, ptr %idp
  %bad = icmp uge i64 %id, %num
  br i1 %bad, label %fail, label %cols.start
cols.start:
  %src = mul i64 %i, %d
  %dst = mul i64 %id, %d
  br label %cols
cols:
  %k = phi i64 [ 0, %cols.start ], [ %k.next, %col ]
  %k.done = icmp eq i64 %k, %d
  br i1 %k.done, label %cols.done, label %col
col:
  %sk = add i64 %src, %k
  %dk = add i64 %dst, %k
  %sp = getelementptr inbounds float, ptr %data, i64 %sk
  %dp = getelementptr inbounds float, ptr %out, i64 %dk
  %sv = load float, ptr %sp
  %dv = load float, ptr %dp
  %sum = fadd float %dv, %sv
  store float %sum, ptr %dp
  %k.next = add nuw i64 %k, 1
  br label %cols
cols.done:
  %i.next = add nuw i64 %i, 1
  br label %rows
fail:
  ret i32 1
ok:
  ret i32 0
}
"""


def reference(data, ids, num_segments):
    """The same sum in numpy."""
    out = np.zeros((num_segments, data.shape[1]), data.dtype)
    np.add.at(out, ids, data)
    return out


segment_sum = llvmaccel.custom_op(
    "demo::segment_sum",
    "(data: f32[n, d], segment_ids: i64[n], num_segments: int) -> f32[num_segments, d]",
    SEGMENT_SUM_IR, reference=reference, error="a segment id is out of range")


def main() -> None:
    rng = np.random.default_rng(0)
    data = rng.standard_normal((1000, 16), dtype=np.float32)
    ids = rng.integers(0, 50, size=1000).astype(np.int64)
    segment_sum.check(data, ids, 50, rtol=1e-4, atol=1e-4)

    # PyTorch: mean-pooling of node features per graph, compiled
    def pool(x, ids):
        return segment_sum(x * 2.0, ids, 50).tanh()

    tx, tids = torch.from_numpy(data), torch.from_numpy(ids)
    eager = pool(tx, tids)
    compiled = torch.compile(pool, backend="llvmaccel")(tx, tids)
    torch.testing.assert_close(compiled, eager, rtol=1e-4, atol=1e-4)
    want = torch.zeros(50, 16).index_add_(0, tids, tx * 2.0).tanh()
    torch.testing.assert_close(eager, want, rtol=1e-4, atol=1e-4)

    # JAX: llvmaccel.jax.jit (inline) and jax.jit (a custom call)
    with jax.enable_x64(True):  # int64 ids
        f = llvmaccel.jax.jit(lambda x, ids: jnp.tanh(segment_sum(x * 2.0, ids, 50)))
        g = jax.jit(lambda x, ids: jnp.tanh(segment_sum(x * 2.0, ids, 50)))
        ref = jnp.tanh(jax.ops.segment_sum(data * 2.0, ids, 50))
        np.testing.assert_allclose(np.asarray(f(data, ids)), ref, rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(np.asarray(g(data, ids)), ref, rtol=1e-4, atol=1e-4)
    print("segment_sum: numpy, torch.compile, llvmaccel.jax.jit and jax.jit agree")


if __name__ == "__main__":
    main()
