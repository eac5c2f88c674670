"""Generated matmul kernels (llvmaccel's own, without the BLAS library):
every remainder path of the tiling, operand layouts, dtypes and symbolic
sizes, against numpy (float64 references)."""

from __future__ import annotations

import dataclasses
import itertools
import re
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
import pytest

from llvmaccel import codegen, compiler
from llvmaccel.codegen import generate
from llvmaccel.codegen.matmul import tile_vectors
from llvmaccel.graph import DType, Graph, GraphError, Sym
from llvmaccel.target import host

RNG = np.random.default_rng(1)
TOL = {DType.f32: (1e-4, 1e-4), DType.f64: (1e-11, 1e-11)}


@pytest.fixture(autouse=True)
def _cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("LLVMACCEL_CACHE_DIR", str(tmp_path / "cache"))
    # llvmaccel's own kernel (the library path: test_blas.py).
    monkeypatch.setenv("LLVMACCEL_BLAS", "off")


def _tiling(dt: DType) -> tuple[int, int, int, int]:
    """(vector width W, tile rows MR, tile columns NR, panel depth KC) of the
    host (the default target), for a wide product of run-time N."""
    vw = codegen._matmul_tiling(dt, 1)[0]
    nrv = tile_vectors(Sym("n"), vw, codegen.common.default_target())
    vw, mr, kc = codegen._matmul_tiling(dt, nrv)
    return vw, mr, nrv * vw, kc


def _graph(dt: DType, m, n, k, ta: bool = False, tb: bool = False, batch: tuple = (),
           bbatch: tuple | None = None) -> Graph:
    """``A @ B``; ``ta``/``tb``: the operand is a transposed view of an input."""
    g = Graph()
    bbatch = batch if bbatch is None else bbatch
    a = g.input("a", batch + ((k, m) if ta else (m, k)), dt)
    b = g.input("b", bbatch + ((n, k) if tb else (k, n)), dt)
    if ta:
        r = a.rank
        a = g.permute(a, tuple(range(r - 2)) + (r - 1, r - 2))
    if tb:
        r = b.rank
        b = g.permute(b, tuple(range(r - 2)) + (r - 1, r - 2))
    g.set_outputs([g.matmul(a, b)])
    return g


def _data(dt: DType, shape: tuple) -> np.ndarray:
    return RNG.standard_normal(shape).astype(dt.numpy)


@contextmanager
def _host_as(monkeypatch, **facts: int) -> Iterator[None]:
    """Kernels generated on this host as for a target with other ``facts``
    (``vector_bits``, ``vector_registers``); compiled graphs of neither kind
    outlive the block."""
    target = dataclasses.replace(host(), **facts)
    monkeypatch.setattr(codegen.common, "default_target", lambda: target)
    compiler.clear_memory_cache()
    try:
        yield
    finally:
        compiler.clear_memory_cache()


def _check(c, dt: DType, m: int, n: int, k: int, ta: bool = False, tb: bool = False,
           batch: tuple = (), bbatch: tuple | None = None) -> None:
    bbatch = batch if bbatch is None else bbatch
    xa = _data(dt, batch + ((k, m) if ta else (m, k)))
    xb = _data(dt, bbatch + ((n, k) if tb else (k, n)))
    (y,) = c(xa, xb)
    ea = np.swapaxes(xa, -1, -2) if ta else xa
    eb = np.swapaxes(xb, -1, -2) if tb else xb
    ref = np.matmul(ea.astype(np.float64), eb.astype(np.float64))
    rtol, atol = TOL[dt]
    assert y.dtype == np.dtype(dt.numpy) and y.shape == ref.shape
    np.testing.assert_allclose(y, ref, rtol=rtol, atol=atol * max(1, k) ** 0.5,
                               err_msg=f"m={m} n={n} k={k} ta={ta} tb={tb} batch={batch}")


def _sizes(tile: int) -> list[int]:
    return sorted({1, tile - 1, tile, tile + 1, 2 * tile + 3} - {0})


@pytest.mark.parametrize("dt", [DType.f32, DType.f64])
@pytest.mark.parametrize("ta,tb", [(False, False), (False, True), (True, False), (True, True)])
def test_symbolic_sizes_every_remainder(dt, ta, tb):
    """One kernel with run-time sizes: full and leftover row tiles (every
    bit of M % MR), full panels and right edges of one and of two vectors,
    k-blocks with and without a remainder, and K = 0."""
    vw, mr, nr, kc = _tiling(dt)
    c = compiler.compile_graph(_graph(dt, Sym("m"), Sym("n"), Sym("k"), ta, tb))
    assert "i64 %sym.m" in c.kernel.ir
    ms = _sizes(mr) + [2 * mr - 1, 13]
    ns = sorted(set(_sizes(nr) + _sizes(vw) + [37]))
    ks = [1, 2, 7, kc - 1, kc, kc + 1, 2 * kc + 5]
    for m, n in itertools.product(ms, ns):
        _check(c, dt, m, n, int(RNG.choice(ks)), ta, tb)
    for k in ks + [0]:
        _check(c, dt, 2 * mr + 3, nr + vw + 1, k, ta, tb)


@pytest.mark.parametrize("dt", [DType.f32, DType.f64])
@pytest.mark.parametrize("n", [1, 2, 3, 5])
def test_dot_product_kernel_small_n(dt, n):
    """N = 1 (matrix-vector) and N smaller than a vector with B read along k:
    dot products vectorized along k, with row/column/k leftovers."""
    vw, _, _, _ = _tiling(dt)
    if n >= vw:
        pytest.skip(f"N={n} fills a vector of {vw} lanes on this host: the panel kernel's case")
    for tb in ([False, True] if n == 1 else [True]):
        for m, k in [(1, 1), (5, 3), (9, vw - 1), (13, vw), (4, vw + 1), (7, 3 * vw + 2), (8, 200)]:
            g = _graph(dt, m, n, k, tb=tb)
            kern = generate(g)
            assert "%kv" in kern.ir  # the loop over vectors of k
            assert not kern.temps  # B read in place, even transposed
            _check(compiler.compile_graph(g), dt, m, n, k, tb=tb)


@pytest.mark.parametrize("dt", [DType.f32, DType.f64])
def test_few_rows_against_transposed_b_take_the_dot_kernel(dt):
    """A product of at most one row tile of the dot kernel with B read along
    k (a batch-1 ``linear``: ``x @ W^T``) takes the dot kernel at any N, W
    read in place and never packed; one row more takes the panel kernel."""
    vw, _, nr, _ = _tiling(dt)
    for m, n, k in [(1, 1000, 576), (2, nr + 3, vw + 1), (4, 3 * vw, 5), (3, 7, 2 * vw)]:
        g = _graph(dt, m, n, k, tb=True)
        kern = generate(g)
        assert "%kv" in kern.ir and "%pk" not in kern.ir, (m, n, k)
        assert not kern.temps
        _check(compiler.compile_graph(g), dt, m, n, k, tb=True)
    panels = generate(_graph(dt, 5, 1000, 576, tb=True)).ir
    assert "%kv" not in panels and "%pk" in panels
    # B not read along k: the panel or streaming kernels, as before.
    assert "%kv" not in generate(_graph(dt, 1, 1000, 576)).ir


@pytest.mark.parametrize("dt", [DType.f32, DType.f64])
def test_static_shapes_one_vector_panels(dt):
    """Static N of at most one vector uses one-vector tiles; with B not
    transposed the panel kernel also covers small N."""
    vw, mr, _, kc = _tiling(dt)
    for m, n, k, tb in [(mr + 3, vw, kc + 1, True), (3, vw - 1, 17, False),
                        (2 * mr + 1, 2, 5, False), (mr, vw, 1, False), (1, 1, 1, False)]:
        _check(compiler.compile_graph(_graph(dt, m, n, k, tb=tb)), dt, m, n, k, tb=tb)


def test_batched_broadcast_and_primes():
    dt = DType.f32
    for m, n, k in [(5, 5, 64), (7, 11, 13), (31, 37, 41)]:
        c = compiler.compile_graph(_graph(dt, m, n, k, tb=True, batch=(3, 2)))
        _check(c, dt, m, n, k, tb=True, batch=(3, 2))
    # B broadcast across A's batch (2-D weight), and A broadcast in a dim of 1.
    c = compiler.compile_graph(_graph(dt, 9, 19, 23, tb=True, batch=(4,), bbatch=()))
    _check(c, dt, 9, 19, 23, tb=True, batch=(4,), bbatch=())
    c = compiler.compile_graph(_graph(dt, 6, 35, 10, batch=(1, 3), bbatch=(2, 1)))
    xa, xb = _data(dt, (1, 3, 6, 10)), _data(dt, (2, 1, 10, 35))
    (y,) = c(xa, xb)
    np.testing.assert_allclose(y, np.matmul(xa, xb), rtol=1e-4, atol=1e-4)
    assert y.shape == (2, 3, 6, 35)


@pytest.mark.parametrize("blas_mode", ["off", "always"])
@pytest.mark.parametrize("tb", [False, True], ids=["b", "bT"])
def test_explicit_batch_broadcast_read_in_place(tb, blas_mode, monkeypatch):
    """An operand that is an explicit broadcast across batch dims (ATen's
    ``w.expand(b, k, n)`` before a ``bmm``) is read from the broadcast's
    source, every stretched dim at index 0, not copied into a temporary;
    with the library too (one call per batch index: not a strided batch)."""
    monkeypatch.setenv("LLVMACCEL_BLAS", blas_mode)
    dt = DType.f32
    for bsrc, ashape, full in [((), (4, 9, 23), (4,)), ((1, 3), (2, 3, 9, 23), (2, 3)),
                               ((2, 1), (2, 3, 9, 23), (2, 3))]:
        g = Graph()
        a = g.input("a", ashape, dt)
        w = g.input("w", bsrc + ((19, 23) if tb else (23, 19)), dt)
        if tb:
            w = g.permute(w, tuple(range(w.rank - 2)) + (w.rank - 1, w.rank - 2))
        g.set_outputs([g.matmul(a, g.broadcast_to(w, full + (23, 19)))])
        assert not generate(g).temps, bsrc
        xa, xw = _data(dt, ashape), _data(dt, bsrc + ((19, 23) if tb else (23, 19)))
        (y,) = compiler.compile_graph(g)(xa, xw)
        ref = np.matmul(xa.astype(np.float64),
                        np.swapaxes(xw, -1, -2) if tb else xw.astype(np.float64))
        np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-4)
    # A broadcast A (rows stretched) is not a batch broadcast: copied.
    g = Graph()
    a = g.input("a", (1, 23), dt)
    g.set_outputs([g.matmul(g.broadcast_to(a, (9, 23)), g.input("w", (23, 19), dt))])
    assert len(generate(g).temps) == 1


def test_transposed_views_read_in_place():
    """``x @ W.T`` and an attention-style ``reshape(permute(k))`` read the
    transposed operand from its source buffer (no copy into a temporary),
    while other views (a slice) still get a contiguous buffer."""
    g = _graph(DType.f32, 6, 40, 12, tb=True)
    assert not generate(g).temps
    g = Graph()
    q = g.input("q", (2, 3, 10, 8), DType.f32)
    kk = g.input("k", (2, 3, 10, 8), DType.f32)
    kt = g.reshape(g.permute(kk, (0, 1, 3, 2)), (6, 8, 10))
    g.set_outputs([g.matmul(g.reshape(q, (6, 10, 8)), kt)])
    assert not generate(g).temps
    xq, xk = _data(DType.f32, (2, 3, 10, 8)), _data(DType.f32, (2, 3, 10, 8))
    (y,) = compiler.compile_graph(g)(xq, xk)
    ref = np.matmul(xq, np.swapaxes(xk, -1, -2)).reshape(6, 10, 10)
    np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-5)
    # A permute that is not a swap of the last two dims is copied first.
    g = Graph()
    a = g.input("a", (4, 5, 6), DType.f32)
    b = g.input("b", (6, 4, 7), DType.f32)
    g.set_outputs([g.matmul(a, g.permute(b, (1, 0, 2)))])
    assert len(generate(g).temps) == 1
    xa, xb = _data(DType.f32, (4, 5, 6)), _data(DType.f32, (6, 4, 7))
    (y,) = compiler.compile_graph(g)(xa, xb)
    np.testing.assert_allclose(y, np.matmul(xa, xb.transpose(1, 0, 2)), rtol=1e-5, atol=1e-5)
    # Sliced (strided) operands, one of them a slice of a transposed view.
    g = Graph()
    a = g.input("a", (9, 20), DType.f32)
    g.set_outputs([g.matmul(g.slice(a, 1, 2, 19, 2), g.slice(g.permute(a, (1, 0)), 0, 0, 9))])
    xa = _data(DType.f32, (9, 20))
    (y,) = compiler.compile_graph(g)(xa)
    np.testing.assert_allclose(y, xa[:, 2:19:2] @ xa.T[:9], rtol=1e-5, atol=1e-5)


def test_explicit_vector_tiles_and_fmuladd():
    """The panel kernel is written with vector types of the host's width and
    llvm.fmuladd (no fast-math flags: the summation order is the code's)."""
    vw, _, _, _ = _tiling(DType.f32)
    ir = generate(_graph(DType.f32, 64, 64, 64)).ir
    assert f"<{vw} x float>" in ir and f"@llvm.fmuladd.v{vw}f32" in ir
    assert " fast " not in ir and "reassoc" not in ir


@pytest.mark.parametrize("vbytes", [16, 32])
def test_narrower_vector_hosts(monkeypatch, vbytes):
    """Tiles chosen for AVX2/NEON-sized registers (fewer rows, narrower
    vectors) compute the same results on this host."""
    with _host_as(monkeypatch, vector_bits=vbytes * 8, vector_registers=16):
        for dt in (DType.f32, DType.f64):
            vw, mr, nr, kc = _tiling(dt)
            assert vw == vbytes // dt.itemsize
            c = compiler.compile_graph(_graph(dt, Sym("m"), Sym("n"), Sym("k"), tb=True))
            assert f"<{vw} x {dt.llvm}>" in c.kernel.ir
            for m, n, k in [(mr + 1, nr + 1, kc + 1), (2 * mr - 1, vw - 1 or 1, 3), (1, 1, 1)]:
                _check(c, dt, m, n, k, tb=True)
            _check(compiler.compile_graph(_graph(dt, 7, 1, 2 * vw + 1)), dt, 7, 1, 2 * vw + 1)


def test_tile_width_by_registers():
    """Four vectors across a tile where the target has 32 registers of 512
    bits (AVX-512) and N is wider than two vectors; two elsewhere (AVX2,
    NEON-sized registers) and for narrow products."""
    avx512 = dataclasses.replace(host(), vector_bits=512, vector_registers=32)
    avx2 = dataclasses.replace(host(), vector_bits=256, vector_registers=16)
    neon = dataclasses.replace(host(), vector_bits=128, vector_registers=32)
    assert tile_vectors(256, 16, avx512) == 4 and tile_vectors(Sym("n"), 16, avx512) == 4
    assert tile_vectors(32, 16, avx512) == 2 and tile_vectors(33, 16, avx512) == 4
    assert tile_vectors(256, 8, avx2) == 2 and tile_vectors(256, 4, neon) == 2


def test_tile_rows_fill_the_registers():
    """As many tile rows as leave registers for B's vectors and a broadcast
    of A, at most 16 accumulators: 8 x 2 with 32 registers, 4 x 4 on
    AVX-512's wide tiles, 6 x 2 with AVX2's 16 (12 accumulators, enough for
    an FMA of 5 cycles on two pipes), 2 x 2 with 8."""
    avx512 = dataclasses.replace(host(), vector_bits=512, vector_registers=32)
    avx2 = dataclasses.replace(host(), vector_bits=256, vector_registers=16)
    few = dataclasses.replace(host(), vector_bits=128, vector_registers=8)
    assert codegen._matmul_tiling(DType.f32, 2, avx512)[1] == 8
    assert codegen._matmul_tiling(DType.f32, 4, avx512)[1] == 4
    assert codegen._matmul_tiling(DType.f32, 2, avx2)[1] == 6
    assert codegen._matmul_tiling(DType.f64, 2, avx2)[1] == 6
    assert codegen._matmul_tiling(DType.f32, 2, few)[1] == 2


def test_six_row_tiles_and_every_rest_compute_the_same(monkeypatch):
    """Tiles of 6 rows (16-register targets, generated for this host): every
    rest of rows, 0 to 5, as tiles of 4, 2 and 1 rows, against numpy."""
    with _host_as(monkeypatch, vector_bits=256, vector_registers=16):
        for dt in (DType.f32, DType.f64):
            vw, mr, nr, kc = _tiling(dt)
            assert mr == 6
            c = compiler.compile_graph(_graph(dt, Sym("m"), Sym("n"), Sym("k")))
            for m in range(2 * mr, 3 * mr):
                _check(c, dt, m, nr + 3, kc + 5)


def test_wide_tiles_compute_the_same(monkeypatch):
    """The four-vector tiles of AVX-512 targets, generated for this host
    (512-bit IR vectors, which LLVM splits where registers are narrower):
    every right edge (one to four vectors), leftover rows and k-blocks,
    against numpy."""
    with _host_as(monkeypatch, vector_bits=512, vector_registers=32):
        for dt in (DType.f32, DType.f64):
            vw, mr, nr, kc = _tiling(dt)
            assert nr == 4 * vw
            for tb in (False, True):
                c = compiler.compile_graph(_graph(dt, Sym("m"), Sym("n"), Sym("k"), tb=tb))
                for n in (nr, nr + 1, vw + 1, 2 * vw + 1, 3 * vw + 1, 2 * nr + 3):
                    _check(c, dt, 2 * mr + 3, n, kc + 5, tb=tb)
            _check(compiler.compile_graph(_graph(dt, 37, 5 * vw + 3, 70)), dt, 37, 5 * vw + 3, 70)


def test_transposed_panels_are_packed_in_registers():
    """A B stored ``[N, K]`` (``linear``'s weight, attention's ``k^T``) is
    packed by full blocks of W x W, W loads along K transposed in registers
    (log2 W stages of two-source shuffles, the first interleaving row ``i``
    with row ``i + W/2``), not by a scalar copy the vectorizer turns into a
    scatter per vector; right edges and the last ``K % W`` of a k-block are
    copied by the scalar loop. Every case against numpy."""
    for dt in (DType.f32, DType.f64):
        vw, mr, nr, kc = _tiling(dt)
        ir = codegen.generate(_graph(dt, Sym("m"), Sym("n"), Sym("k"), tb=True)).ir
        vt = f"<{vw} x {dt.llvm}>"
        lo = ", ".join(f"i32 {x}" for q in range(vw // 2) for x in (q, vw + q))
        assert f"shufflevector {vt} " in ir and f"<{vw} x i32> <{lo}>" in ir
        plain = codegen.generate(_graph(dt, Sym("m"), Sym("n"), Sym("k"))).ir
        assert f"<{vw} x i32> <{lo}>" not in plain
        c = compiler.compile_graph(_graph(dt, Sym("m"), Sym("n"), Sym("k"), tb=True))
        for k in (1, vw - 1, vw, vw + 1, 3 * vw + 2, kc, kc + vw + 1):
            for n in (nr, nr - 1, 2 * nr, 2 * nr + vw + 1):
                _check(c, dt, mr + 1, n, k, tb=True)


def test_integer_matmul_is_rejected():
    """Integer matmuls are not generated (the frontends fall back to eager,
    which is exact); the graph refuses them."""
    for dt in (DType.i32, DType.i64):
        g = Graph()
        a, b = g.input("a", (3, 4), dt), g.input("b", (4, 5), dt)
        with pytest.raises(GraphError):
            g.matmul(a, b)


def test_integer_matmul_through_torch_is_exact():
    torch = pytest.importorskip("torch")
    import llvmaccel.torch  # noqa: F401

    fn = torch.compile(lambda a, b: torch.relu(a @ b) + 1, backend="llvmaccel", dynamic=False)
    for dtype in (torch.int32, torch.int64):
        a = torch.randint(-1000, 1000, (17, 33), dtype=dtype)
        b = torch.randint(-1000, 1000, (33, 9), dtype=dtype)
        with torch.no_grad():
            got = fn(a, b)
        assert got.dtype == dtype and torch.equal(got, torch.relu(a @ b) + 1)


def _streams(dt: DType, m: int, n: int, k: int) -> bool:
    """Whether ``[m, k] @ [k, n]`` (B contiguous along j) gets the streaming kernel."""
    from llvmaccel.codegen import matmul

    return m <= matmul._MATMUL_STREAM_ROWS and k * n * dt.itemsize >= matmul._MATMUL_STREAM_MIN_B


@pytest.mark.parametrize("dt", [DType.f32, DType.f64])
def test_few_rows_stream_b(dt):
    """A few rows of A times a large B contiguous along j (a decode step's
    h @ W): B is streamed row after row into an L1 block of C (the k loop
    ``%srow``), nothing packed; every remainder of N (vectors, single
    columns, blocks of C) and of K (unrolled by rows), batches, a
    transposed A, and K = 0."""
    from llvmaccel.codegen import matmul

    vw = _tiling(dt)[0]
    block = matmul._MATMUL_STREAM_BLOCK_BYTES // dt.itemsize
    cases = [(1, 4096, 256, False, ()), (1, 3 * block + vw + 3, 37, False, ()),
             (2, block + 1, 1031, True, ()), (3, 5 * vw + 3, 2053, False, ()),
             (4, 1000, 67, True, ()), (1, 2048, 33, False, (2,))]
    for m, n, k, ta, batch in cases:
        assert _streams(dt, m, n, k), (m, n, k)
        g = _graph(dt, m, n, k, ta=ta, batch=batch)
        ir = generate(g).ir
        assert "%srow" in ir and "%pk" not in ir, (m, n, k)
        _check(compiler.compile_graph(g), dt, m, n, k, ta=ta, batch=batch)
    # K = 0 writes zeros; more rows, or a B read along k, keep their kernels.
    (y,) = compiler.compile_graph(_graph(dt, 2, 40000, 0))(
        _data(dt, (2, 0)), _data(dt, (0, 40000)))
    assert not y.any()
    assert "%srow" not in generate(_graph(dt, matmul._MATMUL_STREAM_ROWS + 1, 4096, 256)).ir
    assert "%srow" not in generate(_graph(dt, 1, 4096, 256, tb=True)).ir


@pytest.mark.parametrize("dt", [DType.f32, DType.f64])
def test_few_rows_read_b_in_place(dt):
    """M <= MR with B contiguous along j (a decode step's h @ W): full panels
    read B in place, only the right edge is packed; every remainder of N and
    K, batches, and a transposed A."""
    vw, mr, nr, kc = _tiling(dt)
    for m, n, k, ta in [(1, nr, 5, False), (1, 3 * nr + vw + 1, kc + 3, False),
                        (mr, 2 * nr - 1, 2 * kc, False), (2, nr + 1, 1, True), (1, 1, 7, False),
                        (mr, nr, 0, False)]:
        g = _graph(dt, m, n, k, ta=ta)
        kern = generate(g)
        _check(compiler.compile_graph(g), dt, m, n, k, ta=ta)
        if _streams(dt, m, n, k):  # a B this large is streamed (see below)
            assert "%srow" in kern.ir and "%pk" not in kern.ir, (m, n, k)
        elif k and n >= vw:  # B is packed only at the right edge, after the branch
            assert kern.ir.index("%pk") > kern.ir.index(".edge"), (m, n, k)
    # Two row tiles read a B that fits in L2 in place too; a larger B, or
    # more rows, is packed before the branch.
    ir = generate(_graph(dt, mr + 1, nr, 5)).ir
    l2 = host().l2_bytes
    assert (ir.index("%pk") > ir.index(".edge")) == (l2 >= 5 * nr * dt.itemsize)
    ir = generate(_graph(dt, 2 * mr + 1, nr, 5)).ir
    assert ir.index("%pk") < ir.index(".edge")
    if l2:
        k = l2 // (nr * dt.itemsize) + 1
        ir = generate(_graph(dt, mr + 1, nr, k)).ir
        assert ir.index("%pk") < ir.index(".edge")
        _check(compiler.compile_graph(_graph(dt, 2 * mr, 3 * nr + 1, 9)), dt, 2 * mr,
               3 * nr + 1, 9)
    _check(compiler.compile_graph(_graph(dt, 1, nr + 3, 9, batch=(3,))), dt, 1, nr + 3, 9,
           batch=(3,))


@pytest.mark.parametrize("m,n,k", [(64, 96, 40), (37, 45, 700), (7, 33, 9)])
def test_reader_computed_in_the_matmul_kernel(m, n, k):
    """The one elementwise nest that reads a matmul's result at its own
    element (a bias, an activation, a residual computed before, through a
    reshape) is computed in the matmul's last k-block from the tile, and
    the result is not stored: bit for bit what the separate nest gives
    (the same graph with the product also a result, which keeps the nest)."""
    dt = DType.f32

    def graph(keep_product: bool) -> Graph:
        g = Graph()
        a = g.input("a", (2, m, k), dt)
        w = g.input("w", (n, k), dt)
        b = g.input("b", (n,), dt)
        r = g.input("r", (2, m, n), dt)
        # A nest before the matmul's (read twice: a buffer of its own).
        res = g.unary("exp", g.binary("mul", r, g.scalar(0.5, dt)))
        total = g.reduce("sum", res, (0, 1, 2))
        y = g.matmul(a, g.broadcast_to(g.permute(w, (1, 0)), (2, k, n)))
        # (relu, not a math call: the vector and scalar variants of tanh may
        # differ in the last bit, and the loops differ in their remainders.)
        z = g.unary("relu", g.binary("add", g.binary("add", y, b), res))
        out = g.reshape(z, (2 * m, n))
        g.set_outputs([out, total] + ([y] if keep_product else []))
        return g

    fused = compiler.compile_graph(graph(False))
    (_, _, why), = fused.kernel.matmuls
    assert "its reader (reshape) computed in the kernel" in why, why
    plain = compiler.compile_graph(graph(True))
    assert "computed in the kernel" not in plain.kernel.matmuls[0][2]
    args = [_data(dt, s) for s in ((2, m, k), (n, k), (n,), (2, m, n))]
    got, want = fused(*args), plain(*args)
    np.testing.assert_array_equal(got[0], want[0])
    ref = np.maximum(np.matmul(args[0].astype(np.float64), args[1].T.astype(np.float64)) +
                     args[2] + np.exp(args[3] * 0.5), 0).reshape(2 * m, n)
    np.testing.assert_allclose(got[0], ref, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("fn", ["tanh", "gelu", "sigmoid", "exp"])
def test_a_math_call_keeps_its_own_nest(fn):
    """A reader that calls a math routine (an RNN cell's ``tanh(x @ w + b)``)
    is not computed in the matmul's epilogue, where each element would be a
    scalar call: its own nest gets the vector variants. A cheap reader of
    the same matmul is."""
    dt = DType.f32

    def graph(act: str) -> Graph:
        g = Graph()
        a = g.input("a", (4, 64), dt)
        w = g.input("w", (64, 64), dt)
        b = g.input("b", (64,), dt)
        g.set_outputs([g.unary(act, g.binary("add", g.matmul(a, w), b))])
        return g

    assert "computed in the kernel" in generate(graph("relu")).matmuls[0][2]
    assert "computed in the kernel" not in generate(graph(fn)).matmuls[0][2]
    c = compiler.compile_graph(graph(fn))
    if fn in ("tanh", "exp") and "_ZGV" in c.optimized_ir:  # libmvec: the vector variant
        assert not re.search(rf"call [^@]*@{fn}f\(", c.optimized_ir)


def test_streaming_kernel_with_more_rows_than_its_unroll(monkeypatch):
    """The few-row kernel unrolls k by _MATMUL_STREAM_REGS // M rows of B; at
    5 rows and more that is 1, and the k loop must still run (it once
    covered no k at all there, unreachable at the shipped 4 rows)."""
    from llvmaccel.codegen import matmul

    monkeypatch.setattr(matmul, "_MATMUL_STREAM_ROWS", 8)
    compiler.clear_memory_cache()
    for m in (5, 8):
        g = _graph(DType.f32, m, 4096, 37)
        assert "%srow" in generate(g).ir
        _check(compiler.compile_graph(g), DType.f32, m, 4096, 37)
    compiler.clear_memory_cache()
