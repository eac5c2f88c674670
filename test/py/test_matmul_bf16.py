"""bfloat16 matmuls with the target's bf16 dot product (codegen.matmul_bf16):
the intrinsic chosen per target (IR, any host), and execution where the host
has AVX512-BF16: every edge of the tiling, odd K, transposed and batched
operands, against float64 references of the bf16 values (f32 accumulation)
and against eager PyTorch, and the frontends' bf16 models."""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np
import pytest

from llvmaccel import codegen, compiler
from llvmaccel.codegen import generate
from llvmaccel.codegen.matmul_bf16 import bf16_dot
from llvmaccel.graph import DType, Graph, Sym
from llvmaccel.target import TargetInfo, host

ZEN4 = TargetInfo("x86_64-unknown-linux-gnu", "znver4",
                  frozenset({"avx2", "fma", "avx512f", "avx512vl", "avx512bf16"}), 512, 32)
SPR_256 = TargetInfo("x86_64-unknown-linux-gnu", "sapphirerapids",
                     frozenset({"avx2", "fma", "avx512f", "avx512vl", "avx512bf16"}), 256, 32)
SKX = TargetInfo("x86_64-unknown-linux-gnu", "skylake-avx512",
                 frozenset({"avx2", "fma", "avx512f", "avx512vl"}), 512, 32)
NEOVERSE_V1 = TargetInfo("aarch64-unknown-linux-gnu", "neoverse-v1",
                         frozenset({"neon", "bf16", "sve"}), 128, 32)
NEOVERSE_N1 = TargetInfo("aarch64-unknown-linux-gnu", "neoverse-n1", frozenset({"neon"}), 128, 32)

NATIVE = bf16_dot(host(), codegen._matmul_tiling(DType.f32, 1)[0]) is not None
needs_native = pytest.mark.skipif(
    not NATIVE, reason=f"this host ({host().cpu}) has no bf16 dot product LLVM exposes "
                       "(x86 avx512bf16, AArch64 bf16): the f32 path runs here")
RNG = np.random.default_rng(3)


@pytest.fixture(autouse=True)
def _cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("LLVMACCEL_CACHE_DIR", str(tmp_path / "cache"))


def _graph(m, n, k, ta: bool = False, tb: bool = False, batch: tuple = (),
           bbatch: tuple | None = None, dt: DType = DType.bf16) -> Graph:
    """``A @ B`` of ``dt`` inputs; ``ta``/``tb``: a transposed view of the input."""
    g = Graph()
    bbatch = batch if bbatch is None else bbatch
    a = g.input("a", batch + ((k, m) if ta else (m, k)), dt)
    b = g.input("b", bbatch + ((n, k) if tb else (k, n)), dt)
    if ta:
        a = g.permute(a, tuple(range(a.rank - 2)) + (a.rank - 1, a.rank - 2))
    if tb:
        b = g.permute(b, tuple(range(b.rank - 2)) + (b.rank - 1, b.rank - 2))
    g.set_outputs([g.matmul(a, b)])
    return g


# --- the kernel chosen per target (IR only: any host) ----------------------------------

@pytest.mark.parametrize("target,call,bvec", [
    (ZEN4, "llvm.x86.avx512bf16.dpbf16ps.512", "<32 x bfloat>"),
    (SPR_256, "llvm.x86.avx512bf16.dpbf16ps.256", "<16 x bfloat>"),  # 256-bit tuning
    (NEOVERSE_V1, "llvm.aarch64.neon.bfdot.v4f32.v8bf16", "<8 x bfloat>"),
], ids=["zen4", "spr-256", "neoverse-v1"])
@pytest.mark.parametrize("tb", [False, True], ids=["b", "bT"])
def test_native_target_reads_bf16_operands(target, call, bvec, tb):
    """With a bf16 dot product, A and B are read as bf16 (no f32 copy of
    them: no temporary), and the tile calls the target's intrinsic on packed
    pairs of B."""
    kern = generate(_graph(37, 45, 67, tb=tb), target=target)
    assert f"call <{int(bvec[1:].split()[0]) // 2} x float> @{call}(" in kern.ir
    assert f"load {bvec}, ptr" in kern.ir
    # The only temporary is C in f32 (rounded into the bf16 output): no f32
    # copies of A and B.
    assert kern.temps == [((37, 45), DType.f32)]
    assert kern.matmuls[0][1] == "own" and "bf16 operands" in kern.matmuls[0][2]


@pytest.mark.parametrize("target", [SKX, NEOVERSE_N1], ids=["skx", "neoverse-n1"])
def test_target_without_bf16_dot_keeps_the_f32_path(target):
    """No bf16 dot product: the operands are cast to f32 buffers and the f32
    kernel's fused multiply-adds run, as before."""
    kern = generate(_graph(37, 45, 67), target=target)
    assert "bf16" not in kern.ir and "bfdot" not in kern.ir
    assert "@llvm.fmuladd.v" in kern.ir
    assert sorted(shape for shape, _ in kern.temps) == [(37, 45), (37, 67), (67, 45)]


def test_f16_and_matrix_vector_stay_f32():
    """f16 matmuls keep the f32 path; so does N below a vector with B read
    along k (the dot-product kernel's class)."""
    assert "dpbf16ps" not in generate(_graph(20, 30, 40, dt=DType.f16), target=ZEN4).ir
    ir = generate(_graph(20, 1, 40), target=ZEN4).ir
    assert "dpbf16ps" not in ir and "%kv" in ir


def test_intrinsic_names_per_width():
    assert bf16_dot(ZEN4, 16) == "llvm.x86.avx512bf16.dpbf16ps.512"
    assert bf16_dot(ZEN4, 8) == "llvm.x86.avx512bf16.dpbf16ps.256"
    assert bf16_dot(dataclasses.replace(ZEN4, features=frozenset({"avx512bf16"})), 8) is None
    assert bf16_dot(NEOVERSE_V1, 8) is None and bf16_dot(NEOVERSE_N1, 4) is None


@pytest.mark.parametrize("target,mattr,insn", [
    (ZEN4, "+avx512f,+avx512vl,+avx512bf16", "vdpbf16ps\t%zmm"),
    (SPR_256, "+avx512f,+avx512vl,+avx512bf16", "vdpbf16ps\t%ymm"),
    (NEOVERSE_V1, "+neon,+bf16", "bfdot\tv"),
], ids=["zen4", "spr-256", "neoverse-v1"])
def test_native_ir_selects_the_instruction(target, mattr, insn):
    """The target's backend (this LLVM's llc) selects the dot-product
    instruction from the kernel's IR, run-time sizes and B transposed."""
    import subprocess

    from llvmaccel.crosstarget import _tool
    llc = _tool("llc")
    if llc is None:
        pytest.skip("no llc of this LLVM release")
    ir = generate(_graph(Sym("m"), Sym("n"), Sym("k"), tb=True), target=target).ir
    asm = subprocess.run([llc, "-O2", f"-mtriple={target.triple}", f"-mattr={mattr}", "-o", "-"],
                         input=ir, capture_output=True, text=True, check=True).stdout
    assert insn in asm


# --- execution on this host -------------------------------------------------------------

def _bf16(shape: tuple) -> np.ndarray:
    import ml_dtypes
    return RNG.standard_normal(shape).astype(ml_dtypes.bfloat16)


def _check(c, m, n, k, ta=False, tb=False, batch=(), bbatch=None) -> None:
    """Against float64 products of the bf16 values: the f32 accumulation's
    error (about sqrt(K) ulps of f32 relative to the sum of |products|),
    before the result's rounding to bf16, which the check allows for."""
    bbatch = batch if bbatch is None else bbatch
    xa = _bf16(batch + ((k, m) if ta else (m, k)))
    xb = _bf16(bbatch + ((n, k) if tb else (k, n)))
    (y,) = c(xa, xb)
    ea = np.swapaxes(xa, -1, -2) if ta else xa
    eb = np.swapaxes(xb, -1, -2) if tb else xb
    a64, b64 = ea.astype(np.float64), eb.astype(np.float64)
    ref = np.matmul(a64, b64)
    scale = np.matmul(np.abs(a64), np.abs(b64))
    assert y.shape == ref.shape and y.dtype == xa.dtype
    # bf16 rounding of the result (2**-8 relative) plus the f32 sum's error.
    err = np.abs(y.astype(np.float64) - ref)
    bound = 2.0 ** -8 * np.abs(ref) + 2.0 ** -20 * max(1, k) ** 0.5 * scale + 1e-30
    assert (err <= bound).all(), f"m={m} n={n} k={k} ta={ta} tb={tb}: {(err / bound).max()}"


def _wide(m, n, k, ta=False, tb=False, batch=()):
    """The f32 matmul node's own result (no rounding): the accumulation check."""
    g = Graph()
    a = g.input("a", batch + ((k, m) if ta else (m, k)), DType.bf16)
    b = g.input("b", batch + ((n, k) if tb else (k, n)), DType.bf16)
    if ta:
        a = g.permute(a, tuple(range(a.rank - 2)) + (a.rank - 1, a.rank - 2))
    if tb:
        b = g.permute(b, tuple(range(b.rank - 2)) + (b.rank - 1, b.rank - 2))
    mm = g.matmul(a, b)
    assert mm.op == "cast"
    g.set_outputs([mm.inputs[0]])  # the f32 matmul before the cast back
    return g


@needs_native
@pytest.mark.parametrize("ta,tb", [(False, False), (False, True), (True, False), (True, True)])
def test_f32_accumulation_every_edge(ta, tb):
    """The f32 sums themselves (the matmul before its rounding) against
    float64, with run-time sizes: full and leftover row tiles, right edges of
    one and two vectors, odd K (the zero-padded last pair), several k-blocks
    with an odd remainder, and K = 0."""
    c = compiler.compile_graph(_wide(Sym("m"), Sym("n"), Sym("k"), ta, tb))
    assert "dpbf16ps" in c.kernel.ir
    vw, mr, _ = codegen._matmul_tiling(DType.f32, codegen._MATMUL_NR_VECTORS)
    nr = codegen._MATMUL_NR_VECTORS * vw
    kc = 512
    for m, n, k in itertools.chain(
            itertools.product([1, mr - 1, mr, mr + 1, 2 * mr + 3], [1, vw - 1, vw + 1, nr, nr + 3],
                              [1, 2, 3, 17]),
            [(13, 37, kc - 1), (5, 40, kc + 1), (9, 33, 2 * kc + 3), (7, 20, 0)]):
        xa = _bf16((k, m) if ta else (m, k))
        xb = _bf16((n, k) if tb else (k, n))
        (y,) = c(xa, xb)
        a64 = (xa.T if ta else xa).astype(np.float64)
        b64 = (xb.T if tb else xb).astype(np.float64)
        ref = a64 @ b64
        bound = 2.0 ** -22 * max(1, k) * (np.abs(a64) @ np.abs(b64)) + 1e-30
        assert y.dtype == np.float32
        assert (np.abs(y - ref) <= bound).all(), f"m={m} n={n} k={k}"


@needs_native
@pytest.mark.parametrize("shape", [(1, 1, 1), (8, 32, 2), (9, 33, 7), (64, 64, 64),
                                   (17, 100, 513), (3, 48, 1025)], ids=str)
@pytest.mark.parametrize("tb", [False, True], ids=["b", "bT"])
def test_rounded_result_static_sizes(shape, tb):
    m, n, k = shape
    c = compiler.compile_graph(_graph(m, n, k, tb=tb))
    # N = 1: the matrix-vector class, the f32 dot-product kernel.
    assert ("dpbf16ps" in c.kernel.ir) == (n > 1)
    _check(c, m, n, k, tb=tb)


@needs_native
def test_batched_and_broadcast_batch():
    c = compiler.compile_graph(_graph(13, 21, 9, batch=(3,)))
    assert "dpbf16ps" in c.kernel.ir
    _check(c, 13, 21, 9, batch=(3,))
    c = compiler.compile_graph(_graph(13, 21, 9, tb=True, batch=(2, 3), bbatch=(1, 3)))
    _check(c, 13, 21, 9, tb=True, batch=(2, 3), bbatch=(1, 3))


def test_library_bf16_gemm_only_with_amx(monkeypatch):
    """The library's bf16 GEMM is a candidate only on CPUs with AMX-BF16
    (without, llvmaccel's AVX512-BF16 kernel measured faster at every
    size); LLVMACCEL_BLAS=always makes it one anywhere."""
    from llvmaccel import blas

    monkeypatch.setenv("LLVMACCEL_BLAS_LIBRARY", "torch")
    if blas.bf16_symbol() is None:
        pytest.skip(f"PyTorch's library has no bf16 GEMM: {blas.status()}")
    amx = dataclasses.replace(ZEN4, cpu="sapphirerapids",
                              features=ZEN4.features | {"amx-bf16", "amx-tile"})
    assert blas.bf16_library_reason(amx) is None
    assert "no AMX-BF16" in blas.bf16_library_reason(ZEN4)
    monkeypatch.setenv("LLVMACCEL_BLAS", "always")
    assert blas.bf16_library_reason(ZEN4) is None
    monkeypatch.setenv("LLVMACCEL_BLAS", "off")
    assert blas.bf16_library_reason(amx) is not None


@needs_native
@pytest.mark.parametrize("tb", [False, True], ids=["b", "bT"])
def test_library_bf16_gemm_for_large_products(tb, monkeypatch):
    """With PyTorch's library (MKL's gemm_bf16bf16f32), bf16 products of at
    least blas.MIN_FLOPS_BF16 multiply-adds call it on the bf16 operands
    themselves, one call per batch index, where the host has AMX-BF16 (and
    anywhere with LLVMACCEL_BLAS=always); results as the f32 sums of the
    bf16 values, rounded."""
    from llvmaccel import blas

    monkeypatch.setenv("LLVMACCEL_BLAS_LIBRARY", "torch")
    if blas.bf16_symbol() is None:
        pytest.skip(f"PyTorch's library has no bf16 GEMM: {blas.status()}")
    if blas.bf16_library_reason(host()) is not None:
        c = compiler.compile_graph(_graph(96, 160, 130, tb=tb))
        (kind, why), = [(k, r) for _, k, r in c.kernel.matmuls]
        assert kind == "own" and "no AMX-BF16" in why, why
        monkeypatch.setenv("LLVMACCEL_BLAS", "always")
    c = compiler.compile_graph(_graph(96, 160, 130, tb=tb))
    assert 96 * 160 * 130 >= blas.MIN_FLOPS_BF16
    (kind, why), = [(k, r) for _, k, r in c.kernel.matmuls]
    assert kind == "blas" and "gemm_bf16bf16f32_" in why, why
    _check(c, 96, 160, 130, tb=tb)
    c = compiler.compile_graph(_graph(40, 64, 420, tb=tb, batch=(3,)))
    assert c.kernel.matmuls[0][1] == "blas"
    _check(c, 40, 64, 420, tb=tb, batch=(3,))
    # Below the threshold (AMX host): llvmaccel's bf16 pair kernel.
    monkeypatch.delenv("LLVMACCEL_BLAS", raising=False)
    small = compiler.compile_graph(_graph(30, 40, 50, tb=tb))
    assert small.kernel.matmuls[0][1] == "own" and "dpbf16ps" in small.kernel.ir


@pytest.mark.parametrize("dt", [DType.bf16, DType.f16])
@pytest.mark.parametrize("m,n,k,tb", [(2048 // 16, 1, 300, False), (37, 3, 77, True),
                                      (5, 1, 16, False), (9, 7, 1, True)])
def test_matrix_vector_reads_half_operands(dt, m, n, k, tb):
    """The matrix-vector class (N below a vector, B read along k) of half
    operands: the dot-product kernel reads the bf16/f16 values themselves,
    widened on load (exact), on any target with or without a bf16 dot; no
    f32 copy of A is made. LLVMACCEL_BF16_DOT=off keeps the f32 copies."""
    c = compiler.compile_graph(_graph(m, n, k, tb=tb, dt=dt))
    (kind, why), = [(kk, r) for _, kk, r in c.kernel.matmuls]
    assert kind == "own" and "widening them on load" in why, why
    assert "fpext <" in c.kernel.ir and f"x {dt.llvm}> " in c.kernel.ir
    temps = generate(_graph(m, n, k, tb=tb, dt=dt)).temps
    assert all(int(np.prod(shape)) <= m * n for shape, _ in temps), temps  # the f32 result
    rng = np.random.default_rng(5)
    xa = rng.standard_normal((m, k)).astype(dt.np_dtype)
    xb = rng.standard_normal((n, k) if tb else (k, n)).astype(dt.np_dtype)
    (y,) = c(xa, xb)
    a64, b64 = xa.astype(np.float64), (xb.T if tb else xb).astype(np.float64)
    ref, scale = a64 @ b64, np.abs(a64) @ np.abs(b64)
    bound = (2.0 ** -8 if dt is DType.bf16 else 2.0 ** -11) * np.abs(ref) + \
        2.0 ** -20 * max(1, k) ** 0.5 * scale + 1e-30
    assert y.dtype == xa.dtype and np.all(np.abs(y.astype(np.float64) - ref) <= bound)


@pytest.mark.parametrize("m,n,k,tb,batch", [(37, 45, 700, False, ()), (16, 64, 64, True, (3,)),
                                            (9, 33, 1500, True, ()), (64, 96, 31, False, (2,))])
def test_rounding_in_the_matmul_kernel(m, n, k, tb, batch, monkeypatch):
    """A bf16 matmul (an f32 product whose only reader rounds it to bf16)
    is rounded in the panel kernel's last k-block store, full tiles and
    right edges alike, into the result: no second loop nest over it.
    The bits are the f32 kernel's result rounded to nearest even, as the
    separate rounding gave (several k-blocks, batches, B transposed).
    llvmaccel's kernel is asked for: on CPUs with AMX-BF16 the library's
    bf16 GEMM takes these sizes."""
    ml_dtypes = pytest.importorskip("ml_dtypes")
    monkeypatch.setenv("LLVMACCEL_BLAS", "off")

    def graph(rounded: bool) -> Graph:
        g = Graph()
        a = g.input("a", batch + (m, k), DType.bf16)
        b = g.input("b", batch + ((n, k) if tb else (k, n)), DType.bf16)
        if tb:
            b = g.permute(b, tuple(range(len(batch))) + (len(batch) + 1, len(batch)))
        y = g.matmul(g.cast(a, DType.f32), g.cast(b, DType.f32))
        g.set_outputs([g.cast(y, DType.bf16) if rounded else y])
        return g

    c = compiler.compile_graph(graph(True))
    assert c.kernel.matmuls[0][1] == "own"
    # (The f32 result stays as the k-blocks' partial sums.)
    assert "its reader (cast) computed in the kernel" in c.kernel.matmuls[0][2]
    rng = np.random.default_rng(9)
    xa = rng.standard_normal(batch + (m, k)).astype(ml_dtypes.bfloat16)
    xb = rng.standard_normal(batch + ((n, k) if tb else (k, n))).astype(ml_dtypes.bfloat16)
    (y,) = c(xa, xb)
    (y32,) = compiler.compile_graph(graph(False))(xa, xb)
    np.testing.assert_array_equal(y.view(np.uint16), y32.astype(ml_dtypes.bfloat16).view(np.uint16))


def test_matrix_vector_f32_path_when_disabled(monkeypatch):
    monkeypatch.setenv("LLVMACCEL_BF16_DOT", "off")
    temps = generate(_graph(64, 1, 64)).temps
    assert any(int(np.prod(shape)) == 64 * 64 for shape, _ in temps), temps  # A's f32 copy


# --- through the PyTorch frontend -------------------------------------------------------

torch = pytest.importorskip("torch")


@pytest.fixture
def kernels(monkeypatch):
    """The kernels llvmaccel generates while the test runs."""
    made: list = []
    real = compiler.generate

    def spy(graph, *args, **kwargs):
        made.append(real(graph, *args, **kwargs))
        return made[-1]
    monkeypatch.setattr(compiler, "generate", spy)
    return made


def _native_matmuls(kernels) -> int:
    return sum(1 for k in kernels for _, _, why in k.matmuls if "bf16 operands" in why)


def _run(model, *args):
    import llvmaccel.torch

    torch._dynamo.reset()
    with torch.no_grad():
        expl = llvmaccel.torch.explain(model, *args)
        torch._dynamo.reset()
        got = torch.compile(model, backend="llvmaccel", options={"strict": True})(*args)
        want = model(*args)
    return expl, got, want


@needs_native
@pytest.mark.parametrize("shape", [(5, 7, 3), (32, 48, 64), (2, 9, 33, 17)], ids=str)
def test_torch_matmul_shapes(kernels, shape):
    """``a @ b`` and ``a @ b.mT`` (B read transposed) against eager's bf16
    matmul, with assert_close's bf16 tolerances."""
    *batch, m, n, k = shape
    torch.manual_seed(0)
    a = torch.randn(*batch, m, k, dtype=torch.bfloat16)
    b = torch.randn(*batch, k, n, dtype=torch.bfloat16)
    for fn, y in ((lambda x, w: x @ w, b), (lambda x, w: x @ w.mT, b.mT.contiguous())):
        expl, got, want = _run(fn, a, y)
        assert expl.fully_compiled, str(expl)
        torch.testing.assert_close(got, want)
    # N below a vector with B read along k (the second form) is the f32
    # dot-product kernel's matrix-vector class.
    vw = codegen._matmul_tiling(DType.f32, 1)[0]
    assert _native_matmuls(kernels) == (2 if n >= vw else 1)


@needs_native
def test_torch_bf16_mlp(kernels):
    torch.manual_seed(0)
    mlp = torch.nn.Sequential(torch.nn.Linear(96, 256), torch.nn.GELU(), torch.nn.Linear(256, 37),
                              torch.nn.ReLU(), torch.nn.Linear(37, 10)
                              ).to(torch.bfloat16).eval()
    x = torch.randn(33, 96, dtype=torch.bfloat16)
    expl, got, want = _run(mlp, x)
    assert expl.fully_compiled, str(expl)
    torch.testing.assert_close(got, want)
    # The last layer (N = 10, the weight read along k) is the f32 dot kernel's.
    assert _native_matmuls(kernels) == 2


@needs_native
def test_torch_bf16_transformer_encoder(kernels):
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(64, 4, 128, dropout=0.0, batch_first=True)
    model = torch.nn.TransformerEncoder(layer, 2, enable_nested_tensor=False
                                        ).to(torch.bfloat16).eval()
    x = torch.randn(2, 24, 64, dtype=torch.bfloat16)
    expl, got, want = _run(model, x)
    assert expl.fully_compiled, str(expl)
    # Two layers of bf16 rounding (residuals, norms, softmax) on both sides.
    torch.testing.assert_close(got, want, atol=5e-2, rtol=5e-2)
    assert _native_matmuls(kernels) >= 8


def test_switched_off_by_environment(monkeypatch):
    """``LLVMACCEL_BF16_DOT=off``: the f32 path on any target, and a compiled
    graph of its own (the setting is part of the cache key)."""
    g = _graph(24, 40, 33)
    on = compiler.compile_graph(g)
    monkeypatch.setenv("LLVMACCEL_BF16_DOT", "off")
    assert "dpbf16ps" not in generate(g, target=ZEN4).ir
    off = compiler.compile_graph(g)
    assert off is not on and "dpbf16ps" not in off.kernel.ir
    assert ("dpbf16ps" in on.kernel.ir) == NATIVE
