"""bfloat16 matmuls on AMX tiles (codegen.matmul_amx): which products take
the kernel and why not (IR, any host), the tile instructions the X86 backend
selects from it (llc), and execution where the host has AMX-BF16 and the
kernel grants the tiles: every edge (rows past the last 32-row tile, columns
past the last 32-column panel), B in either layout, batches, several row
blocks, and a fused reader, against float64 products of the bf16 values."""

from __future__ import annotations

import dataclasses
import subprocess

import numpy as np
import pytest

from llvmaccel import compiler
from llvmaccel.codegen import generate
from llvmaccel.codegen.matmul_amx import amx_reason, amx_row_block
from llvmaccel.graph import DType, Graph, Sym
from llvmaccel.target import TargetInfo, host

SPR = TargetInfo("x86_64-unknown-linux-gnu", "sapphirerapids",
                 frozenset({"avx2", "fma", "avx512f", "avx512vl", "avx512bw", "avx512bf16",
                            "amx-tile", "amx-bf16"}), 512, 32, 256, 48 << 10, 2 << 20)
ZEN4 = dataclasses.replace(SPR, cpu="znver4",
                           features=SPR.features - {"amx-tile", "amx-bf16"})

NATIVE = amx_reason(host(), True, 64, 64, 64, False) is None
needs_amx = pytest.mark.skipif(
    not NATIVE, reason=f"this host ({host().cpu}) cannot run AMX-BF16 tiles: "
                       f"{amx_reason(host(), True, 64, 64, 64, False)}")


@pytest.fixture(autouse=True)
def _cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("LLVMACCEL_CACHE_DIR", str(tmp_path / "cache"))


def _graph(m, n, k, tb: bool = False, batch: tuple = (), relu: bool = False) -> Graph:
    """``A @ B`` of bf16 inputs rounded back to bf16 (``relu``: of the f32
    product, before the rounding); ``tb``: B is a transposed view."""
    g = Graph()
    a = g.input("a", batch + (m, k), DType.bf16)
    b = g.input("b", batch + ((n, k) if tb else (k, n)), DType.bf16)
    if tb:
        b = g.permute(b, tuple(range(len(batch))) + (len(batch) + 1, len(batch)))
    y = g.matmul(g.cast(a, DType.f32), g.cast(b, DType.f32))
    if relu:
        y = g.unary("relu", y)
    g.set_outputs([g.cast(y, DType.bf16)])
    return g


# --- the kernel chosen (IR only: any host) ----------------------------------------------

@pytest.mark.parametrize("tb", [False, True], ids=["b", "bT"])
def test_amx_target_gets_tiles(tb):
    """On a target with AMX-BF16, a static product with K a multiple of 32
    runs on tiles; the rows past the last 32-row tile take the pair
    kernel's register tiles on the same panel."""
    kern = generate(_graph(70, 45, 64, tb=tb), target=SPR)
    (_, kind, why), = kern.matmuls
    assert kind == "amx" and "AMX tiles" in why, why
    assert "@llvm.x86.tdpbf16ps.internal(i16 16, i16 64, i16 64," in kern.ir
    assert "@llvm.x86.tileloadd64.internal(i16 16, i16 64," in kern.ir
    assert "@llvm.x86.avx512bf16.dpbf16ps.512(" in kern.ir  # rows 64..69
    assert "its reader (cast) computed in the kernel" in why


@pytest.mark.parametrize("target,m,n,k,tb,why", [
    (ZEN4, 64, 64, 64, False, "no AMX-BF16"),
    (SPR, 64, 64, 48, False, "not a multiple of 32"),
    (SPR, 64, 64, 1024, False, "up to 512"),
    (SPR, 16, 64, 64, False, "fewer than 32 rows"),
    (SPR, Sym("m"), 64, 64, False, "run time"),
], ids=["zen4", "k48", "k1024", "m16", "dynamic"])
def test_products_the_tiles_do_not_take(target, m, n, k, tb, why):
    assert why in amx_reason(target, False, m, n, k, tb)
    kern = generate(_graph(m, n, k, tb=tb), target=target)
    assert kern.matmuls[0][1] != "amx"
    assert "tdpbf16ps" not in kern.ir


def test_transposed_a_and_switch():
    assert "transposed" in amx_reason(SPR, False, 64, 64, 64, True)
    g = Graph()
    a = g.input("a", (64, 64), DType.bf16)
    b = g.input("b", (64, 64), DType.bf16)
    y = g.matmul(g.cast(g.permute(a, (1, 0)), DType.f32), g.cast(b, DType.f32))
    g.set_outputs([g.cast(y, DType.bf16)])
    assert generate(g, target=SPR).matmuls[0][1] != "amx"


def test_switched_off_by_environment(monkeypatch):
    monkeypatch.setenv("LLVMACCEL_AMX", "off")
    assert amx_reason(SPR, False, 64, 64, 64, False) == "LLVMACCEL_AMX=off"
    assert "tdpbf16ps" not in generate(_graph(64, 64, 64), target=SPR).ir


def test_row_blocks_follow_the_l2():
    """Rows per block: half the L2 of bf16 rows of K, 32 at least."""
    assert amx_row_block(256, SPR) == 2048
    assert amx_row_block(512, SPR) == 1024
    assert amx_row_block(512, dataclasses.replace(SPR, l2_bytes=64 << 10)) == 32


def test_backend_configures_and_releases_the_tiles():
    """The X86 backend (this LLVM's llc) selects the tile instructions from
    the kernel's IR, configures the tiles and releases them at the end."""
    from llvmaccel.crosstarget import _tool
    llc = _tool("llc")
    if llc is None:
        pytest.skip("no llc of this LLVM release")
    ir = generate(_graph(100, 70, 96, tb=True), target=SPR).ir
    asm = subprocess.run([llc, "-O2", f"-mtriple={SPR.triple}",
                          "-mattr=+avx512f,+avx512bw,+avx512vl,+avx512bf16,+amx-tile,+amx-bf16",
                          "-o", "-"], input=ir, capture_output=True, text=True, check=True).stdout
    for insn in ("ldtilecfg", "tileloadd", "tdpbf16ps", "tilerelease"):
        assert insn in asm, insn


# --- execution on this host -------------------------------------------------------------

def _check(c, m, n, k, tb=False, batch=(), relu=False) -> None:
    """Against float64 products of the bf16 values: f32 accumulation's error
    plus the result's rounding to bf16."""
    import ml_dtypes
    rng = np.random.default_rng(m * 7 + n * 3 + k)
    xa = rng.standard_normal(batch + (m, k)).astype(ml_dtypes.bfloat16)
    xb = rng.standard_normal(batch + ((n, k) if tb else (k, n))).astype(ml_dtypes.bfloat16)
    (y,) = c(xa, xb)
    a64 = xa.astype(np.float64)
    b64 = np.swapaxes(xb, -1, -2).astype(np.float64) if tb else xb.astype(np.float64)
    ref = np.matmul(a64, b64)
    scale = np.matmul(np.abs(a64), np.abs(b64))
    if relu:
        ref = np.maximum(ref, 0)
    err = np.abs(y.astype(np.float64) - ref)
    bound = 2.0 ** -8 * np.abs(ref) + 2.0 ** -20 * k ** 0.5 * scale + 1e-30
    assert y.shape == ref.shape and (err <= bound).all(), (m, n, k, (err / bound).max())


@needs_amx
@pytest.mark.parametrize("m,n,k", [(32, 32, 32), (33, 45, 64), (70, 33, 128), (64, 17, 96),
                                   (100, 100, 256)], ids=str)
@pytest.mark.parametrize("tb", [False, True], ids=["b", "bT"])
def test_every_edge(m, n, k, tb):
    c = compiler.compile_graph(_graph(m, n, k, tb=tb))
    assert c.kernel.matmuls[0][1] == "amx"
    _check(c, m, n, k, tb=tb)


@needs_amx
def test_batches_blocks_and_a_fused_reader():
    c = compiler.compile_graph(_graph(40, 50, 64, tb=True, batch=(3,), relu=True))
    assert c.kernel.matmuls[0][1] == "amx"
    _check(c, 40, 50, 64, tb=True, batch=(3,), relu=True)
    # 2086 rows of K = 512: 1024-row blocks on a 2 MiB L2, 6 rows past them.
    c = compiler.compile_graph(_graph(2086, 40, 512, tb=True))
    assert c.kernel.matmuls[0][1] == "amx"
    _check(c, 2086, 40, 512, tb=True)


@needs_amx
@pytest.mark.parametrize("relu", [False, True], ids=["c", "relu"])
@pytest.mark.parametrize("tb", [False, True], ids=["b", "bT"])
def test_k_blocks(tb, relu, monkeypatch):
    """Several k-blocks (a 64-deep block made to happen at K = 192): the
    tiles start from C's partial sums after the first, full panels and the
    right edge alike, and the rows past the last tile too; a fused reader
    only in the last."""
    from llvmaccel.codegen import matmul_amx

    monkeypatch.setattr(matmul_amx, "AMX_KC", 64)
    c = compiler.compile_graph(_graph(70, 45, 192, tb=tb, relu=relu))
    assert c.kernel.matmuls[0][1] == "amx"
    _check(c, 70, 45, 192, tb=tb, relu=relu)


@needs_amx
def test_torch_linear_matches_eager():
    """A bf16 Linear + ReLU through torch.compile: the AMX kernel, within
    bf16's tolerance of eager PyTorch (oneDNN's AMX kernel)."""
    torch = pytest.importorskip("torch")
    import llvmaccel.torch  # noqa: F401

    torch.manual_seed(0)
    lin = torch.nn.Sequential(torch.nn.Linear(96, 80), torch.nn.ReLU()).eval().to(torch.bfloat16)
    x = torch.randn(3, 50, 96).to(torch.bfloat16)
    with torch.no_grad():
        got = torch.compile(lin, backend="llvmaccel", dynamic=False)(x)
        want = lin(x)
    torch.testing.assert_close(got, want, rtol=1.6e-2, atol=1e-2)


@needs_amx
def test_convolution_gemm_on_tiles():
    """A bf16 convolution in the GEMM form whose depth (channels x kernel
    size) the tiles take: its product on AMX tiles, within bf16's tolerance
    of eager PyTorch, 1x1 and 3x3, with a bias and padding."""
    torch = pytest.importorskip("torch")
    import llvmaccel.torch  # noqa: F401

    torch.manual_seed(1)
    for conv, shape in ((torch.nn.Conv2d(64, 48, 1), (2, 64, 9, 11)),
                        (torch.nn.Conv2d(32, 40, 3, padding=1), (1, 32, 12, 10))):
        conv = conv.eval().to(torch.bfloat16)
        x = torch.randn(shape).to(torch.bfloat16)
        seen = set(compiler._cache)
        with torch.no_grad():
            got = torch.compile(conv, backend="llvmaccel", dynamic=False)(x)
            want = conv(x)
        torch._dynamo.reset()
        kinds = [mm[1] for key, cg in compiler._cache.items() if key not in seen
                 for mm in cg.kernel.matmuls]
        assert kinds == ["amx"], kinds
        torch.testing.assert_close(got, want, rtol=1.6e-2, atol=2e-2)


@needs_amx
def test_attention_scores_on_tiles():
    """A bf16 self-attention (heads sliced from a QKV projection, as a
    TransformerEncoderLayer's): the fused attention computes the scores on
    AMX tiles from the bf16 heads, within bf16's tolerance of eager."""
    torch = pytest.importorskip("torch")
    import torch.nn.functional as F

    import llvmaccel.torch  # noqa: F401

    b, s, h, d = 2, 128, 4, 64
    qkv = torch.randn(b, s, 3 * h * d, generator=torch.Generator().manual_seed(3))
    qkv = qkv.to(torch.bfloat16)

    def fn(qkv):
        q, k, v = (t.view(b, s, h, d).transpose(1, 2) for t in qkv.split(h * d, -1))
        return F.scaled_dot_product_attention(q, k, v)

    seen = set(compiler._cache)
    with torch.no_grad():
        got = torch.compile(fn, backend="llvmaccel", dynamic=False)(qkv)
    torch._dynamo.reset()
    (kern,) = [cg.kernel for key, cg in compiler._cache.items() if key not in seen]
    (_, kind, why), = kern.attention
    assert kind == "fused" and "scores on AMX tiles" in why, why
    assert "tdpbf16ps" in kern.ir
    torch.testing.assert_close(got, fn(qkv), rtol=1.6e-2, atol=1e-2)
