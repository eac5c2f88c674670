"""Custom ops declared once (llvmaccel.custom_op), used from numpy, PyTorch
(eager, torch.compile with llvmaccel and inductor) and JAX (llvmaccel.jax.jit,
jax.jit); the shipped examples run as written."""

from __future__ import annotations

import itertools
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import llvmaccel
from llvmaccel import IRParseError, VerifyError, custom_ops
from llvmaccel.graph import DType, Graph, Sym

torch = pytest.importorskip("torch")
jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402

import llvmaccel.jax as lj  # noqa: E402
import llvmaccel.torch as lt  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[2]
_names = (f"t{i}" for i in itertools.count())

GATHER_ROWS_IR = """
define i32 @gather_rows(ptr %x, ptr %idx, ptr %out, i64 %n, i64 %d, i64 %m) {
entry:
  br label %rows
rows:
  %i = phi i64 [ 0, %entry ], [ %i.next, %copied ]
  %done = icmp eq i64 %i, %m
  br i1 %done, label %ok, label %row
row:
  %ip = getelementptr inbounds i64, ptr %idx, i64 %i
  %r = load i64, ptr %ip
  %bad = icmp uge i64 %r, %n
  br i1 %bad, label %fail, label %copy
copy:
  %k = phi i64 [ 0, %row ], [ %k.next, %copy ]
  %src = mul i64 %r, %d
  %dst = mul i64 %i, %d
  %s = add i64 %src, %k
  %t = add i64 %dst, %k
  %sp = getelementptr inbounds float, ptr %x, i64 %s
  %tp = getelementptr inbounds float, ptr %out, i64 %t
  %v = load float, ptr %sp
  store float %v, ptr %tp
  %k.next = add nuw i64 %k, 1
  %kd = icmp eq i64 %k.next, %d
  br i1 %kd, label %copied, label %copy
copied:
  %i.next = add nuw i64 %i, 1
  br label %rows
fail:
  ret i32 1
ok:
  ret i32 0
}
"""
GATHER_SIG = "(x: f32[n, d], idx: i64[m]) -> f32[m, d]"


def _gather_op():
    # d >= 1 is assumed by the body's loop; the tests use d >= 1.
    return llvmaccel.custom_op(f"tst::{next(_names)}", GATHER_SIG, GATHER_ROWS_IR,
                               function="gather_rows", reference=lambda x, i: x[i],
                               error="a row index is out of range")


@pytest.fixture(autouse=True)
def _cache_dir(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("LLVMACCEL_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "cache"))


X = np.arange(24, dtype=np.float32).reshape(6, 4)
IDX = np.array([5, 0, 3, 3], np.int64)


def test_numpy_torch_eager_and_check():
    op = _gather_op()
    np.testing.assert_array_equal(op(X, IDX), X[IDX])
    np.testing.assert_array_equal(op.check(X, IDX), X[IDX])
    got = op(torch.from_numpy(X), torch.from_numpy(IDX))
    assert isinstance(got, torch.Tensor)
    torch.testing.assert_close(got, torch.from_numpy(X[IDX]))
    name = op.name.split("::")[1]
    torch.testing.assert_close(getattr(torch.ops.tst, name)(torch.from_numpy(X),
                                                             torch.from_numpy(IDX)),
                               torch.from_numpy(X[IDX]))


def test_torch_compile_lowers_the_op_inline():
    op = _gather_op()

    def f(x, idx):
        return op(x * 2.0, idx).sum(-1)

    args = (torch.from_numpy(X), torch.from_numpy(IDX))
    torch.testing.assert_close(torch.compile(f, backend="llvmaccel")(*args),
                               torch.from_numpy((X * 2.0)[IDX].sum(-1)))
    e = lt.explain(f, *args)
    assert e.fully_compiled, str(e)
    assert any(op.name in n for n in e.compiled), e.compiled


def test_inductor_calls_the_op_opaquely():
    op = _gather_op()
    f = torch.compile(lambda x, idx: op(x + 1.0, idx) * 3.0, backend="inductor")
    torch.testing.assert_close(f(torch.from_numpy(X), torch.from_numpy(IDX)),
                               torch.from_numpy((X + 1.0)[IDX] * 3.0))


def test_jax_inline_and_inside_jax_jit():
    op = _gather_op()
    with jax.enable_x64(True):
        want = (X * 2.0)[IDX]
        np.testing.assert_array_equal(np.asarray(op(jnp.asarray(X), jnp.asarray(IDX))), X[IDX])
        f = lj.jit(lambda x, i: op(x * 2.0, i))
        np.testing.assert_array_equal(np.asarray(f(X, IDX)), want)
        assert "custom" in str(f.compiled_for(X, IDX).graph)
        g = jax.jit(lambda x, i: op(x * 2.0, i))
        np.testing.assert_array_equal(np.asarray(g(X, IDX)), want)
        assert "llvmaccel_kernel" in g.lower(X, IDX).as_text()
        assert jax.eval_shape(lambda x, i: op(x, i), X, IDX).shape == (4, 4)


def test_body_errors_become_value_errors_everywhere():
    op = _gather_op()
    bad = np.array([0, 6], np.int64)
    with pytest.raises(ValueError, match="row index is out of range"):
        op(X, bad)
    with pytest.raises(ValueError, match="row index is out of range"):
        op(torch.from_numpy(X), torch.from_numpy(bad))
    f = torch.compile(lambda x, i: op(x, i) + 1, backend="llvmaccel")
    with pytest.raises(ValueError, match="row index is out of range"):
        f(torch.from_numpy(X), torch.from_numpy(bad))
    with jax.enable_x64(True), pytest.raises(ValueError, match="row index is out of range"):
        lj.jit(lambda x, i: op(x, i))(X, bad)


def test_shapes_and_dtypes_checked_before_native_code():
    op = llvmaccel.custom_op(
        f"tst::{next(_names)}", "(indptr: i64[m + 1], values: f32[2 * m]) -> f32[m]",
        "define void @f(ptr %a, ptr %b, ptr %o, i64 %m) {\n  ret void\n}\n")
    assert op.sizes == ["m"]
    with pytest.raises(ValueError, match=r"'values' dim 0 is 5, but the signature says 2 \* m"):
        op(np.zeros(3, np.int64), np.zeros(5, np.float32))
    with pytest.raises(ValueError, match="negative"):
        op(np.zeros(0, np.int64), np.zeros(0, np.float32))
    with pytest.raises(ValueError, match="rank 1"):
        op(np.zeros((3, 1), np.int64), np.zeros(4, np.float32))
    with pytest.raises(TypeError, match="must be int64"):
        op(np.zeros(3, np.int32), np.zeros(4, np.float32))
    with pytest.raises(TypeError, match="takes 2 arguments"):
        op(np.zeros(3, np.int64))
    with pytest.raises(ValueError, match="'values' dim 0"):
        op(torch.zeros(3, dtype=torch.int64), torch.zeros(5))
    with jax.enable_x64(True), pytest.raises(ValueError, match="'values' dim 0"):
        jax.jit(lambda a, b: op(a, b))(np.zeros(3, np.int64), np.zeros(5, np.float32))


def test_symbolic_sizes_are_compared_at_run_time():
    # Two independent symbols where the signature says one size: the kernel
    # compares them before calling the body.
    op = _gather_op()
    g = Graph()
    x = g.input("x", (Sym("a"), 4), DType.f32)
    idx = g.input("idx", (Sym("b"),), DType.i64)
    g.set_outputs([op.lower(g, [x, idx])])
    compiled = llvmaccel.compiler.compile_graph(g)
    np.testing.assert_array_equal(compiled(X, IDX)[0], X[IDX])
    g2 = Graph()
    x2 = g2.input("x", (Sym("a"), Sym("c")), DType.f32)
    big = g2.input("y", (Sym("a"), Sym("c2")), DType.f32)
    ref = custom_ops.custom_op(f"tst::{next(_names)}", "(x: f32[n, d], y: f32[n, d]) -> f32[n, d]",
                               "define void @f(ptr %x, ptr %y, ptr %o, i64 %n, i64 %d) {\n"
                               "  ret void\n}\n")
    g2.set_outputs([ref.lower(g2, [x2, big])])
    compiled2 = llvmaccel.compiler.compile_graph(g2)
    with pytest.raises(ValueError, match="sizes do not fit the signature"):
        compiled2(np.zeros((2, 3), np.float32), np.zeros((2, 5), np.float32))


def test_graph_body():
    def body(g, x, y, n):
        return g.binary("add", g.binary("mul", x, x), y)

    op = llvmaccel.custom_op(f"tst::{next(_names)}", "(x: f32[n], y: f32[n]) -> f32[n]", body,
                             language="graph", reference=lambda x, y: x * x + y)
    a, b = np.arange(5, dtype=np.float32), np.ones(5, np.float32)
    np.testing.assert_array_equal(op.check(a, b), a * a + b)
    f = torch.compile(lambda x, y: op(x, y).relu(), backend="llvmaccel")
    torch.testing.assert_close(f(torch.from_numpy(a), torch.from_numpy(b)),
                               torch.from_numpy(a * a + b))


def test_c_body_and_declaration_errors():
    op = llvmaccel.custom_op(
        f"tst::{next(_names)}", "(x: f64[n]) -> f64[n]",
        "#include <stdint.h>\nvoid twice(const double *x, double *o, int64_t n) {\n"
        "  for (int64_t i = 0; i < n; i++) o[i] = 2 * x[i];\n}\n", language="c")
    np.testing.assert_array_equal(op(np.arange(4.0)), np.arange(4.0) * 2)

    def declare(sig, body, **kw):
        return llvmaccel.custom_op(f"tst::{next(_names)}", sig, body, **kw)

    void1 = "define void @f(ptr %x, ptr %o, i64 %n) {\n  ret void\n}\n"
    with pytest.raises(ValueError, match="namespace::name"):
        llvmaccel.custom_op("nonamespace", "(x: f32[n]) -> f32[n]", void1)
    with pytest.raises(ValueError, match="already declared"):
        llvmaccel.custom_op(op.name, "(x: f32[n]) -> f32[n]", void1)
    with pytest.raises(ValueError, match="unknown dtype"):
        declare("(x: f16[n]) -> f32[n]", void1)
    with pytest.raises(ValueError, match="cannot bind"):
        declare("(x: f32[n * n]) -> f32[n]", void1)
    with pytest.raises(ValueError, match="not bound"):
        declare("(x: f32[n]) -> f32[k]", void1)
    with pytest.raises(ValueError, match="only integers, names"):
        declare("(x: f32[n ** 2]) -> f32[n]", void1)
    with pytest.raises(TypeError, match=r"signature needs void\(ptr, ptr, i64\)"):
        declare("(x: f32[n]) -> f32[n]", "define void @f(ptr %x, i64 %n) {\n  ret void\n}\n")
    with pytest.raises(TypeError, match="no function 'g'"):
        declare("(x: f32[n]) -> f32[n]", void1, function="g")
    with pytest.raises(IRParseError):
        declare("(x: f32[n]) -> f32[n]", "define void @f(ptr %x {")
    with pytest.raises(VerifyError):
        declare("(x: f32[n]) -> f32[n]",
                "define void @f(ptr %x, ptr %o, i64 %n) {\nentry:\n  br label %entry\n"
                "b:\n  %v = add i64 %w, 1\n  %w = add i64 %v, 1\n  ret void\n}\n")
    with pytest.raises(VerifyError, match="does not compile"):
        declare("(x: f32[n]) -> f32[n]", "void f(float *x, float *o, long n) { oops }",
                language="c")
    with pytest.raises(ValueError, match="language must be"):
        declare("(x: f32[n]) -> f32[n]", void1, language="fortran")
    with pytest.raises(ValueError, match="no reference"):
        declare("(x: f32[n]) -> f32[n]", void1).check(np.zeros(2, np.float32))


@pytest.mark.parametrize("example", ["csr_spmm.py", "segment_sum.py"])
def test_examples_run(example):
    out = subprocess.run([sys.executable, str(ROOT / "examples" / "custom_ops" / example)],
                         capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "agree" in out.stdout


def test_csr_spmm_reaches_accel_prefetch():
    sys.path.insert(0, str(ROOT / "examples" / "custom_ops"))
    try:
        import csr_spmm as ex
    finally:
        sys.path.pop(0)
    indptr, indices, values = ex.random_graph(20000, 8)
    h = np.random.default_rng(1).standard_normal((20000, 32), dtype=np.float32)
    args = [torch.from_numpy(a) for a in (indptr, indices, values, h)]
    e = lt.explain(lambda a, b, c, x: torch.relu(ex.csr_spmm(a, b, c, x)), *args)
    assert "accel-prefetch" in e.passes_fired()
    assert any("across the iterations of the outer loop" in r.message for r in e.remarks
               if r.kind == "passed")


def test_vjp_in_both_frameworks():
    sys.path.insert(0, str(ROOT / "examples" / "custom_ops"))
    try:
        import segment_sum as seg
    finally:
        sys.path.pop(0)
    op = _gather_op()

    @op.def_vjp
    def _(x, idx, out, grad):  # d x = grad's rows added back where they came from
        return seg.segment_sum(grad, idx, x.shape[0]), None

    with pytest.raises(ValueError, match="already has a VJP"):
        op.def_vjp(lambda *a: a)
    want = np.zeros_like(X)
    np.add.at(want, IDX, 2 * X[IDX])  # d/dx sum(x[idx]**2)

    x = torch.from_numpy(X.copy()).requires_grad_()
    (op(x, torch.from_numpy(IDX)) ** 2).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), want)

    x = torch.from_numpy(X.copy()).requires_grad_()
    loss = torch.compile(lambda x, i: (op(x, i) ** 2).sum(), backend="llvmaccel")
    loss(x, torch.from_numpy(IDX)).backward()
    np.testing.assert_allclose(x.grad.numpy(), want)

    with jax.enable_x64(True):
        f = lambda x: (op(x, jnp.asarray(IDX)) ** 2).sum()  # noqa: E731
        np.testing.assert_allclose(np.asarray(jax.grad(f)(jnp.asarray(X))), want)
        g = lj.jit(lambda x, i: (op(x, i) ** 2).sum())
        np.testing.assert_allclose(np.asarray(jax.grad(g)(X, IDX)), want)
