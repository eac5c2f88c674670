"""The graph IR, its code generator and the compiler cache, without a frontend."""

from __future__ import annotations

import numpy as np
import pytest

from llvmaccel import compiler
from llvmaccel.codegen import generate
from llvmaccel.graph import DType, Graph, GraphError, Sym

RNG = np.random.default_rng(0)


@pytest.fixture(autouse=True)
def _cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("LLVMACCEL_CACHE_DIR", str(tmp_path / "cache"))


def _softmax_graph():
    g = Graph()
    x = g.input("x", (Sym("n"), 8), DType.f32)
    e = g.unary("exp", g.binary("sub", x, g.reduce("max", x, (1,), keepdim=True)))
    g.set_outputs([g.binary("div", e, g.reduce("sum", e, (1,), keepdim=True))])
    return g


def test_symbolic_sizes_are_arguments():
    c = compiler.compile_graph(_softmax_graph())
    assert "i64 noundef %sym.n" in c.kernel.ir
    for n in (1, 5, 33):
        x = RNG.standard_normal((n, 8)).astype(np.float32)
        (y,) = c(x)
        e = np.exp(x - x.max(1, keepdims=True))
        np.testing.assert_allclose(y, e / e.sum(1, keepdims=True), rtol=1e-6, atol=1e-7)


def test_fusion_one_loop_nest_per_group():
    g = Graph()
    x = g.input("x", (16, 16), DType.f32)
    y = g.unary("tanh", g.binary("add", g.binary("mul", x, x), g.scalar(1.0, DType.f32)))
    g.set_outputs([g.unary("relu", y)])
    k = generate(g)
    assert not k.temps  # the whole chain is one loop nest writing the output
    assert k.ir.count("phi i64") == 1  # one flat loop over the contiguous output


def test_permute_undoing_a_permute_is_its_source():
    """t(t(w)), everywhere in aot_autograd's backward graphs, is w itself:
    no transposing copy of the weight (0.9 ms of an MLP's backward, when it
    was a BLAS operand). Other pairs stay two permutes (an attention's K^T,
    a transposed read of a head's buffer, is recognized in that form)."""
    g = Graph()
    w = g.input("w", (6, 4), DType.f32)
    x = g.input("x", (3, 6), DType.f32)
    assert g.permute(g.permute(w, (1, 0)), (1, 0)) is w
    v = g.input("v", (2, 3, 5), DType.f32)
    assert g.permute(g.permute(v, (2, 0, 1)), (1, 2, 0)) is v
    inner = g.permute(v, (2, 0, 1))
    twice = g.permute(inner, (1, 0, 2))
    assert twice.op == "permute" and twice.inputs[0] is inner
    g.set_outputs([g.matmul(x, g.permute(g.permute(w, (1, 0)), (1, 0))), twice])
    k = generate(g)
    assert not k.temps
    c = compiler.compile_graph(g)
    wv = RNG.standard_normal((6, 4)).astype(np.float32)
    xv = RNG.standard_normal((3, 6)).astype(np.float32)
    vv = RNG.standard_normal((2, 3, 5)).astype(np.float32)
    y, t = c(wv, xv, vv)
    np.testing.assert_allclose(y, xv @ wv, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(t, vv.transpose(2, 0, 1).transpose(1, 0, 2))


def test_im2col_checks_its_parameters():
    g = Graph()
    x = g.input("x", (1, 2, 4, 4), DType.f32)
    assert g.im2col(x, (3, 3), (1, 1), (1, 1), (1, 1)).shape == (1, 2, 3, 3, 4, 4)
    for bad in [((5, 5), (1, 1), (0, 0), (1, 1)),  # no window fits
                ((3,), (1, 1), (0, 0), (1, 1)),  # one value per dim
                ((3, 3), (0, 1), (0, 0), (1, 1)),  # stride
                ((3, 3), (1, 1), (-1, 0), (1, 1))]:  # padding
        with pytest.raises(GraphError, match="im2col"):
            g.im2col(x, *bad)
    with pytest.raises(GraphError, match="float"):
        g.im2col(g.input("i", (1, 1, 3, 3), DType.i32), (1, 1), (1, 1), (0, 0), (1, 1))


def test_noalias_and_no_fast_math():
    k = generate(_softmax_graph())
    assert "ptr noalias readonly %in0" in k.ir and "ptr noalias %out0" in k.ir
    assert " fast " not in k.ir and " nnan " not in k.ir and " afn " not in k.ir
    # The only relaxation: a max reduction may keep either of two equal
    # zeros (nsz). The sum (rows of 8) is in fixed-order f32 lanes, not
    # reassociated.
    assert "reassoc" not in k.ir and "alloca <32 x float>" in k.ir
    nsz = [line for line in k.ir.splitlines() if " nsz " in line]
    assert nsz and all("call nsz float @llvm.maximum.f32" in line for line in nsz), nsz


@pytest.mark.parametrize("length,acc", [(64, "float"), (4096, "float"), (4097, "double"),
                                        (Sym("n"), "double")])
def test_sum_accumulator_by_length(length, acc):
    """f32 sums of up to codegen.elementwise.F32_ACCUMULATION_MAX elements
    per result accumulate in f32 (as PyTorch's and XLA's CPU kernels), in
    32 lanes of a fixed order (no reassoc); longer ones and lengths known
    at run time in f64 partial sums; both stay within a few f32 roundings
    of the exact sum, for rows of mixed magnitude and sign."""
    from llvmaccel.codegen.elementwise import F32_ACCUMULATION_MAX

    assert F32_ACCUMULATION_MAX == 4096
    g = Graph()
    x = g.input("x", (3, length), DType.f32)
    g.set_outputs([g.reduce("sum", x, axes=(1,))])
    c = compiler.compile_graph(g)
    if acc == "float":
        assert "alloca <32 x float>" in c.kernel.ir and "reassoc" not in c.kernel.ir
    else:
        assert "fadd reassoc double" in c.kernel.ir
    n = length if isinstance(length, int) else 5000
    data = (RNG.standard_normal((3, n)) * np.exp(RNG.uniform(-8, 8, (3, n)))).astype(np.float32)
    (got,) = c(data)
    exact = data.astype(np.float64)
    err = np.abs(got.astype(np.float64) - exact.sum(1))
    assert np.all(err <= 1e-5 * np.abs(exact).sum(1)), err


def test_vectorized_sum_stays_accurate():
    # Partial sums in f64 of 2^20 f32 values of mixed magnitude and sign.
    g = Graph()
    x = g.input("x", (Sym("n"),), DType.f32)
    g.set_outputs([g.reduce("sum", x, axes=(0,))])
    data = (RNG.standard_normal(1 << 20) * np.exp(RNG.uniform(-8, 8, 1 << 20))).astype(
        np.float32)
    (got,) = compiler.compile_graph(g)(data)
    want = np.sum(data.astype(np.float64))
    assert abs(float(got) - want) <= 1e-6 * np.sum(np.abs(data.astype(np.float64)))
    assert "llvm.vector.reduce.fadd" in compiler.compile_graph(g).optimized_ir


def test_embedding_bag_counted_loop_shape():
    g = Graph()
    t = g.input("t", (100, 16), DType.f32)
    i = g.input("i", (Sym("n"),), DType.i64)
    o = g.input("o", (Sym("b"),), DType.i64)
    g.set_outputs([g.embedding_bag(t, i, o, "sum")])
    k = generate(g)
    assert "%j" in k.ir  # the bag-entry loop over [offsets[b], offsets[b+1])
    c = compiler.compile_graph(g)
    table = RNG.standard_normal((100, 16)).astype(np.float32)
    idx = RNG.integers(0, 100, 40)
    off = np.array([0, 10, 10, 25])
    (out,) = c(table, idx, off)
    ref = np.stack([table[idx[a:b]].sum(0) for a, b in zip(off, [10, 10, 25, 40], strict=False)])
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-6)
    assert c.report.passed("accel-prefetch"), c.report.table()


def test_index_modes_and_errors():
    g = Graph()
    x = g.input("x", (5, 3), DType.f32)
    i = g.input("i", (4,), DType.i32)
    g.set_outputs([g.take(x, i, 0, "clip"), g.take(x, i, 0, "fill", fill=-1.0),
                   g.take(x, i, 0, "check")])
    c = compiler.compile_graph(g)
    xs = RNG.standard_normal((5, 3)).astype(np.float32)
    ok = np.array([0, 4, 2, 1], np.int32)
    clip, fill, check = c(xs, ok)
    np.testing.assert_array_equal(check, xs[ok])
    with pytest.raises(IndexError):
        c(xs, np.array([0, 5, 1, 1], np.int32))
    g2 = Graph()
    x2 = g2.input("x", (5, 3), DType.f32)
    i2 = g2.input("i", (3,), DType.i64)
    g2.set_outputs([g2.take(x2, i2, 0, "clip"), g2.take(x2, i2, 0, "fill", fill=-1.0)])
    clip, fill = compiler.compile_graph(g2)(xs, np.array([-2, 7, 3]))
    np.testing.assert_array_equal(clip, xs[[0, 4, 3]])
    np.testing.assert_array_equal(fill[:2], -1.0)
    np.testing.assert_array_equal(fill[2], xs[3])


def test_integer_division_by_zero_does_not_trap():
    """XLA's rule gives values (div -1, rem the dividend); the default rule
    fails the kernel with a ZeroDivisionError. Neither traps, and INT_MIN / -1
    wraps."""
    def graph(rule):
        g = Graph()
        a = g.input("a", (3,), DType.i32)
        b = g.input("b", (3,), DType.i32)
        g.set_outputs([g.binary(op, a, b, int_zero_div=rule) for op in ("div", "rem", "floordiv")])
        return compiler.compile_graph(g)

    a = np.array([7, -7, -2**31], np.int32)
    q, r, f = graph("xla")(a, np.array([0, 2, -1], np.int32))
    assert list(q) == [-1, -3, -2**31] and list(r) == [7, -1, 0] and list(f) == [-1, -4, -2**31]
    strict = graph("error")
    q, r, f = strict(a, np.array([3, 2, -1], np.int32))
    assert list(q) == [2, -3, -2**31] and list(f) == [2, -4, -2**31]
    with pytest.raises(ZeroDivisionError):
        strict(a, np.array([3, 0, -1], np.int32))
    with pytest.raises(GraphError, match="int_zero_div"):
        Graph().binary("div", g_in := Graph().input("x", (1,), DType.i32), g_in, "nan")


def test_bad_calls_raise():
    c = compiler.compile_graph(_softmax_graph())
    with pytest.raises(TypeError, match="dtype"):
        c(np.zeros((2, 8), np.float64))
    with pytest.raises(ValueError, match="shape"):
        c(np.zeros((2, 9), np.float32))
    with pytest.raises(ValueError, match="rank"):
        c(np.zeros(8, np.float32))
    with pytest.raises(TypeError, match="inputs"):
        c()
    with pytest.raises(GraphError):
        Graph().reshape(Graph().input("x", (2, 3), DType.f32), (7,))


def test_memory_and_disk_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("LLVMACCEL_CACHE_DIR", str(tmp_path / "c"))
    compiler.clear_memory_cache()
    compiler.reset_stats()
    c1 = compiler.compile_graph(_softmax_graph())
    assert compiler.compile_graph(_softmax_graph()) is c1
    assert compiler.stats().compilations == 1 and compiler.stats().memory_hits == 1
    assert list((tmp_path / "c").glob("*.bc"))
    compiler.clear_memory_cache()  # as in a new process: bitcode from disk
    c2 = compiler.compile_graph(_softmax_graph())
    s = compiler.stats()
    assert s.disk_hits == 1 and s.optimizations == 1
    x = RNG.standard_normal((3, 8)).astype(np.float32)
    np.testing.assert_array_equal(c1(x)[0], c2(x)[0])
    # Another build of the pass plugin does not reuse that bitcode.
    compiler.clear_memory_cache()
    monkeypatch.setattr(compiler, "_plugin_id", lambda: "another-build")
    compiler.compile_graph(_softmax_graph())
    assert compiler.stats().disk_hits == 1 and compiler.stats().optimizations == 2
    monkeypatch.setenv("LLVMACCEL_CACHE_DIR", "off")
    assert compiler.cache_dir() is None


def test_threads_share_a_compiled_graph():
    from concurrent.futures import ThreadPoolExecutor

    c = compiler.compile_graph(_softmax_graph())
    assert c.kernel.temps  # the threads share its temporaries' pool
    xs = [RNG.standard_normal((rows, 8)).astype(np.float32)
          for rows in (4096, 64, 4096, 1, 4096, 64) * 8]
    with ThreadPoolExecutor(4) as pool:
        outs = list(pool.map(lambda x: c(x)[0], xs))
    for x, y in zip(xs, outs, strict=True):
        e = np.exp(x - x.max(1, keepdims=True))
        np.testing.assert_allclose(y, e / e.sum(1, keepdims=True), rtol=1e-5, atol=1e-7)


def test_temporaries_are_reused_across_calls():
    compiler.clear_memory_cache()
    c = compiler.compile_graph(_softmax_graph())
    x = RNG.standard_normal((32, 8)).astype(np.float32)
    c(x)
    (spare,) = c._spare_temps.values()
    addresses = [t.ctypes.data for t in spare[0].arrays]
    assert spare[0].ptrs == addresses  # kept with them: not asked of numpy per call
    # At PyTorch's alignment (np.empty gives 16 bytes: a library GEMM reading
    # a temporary then ran slower than on eager's tensors).
    assert all(a % compiler.OUTPUT_ALIGNMENT == 0 for a in addresses)
    y = c(x)[0]
    (spare,) = c._spare_temps.values()
    assert [t.ctypes.data for t in spare[0].arrays] == addresses  # the same memory again
    e = np.exp(x - x.max(1, keepdims=True))
    np.testing.assert_allclose(y, e / e.sum(1, keepdims=True), rtol=1e-5)
    for rows in range(1, 10):  # sizes kept for later calls are bounded
        c(RNG.standard_normal((rows, 8)).astype(np.float32))
    assert len(c._spare_temps) == compiler._SPARE_SHAPES


@pytest.mark.parametrize("fn", ["sum", "prod", "max", "min"])
@pytest.mark.parametrize("dt", [DType.f32, DType.f64, DType.i32, DType.i64])
def test_reductions_over_leading_axes(fn, dt):
    # Reduced axes first, kept ones last: emitted rows first (the whole
    # operand read once, in order), for every dtype and symbolic sizes.
    g = Graph()
    x = g.input("x", (Sym("n"), 3, Sym("d")), dt)
    g.set_outputs([g.reduce(fn, x, (0, 1)), g.reduce(fn, x, (0,), keepdim=True)])
    c = compiler.compile_graph(g)
    for n, d in ((1, 1), (5, 17), (40, 33)):
        if dt.is_float:
            a = RNG.uniform(0.5, 1.5, (n, 3, d)) * RNG.choice([-1, 1], (n, 3, d))
        else:
            a = RNG.integers(-3, 4, (n, 3, d))
        a = a.astype(dt.numpy)
        got01, got0 = c(a)
        np_fn = {"sum": np.sum, "prod": np.prod, "max": np.max, "min": np.min}[fn]
        want01 = np_fn(a.astype(np.float64 if dt.is_float else np.int64), axis=(0, 1))
        want0 = np_fn(a.astype(np.float64 if dt.is_float else np.int64), axis=0, keepdims=True)
        tol = 1e-5 if dt is DType.f32 else 1e-12
        np.testing.assert_allclose(got01, want01.astype(got01.dtype), rtol=tol)
        np.testing.assert_allclose(got0, want0.astype(got0.dtype), rtol=tol)
        assert got0.shape == (1, 3, d)


def test_leading_axis_f32_sum_accumulates_in_f64_rows():
    g = Graph()
    x = g.input("x", (Sym("n"), 8), DType.f32)
    g.set_outputs([g.reduce("sum", x, (0,))])
    c = compiler.compile_graph(g)
    assert ((8,), DType.f64) in c.kernel.temps  # the f64 accumulator row
    a = np.full((1 << 20, 8), 0.1, np.float32)
    a[0] = 1e7  # a large first term: f32 accumulation would lose the 0.1s
    (got,) = c(a)
    want = a.astype(np.float64).sum(0)
    np.testing.assert_allclose(got, want.astype(np.float32), rtol=1e-6)


@pytest.mark.parametrize("fn", ["any", "all"])
def test_boolean_reductions_over_leading_axes(fn):
    g = Graph()
    x = g.input("x", (Sym("n"), 4), DType.bool)
    g.set_outputs([g.reduce(fn, x, (0,))])
    c = compiler.compile_graph(g)
    a = np.array([[1, 0, 0, 1], [1, 0, 1, 1], [1, 0, 0, 1]], bool)
    (got,) = c(a)
    np.testing.assert_array_equal(got, a.any(0) if fn == "any" else a.all(0))


def test_known_tensor_signatures_take_the_planned_call():
    torch = pytest.importorskip("torch")
    compiler.clear_memory_cache()
    g = Graph()
    t = g.input("t", (Sym("r"), 4), DType.f32)
    i = g.input("i", (Sym("n"),), DType.i64)
    g.set_outputs([g.binary("mul", g.take(t, i, 0), g.scalar(2.0, DType.f32))])
    c = compiler.compile_graph(g)
    table = torch.randn(10, 4)
    for n in (3, 5, 3, 5):  # second call of each size: planned
        idx = torch.randint(0, 10, (n,))
        torch.testing.assert_close(c(table, idx)[0], table[idx] * 2)
    assert len(c._plans) == 2
    # The planned call still checks indices, raises, and works afterwards.
    with pytest.raises(IndexError):
        c(table, torch.tensor([0, 10, 1]))
    torch.testing.assert_close(c(table, torch.tensor([9, 0, 1]))[0], table[[9, 0, 1]] * 2)
    # Inputs a plan does not cover go the checked way: non-contiguous
    # tensors, other dtypes, numpy arrays.
    tt = torch.randn(4, 10).t()
    torch.testing.assert_close(c(tt, torch.tensor([1, 2, 3]))[0], tt[[1, 2, 3]] * 2)
    with pytest.raises(TypeError):
        c(table.double(), torch.tensor([1, 2, 3]))
    np.testing.assert_allclose(c(table.numpy(), np.array([4, 4]))[0], table.numpy()[[4, 4]] * 2)
    for n in range(6, 12):  # plans kept are bounded
        c(table, torch.zeros(n, dtype=torch.int64))
    assert len(c._plans) == compiler._SPARE_SHAPES


def test_parameters_take_the_planned_call():
    """With gradients enabled aot_autograd passes a model's nn.Parameters
    themselves: they are plain contiguous tensors to a planned call."""
    torch = pytest.importorskip("torch")
    compiler.clear_memory_cache()
    g = Graph()
    w = g.input("w", (Sym("r"), 4), DType.f32)
    g.set_outputs([g.binary("mul", w, g.scalar(3.0, DType.f32))])
    c = compiler.compile_graph(g)
    p = torch.nn.Parameter(torch.randn(5, 4))
    with torch.no_grad():
        for _ in range(3):
            torch.testing.assert_close(c(p)[0], p * 3)
    assert compiler._tensor_signature((p,)) is not None
    assert len(c._plans) == 1


def test_symbolic_buffers_state_their_extent():
    """Buffers of symbolic shapes say their size in bytes at entry (an
    llvm.assume "dereferenceable" bundle, LLVM 22 on); static ones in the
    parameter."""
    from llvmaccel.pipeline import llvm_version

    if int(llvm_version().split(".")[0]) < 22:
        pytest.skip("dereferenceable bundles of a non-constant size need LLVM 22")
    g = Graph()
    x = g.input("x", (Sym("n"), 3), DType.f32)
    w = g.input("w", (4,), DType.f64)
    g.set_outputs([g.binary("mul", x, g.scalar(2.0, DType.f32)), g.unary("exp", w)])
    ir = generate(g, threads=False).ir  # one kernel (a parallel one repeats it per body)
    assert ir.count('"dereferenceable"(ptr') == 2  # x and its output, not w
    assert "ptr noalias readonly dereferenceable(32) %in1" in ir
    # 12 * n bytes, computed at entry: evaluate the size for n = 5.
    import re

    size = re.search(r'"dereferenceable"\(ptr %in0, i64 (%[\w.]+)\)', ir).group(1)
    muls = dict(re.findall(r"(%[\w.]+) = mul i64 (%[\w.]+, \w+|\w+, %[\w.]+)", ir))

    def value(v: str) -> int:
        if v == "%sym.n":
            return 5
        if v.lstrip("-").isdigit():
            return int(v)
        a, b = (value(t.strip()) for t in muls[v].split(","))
        return a * b

    assert value(size) == 60


def test_values_returned_twice_keep_every_output_in_its_buffer():
    """Outputs ``[a, a, b, b, c]``: each repeat shares its first occurrence's
    buffer. (The repeats once took the buffer at the kernel index of their
    first occurrence from the list of graph outputs, which a repeat before
    them shifts: b's repeat then copied b's 64 values over a's 2, past its
    end; a training step's batch norms, returning saved statistics twice,
    crashed the interpreter that way.)"""
    g = Graph()
    x = g.input("x", (2,), DType.f32)
    y = g.input("y", (64,), DType.f32)
    a = g.binary("add", x, g.constant(np.float32(1), DType.f32))
    b = g.binary("mul", y, g.constant(np.float32(2), DType.f32))
    c = g.binary("sub", y, g.constant(np.float32(3), DType.f32))
    g.set_outputs([a, a, b, b, c])
    xv = RNG.standard_normal(2).astype(np.float32)
    yv = RNG.standard_normal(64).astype(np.float32)
    got = compiler.compile_graph(g)(xv, yv)
    for out, want in zip(got, [xv + 1, xv + 1, yv * 2, yv * 2, yv - 3], strict=True):
        np.testing.assert_allclose(out, want, rtol=1e-6)


@pytest.mark.parametrize("dtype", [DType.f32, DType.f64, DType.i32, DType.i64, DType.u32])
@pytest.mark.parametrize("fn", ["argmax", "argmin"])
def test_arg_extremes_two_pass_match_numpy(fn, dtype):
    """argmax/argmin in two vectorized passes (the extreme, then its first
    position): first occurrence on ties, the first NaN where there is one,
    -0.0 equal to 0.0, rows of one infinity, along either axis and over all."""
    rows = RNG.integers(-5, 6, (9, 300)).astype(dtype.np_dtype)
    if dtype.is_float:
        rows[1, [7, 200]] = np.nan
        rows[2] = -np.inf if fn == "argmax" else np.inf
        rows[3] = 0.0
        rows[3, 4] = -0.0
        rows[4, 299] = np.nan
    rows[5, [10, 250]] = rows[5].max() + 1 if fn == "argmax" else rows[5].min() - 1
    for data, axis in [(rows, 1), (rows, 0), (rows.reshape(-1), 0)]:
        g = Graph()
        x = g.input("x", data.shape, dtype)
        g.set_outputs([g.reduce(fn, x, (axis,))])
        c = compiler.compile_graph(g)
        (got,) = c(data)
        np.testing.assert_array_equal(got, getattr(np, fn)(data, axis=axis))
    # Both passes vectorized: the extreme, then the first position (a umin).
    assert "llvm.vector.reduce.umin" in c.optimized_ir


def test_reshaped_output_is_computed_in_place():
    """An output that is a reshape of a node with a nest of its own (a
    matmul operand here) is that node's buffer: no temporary and no copy."""
    g = Graph()
    x = g.input("x", (4, 6), DType.f32)
    w = g.input("w", (6, 5), DType.f32)
    t = g.unary("exp", x)
    g.set_outputs([g.reshape(t, (24,)), g.matmul(t, w)])
    c = compiler.compile_graph(g)
    assert not c.kernel.temps
    xv = RNG.standard_normal((4, 6)).astype(np.float32)
    wv = RNG.standard_normal((6, 5)).astype(np.float32)
    flat, mm = c(xv, wv)
    np.testing.assert_allclose(flat, np.exp(xv).reshape(24), rtol=1e-6)
    np.testing.assert_allclose(mm, np.exp(xv) @ wv, rtol=1e-5, atol=1e-5)


def test_output_and_its_elementwise_reader_share_one_nest():
    """A saved pre-activation (bias add, an output) and the activation that
    reads it (through a reshape) are computed in one loop nest: the bias
    add gets no nest of its own and is not read back from memory."""
    g = Graph()
    x = g.input("x", (6, 10), DType.f32)
    b = g.input("b", (10,), DType.f32)
    pre = g.binary("add", x, b)
    act = g.unary("tanh", g.reshape(pre, (2, 3, 10)))
    g.set_outputs([pre, act])
    c = compiler.compile_graph(g)
    ir = c.kernel.ir
    assert f"n{pre.id}.loop" not in ir and f"n{act.id}.loop" in ir
    xv = RNG.standard_normal((6, 10)).astype(np.float32)
    bv = RNG.standard_normal(10).astype(np.float32)
    p, a = c(xv, bv)
    np.testing.assert_array_equal(p, xv + bv)
    np.testing.assert_allclose(a, np.tanh(xv + bv).reshape(2, 3, 10), rtol=1e-6, atol=1e-7)


def test_output_read_transposed_keeps_its_own_nest():
    """A reader that takes the output at another element (a transpose) is
    not fused: the output gets its nest, the reader reads its buffer."""
    g = Graph()
    x = g.input("x", (5, 5), DType.f32)
    pre = g.unary("exp", x)
    g.set_outputs([pre, g.unary("neg", g.permute(pre, (1, 0)))])
    c = compiler.compile_graph(g)
    assert f"n{pre.id}.loop" in c.kernel.ir
    xv = RNG.standard_normal((5, 5)).astype(np.float32)
    p, t = c(xv)
    np.testing.assert_allclose(p, np.exp(xv), rtol=1e-6)
    np.testing.assert_allclose(t, -np.exp(xv).T, rtol=1e-6)


@pytest.mark.parametrize("src,mid,out", [
    ((3, 5, 12), (0, 2, 1), (3, 12, 5)),  # permute, no reshape between
    ((2, 3, 5, 7), (0, 2, 1, 3), (10, 3, 7)),  # merge the leading dims of a permute
    ((6, 35), (1, 0), (5, 7, 6)),  # split the leading dim of a transpose
    ((4, 3, 10), (1, 0, 2), (3, 2, 2, 5, 2)),  # split the last dims of a permute
])
def test_reshape_of_a_permute_by_runs_of_dims(src, mid, out):
    """A reshape of a view that is not contiguous maps each run of merged or
    split dims on its own (codegen's _reshape_groups): the same elements as
    numpy's reshape of the transposed array, for sizes that are not powers
    of two."""
    g = Graph()
    x = g.input("x", src, DType.f32)
    y = g.reshape(g.permute(g.unary("neg", x), mid), out)
    g.set_outputs([g.unary("exp", y)])
    c = compiler.compile_graph(g)
    xv = RNG.standard_normal(src).astype(np.float32)
    (got,) = c(xv)
    np.testing.assert_allclose(got, np.exp(-xv.transpose(mid).reshape(out)), rtol=1e-6)


def test_reshape_groups():
    from llvmaccel.codegen.elementwise import _reshape_groups

    assert _reshape_groups((4, 128, 4, 64), (4, 128, 256)) == [
        ((0, 1), (0, 1)), ((1, 2), (1, 2)), ((2, 4), (2, 3))]
    assert _reshape_groups((16, 128, 64), (4, 4, 128, 64)) == [
        ((0, 1), (0, 2)), ((1, 2), (2, 3)), ((2, 3), (3, 4))]
    assert _reshape_groups((6, 1, 4), (2, 3, 4)) == [((0, 1), (0, 2)), ((1, 3), (2, 3))]
    assert _reshape_groups((2, 3), (3, 2)) == [((0, 2), (0, 2))]
    assert _reshape_groups((Sym("n"), 6), (Sym("n"), 2, 3)) == [
        ((0, 1), (0, 1)), ((1, 2), (1, 3))]
    assert _reshape_groups((Sym("n"), 6), (2, Sym("n"), 3)) is None


def test_bf16_widening_is_exact_for_every_bit_pattern():
    """bf16 to f32 is the bits shifted into the top half (c10::BFloat16's
    conversion) for all 65536 patterns, NaN payloads and signalling NaNs
    included, in integer ops: no ``fpext bfloat``, which x86's cost model
    prices so high that the vectorizer had chosen 4 lanes on AVX-512."""
    ml_dtypes = pytest.importorskip("ml_dtypes")
    g = Graph()
    x = g.input("x", (1 << 16,), DType.bf16)
    g.set_outputs([g.cast(x, DType.f32)])
    c = compiler.compile_graph(g)
    assert "fpext" not in c.kernel.ir
    bits = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)
    (y,) = c(bits.view(ml_dtypes.bfloat16))
    np.testing.assert_array_equal(y.view(np.uint32), bits.astype(np.uint32) << 16)


def test_pruned_graph_keeps_what_the_outputs_need():
    """Graph.pruned drops the nodes no output reads and keeps the inputs
    (the signature, even one nothing reads), constants and sources of the
    rest; a graph with nothing to drop is returned as it is."""
    g = Graph()
    a = g.input("a", (4,), DType.f32)
    unused = g.input("unused", (2,), DType.f32)
    c = g.constant(np.arange(4, dtype=np.float32), DType.f32)
    first = len(g.nodes)
    dead = g.unary("exp", g.constant(np.ones(3, np.float32), DType.f32))
    kept = g.binary("add", a, c)
    g.note_source("add", "model.py:1", first)
    g.set_outputs([kept])
    p = g.pruned()
    assert p is not g and dead.op == "unary"
    assert [n.op for n in p.nodes] == ["input", "input", "constant", "binary"]
    assert [n.attrs for n in p.inputs] == [a.attrs, unused.attrs]
    (cid,) = p.constants
    np.testing.assert_array_equal(p.constants[cid], np.arange(4, dtype=np.float32))
    assert p.node_source[p.outputs[0].id] == 0 and p.sources == g.sources
    (y,) = compiler.compile_graph(p)(np.ones(4, np.float32), np.zeros(2, np.float32))
    np.testing.assert_array_equal(y, np.arange(4, dtype=np.float32) + 1)
    assert p.pruned() is p
