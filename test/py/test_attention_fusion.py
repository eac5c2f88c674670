"""Fused attention (llvmaccel.codegen.attention): scaled_dot_product_attention
and the explicit softmax(q @ k^T * scale) @ v pattern compiled to one loop
nest over query blocks, checked against eager PyTorch for many shapes,
masks and scales; the fused path is really taken (the recorded choice, the
temporaries), parallel results equal the serial kernel's bit for bit, and
the cases the fusion declines still compute the right thing unfused."""

from __future__ import annotations

import math
import warnings

import pytest
import torch
import torch.nn.functional as F

from llvmaccel import blas, compiler
from llvmaccel.codegen import generate, parallel
from llvmaccel.codegen.attention import find_attention, query_block
from llvmaccel.codegen.elementwise import F32_ACCUMULATION_MAX, SUM_LANES, accumulator_dtype
from llvmaccel.graph import DType, Graph
from llvmaccel.target import host


@pytest.fixture(autouse=True)
def _fresh():
    torch._dynamo.reset()
    compiler.clear_memory_cache()
    yield
    blas.set_num_threads(None)


@pytest.fixture(params=["rows", "online"])
def form(request, monkeypatch):
    """Each fused form: one pass over the keys, or online softmax."""
    monkeypatch.setenv("LLVMACCEL_ATTENTION_FORM", request.param)
    return request.param


def _run(fn, *args, dynamic: bool = False):
    """``fn(*args)`` compiled with llvmaccel, and the kernels it compiled."""
    c = torch.compile(fn, backend="llvmaccel", dynamic=dynamic)
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = c(*args)
    kernels = [g.kernel for g in compiler._cache.values()]  # noqa: SLF001
    return out, kernels


def _choices(kernels) -> list[str]:
    return [kind for k in kernels for _, kind, _ in k.attention]


def _qkv(b, h, lq, s, d, dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed)
    return tuple(torch.randn(b, h, n, d, generator=g).to(dtype) for n in (lq, s, s))


SHAPES = [
    # (batch, heads, L, S, head dim)
    (2, 4, 64, 64, 64),
    (1, 2, 48, 80, 16),  # L != S
    (2, 3, 100, 37, 80),  # odd sizes, head dim 80
    (1, 1, 1, 1, 16),  # one query, one key
    (1, 1, 7, 13, 5),  # tiny and odd
    (3, 2, 33, 130, 64),  # a partial last query block
    (1, 2, 300, 96, 16),  # several query blocks
]


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_sdpa_matches_eager(shape, form):
    q, k, v = _qkv(*shape)
    fn = F.scaled_dot_product_attention
    out, kernels = _run(fn, q, k, v)
    torch.testing.assert_close(out, fn(q, k, v), rtol=1e-5, atol=1e-5)
    assert _choices(kernels) == ["fused"]
    # The decomposition's sqrt(scale) factors of q and k are taken out of
    # the operands (no scaled copies of them), the scores multiplied instead.
    (graph,) = [g.graph for g in compiler._cache.values()]  # noqa: SLF001
    (plan,) = find_attention(graph, host())[0].values()
    assert plan.scale == pytest.approx(1 / math.sqrt(shape[-1]), rel=1e-6)
    assert plan.q_operand[0].op == plan.k_operand[0].op == "input"


@pytest.mark.parametrize("shape", [(2, 2, 40, 40, 16), (1, 3, 24, 56, 64), (1, 1, 96, 64, 80)],
                         ids=lambda s: "x".join(map(str, s)))
def test_causal(shape, form):
    q, k, v = _qkv(*shape)

    def fn(q, k, v):
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)

    out, kernels = _run(fn, q, k, v)
    torch.testing.assert_close(out, fn(q, k, v), rtol=1e-5, atol=1e-5)
    assert _choices(kernels) == ["fused"]


@pytest.mark.parametrize("kind", ["float", "bool", "float_bh", "bool_rows"])
def test_masks(kind, form):
    b, h, lq, s, d = 2, 3, 20, 36, 16
    q, k, v = _qkv(b, h, lq, s, d)
    g = torch.Generator().manual_seed(1)
    mask = {
        "float": torch.randn(lq, s, generator=g),
        "bool": torch.rand(lq, s, generator=g) > 0.3,
        "float_bh": torch.randn(b, h, lq, s, generator=g),
        # Whole rows masked out: the decomposition's where() gives them 0.
        "bool_rows": torch.arange(lq)[:, None].expand(lq, s) % 5 != 0,
    }[kind]

    def fn(q, k, v, m):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=m)

    out, kernels = _run(fn, q, k, v, mask)
    ref = fn(q, k, v, mask)
    torch.testing.assert_close(out, torch.nan_to_num(ref) if kind == "bool_rows" else ref,
                               rtol=1e-5, atol=1e-5)
    assert _choices(kernels) == ["fused"]


def test_scale_argument():
    q, k, v = _qkv(2, 2, 32, 48, 64)

    def fn(q, k, v):
        return F.scaled_dot_product_attention(q, k, v, scale=0.3)

    out, kernels = _run(fn, q, k, v)
    torch.testing.assert_close(out, fn(q, k, v), rtol=1e-5, atol=1e-5)
    assert _choices(kernels) == ["fused"]


def test_explicit_pattern_and_3d(form):
    """softmax(q @ k^T / sqrt(d)) @ v written out, on 4-D and on 3-D tensors."""
    def fn(q, k, v):
        return torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1]), -1) @ v

    for shape in ((2, 4, 40, 72, 64), (1, 6, 50, 30, 16)):
        q, k, v = _qkv(*shape)
        if shape[0] == 1:
            q, k, v = (t[0] for t in (q, k, v))
        torch._dynamo.reset()
        compiler.clear_memory_cache()
        out, kernels = _run(fn, q, k, v)
        torch.testing.assert_close(out, fn(q, k, v), rtol=1e-5, atol=1e-5)
        assert _choices(kernels) == ["fused"]


def test_dynamic_sizes():
    """Symbolic sizes (the explicit pattern: sdpa's default scale of a
    symbolic head dim is a symbolic float, which the frontend leaves eager)."""
    def fn(q, k, v):
        return torch.softmax(q @ k.transpose(-1, -2) * 0.3, -1) @ v

    c = torch.compile(fn, backend="llvmaccel", dynamic=True)
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for shape in ((2, 2, 24, 40, 16), (2, 3, 70, 9, 8), (3, 2, 3, 300, 20)):
            q, k, v = _qkv(*shape)
            torch.testing.assert_close(c(q, k, v), fn(q, k, v), rtol=1e-5, atol=1e-5)
    assert "fused" in _choices(g.kernel for g in compiler._cache.values())  # noqa: SLF001


def _graph(b: int, h: int, lq: int, s: int, d: int, keep_weights: bool = False) -> Graph:
    g = Graph()
    q = g.input("q", (b, h, lq, d), DType.f32)
    k = g.input("k", (b, h, s, d), DType.f32)
    v = g.input("v", (b, h, s, d), DType.f32)
    sc = g.binary("mul", g.matmul(q, g.permute(k, (0, 1, 3, 2))), g.scalar(0.125, DType.f32))
    m = g.reduce("max", sc, (3,), True)
    e = g.unary("exp", g.binary("sub", sc, m))
    p = g.binary("div", e, g.reduce("sum", e, (3,), True))
    g.set_outputs([g.matmul(p, v)] + ([p] if keep_weights else []))
    return g


def test_no_score_matrix_in_the_kernel():
    """The fused kernel's temporaries: one block of scores per thread, never
    the L x S scores of every head."""
    b, h, lq, s, d = 2, 4, 256, 512, 64
    kernel = generate(_graph(b, h, lq, s, d), threads=False)
    assert [kind for _, kind, _ in kernel.attention] == ["fused"]
    bq = query_block(lq, s, DType.f32, host())
    assert all(math.prod(shape) <= bq * s for shape, _ in kernel.temps)
    assert not kernel.matmuls  # the products are the fused loop nest's own


def test_row_sums_in_f32_partial_sums():
    """The one-pass form's softmax row sums accumulate as an f32 sum of the
    same length does elsewhere (``accumulator_dtype``): in SUM_LANES f32
    partial sums of a fixed order, the same bits in every thread, rather
    than widened to f64 (which cost the Emerald Rapids Xeon 5% of an
    attention); past F32_ACCUMULATION_MAX keys they stay f64."""
    kernel = generate(_graph(2, 2, 64, 256, 32), threads=False)
    assert "one pass" in kernel.attention[0][2]
    assert f"<{SUM_LANES} x float>" in kernel.ir
    assert "to double" not in kernel.ir and " x double]" not in kernel.ir
    assert accumulator_dtype(DType.f32, "sum", F32_ACCUMULATION_MAX + 1) is DType.f64


def test_query_block_from_the_cache_size():
    t = host()
    bq = query_block(4096, 1024, DType.f32, t)
    if t.l2_bytes:
        assert bq * 1024 * 4 <= t.l2_bytes
    assert bq >= 1 and 4096 % bq == 0
    assert query_block(10, 1024, DType.f32, t) <= 16  # no more rows than needed


@pytest.mark.parametrize("shape", [(1, 2, 16, 24, 8), (2, 3, 300, 96, 16)],
                         ids=lambda s: "x".join(map(str, s)))
def test_weights_returned(shape, form):
    """Attention weights that are also a result (aot_autograd's forward
    graphs save them for the backward): the one-pass form writes them beside
    the output, every query block of every batch index and head at its
    place; the online form declines, recorded."""
    graph = _graph(*shape[:4], shape[4], keep_weights=True)
    plans, choices = find_attention(graph, host())
    if form == "rows":
        assert [kind for _, kind, _ in choices] == ["fused"]
        (plan,) = plans.values()
        assert plan.saved is not None
    else:
        assert not plans
        assert [(kind, "result" in why) for _, kind, why in choices] == [("unfused", True)]

    def fn(q, k, v):
        w = torch.softmax(q @ k.transpose(-1, -2) * 0.125, -1)
        return w @ v, w

    q, k, v = _qkv(*shape)
    (out, w), kernels = _run(fn, q, k, v)
    ref_out, ref_w = fn(q, k, v)
    torch.testing.assert_close(out, ref_out, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(w, ref_w, rtol=1e-5, atol=1e-6)
    assert _choices(kernels) == ["fused" if form == "rows" else "unfused"]


def test_scores_returned_are_not_fused():
    """Scores (before the softmax) that are a result: nothing writes them in
    the fused nest, so the attention is not fused."""
    def fn(q, k, v):
        s = q @ k.transpose(-1, -2)
        return torch.softmax(s, -1) @ v, s

    q, k, v = _qkv(1, 2, 16, 24, 8)
    (out, s), kernels = _run(fn, q, k, v)
    torch.testing.assert_close(out, torch.softmax(q @ k.transpose(-1, -2), -1) @ v,
                               rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(s, q @ k.transpose(-1, -2), rtol=1e-5, atol=1e-5)
    assert _choices(kernels) == ["unfused"]


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_half(dtype):
    """Half-precision sdpa: the decomposition computes in f32 (fused, the
    result rounded once); the explicit pattern's matmuls round their scores
    and probabilities to the half type, which the fusion declines."""
    q, k, v = _qkv(1, 2, 16, 24, 16, dtype=dtype)
    fn = F.scaled_dot_product_attention
    out, kernels = _run(fn, q, k, v)
    torch.testing.assert_close(out.float(), fn(q, k, v).float(), rtol=2e-2, atol=2e-2)
    assert _choices(kernels) == ["fused"]

    def explicit(q, k, v):
        return torch.softmax(q @ k.transpose(-1, -2) * 0.25, -1) @ v

    torch._dynamo.reset()
    compiler.clear_memory_cache()
    out, kernels = _run(explicit, q, k, v)
    torch.testing.assert_close(out.float(), explicit(q, k, v).float(), rtol=2e-2, atol=2e-2)
    assert [(kind, "half" in why) for k in kernels for _, kind, why in k.attention] == \
        [("unfused", True)]


def test_switched_off(monkeypatch):
    monkeypatch.setenv("LLVMACCEL_FUSED_ATTENTION", "off")
    q, k, v = _qkv(1, 2, 16, 24, 16)
    fn = F.scaled_dot_product_attention
    out, kernels = _run(fn, q, k, v)
    torch.testing.assert_close(out, fn(q, k, v), rtol=1e-5, atol=1e-5)
    assert _choices(kernels) == ["unfused"]


@pytest.mark.parametrize("causal", [False, True])
def test_parallel_equals_serial(causal, form, monkeypatch):
    """Two threads (on one CPU too: the kernel is generated for two, the
    pool runs them time-shared) give the serial kernel's bits."""
    if parallel.max_threads() < 2:
        monkeypatch.setattr(parallel, "max_threads", lambda: 2)
    q, k, v = _qkv(2, 4, 160, 256, 64)

    def fn(q, k, v):
        return F.scaled_dot_product_attention(q, k, v, is_causal=causal)

    c = torch.compile(fn, backend="llvmaccel", dynamic=False)
    outs = []
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for n in (1, 2, 1, 2):
            blas.set_num_threads(n)
            outs.append(c(q, k, v))
    kernels = [g.kernel for g in compiler._cache.values()]  # noqa: SLF001
    assert _choices(kernels) == ["fused"] and all(kn.parallel for kn in kernels)
    for o in outs[1:]:
        assert torch.equal(o, outs[0])
    torch.testing.assert_close(outs[0], fn(q, k, v), rtol=1e-5, atol=1e-5)


def test_parallel_weights_returned_equal_serial(monkeypatch):
    """Saved attention weights written by two threads: the serial kernel's
    bits, for the output and the weights."""
    monkeypatch.setenv("LLVMACCEL_ATTENTION_FORM", "rows")
    if parallel.max_threads() < 2:
        monkeypatch.setattr(parallel, "max_threads", lambda: 2)
    q, k, v = _qkv(2, 4, 160, 256, 64)

    def fn(q, k, v):
        w = torch.softmax(q @ k.transpose(-1, -2) * 0.125, -1)
        return w @ v, w

    c = torch.compile(fn, backend="llvmaccel", dynamic=False)
    outs = []
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for n in (1, 2):
            blas.set_num_threads(n)
            outs.append(c(q, k, v))
    kernels = [g.kernel for g in compiler._cache.values()]  # noqa: SLF001
    assert _choices(kernels) == ["fused"] and all(kn.parallel for kn in kernels)
    assert torch.equal(outs[0][0], outs[1][0]) and torch.equal(outs[0][1], outs[1][1])
    torch.testing.assert_close(outs[0][1], fn(q, k, v)[1], rtol=1e-5, atol=1e-6)


def test_transformer_block_fuses():
    """The bench's transformer block: its attention is fused."""
    d, heads = 64, 4
    torch.manual_seed(0)
    qkv, proj = torch.nn.Linear(d, 3 * d), torch.nn.Linear(d, d)

    def block(x):
        b, t, _ = x.shape
        q, k, v = qkv(x).split(d, dim=-1)
        q, k, v = (z.view(b, t, heads, d // heads).transpose(1, 2) for z in (q, k, v))
        att = torch.softmax(q @ k.transpose(-1, -2) / (d // heads) ** 0.5, dim=-1)
        return proj((att @ v).transpose(1, 2).reshape(b, t, d))

    x = torch.randn(2, 40, d)
    out, kernels = _run(block, x)
    with torch.no_grad():
        torch.testing.assert_close(out, block(x), rtol=1e-5, atol=1e-5)
    assert _choices(kernels) == ["fused"]


@pytest.mark.parametrize("shape", [(2, 3, 16, 24, 8), (1, 2, 70, 33, 64)],
                         ids=lambda s: "x".join(map(str, s)))
def test_jax_einsum_attention(shape):
    """JAX's form (reductions without keepdim, reshaped back; the row max
    through maximum(-inf, max)) through llvmaccel.jax.jit."""
    jax = pytest.importorskip("jax")
    import numpy as np

    import llvmaccel.jax as lj

    jnp = jax.numpy

    def fn(q, k, v):
        s = jnp.einsum("bhld,bhsd->bhls", q, k) * 0.25
        return jnp.einsum("bhls,bhsd->bhld", jax.nn.softmax(s, -1), v)

    q, k, v = (t.numpy() for t in _qkv(*shape))
    out = np.asarray(lj.jit(fn)(q, k, v))
    np.testing.assert_allclose(out, np.asarray(fn(q, k, v)), rtol=1e-5, atol=1e-5)
    assert _choices(g.kernel for g in compiler._cache.values()) == ["fused"]  # noqa: SLF001


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32], ids=["bf16", "f32"])
def test_scaled_operands_read_from_a_projection(form, dtype):
    """sdpa on heads sliced from one QKV projection (a
    TransformerEncoderLayer's self-attention): the decomposition scales Q
    and K^T (in bf16, their f32 casts); the factors are taken out and K is
    read transposed from the head's contiguous buffer (its cast, or a copy
    of the view), so neither the scaled Q nor the scaled, transposed K gets
    a loop nest or a temporary."""
    b, s, h, d = 2, 48, 4, 32
    g = torch.Generator().manual_seed(5)
    qkv = torch.randn(b, s, 3 * h * d, generator=g).to(dtype)

    def fn(qkv):
        q, k, v = (t.view(b, s, h, d).transpose(1, 2) for t in qkv.split(h * d, -1))
        return F.scaled_dot_product_attention(q, k, v)

    out, kernels = _run(fn, qkv)
    tol = 1e-2 if dtype is torch.bfloat16 else 1e-5
    torch.testing.assert_close(out, fn(qkv), rtol=tol, atol=tol)
    assert _choices(kernels) == ["fused"]
    (kern,) = kernels
    # Q, K and V in their heads' layout (b*h*s*d each: bf16's f32 casts, or
    # f32 copies of the views) and bf16's f32 output are the only
    # temporaries of that size: no scaled or transposed copy of Q or K.
    same = [shape for shape, dt in kern.temps if math.prod(shape) == b * h * s * d]
    assert len(same) <= 4, kern.temps
    assert all(shape[-1] == d for shape in same), kern.temps
