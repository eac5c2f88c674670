"""Intra-op threads (llvmaccel.codegen.parallel, bindings/Parallel.cpp):
results with N threads identical to the serial kernel and to eager PyTorch,
errors inside parallel steps, thread counts changing between calls, and
several Python threads calling kernels at once."""

from __future__ import annotations

import os
import subprocess
import sys
import threading

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from llvmaccel import blas
from llvmaccel._native import core
from llvmaccel.codegen import generate, parallel
from llvmaccel.compiler import compile_graph
from llvmaccel.errors import KernelIndexError
from llvmaccel.graph import DType, Graph, Sym, SymExpr

pytestmark = pytest.mark.skipif(parallel.max_threads() < 2, reason="needs 2 CPUs")

BIG = (512, 1024)  # 2**19 elements: past MIN_WORK


@pytest.fixture(autouse=True)
def _threads():
    yield
    blas.set_num_threads(None)


def _both(fn, *args):
    """fn(*args) compiled with llvmaccel, with 1 and with 2 threads."""
    c = torch.compile(fn, backend="llvmaccel", dynamic=False)
    out = []
    for n in (1, 2):
        blas.set_num_threads(n)
        out.append(c(*args))
    return out


def _same(a, b) -> None:
    if isinstance(a, (tuple, list)):
        for x, y in zip(a, b, strict=True):
            _same(x, y)
        return
    assert torch.equal(a, b)


OPS = {
    "tanh_affine": lambda x: torch.tanh(x) * 1.5 + 0.5,
    "exp": torch.exp,
    "gelu": F.gelu,
    "sum_last": lambda x: x.sum(-1),
    "sum_first": lambda x: x.sum(0),
    "amax_last": lambda x: x.amax(-1),
    "argmax_last": lambda x: x.argmax(-1),
    "mean_all": lambda x: x.mean(),
    "softmax": lambda x: torch.softmax(x, -1),
    "log_softmax0": lambda x: torch.log_softmax(x, 0),
    "layer_norm": lambda x: F.layer_norm(x, (x.shape[-1],)),
    "transpose_add": lambda x: x.t().contiguous()[:, :512] + 1,
    "matmul_relu": lambda x: torch.relu(x[:, :256] @ x[:256, :300]),
}


@pytest.mark.parametrize("name", sorted(OPS))
def test_ops_match_serial_and_eager(name):
    fn = OPS[name]
    x = torch.randn(BIG, generator=torch.Generator().manual_seed(1))
    one, two = _both(fn, x)
    _same(one, two)
    ref = fn(x)
    if ref.dtype.is_floating_point:
        torch.testing.assert_close(two, ref, rtol=1e-4, atol=1e-4)
    else:
        assert torch.equal(two, ref)


def test_3d_reductions_each_axis():
    x = torch.randn(64, 96, 48)
    for axis in range(3):
        one, two = _both(lambda t, a=axis: t.sum(a), x)
        _same(one, two)
        torch.testing.assert_close(two, x.sum(axis), rtol=1e-5, atol=1e-4)


def test_integer_ops_identical():
    x = torch.randint(-1000, 1000, BIG, dtype=torch.int64)
    fn = lambda t: (t * 3 + 7).sum(-1), lambda t: t.cumsum(-1), lambda t: t.max(0).values  # noqa: E731
    for f in fn:
        one, two = _both(f, x)
        _same(one, two)
        assert torch.equal(two, f(x))


def test_embedding_bag_and_conv():
    table = torch.randn(50000, 64)
    idx = torch.randint(0, 50000, (8192,))
    off = torch.arange(0, 8192, 16)
    one, two = _both(lambda t, i, o: F.embedding_bag(i, t, o, mode="sum") * 2, table, idx, off)
    _same(one, two)
    torch.testing.assert_close(two, F.embedding_bag(idx, table, off, mode="sum") * 2)
    img, w = torch.randn(2, 8, 64, 64), torch.randn(16, 8, 3, 3)
    one, two = _both(lambda a, b: torch.relu(F.conv2d(a, b, padding=1)), img, w)
    _same(one, two)
    torch.testing.assert_close(two, torch.relu(F.conv2d(img, w, padding=1)),
                               rtol=1e-4, atol=1e-4)


def _bag_graph(last: bool, mode: str, padding_idx: int | None = None) -> Graph:
    g = Graph()
    t = g.input("t", (50000, 64), DType.f32)
    i = g.input("i", (8192,), DType.i64)
    o = g.input("o", (513 if last else 512,), DType.i64)
    g.set_outputs([g.embedding_bag(t, i, o, mode=mode, include_last_offset=last,
                                   padding_idx=padding_idx)])
    return g


def test_embedding_bag_bags_split_between_threads():
    """The bags of an embedding_bag are chunked between the threads (its
    checks and bounds run first, as a step of their own), with every mode
    and offset layout giving the serial kernel's bits; a bad index or offset
    raises with threads as without."""
    ir = generate(_bag_graph(False, "sum")).ir
    spmd = ir[ir.index("@llvmaccel_main.spmd("):]
    # The prologue step (one chunk), then the bags (one per claimed chunk).
    assert "@llvmaccel_parallel_claim(ptr %par.team, i64 0, i64 0, i64 1, i64 %par.tid)" in spmd
    assert ("@llvmaccel_parallel_claim(ptr %par.team, i64 1, i64 0, i64 %par.chunks, "
            "i64 %par.tid)") in spmd
    table = torch.randn(50000, 64)
    idx = torch.randint(0, 50000, (8192,))
    idx[::7] = 3
    for last, mode, pad in [(False, "sum", None), (True, "mean", None), (False, "mean", 3)]:
        c = compile_graph(_bag_graph(last, mode, pad))
        off = torch.arange(0, 8193 if last else 8192, 16)
        if last:
            off[-1] = 8192
        args = (table.numpy(), idx.numpy(), off.numpy())
        outs = []
        for n in (1, 2):
            blas.set_num_threads(n)
            outs.append(c(*args)[0])
        np.testing.assert_array_equal(outs[0], outs[1])
        ref = F.embedding_bag(idx, table, off, mode=mode, include_last_offset=last,
                              padding_idx=pad)
        torch.testing.assert_close(torch.from_numpy(outs[1]), ref)
        bad = idx.clone()
        bad[8000] = 50000
        with pytest.raises((KernelIndexError, IndexError)):
            c(table.numpy(), bad.numpy(), off.numpy())
        worse = off.clone()
        worse[100] = worse[99] - 1
        with pytest.raises(RuntimeError):
            c(table.numpy(), idx.numpy(), worse.numpy())


def test_spmd_bag_loop_is_prefetched_across_bags():
    """In the SPMD body the buffers are not ``noalias`` (the threads share
    them), but their accesses get alias scopes (``llvmaccel-distinct-buffers``)
    and the chunk count is at least 1 for SCEV (``umax``): so accel-prefetch
    can clamp a look-ahead to the chunk's bags and reads the next bags' rows
    ahead, as in the serial kernel, rather than stopping at each bag's end
    (which cost the DLRM 3-12% on two threads)."""
    g = Graph()
    t = g.input("t", (1 << 20, 64), DType.f32)  # 256 MiB: past every cache
    i = g.input("i", (65536,), DType.i64)
    o = g.input("o", (2048,), DType.i64)
    g.set_outputs([g.embedding_bag(t, i, o, mode="sum")])
    c = compile_graph(g)
    ir = c.optimized_ir
    head = next(line for line in ir.splitlines()
                if line.startswith("define") and "@llvmaccel_main.spmd(" in line)
    spmd = ir[ir.index(head):]
    spmd = spmd[:spmd.index("\n}\n")]
    assert "!alias.scope" in spmd and "!noalias" in spmd
    assert "llvmaccel-distinct-buffers" not in ir
    mine = [r for r in c.report.remarks if r.pass_name == "accel-prefetch"
            and r.function == "llvmaccel_main.spmd"]
    assert any(r.kind == "passed" and "across the iterations of the outer loop" in r.message
               for r in mine), [r.message for r in mine]
    assert not any("look-ahead stops" in r.message for r in mine)


def test_batched_matmul_split_between_threads(monkeypatch):
    """The batch indices of llvmaccel's own batched matmul are chunked
    between the threads (DLRM's interaction ``z @ z^T``), bit-identical to
    one thread, with an odd batch and edges in every dimension."""
    monkeypatch.setenv("LLVMACCEL_BLAS", "off")
    g = Graph()
    a = g.input("a", (67, 29, 48), DType.f32)
    b = g.input("b", (67, 48, 37), DType.f32)
    g.set_outputs([g.matmul(a, b)])
    kernel = generate(g)
    spmd = kernel.ir[kernel.ir.index("@llvmaccel_main.spmd("):]
    assert ("@llvmaccel_parallel_claim(ptr %par.team, i64 0, i64 0, i64 %par.chunks, "
            "i64 %par.tid)") in spmd
    c = compile_graph(g)
    rng = np.random.default_rng(3)
    xa = rng.standard_normal((67, 29, 48)).astype(np.float32)
    xb = rng.standard_normal((67, 48, 37)).astype(np.float32)
    outs = []
    for n in (1, 2):
        blas.set_num_threads(n)
        outs.append(c(xa, xb)[0])
    np.testing.assert_array_equal(outs[0], outs[1])
    np.testing.assert_allclose(outs[1], xa.astype(np.float64) @ xb, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("blas_mode", ["off", "always"])
@pytest.mark.parametrize("bias", [False, True])
def test_im2col_convolution_split_between_threads(monkeypatch, blas_mode, bias):
    """A 3x3 convolution of one image and one group: its im2col copy is a
    step of its own whose channels the threads split, then the product
    (llvmaccel's kernel with its panels split, or one library call) and
    the bias, each once the step before is done; bit-identical to one
    thread and equal to PyTorch's."""
    monkeypatch.setenv("LLVMACCEL_BLAS", blas_mode)
    rng = np.random.default_rng(5)
    g = Graph()
    x = g.input("x", (1, 24, 29, 31), DType.f32)
    w = g.input("w", (40, 24, 3, 3), DType.f32)
    b = g.input("b", (40,), DType.f32) if bias else None
    g.set_outputs([g.conv(x, w, b, (1, 1), (1, 1), (1, 1))])
    xs = [rng.standard_normal((1, 24, 29, 31)).astype(np.float32),
          rng.standard_normal((40, 24, 3, 3)).astype(np.float32)]
    if bias:
        xs.append(rng.standard_normal(40).astype(np.float32))
    kernel = generate(g)
    spmd = kernel.ir[kernel.ir.index("@llvmaccel_main.spmd("):]
    claims = [ln for ln in spmd.splitlines() if "= call i64 @llvmaccel_parallel_claim(" in ln]
    assert len(claims) == (3 if bias else 2), claims
    assert "i64 0, i64 0, i64 %par.chunks, i64 %par.tid)" in claims[0]  # the copy's channels
    c = compile_graph(g)
    outs = []
    try:
        for n in (1, 2):
            blas.set_num_threads(n)
            outs.append(c(*xs)[0])
    finally:
        blas.set_num_threads(None)
    if blas_mode == "off":
        np.testing.assert_array_equal(outs[0], outs[1])
    t = [torch.from_numpy(v) for v in xs]
    want = F.conv2d(t[0], t[1], t[2] if bias else None, padding=1).numpy()
    np.testing.assert_allclose(outs[1], want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("case", ["f32", "f32_relu", "bf16", "conv1x1", "tall_relu", "wide",
                                  "linear_b1"])
def test_matmul_column_panels_split_between_threads(monkeypatch, case):
    """One product of llvmaccel's own kernel (no batch loop to split) has its
    column panels chunked between the threads, or, with fewer panels than
    chunks, its row tiles (``tall_relu``, a DLRM layer's shape, with a
    remainder of rows; ``wide`` keeps the panel split), or, in the dot
    kernel of a batch-1 ``linear`` (``linear_b1``), its column tiles: the panel kernel,
    with a fused reader, the bf16 kernel (AMX tiles where the host has
    them) and a 1x1 convolution reading its image in place; bit-identical
    to one thread, with edges in every dimension."""
    monkeypatch.setenv("LLVMACCEL_BLAS", "off")
    rng = np.random.default_rng(4)
    g = Graph()
    if case == "conv1x1":
        x = g.input("x", (2, 128, 17, 19), DType.f32)
        w = g.input("w", (96, 128, 1, 1), DType.f32)
        g.set_outputs([g.conv(x, w, None, (1, 1), (0, 0), (1, 1))])
        xs = [rng.standard_normal((2, 128, 17, 19)).astype(np.float32),
              rng.standard_normal((96, 128, 1, 1)).astype(np.float32)]
        want = np.einsum("nchw,oc->nohw", xs[0].astype(np.float64), xs[1][:, :, 0, 0])
    else:
        dt = DType.bf16 if case == "bf16" else DType.f32
        m, k, n = {"tall_relu": (2045, 74, 64), "wide": (70, 200, 1500),
                   "linear_b1": (1, 1031, 999)}.get(case, (333, 256, 301))
        a = g.input("a", (m, k), dt)
        if case == "linear_b1":  # W [N, K], read transposed
            b = g.permute(g.input("b", (n, k), dt), (1, 0))
        else:
            b = g.input("b", (k, n), dt)
        if dt is DType.bf16:
            y = g.cast(g.matmul(g.cast(a, DType.f32), g.cast(b, DType.f32)), DType.f32)
        else:
            y = g.matmul(a, b)
        g.set_outputs([g.unary("relu", y) if case.endswith("relu") else y])
        xs = [rng.standard_normal((m, k)).astype(np.float32),
              rng.standard_normal((k, n)).astype(np.float32)]
        if case == "linear_b1":
            xs[1] = np.ascontiguousarray(xs[1].T)
        if dt is DType.bf16:
            xs = [torch.from_numpy(v).to(torch.bfloat16) for v in xs]
            want = (xs[0].double() @ xs[1].double()).numpy()
        else:
            want = xs[0].astype(np.float64) @ (xs[1].T if case == "linear_b1" else xs[1])
        if case.endswith("relu"):
            want = np.maximum(want, 0)
    kernel = generate(g)
    spmd = kernel.ir[kernel.ir.index("@llvmaccel_main.spmd("):]
    assert "i64 %par.chunks, i64 %par.tid)" in spmd and "@llvmaccel_parallel_claim" in spmd
    c = compile_graph(g)
    outs = []
    try:
        for n in (1, 2):
            blas.set_num_threads(n)
            out = c(*xs)[0]
            outs.append(out.float().numpy() if isinstance(out, torch.Tensor) else out)
    finally:
        blas.set_num_threads(None)
    np.testing.assert_array_equal(outs[0], outs[1])
    np.testing.assert_allclose(outs[1], want, rtol=1e-3, atol=1e-3)


def test_dynamic_shapes_empty_and_tiny():
    c = torch.compile(lambda x: torch.softmax(torch.tanh(x) * 2, -1), backend="llvmaccel",
                      dynamic=True)
    for shape in [(600, 700), (3, 5), (1, 1), (0, 7), (7, 0), (1, 300000), (300000, 1)]:
        x = torch.randn(shape)
        blas.set_num_threads(1)
        one = c(x)
        blas.set_num_threads(2)
        two = c(x)
        assert torch.equal(one, two), shape
        torch.testing.assert_close(two, torch.softmax(torch.tanh(x) * 2, -1))


def _graph_elementwise(n: int, fn) -> Graph:
    g = Graph()
    x = g.input("x", (n // 512, 512), DType.f32)
    g.set_outputs([fn(g, x)])
    return g


def test_kernel_structure():
    big = generate(_graph_elementwise(1 << 19, lambda g, x: g.unary("tanh", x)))
    assert big.parallel
    assert "@llvmaccel_parallel_run" in big.ir and "@llvmaccel_main.spmd" in big.ir
    # Static sizes below MIN_WORK: today's kernel alone.
    small = generate(_graph_elementwise(1 << 12, lambda g, x: g.unary("tanh", x)))
    assert not small.parallel and "parallel" not in small.ir


@pytest.mark.parametrize("name", ["softmax", "matmul_relu", "sum_last", "layer_norm"])
def test_large_kernels_keep_the_spmd_body_alone(monkeypatch, name):
    """A kernel whose serial body would exceed ``MAX_SERIAL_LINES`` is
    emitted without it (LLVM's time grows faster than a body's size): its
    entry runs the SPMD body on one thread where it would have called the
    serial kernel (one thread, or a call whose sizes, known at run time,
    make too little work), with the serial kernel's results, on 1 and 2
    threads; index errors still raise."""
    from llvmaccel import compiler

    x = torch.randn(BIG)
    small = torch.randn(16, 64) if name != "matmul_relu" else None
    blas.set_num_threads(1)
    serial = torch.compile(OPS[name], backend="llvmaccel", dynamic=True)
    ref = serial(x)
    small_ref = serial(small) if small is not None else None
    monkeypatch.setattr(parallel, "MAX_SERIAL_LINES", 0)
    compiler.clear_memory_cache()  # its key is the graph's: generate the kernel anew
    torch._dynamo.reset()
    spmd = torch.compile(OPS[name], backend="llvmaccel", dynamic=True)
    for n in (1, 2):
        blas.set_num_threads(n)
        assert torch.equal(spmd(x), ref), n
        if small is not None:  # below MIN_WORK at run time: one thread
            assert torch.equal(spmd(small), small_ref), n
    new = [c.kernel.ir for c in compiler._cache.values()]  # noqa: SLF001
    assert new and all("@llvmaccel_main.spmd(" in ir and "@llvmaccel_main.serial" not in ir
                       for ir in new)
    torch._dynamo.reset()
    c = torch.compile(lambda t, i: torch.tanh(F.embedding(i, t)) + 1, backend="llvmaccel")
    t, i = torch.randn(1000, 256), torch.randint(0, 1000, (4096,))
    blas.set_num_threads(1)
    torch.testing.assert_close(c(t, i), torch.tanh(F.embedding(i, t)) + 1)
    i[3000] = 5000
    with pytest.raises((KernelIndexError, IndexError)):
        c(t, i)


def test_kernels_calling_the_library_run_in_segments(monkeypatch):
    """A parallel kernel that calls the BLAS library runs in segments
    (``llvmaccel_parallel_run_segmented``): its library step is marked as
    such where the threads check whether their segment ends, so that on
    OpenMP's team the caller alone runs it outside the region (in the
    region the library's own OpenMP region would be nested and run on one
    thread). Other kernels go to the runtime's choice. Results are the
    serial kernel's on every runtime."""
    monkeypatch.setenv("LLVMACCEL_BLAS_MIN_FLOPS", "1")
    g = Graph()
    a = g.input("a", (1024, 512), DType.f32)
    b = g.input("b", (512, 512), DType.f32)
    g.set_outputs([g.unary("tanh", g.matmul(a, b))])
    kern = generate(g)
    if not any(kind == "blas" for _, kind, _ in kern.matmuls):
        pytest.skip(f"no BLAS library: {blas.status()}")
    assert kern.parallel and "@llvmaccel_parallel_run_segmented(" in kern.ir
    yields = [ln for ln in kern.ir.splitlines() if "= call i32 @llvmaccel_parallel_yield(" in ln]
    assert [ln.rstrip(")").endswith("i32 1") for ln in yields] == [True, False], yields
    plain = generate(_graph_elementwise(1 << 19, lambda g, x: g.unary("tanh", x)))
    assert "@llvmaccel_parallel_run(" in plain.ir and "run_segmented" not in plain.ir
    c = compile_graph(g)
    rng = np.random.default_rng(6)
    xs = [rng.standard_normal((1024, 512)).astype(np.float32),
          rng.standard_normal((512, 512)).astype(np.float32) * 0.05]
    outs = []
    for mode in ("auto", "pool", "auto"):
        monkeypatch.setenv("LLVMACCEL_PARALLEL_RUNTIME", mode)
        for n in (1, 2):
            blas.set_num_threads(n)
            outs.append(c(*xs)[0])
    for out in outs[1:]:
        np.testing.assert_array_equal(out, outs[0])
    np.testing.assert_allclose(outs[0], np.tanh(xs[0].astype(np.float64) @ xs[1]), rtol=1e-4,
                               atol=1e-5)


_SEGMENTS_SCRIPT = """
import os
import numpy as np
import torch
from llvmaccel import blas
from llvmaccel._native import core
from llvmaccel.compiler import compile_graph
from llvmaccel.graph import DType, Graph

torch.set_num_threads(2)
os.environ["LLVMACCEL_BLAS_MIN_FLOPS"] = "1"
g = Graph()
a = g.input("a", (512, 256), DType.f32)
b = g.input("b", (256, 256), DType.f32)
g.set_outputs([g.unary("tanh", g.matmul(a, b))])
c = compile_graph(g)
assert c.kernel.parallel and c.kernel.uses_blas, c.kernel.matmuls
x, w = np.ones((512, 256), np.float32), np.ones((256, 256), np.float32) / 256
torch.ones(512, 256) @ torch.ones(256, 256)  # PyTorch's OpenMP team, for the library
before = len(os.listdir("/proc/self/task"))
for _ in range(20):
    np.testing.assert_allclose(c(x, w)[0], np.tanh(1.0), rtol=1e-6)
print(before, len(os.listdir("/proc/self/task")), core.parallel_workers())
"""


def test_library_kernel_on_openmp_starts_no_threads():
    """With PyTorch's OpenMP loaded, a kernel that calls the library runs on
    the caller's OpenMP team in segments: no pool worker is started and the
    library finds the team it already has (on the pool, its worker was a
    thread more, and the library called from it started a second team)."""
    if blas.load() is None:
        pytest.skip(f"no BLAS library: {blas.status()}")
    r = subprocess.run([sys.executable, "-c", _SEGMENTS_SCRIPT], capture_output=True,
                       text=True, timeout=300, env={**os.environ, "LLVMACCEL_NUM_THREADS": "2"})
    assert r.returncode == 0, r.stderr
    before, after, workers = map(int, r.stdout.split())
    assert (after, workers) == (before, 0), r.stdout


def test_error_inside_parallel_step():
    """An integer division by zero in a chunked elementwise step fails on the
    thread that runs it; the call raises as the serial kernel does."""
    g = Graph()
    a = g.input("a", (1024, 1024), DType.i32)
    b = g.input("b", (1024, 1024), DType.i32)
    g.set_outputs([g.binary("floordiv", a, b)])
    c = compile_graph(g)
    assert c.kernel.parallel
    x = np.ones((1024, 1024), np.int32)
    y = np.ones((1024, 1024), np.int32)
    for at in [(0, 0), (1023, 1023), (700, 3)]:  # first, last, and another thread's chunk
        y[...] = 1
        y[at] = 0
        for n in (1, 2):
            blas.set_num_threads(n)
            with pytest.raises(ZeroDivisionError):
                c(x, y)
    y[...] = 2
    blas.set_num_threads(2)
    np.testing.assert_array_equal(c(x, y)[0], x // y)


def test_index_error_with_threads():
    c = torch.compile(lambda t, i: torch.tanh(F.embedding(i, t)) + 1, backend="llvmaccel")
    t = torch.randn(1000, 256)
    i = torch.randint(0, 1000, (4096,))
    blas.set_num_threads(2)
    torch.testing.assert_close(c(t, i), torch.tanh(F.embedding(i, t)) + 1)
    i[3000] = 5000
    with pytest.raises((KernelIndexError, IndexError)):
        c(t, i)


def test_thread_count_changes_between_calls():
    c = torch.compile(OPS["layer_norm"], backend="llvmaccel")
    x = torch.randn(BIG)
    blas.set_num_threads(1)
    ref = c(x)
    for n in (2, 1, 3, 2, 1, 8):
        blas.set_num_threads(n)
        assert torch.equal(c(x), ref), n
        assert core.parallel_threads() == n


def test_pool_reused(monkeypatch):
    """llvmaccel's own pool (``LLVMACCEL_PARALLEL_RUNTIME=pool``: PyTorch's
    libgomp is loaded here, which runs would use otherwise) starts its
    workers once and keeps them."""
    monkeypatch.setenv("LLVMACCEL_PARALLEL_RUNTIME", "pool")
    c = torch.compile(OPS["tanh_affine"], backend="llvmaccel")
    x = torch.randn(BIG)
    blas.set_num_threads(2)
    ref = c(x)
    assert parallel.runtime() == "pool"
    workers = core.parallel_workers()
    assert workers >= 1
    for _ in range(20):
        assert torch.equal(c(x), ref)
    assert core.parallel_workers() == workers


def test_openmp_threads_when_libgomp_is_loaded(monkeypatch):
    """With PyTorch's libgomp in the process, runs use OpenMP's threads
    (the pool starts none of its own), with results equal to the pool's and
    to one thread's (the failing-check tests above run this way too); a
    runtime name that is none of auto, pool, openmp is an error."""
    if "libgomp" not in open("/proc/self/maps").read():
        pytest.skip("this PyTorch build does not load GNU OpenMP")
    monkeypatch.setenv("LLVMACCEL_PARALLEL_RUNTIME", "auto")
    c = torch.compile(OPS["layer_norm"], backend="llvmaccel")
    x = torch.randn(BIG)
    blas.set_num_threads(1)
    one = c(x)
    blas.set_num_threads(2)
    assert parallel.runtime() == "openmp"
    before = core.parallel_workers()
    for _ in range(5):
        assert torch.equal(c(x), one)
    assert core.parallel_workers() == before
    monkeypatch.setenv("LLVMACCEL_PARALLEL_RUNTIME", "pool")
    assert torch.equal(c(x), one)
    monkeypatch.setenv("LLVMACCEL_PARALLEL_RUNTIME", "openmp")
    assert torch.equal(c(x), one)
    monkeypatch.setenv("LLVMACCEL_PARALLEL_RUNTIME", "threads")
    with pytest.raises(ValueError, match="LLVMACCEL_PARALLEL_RUNTIME"):
        c(x)


def test_one_thread_never_starts_the_pool():
    code = """
import torch
from llvmaccel import blas
from llvmaccel._native import core
torch.set_num_threads(1)
c = torch.compile(lambda x: torch.softmax(x, -1), backend="llvmaccel")
x = torch.randn(512, 1024)
for _ in range(3):
    c(x)
print(core.parallel_workers())
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300, check=True)
    assert out.stdout.strip().splitlines()[-1] == "0"


def test_concurrent_callers():
    """Several Python threads calling kernels at once (one pool run at a
    time; the others run their kernel on their own thread), each result
    identical to the 1-thread one."""
    fns = [torch.compile(OPS[k], backend="llvmaccel")
           for k in ("softmax", "layer_norm", "tanh_affine", "sum_last")]
    inputs = [torch.randn(BIG, generator=torch.Generator().manual_seed(k)) for k in range(4)]
    blas.set_num_threads(1)
    refs = [[f(x) for x in inputs] for f in fns]
    blas.set_num_threads(2)
    errors: list[str] = []

    def worker(k: int) -> None:
        for r in range(15):
            f = (k + r) % len(fns)
            x = (k * 7 + r) % len(inputs)
            if not torch.equal(fns[f](inputs[x]), refs[f][x]):
                errors.append(f"thread {k} round {r}")

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


def test_runtime_under_thread_sanitizer(tmp_path):
    """bindings/Parallel.cpp driven as generated bodies drive it, built with
    -fsanitize=thread (test/runtime/parallel_stress.cpp): no race, right
    results, errors and concurrent callers included."""
    import shutil
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    cxx = next((c for c in ("clang++-22", "clang++", "g++") if shutil.which(c)), None)
    if cxx is None:
        pytest.skip("no C++ compiler")
    exe = tmp_path / "parallel_stress"
    build = subprocess.run(
        [cxx, "-std=c++17", "-O1", "-g", "-fsanitize=thread", f"-I{root / 'bindings'}",
         str(root / "test/runtime/parallel_stress.cpp"), str(root / "bindings/Parallel.cpp"),
         "-o", str(exe), "-pthread"], capture_output=True, text=True)
    if build.returncode != 0:
        pytest.skip(f"cannot build with -fsanitize=thread: {build.stderr[-300:]}")
    run = subprocess.run([str(exe)], capture_output=True, text=True, timeout=600,
                         env={"TSAN_OPTIONS": "halt_on_error=1"})
    assert run.returncode == 0, run.stdout + run.stderr[-3000:]
    assert run.stdout.startswith("ok")


def _decode_graph(steps: int, hidden: int, vocab: int, check: bool) -> Graph:
    """A decode-style scan: ``logits = h @ W`` (B read in place, its columns
    chunked between the threads), the argmax token, ``h = tanh(h + E[tok])``
    and the tokens as ``ys``; with ``check``, the token indexes a table of
    ``vocab - 1`` rows in "check" mode, so the last token fails the call."""
    g = Graph()
    h0 = g.input("h0", (1, hidden), DType.f32)
    emb = g.input("emb", (vocab - 1 if check else vocab, hidden), DType.f32)
    w = g.input("w", (hidden, vocab), DType.f32)
    body = Graph()
    be, bw = body.input("emb", emb.shape, DType.f32), body.input("w", w.shape, DType.f32)
    h = body.input("h", (1, hidden), DType.f32)
    logits = body.matmul(h, bw)
    tok = body.reduce("argmax", logits, (1,), False)
    row = body.take(be, tok, 0)  # "check" mode
    body.set_outputs([body.unary("tanh", body.binary("add", h, row)), tok])
    g.set_outputs(g.scan(body, [emb, w], [h0], [], steps))
    return g


def test_scan_body_steps_split_between_threads():
    """A scan's loop runs on every thread of the SPMD body and the loop nests
    of its body are steps in rounds (one per iteration): the decode step's
    vector-matrix product has its columns chunked, and the small steps
    after it share one claimed chunk; the results are the serial kernel's
    bits, and a large enough body makes the kernel parallel at all."""
    steps, hidden, vocab = 9, 256, 1024  # B of 2**18 elements: past MIN_WORK
    g = _decode_graph(steps, hidden, vocab, check=False)
    spmd = generate(g).ir
    spmd = spmd[spmd.index("@llvmaccel_main.spmd("):]
    # The steps of the body claim their chunks round by round.
    rounds = [ln for ln in spmd.splitlines()
              if "@llvmaccel_parallel_claim(" in ln and "%par.round" in ln]
    assert any("i64 %par.chunks, i64 %par.tid)" in ln for ln in rounds), rounds
    # Two hand-offs an iteration: the product's chunks, then one chunk for
    # the small steps after it (argmax, gather, tanh, token, carry copy).
    assert len(rounds) == 2 and "i64 1, i64 %par.tid)" in rounds[1], rounds
    rng = np.random.default_rng(5)
    xs = [rng.standard_normal((1, hidden)).astype(np.float32),
          rng.standard_normal((vocab, hidden)).astype(np.float32),
          (rng.standard_normal((hidden, vocab)) * 0.1).astype(np.float32)]
    fn = compile_graph(g)
    assert fn.kernel.parallel
    outs = []
    for n in (1, 2, 2, 2):
        blas.set_num_threads(n)
        outs.append(fn(*xs))
    h, toks = xs[0].astype(np.float64), []
    for _ in range(steps):  # the reference, in float64
        tok = int(np.argmax(h @ xs[2]))
        h = np.tanh(h + xs[1][tok])
        toks.append(tok)
    np.testing.assert_allclose(outs[0][0], h, rtol=1e-4, atol=1e-5)
    np.testing.assert_array_equal(outs[0][1].ravel(), toks)
    for out in outs[1:]:
        for a, b in zip(out, outs[0], strict=True):
            np.testing.assert_array_equal(a, b)


def test_scan_body_error_in_a_round_raises():
    """An index check that fails in a later iteration of a parallel scan
    body ends the call with the serial kernel's error, at every thread
    count, and the kernel runs correctly afterwards."""
    steps, hidden, vocab = 6, 256, 1024
    g = _decode_graph(steps, hidden, vocab, check=True)
    fn = compile_graph(g)
    assert fn.kernel.parallel
    w = np.zeros((hidden, vocab), np.float32)
    emb = np.zeros((vocab - 1, hidden), np.float32)
    ok = [np.zeros((1, hidden), np.float32), emb, w]  # argmax 0 every step
    bad_w, bad_emb = w.copy(), emb.copy()
    bad_w[:, vocab - 1] = 1.0  # h > 0 picks the last column, past the table
    bad_emb[0] = 0.5  # the first step (token 0) makes h > 0: the second fails
    bad = [np.zeros((1, hidden), np.float32), bad_emb, bad_w]
    for n in (1, 2):
        blas.set_num_threads(n)
        with pytest.raises(KernelIndexError):
            fn(*bad)
        np.testing.assert_array_equal(fn(*ok)[1].ravel(), np.zeros(steps))


def test_product_work_counts_multiply_adds_and_streamed_b():
    """A product's work: its multiply-adds / MACS_PER_ELEMENT, or the
    elements of B it reads where that is more (a vector-matrix product
    streams B as an elementwise map streams its input); symbolic sizes
    stay symbolic (decided per call)."""
    per = parallel.MACS_PER_ELEMENT
    assert parallel.product_work(256, 256, 256) == 256 ** 3 // per
    assert parallel.product_work(1, 4096, 256) == 4096 * 256  # h @ W: B's elements
    assert parallel.product_work(8, 256, 256, 3) == 3 * 256 * 256
    assert parallel.product_work(8, 256, 256) < parallel.MIN_WORK  # an RNN cell: serial
    assert parallel.product_work(1, 4096, 256) >= parallel.MIN_WORK  # a decode step: split
    assert isinstance(parallel.product_work(Sym("n"), 64, 64), SymExpr)


def test_scan_with_a_library_step_runs_on_the_pool(monkeypatch):
    """A scan whose body calls the BLAS library is not run in segments (a
    segment would end every iteration, and each new one run through the
    rounds before it): it stays on the pool; results as the serial
    kernel's."""
    monkeypatch.setenv("LLVMACCEL_BLAS_MIN_FLOPS", "1")
    if blas.load() is None:
        pytest.skip(f"no BLAS library: {blas.status()}")
    g = Graph()
    h0 = g.input("h0", (512, 256), DType.f32)  # a tanh of 2**17 elements: chunked
    w = g.input("w", (256, 256), DType.f32)
    body = Graph()
    bw, h = body.input("w", (256, 256), DType.f32), body.input("h", (512, 256), DType.f32)
    body.set_outputs([body.unary("tanh", body.matmul(h, bw))])
    g.set_outputs(g.scan(body, [w], [h0], [], 5))
    kern = generate(g)
    assert any(kind == "blas" for _, kind, _ in kern.matmuls), kern.matmuls
    assert "@llvmaccel_parallel_run_pool(" in kern.ir and "run_segmented" not in kern.ir
    c = compile_graph(g)
    rng = np.random.default_rng(7)
    xs = [rng.standard_normal((512, 256)).astype(np.float32),
          (rng.standard_normal((256, 256)) * 0.05).astype(np.float32)]
    outs = []
    for n in (1, 2):
        blas.set_num_threads(n)
        outs.append(c(*xs)[0])
    np.testing.assert_array_equal(outs[1], outs[0])


@pytest.mark.parametrize("case", ["depthwise", "grouped_bias", "max_pool", "avg_pool"])
def test_sliding_windows_split_planes_between_threads(case):
    """Direct convolutions (depthwise, grouped with a bias) and pooling split
    their output planes ``(n, c)`` between the threads, each plane started
    and summed by one chunk: the serial kernel's bits at 1 and 2 threads."""
    rng = np.random.default_rng(8)
    g = Graph()
    shape = (2, 32, 66, 70)
    x = g.input("x", shape, DType.f32)
    xs = [rng.standard_normal(shape).astype(np.float32)]
    if case in ("depthwise", "grouped_bias"):
        groups = 32 if case == "depthwise" else 8
        w = g.input("w", (32, 32 // groups, 3, 3), DType.f32)
        xs.append(rng.standard_normal((32, 32 // groups, 3, 3)).astype(np.float32))
        b = None
        if case == "grouped_bias":
            b = g.input("b", (32,), DType.f32)
            xs.append(rng.standard_normal(32).astype(np.float32))
        y = g.conv(x, w, b, (1, 1), (1, 1), (1, 1), groups=groups)
        tx = [torch.from_numpy(v) for v in xs]
        want = F.conv2d(tx[0].double(), tx[1].double(),
                        tx[2].double() if b is not None else None, padding=1,
                        groups=groups).numpy()
    else:
        fn = "max" if case == "max_pool" else "avg"
        y = g.pool(x, fn, (3, 3), (2, 2), (1, 1))
        t = torch.from_numpy(xs[0]).double()
        want = (F.max_pool2d(t, 3, 2, 1) if fn == "max" else F.avg_pool2d(t, 3, 2, 1)).numpy()
    g.set_outputs([y])
    spmd = generate(g).ir
    spmd = spmd[spmd.index("@llvmaccel_main.spmd("):]
    assert "i64 %par.chunks, i64 %par.tid)" in spmd
    c = compile_graph(g)
    outs = []
    for n in (1, 2):
        blas.set_num_threads(n)
        outs.append(c(*xs)[0])
    np.testing.assert_array_equal(outs[1], outs[0])
    np.testing.assert_allclose(outs[0], want, rtol=1e-4, atol=1e-4)


def _while_graph(n: int, table: int) -> Graph:
    """``while s[0] < limit and x.sum() < cap: x = x * 0.75 + t[i]; i += 1``
    over ``n`` floats (chunked between the threads), the trip count decided
    by the data; ``t[i]`` in "check" mode, so a table of ``table`` entries
    fails the round that reads past it."""
    g = Graph()
    x0 = g.input("x", (n,), DType.f32)
    limit = g.input("limit", (), DType.i64)
    cap = g.input("cap", (), DType.f32)
    t = g.input("t", (table,), DType.f32)
    cond = Graph()
    cl, cc = cond.input("limit", (), DType.i64), cond.input("cap", (), DType.f32)
    ci, cx = cond.input("i", (), DType.i64), cond.input("x", (n,), DType.f32)
    cond.set_outputs([cond.binary("and", cond.binary("lt", ci, cl),
                                  cond.binary("lt", cond.reduce("sum", cx, (0,)), cc))])
    body = Graph()
    bt = body.input("t", (table,), DType.f32)
    bi, bx = body.input("i", (), DType.i64), body.input("x", (n,), DType.f32)
    step = body.take(bt, body.reshape(bi, (1,)), 0)  # "check" mode
    body.set_outputs([body.binary("add", bi, body.scalar(1, DType.i64)),
                      body.binary("add", body.binary("mul", bx, body.scalar(0.75, DType.f32)),
                                  step)])
    g.set_outputs(g.while_loop(cond, body, [limit, cap], [t],
                               [g.constant(np.zeros(()), DType.i64), x0]))
    return g


def test_while_loop_at_top_level_runs_on_every_thread():
    """A while loop at the kernel's top level: every thread runs it, its
    condition's and body's nests are steps in rounds, and one thread
    publishes each round's decision (llvmaccel_parallel_decide), which
    every thread reads for its own round. Bit-identical at 1 and 2 threads
    for trip counts 0, 1, several (stopped by the counter or by the data),
    and an index check failing in a later round raises."""
    n, table = 1 << 18, 6
    g = _while_graph(n, table)
    kernel = generate(g)
    spmd = kernel.ir[kernel.ir.index("@llvmaccel_main.spmd("):]
    assert "@llvmaccel_parallel_decide(" in spmd and "@llvmaccel_parallel_decided(" in spmd
    assert "i64 %par.chunks, i64 %par.tid)" in spmd
    c = compile_graph(g)
    assert c.kernel.parallel
    rng = np.random.default_rng(9)
    x = rng.random(n).astype(np.float32)
    t = rng.random(table).astype(np.float32)

    def ref(limit: int, cap: float) -> tuple[int, np.ndarray]:
        i, v = 0, x.copy()
        while i < limit and v.sum(dtype=np.float64) < cap:
            v = v * np.float32(0.75) + t[i]
            i += 1
        return i, v

    for limit, cap in ((0, 1e9), (1, 1e9), (5, 1e9), (6, n * 0.95), (4, -1.0)):
        outs = []
        for threads in (1, 2, 2):
            blas.set_num_threads(threads)
            outs.append(c(x, np.int64(limit), np.float32(cap), t))
        want_i, want_x = ref(limit, cap)
        assert int(outs[0][0]) == want_i, (limit, cap)
        np.testing.assert_allclose(outs[0][1], want_x, rtol=1e-5)
        for o in outs[1:]:
            assert int(o[0]) == int(outs[0][0])
            np.testing.assert_array_equal(o[1], outs[0][1])
    for threads in (1, 2):
        blas.set_num_threads(threads)
        with pytest.raises(KernelIndexError):
            c(x, np.int64(table + 3), np.float32(1e9), t)  # round `table` reads past t


def test_switch_at_top_level_runs_its_branch_on_every_thread():
    """A switch at the kernel's top level: every thread reads the index once
    the steps before are done and runs the branch's nests as steps (chunked
    where large); each branch, and an out-of-range index (the last branch),
    bit-identical at 1 and 2 threads and as computed by numpy."""
    n = 1 << 18
    g = Graph()
    i = g.input("i", (), DType.i32)
    x = g.input("x", (n,), DType.f32)
    branches = []
    for scale in (2.0, -3.0, 0.5):
        b = Graph()
        bx = b.input("x", (n,), DType.f32)
        b.set_outputs([b.unary("tanh", b.binary("mul", bx, b.scalar(scale, DType.f32)))])
        branches.append(b)
    (out,) = g.switch(i, branches, [g.unary("exp", x)])
    g.set_outputs([out])
    spmd = generate(g).ir
    spmd = spmd[spmd.index("@llvmaccel_main.spmd("):]
    assert "i64 %par.chunks, i64 %par.tid)" in spmd
    c = compile_graph(g)
    assert c.kernel.parallel
    xv = np.random.default_rng(10).standard_normal(n).astype(np.float32)
    for k, scale in ((0, 2.0), (1, -3.0), (2, 0.5), (7, 0.5), (-1, 0.5)):
        outs = []
        for threads in (1, 2, 2):
            blas.set_num_threads(threads)
            outs.append(c(np.int32(k), xv)[0])
        np.testing.assert_allclose(outs[0], np.tanh(np.exp(xv.astype(np.float64)) * scale),
                                   rtol=1e-5, atol=1e-6)
        for o in outs[1:]:
            np.testing.assert_array_equal(o, outs[0])
