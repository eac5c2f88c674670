"""Temporaries sharing buffers (llvmaccel.codegen.memplan): the lifetimes it
reads off the IR, and kernels that compute the same with fewer bytes."""

from __future__ import annotations

import numpy as np
import pytest

from llvmaccel import compiler
from llvmaccel.codegen import generate, memplan
from llvmaccel.graph import DType, Graph

RNG = np.random.default_rng(0)
F32 = ((16,), DType.f32)


@pytest.fixture(autouse=True)
def _cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("LLVMACCEL_CACHE_DIR", str(tmp_path / "cache"))


def _ir(text: str) -> list[str]:
    return [ln for ln in text.strip("\n").splitlines()]


def _slots(text: str, ntemps: int, spmd: bool = False, temps=None) -> list[list[int]]:
    u = memplan.uses(_ir(text), spmd=spmd)
    return memplan.plan(temps or [F32] * ntemps, [u]).members


def test_temporaries_used_one_after_the_other_share():
    ir = """
  store float 1.0, ptr %tmp0
  br label %a
a:
  %v = load float, ptr %tmp0
  store float %v, ptr %tmp1
  br label %b
b:
  %w = load float, ptr %tmp1
  store float %w, ptr %tmp2
  br label %c
c:
  %x = load float, ptr %tmp2
  ret i32 0
"""
    # tmp0 is dead once tmp1 is written from it; tmp2 may take its place.
    assert _slots(ir, 3) == [[0, 2], [1]]


def test_a_value_read_in_a_loop_stays_live_across_it():
    ir = """
  store float 1.0, ptr %tmp0
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %loop ]
  %v = load float, ptr %tmp0
  %p = getelementptr float, ptr %tmp1, i64 %i
  store float %v, ptr %p
  %i.next = add i64 %i, 1
  %c = icmp slt i64 %i.next, 16
  br i1 %c, label %loop, label %exit
exit:
  ret i32 0
"""
    # tmp1 is first written after tmp0's last read in program order, but
    # the next iteration reads tmp0 again.
    assert _slots(ir, 2) == [[0], [1]]


def test_a_loop_body_keeps_its_temporaries_apart():
    ir = """
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %tail ]
  store float 1.0, ptr %tmp0
  %v = load float, ptr %tmp0
  br label %tail
tail:
  store float %v, ptr %tmp1
  %w = load float, ptr %tmp1
  %i.next = add i64 %i, 1
  %c = icmp slt i64 %i.next, 16
  br i1 %c, label %loop, label %exit
exit:
  ret i32 0
"""
    assert _slots(ir, 2) == [[0], [1]]


def test_pointers_derived_through_phis_count_as_accesses():
    ir = """
  %base = getelementptr float, ptr %tmp0, i64 4
  br label %a
a:
  store float 1.0, ptr %tmp1
  br label %loop
loop:
  %p = phi ptr [ %base, %a ], [ %p.next, %loop ]
  %v = load float, ptr %p
  %p.next = getelementptr float, ptr %p, i64 1
  %c = fcmp olt float %v, 1.0
  br i1 %c, label %loop, label %exit
exit:
  ret i32 0
"""
    # The loads through %p read tmp0 after tmp1 is written: they conflict.
    assert _slots(ir, 2) == [[0], [1]]


def test_assumes_are_not_accesses_and_escapes_pin():
    ir = """
  call void @llvm.assume(i1 true) [ "dereferenceable"(ptr %tmp1, i64 64) ]
  store float 1.0, ptr %tmp0
  %v = load float, ptr %tmp0
  br label %a
a:
  store float %v, ptr %tmp1
  %n = ptrtoint ptr %tmp2 to i64
  br label %b
b:
  store float %v, ptr %tmp2
  ret i32 0
"""
    assert _slots(ir, 3) == [[0, 1], [2]]


def test_sizes_known_at_run_time_share_nothing():
    ir = """
  store float 1.0, ptr %tmp0
  br label %a
a:
  store float 1.0, ptr %tmp1
  ret i32 0
"""
    from llvmaccel.graph import Sym

    assert _slots(ir, 2, temps=[((Sym("n"),), DType.f32), F32]) == [[0], [1]]
    # The largest first: a slot is as large as its largest member.
    temps = [((4,), DType.f32), ((1024,), DType.f64)]
    p = memplan.plan(temps, [memplan.uses(_ir(ir))])
    assert p.members == [[0, 1]] and memplan.slot_spec(p, 0, temps) == ((8192,), DType.u8)


def test_spmd_steps_are_the_unit_of_lifetime():
    def step(s: int, body: str) -> str:
        return f"""
  br label %claim{s}
claim{s}:
  %k{s} = call i64 @llvmaccel_parallel_claim(ptr %par.team, i64 {s}, i64 0, i64 1, i64 %par.tid)
  %c{s} = icmp sge i64 %k{s}, 0
  br i1 %c{s}, label %run{s}, label %next{s}
run{s}:
{body}
  call void @llvmaccel_parallel_done(ptr %par.team, i64 {s}, i64 0, i64 1)
  br label %claim{s}
next{s}:"""
    ir = (step(0, "  store float 1.0, ptr %tmp0")
          + step(1, "  store float 1.0, ptr %tmp1")
          + step(2, "  %v = load float, ptr %tmp0\n  %w = load float, ptr %tmp1")
          + step(3, "  store float 1.0, ptr %tmp2")
          + "\n  ret i32 0")
    assert _slots(ir, 3, spmd=True) == [[0, 2], [1]]
    # Every thread runs what lies outside the steps, unsynchronized.
    outside = ir.replace("  ret i32 0", "  store float 1.0, ptr %tmp2\n  ret i32 0")
    assert _slots(outside, 3, spmd=True) == [[0], [1], [2]]


def _chain(n: int, size: int = 48) -> Graph:
    """x @ w, tanh, @ w, tanh, ...: every product and every tanh a buffer."""
    g = Graph()
    x = g.input("x", (size, size), DType.f32)
    w = g.input("w", (size, size), DType.f32)
    y = x
    for _ in range(n):
        y = g.unary("tanh", g.matmul(y, w))
    g.set_outputs([g.reduce("sum", y, (1,))])
    return g


def test_a_chain_of_matmuls_runs_in_two_buffers():
    k = generate(_chain(4), threads=False)
    assert "%slot" in k.ir and len(k.temps) <= 3
    c = compiler.compile_graph(_chain(4))
    x = RNG.standard_normal((48, 48)).astype(np.float32)
    w = (RNG.standard_normal((48, 48)) / 7).astype(np.float32)
    y = x
    for _ in range(4):
        y = np.tanh(y.astype(np.float64) @ w)
    for _ in range(3):  # the shared buffers hold the last call's values
        np.testing.assert_allclose(c(x, w)[0], y.sum(1), rtol=1e-4, atol=1e-4)


def test_the_parallel_kernel_shares_as_its_serial_one():
    g = _chain(3, size=512)
    k = generate(g)
    if not k.parallel:
        pytest.skip("no SPMD body on this host")
    assert "%slot" in k.ir
    c = compiler.compile_graph(g)
    x = RNG.standard_normal((512, 512)).astype(np.float32)
    w = (RNG.standard_normal((512, 512)) / 23).astype(np.float32)
    y = x
    for _ in range(3):
        y = np.tanh(y.astype(np.float64) @ w)
    np.testing.assert_allclose(c(x, w)[0], y.sum(1), rtol=1e-3, atol=1e-3)


def _live_blocks_by_search(u: memplan.Uses) -> dict[int, set[int]]:
    """The definition: the blocks reachable from an access that reach one."""
    pred: list[list[int]] = [[] for _ in range(u.nblocks)]
    for b, ss in enumerate(u.succ):
        for s in ss:
            pred[s].append(b)

    def reach(start, edges):
        seen, todo = set(start), list(start)
        while todo:
            for s in edges[todo.pop()]:
                if s not in seen:
                    seen.add(s)
                    todo.append(s)
        return seen

    return {t: reach(bs, u.succ) & reach(bs, pred) for t, bs in u.blocks.items()}


@pytest.mark.parametrize("seed", range(40))
def test_liveness_by_components_is_the_search_over_blocks(seed):
    """``Uses.live`` (one pass over the condensed CFG in each direction)
    marks live exactly the blocks a search from the accesses finds, on
    random graphs with loops, nested loops, branches and unreachable
    blocks."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 40))
    succ = [sorted({int(s) for s in rng.integers(0, n, size=rng.integers(0, 3))})
            for _ in range(n)]
    for b in range(n - 1):  # mostly a chain, as the emitted nests are
        if rng.random() < 0.7:
            succ[b] = sorted(set(succ[b]) | {b + 1})
    u = memplan.Uses(nblocks=n, succ=succ)
    for t in range(int(rng.integers(1, 12))):
        u.blocks[t] = {int(b) for b in rng.integers(0, n, size=rng.integers(1, 4))}
    comp, _ = memplan._components(succ)  # noqa: SLF001
    got = {t: {b for b in range(n) if mask >> comp[b] & 1} for t, mask in u.live().items()}
    assert got == _live_blocks_by_search(u)
    for b, ss in enumerate(succ):  # numbered in topological order
        assert all(comp[s] >= comp[b] for s in ss)
