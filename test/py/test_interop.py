"""The inter-op parallel execution mode (llvmaccel.interop): a graph's
independent branches run as tasks of MLIR's async runtime, with results and
errors identical to the sequential kernel's."""

from __future__ import annotations

import copy
import threading
import warnings

import numpy as np
import pytest

from llvmaccel import compiler, interop
from llvmaccel.compiler import compile_graph
from llvmaccel.graph import DType, Graph, Sym

needs_mlir = pytest.mark.skipif(interop.available() is not None,
                                reason=str(interop.available()))


def two_towers(rows: int = 50, dim: int = 8, batch: int = 6) -> Graph:
    """An embedding table and a small MLP side by side, joined by a concat
    and a matmul (a DLRM in miniature)."""
    g = Graph()
    table = g.input("table", (rows, dim), DType.f32)
    idx = g.input("idx", (batch * 3,), DType.i64)
    offs = g.input("offs", (batch,), DType.i64)
    dense = g.input("dense", (batch, 5), DType.f32)
    w1 = g.constant(np.linspace(-1, 1, 5 * dim, dtype=np.float32).reshape(5, dim), DType.f32)
    emb = g.embedding_bag(table, idx, offs, "sum")
    mlp = g.unary("relu", g.matmul(dense, w1))
    z = g.concat([emb, mlp], 1)
    w2 = g.constant(np.linspace(1, -1, 2 * dim, dtype=np.float32).reshape(2 * dim, 1),
                    DType.f32)
    g.set_outputs([g.unary("sigmoid", g.matmul(z, w2))])
    return g


def two_tower_inputs(rows: int = 50, dim: int = 8, batch: int = 6, seed: int = 0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((rows, dim)).astype(np.float32),
            rng.integers(0, rows, batch * 3).astype(np.int64),
            (np.arange(batch) * 3).astype(np.int64),
            rng.standard_normal((batch, 5)).astype(np.float32)]


def test_partition_of_a_dlrm_graph():
    branches = interop.partition(two_towers())
    # The table, the MLP, and the interaction after them.
    assert len(branches) == 3
    assert branches[0].preds == [] and branches[1].preds == []
    assert branches[2].preds == [0, 1]
    assert interop.parallel_pairs(branches) == 1


def test_a_sum_of_branches_is_one_join():
    g = Graph()
    x = g.input("x", (8, 8), DType.f32)
    heads = [g.matmul(x, g.constant(np.full((8, 8), k, np.float32), DType.f32))
             for k in range(3)]
    idx = g.binary("add", g.input("i", (4,), DType.i64), g.scalar(1, DType.i64))
    total = g.binary("add", g.binary("add", heads[0], heads[1]), heads[2])
    g.set_outputs([g.take(total, idx, 0)])
    branches = interop.partition(g)
    # The adds and the computed index join the take: one task after the heads.
    assert [b.preds for b in branches] == [[], [], [], [0, 1, 2]]


def test_a_chain_has_nothing_to_run_in_parallel():
    g = Graph()
    x = g.input("x", (8, 8), DType.f32)
    y = g.reduce("sum", g.matmul(x, x), (1,))
    g.set_outputs([g.unary("exp", y)])
    assert interop.parallel_pairs(interop.partition(g)) == 0
    assert interop.generate(g) is None


@needs_mlir
def test_two_towers_equal_the_sequential_kernel():
    g = two_towers()
    seq = compile_graph(g, inter_op=False)
    par = compile_graph(g, inter_op=True)
    assert seq.branches is None and par.branches is not None and len(par.branches) == 3
    for seed in range(3):
        args = two_tower_inputs(seed=seed)
        (a,), (b,) = seq(*args), par(*args)
        assert a.tobytes() == b.tobytes()
    # The pass saw the tasks: the two towers stay parallel (each has loops).
    missed = [r.message for r in par.report.missed("accel-async-fusion")]
    assert any("stays asynchronous" in m for m in missed), missed


@needs_mlir
def test_the_pass_fuses_a_chain_of_branches_and_keeps_the_parallel_one():
    g = Graph()
    x = g.input("x", (16, 16), DType.f32)
    y = g.input("y", (16, 16), DType.f32)
    a1 = g.matmul(x, x)  # an output, and the next branch's operand
    a2 = g.reduce("sum", g.unary("exp", a1), (1,))
    b = g.reduce("max", g.matmul(y, y), (0,))
    g.set_outputs([a1, a2, b])
    par = compile_graph(g, inter_op=True)
    assert [br.preds for br in par.branches] == [[], [0], []]
    passed = [r.message for r in par.report.passed("accel-async-fusion")]
    assert any("fused a chain of 2 tasks" in m for m in passed), passed
    missed = [r.message for r in par.report.missed("accel-async-fusion")]
    assert any("stays asynchronous" in m for m in missed), missed
    seq = compile_graph(g, inter_op=False)
    rng = np.random.default_rng(0)
    args = [rng.standard_normal((16, 16)).astype(np.float32) for _ in range(2)]
    for u, v in zip(seq(*args), par(*args), strict=True):
        assert u.tobytes() == v.tobytes()


@needs_mlir
def test_outputs_that_are_inputs_views_or_repeated():
    g = Graph()
    x = g.input("x", (8, 8), DType.f32)
    y = g.input("y", (8, 8), DType.f32)
    a = g.reduce("sum", g.matmul(x, x), (1,))
    b = g.reduce("max", g.matmul(y, y), (0,))
    g.set_outputs([a, x, b, a, g.reshape(y, (64,))])
    par = compile_graph(g, inter_op=True)
    assert par.branches is not None
    rng = np.random.default_rng(0)
    args = [rng.standard_normal((8, 8)).astype(np.float32) for _ in range(2)]
    got, want = par(*args), compile_graph(g, inter_op=False)(*args)
    assert [u.shape for u in got] == [v.shape for v in want]
    assert all(u.tobytes() == v.tobytes() for u, v in zip(got, want, strict=True))


@needs_mlir
def test_an_out_of_range_index_in_one_branch_is_the_same_exception():
    g = two_towers()
    seq = compile_graph(g, inter_op=False)
    par = compile_graph(g, inter_op=True)
    args = two_tower_inputs()
    args[1][4] = 50  # one row past the table
    with pytest.raises(IndexError) as e_seq:
        seq(*args)
    with pytest.raises(IndexError) as e_par:
        par(*args)
    assert str(e_par.value) == str(e_seq.value)
    args[1][4] = 3  # the same compiled graph works again afterwards
    assert seq(*args)[0].tobytes() == par(*args)[0].tobytes()


def heads_graph() -> Graph:
    """A trunk and two heads, one of them with a gather whose index is
    computed (checked after its own loop nest), with a symbolic batch."""
    g = Graph()
    b = Sym("b")
    x = g.input("x", (b, 4), DType.f32)
    pos = g.input("pos", (b,), DType.i64)
    trunk = g.unary("tanh", g.matmul(x, g.constant(np.eye(4, dtype=np.float32) * 0.5,
                                                   DType.f32)))
    h1 = g.reduce("sum", trunk, (1,))
    shifted = g.binary("add", pos, g.scalar(1, DType.i64))
    h2 = g.take(g.reduce("max", trunk, (1,)), shifted, 0)
    g.set_outputs([h1, h2, trunk])
    return g


@needs_mlir
def test_heads_with_symbolic_sizes_and_an_error_in_a_later_branch():
    g = heads_graph()
    seq = compile_graph(g, inter_op=False)
    par = compile_graph(g, inter_op=True)
    assert par.branches is not None
    rng = np.random.default_rng(1)
    for n in (3, 17):
        x = rng.standard_normal((n, 4)).astype(np.float32)
        pos = rng.integers(0, n - 1, n).astype(np.int64)
        for a, b in zip(seq(x, pos), par(x, pos), strict=True):
            assert a.shape == b.shape and a.tobytes() == b.tobytes()
        pos[0] = n - 1  # shifted past the end
        with pytest.raises(IndexError) as e_seq:
            seq(x, pos)
        with pytest.raises(IndexError) as e_par:
            par(x, pos)
        assert str(e_par.value) == str(e_seq.value)


@needs_mlir
def test_concurrent_calls():
    g = two_towers()
    seq = compile_graph(g, inter_op=False)
    par = compile_graph(g, inter_op=True)
    inputs = [two_tower_inputs(seed=s) for s in range(8)]
    want = [seq(*a)[0].tobytes() for a in inputs]
    got: list = [None] * len(inputs)

    def run(k: int) -> None:
        for _ in range(20):
            got[k] = par(*inputs[k])[0].tobytes()

    threads = [threading.Thread(target=run, args=(k,)) for k in range(len(inputs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert got == want


def test_missing_tools_fall_back_with_a_warning(monkeypatch):
    monkeypatch.setattr(interop, "available", lambda: "no mlir-opt here (test)")
    g = two_towers(rows=40)
    with pytest.warns(RuntimeWarning, match="no mlir-opt here"):
        c = compile_graph(g, inter_op=True)
    assert c.branches is None
    args = two_tower_inputs(rows=40)
    assert c(*args)[0].tobytes() == compile_graph(g, inter_op=False)(*args)[0].tobytes()


def test_environment_variable(monkeypatch):
    monkeypatch.setenv("LLVMACCEL_INTER_OP", "1")
    assert interop.requested(None) is True
    assert interop.requested(False) is False
    monkeypatch.setenv("LLVMACCEL_INTER_OP", "off")
    assert interop.requested(None) is False
    monkeypatch.setenv("LLVMACCEL_INTER_OP", "sometimes")
    with pytest.raises(ValueError, match="LLVMACCEL_INTER_OP"):
        interop.requested(None)
    with pytest.raises(TypeError):
        interop.requested("yes")  # type: ignore[arg-type]


@needs_mlir
def test_environment_variable_turns_it_on(monkeypatch):
    monkeypatch.setenv("LLVMACCEL_INTER_OP", "on")
    assert compile_graph(two_towers(rows=30)).branches is not None


# --- frontends ------------------------------------------------------------------

torch = pytest.importorskip("torch")


class MiniDLRM(torch.nn.Module):
    def __init__(self, tables: int = 3, rows: int = 100, dim: int = 8):
        super().__init__()
        gen = torch.Generator().manual_seed(0)
        self.embs = torch.nn.ModuleList(
            torch.nn.EmbeddingBag(rows, dim, mode="sum",
                                  _weight=torch.rand(rows, dim, generator=gen) - 0.5)
            for _ in range(tables))
        self.bottom = torch.nn.Sequential(torch.nn.Linear(13, 16), torch.nn.ReLU(),
                                          torch.nn.Linear(16, dim), torch.nn.ReLU())
        self.top = torch.nn.Linear(dim * (tables + 1), 1)

    def forward(self, dense, indices, offsets):
        feats = [self.bottom(dense)] + [e(indices[t], offsets[t])
                                        for t, e in enumerate(self.embs)]
        return torch.sigmoid(self.top(torch.cat(feats, 1)))


def dlrm_inputs(tables: int = 3, rows: int = 100, batch: int = 16, bag: int = 4, seed: int = 0):
    gen = torch.Generator().manual_seed(seed)
    return (torch.randn(batch, 13, generator=gen),
            torch.randint(0, rows, (tables, batch * bag), generator=gen),
            (torch.arange(batch) * bag).repeat(tables, 1))


def _compiled_with_branches() -> list:
    return [c for c in compiler._cache.values() if c.branches is not None]


@needs_mlir
def test_torch_compile_inter_op_option():
    torch._dynamo.reset()
    compiler.clear_memory_cache()
    model = MiniDLRM().eval()
    par = torch.compile(model, backend="llvmaccel", options={"inter_op": True})
    seq = torch.compile(copy.deepcopy(model), backend="llvmaccel")
    with torch.no_grad():
        for seed in range(3):
            args = dlrm_inputs(seed=seed)
            out = par(*args)
            assert torch.equal(out, seq(*args))
            torch.testing.assert_close(out, model(*args))
    (compiled,) = _compiled_with_branches()
    # Three tables and the bottom MLP in parallel, then the top.
    assert len(compiled.branches) == 5
    assert len([b for b in compiled.branches if not b.preds]) == 4


@needs_mlir
def test_torch_out_of_range_index_raises_like_the_sequential_kernel():
    torch._dynamo.reset()
    model = MiniDLRM().eval()
    par = torch.compile(model, backend="llvmaccel", options={"inter_op": True})
    seq = torch.compile(copy.deepcopy(model), backend="llvmaccel")
    dense, indices, offsets = dlrm_inputs()
    with torch.no_grad():
        par(dense, indices, offsets)
        seq(dense, indices, offsets)
        bad = indices.clone()
        bad[1, 5] = 100  # one past the second table
        errors = []
        for fn in (model, seq, par):
            with pytest.raises(Exception) as e:  # noqa: PT011 - compared below
                fn(dense, bad, offsets)
            errors.append(e.value)
        eager, sequential, parallel = errors
        # The sequential kernel's exception, exactly (eager's embedding_bag
        # says RuntimeError where llvmaccel says IndexError).
        assert type(parallel) is type(sequential) and str(parallel) == str(sequential)
        assert "range" in str(eager) and "range" in str(parallel)
        assert torch.equal(par(dense, indices, offsets), seq(dense, indices, offsets))


def test_torch_option_is_checked():
    torch._dynamo.reset()
    f = torch.compile(torch.nn.Linear(2, 2), backend="llvmaccel", options={"inter_op": "yes"})
    with pytest.raises(Exception, match="inter_op"):
        f(torch.ones(1, 2))


@needs_mlir
def test_jax_jit_inter_op():
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    import llvmaccel.jax as ljax

    def heads(x, w1, w2):
        trunk = jnp.tanh(x @ w1)
        return jnp.sum(trunk @ w2, axis=1), jnp.max(jnp.exp(trunk), axis=1)

    rng = np.random.default_rng(0)
    args = (rng.standard_normal((32, 16)).astype(np.float32),
            rng.standard_normal((16, 16)).astype(np.float32),
            rng.standard_normal((16, 8)).astype(np.float32))
    par = ljax.jit(heads, inter_op=True)
    seq = ljax.jit(heads)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        got = par(*args)
    want = seq(*args)
    for a, b in zip(got, want, strict=True):
        assert np.asarray(a).tobytes() == np.asarray(b).tobytes()
    assert par.compiled_for(*args).branches is not None
    with pytest.raises(TypeError, match="inter_op"):
        ljax.jit(heads, inter_op="on")


@needs_mlir
def test_branches_run_library_gemms_on_their_own_thread(monkeypatch):
    """Branches of library GEMMs (PyTorch's MKL) set the calling thread's
    thread count to 1 around the branch and restore it: without it every task
    thread starts a team of all threads (3x slower on 2 cores)."""
    pytest.importorskip("torch")  # its MKL is the library
    from llvmaccel import blas

    monkeypatch.setenv("LLVMACCEL_BLAS_LIBRARY", "torch")
    monkeypatch.setenv("LLVMACCEL_BLAS", "always")  # whatever the thread count
    if blas.load() is None or blas.thread_local_setter() is None:
        pytest.skip("no PyTorch MKL with a thread-local thread count here")
    g = Graph()
    n = 192  # 7M multiply-adds a product: the library's
    x = g.input("x", (n, n), DType.f32)
    rng = np.random.default_rng(3)
    outs = []
    for _ in range(2):
        w = g.constant(rng.standard_normal((n, n)).astype(np.float32) / n, DType.f32)
        outs.append(g.unary("tanh", g.matmul(x, w)))
    g.set_outputs([g.binary("add", outs[0], outs[1])])
    kernel, branches = interop.generate(g)
    assert len(branches) >= 2
    setter = blas.thread_local_setter()
    calls = [ln for ln in kernel.ir.splitlines() if f"@{setter}(" in ln and "call" in ln]
    # Two per branch that calls the library: one thread, then what it had.
    gemm_branches = sum(any(g.nodes[i].op == "matmul" for i in b.nodes) for b in branches)
    assert gemm_branches == 2
    assert len(calls) == 2 * gemm_branches
    x0 = rng.standard_normal((n, n)).astype(np.float32)
    seq = compile_graph(g, inter_op=False)(x0)
    par = compile_graph(g, inter_op=True)(x0)
    np.testing.assert_allclose(par, seq, rtol=1e-5, atol=1e-6)


def test_no_thread_local_setter_without_pytorchs_library(monkeypatch):
    from llvmaccel import blas

    monkeypatch.setenv("LLVMACCEL_BLAS_LIBRARY", "openblas")
    assert blas.thread_local_setter() is None


@needs_mlir
def test_openblas_runs_one_thread_for_an_inter_op_call_and_its_default_after(monkeypatch):
    """OpenBLAS has no thread-local count: an inter-op call gives it one
    thread (the tasks are the parallelism), the next sequential call its
    default back."""
    from llvmaccel import blas

    monkeypatch.setenv("LLVMACCEL_BLAS_LIBRARY", "openblas")
    monkeypatch.setenv("LLVMACCEL_BLAS", "always")  # whatever the thread count
    monkeypatch.delenv("LLVMACCEL_NUM_THREADS", raising=False)
    lib = blas.load()
    if lib is None:
        pytest.skip(blas.status())
    g = Graph()
    n = 192
    x = g.input("x", (n, n), DType.f32)
    rng = np.random.default_rng(4)
    outs = [g.matmul(x, g.constant(rng.standard_normal((n, n)).astype(np.float32), DType.f32))
            for _ in range(2)]
    g.set_outputs([g.binary("add", outs[0], outs[1])])
    seq = compile_graph(g, inter_op=False)
    par = compile_graph(g, inter_op=True)
    assert par.branches is not None and par.kernel.uses_blas
    x0 = rng.standard_normal((n, n)).astype(np.float32)
    (a,) = seq(x0)
    threads = int(lib.scipy_openblas_get_num_threads())  # PyTorch's count, or the default
    (b,) = par(x0)
    assert int(lib.scipy_openblas_get_num_threads()) == 1
    (a,) = seq(x0)
    assert int(lib.scipy_openblas_get_num_threads()) == threads
    np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-4)
