"""The narrow dtypes through the PyTorch frontend: bfloat16 and float16
(stored narrow, computed as PyTorch's CPU kernels compute them), int8, uint8
and int16 (wrap-around, PyTorch's promotion), against eager: PyTorch's own
OpInfo sample inputs for the ops llvmaccel lowers, models, quantize /
dequantize graphs, promotion tables, casts and the buffer ABI."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import torch.nn as nn  # noqa: E402
from torch.utils import _pytree as pytree  # noqa: E402

import llvmaccel.torch  # noqa: E402, F401 - registers the backend
from llvmaccel.compiler import compile_graph  # noqa: E402
from llvmaccel.graph import DType, Graph, promote  # noqa: E402
from llvmaccel.torch.dynamo import Explanation, _compile_fx, _decompositions  # noqa: E402
from llvmaccel.torch.lowering import node_support  # noqa: E402

NEW_DTYPES = (torch.bfloat16, torch.float16, torch.int8, torch.uint8, torch.int16)
HALF = (torch.bfloat16, torch.float16)


@pytest.fixture(autouse=True)
def _cache_dir(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("LLVMACCEL_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "cache"))


def _compile(fn):
    torch._dynamo.reset()
    return torch.compile(fn, backend="llvmaccel", options={"strict": True})


def _same(got, expected):
    """Equal dtypes and values within assert_close's defaults for the dtype
    (exact for integers and bool)."""
    for g, e in zip(pytree.tree_leaves(got), pytree.tree_leaves(expected), strict=True):
        assert g.dtype == e.dtype, (g.dtype, e.dtype)
        torch.testing.assert_close(g, e, equal_nan=True)


# ---------------------------------------------------------------------------
# OpInfo samples
# ---------------------------------------------------------------------------

# OpInfo entries of ops the backend lowers (elementwise, reductions,
# matmul, views, indexing); a sample whose graph holds an op llvmaccel does
# not lower (for its dtype or arguments) is counted and skipped.
OPINFO_OPS = (
    "abs", "add", "sub", "mul", "div", "neg", "exp", "log", "sqrt", "rsqrt", "sigmoid",
    "tanh", "sin", "cos", "floor", "ceil", "trunc", "round", "reciprocal", "sign",
    "maximum", "minimum", "clamp", "where", "eq", "ne", "lt", "le", "gt", "ge",
    "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "sum", "prod", "mean", "amax",
    "amin", "argmax", "argmin", "mm", "bmm", "matmul", "addmm", "softmax", "log_softmax",
    "nn.functional.relu", "nn.functional.gelu", "nn.functional.silu",
    "nn.functional.layer_norm", "cat", "stack", "transpose", "permute", "reshape",
    "flatten", "squeeze", "unsqueeze", "expand", "index_select", "cumsum", "square",
    "fmod", "remainder", "floor_divide", "logical_not", "logical_and", "erf", "exp2",
    "log1p", "expm1", "var", "std", "masked_fill", "clamp_min", "clamp_max", "to",
)
SAMPLES_PER_DTYPE = 1


def _opinfo_cases():
    from torch.testing._internal.common_methods_invocations import op_db

    by_name: dict[str, object] = {}
    for op in op_db:
        if op.name in OPINFO_OPS and op.name not in by_name and not op.variant_test_name:
            by_name[op.name] = op
    return [by_name[n] for n in OPINFO_OPS if n in by_name]


def _run_sample(op, sample) -> str:
    """Compiles the op on the sample with llvmaccel (strict) and compares with
    eager; returns "ran" or "skipped" (an op the backend does not lower)."""
    from torch.fx.experimental.proxy_tensor import make_fx

    leaves, spec = pytree.tree_flatten((sample.input, sample.args, sample.kwargs))
    pos = [k for k, v in enumerate(leaves) if isinstance(v, torch.Tensor)]

    def fn(*tensors):
        full = list(leaves)
        for k, t in zip(pos, tensors, strict=True):
            full[k] = t
        x, args, kwargs = pytree.tree_unflatten(full, spec)
        return op(x, *args, **kwargs)

    tensors = [leaves[k] for k in pos]
    expected = fn(*tensors)
    if not all(isinstance(v, torch.Tensor) for v in pytree.tree_leaves(expected)):
        return "skipped"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gm = make_fx(fn, decomposition_table=_decompositions(), tracing_mode="fake")(*tensors)
    if any(n.op == "call_function" and node_support(n) is not None for n in gm.graph.nodes):
        return "skipped"
    try:
        compiled = _compile_fx(gm, {}, Explanation(), strict=True)
    except llvmaccel.torch.LLVMAccelTorchError:
        return "skipped"
    got = compiled(*tensors)
    _same(pytree.tree_unflatten(pytree.tree_leaves(got), pytree.tree_structure(expected))
          if not isinstance(got, torch.Tensor) else got, expected)
    return "ran"


# One float and one integer dtype by default (each sweep compiles ~50
# kernels); the others with LLVMACCEL_SLOW=1 or -m slow.
@pytest.mark.parametrize("dtype", [
    pytest.param(dt, marks=() if dt in (torch.bfloat16, torch.uint8) else pytest.mark.slow)
    for dt in NEW_DTYPES], ids=str)
def test_opinfo_samples(dtype):
    """PyTorch's own sample inputs of the lowered ops, in each new dtype,
    against eager: a meaningful share of them must compile and run."""
    counts = {"ran": 0, "skipped": 0}
    ran_ops = set()
    for op in _opinfo_cases():
        if dtype not in op.supported_dtypes("cpu"):
            continue
        samples = list(op.sample_inputs("cpu", dtype, requires_grad=False))[:SAMPLES_PER_DTYPE]
        for sample in samples:
            try:
                result = _run_sample(op, sample)
            except AssertionError as e:
                raise AssertionError(f"{op.name} {dtype} {sample}: {e}") from e
            counts[result] += 1
            if result == "ran":
                ran_ops.add(op.name)
    total = counts["ran"] + counts["skipped"]
    assert total > 0
    # Most lowered ops take these dtypes; the float ops (exp, softmax...)
    # are not defined for the integer dtypes, so those count fewer.
    assert counts["ran"] >= 0.5 * total, (counts, sorted(ran_ops))
    assert len(ran_ops) >= (25 if dtype in HALF else 15), sorted(ran_ops)


# ---------------------------------------------------------------------------
# Models
# ---------------------------------------------------------------------------


def test_bf16_mlp_matches_eager():
    torch.manual_seed(0)
    mlp = nn.Sequential(nn.Linear(32, 64), nn.GELU(), nn.Linear(64, 16), nn.LayerNorm(16),
                        nn.Softmax(-1)).to(torch.bfloat16).eval()
    x = torch.randn(8, 32, dtype=torch.bfloat16)
    with torch.no_grad():
        _same(_compile(mlp)(x), mlp(x))


def test_fp16_conv_model_matches_eager():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                          nn.MaxPool2d(2), nn.Conv2d(8, 4, 3, stride=2, groups=2),
                          nn.AdaptiveAvgPool2d(1), nn.Flatten()).half().eval()
    x = torch.randn(2, 3, 16, 16, dtype=torch.float16)
    with torch.no_grad():
        _same(_compile(model)(x), model(x))


def test_int8_quantize_dequantize_bit_exact():
    def qdq(x, scale):
        q = torch.clamp(torch.round(x / scale), -128, 127).to(torch.int8)
        deq = q.to(torch.float32) * scale
        return q, deq, (q.to(torch.int16) * 300).sum(), q.to(torch.uint8) + 200

    x = torch.randn(257) * 50
    _same(_compile(qdq)(x, 0.5), qdq(x, 0.5))


def test_int8_linear_with_int32_accumulation():
    """A quantized linear layer in the usual form: int8 weights and
    activations, products summed in int32, rescaled to float."""
    def qlinear(xq, wq, scale):
        acc = (xq.to(torch.int32)[:, None, :] * wq.to(torch.int32)[None, :, :]).sum(-1,
                                                                              dtype=torch.int32)
        return acc, acc.to(torch.float32) * scale

    xq = torch.randint(-128, 128, (4, 16), dtype=torch.int8)
    wq = torch.randint(-128, 128, (8, 16), dtype=torch.int8)
    _same(_compile(qlinear)(xq, wq, 0.01), qlinear(xq, wq, 0.01))


def test_integer_semantics_bit_exact():
    def f(a, b, c, d):
        return (a + b, c + a, d + b, a.sum(), c > a, c // 3, c % 7, c >> 2, a >> 1,
                torch.maximum(c, d.to(torch.uint8)), a * 3, -c, c.to(torch.int8),
                torch.abs(a), d.to(torch.int8))

    torch.manual_seed(0)
    a = torch.randint(-128, 128, (64,), dtype=torch.int8)
    b = torch.randint(0, 256, (64,), dtype=torch.uint8)
    c = torch.randint(0, 256, (64,), dtype=torch.uint8)
    d = torch.randint(-30000, 30000, (64,), dtype=torch.int16)
    _same(_compile(f)(a, b, c, d), f(a, b, c, d))


def test_view_as_dtype_reinterprets_bits():
    """``Tensor.view(dtype)`` keeps the bits (it once converted the values)."""
    def f(x, h):
        return x.view(torch.int32) + 1, h.view(torch.int16) >> 1, h.view(torch.float16) * 2

    x = torch.randn(16)
    h = torch.randn(16, dtype=torch.bfloat16)
    _same(_compile(f)(x, h), f(x, h))


@pytest.mark.parametrize("dtype", (torch.bfloat16, torch.int8), ids=str)
def test_scatter_add_in_narrow_dtypes(dtype):
    """Each update added in f32 and rounded (bf16), or wrapping (int8), as
    eager adds them one by one."""
    def f(x, i, u):
        return x.scatter_add(0, i, u), x.index_add(0, i[:3], u[:3])

    torch.manual_seed(0)
    i = torch.tensor([1, 1, 3, 7, 1])
    if dtype.is_floating_point:
        x, u = torch.randn(8, dtype=dtype), torch.randn(5, dtype=dtype)
    else:
        x, u = (torch.randint(-100, 100, (n,), dtype=dtype) for n in (8, 5))
    _same(_compile(f)(x, i, u), f(x, i, u))


def test_half_constants_and_buffers():
    """Tensor constants made in the function and module buffers in bf16 and
    f16 (numpy lacks bf16: their bits become an ml_dtypes array)."""
    pytest.importorskip("ml_dtypes")

    class Scale(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("s", torch.tensor([0.5, 4.0, 8.0], dtype=torch.bfloat16))

        def forward(self, x):
            k = torch.tensor([1.5, 2.25, -3.0], dtype=torch.bfloat16)
            return x * self.s + k, x + torch.ones(3, dtype=torch.float16)

    x = torch.randn(3, dtype=torch.bfloat16)
    m = Scale()
    with torch.no_grad():
        _same(_compile(m)(x), m(x))


def test_mixed_float_promotion():
    def f(h, bf, x):
        return h + bf, h * 2.5, bf + x, h + x, bf.sum(), h.mean(), (h > bf)

    torch.manual_seed(0)
    h = torch.randn(10, dtype=torch.float16)
    bf = torch.randn(10, dtype=torch.bfloat16)
    x = torch.randn(10)
    _same(_compile(f)(h, bf, x), f(h, bf, x))


@pytest.mark.parametrize("dtype", HALF, ids=str)
def test_half_reductions_accumulate_in_f32(dtype):
    """A sum of 4096 ones in bf16 is 4096 (an accumulator in bf16 stops at
    256: 256 + 1 rounds to 256), as in eager."""
    def f(x):
        return x.sum(), x.sum(0), torch.cumsum(x, 0)

    x = torch.ones(4096, dtype=dtype)
    got = _compile(f)(x)
    _same(got, f(x))
    assert float(got[0]) == 4096.0


@pytest.mark.parametrize("dtype", (torch.uint8, torch.int8, torch.int16), ids=str)
def test_float_to_int_casts_match_eager(dtype):
    x = torch.tensor([-1.0, -0.5, 0.7, 1.5, 100.25, 127.9, 255.5, -128.0, 300.0, 40000.0])
    _same(_compile(lambda t: t.to(dtype))(x), x.to(dtype))


def test_uint64_matches_eager_bit_for_bit():
    """torch.uint64 where eager PyTorch supports it (its "limited support":
    no add, comparison but ==, or promotion with another dtype): wrapping
    products, bitwise ops, conversions both ways (a float to uint64 as C's
    cast on x86: -1.0 gives 2**64 - 1), the sum (an int64, as eager's),
    reinterpretation and where; compiled, not run eagerly (strict)."""
    x = torch.tensor([0, 1, 2**64 - 1, 2**63, 2**63 - 1, 12345678901234567890],
                     dtype=torch.uint64)
    y = torch.tensor([2**64 - 1, 5, 1, 2**63, 3, 99], dtype=torch.uint64)
    f = torch.tensor([-1.0, 0.7, 1.8e19, 9.3e18, 5.0, 1e10])

    def fn(x, y, f):
        return (x * y, x & y, x | y, x ^ y, x.to(torch.float32), x.to(torch.float64), x.sum(),
                f.to(torch.uint64), f.double().to(torch.uint64), x.to(torch.int64),
                x.to(torch.int32), x.to(torch.uint8), (x.to(torch.int64) * 3).to(torch.uint64),
                x == y, x.view(torch.int64), torch.where(f > 1, x, y))

    got, want = _compile(fn)(x, y, f), fn(x, y, f)
    for g, e in zip(got, want, strict=True):
        assert g.dtype == e.dtype, (g.dtype, e.dtype)
        assert g.tolist() == e.tolist(), (g, e)


# ---------------------------------------------------------------------------
# Promotion tables, literals, the buffer ABI
# ---------------------------------------------------------------------------

_TORCH = {DType.f16: torch.float16, DType.bf16: torch.bfloat16, DType.f32: torch.float32,
          DType.f64: torch.float64, DType.i8: torch.int8, DType.u8: torch.uint8,
          DType.i16: torch.int16, DType.i32: torch.int32, DType.i64: torch.int64,
          DType.bool: torch.bool}


@pytest.mark.parametrize("a", list(_TORCH), ids=repr)
def test_promotion_table_matches_torch(a):
    for b, tb in _TORCH.items():
        assert _TORCH[promote(a, b)] == torch.promote_types(_TORCH[a], tb), (a, b)


def _run(build, *arrays):
    g = Graph()
    ins = [g.input(f"x{k}", tuple(x.shape), dt) for k, (x, dt) in enumerate(arrays)]
    out = build(g, *ins)
    g.set_outputs(out if isinstance(out, list) else [out])
    return compile_graph(g)(*[x for x, _ in arrays])


def test_bf16_buffers_from_torch_and_ml_dtypes():
    """torch bf16 tensors and ml_dtypes bf16 arrays are passed as they are;
    numpy calls get ml_dtypes arrays back."""
    ml_dtypes = pytest.importorskip("ml_dtypes")
    x = torch.randn(100, dtype=torch.bfloat16)
    (t,) = _run(lambda g, a: g.binary("mul", a, g.scalar(3.0, DType.bf16)), (x, DType.bf16))
    assert t.dtype == torch.bfloat16 and torch.equal(t, x * 3)
    xn = x.float().numpy().astype(ml_dtypes.bfloat16)
    (n,) = _run(lambda g, a: g.binary("mul", a, g.scalar(3.0, DType.bf16)), (xn, DType.bf16))
    assert isinstance(n, np.ndarray) and n.dtype == ml_dtypes.bfloat16
    np.testing.assert_array_equal(n.astype(np.float32), (x * 3).float().numpy())
    # A numpy bf16 array mixed with torch tensors: its bits, no copy needed.
    (m,) = _run(lambda g, a, b: g.binary("add", a, b), (x, DType.bf16), (xn, DType.bf16))
    assert torch.equal(m, x + x)


def test_half_literals_and_special_values():
    x = torch.tensor([0.0, -0.0, 1.0, 65504.0, float("inf"), float("nan"), 1e-8],
                     dtype=torch.float16)
    (y,) = _run(lambda g, a: g.binary("mul", a, g.scalar(2.0, DType.f16)), (x, DType.f16))
    torch.testing.assert_close(y, x * 2, equal_nan=True)  # 65504 * 2 overflows to inf
    b = torch.tensor([1.0, 3.0, -7.5, 1e38, float("nan")], dtype=torch.bfloat16)
    (z,) = _run(lambda g, a: g.binary("add", a, g.scalar(0.1, DType.bf16)), (b, DType.bf16))
    torch.testing.assert_close(z, b + 0.1, equal_nan=True)


def test_unsigned_reductions_and_division_by_zero():
    c = torch.tensor([200, 3, 255, 0, 128], dtype=torch.uint8)
    outs = _run(lambda g, a: [g.reduce("max", a, (0,)), g.reduce("min", a, (0,)),
                              g.reduce("argmax", a, (0,)), g.reduce("sum", a, (0,))],
                (c, DType.u8))
    assert [int(o) for o in outs] == [255, 0, 2, 586]
    (r,) = _run(lambda g, a, b: g.binary("div", a, b, int_zero_div="xla"), (c, DType.u8),
                (torch.tensor([7, 0, 2, 5, 0], dtype=torch.uint8), DType.u8))
    assert r.tolist() == [28, 255, 127, 0, 255]  # XLA: an all-ones quotient for 0


def test_f32_to_bf16_rounding_is_pytorchs_bit_for_bit():
    """Round to nearest even, subnormals kept (AVX512-BF16's conversion
    would read them as zero), overflow to inf, NaN quiet: over random f32
    bit patterns and the edge cases, equal to eager's ``.to(bfloat16)``."""
    rng = np.random.default_rng(0)
    edge = np.array([0x7F7FFFFF, 0x7F800000, 0xFF800000, 0x00000001, 0x80000000, 0x3F808000,
                     0x3F818000, 0x3F80FFFF, 0x007FFFFF, 0x807F8000], np.uint32)
    bits = np.concatenate([rng.integers(0, 2**32, 50000, dtype=np.uint64).astype(np.uint32),
                           edge, rng.integers(0, 0x800000, 5000, dtype=np.uint32)])
    x = torch.from_numpy(bits.view(np.float32))
    (got,) = _run(lambda g, a: g.cast(a, DType.bf16), (x, DType.f32))
    want = x.to(torch.bfloat16)
    nan = torch.isnan(x)
    assert torch.equal(got.view(torch.int16)[~nan], want.view(torch.int16)[~nan])
    assert torch.isnan(got[nan]).all()


@pytest.mark.parametrize("dt", [DType.bf16, DType.f16], ids=repr)
def test_half_math_calls_the_f32_vector_variants(dt):
    """exp/tanh of a half tensor: widened to f32, and the vectorized loop
    calls libmvec's f32 variants (no scalar call per element)."""
    import re

    from llvmaccel import vecmath
    from llvmaccel.target import host

    if not vecmath.variants("exp", 32, 1, host()):
        pytest.skip("no libmvec on this host")
    g = Graph()
    x = g.input("x", (4096,), dt)
    g.set_outputs([g.unary("tanh", g.unary("exp", x))])
    compiled = compile_graph(g)
    ir = compiled.optimized_ir
    assert re.search(r"call <\d+ x float> @_ZGV\w+_expf", ir)
    assert re.search(r"call <\d+ x float> @_ZGV\w+_tanhf", ir)
    xt = torch.randn(4096).to(torch.bfloat16 if dt is DType.bf16 else torch.float16)
    torch.testing.assert_close(compiled(xt)[0], torch.tanh(torch.exp(xt)))
