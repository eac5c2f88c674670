"""Random task programs for accel-async-fusion: MLIR async graphs and GPU launch loops.

Written the way their real producers write them, then lowered by the real tools:

* ``async-*`` shapes are MLIR ``async`` programs (``async.execute`` chains of
  random length, tasks with ``!async.value`` results, fan-out/fan-in,
  ``async.create_group``/``add_to_group``/``await_all``, tasks that fail an
  ``cf.assert`` so that their token (and every dependent's) is an error, and
  loops of tasks), lowered by ``mlir-opt``/``mlir-translate`` of llvmaccel's
  LLVM release with the recipe of the pass's lit tests. ``@kernel(ptr %m,
  i32 %fail)`` calls the graph on a ``memref`` over ``%m``, awaits what it
  returns and returns its error state; task ``K`` fails when ``%fail == K``.
  Every task writes its own slots of ``%m`` and reads only the input slots and
  slots of tasks it (transitively) waits for, so results are deterministic.
  They run against the real ``libmlir_async_runtime.so``; coroutines are split
  by ``COROUTINE_LOWERING`` before the JIT compiles them.
* ``launch-cuda``/``launch-hip``/``launch-ze`` shapes are host loops of GPU
  kernel launches (CUDA and HIP ``<<<...>>>`` launches compiled by clang as
  host code, Level Zero command lists in C), compiled with ``-O2`` (the pass
  recognizes launches once the device stubs are inlined) and run against the
  recording runtime of :func:`recorder_library`: every kernel that runs
  (directly or replayed from a graph or a command list) is appended to the
  ``%log`` buffer with its configuration and argument bytes (pointers as
  offsets into the named buffers), so that the kernels run before and after
  the pass compare bit for bit.

Requires the release's ``mlir-opt``/``mlir-translate`` (``async-*``) and
``clang`` (``launch-*``); :func:`available` says which shapes can be made here.
"""

from __future__ import annotations

import functools
import hashlib
import os
import random
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field

from .inputs import ArgSpec

__all__ = ["ASYNC_SHAPES", "LAUNCH_SHAPES", "COROUTINE_LOWERING", "AsyncDraft", "available",
           "async_runtime_library", "draft_async", "generate_async", "generate_launch",
           "lower_mlir", "lower_mlir_many", "recorder_library"]

ASYNC_SHAPES = ("async-chain", "async-dag", "async-group", "async-loop")
LAUNCH_SHAPES = ("launch-cuda", "launch-hip", "launch-ze")

#: The pipeline both versions of an async kernel go through before the JIT
#: (coroutine splitting: the pass runs before it, as in the default pipelines).
COROUTINE_LOWERING = "coro-early,cgscc(coro-split),coro-cleanup,globaldce"

#: The lowering of MLIR's async dialect to LLVM IR (the pass's lit tests'
#: ``%mlir-async-lower``: shared/notes/llvm-versions.md with scf for loops).
MLIR_ASYNC_LOWERING = (
    "--async-to-async-runtime", "--async-runtime-ref-counting",
    "--async-runtime-ref-counting-opt", "--convert-scf-to-cf", "--convert-async-to-llvm",
    "--convert-vector-to-llvm", "--finalize-memref-to-llvm", "--convert-arith-to-llvm",
    "--convert-func-to-llvm", "--convert-cf-to-llvm", "--reconcile-unrealized-casts")

LOG_BYTES = 8192


@dataclass
class TaskProgram:
    """What a generator made before lowering (the source and its inputs)."""

    source: str
    args: dict[str, ArgSpec]
    features: list[str] = field(default_factory=list)


def _tool(name: str) -> str | None:
    from .reduce import find_llvm_tool
    try:
        return find_llvm_tool(name)
    except FileNotFoundError:
        return None


def _llvm_major() -> str:
    from .pipeline import llvm_version
    return llvm_version().split(".")[0]


@functools.cache
def _clang() -> str | None:
    major = _llvm_major()
    for c in (f"/usr/lib/llvm-{major}/bin/clang", shutil.which(f"clang-{major}")):
        if c and os.access(c, os.X_OK):
            return c
    return None


@functools.cache
def available() -> tuple[str, ...]:
    """The shapes of this module that the installed tools can make."""
    out: list[str] = []
    if _tool("mlir-opt") and _tool("mlir-translate") and async_runtime_library():
        out += ASYNC_SHAPES
    if _clang():
        out += LAUNCH_SHAPES
    return tuple(out)


@functools.cache
def async_runtime_library() -> str | None:
    """``libmlir_async_runtime.so`` of llvmaccel's LLVM release (or any installed one:
    its C entry points are the same), or None."""
    dirs = [f"/usr/lib/llvm-{_llvm_major()}/lib"] + [f"/usr/lib/llvm-{v}/lib"
                                                     for v in range(30, 18, -1)]
    for d in dirs:
        if os.path.isdir(d):
            names = sorted(n for n in os.listdir(d) if n.startswith("libmlir_async_runtime.so"))
            if names:
                return os.path.join(d, names[0])
    return None


@functools.cache
def recorder_library() -> str:
    """The recording GPU runtime (``runtime/gpu_recorder.c``: CUDA, HIP and Level
    Zero entry points) built once with clang into a cache directory.

    Raises:
        FileNotFoundError: no clang of llvmaccel's release.
    """
    src = os.path.join(os.path.dirname(__file__), "runtime", "gpu_recorder.c")
    with open(src, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()[:16]
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    out_dir = os.path.join(cache, "llvmaccel")
    out = os.path.join(out_dir, f"gpu_recorder-{digest}.so")
    if os.path.exists(out):
        return out
    clang = _clang()
    if clang is None:
        raise FileNotFoundError(f"clang-{_llvm_major()} not found (apt-get install clang-"
                                f"{_llvm_major()})")
    os.makedirs(out_dir, exist_ok=True)
    tmp = f"{out}.{os.getpid()}.tmp"
    subprocess.run([clang, "-O1", "-shared", "-fPIC", "-w", src, "-o", tmp], check=True,
                   capture_output=True)
    os.replace(tmp, out)
    return out


# --------------------------------------------------------------------------
# MLIR async graphs


@dataclass
class _Task:
    index: int
    name: str                     # its token
    value: str | None = None      # its !async.value<i32>, if any
    fails: bool = False           # asserts %fail != index
    may_error: bool = False       # it or something it waits for can fail
    closure: set[int] = field(default_factory=set)   # tasks it waits for, transitively
    slots: list[int] = field(default_factory=list)   # slots it writes


def _operands_in_order(deps: list[_Task], values: list[_Task]
                       ) -> tuple[list[_Task], list[_Task]]:
    """The operands a task waits for, in an order MLIR's lowering and runtime
    run without a race, a use after free or a deadlock.

    The lowering of ``async.execute`` awaits the tokens, then the values, one
    after the other, and stops at the first operand in error, setting the
    task's token in error:

    * The operands it had not awaited yet may still be running then, and a
      caller waiting for that token would return before them (a race with
      the comparison of the results). So of several operands at most one
      task's may be in error, and it is awaited last.
    * When that first operand is the first of several, the token is dropped
      twice. So the first operand is error-free.
    * ``async-runtime-ref-counting`` drops the task's token once more on the
      error edges of a task with a value operand when its error block has
      more than one predecessor (LLVM 19 and 22): the token is freed while
      its caller holds it. So a task with a value operand in error has no
      other operand (and does not fail itself, see :meth:`_AsyncGen.add_task`),
      and one with values that cannot fail awaits no token in error.
    * MLIR's reference runtime resumes the awaiters of a token or value on
      the thread that sets it, holding that object's lock: a task resumed
      there (from an operand that depends on the object) that then awaits
      the object itself waits for a lock its own thread holds, for ever. So
      no operand is awaited after an operand that (transitively) waits for
      it: tokens and values each in the order they were made, and no token
      that waits for one of the values.

    Operands left out are waited for by the group that joins the tasks the
    returned token does not cover (:meth:`_AsyncGen.build`).
    """
    values = sorted(values, key=lambda v: v.index)
    deps = sorted((d for d in deps if not any(v.index in d.closure for v in values)),
                  key=lambda d: d.index)
    risky = [d for d in deps + values if d.may_error]
    if len(deps) + len(values) < 2 or not risky:
        return deps, values
    clean_deps = [d for d in deps if not d.may_error]
    if values:
        risky_values = [v for v in values if v.may_error]
        return ([], risky_values[-1:]) if risky_values else (clean_deps, values)
    if not clean_deps:  # one operand: no error-free first
        return risky[-1:], []
    return clean_deps + risky[-1:], []


class _AsyncGen:
    def __init__(self, rng: random.Random, shape: str) -> None:
        self.rng = rng
        self.shape = shape
        self.inputs = rng.choice([2, 4, 8])
        self.slots = self.inputs
        self.tasks: list[_Task] = []
        self.body: list[str] = []
        self.n = 0
        self.fail_ids = 0
        self.features: list[str] = []
        self.consts: set[int] = {0, 1}
        self.awaited: set[int] = set()

    def tmp(self, stem: str) -> str:
        self.n += 1
        return f"%{stem}{self.n}"

    def slot(self) -> int:
        self.slots += 1
        return self.slots - 1

    def c(self, k: int) -> str:
        self.consts.add(k)
        return f"%c{k}"

    def feature(self, name: str) -> None:
        if name not in self.features:
            self.features.append(name)

    # A task body: loads from readable slots, arithmetic, maybe a loop of
    # work, a store to its own slot, maybe a failing assert (before or after
    # the store), and maybe a yielded value.
    def task_code(self, readable: list[int], values: list[str], out_slot: int,
                  fail_id: int | None, yields: bool, ind: str,
                  extra: list[str] | None = None) -> list[str]:
        rng = self.rng
        lines: list[str] = []
        terms: list[str] = []
        for s in rng.sample(readable, min(len(readable), rng.choice([1, 1, 2, 3]))):
            v = self.tmp("x")
            lines.append(f"{v} = memref.load %m[{self.c(s)}] : memref<?xi32>")
            terms.append(v)
        terms += values
        terms += extra or []
        if not terms:
            k = self.tmp("k")
            lines.append(f"{k} = arith.constant {rng.randint(-9, 99)} : i32")
            terms.append(k)
        acc = terms[0]
        for t in terms[1:]:
            d = self.tmp("y")
            op = rng.choice(["addi", "muli", "xori", "subi"])
            lines.append(f"{d} = arith.{op} {acc}, {t} : i32")
            acc = d
        k = self.tmp("k")
        lines.append(f"{k} = arith.constant {rng.randint(1, 9)} : i32")
        d = self.tmp("y")
        lines.append(f"{d} = arith.{rng.choice(['addi', 'muli'])} {acc}, {k} : i32")
        acc = d
        if rng.random() < 0.3:  # a loop of work, its trip count from the data
            self.feature("work-loop")
            mask = rng.choice([7, 63, 4095, 262143])
            mk, b, nb, r, ii, a1, a2 = (self.tmp(s) for s in ("mk", "b", "nb", "r", "i", "a", "a"))
            it = self.tmp("it")
            acc2 = self.tmp("acc")
            lines += [f"{mk} = arith.constant {mask} : i32",
                      f"{b} = arith.andi {acc}, {mk} : i32",
                      f"{nb} = arith.index_cast {b} : i32 to index",
                      f"{r} = scf.for {it} = %c0 to {nb} step %c1 iter_args({acc2} = {acc}) "
                      "-> i32 {",
                      f"  {ii} = arith.index_cast {it} : index to i32",
                      f"  {a1} = arith.{rng.choice(['addi', 'xori'])} {acc2}, {ii} : i32",
                      f"  {a2} = arith.muli {a1}, {k} : i32",
                      f"  scf.yield {a2} : i32", "}"]
            acc = r
        store = f"memref.store {acc}, %m[{self.c(out_slot)}] : memref<?xi32>"
        check: list[str] = []
        if fail_id is not None:
            fk, ok = self.tmp("fk"), self.tmp("ok")
            check = [f"{fk} = arith.constant {fail_id} : i32",
                     f"{ok} = arith.cmpi ne, %fail, {fk} : i32",
                     f'cf.assert {ok}, "task {fail_id} failed"']
        if check and rng.random() < 0.5:
            lines += check + [store]
        else:
            lines += [store] + check
        lines.append(f"async.yield {acc} : i32" if yields else "async.yield")
        return [ind + line for line in lines]

    def readable(self, deps: list[_Task]) -> list[int]:
        out = list(range(self.inputs))
        for d in deps:
            for t in d.closure | {d.index}:
                out += self.tasks[t].slots
        return sorted(set(out))

    def add_task(self, deps: list[_Task], value_deps: list[_Task], *, fallible: bool,
                 yields: bool, ind: str = "  ") -> _Task:
        """Appends ``async.execute [deps] (values)`` to the body."""
        rng = self.rng
        deps, value_deps = _operands_in_order(deps, value_deps)
        t = _Task(len(self.tasks), self.tmp("t"))
        fail_id = None
        # A task with a value operand does not fail itself: its error block
        # would have two predecessors, which MLIR's ref counting gets wrong
        # (see _operands_in_order).
        if fallible and rng.random() < 0.4 and not value_deps:
            t.fails, fail_id = True, t.index
            self.feature("error-path")
        t.may_error = t.fails or any(d.may_error for d in deps + value_deps)
        for d in deps + value_deps:
            t.closure |= d.closure | {d.index}
        t.slots = [self.slot()]
        head = f"{ind}{t.name}"
        vnames = []
        if yields:
            t.value = self.tmp("v")
            head += f", {t.value}"
            self.feature("value")
        head += " = async.execute"
        if deps:
            head += " [" + ", ".join(d.name for d in deps) + "]"
        if value_deps:
            parts = []
            for v in value_deps:
                a = self.tmp("a")
                vnames.append(a)
                parts.append(f"{v.value} as {a}: !async.value<i32>")
            head += " (" + ", ".join(parts) + ")"
        head += " -> !async.value<i32> {" if yields else " {"
        self.tasks.append(t)
        code = self.task_code(self.readable(deps + value_deps), vnames, t.slots[0], fail_id,
                              yields, ind + "  ")
        self.body += [head, *code, ind + "}"]
        return t

    def chain(self, length: int, first_deps: list[_Task], fallible: bool,
              ind: str = "  ") -> list[_Task]:
        out: list[_Task] = []
        prev = first_deps
        for _ in range(length):
            yields = self.rng.random() < 0.3
            use_value = bool(prev) and prev[-1].value is not None and self.rng.random() < 0.6
            vd = [prev[-1]] if use_value else []
            td = [] if use_value and self.rng.random() < 0.5 else prev
            t = self.add_task(td, vd, fallible=fallible, yields=yields, ind=ind)
            out.append(t)
            prev = [t]
        return out

    def await_clean(self, t: _Task) -> None:
        """The caller waits for an error-free token (await of an error aborts)."""
        if t.may_error:
            return
        self.feature("caller-await")
        self.awaited |= t.closure | {t.index}
        if t.value is not None and self.rng.random() < 0.5:
            r = self.tmp("r")
            s = self.slot()
            self.body += [f"  {r} = async.await {t.value} : !async.value<i32>",
                          f"  memref.store {r}, %m[{self.c(s)}] : memref<?xi32>"]
        else:
            self.body.append(f"  async.await {t.name} : !async.token")

    def group(self, members: int, fallible: bool) -> str:
        """A group of independent tasks (some in an scf.for), returns its name."""
        self.feature("group")
        g = self.tmp("g")
        in_loop = self.rng.random() < 0.5
        self.body.append(f"  {g} = async.create_group {self.c(members)} : !async.group")
        if in_loop:  # like the producers of async.parallel_for: one task per iteration
            self.feature("group-loop")
            base = self.slots
            self.slots += members
            it, t, q = self.tmp("gi"), self.tmp("gt"), self.tmp("q")
            self.body.append(f"  scf.for {it} = %c0 to {self.c(members)} step %c1 {{")
            self.body.append(f"    {t} = async.execute {{")
            ii, k, o, v, y = (self.tmp(s) for s in ("ii", "k", "o", "v", "y"))
            src = self.rng.randrange(self.inputs)
            lines = [f"{ii} = arith.index_cast {it} : index to i32",
                     f"{v} = memref.load %m[{self.c(src)}] : memref<?xi32>",
                     f"{y} = arith.{self.rng.choice(['addi', 'muli', 'xori'])} {v}, {ii} : i32",
                     f"{k} = arith.addi {it}, {self.c(base)} : index"]
            if fallible and self.rng.random() < 0.5:
                fk, ok, fi = self.tmp("fk"), self.tmp("ok"), self.tmp("fi")
                first = len(self.tasks) + self.fail_ids
                lines += [f"{fk} = arith.constant {first} : i32",
                          f"{fi} = arith.addi {ii}, {fk} : i32",
                          f"{ok} = arith.cmpi ne, %fail, {fi} : i32",
                          f'cf.assert {ok}, "group task failed"']
                self.fail_ids += members
                self.feature("error-path")
            lines += [f"memref.store {y}, %m[{k}] : memref<?xi32>", "async.yield"]
            self.body += ["      " + x for x in lines]
            self.body += ["    }", f"    {q} = async.add_to_group {t}, {g} : !async.token",
                          "  }"]
            del o
        else:
            for _ in range(members):
                t = self.add_task([], [], fallible=fallible, yields=False)
                q = self.tmp("q")
                self.body.append(f"  {q} = async.add_to_group {t.name}, {g} : !async.token")
        return g

    def task_loop(self) -> None:
        """A loop whose iterations each run a short chain of tasks and wait for it
        (the chain updates one slot, serialized by the dependencies)."""
        self.feature("task-loop")
        iters = self.rng.choice([0, 1, 3, 10])
        acc_slot = self.slot()
        it = self.tmp("li")
        self.body.append(f"  scf.for {it} = %c0 to {self.c(iters)} step %c1 {{")
        prev = None
        for _ in range(self.rng.choice([1, 2, 3])):
            t = self.tmp("lt")
            head = f"    {t} = async.execute" + (f" [{prev}]" if prev else "") + " {"
            x, ii, y = self.tmp("x"), self.tmp("ii"), self.tmp("y")
            op = self.rng.choice(["addi", "xori", "muli"])
            self.body += [head,
                          f"      {x} = memref.load %m[{self.c(acc_slot)}] : memref<?xi32>",
                          f"      {ii} = arith.index_cast {it} : index to i32",
                          f"      {y} = arith.{op} {x}, {ii} : i32",
                          f"      memref.store {y}, %m[{self.c(acc_slot)}] : memref<?xi32>",
                          "      async.yield", "    }"]
            prev = t
        self.body += [f"    async.await {prev} : !async.token", "  }"]

    def build(self) -> tuple[str, str, bool]:
        """The graph's function text, the name of what it returns and whether
        that is a group."""
        rng = self.rng
        shape = self.shape
        ret: str
        is_group = False
        if shape == "async-chain":
            self.feature("chain")
            head = self.chain(rng.choice([1, 2, 3, 4, 6, 9]), [], True)
            if rng.random() < 0.3:  # a second chain hanging off the first's head
                other = self.chain(rng.choice([1, 2, 3]), [head[0]], True)
                self.await_clean(other[-1])
            ret_task = head[-1]
        elif shape == "async-dag":
            self.feature("fan-out/fan-in")
            roots = [self.add_task([], [], fallible=True, yields=rng.random() < 0.4)
                     for _ in range(rng.choice([1, 2]))]
            mids: list[_Task] = []
            for _ in range(rng.choice([2, 3, 4])):  # fan-out, some with chains
                src = rng.choice(roots)
                use_v = src.value is not None and rng.random() < 0.5
                t = self.add_task([] if use_v else [src], [src] if use_v else [],
                                  fallible=True, yields=rng.random() < 0.4)
                mids += [t] + (self.chain(rng.choice([1, 2]), [t], True)
                               if rng.random() < 0.4 else [])
            if rng.random() < 0.3:
                self.await_clean(rng.choice(mids))
            ends = rng.sample(mids, min(len(mids), rng.choice([2, 3])))
            vds = [e for e in ends if e.value is not None][:1]
            ret_task = self.add_task([e for e in ends if e not in vds], vds, fallible=True,
                                     yields=False)
        elif shape == "async-group":
            g = self.group(rng.choice([1, 2, 4, 8]), True)
            ret_task = None
            if rng.random() < 0.5:
                ret, is_group = g, True
            else:  # a task waits for the group (its error becomes the task's)
                self.feature("await_all in a task")
                t = _Task(len(self.tasks), self.tmp("t"))
                t.closure = {x.index for x in self.tasks}
                self.tasks.append(t)
                self.body += [f"  {t.name} = async.execute {{", f"    async.await_all {g}",
                              "    async.yield", "  }"]
                ret_task = t
        else:  # async-loop
            self.task_loop()
            tail = self.chain(rng.choice([1, 2, 3]), [], True)
            if rng.random() < 0.3:
                self.task_loop()
            ret_task = tail[-1]
        if ret_task is not None:
            ret = ret_task.name
            # Every task must be waited for by the caller (a task still
            # running when the kernel returns would race with the comparison):
            # those the returned token does not cover join a group with it.
            covered = ret_task.closure | {ret_task.index} | self.awaited
            rest = [t for t in self.tasks if t.index not in covered]
            if rest:
                self.feature("joined by a group")
                g = self.tmp("gj")
                members = [ret_task, *rest]
                self.body.append(f"  {g} = async.create_group {self.c(len(members))} "
                                 ": !async.group")
                for t in members:
                    self.body.append(f"  {self.tmp('q')} = async.add_to_group {t.name}, {g} "
                                     ": !async.token")
                ret, is_group = g, True
        rty = "!async.group" if is_group else "!async.token"
        consts = "".join(f"  %c{k} = arith.constant {k} : index\n" for k in sorted(self.consts))
        text = ("func.func @graph(%m: memref<?xi32>, %fail: i32) -> " + rty + " {\n" + consts
                + "\n".join(self.body) + f"\n  return {ret} : {rty}\n}}\n")
        return text, ret, is_group


def _wrapper(ir: str, is_group: bool, slots: int) -> str:
    """``@kernel(ptr %m, i32 %fail)``: runs the lowered graph on a memref of
    ``slots`` i32 over ``%m``, awaits it and returns its error state."""
    wait = "AwaitAllInGroup" if is_group else "AwaitToken"
    err = "IsGroupError" if is_group else "IsTokenError"
    needed = {f"mlirAsyncRuntime{wait}": f"declare void @mlirAsyncRuntime{wait}(ptr)",
              f"mlirAsyncRuntime{err}": f"declare i1 @mlirAsyncRuntime{err}(ptr)",
              "mlirAsyncRuntimeDropRef": "declare void @mlirAsyncRuntimeDropRef(ptr, i64)"}
    decls = "".join(d + "\n" for name, d in needed.items() if f"@{name}(" not in ir)
    return ir + f"""
define i32 @kernel(ptr %m, i32 %fail) {{
entry:
  %h = call ptr @graph(ptr %m, ptr %m, i64 0, i64 {slots}, i64 1, i32 %fail)
  call void @mlirAsyncRuntime{wait}(ptr %h)
  %e = call i1 @mlirAsyncRuntime{err}(ptr %h)
  call void @mlirAsyncRuntimeDropRef(ptr %h, i64 1)
  %r = zext i1 %e to i32
  ret i32 %r
}}
{decls}"""


def _mlir_tools() -> tuple[str, str]:
    mlir_opt, translate = _tool("mlir-opt"), _tool("mlir-translate")
    if not mlir_opt or not translate:
        raise FileNotFoundError(f"mlir-opt/mlir-translate not found: apt-get install "
                                f"mlir-{_llvm_major()}-tools")
    return mlir_opt, translate


def lower_mlir(text: str) -> str:
    """LLVM IR of an MLIR async program (mlir-opt and mlir-translate of this release).

    Raises:
        FileNotFoundError: the MLIR tools are not installed.
        RuntimeError: they reject the program.
    """
    mlir_opt, translate = _mlir_tools()
    low = subprocess.run([mlir_opt, *MLIR_ASYNC_LOWERING], input=text, capture_output=True,
                         text=True, timeout=120)
    if low.returncode:
        raise RuntimeError("mlir-opt rejected the program:\n" + low.stderr[-3000:])
    out = subprocess.run([translate, "--mlir-to-llvmir"], input=low.stdout, capture_output=True,
                         text=True, timeout=120)
    if out.returncode:
        raise RuntimeError("mlir-translate rejected the program:\n" + out.stderr[-3000:])
    return out.stdout


#: Between the programs of one run of the MLIR tools (``--split-input-file``).
_SPLIT = "// -----"
_LLVM_SPLIT = "; ----- llvmaccel split -----"


def lower_mlir_many(texts: list[str]) -> list[str | RuntimeError]:
    """:func:`lower_mlir` of each program, all in one run of each tool.

    The tools' ``--split-input-file`` lowers each program alone, as its own
    module: the same IR as one run per program without starting the tools
    (and registering MLIR's dialects) once per program. When a tool rejects
    one of them, each program is lowered alone, so that the error is its own.

    Returns:
        Per program, its LLVM IR or the :class:`RuntimeError` of a rejection.

    Raises:
        FileNotFoundError: the MLIR tools are not installed.
    """
    if len(texts) < 2 or any(_SPLIT in t for t in texts):
        return [_lowered(t) for t in texts]
    mlir_opt, translate = _mlir_tools()
    split = [f"--split-input-file={_SPLIT}", f"--output-split-marker={_SPLIT}"]
    low = subprocess.run([mlir_opt, *split, *MLIR_ASYNC_LOWERING],
                         input=f"\n{_SPLIT}\n".join(texts),
                         capture_output=True, text=True, timeout=120 * len(texts))
    out = None
    if not low.returncode:
        out = subprocess.run([translate, f"--split-input-file={_SPLIT}",
                              f"--output-split-marker={_LLVM_SPLIT}", "--mlir-to-llvmir"],
                             input=low.stdout, capture_output=True, text=True,
                             timeout=120 * len(texts))
    parts = out.stdout.split(_LLVM_SPLIT) if out is not None and not out.returncode else []
    if len(parts) != len(texts):
        return [_lowered(t) for t in texts]
    return [p.lstrip("\n") for p in parts]


def _lowered(text: str) -> str | RuntimeError:
    try:
        return lower_mlir(text)
    except RuntimeError as err:
        return err


@dataclass
class AsyncDraft:
    """An ``async-*`` program before its lowering (:func:`draft_async`)."""

    program: TaskProgram
    is_group: bool
    slots: int

    def finish(self, lowered: str) -> str:
        """The kernel's LLVM IR: the lowered graph (``lowered``, from
        :func:`lower_mlir`) with ``@kernel`` and the MLIR source as a comment."""
        ir = _wrapper(lowered, self.is_group, self.slots)
        header = "".join(f"; {line}\n" for line in self.program.source.splitlines())
        return f"; MLIR source of the graph:\n{header}{ir}"


def draft_async(rng: random.Random, shape: str) -> AsyncDraft:
    """The MLIR program of an ``async-*`` shape, not lowered yet (several drafts
    are lowered together by :func:`lower_mlir_many`)."""
    g = _AsyncGen(rng, shape)
    text, _, is_group = g.build()
    fails = len(g.tasks) + g.fail_ids
    prog = TaskProgram(
        text, {"m": ArgSpec(bytes=4 * g.slots, elem="i32"),
               "fail": ArgSpec(values=tuple(range(-1, fails)))},
        g.features + [f"tasks={len(g.tasks)}", f"slots={g.slots}"])
    return AsyncDraft(prog, is_group, g.slots)


def generate_async(rng: random.Random, shape: str) -> tuple[str, TaskProgram]:
    """(LLVM IR with ``@kernel``, the MLIR program) for an ``async-*`` shape."""
    draft = draft_async(rng, shape)
    return draft.finish(lower_mlir(draft.program.source)), draft.program


# --------------------------------------------------------------------------
# GPU launch loops

_CUDA_PRELUDE = """\
#define __host__ __attribute__((host))
#define __device__ __attribute__((device))
#define __global__ __attribute__((global))
typedef struct {S}_st *{P}Stream_t;
typedef int {P}Error_t;
struct dim3 {{
  unsigned x, y, z;
  __host__ __device__ dim3(unsigned x = 1, unsigned y = 1, unsigned z = 1)
      : x(x), y(y), z(z) {{}}
}};
extern "C" {P}Error_t {P}LaunchKernel(const void *func, dim3 grid, dim3 block, void **args,
                                    unsigned long shmem, {P}Stream_t stream);
extern "C" unsigned __{P}PushCallConfiguration(dim3 grid, dim3 block,
                                             unsigned long shmem = 0, void *stream = 0);
extern "C" {P}Error_t __{P}PopCallConfiguration(dim3 *grid, dim3 *block,
                                              unsigned long *shmem, void *stream);
extern "C" {P}Error_t {P}StreamSynchronize({P}Stream_t stream);
extern "C" void llvmaccel_rec_begin(unsigned char *log, long bytes, int refuse);
extern "C" void llvmaccel_rec_buffer(const void *base, long bytes);
extern "C" void llvmaccel_rec_kernel(const void *stub, const char *sizes);
extern "C" int llvmaccel_rec_end(void);
"""

# Kernel parameters: (C type, argument size, expressions by kind).
_PARAMS = {
    "float*": 8, "const float*": 8, "int": 4, "float": 4, "long": 8, "double": 8,
}


class _LaunchGen:
    def __init__(self, rng: random.Random, dialect: str) -> None:
        self.rng = rng
        self.dialect = dialect
        self.features: list[str] = [dialect]
        self.kernels: list[tuple[str, list[str]]] = []

    def feature(self, name: str) -> None:
        if name not in self.features:
            self.features.append(name)

    def kernel(self) -> tuple[str, list[str]]:
        if self.kernels and self.rng.random() < 0.3:
            return self.rng.choice(self.kernels)
        params = [self.rng.choice(["float*", "const float*"])] + self.rng.sample(
            ["int", "float", "long", "double", "float*"], self.rng.choice([0, 1, 2, 3]))
        k = (f"k{len(self.kernels)}", params)
        self.kernels.append(k)
        return k

    def arg(self, ty: str, varying: bool) -> str:
        rng = self.rng
        if ty.endswith("*"):
            base = rng.choice(["x", "y"])
            if varying:
                return f"{base} + (i % 4)"
            return rng.choice([base, base, f"{base} + {rng.choice([1, 16, 64])}"])
        if ty == "int":
            return "i" if varying else rng.choice(["n", "7", "-1"])
        if ty == "long":
            return "(long)i * 3" if varying else rng.choice(["(long)n", "1L << 40"])
        if ty == "float":
            return "(float)i" if varying else rng.choice(["0.5f", "-0.0f", "2.0f"])
        return "(double)i" if varying else rng.choice(["1.5", "-3.25"])

    def launch(self, stream: str, varying: bool) -> str:
        rng = self.rng
        name, params = self.kernel()
        grid = rng.choice(["(n + 255) / 256", "4", "dim3(2, 3)", "n / 64 + 1"])
        block = rng.choice(["256", "128", "dim3(16, 16)", "64"])
        shmem = rng.choice(["0", "0", "1024"])
        vary_at = rng.randrange(len(params)) if varying else -1
        args = ", ".join(self.arg(t, k == vary_at) for k, t in enumerate(params))
        return f"{name}<<<{grid}, {block}, {shmem}, {stream}>>>({args});"

    def loop_fn(self, index: int) -> str:
        rng = self.rng
        P = "cuda" if self.dialect == "cuda" else "hip"
        streams = "s"
        kind = rng.choices(["plain", "plain", "sync", "varying", "default", "two-streams",
                            "cond", "host-work", "nested"], k=1)[0]
        self.feature(f"loop={kind}")
        body: list[str] = []
        for _ in range(rng.choice([1, 2, 2, 3, 4])):
            stream = streams
            if kind == "default":
                stream = "0"
            elif kind == "two-streams" and rng.random() < 0.5:
                stream = "s2"
            body.append(self.launch(stream, kind == "varying" and rng.random() < 0.6))
        if kind == "sync":
            body.insert(rng.randrange(len(body) + 1), f"{P}StreamSynchronize(s);")
        if kind == "cond":
            k = rng.randrange(len(body))
            cond = rng.choice(["n > 100", "i % 2 == 0", "iters > 2"])
            body[k] = f"if ({cond}) {body[k]}"
        if kind == "host-work":
            body.insert(rng.randrange(len(body) + 1), "h[i & 7] += n;")
        inner = "\n    ".join(body)
        loop = f"for (int i = 0; i < iters; ++i) {{\n    {inner}\n  }}"
        if kind == "nested":
            loop = f"for (int j = 0; j < 2; ++j) {{\n  {loop}\n  }}"
        return (f"extern \"C\" void loop{index}(float *x, float *y, int *h, int n, int iters, "
                f"{P}Stream_t s, {P}Stream_t s2) {{\n  {loop}\n}}\n")

    def build(self, xbytes: int, ybytes: int) -> str:
        P = "cuda" if self.dialect == "cuda" else "hip"
        S = "CUstream" if self.dialect == "cuda" else "ihipStream_t"
        loops = [self.loop_fn(i) for i in range(self.rng.choice([1, 1, 2]))]
        kernels = "".join(
            f"__global__ void {n}({', '.join(f'{t} p{k}' for k, t in enumerate(ps))}) {{}}\n"
            for n, ps in self.kernels)
        regs = "".join(f"  llvmaccel_rec_kernel((const void *){n}, "
                       f"\"{','.join(str(_PARAMS[t]) for t in ps)}\");\n"
                       for n, ps in self.kernels)
        calls = "".join(f"  loop{i}(x, y, h, n, iters, ({P}Stream_t)s, ({P}Stream_t)(s + 8));\n"
                        for i in range(len(loops)))
        return (_CUDA_PRELUDE.format(P=P, S=S) + kernels + "".join(loops) +
                "extern \"C\" int kernel(unsigned char *log, float *x, float *y, int *h, int n, "
                "int iters, int refuse, long s) {\n"
                f"  llvmaccel_rec_begin(log, {LOG_BYTES}, refuse);\n"
                f"  llvmaccel_rec_buffer(x, {xbytes});\n  llvmaccel_rec_buffer(y, {ybytes});\n"
                + regs + calls + "  return llvmaccel_rec_end();\n}\n")


_ZE_PRELUDE = """\
#include <stddef.h>
#include <stdint.h>
typedef struct _ze_command_list_handle_t *ze_command_list_handle_t;
typedef struct _ze_command_queue_handle_t *ze_command_queue_handle_t;
typedef struct _ze_kernel_handle_t *ze_kernel_handle_t;
typedef struct _ze_event_handle_t *ze_event_handle_t;
typedef struct _ze_fence_handle_t *ze_fence_handle_t;
typedef int ze_result_t;
typedef struct { uint32_t groupCountX, groupCountY, groupCountZ; } ze_group_count_t;
ze_result_t zeCommandListReset(ze_command_list_handle_t);
ze_result_t zeKernelSetArgumentValue(ze_kernel_handle_t, uint32_t, size_t, const void *);
ze_result_t zeCommandListAppendLaunchKernel(ze_command_list_handle_t, ze_kernel_handle_t,
                                            const ze_group_count_t *, ze_event_handle_t,
                                            uint32_t, ze_event_handle_t *);
ze_result_t zeCommandListClose(ze_command_list_handle_t);
ze_result_t zeCommandQueueExecuteCommandLists(ze_command_queue_handle_t, uint32_t,
                                              ze_command_list_handle_t *, ze_fence_handle_t);
ze_result_t zeCommandQueueSynchronize(ze_command_queue_handle_t, uint64_t);
void llvmaccel_rec_begin(unsigned char *log, long bytes, int refuse);
void llvmaccel_rec_buffer(const void *base, long bytes);
ze_kernel_handle_t llvmaccel_rec_ze_kernel(int id, const char *sizes);
ze_command_list_handle_t llvmaccel_rec_ze_list(int id);
ze_command_queue_handle_t llvmaccel_rec_ze_queue(void);
int llvmaccel_rec_end(void);
"""


def _ze_program(rng: random.Random, xbytes: int, ybytes: int) -> tuple[str, list[str]]:
    """A C function with Level Zero loops that rebuild a command list each iteration."""
    feats = ["ze"]
    nk = rng.choice([1, 2, 3])
    sizes = [[8] + rng.sample([4, 8, 8], rng.choice([0, 1, 2])) for _ in range(nk)]
    loops = []
    for li in range(rng.choice([1, 1, 2])):
        kind = rng.choice(["plain", "plain", "plain", "varying", "indexed", "nowait",
                           "no-reset", "two-lists", "host-work", "cond"])
        feats.append(f"loop={kind}")
        body = ["zeCommandListReset(L);"] if kind != "no-reset" else []
        for _ in range(rng.choice([1, 2, 3])):
            k = rng.randrange(nk)
            for a, size in enumerate(sizes[k]):
                if size == 8 and a == 0:
                    val = rng.choice(["&X", "&Y"])
                elif kind == "varying" and rng.random() < 0.5:
                    val = "&I" if size == 4 else "&Wide"
                elif kind == "indexed" and rng.random() < 0.5:
                    # read through a stack address that changes per iteration
                    val = "&Vals[I & 3]" if size == 4 else "&Bigs[I & 1]"
                else:
                    val = "&N" if size == 4 else "&Big"
                body.append(f"zeKernelSetArgumentValue(K{k}, {a}, {size}, {val});")
            g = rng.choice(["&G", "&G1"] + (["&Gs[I & 1]"] if kind == "indexed" else []))
            lst = "L2" if kind == "two-lists" and rng.random() < 0.5 else "L"
            body.append(f"zeCommandListAppendLaunchKernel({lst}, K{k}, {g}, 0, 0, 0);")
        body.append("zeCommandListClose(L);")
        body.append("zeCommandQueueExecuteCommandLists(Q, 1, &L, 0);")
        if kind != "nowait":
            body.append("zeCommandQueueSynchronize(Q, UINT64_MAX);")
        if kind == "host-work":
            body.insert(rng.randrange(len(body) + 1), "H[I & 7] += N;")
        if kind == "cond":  # the list is built and run in some iterations only
            cond = rng.choice(["I % 2 == 0", "I != 1", "N > 100"])
            body = [f"if ({cond}) {{"] + ["  " + b for b in body] + ["}"]
        params = ", ".join(f"ze_kernel_handle_t K{k}" for k in range(nk))
        loops.append(
            f"void loop{li}(ze_command_list_handle_t L, ze_command_list_handle_t L2, "
            f"ze_command_queue_handle_t Q, {params}, float *X, float *Y, int *H, int N, "
            "int Iters) {\n"
            "  ze_group_count_t G = {(uint32_t)N / 64 + 1, 1, 1};\n"
            "  ze_group_count_t G1 = {4, 2, 1};\n"
            "  long Big = (long)N << 20;\n"
            "  int Vals[4] = {N, N + 1, -N, 7};\n"
            "  long Bigs[2] = {Big, Big + 1};\n"
            "  ze_group_count_t Gs[2] = {{1, 1, 1}, {(uint32_t)N / 64 + 1, 2, 1}};\n"
            "  for (int I = 0; I < Iters; ++I) {\n    long Wide = I;\n    "
            + "\n    ".join(body) + "\n  }\n}\n")
    regs = "".join(f"  ze_kernel_handle_t K{k} = llvmaccel_rec_ze_kernel({k}, "
                   f"\"{','.join(map(str, sizes[k]))}\");\n" for k in range(nk))
    ks = ", ".join(f"K{k}" for k in range(nk))
    calls = "".join(f"  loop{i}(llvmaccel_rec_ze_list(0), llvmaccel_rec_ze_list(1), Q, {ks}, "
                    "x, y, h, n, iters);\n" for i in range(len(loops)))
    return (_ZE_PRELUDE + "".join(loops) +
            "int kernel(unsigned char *log, float *x, float *y, int *h, int n, int iters, "
            "int refuse, long s) {\n"
            f"  llvmaccel_rec_begin(log, {LOG_BYTES}, refuse);\n"
            f"  llvmaccel_rec_buffer(x, {xbytes});\n  llvmaccel_rec_buffer(y, {ybytes});\n"
            "  ze_command_queue_handle_t Q = llvmaccel_rec_ze_queue();\n"
            + regs + calls + "  return llvmaccel_rec_end();\n}\n"), feats


def compile_host(source: str, dialect: str) -> str:
    """LLVM IR of GPU host code compiled by clang -O2 (CUDA/HIP host only, or C).

    Raises:
        FileNotFoundError: no clang; RuntimeError: clang rejects the source.
    """
    clang = _clang()
    if clang is None:
        raise FileNotFoundError(f"clang-{_llvm_major()} not found")
    lang = {"cuda": ["-x", "cuda", "--cuda-host-only", "-nocudainc", "-nocudalib"],
            "hip": ["-x", "hip", "--offload-host-only", "-nogpuinc", "-nogpulib"],
            "ze": ["-x", "c"]}[dialect]
    with tempfile.TemporaryDirectory() as work:
        out = subprocess.run([clang, "-w", *lang, "-O2", "-S", "-emit-llvm", "-", "-o", "-"],
                             input=source, capture_output=True, text=True, timeout=120,
                             cwd=work)
    if out.returncode:
        raise RuntimeError("clang rejected the host code:\n" + out.stderr[-3000:])
    ir = out.stdout
    if dialect == "hip":
        # Without a device binary, the constructor that registers the kernels
        # with the HIP runtime is dropped (the recorder needs no registration).
        ir = "\n".join(line for line in ir.splitlines() if "@llvm.global_ctors" not in line)
        opt = _tool("opt")
        if opt:
            dce = subprocess.run([opt, "-passes=globaldce", "-S"], input=ir,
                                 capture_output=True, text=True, timeout=120)
            if dce.returncode == 0:
                ir = dce.stdout
    return ir


def generate_launch(rng: random.Random, shape: str) -> tuple[str, TaskProgram]:
    """(LLVM IR with ``@kernel``, the host source) for a ``launch-*`` shape."""
    dialect = shape.split("-", 1)[1]
    xbytes, ybytes = rng.choice([256, 4096]), rng.choice([256, 4096])
    if dialect == "ze":
        source, feats = _ze_program(rng, xbytes, ybytes)
    else:
        g = _LaunchGen(rng, dialect)
        source = g.build(xbytes, ybytes)
        feats = g.features
    # By position: clang leaves the parameters unnamed (log, x, y, h, n,
    # iters, refuse, s).
    specs = [ArgSpec(bytes=LOG_BYTES, elem="i8"), ArgSpec(bytes=xbytes, elem="float"),
             ArgSpec(bytes=ybytes, elem="float"), ArgSpec(bytes=32, elem="i32"),
             ArgSpec(values=(0, 1, 100, 256, 1000)), ArgSpec(values=(0, 1, 2, 3, 7)),
             ArgSpec(values=(0, 0, 1)), ArgSpec(values=(0x5700, 0x5700, 0))]
    args = {str(i): spec for i, spec in enumerate(specs)}
    ir = compile_host(source, dialect)
    header = "".join(f"; {line}\n" for line in source.splitlines())
    return f"; host source:\n{header}{ir}", TaskProgram(source, args, feats)
