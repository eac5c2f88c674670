"""JIT compilation and calls with ints, floats, numpy arrays and torch tensors."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import llvmaccel
from conftest import GATHER_IR

SUM_IR = """
define i64 @add(i64 %a, i32 %b) {
  %w = sext i32 %b to i64
  %r = add i64 %a, %w
  ret i64 %r
}
define double @halve(double %x) {
  %r = fmul double %x, 0.5
  ret double %r
}
define void @fill(ptr %p, i64 %n, i8 %v) {
entry:
  call void @llvm.memset.p0.i64(ptr %p, i8 %v, i64 %n, i1 false)
  ret void
}
declare void @llvm.memset.p0.i64(ptr, i8, i64, i1)
"""


@pytest.fixture(scope="module")
def scalars():
    return llvmaccel.jit.compile(SUM_IR)


def test_scalar_calls(scalars):
    assert scalars["add"](40, 2) == 42
    assert scalars["add"](-5, -7) == -12
    assert scalars["halve"](3.0) == 1.5
    assert scalars.function("halve") is scalars["halve"]


def test_argument_checking(scalars):
    with pytest.raises(TypeError, match="takes 2 arguments"):
        scalars["add"](1)
    with pytest.raises(OverflowError, match="does not fit in i32"):
        scalars["add"](1, 1 << 40)
    with pytest.raises(TypeError, match="expected an int"):
        scalars["add"](1.5, 2)
    with pytest.raises(TypeError, match="expected a float"):
        scalars["halve"]("x")
    with pytest.raises(TypeError, match="expected a numpy array"):
        scalars["fill"]([1, 2, 3], 3, 0)
    with pytest.raises(llvmaccel.JITError, match="no function named"):
        scalars["missing"]


def test_numpy_buffers(axpy_module):
    compiled = llvmaccel.jit.compile(axpy_module)
    x = np.arange(1000, dtype=np.float32)
    y = np.ones(1000, dtype=np.float32)
    compiled["axpy"](y, x, 2.0, len(x))
    np.testing.assert_array_equal(y, 2 * np.arange(1000, dtype=np.float32) + 1)


def test_non_contiguous_array_is_refused(axpy_module):
    compiled = llvmaccel.jit.compile(axpy_module)
    x = np.arange(20, dtype=np.float32)[::2]
    y = np.ones(10, dtype=np.float32)
    with pytest.raises(ValueError, match="not C-contiguous"):
        compiled["axpy"](y, x, 2.0, 10)


def test_torch_tensors(axpy_module):
    torch = pytest.importorskip("torch")
    compiled = llvmaccel.jit.compile(axpy_module)
    x = torch.arange(100, dtype=torch.float32)
    y = torch.zeros(100)
    compiled["axpy"](y, x, 3.0, 100)
    torch.testing.assert_close(y, 3 * x)
    with pytest.raises(ValueError, match="not contiguous"):
        compiled["axpy"](torch.zeros(10, 2).t(), x, 1.0, 10)


def test_compile_does_not_change_module(axpy_module):
    before = str(axpy_module)
    llvmaccel.jit.compile(axpy_module, "default<O3>")
    assert str(axpy_module) == before


def test_libm_symbols_resolve():
    ir = """
    declare float @expf(float)
    define float @f(float %x) {
      %r = call float @expf(float %x)
      ret float %r
    }
    """
    assert llvmaccel.jit.compile(ir)["f"](0.0) == 1.0


def test_unresolved_symbol_raises_jit_error():
    ir = """
    declare void @llvmaccel_no_such_function()
    define void @f() {
      call void @llvmaccel_no_such_function()
      ret void
    }
    """
    with pytest.raises(llvmaccel.JITError):
        llvmaccel.jit.compile(ir)["f"]


def test_results_match_with_and_without_accel_passes():
    rng = np.random.default_rng(0)
    n, table = 5000, 1 << 16
    T = rng.standard_normal(table)
    B = rng.integers(0, table, n, dtype=np.int64)
    w = rng.standard_normal(n)
    base = llvmaccel.jit.compile(GATHER_IR, "default<O3>", auto="none")
    accel = llvmaccel.jit.compile(GATHER_IR, "default<O3>", auto="all")
    for count in (0, 1, 3, 17, n):
        assert base["gather"](T, B, w, count) == accel["gather"](T, B, w, count)


def test_calls_from_two_threads(axpy_module):
    compiled = llvmaccel.jit.compile(axpy_module)
    fn = compiled["axpy"]
    n = 1 << 16
    results, errors = {}, []

    def work(k: int) -> None:
        try:
            x = np.full(n, k, dtype=np.float32)
            y = np.zeros(n, dtype=np.float32)
            for _ in range(50):
                fn(y, x, 1.0, n)
            results[k] = y
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(k,)) for k in (1, 2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    np.testing.assert_array_equal(results[1], np.full(n, 50, dtype=np.float32))
    np.testing.assert_array_equal(results[2], np.full(n, 100, dtype=np.float32))


def test_compiles_and_runs_passes_from_two_threads(gather_module):
    errors = []

    def work() -> None:
        try:
            for _ in range(5):
                m = gather_module.clone()
                llvmaccel.run_passes(m, "default<O2>", target="host")
                llvmaccel.jit.compile(m)
        except Exception as exc:  # pragma: no cover
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


def test_codegen_errors_raise_instead_of_exiting():
    # LLVM's default handling of an error diagnostic prints it and exits the
    # process; the JIT reports it as an exception instead.
    compiled = llvmaccel.jit.compile(
        'define void @f() {\n  call void asm "bogus", ""()\n  ret void\n}\n'
    )
    with pytest.raises(llvmaccel.JITError, match="invalid instruction mnemonic 'bogus'"):
        compiled["f"]


def test_unsupported_signature_types_raise_type_error():
    compiled = llvmaccel.jit.compile("define i128 @f() {\n  ret i128 0\n}\n")
    with pytest.raises(TypeError, match="cannot pass LLVM type 'i128'"):
        compiled["f"]


def test_float_to_bfloat_rounds_to_nearest_even_on_every_host():
    # Without AVX512-BF16 the backend calls compiler-rt's __truncsfbf2,
    # which libgcc before GCC 13 lacks: the JIT provides it (a bf16 max
    # reduction failed to link on an AVX2 host before).
    import struct

    ir = ("define i16 @t(i32 %u) {\n  %f = bitcast i32 %u to float\n"
          "  %b = fptrunc float %f to bfloat\n  %i = bitcast bfloat %b to i16\n"
          "  ret i16 %i\n}\n")
    t = llvmaccel.jit.compile(ir)["t"]
    cases = {0x3F800000: 0x3F80,  # 1.0
             0x3F808000: 0x3F80,  # a tie: to even (down)
             0x3F818000: 0x3F82,  # a tie: to even (up)
             0x3F808001: 0x3F81,  # above the tie
             0x7F7FFFFF: 0x7F80,  # the largest float rounds to inf
             0xFF800000: 0xFF80,  # -inf
             0x7FA00000: 0x7FE0,  # a signaling NaN becomes quiet
             0xFFC00001: 0xFFC0}  # a negative NaN keeps its sign
    for u, want in cases.items():
        u_signed = struct.unpack("<i", struct.pack("<I", u))[0]
        got = t(u_signed) & 0xFFFF
        assert got == want, f"{u:#010x}: {got:#06x}, want {want:#06x}"
