"""Vector math (llvmaccel.vecmath): math in vectorized loops calls the C
library's vector functions at the width the vectorizer chose, through LLVM's
own LIBMVEC table where it has the function and through listed variants
where it does not, with the same results as the scalar functions; and the
choice follows the target (AVX2, AVX-512 preferring 256 bits, Zen 4, AArch64)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import llvmaccel
from llvmaccel import compiler, vecmath
from llvmaccel.codegen import generate
from llvmaccel.graph import DType, Graph, Sym
from llvmaccel.target import TargetInfo, host

RNG = np.random.default_rng(0)
HAVE_LIBMVEC = bool(vecmath.variants("exp", 32, 1, host()))
needs_libmvec = pytest.mark.skipif(not HAVE_LIBMVEC, reason="no libmvec on this host")

REFERENCE = {
    "exp": np.exp,
    "log": np.log,
    "tanh": np.tanh,
    "erf": np.vectorize(math.erf, otypes=[np.float64]),
    "expm1": np.expm1,
    "log1p": np.log1p,
    "sin": np.sin,
}
SPECIAL = [0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 1e-30, -1e-30, 88.0, -104.0, 1e30]


@pytest.fixture(autouse=True)
def _cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("LLVMACCEL_CACHE_DIR", str(tmp_path / "cache"))


def _graph(fn: str, dt: DType) -> Graph:
    g = Graph()
    x = g.input("x", (Sym("n"),), dt)
    g.set_outputs([g.unary(fn, x)])
    return g


@needs_libmvec
@pytest.mark.parametrize("dt", [DType.f32, DType.f64])
@pytest.mark.parametrize("fn", sorted(REFERENCE))
def test_vector_variants_match_scalar_math(fn, dt):
    g = _graph(fn, dt)
    c = compiler.compile_graph(g)
    # LLVM's table (exp, log, sin at the widths it has) or our listed
    # variants (tanh, erf, ..., and the widths LLVM's table lacks)
    name = f"llvm.{fn}.{'f32' if dt is DType.f32 else 'f64'}"
    missing = [v for v in vecmath.variants(fn, dt.itemsize * 8, 1, host())
               if not vecmath.covered_by_llvm(name, v.lanes)]
    assert ("vector-function-abi-variant" in c.kernel.ir) == bool(missing) or \
        fn not in ("exp", "log", "sin")
    assert "@_ZGV" in c.optimized_ir  # the vectorized loop calls the variant
    x = RNG.standard_normal(1000) * 4
    if fn in ("log", "log1p"):
        x = np.abs(x) + (0.0 if fn == "log" else -0.5)
    x = np.concatenate([x, SPECIAL]).astype(dt.numpy)
    (got,) = c(x)
    with np.errstate(all="ignore"):
        want = REFERENCE[fn](x.astype(np.float64)).astype(dt.numpy)
    tol = 2e-6 if dt is DType.f32 else 1e-14
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol, equal_nan=True)


@needs_libmvec
def test_binary_variant_atan2():
    g = Graph()
    a = g.input("a", (Sym("n"),), DType.f32)
    b = g.input("b", (Sym("n"),), DType.f32)
    g.set_outputs([g.binary("atan2", a, b)])
    c = compiler.compile_graph(g)
    assert "vv_atan2f(_ZGV" in c.kernel.ir  # two vector arguments
    x, y = (RNG.standard_normal(999).astype(np.float32) for _ in range(2))
    (got,) = c(x, y)
    np.testing.assert_allclose(got, np.arctan2(x, y), rtol=2e-6, atol=2e-6)


def test_disabled_by_environment(monkeypatch):
    caches = (vecmath.load, vecmath.variants, vecmath.covered_by_llvm)
    monkeypatch.setenv("LLVMACCEL_VECMATH", "0")
    for cache in caches:
        cache.cache_clear()
    try:
        ir = generate(_graph("erf", DType.f32)).ir
        assert "vector-function-abi-variant" not in ir and "@erff" in ir
        assert not vecmath.covered_by_llvm("llvm.exp.f32")
    finally:
        monkeypatch.delenv("LLVMACCEL_VECMATH")
        for cache in caches:
            cache.cache_clear()
    assert ("vector-function-abi-variant" in generate(_graph("erf", DType.f32)).ir) == \
        HAVE_LIBMVEC


def test_unknown_widths_and_types_have_no_variant():
    riscv = TargetInfo("riscv64-unknown-linux-gnu", "generic-rv64", frozenset({"v"}), 128, 32)
    assert vecmath.variants("exp", 32, 1, riscv, host=False) == ()  # no glibc variants
    assert vecmath.variants("exp", 16, 1, host()) == ()  # no half-precision variants
    assert vecmath.variants("no_such_function", 32, 1, host()) == ()


# --- the vectorizer's width and the variant it calls, per target -------------------

AVX2 = TargetInfo("x86_64-unknown-linux-gnu", "haswell",
                  frozenset({"sse2", "avx", "avx2", "fma"}), 256, 16)
# Sapphire Rapids' tuning prefers 256-bit vectors; llvmaccel's kernels ask
# for 512 (see llvmaccel.target), a function that does not gets 256.
AVX512_PREFER_256 = TargetInfo("x86_64-unknown-linux-gnu", "sapphirerapids",
                               frozenset({"sse2", "avx", "avx2", "fma", "avx512f"}), 512, 32, 256)
AVX512_TUNING_ONLY = TargetInfo("x86_64-unknown-linux-gnu", "sapphirerapids",
                                frozenset({"sse2", "avx", "avx2", "fma", "avx512f"}), 256, 32)
ZEN4 = TargetInfo("x86_64-unknown-linux-gnu", "znver4",
                  frozenset({"sse2", "avx", "avx2", "fma", "avx512f"}), 512, 32)
NEOVERSE = TargetInfo("aarch64-unknown-linux-gnu", "neoverse-n1", frozenset({"neon"}), 128, 32)


@pytest.mark.parametrize("target,call", [
    (AVX2, "_ZGVdN8v_tanhf"),
    (AVX512_PREFER_256, "_ZGVeN16v_tanhf"),  # AVX-512 with 256-bit tuning: the kernel asks for 512
    (AVX512_TUNING_ONLY, "_ZGVdN8v_tanhf"),  # a function that asks for nothing gets the tuning's
    (ZEN4, "_ZGVeN16v_tanhf"),
    (NEOVERSE, "_ZGVnN4v_tanhf"),
])
def test_transcendental_loop_calls_the_variant_of_the_chosen_width(target, call):
    """The kernel lists every variant the target can run; the loop vectorizer,
    tuned for the target's CPU, picks its width and calls that variant."""
    ir = generate(_graph("tanh", DType.f32), target=target).ir
    assert "vector-function-abi-variant" in ir
    attrs = f'"target-cpu"="{target.cpu}"'
    assert ('"prefer-vector-width"="512"' in ir) == (target is AVX512_PREFER_256)
    ir = f'target triple = "{target.triple}"\n' + ir.replace(" {\nentry:", f" {attrs} {{\nentry:")
    module = llvmaccel.parse_ir(ir)
    llvmaccel.run_passes(module, "default<O3>", auto="none")
    text = str(module)
    assert f"call <{call.split('N')[1].split('v')[0]} x float> @{call}(" in text
    assert "call float @tanhf" not in text.split("vector.body")[1].split("middle.block")[0]


@needs_libmvec
def test_widths_llvms_table_lacks_are_listed():
    """LLVM's x86 LIBMVEC table stops at 8 floats: on a host whose tuning
    uses 512-bit vectors, exp gets glibc's 16-lane variant listed and the
    vectorized loop calls it (not the 8-lane one at half the width)."""
    t = host()
    if t.arch != "x86_64" or "avx512f" not in t.features or t.vector_bits < 512:
        pytest.skip(f"{t.cpu}: the vectorizer uses {t.vector_bits}-bit vectors here")
    assert vecmath.covered_by_llvm("llvm.exp.f32", 8)
    assert not vecmath.covered_by_llvm("llvm.exp.f32", 16)
    c = compiler.compile_graph(_graph("exp", DType.f32))
    assert '_ZGVeN16v_llvm.exp.f32(_ZGVeN16v_expf)"' in c.kernel.ir
    assert "_ZGVdN8v_expf" not in c.kernel.ir  # LLVM's own table names it
    assert "call <16 x float> @_ZGVeN16v_expf(" in c.optimized_ir


@needs_libmvec
def test_the_width_survives_the_parallel_entry():
    """A graph large enough for threads has an entry that picks the serial
    or the SPMD kernel; the serial kernel is inlined into it, so the entry
    asks for the same vector width, and the inlined loop calls glibc's
    variant at that width (not the tuning's narrower one)."""
    t = host()
    if t.arch != "x86_64" or t.vector_bits <= t.tuning_vector_bits:
        pytest.skip(f"{t.cpu}: the tuning already uses {t.vector_bits}-bit vectors")
    g = Graph()
    g.set_outputs([g.unary("erf", g.input("x", (512, 1024), DType.f32))])
    c = compiler.compile_graph(g)
    assert "@llvmaccel_main.spmd" in c.kernel.ir
    entry = c.optimized_ir.split("define i32 @llvmaccel_main(")[1].split("\n}\n")[0]
    assert "call <16 x float> @_ZGVeN16v_erff(" in entry
    assert "_ZGVdN8v_erff" not in entry
    x = RNG.standard_normal((512, 1024)).astype(np.float32)
    (y,) = c(x)
    np.testing.assert_allclose(y, np.vectorize(math.erf)(x.astype(np.float64)), rtol=2e-6,
                               atol=1e-7)


EXPF_LOOP = """
define void @vexp(ptr noalias %y, ptr noalias readonly %x, i64 %n) {
entry:
  %empty = icmp eq i64 %n, 0
  br i1 %empty, label %exit, label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %loop ]
  %px = getelementptr inbounds float, ptr %x, i64 %i
  %v = load float, ptr %px
  %e = call float @llvm.exp.f32(float %v)
  %py = getelementptr inbounds float, ptr %y, i64 %i
  store float %e, ptr %py
  %i.next = add nuw i64 %i, 1
  %done = icmp eq i64 %i.next, %n
  br i1 %done, label %exit, label %loop
exit:
  ret void
}
declare float @llvm.exp.f32(float)
"""


@needs_libmvec
def test_vector_library_option_uses_llvms_table():
    """vector_library="libmvec" is clang's -fveclib=libmvec for the pipeline:
    the vectorized loop calls glibc's variant of the width it chose, and the
    JIT-compiled code gives libm's results."""
    module = llvmaccel.parse_ir(EXPF_LOOP)
    llvmaccel.run_passes(module, "default<O3>", target="host", vector_library="libmvec")
    assert "@_ZGV" in str(module)
    plain = llvmaccel.parse_ir(EXPF_LOOP)
    llvmaccel.run_passes(plain, "default<O3>", target="host")
    assert "@_ZGV" not in str(plain)
    compiled = llvmaccel.jit.compile(EXPF_LOOP, vector_library="libmvec")
    x = np.linspace(-20, 20, 1001, dtype=np.float32)
    y = np.empty_like(x)
    compiled["vexp"](y, x, len(x))
    np.testing.assert_allclose(y, np.exp(x), rtol=4e-7)


def test_unknown_vector_library_is_an_error():
    with pytest.raises(llvmaccel.PipelineError, match="unknown vector library 'svml'"):
        llvmaccel.run_passes(llvmaccel.parse_ir(EXPF_LOOP), "default<O2>",
                             vector_library="svml")


def test_host_target_comes_from_llvm():
    h = host()
    assert h.cpu == llvmaccel.compiler._host_cpu()
    assert h.vector_bits in (128, 256, 512) and h.vector_registers >= 8
    assert h.arch in h.triple
    assert h.tuning_vector_bits <= h.vector_bits
    if h.arch == "x86_64":
        assert "sse2" in h.features
        # AVX-512 gives llvmaccel's kernels 512-bit vectors whatever the tuning.
        assert h.vector_bits == (512 if "avx512f" in h.features else h.tuning_vector_bits)
        wide = '"prefer-vector-width"="512"' in generate(_graph("tanh", DType.f32)).ir
        assert wide == (h.vector_bits > h.tuning_vector_bits)
