"""Shape anchors from the frontends: what is known of symbolic sizes (torch's
ShapeEnv ranges, JAX's symbolic constraints) is stated at kernel entry as
llvm.assume, and calls that break it are refused before the kernel runs."""

from __future__ import annotations

import numpy as np
import pytest

from llvmaccel import compiler
from llvmaccel.codegen import generate
from llvmaccel.graph import DType, Graph, GraphError, Sym


def _row_sums(**facts):
    g = Graph()
    x = g.input("x", (Sym("b"), Sym("n")), DType.f32)
    g.set_outputs([g.reduce("sum", g.binary("mul", x, g.scalar(2.0, DType.f32)), (1,))])
    if facts:
        g.assume_symbol("n", **facts)
    return g


def test_facts_become_assumes_at_entry_and_calls_are_checked():
    g = _row_sums(lowest=8, highest=4096, multiple_of=8)
    ir = generate(g, threads=False).ir  # one kernel (a parallel one repeats it per body)
    assert "icmp sge i64 %sym.n, 8" in ir and "icmp sle i64 %sym.n, 4096" in ir
    assert "urem i64 %sym.n, 8" in ir and ir.count("call void @llvm.assume(i1 %") == 3
    assert "i64 noundef %sym.n" in ir
    c = compiler.compile_graph(g)
    x = np.ones((3, 16), np.float32)
    np.testing.assert_allclose(c(x)[0], np.full(3, 32.0))
    for bad in (np.ones((3, 12), np.float32), np.ones((3, 0), np.float32)):
        with pytest.raises(ValueError, match="breaks what the graph was compiled for"):
            c(bad)
    assert generate(_row_sums()).ir.count("call void @llvm.assume(i1 %") == 0


def test_facts_combine_and_contradictions_are_refused():
    g = _row_sums(lowest=4, multiple_of=4)
    g.assume_symbol("n", lowest=8, multiple_of=6)
    assert g.symbol_facts["n"] == (8, None, 12)
    assert g.fingerprint() != _row_sums().fingerprint()
    with pytest.raises(GraphError, match="no value"):
        g.assume_symbol("n", highest=7)


def test_torch_mark_dynamic_range_reaches_the_kernel():
    torch = pytest.importorskip("torch")
    import llvmaccel.torch as lt

    ex = lt.Explanation()

    def be(gm, inputs):
        return lt.backend(gm, inputs, options={"strict": True, "_explanation": ex})

    x = torch.randn(64, 32)
    torch._dynamo.mark_dynamic(x, 0, min=16, max=4096)
    torch._dynamo.reset()
    fast = torch.compile(lambda x: (x * 2).sum(0), backend=be)
    with torch.no_grad():
        torch.testing.assert_close(fast(x), (x * 2).sum(0))
    facts = [f for cg in compiler._cache.values() for f in cg.graph.symbol_facts.values()]
    assert (16, 4096, 1) in facts


def test_jax_symbolic_constraints_reach_the_kernel():
    pytest.importorskip("jax")
    import jax.numpy as jnp

    import llvmaccel.jax as lj

    f = lj.jit(lambda x: jnp.sum(x * 2.0, axis=1), polymorphic_shapes=["b, n"],
               symbolic_constraints=("n >= 8", "mod(n, 8) == 0", "b <= 1000"))
    x = np.ones((5, 16), np.float32)
    np.testing.assert_allclose(np.asarray(f(x)), np.full(5, 32.0))
    facts = f.compiled_for(x).graph.symbol_facts
    assert facts["n"] == (8, None, 8) and facts["b"] == (None, 1000, 1)
    with pytest.raises(ValueError):
        f(np.ones((5, 12), np.float32))
    with pytest.raises(ValueError, match="need polymorphic_shapes"):
        lj.jit(lambda x: x, symbolic_constraints=("n >= 8",))


def test_torch_unbounded_dynamic_size_states_its_lower_bound_only():
    """dynamic=True without a max: the ShapeEnv range ends at infinity (no
    upper fact); its lower bound (dynamo specializes 0 and 1) is stated."""
    torch = pytest.importorskip("torch")
    import llvmaccel.torch as lt

    ex = lt.Explanation()

    def be(gm, inputs):
        return lt.backend(gm, inputs, options={"strict": True, "_explanation": ex})

    compiler.clear_memory_cache()
    torch._dynamo.reset()
    fast = torch.compile(lambda x: x.exp().sum(0), backend=be, dynamic=True)
    with torch.no_grad():
        for n in (3, 17):
            x = torch.randn(n, 5)
            torch.testing.assert_close(fast(x), x.exp().sum(0))
    facts = [f for cg in compiler._cache.values() for f in cg.graph.symbol_facts.values()]
    assert facts and all(hi is None and lo is not None for lo, hi, _ in facts)
