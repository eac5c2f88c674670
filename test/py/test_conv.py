"""Convolution and pooling through torch.compile(backend="llvmaccel"):
PyTorch's ``convolution``, ``max_pool*d_with_indices`` and ``avg_pool*d``
lowered as direct loop nests or, with enough channels, an im2col copy and a
GEMM, both with padding a bounds check on the input index (the form
accel-masked-load rewrites), against eager, and on inputs that end right
before an unmapped page."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402

import llvmaccel.torch as lt  # noqa: E402
from llvmaccel.target import TargetInfo  # noqa: E402

CASES = {
    "conv1d_pad3": (lambda x, w, b: F.conv1d(x, w, b, padding=3), (2, 4, 50), (6, 4, 7)),
    "conv1d_stride_dilation_groups": (
        lambda x, w, b: F.conv1d(x, w, b, stride=2, padding=2, dilation=2, groups=2),
        (1, 4, 33), (6, 2, 3)),
    "conv1d_same": (lambda x, w, b: F.conv1d(x, w, b, padding="same"), (3, 2, 20), (5, 2, 4)),
    "conv2d_pad1": (lambda x, w, b: F.conv2d(x, w, b, padding=1), (2, 3, 16, 17), (8, 3, 3, 3)),
    "conv2d_stride2_pad2_nobias": (lambda x, w, b: F.conv2d(x, w, None, stride=2, padding=2),
                                   (1, 3, 15, 15), (4, 3, 5, 5)),
    "conv2d_valid": (lambda x, w, b: F.conv2d(x, w, b), (1, 2, 8, 8), (3, 2, 3, 3)),
    "conv2d_depthwise": (lambda x, w, b: F.conv2d(x, w, b, padding=1, groups=4),
                         (1, 4, 9, 9), (4, 1, 3, 3)),
    "conv2d_asymmetric": (lambda x, w, b: F.conv2d(x, w, b, stride=(1, 2), padding=(0, 3),
                                                   dilation=(2, 1)), (2, 2, 11, 13), (3, 2, 2, 5)),
    "conv3d": (lambda x, w, b: F.conv3d(x, w, b, padding=1), (1, 2, 5, 6, 7), (3, 2, 3, 3, 3)),
    # Enough channels for im2col + GEMM (codegen.conv.GEMM_MIN_DEPTH/_OUT).
    "gemm_conv1d_stride_dilation_groups": (
        lambda x, w, b: F.conv1d(x, w, b, stride=2, padding=3, dilation=2, groups=2),
        (2, 16, 41), (16, 8, 3)),
    "gemm_conv2d_asymmetric": (lambda x, w, b: F.conv2d(x, w, b, stride=(2, 1), padding=(2, 3),
                                                        dilation=(1, 2)),
                               (2, 8, 11, 13), (12, 8, 3, 5)),
    "gemm_conv2d_1x1_in_place": (lambda x, w, b: F.conv2d(x, w, b), (2, 16, 7, 9),
                                 (24, 16, 1, 1)),
    "gemm_conv2d_1x1_stride2": (lambda x, w, b: F.conv2d(x, w, None, stride=2),
                                (1, 32, 9, 9), (16, 32, 1, 1)),
    "gemm_conv2d_groups_pad_hi": (lambda x, w, b: F.conv2d(x, w, b, padding="same", groups=4),
                                  (1, 16, 10, 10), (32, 4, 4, 4)),
    "gemm_conv3d": (lambda x, w, b: F.conv3d(x, w, b, padding=(1, 0, 2)), (1, 4, 5, 6, 7),
                    (8, 4, 3, 2, 3)),
}


@pytest.fixture(autouse=True)
def _cache_dir(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("LLVMACCEL_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "cache"))


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_conv_matches_eager(name, dtype):
    fn, xs, ws = CASES[name]
    g = torch.Generator().manual_seed(0)
    x, w = torch.randn(xs, generator=g, dtype=dtype), torch.randn(ws, generator=g, dtype=dtype)
    b = torch.randn(ws[0], generator=g, dtype=dtype)
    torch._dynamo.reset()
    fast = torch.compile(fn, backend="llvmaccel", options={"strict": True})
    with torch.no_grad():
        tol = 1e-4 if dtype is torch.float32 else 1e-10
        torch.testing.assert_close(fast(x, w, b), fn(x, w, b), rtol=tol, atol=tol)
    assert lt.explain(fn, x, w, b).fully_compiled


def test_conv_dynamic_batch_and_length():
    """A Conv1d module (static weights) on inputs of symbolic batch and length."""
    model = torch.nn.Conv1d(4, 6, 7, padding=3).eval()
    torch._dynamo.reset()
    fast = torch.compile(model, backend="llvmaccel", dynamic=True, options={"strict": True})
    with torch.no_grad():
        for n, length in [(1, 9), (3, 40), (2, 7)]:
            x = torch.randn(n, 4, length)
            torch.testing.assert_close(fast(x), model(x), rtol=1e-4, atol=1e-4)


def test_conv_gemm_dynamic_batch_and_length():
    """The im2col + GEMM form with symbolic batch and length: the column
    buffer and the GEMM's N are sized at run time."""
    model = torch.nn.Conv1d(16, 16, 7, padding=3).eval()
    torch._dynamo.reset()
    fast = torch.compile(model, backend="llvmaccel", dynamic=True, options={"strict": True})
    with torch.no_grad():
        for n, length in [(1, 9), (3, 40), (2, 1)]:
            x = torch.randn(n, 16, length)
            torch.testing.assert_close(fast(x), model(x), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize(("xs", "ws", "groups", "gemm"), [
    ((1, 16, 20, 20), (32, 16, 3, 3), 1, True),
    ((1, 64, 20, 20), (64, 16, 1, 1), 4, True),
    ((1, 8, 20, 20), (8, 1, 3, 3), 8, False),   # depthwise: one channel per dot product
    ((1, 3, 20, 20), (4, 3, 3, 3), 1, False),   # four output channels
])
def test_conv_form_follows_the_channels(xs, ws, groups, gemm):
    """Which convolutions become a GEMM: the kernel names a matmul kernel
    for the conv node exactly when it does."""
    from llvmaccel.codegen import generate
    from llvmaccel.graph import DType, Graph

    g = Graph()
    x, w = g.input("x", xs, DType.f32), g.input("w", ws, DType.f32)
    pad = ws[2] // 2
    g.set_outputs([g.conv(x, w, None, (1, 1), (pad, pad), (1, 1), groups)])
    kernel = generate(g)
    assert bool(kernel.matmuls) == gemm, kernel.matmuls


TRANSPOSED = {
    # (in channels, out channels, kernel, stride, padding, output_padding,
    # dilation, groups, input shape)
    "t2d_s2_p1_op1": (4, 8, 3, 2, 1, 1, 1, 1, (1, 4, 8, 8)),
    "t2d_k4_s2_groups": (4, 6, 4, 2, 1, 0, 1, 2, (2, 4, 5, 7)),
    "t2d_dilation": (3, 5, 3, 1, 0, 0, 2, 1, (1, 3, 6, 6)),
    "t2d_depthwise_k2": (6, 6, 2, 2, 0, 0, 1, 6, (1, 6, 5, 5)),
    "t2d_s3_p2_op1": (4, 4, 3, 3, 2, 1, 1, 1, (1, 4, 4, 4)),
    "t2d_gemm_channels": (16, 24, 3, 2, 1, 1, 1, 1, (1, 16, 6, 7)),
    "t1d_s3": (3, 4, 5, 3, 2, 0, 1, 1, (2, 3, 9)),
    "t3d_s2": (2, 3, 3, 2, 1, 1, 1, 1, (1, 2, 3, 4, 5)),
}


@pytest.mark.parametrize("name", sorted(TRANSPOSED))
def test_transposed_convolution_matches_eager(name):
    """``ConvTranspose1d/2d/3d`` (stride, padding, output padding, dilation,
    groups, bias): a GEMM per image and group, then ``col2im``."""
    cin, cout, k, s, p, op, d, groups, shape = TRANSPOSED[name]
    conv = {3: torch.nn.ConvTranspose1d, 4: torch.nn.ConvTranspose2d,
            5: torch.nn.ConvTranspose3d}[len(shape)]
    torch.manual_seed(0)
    m = conv(cin, cout, k, s, p, output_padding=op, dilation=d, groups=groups).eval()
    x = torch.randn(*shape)
    torch._dynamo.reset()
    with torch.no_grad():
        assert lt.explain(m, x).fully_compiled
        fast = torch.compile(m, backend="llvmaccel", options={"strict": True})
        torch.testing.assert_close(fast(x), m(x), rtol=1e-4, atol=1e-4)


def test_transposed_convolution_bf16_matches_eager():
    """Half types: the GEMM and col2im in float32, the result rounded."""
    torch.manual_seed(0)
    m = torch.nn.ConvTranspose2d(8, 4, 3, 2, 1, output_padding=1).eval().to(torch.bfloat16)
    x = torch.randn(1, 8, 6, 5, dtype=torch.bfloat16)
    torch._dynamo.reset()
    with torch.no_grad():
        fast = torch.compile(m, backend="llvmaccel", options={"strict": True})
        torch.testing.assert_close(fast(x), m(x), rtol=2e-2, atol=2e-2)


def test_flip_matches_eager():
    x = torch.randn(2, 3, 4, 5)
    fn = lambda x: torch.flip(x, (0, -1)) + torch.flip(x, (2,))  # noqa: E731
    torch._dynamo.reset()
    fast = torch.compile(fn, backend="llvmaccel", options={"strict": True})
    with torch.no_grad():
        torch.testing.assert_close(fast(x), fn(x))


def test_integer_convolutions_fall_back():
    x, w = torch.randint(0, 5, (1, 2, 5, 5)), torch.randint(0, 5, (3, 2, 3, 3))
    ex = lt.explain(lambda x, w: F.conv2d(x, w), x, w)
    assert not ex.fully_compiled


def test_conv_padding_never_reads_past_the_input():
    """The input (and weights) end right before a PROT_NONE page: a padding
    read that escaped its check would fault (transposed convolutions: a read
    between the dilated input's elements too); the child must exit
    cleanly."""
    code = """
        import warnings
        import numpy as np, torch, torch.nn.functional as F
        import llvmaccel.torch
        from guard import guarded_array
        warnings.simplefilter("ignore")
        rng = np.random.default_rng(0)
        for xs, ws, kw in [((1, 3, 12, 12), (4, 3, 5, 5), dict(padding=2)),
                           ((2, 2, 40), (3, 2, 9), dict(padding=4, stride=3)),
                           ((1, 1, 7, 9), (2, 1, 3, 3), dict(padding=(2, 1), dilation=2)),
                           ((1, 8, 9, 11), (16, 8, 3, 3), dict(padding=2, dilation=2)),
                           ((2, 16, 30), (16, 16, 5), dict(padding=2)),
                           ((1, 3, 6, 7), (3, 4, 3, 3), dict(stride=2, padding=1,
                                                              transposed=True)),
                           ((1, 16, 5, 6), (16, 8, 4, 4), dict(stride=2, padding=0,
                                                                transposed=True))]:
            x = torch.from_numpy(guarded_array(rng.standard_normal(int(np.prod(xs)),
                                 dtype=np.float32))).view(xs)
            w = torch.from_numpy(guarded_array(rng.standard_normal(int(np.prod(ws)),
                                 dtype=np.float32))).view(ws)
            conv = F.conv2d if len(xs) == 4 else F.conv1d
            if kw.pop("transposed", False):
                conv = F.conv_transpose2d
            fn = lambda x, w: conv(x, w, **kw)
            torch._dynamo.reset()
            fast = torch.compile(fn, backend="llvmaccel", options={"strict": True})
            with torch.no_grad():
                torch.testing.assert_close(fast(x, w), fn(x, w), rtol=1e-4, atol=1e-4)
        print("ok")
        """
    env = dict(os.environ, PYTHONPATH=os.path.dirname(__file__))
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=300, env=env)
    assert proc.returncode == 0 and "ok" in proc.stdout, proc.stderr


POOLS = {
    "max3_s2_p1": lambda x: F.max_pool2d(x, 3, 2, 1),
    "max2": lambda x: F.max_pool2d(x, 2),
    "max_dilation": lambda x: F.max_pool2d(x, 3, 1, 1, dilation=2),
    "max_ceil": lambda x: F.max_pool2d(x, 3, 2, 1, ceil_mode=True),
    "max_nan": lambda x: F.max_pool2d(torch.where(x > 2, float("nan"), x), 3, 2, 1),
    "avg3_s2_p1": lambda x: F.avg_pool2d(x, 3, 2, 1),
    "avg_exclude_pad": lambda x: F.avg_pool2d(x, 3, 2, 1, count_include_pad=False),
    "avg_ceil": lambda x: F.avg_pool2d(x, 3, 2, 1, ceil_mode=True),
    "avg_ceil_exclude_pad": lambda x: F.avg_pool2d(x, (3, 2), (2, 3), (1, 1), ceil_mode=True,
                                                   count_include_pad=False),
    "avg_divisor": lambda x: F.avg_pool2d(x, 3, 2, 1, divisor_override=5),
    "max1d": lambda x: F.max_pool1d(x[0], 3, 2, 1),
    "avg1d": lambda x: F.avg_pool1d(x[0], 4, 3, 2),
    "max3d": lambda x: F.max_pool3d(x[None], 3, 2, 1),
    "avg3d": lambda x: F.avg_pool3d(x[None], 2, 1, 1),
    # Adaptive pooling (11 x 13 planes): windows of unequal sizes (gathers
    # of constant positions), of one size at one stride (13 to 6: 3 wide,
    # every 2; the pool node), larger outputs than inputs (overlapping
    # windows), and the max's indices with ties and NaN.
    "adaptive_avg_4x5": lambda x: F.adaptive_avg_pool2d(x, (4, 5)),
    "adaptive_avg_uniform_5x6": lambda x: F.adaptive_avg_pool2d(x, (5, 6)),
    "adaptive_avg_upsample": lambda x: F.adaptive_avg_pool2d(x, (13, 17)),
    "adaptive_avg_unbatched": lambda x: F.adaptive_avg_pool2d(x[0], (4, 5)),
    "adaptive_avg1d": lambda x: F.adaptive_avg_pool1d(x[0], 5),
    "adaptive_avg3d": lambda x: F.adaptive_avg_pool3d(x[None], (2, 4, 5)),
    "adaptive_avg_bf16": lambda x: F.adaptive_avg_pool2d(x.bfloat16(), (4, 5)).float(),
    "adaptive_max_4x5": lambda x: F.adaptive_max_pool2d(x, (4, 5), return_indices=True),
    "adaptive_max_uniform_5x6": lambda x: F.adaptive_max_pool2d(x, (5, 6),
                                                                return_indices=True),
    "adaptive_max_ties": lambda x: F.adaptive_max_pool2d(x.round(), (4, 5),
                                                         return_indices=True),
    "adaptive_max_nan": lambda x: F.adaptive_max_pool2d(
        torch.where(x > 1.5, float("nan"), x), (4, 5), return_indices=True),
    "adaptive_max1d": lambda x: F.adaptive_max_pool1d(x[0], 5, return_indices=True),
    "adaptive_max3d": lambda x: F.adaptive_max_pool3d(x[None], (2, 4, 5),
                                                      return_indices=True),
}


@pytest.mark.parametrize("name", sorted(POOLS))
def test_pool_matches_eager(name):
    fn = POOLS[name]
    x = torch.randn(2, 3, 11, 13, generator=torch.Generator().manual_seed(1))
    torch._dynamo.reset()
    fast = torch.compile(fn, backend="llvmaccel", options={"strict": True})
    with torch.no_grad():
        torch.testing.assert_close(fast(x), fn(x), rtol=1e-5, atol=1e-5, equal_nan=True)


def test_pool_indices_are_lowered():
    """max_pool's indices output is computed too (the argmax per window, see
    test_batchnorm_transformer.test_max_pool_indices for ties and NaN)."""
    fn = lambda x: F.max_pool2d(x, 2, return_indices=True)[1]  # noqa: E731
    x = torch.randn(1, 2, 6, 6)
    ex = lt.explain(fn, x)
    assert ex.fully_compiled, str(ex)
    torch._dynamo.reset()
    assert torch.equal(torch.compile(fn, backend="llvmaccel")(x), fn(x))


@pytest.mark.parametrize("output, kind", [((4, 5), "take"), ((5, 6), "pool")])
def test_adaptive_pool_windows(output, kind):
    """Adaptive pooling of 11 x 13 planes: to 4 x 5 its windows differ in
    size (gathers of the windows' positions, one per tap of the longest);
    to 5 x 6 they are 3 x 3 every 2 x 2, an ordinary pool."""
    from llvmaccel.torch.lowering import lower

    gm = torch.fx.experimental.proxy_tensor.make_fx(
        lambda x: F.adaptive_avg_pool2d(x, output))(torch.randn(2, 3, 11, 13))
    ops = {n.op for n in lower(gm).graph.nodes}
    assert kind in ops and ({"take", "pool"} - {kind}).isdisjoint(ops), ops


@pytest.mark.parametrize("indices", [False, True])
def test_unused_pool_indices_are_not_computed(indices):
    """max_pool2d_with_indices's indices at inference, where nothing reads
    them, are not part of the lowered graph (Graph.pruned)."""
    from llvmaccel.torch.lowering import lower

    def fn(x):
        values, where = F.max_pool2d(x, 3, 2, 1, return_indices=True)
        return (values, where) if indices else values

    gm = torch.fx.experimental.proxy_tensor.make_fx(fn)(torch.randn(1, 2, 9, 9))
    fns = [n.attrs.get("fn") for n in lower(gm).graph.nodes if n.op == "pool"]
    assert fns == (["max", "argmax"] if indices else ["max"])


@pytest.mark.parametrize("kind", ["pool", "depthwise"])
@pytest.mark.parametrize("cpu", ["skylake-avx512", "znver4", "haswell"])
def test_window_rows_vectorize_without_gathers(cpu, kind):
    """A 2 x 2 average of 14 x 14 planes, and a depthwise 3 x 3 convolution
    of 7 x 7 planes, serial kernels for ``cpu``: the loops over planes and
    output rows carry llvm.loop.vectorize.enable = false, and the optimized
    kernel reads with plain (strided) vector loads. Without the metadata,
    LLVM 22 vectorized the 7 output rows of a plane on AVX-512 targets as
    masked gathers and scatters: 5x slower than inductor on one thread."""
    import numpy as np

    from llvmaccel import crossrun
    from llvmaccel.graph import DType, Graph

    if crossrun.available("x86_64"):
        pytest.skip(crossrun.available("x86_64"))
    g = Graph()
    if kind == "pool":
        x = g.input("x", (4, 8, 14, 14), DType.f32)
        g.set_outputs([g.pool(x, "avg", (2, 2), (2, 2), (0, 0))])
    else:
        x = g.input("x", (4, 8, 7, 7), DType.f32)
        w = g.constant(np.ones((8, 1, 3, 3), np.float32), DType.f32)
        g.set_outputs([g.conv(x, w, None, (1, 1), (1, 1), (1, 1), groups=8)])
    prog = crossrun.compile_for(g, "x86_64", cpu)
    assert '!"llvm.loop.vectorize.enable", i1 false' in prog.kernel.ir
    assert "masked.gather" not in prog.optimized_ir and "masked.scatter" not in prog.optimized_ir
    assert "<8 x float>" in prog.optimized_ir or "<4 x float>" in prog.optimized_ir


def test_pool_padding_never_reads_past_the_input():
    code = """
        import warnings
        import numpy as np, torch, torch.nn.functional as F
        import llvmaccel.torch
        from guard import guarded_array
        warnings.simplefilter("ignore")
        x = torch.from_numpy(guarded_array(np.arange(180, dtype=np.float32))).view(1, 2, 9, 10)
        for fn in (lambda x: F.max_pool2d(x, 3, 2, 1), lambda x: F.avg_pool2d(x, 5, 1, 2),
                   lambda x: F.max_pool2d(x, 3, 2, 1, ceil_mode=True)):
            torch._dynamo.reset()
            fast = torch.compile(fn, backend="llvmaccel", options={"strict": True})
            with torch.no_grad():
                torch.testing.assert_close(fast(x), fn(x))
        print("ok")
        """
    env = dict(os.environ, PYTHONPATH=os.path.dirname(__file__))
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=300, env=env)
    assert proc.returncode == 0 and "ok" in proc.stdout, proc.stderr


ZEN4 = TargetInfo(
    "x86_64-unknown-linux-gnu", "znver4",
    frozenset({"avx2", "fma", "avx512f", "avx512vl", "avx512bf16"}), 512, 32)
SKX = TargetInfo(
    "x86_64-unknown-linux-gnu", "skylake-avx512",
    frozenset({"avx2", "fma", "avx512f", "avx512vl"}), 512, 32)


def _bf16_conv_graph():
    from llvmaccel.graph import DType, Graph

    g = Graph()
    x, w = g.input("x", (2, 16, 9, 9), DType.bf16), g.input("w", (32, 16, 3, 3), DType.bf16)
    g.set_outputs([g.conv(x, w, None, (1, 1), (1, 1), (1, 1), 1)])
    return g


@pytest.mark.parametrize(("target", "native"), [(ZEN4, True), (SKX, False)],
                         ids=["avx512bf16", "no-bf16-dot"])
def test_bf16_conv_columns_and_dot_product(target, native):
    """A bf16 convolution in the GEMM form on a target with a bf16 dot
    product copies bf16 columns (no f32 copy of input or weights) and calls
    the dot product; without one, its columns and GEMM are f32."""
    from llvmaccel.codegen import generate
    from llvmaccel.graph import DType

    kern = generate(_bf16_conv_graph(), target=target)
    col_dtypes = {dt for shape, dt in kern.temps if shape == (16 * 9, 81)}
    assert col_dtypes == {DType.bf16 if native else DType.f32}
    assert ("@llvm.x86.avx512bf16.dpbf16ps.512(" in kern.ir) == native
    assert (DType.f32 in {dt for shape, dt in kern.temps if shape == (32, 16, 3, 3)}) != native


def test_bf16_convolutions_match_eager():
    """bf16 convolutions (GEMM form, padded, strided, grouped, 1x1 in place)
    against eager within bf16's tolerance, whichever path the host takes."""
    g = torch.Generator().manual_seed(5)
    for xs, ws, kw in [((2, 16, 11, 13), (32, 16, 3, 3), dict(padding=1)),
                       ((1, 32, 9, 9), (16, 8, 3, 3), dict(stride=2, groups=4, padding=2)),
                       ((2, 16, 7, 7), (24, 16, 1, 1), {}),
                       ((1, 17, 40), (16, 17, 5), dict(padding=2))]:
        x = torch.randn(xs, generator=g).bfloat16()
        w = (torch.randn(ws, generator=g) / 4).bfloat16()
        conv = F.conv2d if len(xs) == 4 else F.conv1d
        fn = lambda x, w, conv=conv, kw=kw: conv(x, w, **kw)  # noqa: E731
        torch._dynamo.reset()
        fast = torch.compile(fn, backend="llvmaccel", options={"strict": True})
        with torch.no_grad():
            torch.testing.assert_close(fast(x, w).float(), fn(x, w).float(), rtol=2e-2,
                                       atol=2e-2)


@pytest.mark.parametrize("cpu", ["skylake-avx512", "znver4"])
def test_short_rows_vectorize_without_gathers(cpu):
    """A loop nest over rows of 9 elements (rows picked by a take, 4 of 10
    per plane: not one flat loop): its outer loops carry
    llvm.loop.vectorize.enable = false, so that LLVM vectorizes each
    unrolled row rather than 8 rows at a time as gathers and scatters (the
    choice LLVM 22 made on AVX-512 targets: adaptive average pooling of
    10 x 9 planes ran 6x slower serially than on two threads)."""
    import numpy as np

    from llvmaccel import crossrun
    from llvmaccel.graph import DType, Graph

    if crossrun.available("x86_64"):
        pytest.skip(crossrun.available("x86_64"))
    g = Graph()
    x = g.input("x", (256, 10, 9), DType.f32)
    rows = g.constant(np.array([0, 3, 6, 9]), DType.i64)
    g.set_outputs([g.binary("mul", g.take(x, rows, 1, "clip"), g.scalar(0.5, DType.f32))])
    prog = crossrun.compile_for(g, "x86_64", cpu)
    assert '!"llvm.loop.vectorize.enable", i1 false' in prog.kernel.ir
    assert "masked.gather" not in prog.optimized_ir and "masked.scatter" not in prog.optimized_ir
