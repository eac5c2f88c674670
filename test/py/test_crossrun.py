"""Generated kernels compiled for other CPUs and run there (llvmaccel.crossrun):
AArch64 under qemu-user, x86-64 CPUs other than the host natively. Every
kind of loop nest gives what this machine's JIT gives on the same inputs."""

from __future__ import annotations

import numpy as np
import pytest

from llvmaccel import compiler, crossrun
from llvmaccel.errors import KernelIndexError, PipelineError
from llvmaccel.graph import DType, Graph, Sym
from llvmaccel.target import host, named

RNG = np.random.default_rng(11)

needs_aarch64 = pytest.mark.skipif(
    bool(crossrun.available("aarch64")),
    reason=f"aarch64: {crossrun.available('aarch64')} (scripts/setup.sh --cross)")

# (architecture, CPU): SVE and bf16 dot products; NEON alone; AVX2 and SSE2
# on x86-64 (run natively: this host has at least AVX2, or they are skipped).
TARGETS = [
    pytest.param("aarch64", "neoverse-v1", marks=needs_aarch64, id="neoverse-v1"),
    pytest.param("aarch64", "neoverse-n1", marks=needs_aarch64, id="neoverse-n1"),
    pytest.param("x86_64", "haswell", id="haswell", marks=pytest.mark.skipif(
        host().arch != "x86_64" or "avx2" not in host().features, reason="runs natively")),
    pytest.param("x86_64", "x86-64", id="x86-64", marks=pytest.mark.skipif(
        host().arch != "x86_64", reason="runs natively")),
]


def _f(shape, dt=np.float32):
    return RNG.standard_normal(shape).astype(dt)


def _math():
    g = Graph()
    x = g.input("x", (3, 1003), DType.f32)
    d = g.input("d", (517,), DType.f64)
    g.set_outputs([g.unary("tanh", x), g.unary("exp", x), g.unary("erf", x),
                   g.unary("log1p", g.unary("abs", x)), g.unary("tanh", d), g.unary("exp", d)])
    return g, (_f((3, 1003)), _f((517,), np.float64))


def _rows():
    g = Graph()
    x = g.input("x", (Sym("m"), 301), DType.f32)
    mx = g.reduce("max", x, (1,), keepdim=True)
    e = g.unary("exp", g.binary("sub", x, mx))
    soft = g.binary("div", e, g.reduce("sum", e, (1,), keepdim=True))
    g.set_outputs([soft, g.reduce("sum", x, (0,)), g.reduce("argmax", x, (1,))])
    return g, (_f((37, 301)),)


def _matmul(dt: DType, tb: bool):
    g = Graph()
    npdt = np.float32 if dt is DType.f32 else np.float64
    a = g.input("a", (Sym("m"), 129), dt)
    b = g.input("b", (67, 129) if tb else (129, 67), dt)
    g.set_outputs([g.matmul(a, g.permute(b, (1, 0)) if tb else b)])
    return g, (_f((45, 129), npdt), _f((67, 129) if tb else (129, 67), npdt))


def _batched():
    g = Graph()
    a, b = g.input("a", (3, 17, 40), DType.f32), g.input("b", (3, 40, 9), DType.f32)
    g.set_outputs([g.matmul(a, b), g.matmul(g.input("v", (1, 40), DType.f32),
                                            g.input("w", (40, 300), DType.f32))])
    return g, (_f((3, 17, 40)), _f((3, 40, 9)), _f((1, 40)), _f((40, 300)))


def _conv():
    g = Graph()
    x = g.input("x", (2, 8, 13, 11), DType.f32)
    w, dw = g.input("w", (16, 8, 3, 3), DType.f32), g.input("dw", (8, 1, 3, 3), DType.f32)
    y = g.conv(x, w, None, (1, 1), (1, 1), (1, 1))
    z = g.conv(x, dw, None, (2, 2), (1, 1), (1, 1), groups=8)
    g.set_outputs([y, z, g.pool(y, "max", (2, 2), (2, 2), (0, 0))])
    return g, (_f((2, 8, 13, 11)), _f((16, 8, 3, 3)), _f((8, 1, 3, 3)))


def _gathers():
    g = Graph()
    t = g.input("t", (100, 24), DType.f32)
    i = g.input("i", (Sym("n"),), DType.i64)
    o = g.input("o", (Sym("b"),), DType.i64)
    g.set_outputs([g.embedding_bag(t, i, o, "sum"), g.take(t, i, 0, "check")])
    idx = RNG.integers(0, 100, 40)
    return g, (_f((100, 24)), idx, np.array([0, 10, 10, 25]))


def _bf16():
    import ml_dtypes
    g = Graph()
    a, b = g.input("a", (37, 67), DType.bf16), g.input("b", (45, 67), DType.bf16)
    g.set_outputs([g.matmul(a, g.permute(b, (1, 0)))])
    return g, (_f((37, 67)).astype(ml_dtypes.bfloat16), _f((45, 67)).astype(ml_dtypes.bfloat16))


GRAPHS = {
    "math": _math, "rows": _rows, "matmul_f32": lambda: _matmul(DType.f32, False),
    "matmul_f64_bT": lambda: _matmul(DType.f64, True), "batched": _batched, "conv": _conv,
    "gathers": _gathers, "bf16": _bf16,
}


@pytest.mark.parametrize("arch,cpu", TARGETS)
@pytest.mark.parametrize("name", list(GRAPHS))
def test_the_target_computes_what_the_host_computes(arch, cpu, name):
    """The kernel generated for the target (its vector width and tiles, its C
    library's math, its bf16 dot product) gives this host's JIT results,
    within rounding: the order of partial sums follows the vector width."""
    graph, inputs = GRAPHS[name]()
    program = crossrun.compile_for(graph, arch, cpu)
    got = program.run(*inputs)
    want = compiler.compile_graph(graph)(*inputs)
    assert len(got) == len(want)
    for k, (x, y) in enumerate(zip(got, want, strict=True)):
        assert x.shape == y.shape and x.dtype == y.dtype, (k, x.shape, y.shape)
        if x.dtype.kind in "iub":
            np.testing.assert_array_equal(x, y, err_msg=f"output {k}")
        else:
            tol = 2e-2 if name == "bf16" else 1e-9 if x.dtype == np.float64 else 2e-5
            np.testing.assert_allclose(x.astype(np.float64), y.astype(np.float64), rtol=tol,
                                       atol=tol, err_msg=f"output {k}")


@needs_aarch64
def test_kernels_are_generated_from_the_targets_own_facts():
    """LLVM's facts for the named CPU size the kernel: 128-bit NEON vectors
    (4 floats) on Neoverse, bf16 dot products where the CPU has them; the C
    library decides the math (Debian 12's AArch64 glibc, 2.36, has no
    libmvec: scalar calls then)."""
    v1 = crossrun.compile_for(_bf16()[0], "aarch64", "neoverse-v1")
    assert v1.target.vector_bits == 128 and {"sve", "bf16"} <= v1.target.features
    assert "llvm.aarch64.neon.bfdot" in v1.kernel.ir
    n1 = crossrun.compile_for(_bf16()[0], "aarch64", "neoverse-n1")
    assert "bf16" not in n1.target.features and "bfdot" not in n1.kernel.ir
    m = crossrun.compile_for(_matmul(DType.f32, False)[0], "aarch64", "neoverse-n1")
    assert "<4 x float>" in m.kernel.ir and "<8 x float>" not in m.kernel.ir
    math = crossrun.compile_for(_math()[0], "aarch64", "neoverse-n1")
    variants = crossrun.vector_math("aarch64")
    assert ("_ZGVnN4v_tanhf" in math.kernel.ir) == ("_ZGVnN4v_tanhf" in variants)


@needs_aarch64
@pytest.mark.parametrize("cpu", ["neoverse-n1", "neoverse-v2"])
def test_aarch64_tiles_take_a_from_lanes_of_a_vector(cpu):
    """On AArch64 a tile loads W elements of A's row at a time and multiplies
    by its lanes (FMLA by element), the last k % W k-steps by broadcasts:
    every depth around the lane count and the panel depth, f32 and f64, A
    read along k or transposed (broadcasts only), against this host's JIT."""
    from llvmaccel.codegen import _matmul_tiling
    target = named("aarch64-unknown-linux-gnu", cpu)
    for dt, npdt in ((DType.f32, np.float32), (DType.f64, np.float64)):
        vw, _, kc = _matmul_tiling(dt, 2, target)
        for ta in (False, True):
            g = Graph()
            a = g.input("a", (Sym("k"), 21) if ta else (21, Sym("k")), dt)
            b = g.input("b", (Sym("k"), 3 * vw + 1), dt)
            g.set_outputs([g.matmul(g.permute(a, (1, 0)) if ta else a, b)])
            program = crossrun.compile_for(g, "aarch64", cpu)
            lane = f"<{vw} x i32> <{', '.join(['i32 1'] * vw)}>"
            assert (lane in program.kernel.ir) != ta
            for k in (1, vw - 1, vw, vw + 1, 2 * vw + 3, kc - 1, kc + vw + 1):
                x = _f((k, 21) if ta else (21, k), npdt)
                y = _f((k, 3 * vw + 1), npdt)
                (got,) = program.run(x, y)
                (want,) = compiler.compile_graph(g)(x, y)
                np.testing.assert_allclose(got, want, rtol=1e-5 if dt is DType.f32 else 1e-12,
                                           atol=1e-5 if dt is DType.f32 else 1e-12,
                                           err_msg=f"{dt} ta={ta} k={k}")


def test_named_targets_and_their_errors():
    """llvmaccel.target.named asks LLVM: an unknown triple or CPU is a
    PipelineError, not a guess."""
    hsw = named("x86_64-unknown-linux-gnu", "haswell")
    assert (hsw.vector_bits, hsw.vector_registers) == (256, 16) and "avx2" in hsw.features
    assert "avx512f" not in hsw.features
    spr = named("x86_64-unknown-linux-gnu", "sapphirerapids")
    assert (spr.tuning_vector_bits, spr.vector_bits) == (256, 512)  # tuning prefers 256
    assert named("x86_64-unknown-linux-gnu", "haswell", "-avx2").features >= {"avx"}
    assert "avx2" not in named("x86_64-unknown-linux-gnu", "haswell", "-avx2").features
    with pytest.raises(PipelineError, match="not a CPU of aarch64"):
        named("aarch64-unknown-linux-gnu", "znver4")
    with pytest.raises(PipelineError, match="unknown target triple"):
        named("nonesuch-unknown-linux-gnu", "x")
    with pytest.raises(ValueError, match="unknown architecture"):
        crossrun.compile_for(_math()[0], "sparc")


@pytest.mark.parametrize("arch,cpu", TARGETS[1:3])
def test_index_checks_and_bad_inputs_raise_as_on_the_host(arch, cpu):
    """An index out of range is the kernel's own IndexError, from the
    target's program as from the JIT; inputs that do not fit the graph are
    refused before anything runs."""
    graph, (t, idx, off) = _gathers()
    program = crossrun.compile_for(graph, arch, cpu)
    bad = idx.copy()
    bad[7] = 100
    with pytest.raises(KernelIndexError):
        program.run(t, bad, off)
    with pytest.raises(TypeError, match="expected dtype"):
        program.run(t.astype(np.float64), idx, off)
    with pytest.raises(TypeError, match="expected 3 inputs"):
        program.run(t, idx)


def test_a_target_without_its_tools_says_what_is_missing(monkeypatch):
    """Without qemu or the cross compiler, compile_for names what to install."""
    monkeypatch.setattr(crossrun.shutil, "which", lambda name: None)
    assert "missing" in crossrun.available("aarch64")
    with pytest.raises(RuntimeError, match="scripts/setup.sh --cross"):
        crossrun.compile_for(_math()[0], "aarch64", "neoverse-n1")


@pytest.mark.parametrize("arch,cpu", [TARGETS[1], TARGETS[3]])
def test_inputs_end_at_an_unmapped_page(arch, cpu, monkeypatch):
    """Each input ends where an unmapped page starts: handed a first input
    one row short (the shape check taken away), the kernel reads past its
    end and the program faults, reported with the signal (this process
    lives on)."""
    graph, (x, d) = _math()
    program = crossrun.compile_for(graph, arch, cpu)
    assert [o.shape for o in program.run(x, d)][0] == (3, 1003)
    monkeypatch.setattr(crossrun, "bind_inputs", lambda *args: {})
    with pytest.raises(RuntimeError, match="ended with signal 11"):
        program.run(x[:2], d)


def test_the_hosts_own_architecture_needs_no_emulator(monkeypatch):
    """Programs for this machine's architecture are built by its own C
    compiler and run directly; others by the cross compiler under qemu-user
    (on an AArch64 host, x86-64 programs too)."""
    import os
    real = os.uname()

    def uname(machine):
        return lambda: os.uname_result((real.sysname, real.nodename, real.release,
                                        real.version, machine))

    monkeypatch.setattr(crossrun.os, "uname", uname("aarch64"))
    assert crossrun._tools("aarch64") == ("cc", ())
    assert crossrun._tools("x86_64") == ("x86_64-linux-gnu-gcc", ("qemu-x86_64",))
    monkeypatch.setattr(crossrun.os, "uname", uname("x86_64"))
    assert crossrun._tools("x86_64") == ("cc", ())
    assert crossrun._tools("aarch64")[1][0] == "qemu-aarch64"


@needs_aarch64
def test_a_torch_models_kernels_compute_the_same_on_aarch64(monkeypatch):
    """Every kernel torch.compile(backend="llvmaccel") makes of a small CNN
    and a transformer encoder layer, run on a Neoverse N1 under qemu with
    the arguments the model gave it here: the outputs it gave here."""
    torch = pytest.importorskip("torch")
    import llvmaccel.torch  # noqa: F401
    calls: list[tuple] = []
    real_call = compiler.CompiledGraph.__call__
    real_tensors = compiler.CompiledGraph.call_tensors

    def array(x):
        return x.detach().numpy().copy() if isinstance(x, torch.Tensor) else np.array(x)

    def record(self, inputs, out, symbols=None):
        calls.append((self.graph, [array(x) for x in inputs], [array(o) for o in out],
                      symbols))
        return out

    # The two ways in: a call, and the torch.compile runner's.
    monkeypatch.setattr(compiler.CompiledGraph, "__call__", lambda self, *inputs, symbols=None:
                        record(self, inputs, real_call(self, *inputs, symbols=symbols), symbols))
    monkeypatch.setattr(compiler.CompiledGraph, "call_tensors", lambda self, tensors:
                        record(self, tensors, real_tensors(self, tensors)))
    torch.manual_seed(0)
    cnn = torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.BatchNorm2d(8), torch.nn.ReLU(),
        torch.nn.MaxPool2d(2), torch.nn.Conv2d(8, 8, 3, groups=8, padding=1),
        torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(8, 5)).eval()
    layer = torch.nn.TransformerEncoderLayer(32, 4, 64, batch_first=True).eval()
    torch._dynamo.reset()
    with torch.no_grad():
        torch.compile(cnn, backend="llvmaccel")(torch.randn(2, 3, 12, 12))
        torch.compile(layer, backend="llvmaccel")(torch.randn(2, 7, 32))
    assert len(calls) >= 2
    for graph, inputs, outputs, symbols in calls:
        got = crossrun.compile_for(graph, "aarch64", "neoverse-n1").run(*inputs, symbols=symbols)
        for k, (x, y) in enumerate(zip(got, outputs, strict=True)):
            # Sums in another order (other vector widths): rounding errors
            # of the order of the largest terms, not of each element.
            scale = float(np.abs(y).max()) if y.size else 1.0
            np.testing.assert_allclose(x, y, rtol=1e-4, atol=2e-6 * max(scale, 1.0),
                                       err_msg=f"output {k} of {graph.sources[:3]}")
