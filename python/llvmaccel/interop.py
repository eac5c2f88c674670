"""Inter-op parallel execution: a graph's independent branches as MLIR async tasks.

:func:`generate` partitions a :class:`~llvmaccel.graph.Graph` into branches
(:func:`partition`), emits each branch with the ordinary code generator as
its own LLVM function, and writes the function that runs them as an MLIR
module in the ``async`` dialect: one ``async.execute`` per branch, its
``!async.value<i32>`` the branch's return code, and each branch that reads
another's results awaiting those values. ``mlir-opt`` lowers it to calls of
MLIR's async runtime (the lowering of the notes: ``--async-to-async-runtime
--async-runtime-ref-counting --async-runtime-ref-counting-opt
--convert-async-to-llvm ...``), ``mlir-translate`` makes LLVM IR of it, and
the branch functions are linked in. The result has the sequential kernel's
signature, so :class:`~llvmaccel.compiler.CompiledGraph` calls it unchanged;
the default pipeline runs ``accel-async-fusion`` on it, which fuses chains of
branches into one task and leaves independent branches parallel, and the
JIT resolves the runtime's entry points from ``libmlir_async_runtime.so``
(loaded into the process by :func:`load_runtime`).

Partition. Inputs, constants and cheap values computed from them alone
(views, casts, scalars, iotas: *free* nodes) belong to no branch: every
branch that reads them reads or recomputes them itself. Every other node is
keyed by the pair (the nodes without computed operands it depends on, the
graph outputs it reaches); nodes of one key form a branch. Along an edge
u -> v the first set grows and the second shrinks, so branches are convex
and the branch graph is acyclic. For a DLRM, each embedding table and the
bottom MLP are a branch and the interaction with the top MLP another; for a
trunk with heads, the trunk and each head. A branch of elementwise work only
(no loop nest of its own kind: no reduction, matmul, gather of bags, ...),
whose results no output and only one other branch needs, joins that branch:
the code generator fuses such work into its consumer's loops anyway.

Errors. A branch's kernel returns its code (0, or which check failed),
renumbered into one table (:attr:`Kernel.errors`); a branch whose operands'
branches failed does not run and passes their failure on. The function
returns the first failure in the branches' topological order, so a user sees
the same exception as from the sequential kernel (with failures in several
independent branches, the first branch's).
"""

from __future__ import annotations

import ctypes
import functools
import os
import shutil
import subprocess
from dataclasses import dataclass

from . import blas
from .codegen import Kernel
from .codegen import generate as generate_sequential
from .codegen.common import _KERNELS, _VIEWS
from .errors import LLVMAccelError
from .graph import Graph, Node
from .ir import parse_ir

__all__ = ["InterOpUnavailable", "Branch", "partition", "generate", "available",
           "load_runtime", "MAX_BRANCHES", "ENV_VAR"]

#: The environment variable that turns the mode on where a frontend does not say.
ENV_VAR = "LLVMACCEL_INTER_OP"
#: Graphs that partition into more branches run sequentially.
MAX_BRANCHES = 64

_FREE_OPS = _VIEWS | {"scalar", "iota", "cast"}
_LEAVES = ("input", "constant")
_LOWERING = ("--async-to-async-runtime", "--async-runtime-ref-counting",
             "--async-runtime-ref-counting-opt", "--convert-scf-to-cf",
             "--convert-async-to-llvm", "--convert-vector-to-llvm",
             "--finalize-memref-to-llvm", "--convert-arith-to-llvm",
             "--convert-func-to-llvm", "--convert-cf-to-llvm",
             "--reconcile-unrealized-casts")


class InterOpUnavailable(LLVMAccelError):
    """The inter-op mode cannot run here (no MLIR tools of LLVM's release, or
    no MLIR async runtime library)."""


def requested(flag: bool | None) -> bool:
    """Whether the inter-op mode is on: ``flag``, or when None ``$LLVMACCEL_INTER_OP``
    (``1``/``on``/``true``; default off)."""
    if flag is not None:
        if not isinstance(flag, bool):
            raise TypeError(f"inter_op must be True, False or None, not {flag!r}")
        return flag
    value = os.environ.get(ENV_VAR, "").strip().lower()
    if value in ("", "0", "off", "false", "no"):
        return False
    if value in ("1", "on", "true", "yes"):
        return True
    raise ValueError(f"${ENV_VAR}={value!r}: expected 1/on/true or 0/off/false")


@dataclass
class Branch:
    """A part of a graph run as one task.

    Attributes:
        nodes: Ids of the graph's nodes it computes, in order.
        preds: Indices (in :func:`partition`'s list) of the branches whose
            results it reads.
    """

    nodes: list[int]
    preds: list[int]


def _free_nodes(graph: Graph) -> set[int]:
    outputs = {o.id for o in graph.outputs}
    free: set[int] = set()
    for n in graph.nodes:
        if n.op in _FREE_OPS and n.id not in outputs and \
                all(i.op in _LEAVES or i.id in free for i in n.inputs):
            free.add(n.id)
    return free


def partition(graph: Graph) -> list[Branch]:
    """The branches of ``graph`` in topological order (see the module docstring)."""
    free = _free_nodes(graph)
    outputs = {o.id for o in graph.outputs}
    # Leaves returned as outputs are copied by a branch of their own.
    work = [n for n in graph.nodes if n.id not in free and
            (n.op not in _LEAVES or n.id in outputs)]
    is_work = {n.id for n in work}

    def computed(n: Node) -> list[Node]:
        return [i for i in n.inputs if i.id in is_work and i.op not in _LEAVES]

    sources: dict[int, frozenset[int]] = {}
    for n in work:
        ins = computed(n) if n.op not in _LEAVES else []
        sources[n.id] = frozenset().union(*(sources[i.id] for i in ins)) if ins \
            else frozenset((n.id,))
    sinks: dict[int, set[int]] = {n.id: ({n.id} if n.id in outputs else set()) for n in work}
    for n in reversed(work):
        if n.op in _LEAVES:
            continue
        for i in computed(n):
            sinks[i.id] |= sinks[n.id]
    groups: dict[tuple, list[int]] = {}
    for n in work:
        if sinks[n.id]:  # nodes no output needs are not computed
            groups.setdefault((sources[n.id], frozenset(sinks[n.id])), []).append(n.id)
    members = list(groups.values())
    of = {nid: k for k, ids in enumerate(members) for nid in ids}

    def edges() -> tuple[list[set[int]], list[set[int]]]:
        preds: list[set[int]] = [set() for _ in members]
        succs: list[set[int]] = [set() for _ in members]
        for k, ids in enumerate(members):
            for nid in ids:
                if graph.nodes[nid].op in _LEAVES:
                    continue
                for i in computed(graph.nodes[nid]):
                    if of.get(i.id, k) != k:
                        preds[k].add(of[i.id])
                        succs[of[i.id]].add(k)
        return preds, succs

    # A branch without a loop nest of its own kind (elementwise work and
    # views, which the code generator fuses into their consumers' loops) whose
    # results only one branch reads joins that branch: a sum of branches is
    # one task, not a chain of joins, and a cheap computed index is not a
    # task of its own.
    preds, succs = edges()
    merged = True
    while merged:
        merged = False
        for k, ids in enumerate(members):
            if ids and len(succs[k]) == 1 and not any(nid in outputs for nid in ids) and \
                    all(graph.nodes[nid].op not in _KERNELS for nid in ids):
                (b,) = succs[k]
                members[b] = sorted(members[b] + ids)
                members[k] = []
                for nid in ids:
                    of[nid] = b
                preds, succs = edges()
                merged = True
                break
    members = [ids for ids in members if ids]
    of = {nid: k for k, ids in enumerate(members) for nid in ids}
    preds, _ = edges()
    # Topological order, earliest first node first.
    order: list[int] = []
    done: set[int] = set()
    pending = sorted(range(len(members)), key=lambda k: members[k][0])
    while pending:
        k = next(k for k in pending if preds[k] <= done)
        pending.remove(k)
        order.append(k)
        done.add(k)
    index = {k: j for j, k in enumerate(order)}
    return [Branch(members[k], sorted(index[p] for p in preds[k])) for k in order]


def parallel_pairs(branches: list[Branch]) -> int:
    """How many pairs of branches may run at the same time (neither reads
    the other's results, directly or not)."""
    ancestors: list[set[int]] = []
    for b in branches:
        a: set[int] = set(b.preds)
        for p in b.preds:
            a |= ancestors[p]
        ancestors.append(a)
    return sum(1 for j in range(len(branches)) for k in range(j)
               if k not in ancestors[j])


@dataclass
class _Part:
    """A branch as a graph of its own, and where its parameters come from."""

    graph: Graph
    kernel: Kernel
    inputs: list[tuple[str, int]]  # ("in", top input k) or ("value", node id)
    constants: list[int]  # top-level constant node ids
    outputs: list[int]  # node ids of the sub-kernel's output buffers


def _subgraph(graph: Graph, branch: Branch, free: set[int], needed: set[int]
              ) -> tuple[Graph, list[tuple[str, int]], list[int], list[int]]:
    """``branch`` as a graph: reads of other branches' values become inputs."""
    sub = Graph()
    new: dict[int, Node] = {}
    origin: list[tuple[str, int]] = []
    const_origin: dict[int, int] = {}
    top_input = {n.id: k for k, n in enumerate(graph.inputs)}
    mine = set(branch.nodes)

    def leaf(n: Node) -> Node:
        if n.id in new:
            return new[n.id]
        if n.op == "input":
            m = sub.input(n.attrs["name"], n.shape, n.dtype)
            origin.append(("in", top_input[n.id]))
        elif n.op == "constant":
            m = sub._add(Node("constant", (), n.shape, n.dtype, {}))
            sub.constants[m.id] = graph.constants[n.id]
            const_origin[m.id] = n.id
        elif n.id in free:
            m = sub._add(Node(n.op, tuple(leaf(i) for i in n.inputs), n.shape, n.dtype,
                              dict(n.attrs)))
        else:  # another branch's result
            m = sub.input(f"v{n.id}", n.shape, n.dtype)
            origin.append(("value", n.id))
        new[n.id] = m
        return m

    for nid in branch.nodes:
        n = graph.nodes[nid]
        if n.op in _LEAVES:
            new[nid] = leaf(n)
            continue
        ins = tuple(new[i.id] if i.id in mine else leaf(i) for i in n.inputs)
        new[nid] = sub._add(Node(n.op, ins, n.shape, n.dtype, dict(n.attrs)))
    outs = [nid for nid in branch.nodes if nid in needed]
    sub.set_outputs([new[nid] for nid in outs])
    used = set(sub.symbols())
    sub.symbol_facts = {s: f for s, f in graph.symbol_facts.items() if s in used}
    sub.sources = list(graph.sources)
    return sub, origin, [const_origin[c] for c in sorted(sub.constants)], outs


def _parts(graph: Graph, branches: list[Branch], name: str) -> list[_Part]:
    free = _free_nodes(graph)
    of = {nid: k for k, b in enumerate(branches) for nid in b.nodes}
    needed = {o.id for o in graph.outputs}
    for n in graph.nodes:
        if n.id in of and graph.nodes[n.id].op not in _LEAVES:
            for i in n.inputs:
                if i.id in of and of[i.id] != of[n.id]:
                    needed.add(i.id)
    parts = []
    for k, b in enumerate(branches):
        sub, origin, consts, outs = _subgraph(graph, b, free, needed)
        # Single-threaded: the branches, run as tasks, are the parallelism
        # here (no intra-op pool inside the async runtime's tasks).
        kernel = generate_sequential(sub, name=f"{name}.branch{k}", threads=False)
        if kernel.output_map != list(range(len(outs))):
            raise AssertionError("a branch's outputs are distinct nodes")
        parts.append(_Part(sub, kernel, origin, consts, outs))
    return parts


@functools.cache
def _mlir_tools(major: int) -> tuple[str, str] | None:
    """mlir-opt and mlir-translate of LLVM release ``major`` (their IR must
    parse in this LLVM)."""
    found = []
    for tool in ("mlir-opt", "mlir-translate"):
        path = f"/usr/lib/llvm-{major}/bin/{tool}"
        if not os.access(path, os.X_OK):
            path = shutil.which(f"{tool}-{major}") or ""
        if not path:
            return None
        found.append(path)
    return found[0], found[1]


@functools.cache
def _runtime_path(major: int) -> str | None:
    """libmlir_async_runtime.so: of this release, else of another installed
    one (its C entry points are the same)."""
    override = os.environ.get("LLVMACCEL_MLIR_ASYNC_RUNTIME")
    if override:
        return override if os.path.exists(override) else None
    for v in [major, *range(30, 14, -1)]:
        path = f"/usr/lib/llvm-{v}/lib/libmlir_async_runtime.so"
        for candidate in (path, path + f".{v}", path + f".{v}.1"):
            if os.path.exists(candidate):
                return candidate
    return None


def _major() -> int:
    from .pipeline import llvm_version

    return int(llvm_version().split(".")[0])


def available() -> str | None:
    """None when the mode can run here, else why not."""
    major = _major()
    if _mlir_tools(major) is None:
        return (f"the inter-op mode needs mlir-opt and mlir-translate of LLVM {major} "
                f"(Debian's mlir-{major}-tools)")
    if _runtime_path(major) is None:
        return ("the inter-op mode needs MLIR's async runtime, libmlir_async_runtime.so "
                f"(Debian's libmlir-{major}-dev, or $LLVMACCEL_MLIR_ASYNC_RUNTIME)")
    return None


_runtime: ctypes.CDLL | None = None


def load_runtime() -> str:
    """Loads libmlir_async_runtime.so into the process (once) with its
    symbols global, so the JIT resolves the runtime's entry points; returns
    its path. Raises :class:`InterOpUnavailable` when it cannot."""
    global _runtime
    path = _runtime_path(_major())
    if path is None:
        raise InterOpUnavailable(available() or "no MLIR async runtime")
    if _runtime is None:
        try:
            _runtime = ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
        except OSError as e:
            raise InterOpUnavailable(f"cannot load {path}: {e}") from e
    return path


def _mlir(name: str, kernel_params: list[str], parts: list[_Part], branches: list[Branch],
          calls: list[list[str]], bases: list[int]) -> str:
    """The MLIR module of the function running the branches as tasks.

    Each task's ``!async.value<i32>`` is the first failure of the branches
    up to it, as an unsigned ``code - 1`` (no failure: ``0xffffffff``): the
    codes grow with the branches' order, so the first failure is the
    unsigned minimum. A task whose operands failed passes the failure on
    without running its kernel; the function awaits the tasks nobody else
    reads (so a chain of tasks is a chain the pass can fuse) and returns the
    minimum plus one.
    """
    lines = []
    for p in parts:
        types = ["!llvm.ptr"] * (len(p.kernel.inputs) + len(p.kernel.constants) +
                                 len(p.kernel.outputs) + len(p.kernel.temps)) + \
            ["i64"] * len(p.kernel.symbols)
        lines.append(f'  func.func private @"{p.kernel.name}"({", ".join(types)}) -> i32')
    # A branch that calls the library GEMM runs it on its own thread only: the
    # branches are the parallelism, and a library team per task thread would
    # put several times as many threads as cores on the machine.
    local = blas.thread_local_setter() if any(p.kernel.uses_blas for p in parts) else None
    if local:
        lines.append(f"  func.func private @{local}(i32) -> i32")
    lines.append(f'  func.func @"{name}"({", ".join(kernel_params)}) -> i32 {{')
    lines.append("    %none = arith.constant -1 : i32")
    lines.append("    %one = arith.constant 1 : i32")
    read = {j for b in branches for j in b.preds}
    for k, (p, b) in enumerate(zip(parts, branches, strict=True)):
        types = ["!llvm.ptr"] * (len(calls[k]) - len(p.kernel.symbols)) + \
            ["i64"] * len(p.kernel.symbols)
        call = (f'func.call @"{p.kernel.name}"({", ".join(calls[k])}) : '
                f'({", ".join(types)}) -> i32')
        run = [f"%rc = {call}"]
        if local and p.kernel.uses_blas:
            run = ["%one_thread = arith.constant 1 : i32",
                   f"%threads = func.call @{local}(%one_thread) : (i32) -> i32",
                   *run,
                   f"%was = func.call @{local}(%threads) : (i32) -> i32"]
        run += ["%c0 = arith.constant 0 : i32",
                "%ok = arith.cmpi eq, %rc, %c0 : i32",
                f"%base = arith.constant {bases[k] - 1} : i32",
                "%code = arith.addi %rc, %base : i32",
                "%mine = arith.select %ok, %none, %code : i32"]
        operands = ", ".join(f"%v{j} as %r{k}_{j} : !async.value<i32>" for j in b.preds)
        # The tokens too: a token nobody takes would be dropped by the caller,
        # which makes the task's results used twice (not a chain).
        tokens = ", ".join(f"%t{j}" for j in b.preds)
        head = f" [{tokens}] ({operands})" if operands else ""
        lines.append(f"    %t{k}, %v{k} = async.execute{head} -> !async.value<i32> {{")
        if not b.preds:
            lines += [f"      {op}" for op in run]
            lines.append("      async.yield %mine : i32")
        else:  # run only if the branches it reads succeeded
            acc = "%none"
            for j in b.preds:
                lines.append(f"      %min{j} = arith.minui {acc}, %r{k}_{j} : i32")
                acc = f"%min{j}"
            lines.append(f"      %fine = arith.cmpi eq, {acc}, %none : i32")
            lines.append("      %out = scf.if %fine -> i32 {")
            lines += [f"        {op}" for op in run]
            lines.append("        scf.yield %mine : i32")
            lines.append("      } else {")
            lines.append(f"        scf.yield {acc} : i32")
            lines.append("      }")
            lines.append("      async.yield %out : i32")
        lines.append("    }")
    acc = "%none"
    for k in range(len(parts)):
        if k not in read:
            lines.append(f"    %a{k} = async.await %v{k} : !async.value<i32>")
            lines.append(f"    %m{k} = arith.minui {acc}, %a{k} : i32")
            acc = f"%m{k}"
    lines.append(f"    %result = arith.addi {acc}, %one : i32")
    lines.append("    return %result : i32")
    lines.append("  }")
    return "module {\n" + "\n".join(lines) + "\n}\n"


def _lower(mlir: str) -> str:
    tools = _mlir_tools(_major())
    if tools is None:
        raise InterOpUnavailable(available() or "no MLIR tools")
    opt, translate = tools
    try:
        lowered = subprocess.run([opt, *_LOWERING], input=mlir, capture_output=True,
                                 text=True, check=True, timeout=300).stdout
        return subprocess.run([translate, "--mlir-to-llvmir"], input=lowered,
                              capture_output=True, text=True, check=True,
                              timeout=300).stdout
    except subprocess.CalledProcessError as e:
        raise LLVMAccelError(f"{e.cmd[0]} failed on the inter-op module: "
                             f"{e.stderr.strip()[:2000]}") from e
    except (OSError, subprocess.TimeoutExpired) as e:
        raise InterOpUnavailable(f"cannot run the MLIR tools: {e}") from e


def generate(graph: Graph, name: str = "llvmaccel_main") -> tuple[Kernel, list[Branch]] | None:
    """The inter-op kernel of ``graph`` (IR with the sequential kernel's
    signature and error table) and its branches, or None when no two
    branches could run at the same time (or there are more than
    :data:`MAX_BRANCHES`). Raises :class:`InterOpUnavailable` without the
    MLIR tools."""
    branches = partition(graph)
    if len(branches) > MAX_BRANCHES or parallel_pairs(branches) == 0:
        return None
    if (why := available()) is not None:
        raise InterOpUnavailable(why)
    parts = _parts(graph, branches, name)

    # The top-level signature: the sequential kernel's.
    kinputs = [n.id for n in graph.inputs]
    kconsts = sorted(graph.constants)
    out_index: dict[int, int] = {}
    outputs: list[tuple] = []
    output_map: list[int] = []
    for o in graph.outputs:
        if o.id not in out_index:
            out_index[o.id] = len(outputs)
            outputs.append((o.shape, o.dtype))
        output_map.append(out_index[o.id])
    temps: list[tuple] = []
    value_ptr: dict[int, str] = {}
    for p in parts:
        for nid in p.outputs:
            if nid in out_index:
                value_ptr[nid] = f"%out{out_index[nid]}"
            else:
                n = graph.nodes[nid]
                value_ptr[nid] = f"%tmp{len(temps)}"
                temps.append((n.shape, n.dtype))
    symbols = graph.symbols()
    calls: list[list[str]] = []
    for p in parts:
        args = [f"%in{ref}" if kind == "in" else value_ptr[ref] for kind, ref in p.inputs]
        args += [f"%const{c}" for c in p.constants]
        args += [value_ptr[nid] for nid in p.outputs]
        for shape_dtype in p.kernel.temps:
            args.append(f"%tmp{len(temps)}")
            temps.append(shape_dtype)
        args += [f"%sym{symbols.index(s)}" for s in p.kernel.symbols]
        calls.append(args)
    params = [f"%in{k}: !llvm.ptr" for k in range(len(kinputs))]
    params += [f"%const{c}: !llvm.ptr" for c in kconsts]
    params += [f"%out{k}: !llvm.ptr" for k in range(len(outputs))]
    params += [f"%tmp{k}: !llvm.ptr" for k in range(len(temps))]
    params += [f"%sym{k}: i64" for k in range(len(symbols))]
    errors: dict[int, tuple[str, str]] = {}
    bases = []
    for p in parts:
        base = max(errors, default=0)
        bases.append(base)
        for code, what in p.kernel.errors.items():
            errors[base + code] = what
    module = parse_ir(_lower(_mlir(name, params, parts, branches, calls, bases)),
                      name="llvmaccel-inter-op")
    for p in parts:
        module.link(parse_ir(p.kernel.ir, name=p.kernel.name))
    links = sorted({link for p in parts for link in p.kernel.links})
    kernel = Kernel(ir=str(module), name=name, inputs=kinputs, constants=kconsts,
                    outputs=outputs, temps=temps, symbols=symbols, errors=errors,
                    output_map=output_map, links=links,
                    uses_blas=any(p.kernel.uses_blas for p in parts))
    return kernel, branches
