"""complex64 (and complex128) tensors: the graph IR and code generator (values
carried as ``{ float, float }`` structs, sums as aggregate phis), the PyTorch
and JAX frontends against eager / jax.jit, and LLaMA's rotary position
embedding in both."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

from llvmaccel import compiler
from llvmaccel.graph import DType, Graph, GraphError, Sym


@pytest.fixture(autouse=True)
def _cache_dir(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("LLVMACCEL_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "cache"))


RNG = np.random.default_rng(0)


def _crandn(*shape: int, dtype=np.complex64) -> np.ndarray:
    return (RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)).astype(dtype)


# ---------------------------------------------------------------------------
# Graph IR and code generator
# ---------------------------------------------------------------------------


def _complex_sum_graph(shape, axes, dtype=DType.c64) -> Graph:
    g = Graph()
    x = g.input("x", shape, dtype)
    g.set_outputs([g.reduce("sum", x, axes)])
    return g


def test_complex_sum_carries_an_aggregate_phi():
    """The shape accel-phi-decompose targets: the accumulator of a complex
    sum is a ``phi { float, float }`` in the reduced loop, built and taken
    apart with insertvalue / extractvalue, never an alloca."""
    g = _complex_sum_graph((Sym("n"),), (0,))
    compiled = compiler.compile_graph(g, auto="none")
    ir = compiled.kernel.ir
    assert re.search(r"= phi \{ float, float \} \[ zeroinitializer, %[\w.]+ \], "
                     r"\[ %z\d+, %[\w.]+ \]", ir), ir
    assert "insertvalue { float, float }" in ir and "extractvalue { float, float }" in ir
    assert "alloca { float, float }" not in ir
    # Correct after default<O3> without any llvmaccel pass.
    for n in (0, 1, 7, 1000):
        x = _crandn(n)
        (got,) = compiled(x)
        np.testing.assert_allclose(got, x.astype(np.complex128).sum(), rtol=1e-5, atol=1e-5)


def test_accel_phi_decompose_splits_the_complex_sum():
    """In the default pipeline accel-phi-decompose splits the generated
    ``phi { float, float }`` into a float phi per part: none is left after
    default<O3>, and the sum is the same."""
    g = _complex_sum_graph((Sym("n"),), (0,))
    compiled = compiler.compile_graph(g, auto="accel-phi-decompose")
    assert "phi { float, float }" in compiled.kernel.ir
    assert "phi { float, float }" not in compiled.optimized_ir
    assert any(r.pass_name == "accel-phi-decompose" and r.kind == "passed"
               and "{ float, float }" in r.message for r in compiled.report.remarks)
    for n in (0, 3, 1001):
        x = _crandn(n)
        np.testing.assert_allclose(compiled(x)[0], x.astype(np.complex128).sum(), rtol=1e-5,
                                   atol=1e-5)


def test_auto_takes_a_list_of_pass_names():
    """``auto`` as a list (as ``torch.compile(options={"auto": [...]})``
    passes it) is the same selection as the names joined by commas: one
    cached compilation, and the listed pass runs. Anything else is a
    TypeError, not a failure inside the cache."""
    g = _complex_sum_graph((Sym("n"),), (0,))
    listed = compiler.compile_graph(g, auto=["accel-phi-decompose"])
    assert listed is compiler.compile_graph(g, auto="accel-phi-decompose")
    assert "phi { float, float }" not in listed.optimized_ir
    both = compiler.compile_graph(g, auto=("accel-prefetch", "accel-phi-decompose"))
    assert "phi { float, float }" not in both.optimized_ir
    assert "phi { float, float }" in compiler.compile_graph(g, auto=[]).optimized_ir
    with pytest.raises(TypeError, match="auto must be"):
        compiler.compile_graph(g, auto={"accel-prefetch": 1})


def test_complex_dot_is_one_loop_with_an_aggregate_phi():
    """vdot(a, b): the product is fused into the sum (no temporary), one loop
    whose accumulator is a ``phi { float, float }``: the complex dot product
    of the accel-phi-decompose issue."""
    g = Graph()
    a = g.input("a", (Sym("n"),), DType.c64)
    b = g.input("b", (Sym("n"),), DType.c64)
    g.set_outputs([g.reduce("sum", g.binary("mul", g.unary("conj", a), b), (0,))])
    compiled = compiler.compile_graph(g, auto="none")
    assert not compiled.kernel.temps
    assert len(re.findall(r"= phi \{ float, float \}", compiled.kernel.ir)) == 1
    av, bv = _crandn(300), _crandn(300)
    np.testing.assert_allclose(compiled(av, bv)[0], np.vdot(av, bv), rtol=1e-5)


def test_complex_sum_phis_chain_through_nested_loops():
    """A sum over two axes carries the struct through both loop headers."""
    g = _complex_sum_graph((3, Sym("m"), 5), (1, 2))
    compiled = compiler.compile_graph(g, auto="none")
    assert len(re.findall(r"= phi \{ float, float \}", compiled.kernel.ir)) == 2
    x = _crandn(3, 4, 5)
    (got,) = compiled(x)
    np.testing.assert_allclose(got, x.sum((1, 2)), rtol=1e-5, atol=1e-5)


def test_complex128_sum_and_leading_axes():
    g = Graph()
    x = g.input("x", (4, 6), DType.c128)
    g.set_outputs([g.reduce("sum", x, (1,)), g.reduce("sum", x, (0,)),
                   g.reduce("prod", x, (1,))])
    compiled = compiler.compile_graph(g, auto="none")
    assert "phi { double, double }" in compiled.kernel.ir
    xv = _crandn(4, 6, dtype=np.complex128)
    got = compiled(xv)
    np.testing.assert_allclose(got[0], xv.sum(1), rtol=1e-12)
    np.testing.assert_allclose(got[1], xv.sum(0), rtol=1e-12)
    np.testing.assert_allclose(got[2], xv.prod(1), rtol=1e-12)


def test_complex_elementwise_graph_against_numpy():
    """Every complex op of the graph IR, with broadcasting and promotion,
    against numpy (division: numpy's algorithm, so nearly bit for bit)."""
    g = Graph()
    a = g.input("a", (4, 5), DType.c64)
    b = g.input("b", (5,), DType.c64)
    r = g.input("r", (4, 5), DType.f32)
    t = g.input("t", (4, 1), DType.f32)
    outs = [g.binary("add", a, b), g.binary("sub", a, r), g.binary("mul", a, b),
            g.binary("div", a, b), g.unary("neg", a), g.unary("conj", a),
            g.unary("abs", a), g.unary("real", a), g.unary("imag", a), g.unary("exp", a),
            g.unary("angle", a), g.complex(r, t), g.polar(r, t),
            g.binary("mul", a, g.scalar(2j, DType.c64)), g.unary("square", a),
            g.unary("reciprocal", a), g.binary("eq", a, a), g.binary("ne", a, b),
            g.cast(a, DType.f32), g.cast(r, DType.c64), g.cast(a, DType.c128),
            g.view_as_real(g.binary("mul", a, b)), g.view_as_complex(g.view_as_real(a))]
    g.set_outputs(outs)
    av, bv = _crandn(4, 5), _crandn(5)
    rv = RNG.standard_normal((4, 5)).astype(np.float32)
    tv = RNG.standard_normal((4, 1)).astype(np.float32)
    got = compiler.compile_graph(g, auto="none")(av, bv, rv, tv)
    with np.errstate(all="ignore"):
        want = [av + bv, av - rv, av * bv, av / bv, -av, np.conj(av), np.abs(av), av.real,
                av.imag, np.exp(av), np.angle(av), rv + 1j * tv, rv * np.exp(1j * tv),
                av * 2j, av * av, 1 / av, av == av, av != bv, av.real, rv.astype(np.complex64),
                av.astype(np.complex128), np.stack([(av * bv).real, (av * bv).imag], -1), av]
    assert len(got) == len(want)
    for k, (x, y) in enumerate(zip(got, want, strict=True)):
        assert x.dtype == np.asarray(y).dtype, (k, x.dtype, np.asarray(y).dtype)
        np.testing.assert_allclose(x, y, rtol=2e-6, atol=2e-6, err_msg=f"output {k}")


def test_complex_division_special_cases():
    """Division by zero and by operands with a large part: c10::complex's
    (numpy's) algorithm, so the same infinities, NaNs and no overflow."""
    g = Graph()
    a = g.input("a", (6,), DType.c64)
    b = g.input("b", (6,), DType.c64)
    g.set_outputs([g.binary("div", a, b)])
    av = np.array([1 + 1j, 1 - 2j, 0, 3e30 + 1e30j, 2 + 0j, 1j], np.complex64)
    bv = np.array([0, 0, 0, 1e30 + 3e30j, 1e-30 + 4e-30j, -2 + 1e-7j], np.complex64)
    (got,) = compiler.compile_graph(g, auto="none")(av, bv)
    with np.errstate(all="ignore"):
        want = av / bv
    np.testing.assert_allclose(got, want, rtol=1e-6, equal_nan=True)


def test_stack_of_real_and_imag_is_a_view():
    """stack([z.real, z.imag], -1) is view_as_real(z): no concat node, and
    the kernel stores each complex value as its pair."""
    g = Graph()
    z = g.input("z", (3, 4), DType.c64)
    w = g.binary("mul", z, z)
    parts = [g.reshape(g.unary(f, w), (3, 4, 1)) for f in ("real", "imag")]
    out = g.concat(parts, 2)
    assert out.op == "view_as_real"
    # Also when each part has its own copy of the product (no CSE, as in
    # PyTorch's ``stack([(a * b).real, (a * b).imag], -1)``), not otherwise.
    twice = [g.reshape(g.unary(f, g.binary("mul", z, z)), (3, 4, 1)) for f in ("real", "imag")]
    assert g.concat(twice, 2).op == "view_as_real"
    other = [g.reshape(g.unary(f, g.binary("mul", z, y)), (3, 4, 1))
             for f, y in (("real", z), ("imag", g.unary("conj", z)))]
    assert g.concat(other, 2).op == "concat"
    g.set_outputs([g.reshape(out, (3, 8))])
    compiled = compiler.compile_graph(g, auto="none")
    assert "select i1" not in compiled.kernel.ir
    zv = _crandn(3, 4)
    (got,) = compiled(zv)
    np.testing.assert_allclose(got, (zv * zv).view(np.float32).reshape(3, 8), rtol=1e-6)


def test_complex_graph_errors():
    g = Graph()
    z = g.input("z", (3,), DType.c64)
    x = g.input("x", (3, 3), DType.f32)
    with pytest.raises(GraphError, match="complex"):
        g.binary("maximum", z, z)
    with pytest.raises(GraphError, match="unordered"):
        g.binary("lt", z, z)
    with pytest.raises(GraphError, match="not supported"):
        g.unary("tanh", z)
    with pytest.raises(GraphError, match="not supported"):
        g.reduce("max", z, (0,))
    with pytest.raises(GraphError, match="last dim is 2"):
        g.view_as_complex(x)
    with pytest.raises(GraphError, match="complex operand"):
        g.unary("real", x)
    assert g.unary("conj", x) is x


def test_complex_input_at_guard_page():
    """Complex loads (two parts) and pair stores stay inside their buffers."""
    from guard import guarded_array

    g = Graph()
    x = g.input("x", (5, 2), DType.f32)
    z = g.input("z", (5,), DType.c64)
    y = g.binary("mul", g.view_as_complex(x), z)
    g.set_outputs([g.view_as_real(y), g.reduce("sum", y, (0,))])
    xv = RNG.standard_normal((5, 2)).astype(np.float32)
    zv = _crandn(5)
    got = compiler.compile_graph(g)(guarded_array(xv.reshape(-1)).reshape(5, 2),
                                    guarded_array(zv))
    want = xv.view(np.complex64)[:, 0] * zv
    np.testing.assert_allclose(got[0], want.view(np.float32).reshape(5, 2), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(got[1], want.sum(), rtol=1e-5)


# ---------------------------------------------------------------------------
# PyTorch
# ---------------------------------------------------------------------------

torch = pytest.importorskip("torch")
import llvmaccel.torch as lt  # noqa: E402


def _tc(*shape: int) -> torch.Tensor:
    return torch.from_numpy(_crandn(*shape))


def _compile(fn, **kw):
    torch._dynamo.reset()
    return torch.compile(fn, backend="llvmaccel", **kw)


def _check_torch(fn, *args, rtol=2e-5, atol=2e-5, **kw):
    with torch.no_grad():
        expected = fn(*args)
        got = _compile(fn, **kw)(*args)
        ex = lt.explain(fn, *args)
    assert ex.fully_compiled, str(ex)
    torch.testing.assert_close(got, expected, rtol=rtol, atol=atol)


A, B = _tc(4, 6), _tc(4, 6)
R, T = torch.randn(4, 6), torch.randn(4, 6)
P = torch.randn(4, 6, 2)

TORCH_OPS = {
    "add_sub": lambda a, b: (a + b, a - b, a + 2.5, 1j - a),
    "mul": lambda a, b: (a * b, a * 2j, a * R),
    "div": lambda a, b: (a / b, a / 4, R / b),
    "neg_conj": lambda a, b: (-a, a.conj(), torch.conj_physical(b)),
    "abs_angle": lambda a, b: (a.abs(), torch.angle(b)),
    "real_imag": lambda a, b: (a.real, a.imag, (a * b).real + (a * b).imag),
    "exp": lambda a, b: torch.exp(a * 0.5),
    "view_as": lambda a, b: (torch.view_as_real(a * b), torch.view_as_complex(P) * a),
    "complex_polar": lambda a, b: (torch.complex(R, T), torch.polar(R.abs(), T) * a),
    "sum_mean": lambda a, b: (torch.sum(a), a.sum(-1), a.sum(0), a.mean(-1), a.mean(),
                              (a * b).sum(1, keepdim=True)),
    "compare_where": lambda a, b: (a == a, a != b, torch.where(R > 0, a, b)),
    "casts": lambda a, b: (a.to(torch.complex128) * 3, R.to(torch.complex64) + a),
    "dot_matmul": lambda a, b: (torch.dot(a[0], b[1]), torch.vdot(a[1], b[2]), a @ b.t(),
                                a[:2] @ b[0], torch.bmm(a.reshape(2, 2, 6), b.reshape(2, 6, 2))),
    "views": lambda a, b: (a.t() * b.t(), a[1:3, ::2] + 1, b[:, 2:3] * a[1],
                           torch.cat([a, b], 0), a.reshape(6, 4).permute(1, 0),
                           torch.stack([(a * b).real, (a * b).imag], -1)),
}


@pytest.mark.parametrize("name", sorted(TORCH_OPS))
def test_torch_complex_ops(name):
    _check_torch(TORCH_OPS[name], A, B)


def test_torch_complex_dynamic_shapes():
    fn = lambda a, b: (torch.view_as_real(a * b).flatten(-2), (a * b).sum(-1),  # noqa: E731
                       a.mean(), torch.polar(a.abs(), a.angle()))
    with torch.no_grad():
        c = _compile(fn, dynamic=True)
        for n in (5, 9):
            a, b = _tc(3, n), _tc(3, n)
            for g, w in zip(c(a, b), fn(a, b), strict=True):
                torch.testing.assert_close(g, w, rtol=2e-5, atol=2e-5)


def test_compiled_graph_takes_lazily_conjugated_tensors():
    """A tensor with PyTorch's conjugate (or negative) bit holds the
    unconjugated values in memory: the call resolves it first."""
    g = Graph()
    z = g.input("z", (4, 6), DType.c64)
    g.set_outputs([g.binary("add", z, g.scalar(1, DType.c64))])
    compiled = compiler.compile_graph(g)
    for _ in range(2):  # the second call takes the kept plan of the signature
        torch.testing.assert_close(compiled(A.conj())[0], A.conj() + 1)
        torch.testing.assert_close(compiled(torch._neg_view(A))[0], 1 - A)


def test_torch_complex_unsupported_op_falls_back():
    ex = lt.explain(lambda a: torch.sqrt(a) + 1, A)
    assert not ex.fully_compiled
    assert any("complex" in f.reason for f in ex.fallbacks), str(ex)
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.testing.assert_close(_compile(lambda a: torch.sqrt(a) + 1)(A), torch.sqrt(A) + 1)


# LLaMA's rotary position embedding, as its reference implementation computes
# it: frequencies as unit complex numbers (torch.polar), pairs of features as
# complex numbers rotated by a multiplication.
def precompute_freqs_cis(dim: int, end: int, theta: float = 10000.0) -> torch.Tensor:
    return freqs_cis_at(torch.arange(end, dtype=torch.float32), dim, theta)


def freqs_cis_at(t: torch.Tensor, dim: int, theta: float = 10000.0) -> torch.Tensor:
    freqs = 1.0 / (theta ** (torch.arange(0, dim, 2)[: (dim // 2)].float() / dim))
    angles = torch.outer(t, freqs)
    return torch.polar(torch.ones_like(angles), angles)


def reshape_for_broadcast(freqs_cis: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    shape = [d if i in (1, x.ndim - 1) else 1 for i, d in enumerate(x.shape)]
    return freqs_cis.view(*shape)


def apply_rotary_emb(xq, xk, freqs_cis):
    xq_ = torch.view_as_complex(xq.float().reshape(*xq.shape[:-1], -1, 2))
    xk_ = torch.view_as_complex(xk.float().reshape(*xk.shape[:-1], -1, 2))
    freqs_cis = reshape_for_broadcast(freqs_cis, xq_)
    xq_out = torch.view_as_real(xq_ * freqs_cis).flatten(3)
    xk_out = torch.view_as_real(xk_ * freqs_cis).flatten(3)
    return xq_out.type_as(xq), xk_out.type_as(xk)


class Rope(torch.nn.Module):
    """q and k of an attention layer ([batch, seq, heads, head_dim]) rotated
    by their positions from ``start_pos`` on."""

    def __init__(self, head_dim: int, max_seq: int) -> None:
        super().__init__()
        self.register_buffer("freqs_cis", precompute_freqs_cis(head_dim, max_seq),
                             persistent=False)

    def forward(self, xq, xk, start_pos: int = 0):
        seqlen = xq.shape[1]
        return apply_rotary_emb(xq, xk, self.freqs_cis[start_pos:start_pos + seqlen])


def test_torch_precompute_freqs_cis():
    _check_torch(lambda t: freqs_cis_at(t, 64), torch.arange(16.0), rtol=1e-5, atol=1e-5)


def test_torch_rope_model():
    model = Rope(64, 32).eval()
    xq, xk = torch.randn(2, 16, 4, 64), torch.randn(2, 16, 2, 64)
    with torch.no_grad():
        want = model(xq, xk)
        compiled = _compile(model)
        got = compiled(xq, xk)
        ex = lt.explain(model, xq, xk)
    assert ex.fully_compiled, str(ex)
    assert {"view_as_complex", "view_as_real", "mul"} <= set(ex.compiled), ex.compiled
    for g, w in zip(got, want, strict=True):
        torch.testing.assert_close(g, w, rtol=1e-5, atol=1e-5)


def test_torch_rope_dynamic_seq():
    model = Rope(32, 64).eval()
    with torch.no_grad():
        compiled = _compile(model, dynamic=True)
        for seq in (5, 12, 33):
            xq, xk = torch.randn(1, seq, 2, 32), torch.randn(1, seq, 2, 32)
            for g, w in zip(compiled(xq, xk), model(xq, xk), strict=True):
                torch.testing.assert_close(g, w, rtol=1e-5, atol=1e-5)


# ---------------------------------------------------------------------------
# JAX
# ---------------------------------------------------------------------------


def _jax():
    return pytest.importorskip("jax")


def _check_jax(fn, *args, rtol=2e-5, atol=2e-5):
    jax = _jax()
    import llvmaccel.jax as lj

    got = lj.jit(fn)(*args)
    want = jax.jit(fn)(*args)
    jax.tree_util.tree_map(
        lambda a, b: np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=rtol,
                                                atol=atol), got, want)
    jax.tree_util.tree_map(lambda a, b: _same_dtype(np.asarray(a), np.asarray(b)), got, want)


def _same_dtype(a: np.ndarray, b: np.ndarray) -> None:
    assert a.dtype == b.dtype, (a.dtype, b.dtype)


CA, CB = _crandn(4, 6), _crandn(4, 6)
FR, FT = RNG.standard_normal((4, 6)).astype(np.float32), \
    RNG.standard_normal((4, 6)).astype(np.float32)


def _jax_ops():
    jax = _jax()
    import jax.numpy as jnp
    from jax import lax

    return {
        "complex_real_imag": lambda a, b: (lax.complex(FR, FT), lax.real(a), lax.imag(a),
                                           a.real * b.imag),
        "arith": lambda a, b: (a + b, a - b, a * b, a / b, -a, a * 2.5, a + 1j),
        "conj_abs_exp": lambda a, b: (lax.conj(a), jnp.abs(a), jnp.exp(a * 0.5),
                                      lax.conj(FR), jnp.angle(b)),
        "sum_mean": lambda a, b: (jnp.sum(a), a.sum(-1), a.sum(0), jnp.mean(a, -1),
                                  (a * b).sum(1, keepdims=True)),
        "promotion": lambda a, b: (a * FR, FR + b, a.astype(jnp.complex64) == b,
                                   jnp.where(FR > 0, a, b)),
        "dot": lambda a, b: (jnp.dot(a[0], b[1]), jnp.vdot(a[1], b[2]),
                             jnp.einsum("ij,kj->ik", a, b)),
        "polar_exp": lambda a, b: FR * jnp.exp(1j * FT),
        "square_pow": lambda a, b: (a ** 2, a ** 3, 1 / a, jax.lax.integer_pow(b, -1)),
    }


@pytest.mark.parametrize("name", ["complex_real_imag", "arith", "conj_abs_exp", "sum_mean",
                                  "promotion", "dot", "polar_exp", "square_pow"])
def test_jax_complex_ops(name):
    _check_jax(_jax_ops()[name], CA, CB)


def test_jax_complex_symbolic_shapes():
    jax = _jax()
    import jax.numpy as jnp

    import llvmaccel.jax as lj

    def fn(a, b):
        return (a * b).sum(-1), jnp.abs(a)

    f = lj.jit(fn, polymorphic_shapes=["(b, 8)", "(b, 8)"])
    for n in (2, 5):
        a, b = _crandn(n, 8), _crandn(n, 8)
        for g, w in zip(f(a, b), jax.jit(fn)(a, b), strict=True):
            np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=2e-5, atol=2e-5)


def jax_precompute_freqs_cis(dim: int, end: int, theta: float = 10000.0):
    import jax.numpy as jnp

    freqs = 1.0 / (theta ** (jnp.arange(0, dim, 2)[: dim // 2].astype(jnp.float32) / dim))
    angles = jnp.outer(jnp.arange(end, dtype=jnp.float32), freqs)
    return jnp.exp(1j * angles)  # unit complex numbers, polar(1, angles)


def jax_apply_rotary_emb(x, freqs_cis):
    import jax.numpy as jnp
    from jax import lax

    pairs = x.astype(jnp.float32).reshape(*x.shape[:-1], -1, 2)
    z = lax.complex(pairs[..., 0], pairs[..., 1])
    z = z * freqs_cis[None, :, None, :]
    return jnp.stack([z.real, z.imag], -1).reshape(x.shape).astype(x.dtype)


def test_jax_rope_symbolic_seq():
    jax = _jax()
    import llvmaccel.jax as lj

    def rope(x, freqs_cis):
        return jax_apply_rotary_emb(x, freqs_cis)

    f = lj.jit(rope, polymorphic_shapes=["(2, s, 3, 16)", "(s, 8)"])
    fc = np.asarray(jax.jit(jax_precompute_freqs_cis, static_argnums=(0, 1))(16, 40))
    for seq in (7, 40):
        x = RNG.standard_normal((2, seq, 3, 16)).astype(np.float32)
        np.testing.assert_allclose(np.asarray(f(x, fc[:seq])),
                                   np.asarray(jax.jit(rope)(x, fc[:seq])), rtol=1e-5, atol=1e-5)


def test_jax_rope_model():
    jax = _jax()
    import llvmaccel.jax as lj

    def rope(xq, xk, freqs_cis):
        fc = freqs_cis[: xq.shape[1]]
        return jax_apply_rotary_emb(xq, fc), jax_apply_rotary_emb(xk, fc)

    _check_jax(lambda: jax_precompute_freqs_cis(64, 32), rtol=1e-5, atol=1e-5)
    fc = np.asarray(jax.jit(jax_precompute_freqs_cis, static_argnums=(0, 1))(64, 32))
    xq = RNG.standard_normal((2, 16, 4, 64)).astype(np.float32)
    xk = RNG.standard_normal((2, 16, 2, 64)).astype(np.float32)
    _check_jax(rope, xq, xk, fc, rtol=1e-5, atol=1e-5)
    # The output is stored as pairs of each complex product: no concat.
    compiled = lj.jit(rope).compiled_for(xq, xk, fc)
    assert compiled is not None
    assert not [n for n in compiled.graph.nodes if n.op == "concat"]
    # And it agrees with the PyTorch reference implementation.
    want = apply_rotary_emb(torch.from_numpy(xq), torch.from_numpy(xk),
                            precompute_freqs_cis(64, 32)[:16])
    for g, w in zip(lj.jit(rope)(xq, xk, fc), want, strict=True):
        np.testing.assert_allclose(np.asarray(g), w.numpy(), rtol=1e-5, atol=1e-5)


def test_jax_complex_gather_fill_and_ffi():
    """Complex gathers fill out-of-range rows with NaN like XLA; complex
    arrays pass through the XLA FFI handler inside jax.jit."""
    jax = _jax()
    import jax.numpy as jnp

    import llvmaccel.jax as lj
    import llvmaccel.jax.ffi as lffi

    idx = np.array([0, 7, 2])
    take = lambda a: a.at[:, idx].get(mode="fill")  # noqa: E731
    np.testing.assert_allclose(np.asarray(lj.jit(take)(CA)), np.asarray(jax.jit(take)(CA)),
                               equal_nan=True)

    def f(a, b):
        return (a * b).sum(-1), jnp.abs(a) + 1

    fast = lffi.ffi_function(f)
    got = jax.jit(lambda a, b: fast(a, b))(CA, CB)
    for g, w in zip(got, f(CA, CB), strict=True):
        assert np.asarray(g).dtype == np.asarray(w).dtype
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=2e-5, atol=2e-5)
