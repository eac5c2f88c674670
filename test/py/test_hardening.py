"""Bad input gets a clean Python exception, never a crash or a wrong answer.

One test per item of the hardening issue: unchecked indexing in the torch
backend (run on a tensor that ends right before an unmapped page), integer
division by zero in both frontends, embedding_bag offsets, parse_ir and
load_module arguments, pipeline nesting, bitcode error positions, pass
parameters through run_passes, and JIT argument conversion. Cases that could
kill the interpreter run in a subprocess, which must exit cleanly.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import llvmaccel

HERE = os.path.dirname(__file__)


def _run_isolated(code: str, timeout: float = 300) -> str:
    """Runs ``code`` in a fresh interpreter; it must exit 0 (no signal)."""
    env = dict(os.environ, PYTHONPATH=HERE + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=timeout, env=env)
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


# --- 1. torch: one index tensor, torch.take -------------------------------------


def test_torch_single_index_and_take_are_bounds_checked():
    """x[idx] and torch.take read a tensor that ends at a guard page: every
    out-of-range index is an IndexError (as in eager), in-range ones match."""
    out = _run_isolated("""
        import warnings
        import numpy as np, torch
        import llvmaccel.torch
        from guard import guarded_array
        warnings.simplefilter("ignore")
        x = torch.from_numpy(guarded_array(np.arange(10, dtype=np.float32)))
        y = torch.from_numpy(guarded_array(np.arange(24, dtype=np.float32))).view(4, 6)
        cases = [
            (lambda x, i: x[i], x, [[3, -1, 0, 9], [10], [-11], [2**40], [-2**40], [2**62]]),
            (lambda x, i: torch.take(x, i), y, [[0, 23, -24, -1], [24], [-25], [2**40]]),
            (lambda x, i: x[i] * 2, x, [[9, -10], [11]]),
        ]
        for fn, data, indices in cases:
            torch._dynamo.reset()
            fast = torch.compile(fn, backend="llvmaccel", options={"strict": True})
            with torch.no_grad():
                for idx in indices:
                    i = torch.tensor(idx)
                    try:
                        expected = fn(data, i)
                    except IndexError:
                        expected = IndexError
                    try:
                        got = fast(data, i)
                    except IndexError:
                        got = IndexError
                    if expected is IndexError or got is IndexError:
                        assert got is expected, (idx, got, expected)
                    else:
                        torch.testing.assert_close(got, expected)
                    print(idx, "ok")
        print("done")
        """)
    assert out.count(" ok") == 12 and "done" in out


# --- 3. integer division by zero ------------------------------------------------


@pytest.mark.parametrize("name", ["floordiv", "trunc", "remainder", "fmod"])
def test_torch_integer_division_by_zero_raises_like_eager(name):
    torch = pytest.importorskip("torch")
    fns = {
        "floordiv": lambda a, b: a // b,
        "trunc": lambda a, b: torch.div(a, b, rounding_mode="trunc"),
        "remainder": torch.remainder,
        "fmod": torch.fmod,
    }
    fn = fns[name]
    torch._dynamo.reset()
    fast = torch.compile(fn, backend="llvmaccel")
    a = torch.tensor([7, -7, 5, -(2**31)], dtype=torch.int32)
    with torch.no_grad():
        b = torch.tensor([3, 2, -4, 7], dtype=torch.int32)
        torch.testing.assert_close(fast(a, b), fn(a, b))
        zero = torch.tensor([3, 0, 1, 1], dtype=torch.int32)
        with pytest.raises(RuntimeError, match="ZeroDivisionError") as eager:
            fn(a, zero)
        with pytest.raises(RuntimeError, match="ZeroDivisionError") as ours:
            fast(a, zero)
    assert isinstance(eager.value, RuntimeError)
    assert isinstance(ours.value, ZeroDivisionError)
    assert isinstance(ours.value, llvmaccel.KernelZeroDivisionError)


@pytest.mark.parametrize("name", ["div", "rem", "floor_divide", "remainder", "fmod"])
def test_jax_integer_division_by_zero_matches_xla(name):
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    import llvmaccel.jax as lj

    fn = {"div": jax.lax.div, "rem": jax.lax.rem, "floor_divide": jnp.floor_divide,
          "remainder": jnp.remainder, "fmod": jnp.fmod}[name]
    info = np.iinfo(np.int32)
    a = np.array([7, -7, 5, 0, info.min, info.min, info.max], np.int32)
    b = np.array([0, 2, 0, 0, -1, 0, -3], np.int32)
    np.testing.assert_array_equal(np.asarray(lj.jit(fn)(a, b)), np.asarray(jax.jit(fn)(a, b)))


# --- 4. embedding_bag offsets ------------------------------------------------------


BAG_CASES = [
    ([1, 2], False), ([0, -1], False), ([0, 2, 1], False), ([0, 5], False), ([0], False),
    ([0, 4], False), ([0, 2, 2], False), ([0, 2, 4], True), ([0, 3, 2], True),
    ([1, 2, 4], True), ([0, 2, 5], True), ([0, 2, 3], True), ([0, -1, 4], True), ([0, 2], True),
]


@pytest.mark.parametrize("mode", ["sum", "mean"])
@pytest.mark.parametrize("last", [False, True])
def test_embedding_bag_offsets_like_eager(mode, last):
    """Bad offsets (not starting at 0, decreasing, past the indices) are
    errors, where eager raises or reads out of bounds (a decreasing bag's
    end: it then raises or not by what the memory past the bag holds, so
    eager is not called on them); otherwise the results are eager's,
    including include_last_offset's count for a short last bag."""
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    w = torch.arange(40.0).reshape(10, 4)
    idx = torch.tensor([1, 2, 3, 4])
    torch._dynamo.reset()

    def fn(i, o):
        return F.embedding_bag(i, w, o, mode=mode, include_last_offset=last)

    fast = torch.compile(fn, backend="llvmaccel", dynamic=True)
    with torch.no_grad():
        for offsets, case_last in BAG_CASES:
            if case_last != last:
                continue
            o = torch.tensor(offsets)
            bad = offsets[0] != 0 or offsets[-1] > len(idx) or \
                any(b < a for a, b in zip(offsets, offsets[1:], strict=False))
            if bad:
                with pytest.raises(RuntimeError, match="embedding_bag: offsets"):
                    fast(idx, o)
                continue
            torch.testing.assert_close(fast(idx, o), fn(idx, o), msg=str(offsets))


# --- 5. parse_ir argument types -----------------------------------------------------


@pytest.mark.parametrize("bad", [123, None, 1.5, ["define void @f() { ret void }"]])
def test_parse_ir_rejects_non_text(bad):
    with pytest.raises(TypeError, match="str or bytes"):
        llvmaccel.parse_ir(bad)


def test_parse_ir_takes_bytes_like():
    text = b"define i32 @f(i32 %x) {\n  ret i32 %x\n}\n"
    for src in (text, bytearray(text), memoryview(text)):
        assert llvmaccel.parse_ir(src).function("f").param_types == ("i32",)


# --- 6. load_module of things that are not regular files -------------------------------


def test_load_module_refuses_devices_fifos_and_directories(tmp_path):
    out = _run_isolated(f"""
        import os, llvmaccel
        fifo = {str(tmp_path / 'fifo')!r}
        os.mkfifo(fifo)
        for path in ("/dev/zero", fifo, {str(tmp_path)!r}):
            try:
                llvmaccel.load_module(path)
            except OSError as e:
                print(type(e).__name__, e.errno)
        """, timeout=60)
    assert out.split("\n")[:3] == ["OSError 22", "OSError 22", "IsADirectoryError 21"]


def test_load_module_bounds_the_size(tmp_path, monkeypatch):
    from llvmaccel import ir

    path = tmp_path / "big.ll"
    path.write_text("define void @f() {\n  ret void\n}\n")
    monkeypatch.setattr(ir, "MAX_MODULE_BYTES", 8)
    with pytest.raises(OSError, match="larger than"):
        llvmaccel.load_module(path)
    monkeypatch.setattr(ir, "MAX_MODULE_BYTES", 1 << 20)
    assert llvmaccel.load_module(path).function("f").return_type == "void"


# --- 7. pipeline nesting ----------------------------------------------------------------


def test_deeply_nested_pipeline_is_a_pipeline_error(axpy_module):
    out = _run_isolated("""
        import llvmaccel
        from conftest import AXPY_IR
        m = llvmaccel.parse_ir(AXPY_IR)
        deep = "function(" * 10000 + "instcombine" + ")" * 10000
        for pipeline in (deep, "module(" + deep + ")"):
            try:
                llvmaccel.run_passes(m, pipeline)
            except llvmaccel.PipelineError as e:
                print("PipelineError", e)
        try:
            llvmaccel.jit.compile(m, deep)
        except llvmaccel.PipelineError as e:
            print("PipelineError", e)
        """, timeout=60)
    assert out.count("PipelineError pipeline nests") == 3
    ok = "function(" * 100 + "instcombine" + ")" * 100
    llvmaccel.run_passes(axpy_module, ok)


# --- 8. bitcode errors have no position -------------------------------------------------


def test_truncated_bitcode_has_line_zero(axpy_module):
    bc = axpy_module.to_bitcode()
    for cut in (len(bc) // 2, 64, 4):  # each keeps the bitcode magic
        with pytest.raises(llvmaccel.IRParseError) as err:
            llvmaccel.parse_ir(bc[:cut])
        assert (err.value.line, err.value.column) == (0, 0)
        assert not str(err.value).startswith("line")


# --- 2 and 9. pass parameters through the bindings ----------------------------------------


@pytest.mark.parametrize("params,message", [
    ("distance=4294967295", "distance must be an integer from 1 to 65536"),
    ("distance=0", "distance must be an integer from 1 to 65536"),
    ("distance=99999999999999999999", "distance must be an integer from 1 to 65536"),
    ("distance=8;distance=16", "distance is given twice"),
    ("", "empty parameter"),
    (";;;", "empty parameter"),
    ("writes=1", "writes takes no value"),
])
def test_prefetch_parameters_are_pipeline_errors(gather_module, params, message):
    with pytest.raises(llvmaccel.PipelineError, match=message):
        llvmaccel.run_passes(gather_module, f"accel-prefetch<{params}>")


def test_largest_distance_runs_and_verifies():
    """The largest distance (chain links look 3x further) on the chain
    kernel, in a subprocess: it once crashed the interpreter."""
    chain = os.path.join(HERE, "..", "lit", "accel-prefetch", "large-distance.ll")
    out = _run_isolated(f"""
        import llvmaccel
        m = llvmaccel.load_module({chain!r})
        r = llvmaccel.run_passes(m, "accel-prefetch<distance=65536>", verify_each=True)
        print(len(r.passed()))
        """, timeout=60)
    assert int(out.split()[0]) >= 1


# --- 10. JIT argument conversion --------------------------------------------------------


JIT_IR = """
define void @store8(ptr %p, i8 %v, i1 %flag) {
  %w = select i1 %flag, i8 %v, i8 0
  store i8 %w, ptr %p
  ret void
}
define i8 @load8(ptr readonly %p) {
  %v = load i8, ptr %p
  ret i8 %v
}
define i64 @add64(i64 %a, i64 %b) {
  %s = add i64 %a, %b
  ret i64 %s
}
"""


@pytest.fixture(scope="module")
def jit_kernels():
    return llvmaccel.jit.compile(JIT_IR, "default<O1>")


def test_jit_read_only_array_needs_a_readonly_parameter(jit_kernels):
    buf = np.array([42], np.int8)
    ro = buf.copy()
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        jit_kernels["store8"](ro, 1, True)
    assert ro[0] == 42
    assert jit_kernels["load8"](ro) == 42  # readonly parameter: fine
    jit_kernels["store8"](buf, 7, True)
    assert buf[0] == 7


def test_jit_integer_arguments(jit_kernels):
    buf = np.zeros(1, np.int8)
    store = jit_kernels["store8"]
    with pytest.raises(TypeError, match="got bool"):
        store(buf, True, True)
    with pytest.raises(OverflowError, match="does not fit in i8"):
        store(buf, 200, True)
    with pytest.raises(OverflowError, match="does not fit in i8"):
        store(buf, -129, True)
    with pytest.raises(OverflowError, match="does not fit in i1"):
        store(buf, 1, 2)
    store(buf, -128, np.True_)
    assert buf[0] == -128
    store(buf, np.int64(127), 1)
    assert buf[0] == 127
    add = jit_kernels["add64"]
    assert add(2**62, 2**62 - 1 + 2**62) == -1 + 2**62 * 3 - 2**64
    with pytest.raises(OverflowError):
        add(2**63, 0)
    with pytest.raises(TypeError):
        add(1.0, 2)


# --- narrow dtypes: buffers of the wrong type, defined conversions -------------


def _narrow_graph(dt, out_dt=None, saturate=False):
    from llvmaccel.compiler import compile_graph
    from llvmaccel.graph import Graph

    g = Graph()
    x = g.input("x", (4,), dt)
    g.set_outputs([g.cast(x, out_dt, saturate=saturate) if out_dt else
                   g.binary("add", x, x)])
    return compile_graph(g)


def test_narrow_dtype_buffers_are_checked():
    """An array whose dtype differs from the input's (same width, other
    kind; byte-swapped; a type llvmaccel lacks) is a TypeError: its bits are
    never read as the other type."""
    from llvmaccel.graph import DType

    bf16 = _narrow_graph(DType.bf16)
    with pytest.raises(TypeError, match="bfloat16"):
        bf16(np.ones(4, np.float16))
    with pytest.raises(TypeError, match="uint16"):
        _narrow_graph(DType.u16)(np.ones(4, np.int16))
    with pytest.raises(TypeError, match="not supported"):
        _narrow_graph(DType.f16)(np.ones(4, ">f2"))  # big-endian halves
    with pytest.raises(TypeError, match="expected dtype uint32, got uint64"):
        _narrow_graph(DType.u32)(np.ones(4, np.uint64))
    with pytest.raises(TypeError, match="not supported"):
        _narrow_graph(DType.u64)(np.ones(4, ">u8"))  # big-endian
    ml_dtypes = pytest.importorskip("ml_dtypes")
    with pytest.raises(TypeError, match="not supported"):
        bf16(np.ones(4, ml_dtypes.float8_e4m3fn))
    torch = pytest.importorskip("torch")
    with pytest.raises(TypeError, match="float16"):
        bf16(torch.ones(4, dtype=torch.float16))
    out = bf16(torch.ones(4, dtype=torch.bfloat16))[0]
    assert out.dtype == torch.bfloat16 and out.tolist() == [2.0] * 4


@pytest.mark.parametrize("saturate", [False, True], ids=["wrap", "saturate"])
def test_float_to_int_casts_of_nan_and_inf_are_defined(saturate):
    """NaN, infinities and huge values convert to fixed integers (never LLVM
    poison): 0 for NaN, the range's ends when saturating (XLA's)."""
    from llvmaccel.graph import DType

    x = np.array([np.nan, np.inf, -np.inf, 1e30], np.float32)
    for dt in (DType.u8, DType.i8, DType.i16, DType.u32):
        fn = _narrow_graph(DType.f32, dt, saturate)
        first, again = fn(x)[0], fn(x.copy())[0]
        np.testing.assert_array_equal(first, again)
        assert first[0] == 0
        if saturate:
            info = np.iinfo(dt.numpy)
            assert first.tolist()[1:] == [info.max, info.min, info.max]


def test_unsigned_division_by_zero_raises_in_torch_mode():
    from llvmaccel.compiler import compile_graph
    from llvmaccel.errors import KernelZeroDivisionError
    from llvmaccel.graph import DType, Graph

    g = Graph()
    a, b = g.input("a", (3,), DType.u8), g.input("b", (3,), DType.u8)
    g.set_outputs([g.binary("floordiv", a, b)])
    fn = compile_graph(g)
    assert fn(np.array([9, 8, 255], np.uint8), np.array([2, 3, 16], np.uint8))[0].tolist() \
        == [4, 2, 15]
    with pytest.raises(ZeroDivisionError):
        fn(np.array([9, 8, 7], np.uint8), np.array([2, 0, 1], np.uint8))
    assert issubclass(KernelZeroDivisionError, ZeroDivisionError)


def test_jax_unsupported_dtype_is_a_type_error():
    jax = pytest.importorskip("jax")
    ml_dtypes = pytest.importorskip("ml_dtypes")
    import llvmaccel.jax as lj

    x = jax.numpy.ones(4, ml_dtypes.float8_e4m3fn)
    with pytest.raises(TypeError, match="float8_e4m3fn"):
        lj.jit(lambda v: v + v, fallback=False)(x)
