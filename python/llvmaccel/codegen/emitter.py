"""The emitter's core: SSA names, blocks, sizes, counted loops, memory
access, kernel errors, and the dispatch of a materialized node to its kind of
loop nest. The kinds of loop nest (elementwise and reductions, matmul,
gathers, convolution) are the subclasses that :class:`codegen._Emitter`
combines."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import NamedTuple

from ..graph import DType, Graph, Node, SymExpr, shape_numel
from ..target import TargetInfo
from .common import NO_VECTORIZE, Buffer, CodegenError, _strides

# Chunks of a flat loop start at multiples of this many elements: a multiple
# of every vector width times interleave count the vectorizer picks, so each
# element lands in the same vector or remainder iteration as in the serial
# loop (vector and scalar math calls may round differently).
_CHUNK_ALIGN = 256


def _no_scratch(shape: tuple, dtype: DType) -> Buffer:
    raise CodegenError("no temporary buffers outside codegen.generate")


class _OpenStep(NamedTuple):
    """The step of the SPMD body being emitted (EmitterCore._step_open)."""

    head: str  # the block that claims a chunk
    nxt: str  # the block after the step
    yield_at: int  # body lines with a <chunks> placeholder: the yield check,
    claim_at: int  # the claim
    memo: dict  # the memo before the step, restored after it
    round: str  # this thread's round of the step ("0" outside loops)
    slot: str  # the round counter's stack slot ("" outside loops)
    blas_calls: int  # library calls emitted before the step


class EmitterCore:
    """Builds the body of the entry function."""


    def __init__(self, graph: Graph, name: str, target: TargetInfo, host: bool) -> None:
        self.g = graph
        self.name = name
        self.target = target  # vector widths and math variants are sized for it
        self.host = host  # the code runs here: ask the loaded libraries
        self.allocas: list[str] = []
        self.prologue: list[str] = []
        self.body: list[str] = []
        self.decls: dict[str, str] = {}
        # Blocks of a node's loop nest are named "n<id>.<hint><k>", so a
        # profile can tell whose loop a header is (llvmaccel.profiling).
        self.label_prefix = ""
        # Put before the prefix of every node: the loop node whose body or
        # branch this emitter emits ("n<id>."), so profiles name the loop.
        self.label_scope = ""
        # Allocates a temporary buffer of the kernel (set by codegen.generate).
        self.scratch: Callable[[tuple, DType], Buffer] = _no_scratch
        # (function, custom op name) of custom op bodies called (Kernel.links).
        self.links: list[tuple[str, str]] = []
        self.vector_variants: set[str] = set()  # vecmath symbols the calls name
        self.block = "entry"
        self.count = 0
        self.memo: dict[tuple, str] = {}
        # Values of nodes computed (and stored) in the current iteration of
        # a loop nest that also computes their one reader (materialize_with).
        self.produced: dict[int, str] = {}
        # Matmuls whose result one elementwise nest alone reads, at its own
        # element (emit_graph's _matmul_epilogues): the matmul's panel
        # kernel may compute that reader in its last k-block from the tile
        # (MatmulEmitter.mm_epilogue), and then records the reader as done
        # (its own loop nest is not emitted).
        self.mm_epilogues: dict[int, tuple[Node, Buffer]] = {}
        self.epilogue_done: set[int] = set()
        self.dimvals: dict[str, str] = {}
        self.buffers: dict[int, Buffer] = {}
        self.errors: dict[int, tuple[str, str]] = {}
        self.bag_bounds: dict[int, Buffer] = {}  # embedding_bag without the last offset
        self.bag_prologues: set[int] = set()  # embedding_bags whose checks are emitted
        self.reduce_acc: dict[int, Buffer] = {}  # f64 rows of emit_reduce_rows
        self.mm_stack: dict[tuple[str, str, int], str] = {}  # matmul panels, shared
        # (node id, kernel, reason) of every matmul (llvmaccel.blas.choose).
        self.matmul_choices: list[tuple[int, str, str]] = []
        # Fused attentions by the id of their product by V, and the choice
        # made for every softmax @ V (codegen.attention; Kernel.attention).
        self.attention_plans: dict[int, object] = {}
        self.attention_choices: list[tuple[int, str, str]] = []
        self.blas_calls = 0  # calls of the BLAS library emitted so far
        self.zero_flag: str | None = None  # integer division by zero seen (an i1)
        self.zero_flag_used = False
        # The SPMD body of a parallel kernel (codegen.parallel): every thread
        # runs it with %par.tid of %par.nth; a step's outermost loop, where
        # its iterations are independent, takes the thread's chunk.
        self.spmd = False
        self.par_pending = False  # the current step may still take a chunk
        self.par_work: list[object] = []  # work (elements) of the chunked loops
        self.par_steps = 0  # steps emitted so far
        # The step the next one waits for: (index, round, chunks), or None
        # when every thread has waited for what precedes (par_barrier).
        self.par_prev: tuple[int, str, str] | None = None
        self.par_chunk = ""  # the chunk the current step's thread runs
        self.par_open = _OpenStep("", "", 0, 0, {}, "0", "", 0)  # the step being emitted
        self.par_loops = 0  # loops of the SPMD body (a scan's) open here
        self.par_one = False  # the open step is one chunk (its loops run whole)
        self.par_held = False  # the open step of one chunk takes the small steps after it
        self.par_loop_library = False  # a step in a loop calls the library
        self.par_cap = 1  # the most threads the kernel runs with

    @property
    def uses_blas(self) -> bool:
        """A call of the BLAS library was emitted."""
        return self.blas_calls > 0

    # -- low-level --------------------------------------------------------
    def fresh(self, hint: str = "v") -> str:
        self.count += 1
        return f"%{hint}{self.count}"

    def label(self, hint: str) -> str:
        self.count += 1
        return f"{self.label_prefix}{hint}{self.count}"

    def line(self, text: str) -> None:
        self.body.append("  " + text)

    def op(self, text: str, hint: str = "v") -> str:
        name = self.fresh(hint)
        self.line(f"{name} = {text}")
        return name

    def start_block(self, label: str) -> None:
        self.body.append(f"{label}:")
        self.block = label

    def br(self, label: str) -> None:
        self.line(f"br label %{label}")

    def declare(self, name: str, ret: str, args: list[str]) -> None:
        self.decls[name] = f"declare {ret} @{name}({', '.join(args)})"

    def call(self, fn: str, ret: str, args: list[tuple[str, str]], attrs: str = "",
             hint: str = "v") -> str:
        self.declare(fn, ret, [t for t, _ in args])
        call = f"call {ret} @{fn}({', '.join(f'{t} {v}' for t, v in args)})"
        return self.op(f"{call} {attrs}" if attrs else call, hint)

    def alloca(self, ty: str) -> str:
        name = self.fresh("acc")
        self.allocas.append(f"  {name} = alloca {ty}")
        return name

    def anchor_symbols(self, symbols: list[str]) -> None:
        """States the graph's facts of its size symbols at entry, as
        ``llvm.assume`` (shape anchors): SCEV, the vectorizer (no remainder
        loop when a trip count is a multiple of its step) and the passes see
        them. CompiledGraph.bind refuses calls that break them."""
        for s in symbols:
            lo, hi, m = self.g.symbol_facts.get(s, (None, None, 1))
            facts = []
            if lo is not None:
                facts.append(f"icmp sge i64 %sym.{s}, {lo}")
            if hi is not None:
                facts.append(f"icmp sle i64 %sym.{s}, {hi}")
            if m > 1:
                rem = self.fresh("rem")
                self.prologue.append(f"  {rem} = urem i64 %sym.{s}, {m}")
                facts.append(f"icmp eq i64 {rem}, 0")
            for fact in facts:
                c = self.fresh("fact")
                self.prologue.append(f"  {c} = {fact}")
                self.prologue.append(f"  call void @llvm.assume(i1 {c})")
                self.declare("llvm.assume", "void", ["i1"])

    # -- sizes ------------------------------------------------------------
    def dim(self, d: object) -> str:
        """An i64 value for a size (computed once, in the entry block)."""
        if isinstance(d, int):
            return str(d)
        assert isinstance(d, SymExpr)
        key = str(d)
        if key in self.dimvals:
            return self.dimvals[key]
        if d.op == "sym":
            val = f"%sym.{d.args[0]}"
        else:
            a, b = (self.dim(x) for x in d.args)
            name = f"%d{len(self.dimvals)}"
            if d.op in ("add", "mul"):
                self.prologue.append(f"  {name} = {d.op} i64 {a}, {b}")
            elif d.op in ("floordiv", "mod"):
                # Sizes are non-negative; guard division by zero.
                nz = f"{name}.nz"
                self.prologue.append(f"  {name}.z = icmp eq i64 {b}, 0")
                self.prologue.append(f"  {nz} = select i1 {name}.z, i64 1, i64 {b}")
                fn = "sdiv" if d.op == "floordiv" else "srem"
                self.prologue.append(f"  {name} = {fn} i64 {a}, {nz}")
            elif d.op in ("max", "min"):
                self.prologue.append(
                    f"  {name} = call i64 @llvm.s{d.op}.i64(i64 {a}, i64 {b})")
                self.declare(f"llvm.s{d.op}.i64", "i64", ["i64", "i64"])
            else:
                raise CodegenError(f"unsupported size expression {d}")
            val = name
        self.dimvals[key] = val
        return val

    def iadd(self, a: str, b: str) -> str:
        if a == "0":
            return b
        if b == "0":
            return a
        return self.op(f"add nsw i64 {a}, {b}", "i")

    def imul(self, a: str, b: str) -> str:
        if a == "1":
            return b
        if b == "1":
            return a
        if a == "0" or b == "0":
            return "0"
        return self.op(f"mul nsw i64 {a}, {b}", "i")

    def linear(self, idx: list[str], shape: tuple) -> str:
        """Row-major linear offset of ``idx`` in ``shape``."""
        off = "0"
        for i, d in zip(idx, shape, strict=False):
            off = self.iadd(self.imul(off, self.dim(d)), i)
        return off

    def delinearize(self, lin: str, shape: tuple) -> list[str]:
        out = []
        strides = _strides(shape)
        for k, d in enumerate(shape):
            if d == 1:
                out.append("0")
                continue
            q = lin if k == 0 else lin
            if strides[k] != 1:
                q = self.op(f"udiv i64 {q}, {self.dim(strides[k])}", "i")
            if k > 0:
                q = self.op(f"urem i64 {q}, {self.dim(d)}", "i")
            out.append(q)
        return out

    # -- parallel steps (SPMD bodies) ---------------------------------------
    def par_range(self, n: str, work: object, align: int = 1) -> tuple[str, str]:
        """The part ``[begin, end)`` of the iteration range ``[0, n)`` of a
        loop whose iterations are independent that this thread runs: in the
        SPMD body, when the current step has not chunked a loop yet, a
        static chunk of ``n`` (its bounds multiples of ``align``, so that
        each element falls in the same vector or remainder iteration as in
        the serial loop) where the step's ``work`` reaches
        :data:`codegen.parallel.MIN_WORK` elements, else all of it on
        thread 0; elsewhere ``[0, n)``."""
        if not (self.spmd and self.par_pending):
            return "0", n
        from .parallel import MIN_WORK, small_work

        self.par_pending = False
        if small_work(work):
            self.par_one = True  # the step is one chunk: every loop of it runs whole
            return "0", n
        self.par_work.append(work)
        tid, nth = self.par_chunk, "%par.chunks"
        big = self.op(f"icmp sge i64 {self.dim(work)}, {MIN_WORK}", "c")
        lo = self.op(f"udiv i64 {self.op(f'mul nuw i64 {n}, {tid}', 'i')}, {nth}", "i")
        t1 = self.op(f"add nuw i64 {tid}, 1", "i")
        hi = self.op(f"udiv i64 {self.op(f'mul nuw i64 {n}, {t1}', 'i')}, {nth}", "i")
        if align > 1:
            lo = self.op(f"and i64 {lo}, {-align}", "i")
            last = self.op(f"icmp eq i64 {t1}, {nth}", "c")
            hi = self.op(f"select i1 {last}, i64 {n}, i64 "
                         f"{self.op(f'and i64 {hi}, {-align}', 'i')}", "i")
        first = self.op(f"icmp eq i64 {tid}, 0", "c")
        whole = self.op(f"select i1 {first}, i64 {n}, i64 0", "i")
        begin = self.op(f"select i1 {big}, i64 {lo}, i64 0", "i")
        end = self.op(f"select i1 {big}, i64 {hi}, i64 {whole}", "i")
        return begin, end

    def step(self, body: Callable[[], None], small: bool = False) -> None:
        """One step of the kernel (a loop nest and its checks): ``body()``.
        In the SPMD body the step's chunks (``%par.chunks`` of them when the
        body chunked its outermost loop, see :meth:`par_range`, else one)
        are claimed one at a time by whichever thread comes first
        (``llvmaccel_parallel_claim``), and every thread waits for the
        previous step's chunks before it claims (a thread that sees an
        error there returns it). The body may end its step and go on in a
        new one (:meth:`step_break`).

        ``small``: the body's work is known to stay below MIN_WORK. Such a
        step of one chunk is held open, and the small steps that follow run
        in it, on the thread that claimed it, one after the other: no
        barrier between them (an argmax, a gather and a carry copy of a
        decode step are one hand-off, not three)."""
        if not self.spmd:
            body()
            return
        if not (small and self.par_held):
            self.par_flush()
            self._step_open()
        body()
        if self.par_held:  # ran in the held step, which stays open
            return
        if small and (self.par_pending or self.par_one):
            self.par_pending, self.par_one, self.par_held = False, True, True
            return
        self._step_close()

    def par_flush(self) -> None:
        """Closes a held step of one chunk (:meth:`step`); a no-op when
        there is none."""
        if self.par_held:
            self._step_close()

    def step_break(self) -> None:
        """Inside a step's body, at its top level (no loop open): ends the
        step and starts the next, so that what follows runs once every chunk
        of what precedes is done (an ``im2col`` copy split between the
        threads, then the product that reads it). Values computed before
        the break are not used after it (the memo is dropped); sizes are
        computed in the entry block. A no-op outside the SPMD body."""
        if self.spmd:
            self._step_close()
            self._step_open()

    def par_barrier(self) -> None:
        """In the SPMD body, outside every step: waits until the last step
        emitted is done (on a thread's failure, returns its code), so that
        the next step need not. A no-op elsewhere."""
        self.par_flush()
        if not (self.spmd and self.par_prev):
            return
        s, r, chunks = self.par_prev
        e, bad = self.fresh("par.err"), self.fresh("par.bad")
        fail, ok = self.label("par.fail"), self.label("par.ok")
        self.line(f"{e} = call i32 @llvmaccel_parallel_wait(ptr %par.team, i64 {s}, i64 {r}, "
                  f"i64 {chunks})")
        self.line(f"{bad} = icmp ne i32 {e}, 0")
        self.line(f"br i1 {bad}, label %{fail}, label %{ok}")
        self.start_block(fail)
        self.line(f"ret i32 {e}")
        self.start_block(ok)
        self.declare("llvmaccel_parallel_wait", "i32", ["ptr", "i64", "i64", "i64"])
        self.par_prev = None

    def par_decide(self, read_flag: Callable[[], str]) -> str:
        """In the SPMD body, inside a while loop (top level): the i1 that
        ``read_flag()`` loads (the loop's condition, from a buffer the
        threads share) as every thread's decision for its round. One thread
        reads and publishes it in a step of one chunk
        (``llvmaccel_parallel_decide``); every thread reads the decision for
        its own round after that step (``llvmaccel_parallel_decided``), so a
        thread ahead that rewrites the buffer for the next round misleads
        nobody. Elsewhere, ``read_flag()``."""
        if not self.spmd:
            return read_flag()

        def publish() -> None:
            s, rnd = self.par_steps, self.par_open.round
            go = self.op(f"zext i1 {read_flag()} to i32", "i")
            self.declare("llvmaccel_parallel_decide", "void", ["ptr", "i64", "i64", "i32"])
            self.line(f"call void @llvmaccel_parallel_decide(ptr %par.team, i64 {s}, "
                      f"i64 {rnd}, i32 {go})")

        self.step(publish)
        s, rnd, _ = self.par_prev  # type: ignore[misc]
        self.par_barrier()
        self.declare("llvmaccel_parallel_decided", "i32", ["ptr", "i64", "i64"])
        d = self.op(f"call i32 @llvmaccel_parallel_decided(ptr %par.team, i64 {s}, i64 {rnd})",
                    "par.go")
        return self.op(f"icmp ne i32 {d}, 0", "c")

    @contextmanager
    def par_loop(self) -> Iterator[None]:
        """Around the body of a loop every thread of the SPMD body runs (a
        scan's): its steps run once per iteration, each in rounds counted
        by every thread (:meth:`_step_open`). The loop is entered once the
        steps before it are done, and each iteration ends once its own are,
        so that the next iteration's first step (or the step after the
        loop) waits for nothing. Outside the SPMD body, nothing."""
        self.par_barrier()
        self.par_loops += 1
        try:
            yield
            self.par_barrier()
        finally:
            self.par_loops -= 1

    def _step_open(self) -> None:
        s = self.par_steps
        self.par_barrier()
        # A step in a loop's body runs in rounds: this thread's count of
        # its runs so far, in a slot of its own (promoted to a phi).
        rnd, slot = "0", ""
        if self.par_loops:
            slot = f"%par.r{s}"
            self.allocas.append(f"  {slot} = alloca i64")
            self.prologue.append(f"  store i64 0, ptr {slot}")
            rnd = self.op(f"load i64, ptr {slot}", "par.round")
        # A kernel that calls the library runs in segments (bindings/
        # Parallel.cpp: the library's steps on the caller alone, outside
        # OpenMP's region, the others on the team); a thread returns here
        # when its segment ends.
        stay, leave = self.label("par.stay"), self.label("par.yield")
        yield_at = len(self.body)
        y = self.op(f"call i32 @llvmaccel_parallel_yield(ptr %par.team, i64 {s}, i64 {rnd}, "
                    "i64 <chunks>, i32 <library>)", "par.y")
        self.line(f"br i1 {self.op(f'icmp ne i32 {y}, 0', 'c')}, label %{leave}, label %{stay}")
        self.start_block(leave)
        self.line("ret i32 -1")  # LLVMACCEL_PARALLEL_YIELD
        self.start_block(stay)
        self.declare("llvmaccel_parallel_yield", "i32", ["ptr", "i64", "i64", "i64", "i32"])
        head, run, nxt = self.label("par.claim"), self.label("par.step"), self.label("par.next")
        self.br(head)
        self.start_block(head)
        chunk = self.fresh("par.chunk")
        claim_at = len(self.body)
        self.line(f"{chunk} = call i64 @llvmaccel_parallel_claim(ptr %par.team, i64 {s}, "
                  f"i64 {rnd}, i64 <chunks>, i64 %par.tid)")
        c = self.op(f"icmp sge i64 {chunk}, 0", "c")
        self.line(f"br i1 {c}, label %{run}, label %{nxt}")
        self.par_open = _OpenStep(head, nxt, yield_at, claim_at, dict(self.memo), rnd, slot,
                                  self.blas_calls)
        self.start_block(run)
        self.par_pending, self.par_chunk = True, chunk
        self.par_one = self.par_held = False

    def _step_close(self) -> None:
        head, nxt, yield_at, claim_at, saved, rnd, slot, calls = self.par_open
        s = self.par_steps
        chunks = "1" if self.par_pending or self.par_one else "%par.chunks"
        self.par_pending = self.par_one = self.par_held = False
        done_at = len(self.body)
        self.line(f"call void @llvmaccel_parallel_done(ptr %par.team, i64 {s}, i64 {rnd}, "
                  "i64 <chunks>)")
        self.br(head)
        self.memo = saved
        self.start_block(nxt)
        if slot:
            self.line(f"store i64 {self.op(f'add nuw i64 {rnd}, 1', 'par.round')}, ptr {slot}")
        library = "1" if self.blas_calls > calls else "0"
        self.par_loop_library |= library == "1" and self.par_loops > 0
        for k in (yield_at, claim_at, done_at):
            self.body[k] = self.body[k].replace("<chunks>", chunks).replace("<library>", library)
        self.declare("llvmaccel_parallel_claim", "i64", ["ptr", "i64", "i64", "i64", "i64"])
        self.declare("llvmaccel_parallel_done", "void", ["ptr", "i64", "i64", "i64"])
        self.par_steps += 1
        self.par_prev = (s, rnd, chunks)

    # -- loops ------------------------------------------------------------
    @contextmanager
    def loop(self, end: str, start: str = "0", hint: str = "i",
             vectorize: bool = True) -> Iterator[str]:
        """``for (i = start; i < end; ++i)`` with an i64 induction variable.
        ``vectorize=False``: the loop vectorizer leaves it alone (its latch
        carries :data:`NO_VECTORIZE`), for a loop whose iterations are rows
        or planes apart: its inner loops, unrolled or not, are the ones to
        vectorize."""
        pre = self.block
        head, body, done = self.label("loop"), self.label("body"), self.label("exit")
        self.br(head)
        self.start_block(head)
        i = self.fresh(hint)
        pos = len(self.body)
        self.line("<phi>")
        c = self.op(f"icmp slt i64 {i}, {end}", "c")
        self.line(f"br i1 {c}, label %{body}, label %{done}")
        self.start_block(body)
        saved = dict(self.memo)
        yield i
        latch = self.block
        nxt = self.op(f"add nsw i64 {i}, 1", "i")
        if vectorize:
            self.br(head)
        else:
            self.line(f"br label %{head}, !llvm.loop {NO_VECTORIZE}")
        self.body[pos] = f"  {i} = phi i64 [ {start}, %{pre} ], [ {nxt}, %{latch} ]"
        self.start_block(done)
        self.memo = saved

    @contextmanager
    def nest(self, shape: tuple, work: object = None,
             rows_apart: bool = False) -> Iterator[list[str]]:
        """Nested loops over ``shape`` (outermost first). ``work``: the
        outermost loop's iterations are independent, and the nest does
        about this many elements of work (:meth:`par_range` may chunk it).
        ``rows_apart``: where the last dim is short enough for LLVM to
        unroll whole but holds a vector's worth (4 to 64 elements), the
        outer loops are left to the SLP vectorizer (``vectorize=False``):
        vectorized across them, every lane is a row apart (gathers and
        scatters, as LLVM 22 chose on AVX-512 targets for 4 x 9 planes)."""
        idx: list[str] = []
        stack = []
        last = shape[-1] if shape else None
        outer_vec = not (rows_apart and isinstance(last, int) and 4 <= last <= 64)
        for k, d in enumerate(shape):
            vec = outer_vec or k == len(shape) - 1
            if k == 0 and work is not None:
                begin, end = self.par_range(self.dim(d), work)
                cm = self.loop(end, start=begin, vectorize=vec)
            else:
                cm = self.loop(self.dim(d), vectorize=vec)
            idx.append(cm.__enter__())
            stack.append(cm)
        yield idx
        for cm in reversed(stack):
            cm.__exit__(None, None, None)

    def cond(self, c: str, then_fn: object, else_fn: object, ty: str) -> str:
        """``c ? then_fn() : else_fn()`` with real branches (the untaken side
        is not evaluated)."""
        t, e, j = self.label("then"), self.label("else"), self.label("join")
        self.line(f"br i1 {c}, label %{t}, label %{e}")
        saved = dict(self.memo)
        self.start_block(t)
        tv = then_fn()  # type: ignore[operator]
        tb = self.block
        self.br(j)
        self.memo = dict(saved)
        self.start_block(e)
        ev = else_fn()  # type: ignore[operator]
        eb = self.block
        self.br(j)
        self.memo = saved
        self.start_block(j)
        return self.op(f"phi {ty} [ {tv}, %{tb} ], [ {ev}, %{eb} ]")

    def when(self, c: str, then_fn: object) -> None:
        """``if (c) then_fn()`` (no value)."""
        t, j = self.label("then"), self.label("endif")
        self.line(f"br i1 {c}, label %{t}, label %{j}")
        saved = dict(self.memo)
        self.start_block(t)
        then_fn()  # type: ignore[operator]
        self.br(j)
        self.memo = saved
        self.start_block(j)

    def carried_nest(self, shape: tuple, init: str, ty: str,
                     step: Callable[[list[str], str], str]) -> str:
        """Nested counted loops over ``shape`` that carry a value of LLVM
        type ``ty`` in SSA: one ``phi ty`` per loop header (``init`` on entry),
        ``step(idx, acc)`` gives the value of the next iteration. Returns the
        value after the loops (the outermost header's phi). A struct ``ty``
        gives the aggregate phis that accel-phi-decompose splits."""
        idx: list[str] = []

        def level(k: int, acc: str) -> str:
            if k == len(shape):
                return step(list(idx), acc)
            pre = self.block
            head, body, done = self.label("loop"), self.label("body"), self.label("exit")
            self.br(head)
            self.start_block(head)
            i, a = self.fresh("i"), self.fresh("acc")
            pos = len(self.body)
            self.line("<phi>")
            self.line("<phi>")
            c = self.op(f"icmp slt i64 {i}, {self.dim(shape[k])}", "c")
            self.line(f"br i1 {c}, label %{body}, label %{done}")
            self.start_block(body)
            saved = dict(self.memo)
            idx.append(i)
            nxt_acc = level(k + 1, a)
            idx.pop()
            latch = self.block
            nxt = self.op(f"add nsw i64 {i}, 1", "i")
            self.br(head)
            self.body[pos] = f"  {i} = phi i64 [ 0, %{pre} ], [ {nxt}, %{latch} ]"
            self.body[pos + 1] = f"  {a} = phi {ty} [ {acc}, %{pre} ], [ {nxt_acc}, %{latch} ]"
            self.start_block(done)
            self.memo = saved
            return a

        return level(0, init)

    # -- complex values -------------------------------------------------------
    def cparts(self, dt: DType, z: str) -> tuple[str, str]:
        """The real and imaginary parts of the complex value ``z``."""
        t = dt.llvm
        return (self.op(f"extractvalue {t} {z}, 0", "re"),
                self.op(f"extractvalue {t} {z}, 1", "im"))

    def cpack(self, dt: DType, re: str, im: str) -> str:
        """The complex value ``re + i * im`` (a ``{ float, float }`` for c64)."""
        t, p = dt.llvm, dt.real.llvm
        z = self.op(f"insertvalue {t} poison, {p} {re}, 0", "z")
        return self.op(f"insertvalue {t} {z}, {p} {im}, 1", "z")

    # -- memory -----------------------------------------------------------
    def gep(self, buf: Buffer, off: str) -> str:
        if off == "0":
            return buf.param
        return self.op(f"getelementptr inbounds {buf.dtype.mem}, ptr {buf.param}, i64 {off}",
                       "p")

    def buffer_offset(self, buf: Buffer, idx: list[str], shape: tuple) -> str:
        """The element offset in ``buf`` of a node of ``shape`` at ``idx``
        (in a row-local buffer, the row's own element)."""
        if buf.row_local:
            return self.linear(["0"] * buf.row_local + idx[buf.row_local:], buf.shape)
        return self.linear(idx, shape)

    def store_at(self, buf: Buffer, idx: list[str], shape: tuple, value: str) -> None:
        """Stores ``value`` as the element at ``idx`` of a node of ``shape``."""
        self.store(buf, self.buffer_offset(buf, idx, shape), value)

    def load(self, buf: Buffer, off: str) -> str:
        p = self.gep(buf, off)
        if buf.dtype.is_complex:  # two loads, one struct value
            t = buf.dtype.real.llvm
            re = self.op(f"load {t}, ptr {p}", "ld")
            pi = self.op(f"getelementptr inbounds {buf.dtype.mem}, ptr {p}, i64 0, i32 1", "p")
            return self.cpack(buf.dtype, re, self.op(f"load {t}, ptr {pi}", "ld"))
        v = self.op(f"load {buf.dtype.mem}, ptr {p}", "ld")
        if buf.dtype is DType.bool:
            v = self.op(f"icmp ne i8 {v}, 0", "b")
        return v

    def store(self, buf: Buffer, off: str, value: str) -> None:
        p = self.gep(buf, off)
        if buf.dtype.is_complex:
            t = buf.dtype.real.llvm
            re, im = self.cparts(buf.dtype, value)
            pi = self.op(f"getelementptr inbounds {buf.dtype.mem}, ptr {p}, i64 0, i32 1", "p")
            self.line(f"store {t} {re}, ptr {p}")
            self.line(f"store {t} {im}, ptr {pi}")
            return
        if buf.dtype is DType.bool:
            value = self.op(f"zext i1 {value} to i8", "b")
        self.line(f"store {buf.dtype.mem} {value}, ptr {p}")

    def buffer_of(self, node: Node) -> Buffer | None:
        """The buffer holding ``node`` contiguously, through reshapes."""
        while node.id not in self.buffers and node.op == "reshape":
            node = node.inputs[0]
        return self.buffers.get(node.id)

    def operand_buffer(self, node: Node, what: str) -> Buffer:
        """:meth:`buffer_of` an operand a loop nest reads from memory;
        CodegenError ``"<what> is not materialized"`` when it has none."""
        buf = self.buffer_of(node)
        if buf is None:
            raise CodegenError(f"{what} is not materialized")
        return buf

    def flag_zero_division(self, zero: str) -> None:
        """Records an integer division by zero (``zero``, an i1) in a flag
        that :meth:`check_zero_division` tests after the loop nest: an or
        reduction, so the loop still vectorizes."""
        if self.zero_flag is None:
            self.zero_flag = self.alloca("i1")
            self.prologue.append(f"  store i1 false, ptr {self.zero_flag}")
        old = self.op(f"load i1, ptr {self.zero_flag}", "c")
        self.line(f"store i1 {self.op(f'or i1 {old}, {zero}', 'c')}, ptr {self.zero_flag}")
        self.zero_flag_used = True

    def check_zero_division(self) -> None:
        """Fails the kernel when a loop nest emitted since the last check
        divided an integer by zero."""
        if not self.zero_flag_used:
            return
        self.zero_flag_used = False
        code = next((c for c, (k, _) in self.errors.items() if k == "ZeroDivisionError"), 0)
        if not code:
            code = len(self.errors) + 1
            self.errors[code] = ("ZeroDivisionError", "ZeroDivisionError")
        self.fail_if(self.op(f"load i1, ptr {self.zero_flag}", "c"), code)

    def fail_if(self, bad: str, code: int) -> None:
        err, ok = self.label("fail"), self.label("ok")
        self.line(f"br i1 {bad}, label %{err}, label %{ok}")
        self.start_block(err)
        self.line(f"ret i32 {code}")
        self.start_block(ok)

    # -- loop nests ---------------------------------------------------------
    def materialize(self, node: Node, out: Buffer) -> None:
        self.memo = {}
        own = self.buffers.pop(node.id, None)  # compute the node, do not load it
        self.label_prefix = f"{self.label_scope}n{node.id}."
        try:
            self._materialize(node, out)
        finally:
            if own is not None:
                self.buffers[node.id] = own
            self.memo = {}
            self.label_prefix = ""

    def materialize_with(self, producers: list[Node], node: Node, out: Buffer) -> None:
        """``node``'s loop nest, which also computes each of ``producers``
        (elementwise nodes with buffers of their own that ``node`` reads at
        the element it computes, through reshapes) and stores it: one pass
        over memory where a nest per node would write a producer and read it
        back. Every node has the same number of elements and the same last
        dim ``L``; the nest runs over ``(numel / L, L)``, each node's index
        made from the row (outside the inner loop) and the column."""
        self.memo = {}
        own_out = self.buffers.pop(node.id, None)  # compute the node, do not load it
        self.label_prefix = f"{self.label_scope}n{node.id}."
        last = node.shape[-1]
        rows = shape_numel(node.shape[:-1]) if node.rank > 1 else 1
        try:
            with self.nest((rows, last), work=shape_numel(node.shape)) as (r, k):
                for x in producers:
                    idx = self.delinearize(r, tuple(x.shape[:-1])) + [k]
                    own = self.buffers.pop(x.id)
                    try:
                        v = self.emit(x, idx)
                    finally:
                        self.buffers[x.id] = own
                    self.store_at(own, idx, x.shape, v)
                    self.produced[x.id] = v
                idx = self.delinearize(r, tuple(node.shape[:-1])) + [k]
                self.store(out, self.linear(idx, node.shape), self.emit(node, idx))
        finally:
            if own_out is not None:
                self.buffers[node.id] = own_out
            self.produced = {}
            self.memo = {}
            self.label_prefix = ""

    def _materialize(self, node: Node, out: Buffer) -> None:
        if node.op == "reduce":
            self.emit_reduce(node, out)
        elif node.op == "matmul" and node.id in self.attention_plans:
            self.emit_attention(self.attention_plans[node.id], out)
        elif node.op == "matmul":
            self.emit_matmul(node, out)
        elif node.op == "embedding_bag":
            self.emit_embedding_bag(node, out)
        elif node.op == "conv":
            self.emit_conv(node, out)
        elif node.op == "pool":
            self.emit_pool(node, out)
        elif node.op == "col2im":
            self.emit_col2im(node, out)  # type: ignore[attr-defined]
        elif node.op == "im2col":
            self.emit_im2col(node, out)  # type: ignore[attr-defined]
        elif node.op == "custom":
            self.emit_custom(node, out)
        elif node.op == "cumulative":
            self.emit_cumulative(node, out)
        elif node.op == "scatter":
            self.emit_scatter(node, out)
        elif self.complex_pairs_source(node) is not None:
            self.emit_complex_pairs(self.complex_pairs_source(node), out)  # type: ignore[arg-type]
        elif self.flat_ok(node) and node.rank > 1:
            numel = shape_numel(node.shape)
            begin, end = self.par_range(self.dim(numel), numel, align=_CHUNK_ALIGN)
            with self.loop(end, start=begin) as i:
                self.store(out, i, self.emit_lin(node, i))
        else:
            with self.nest(node.shape, work=shape_numel(node.shape), rows_apart=True) as idx:
                self.store(out, self.linear(idx, node.shape), self.emit(node, idx))
