"""Matmuls through the tuned BLAS (llvmaccel.blas): the library path and
llvmaccel's own kernel on odd shapes against numpy, the shape classes that
choose between them, the run-time branch for symbolic sizes, the fallback
without the library, and the thread count."""

from __future__ import annotations

import ctypes
import dataclasses
import os

import numpy as np
import pytest

from llvmaccel import blas, compiler
from llvmaccel.codegen import generate
from llvmaccel.graph import DType, Graph, Sym
from llvmaccel.target import host

RNG = np.random.default_rng(7)
HAVE = blas.load() is not None
needs_blas = pytest.mark.skipif(not HAVE, reason=f"no BLAS library: {blas.status()}")


def _libraries() -> list[str]:
    """The libraries this machine has: OpenBLAS, and PyTorch's own BLAS
    where PyTorch is installed and exports one."""
    out = []
    for name in ("openblas", "torch"):
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("LLVMACCEL_BLAS_LIBRARY", name)
            if blas.load() is not None:
                out.append(name)
    return out or ["openblas"]


@pytest.fixture(autouse=True, params=_libraries())
def library(request, tmp_path, monkeypatch) -> str:
    """Every test runs once per library (LLVMACCEL_BLAS_LIBRARY)."""
    monkeypatch.setenv("LLVMACCEL_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("LLVMACCEL_BLAS_LIBRARY", request.param)
    return request.param


def _graph(dt: DType, m, n, k, ta=False, tb=False, batch=(), bbatch=None) -> Graph:
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


def _check(c, dt, m, n, k, ta=False, tb=False, batch=(), bbatch=None) -> None:
    bbatch = batch if bbatch is None else bbatch
    xa = RNG.standard_normal(batch + ((k, m) if ta else (m, k))).astype(dt.numpy)
    xb = RNG.standard_normal(bbatch + ((n, k) if tb else (k, n))).astype(dt.numpy)
    (y,) = c(xa, xb)
    ea = np.swapaxes(xa, -1, -2) if ta else xa
    eb = np.swapaxes(xb, -1, -2) if tb else xb
    ref = np.matmul(ea.astype(np.float64), eb.astype(np.float64))
    tol = 1e-4 if dt is DType.f32 else 1e-11
    assert y.shape == ref.shape
    np.testing.assert_allclose(y, ref, rtol=tol, atol=tol * max(1, k) ** 0.5,
                               err_msg=f"m={m} n={n} k={k} ta={ta} tb={tb}")


ODD = [(1, 1, 1), (1, 37, 5), (13, 1, 7), (17, 19, 23), (31, 1, 64), (97, 101, 103),
       (64, 64, 64), (3, 130, 2)]


@needs_blas
@pytest.mark.parametrize("mode", ["always", "off"])
@pytest.mark.parametrize("dt", [DType.f32, DType.f64])
@pytest.mark.parametrize("ta,tb", [(False, False), (False, True), (True, False), (True, True)])
def test_odd_shapes_both_kernels(monkeypatch, mode, dt, ta, tb):
    """Primes, ones, and transposed operands (read in place, passed to the
    library as transposed with their leading dimensions), on both kernels."""
    monkeypatch.setenv("LLVMACCEL_BLAS", mode)
    for m, n, k in ODD:
        g = _graph(dt, m, n, k, ta, tb)
        kern = generate(g)
        calls = blas.symbol(dt.itemsize) in kern.ir
        assert calls == (mode == "always" and kern.matmuls[0][1] == "blas"), kern.matmuls
        _check(compiler.compile_graph(g), dt, m, n, k, ta, tb)


@needs_blas
@pytest.mark.parametrize("mode", ["always", "off"])
def test_symbolic_sizes_and_k0(monkeypatch, mode):
    """Run-time sizes: the branch sends sizes in range to the library and
    K = 0 (and M or N = 0) to llvmaccel's kernel, which writes zeros."""
    monkeypatch.setenv("LLVMACCEL_BLAS", mode)
    g = _graph(DType.f32, Sym("m"), Sym("n"), Sym("k"), tb=True)
    c = compiler.compile_graph(g)
    assert c.kernel.matmuls[0][1] == ("runtime" if mode == "always" else "own")
    assert (blas.symbol(4) in c.kernel.ir) == (mode == "always")
    for m, n, k in ODD + [(5, 7, 0), (0, 3, 4), (4, 0, 3)]:
        _check(c, DType.f32, m, n, k, tb=True)
    xa = np.zeros((3, 0), np.float32)
    (y,) = c(xa, np.zeros((4, 0), np.float32))
    assert y.shape == (3, 4) and not y.any()


@needs_blas
def test_batched_broadcast_and_non_contiguous_inputs(monkeypatch):
    """Batched matmuls (one library call per batch index, B broadcast), and
    operands that are views of other tensors (a slice, a non-contiguous
    numpy array) made contiguous first."""
    monkeypatch.setenv("LLVMACCEL_BLAS", "always")
    dt = DType.f32
    _check(compiler.compile_graph(_graph(dt, 9, 19, 23, tb=True, batch=(4,), bbatch=())),
           dt, 9, 19, 23, tb=True, batch=(4,), bbatch=())
    g = _graph(dt, 9, 19, 23, tb=True, batch=(4,), bbatch=())
    assert f"@{blas.symbol(4)}(" in generate(g).ir  # broadcast B: a call per batch index
    for ta, tb in [(False, False), (True, True), (False, True)]:
        g = _graph(dt, 11, 5, 3, ta, tb, batch=(2, 3))
        ir = generate(g).ir  # one strided-batch call for the 6 matmuls (where there is one)
        if blas.has_batched():
            assert f"@{blas.symbol(4, batched=True)}(" in ir and "i32 6)" in ir
        else:
            assert f"@{blas.symbol(4)}(" in ir
        _check(compiler.compile_graph(g), dt, 11, 5, 3, ta, tb, batch=(2, 3))
    g = _graph(DType.f64, 7, 13, 17, tb=True, batch=(5,))
    assert f"@{blas.symbol(8, batched=blas.has_batched())}(" in generate(g).ir
    _check(compiler.compile_graph(g), DType.f64, 7, 13, 17, tb=True, batch=(5,))
    g = Graph()
    a = g.input("a", (9, 20), dt)
    g.set_outputs([g.matmul(g.slice(a, 1, 2, 19, 2), g.slice(g.permute(a, (1, 0)), 0, 0, 9))])
    assert "blas" in {k for _, k, _ in generate(g).matmuls}
    xa = RNG.standard_normal((9, 20)).astype(np.float32)
    (y,) = compiler.compile_graph(g)(xa)
    np.testing.assert_allclose(y, xa[:, 2:19:2] @ xa.T[:9], rtol=1e-5, atol=1e-5)
    c = compiler.compile_graph(_graph(dt, 7, 6, 5))
    big_a = RNG.standard_normal((7, 10)).astype(np.float32)
    big_b = RNG.standard_normal((10, 6)).astype(np.float32)
    (y,) = c(big_a[:, ::2], big_b[::2])  # strided numpy views
    np.testing.assert_allclose(y, big_a[:, ::2] @ big_b[::2], rtol=1e-5, atol=1e-5)


@needs_blas
def test_shape_classes(monkeypatch):
    """``auto``: small and narrow matmuls and matrix-vector products stay llvmaccel's,
    large ones go to the library; symbolic sizes decide at run time; other
    targets, complex values and sizes past 32 bits never use it."""
    monkeypatch.setenv("LLVMACCEL_BLAS", "auto")
    monkeypatch.setenv("LLVMACCEL_BLAS_CALIBRATE", "off")  # the static rules
    t = host()
    monkeypatch.setattr(blas, "_threads_override", 1)
    # One thread: ours up to 2^27 multiply-adds with 512-bit vectors, 2^26
    # with narrower ones.
    wide, avx2 = (dataclasses.replace(t, vector_bits=b) for b in (512, 256))
    assert blas.min_flops(wide) == blas.MIN_FLOPS == 1 << 27
    assert blas.min_flops(avx2) == blas.MIN_FLOPS_NARROW_VECTORS == 1 << 26
    for tt in (wide, avx2):
        assert blas.choose(256, 256, 256, 4, False, tt, True).kernel == "own"
        assert blas.choose(512, 512, 512, 4, False, tt, True).kernel == "blas"
    assert blas.choose(512, 768, 256, 4, False, wide, True).kernel == "own"
    assert blas.choose(512, 768, 256, 4, False, avx2, True).kernel == "blas"
    monkeypatch.setattr(blas, "_threads_override", 2)  # the library's threads count
    assert blas.min_flops() == blas.MIN_FLOPS_THREADED
    big = blas.MIN_FLOPS_THREADED
    assert blas.choose(8, 8, 8, 4, False, t, True).kernel == "own"
    assert blas.choose(4096, 16, 4096, 4, False, t, True, tile_columns=32).kernel == "own"
    assert blas.choose(4096, 33, 4096, 4, False, t, True, tile_columns=32).kernel == "blas"
    assert blas.choose(Sym("m"), 8, 512, 4, False, t, True, tile_columns=32).kernel == "own"
    assert blas.choose(256, 512, 1024, 4, False, t, True).kernel == "blas"
    assert blas.choose(big, 1, 1, 4, False, t, True).kernel == "blas"
    assert blas.choose(big - 1, 1, 1, 8, False, t, True).kernel == "own"
    assert blas.choose(4096, 1, 4096, 4, True, t, True).kernel == "own"  # dot class
    c = blas.choose(Sym("m"), 64, 64, 4, False, t, True)
    assert c.kernel == "runtime" and c.min_flops == big
    assert blas.choose(256, 256, 256, 4, False, t, False).kernel == "own"
    assert blas.choose(256, 256, 256, 8, False, t, True, complex_=True).kernel == "own"
    assert blas.choose(1 << 31, 2, 2, 4, False, t, True).kernel == "own"
    assert blas.choose(256, 256, 0, 4, False, t, True).kernel == "own"
    other = dataclasses.replace(t, triple="aarch64-unknown-linux-gnu", cpu="neoverse-v2")
    g = _graph(DType.f32, 256, 256, 256)
    assert generate(g, target=other).matmuls[0][1] == "own"
    kern = generate(g)
    assert kern.matmuls[0][1] == "blas" and kern.uses_blas
    lead = "i32 101, i32 111, i32 111" if blas.abi() == "cblas" else "ptr"
    assert f"call void @{blas.symbol(4)}({lead}" in kern.ir
    # The run-time branch on the sizes: both kernels in one function.
    kern = generate(_graph(DType.f32, Sym("m"), 1000, 1000, tb=True))
    assert kern.matmuls[0][1] == "runtime" and blas.symbol(4) in kern.ir and "%kb" in kern.ir
    c = compiler.compile_graph(_graph(DType.f32, Sym("m"), 1000, 1000, tb=True))
    for m in (1, 4, 5, 9):  # 4 * 1000 * 1000 < MIN_FLOPS_THREADED < 5 * 1000 * 1000
        _check(c, DType.f32, m, 1000, 1000, tb=True)


def test_threshold_from_timings():
    """The measured threshold: the smallest size class from which the
    library is faster by the margin on every product of that class and of
    every larger one; never, where it does not win the largest."""
    def shapes(wins: dict[int, list[bool]]):
        out = []
        for side, per_shape in wins.items():
            for w in per_shape:  # (side, side, side) products, own 100 us
                out.append((side, side, side, 100.0, 90.0 if w else 100.0 / blas.LIBRARY_MARGIN))
        return tuple(out)

    assert blas.threshold_from(shapes({128: [False], 256: [True, True], 512: [True]})) == 256 ** 3
    assert blas.threshold_from(shapes({128: [True], 256: [True, False], 512: [True]})) == 512 ** 3
    # Winning below a class it loses does not count; a tie (within the
    # margin) is llvmaccel's.
    assert blas.threshold_from(shapes({128: [True], 256: [False], 512: [False]})) == blas.NEVER
    assert blas.threshold_from(shapes({128: [True], 256: [True], 512: [True]})) == 128 ** 3


@needs_blas
def test_measured_threshold_chooses_and_is_kept(monkeypatch, tmp_path):
    """``auto`` measures on first need (both kernels on a few products,
    as generated code calls them), keeps the result in the cache directory
    per thread count, and each matmul records which kernel the measurement
    gave it and why."""
    monkeypatch.setenv("LLVMACCEL_BLAS", "auto")
    monkeypatch.delenv("LLVMACCEL_BLAS_CALIBRATE", raising=False)
    monkeypatch.delenv("LLVMACCEL_BLAS_MIN_FLOPS", raising=False)
    monkeypatch.setattr(blas, "_calibrations", {})
    monkeypatch.setattr(blas, "CALIBRATION_SHAPES", ((16, 16, 16), (48, 32, 40)))
    monkeypatch.setattr(blas, "_threads_override", 1)
    compiler.clear_memory_cache()
    cal = blas.calibrate(4)
    assert not cal.cached and [s[:3] for s in cal.shapes] == [(16, 16, 16), (48, 32, 40)]
    # Its kernels are not the program's: the process's cache of compiled
    # graphs stays as it was (a test or a tool listing what a model
    # compiled would see them, and they would hold memory for nothing).
    assert not compiler._cache  # noqa: SLF001
    assert all(own > 0 and lib > 0 for *_, own, lib in cal.shapes)
    assert cal.min_flops == blas.threshold_from(cal.shapes)
    assert "1 thread(s)" in cal.key and "f32" in cal.key and host().cpu in cal.key
    assert (tmp_path / "cache" / "blas-thresholds.json").exists()

    # Kept: read back from the file by a new process (the memory cache
    # emptied), and never timed again; another thread count is its own key.
    def no_timing(*args):
        raise AssertionError("measured again")

    monkeypatch.setattr(blas, "_calibrations", {})
    monkeypatch.setattr(blas, "_time_products", no_timing)
    again = blas.calibrate(4)
    assert again.cached and again.shapes == cal.shapes and again.min_flops == cal.min_flops
    monkeypatch.setattr(blas, "_threads_override", 2)
    with pytest.raises(AssertionError, match="measured again"):
        blas.calibrate(4)

    # What choose makes of a measurement: the library from its threshold on.
    fake = ((64, 64, 64, 10.0, 20.0), (128, 128, 128, 100.0, 50.0))
    monkeypatch.setattr(blas, "_time_products", lambda itemsize, shapes: fake)
    assert blas.calibrate(4).min_flops == 128 ** 3
    t = host()
    small = blas.choose(100, 100, 100, 4, False, t, True)
    big = blas.choose(200, 200, 200, 4, False, t, True)
    assert small.kernel == "own" and "measured on this host, 2 thread(s)" in small.reason
    assert big.kernel == "blas" and "measured on this host" in big.reason
    run = blas.choose(Sym("m"), 200, 200, 4, False, t, True)
    assert run.kernel == "runtime" and run.min_flops == 128 ** 3
    kern = generate(_graph(DType.f32, 200, 200, 200))
    assert kern.matmuls[0][1] == "blas" and "measured" in kern.matmuls[0][2]
    # A library slower at every size: never called, and said so.
    monkeypatch.setattr(blas, "_time_products",
                        lambda itemsize, shapes: ((64, 64, 64, 10.0, 20.0),))
    assert blas.calibrate(4, force=True).min_flops == blas.NEVER
    for m in (200, Sym("m")):
        c = blas.choose(m, 4096, 4096, 4, False, t, True)
        assert c.kernel == "own" and "slower at every size" in c.reason
    # f64 products are measured on their own.
    monkeypatch.setattr(blas, "_time_products", no_timing)
    with pytest.raises(AssertionError, match="measured again"):
        blas.calibrate(8)
    with pytest.raises(ValueError, match="itemsize must be 4 or 8"):
        blas.calibrate(2)


@needs_blas
def test_threshold_given_or_static_and_not_measured_without_products(monkeypatch):
    """``LLVMACCEL_BLAS_MIN_FLOPS`` sets the threshold (bad values raise),
    ``LLVMACCEL_BLAS_CALIBRATE=off`` keeps the static rules, and a graph
    without products compiles without measuring anything."""
    monkeypatch.setenv("LLVMACCEL_BLAS", "auto")
    monkeypatch.setattr(blas, "_calibrations", {})

    def no_timing(*args):
        raise AssertionError("measured")

    monkeypatch.setattr(blas, "_time_products", no_timing)
    t = host()
    monkeypatch.setenv("LLVMACCEL_BLAS_MIN_FLOPS", "1000")
    assert blas.min_flops() == 1000
    c = blas.choose(10, 10, 10, 4, False, t, True)
    assert c.kernel == "blas" and "LLVMACCEL_BLAS_MIN_FLOPS" in c.reason
    monkeypatch.setenv("LLVMACCEL_BLAS_MIN_FLOPS", "never")
    assert blas.choose(4096, 4096, 4096, 4, False, t, True).kernel == "own"
    for bad in ("0", "-5", "lots"):
        monkeypatch.setenv("LLVMACCEL_BLAS_MIN_FLOPS", bad)
        with pytest.raises(ValueError, match="LLVMACCEL_BLAS_MIN_FLOPS"):
            blas.min_flops()
    monkeypatch.delenv("LLVMACCEL_BLAS_MIN_FLOPS")
    monkeypatch.setenv("LLVMACCEL_BLAS_CALIBRATE", "off")
    monkeypatch.setattr(blas, "_threads_override", 2)
    c = blas.choose(4096, 4096, 4096, 4, False, t, True)
    assert c.kernel == "blas" and "static rule" in c.reason
    monkeypatch.delenv("LLVMACCEL_BLAS_CALIBRATE")
    g = Graph()
    x = g.input("x", (64, 64), DType.f32)
    g.set_outputs([g.unary("tanh", x)])
    compiler.compile_graph(g)  # no matmul: nothing measured


def test_off_and_missing_library(monkeypatch):
    """``LLVMACCEL_BLAS=off`` and a library that cannot be loaded give
    llvmaccel's kernel, with the reason in :func:`blas.status` and the
    kernel's record; importing llvmaccel does not need the library."""
    monkeypatch.setenv("LLVMACCEL_BLAS", "off")
    assert blas.load() is None and "off" in blas.status()
    kern = generate(_graph(DType.f32, 256, 256, 256))
    assert kern.matmuls[0][1] == "own" and not kern.uses_blas
    assert blas.symbol(4) not in kern.ir
    monkeypatch.setenv("LLVMACCEL_BLAS", "auto")
    monkeypatch.setattr(blas, "_load", lambda: None)
    monkeypatch.setattr(blas, "_status", {blas.library(): "scipy-openblas32 is not installed: ..."})
    kern = generate(_graph(DType.f32, 256, 256, 256))
    assert kern.matmuls[0] == (kern.matmuls[0][0], "own", "scipy-openblas32 is not installed: ...")
    _check(compiler.compile_graph(_graph(DType.f32, 70, 80, 90)), DType.f32, 70, 80, 90)


@needs_blas
def test_threads_follow_torch_or_the_option(monkeypatch, library):
    """The library's threads: set_num_threads, else $LLVMACCEL_NUM_THREADS,
    else torch.get_num_threads(); applied before a call that uses it."""
    torch = pytest.importorskip("torch")
    if library != "openblas":
        pytest.skip("OpenBLAS's thread count (PyTorch's: test_torch_library_threads)")
    lib = blas.load()
    monkeypatch.delenv("LLVMACCEL_NUM_THREADS", raising=False)
    monkeypatch.setenv("LLVMACCEL_BLAS", "always")
    c = compiler.compile_graph(_graph(DType.f32, 40, 40, 40))
    old = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        _check(c, DType.f32, 40, 40, 40)
        assert lib.scipy_openblas_get_num_threads() == 1
        blas.set_num_threads(2)
        _check(c, DType.f32, 40, 40, 40)
        assert lib.scipy_openblas_get_num_threads() == min(2, _cores())
        blas.set_num_threads(None)
        monkeypatch.setenv("LLVMACCEL_NUM_THREADS", "1")
        _check(c, DType.f32, 40, 40, 40)
        assert lib.scipy_openblas_get_num_threads() == 1
        with pytest.raises(ValueError, match="positive int"):
            blas.set_num_threads(0)
    finally:
        blas.set_num_threads(None)
        torch.set_num_threads(old)


def _cores() -> int:
    """The CPUs the libraries cap a thread count at: the online ones, not
    this process's affinity (under ``taskset -c 1`` they still take 2)."""
    import os

    return os.cpu_count() or 1


@needs_blas
def test_torch_library(monkeypatch, library):
    """With PyTorch imported, ``auto`` takes PyTorch's own BLAS (the Fortran
    ``sgemm_`` of libtorch_cpu): the product is the column-major
    ``C^T = B^T A^T``, one call per batch index (no strided batch), with
    PyTorch's thread count unless one is given."""
    torch = pytest.importorskip("torch")
    if library != "torch":
        pytest.skip("PyTorch's library is not usable here")
    monkeypatch.delenv("LLVMACCEL_BLAS_LIBRARY")
    assert blas.library() == "torch" and blas.abi() == "fortran"
    assert "libtorch_cpu" in blas.status() and not blas.has_batched()
    monkeypatch.setenv("LLVMACCEL_BLAS", "always")
    kern = generate(_graph(DType.f32, 5, 7, 3, ta=True, batch=(2,)))
    assert "call void @sgemm_(ptr" in kern.ir and "cblas" not in kern.ir
    _check(compiler.compile_graph(_graph(DType.f32, 5, 7, 3, ta=True, batch=(2,))),
           DType.f32, 5, 7, 3, ta=True, batch=(2,))
    lib = blas.load()
    old = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        c = compiler.compile_graph(_graph(DType.f64, 40, 40, 40, tb=True))
        _check(c, DType.f64, 40, 40, 40, tb=True)
        assert lib.mkl_get_max_threads() == 1
        blas.set_num_threads(2)
        _check(c, DType.f64, 40, 40, 40, tb=True)
        assert lib.mkl_get_max_threads() == min(2, _cores())
    finally:
        blas.set_num_threads(None)
        lib.MKL_Set_Num_Threads_Local(ctypes.c_int(0))  # back to the global setting
        torch.set_num_threads(old)


def test_environment_read_at_each_call_follows_changes(monkeypatch):
    """The settings read before every call (``llvmaccel._env.getenv``, which
    skips os.environ's key encoding) see what os.environ sees: set, changed,
    removed, and non-ASCII values."""
    from llvmaccel._env import getenv

    name = "LLVMACCEL_TEST_ENV_FOLLOWS"
    monkeypatch.delenv(name, raising=False)
    assert getenv(name) == "" and getenv(name, "auto") == "auto"
    monkeypatch.setenv(name, "2")
    assert getenv(name) == os.environ[name] == "2"
    os.environ[name] = "pool é"
    assert getenv(name) == os.environ.get(name) == "pool é"
    monkeypatch.delenv(name)
    assert getenv(name, "x") == "x"
    monkeypatch.setenv("LLVMACCEL_BLAS", "off")
    assert blas.mode() == "off"
