#!/usr/bin/env python3
"""Benchmark of the llvmaccel frontends: a DLRM-style model, an MLP and a
transformer block.

Variants (each is one call of the model's forward pass, inference only):

``llvmaccel``
    ``torch.compile(model, backend="llvmaccel")`` (llvmaccel passes on).
``llvmaccel-noaccel``
    the same with ``options={"auto": "none"}``: plain ``default<O3>``.
``eager``
    PyTorch eager.
``inductor``
    ``torch.compile(model)`` (TorchInductor, C++ codegen on the CPU).
``jax.jit``
    the same model written in JAX (DLRM only; fixed-size bags as
    ``take`` + ``sum``), under ``jax.jit``, timed in a child process
    after the others (:class:`Worker`).

Everything runs single-threaded by default (``torch.set_num_threads(1)``,
XLA flags ``--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1``);
``--threads N`` gives PyTorch N threads, and llvmaccel's BLAS calls follow
``torch.get_num_threads()`` (its generated loops run on the calling thread).
Each model's results name the kernel every matmul of the llvmaccel variant
got (``matmul_kernels``: ``blas``, ``own``, ``runtime``) and whether its
attentions were fused (``attention``: ``fused``, ``unfused``;
llvmaccel.codegen.attention). In
each round every variant runs once, interleaved, in a seeded random order
of its own (:func:`interleaved`; a fixed order measurably favoured some
positions), and each timed call follows an untimed call of the same
variant: with several threads, a call that followed another framework's
ran while that framework's OpenMP workers still spun on the cores (on the
Zen 5 host, 2 threads, the transformer block took 2.28-2.43 ms after eager
and 2.10-2.23 after itself, and the seeded orders had llvmaccel follow
eager 15 times in 41 rounds, its twin without the passes 8 times: a
0.96x "cost of the passes" that was the order's). Per variant the median
over the rounds is reported. Outputs are checked against eager before
timing.

Inputs: every call takes the next batch of a pool of ``POOL`` batches, as in
inference serving, where each batch looks up other rows. (With one batch
reused, the 64 MiB of rows a DLRM batch touches would partly stay in the
32 MiB L3 between calls and the benchmark would measure a warm cache.) The
variants cycle through the same pool, each from its own starting batch, so
each sees every batch equally often and the calls of a round take different
batches.

Models: ``dlrm`` (embedding bags, MLPs, interaction), ``emb`` (the DLRM's
embedding bags alone, the part accel-prefetch works on), ``mlp``, ``block``,
and ``ops``: single ops on a 2048x4096 float32 input (tanh, tanh then a row
sum, exp, gelu, softmax, an affine row sum, layer norm) and
``scaled_dot_product_attention`` (8 x 4 heads x 256 x 64). ``rope``: LLaMA's
rotary position embedding of q and k, written with complex64 tensors
(``torch.polar``, ``view_as_complex``, a complex multiplication,
``view_as_real``; the code generator's ``{ float, float }`` values are what
accel-phi-decompose works on). ``small``: calls of microseconds, where a
call's own overhead (dynamo's guards, the wrappers around the kernel) is
what counts: the MLP on one row, the transformer block on one sequence of
16, a softmax of 8 x 128; each of their timings spans as many calls in a
row as take eager about ``MIN_TIMING_MS`` (``calls per timing``).
``pool``: max, average and adaptive pooling of CNN-sized planes
(:func:`pool_models`).

Results are kept per host: ``bench/results/frontends.json`` holds one entry
per CPU it was recorded on (vendor, model name, family/model, LLVM's CPU
name), and a run replaces only its own host's figures for the models it ran;
``frontends.md`` shows every host: a run regenerates its host's section and
keeps the section it replaces, with whatever was written under it by hand,
right after it as an earlier run (bench/mdsections.py). ``--threads N``
runs every variant with N threads (default 1).

Usage::

    .venv/bin/python bench/frontends/run.py            # full run (~10-15 min)
    .venv/bin/python bench/frontends/run.py --models ops --threads 2
    .venv/bin/python bench/frontends/run.py --models ops --ops op_sdpa --out /tmp/x
    .venv/bin/python bench/frontends/run.py --quick    # tiny sizes, seconds;
                                                       # writes bench/work/frontends-quick
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import random
import shlex
import statistics
import sys
import time
import warnings
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

os.environ.setdefault("XLA_FLAGS",
                      "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1")

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
RESULTS = REPO / "bench" / "results"
sys.path.insert(0, str(HERE.parent))
import mdsections  # noqa: E402  (bench/mdsections.py: sections replaced, the rest kept)
from hostinfo import cpu_name as _cpu_name  # noqa: E402  (bench/hostinfo.py)
from hostinfo import host as _host  # noqa: E402


@dataclass(frozen=True)
class Sizes:
    tables: int
    rows: int
    dim: int
    batch: int
    bag: int
    dense: int
    mlp_batch: int
    mlp_width: int
    block_batch: int
    block_seq: int
    block_dim: int
    rounds: int


FULL = Sizes(tables=4, rows=1 << 20, dim=64, batch=2048, bag=32, dense=13,
             mlp_batch=256, mlp_width=512, block_batch=4, block_seq=128, block_dim=256,
             rounds=15)
QUICK = Sizes(tables=2, rows=5000, dim=16, batch=64, bag=8, dense=13,
              mlp_batch=16, mlp_width=64, block_batch=2, block_seq=16, block_dim=32, rounds=5)


# --- models -------------------------------------------------------------------


class DLRM(nn.Module):
    """Embedding bags + bottom MLP + dot interaction + top MLP."""

    def __init__(self, s: Sizes):
        super().__init__()
        self.embs = nn.ModuleList(nn.EmbeddingBag(s.rows, s.dim, mode="sum", _weight=torch.empty(
            s.rows, s.dim).uniform_(-0.05, 0.05)) for _ in range(s.tables))
        self.bottom = nn.Sequential(nn.Linear(s.dense, 128), nn.ReLU(), nn.Linear(128, s.dim),
                                    nn.ReLU())
        n = s.tables + 1
        li, lj = torch.tril_indices(n, n, -1)
        self.register_buffer("li", li, persistent=False)
        self.register_buffer("lj", lj, persistent=False)
        self.top = nn.Sequential(nn.Linear(s.dim + n * (n - 1) // 2, 128), nn.ReLU(),
                                 nn.Linear(128, 1))

    def forward(self, dense, indices, offsets):
        x = self.bottom(dense)
        feats = [x] + [e(indices[t], offsets[t]) for t, e in enumerate(self.embs)]
        z = torch.stack(feats, 1)
        inter = torch.bmm(z, z.transpose(1, 2))[:, self.li, self.lj]
        return torch.sigmoid(self.top(torch.cat([x, inter], 1)))


class MLP(nn.Module):
    def __init__(self, s: Sizes):
        super().__init__()
        w = s.mlp_width
        self.net = nn.Sequential(nn.Linear(w, 2 * w), nn.GELU(), nn.Linear(2 * w, w), nn.ReLU(),
                                 nn.Linear(w, 16))

    def forward(self, x):
        return torch.log_softmax(self.net(x), -1)


class Block(nn.Module):
    def __init__(self, s: Sizes, heads: int = 4):
        super().__init__()
        d = s.block_dim
        self.h = heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc1, self.fc2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=-1)
        q, k, v = (z.view(b, t, self.h, d // self.h).transpose(1, 2) for z in (q, k, v))
        att = torch.softmax(q @ k.transpose(-1, -2) / (d // self.h) ** 0.5, dim=-1)
        y = (att @ v).transpose(1, 2).reshape(b, t, d)
        x = x + self.proj(y)
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


# RoPE: (batch, seq, q heads, kv heads, head_dim), full and --quick.
ROPE_SIZES = {False: (8, 512, 32, 8, 128), True: (2, 16, 4, 2, 32)}


def precompute_freqs_cis(dim: int, end: int, theta: float = 10000.0) -> torch.Tensor:
    """LLaMA's rotary frequencies: unit complex numbers e^(i t f) for the
    positions t < end and the dim / 2 frequencies f."""
    freqs = 1.0 / (theta ** (torch.arange(0, dim, 2)[: (dim // 2)].float() / dim))
    angles = torch.outer(torch.arange(end, dtype=torch.float32), freqs)
    return torch.polar(torch.ones_like(angles), angles)


class Rope(nn.Module):
    """Rotary position embedding of q and k ([batch, seq, heads, head_dim]),
    as LLaMA's reference implementation computes it: each pair of features
    is a complex number, rotated by multiplying with its position's
    frequencies."""

    def __init__(self, head_dim: int, max_seq: int):
        super().__init__()
        self.register_buffer("freqs_cis", precompute_freqs_cis(head_dim, max_seq),
                             persistent=False)

    @staticmethod
    def rotate(x: torch.Tensor, freqs_cis: torch.Tensor) -> torch.Tensor:
        z = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))
        fc = freqs_cis.view(1, z.shape[1], 1, z.shape[-1])
        return torch.view_as_real(z * fc).flatten(3).type_as(x)

    def forward(self, xq, xk):
        fc = self.freqs_cis[: xq.shape[1]]
        return self.rotate(xq, fc), self.rotate(xk, fc)


def rope_inputs(quick: bool, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    b, t, hq, hk, d = ROPE_SIZES[quick]
    g = torch.Generator().manual_seed(seed)
    return torch.randn(b, t, hq, d, generator=g), torch.randn(b, t, hk, d, generator=g)


POOL = 8


class Op(nn.Module):
    """One op (or a short chain) as a model, for the ``ops`` set."""

    def __init__(self, fn, *params: torch.Tensor):
        super().__init__()
        self.fn = fn
        self.params = nn.ParameterList([nn.Parameter(p, requires_grad=False) for p in params])

    def forward(self, *xs):
        return self.fn(*xs, *self.params)


def op_models(s: Sizes) -> dict[str, tuple[nn.Module, list[tuple]]]:
    """The ``ops`` set: name -> (model, pool of inputs)."""
    rows, cols = (2048, 4096) if s is FULL else (64, 128)
    g = torch.Generator().manual_seed(0)

    def pool(*shape):
        return [(torch.randn(*shape, generator=g),) for _ in range(POOL)]

    x = pool(rows, cols)
    b, h, t, dh = (8, 4, 256, 64) if s is FULL else (2, 2, 16, 8)
    qkv = [tuple(torch.randn(b, h, t, dh, generator=g) for _ in range(3)) for _ in range(POOL)]
    return {
        "op_tanh": (Op(torch.tanh), x),
        "op_tanh_sum": (Op(lambda x: torch.tanh(x).sum(-1)), x),
        "op_exp": (Op(torch.exp), x),
        "op_gelu": (Op(F.gelu), x),
        "op_softmax": (Op(lambda x: torch.softmax(x, -1)), x),
        "op_affine_sum": (Op(lambda x: (x * 1.5 + 0.5).sum(-1)), x),
        "op_layer_norm": (Op(lambda x, w, bias: F.layer_norm(x, (cols,), w, bias),
                             torch.randn(cols, generator=g), torch.randn(cols, generator=g)), x),
        "op_sdpa": (Op(F.scaled_dot_product_attention), qkv),
    }


def pool_models(s: Sizes) -> dict[str, tuple[nn.Module, list[tuple]]]:
    """The ``pool`` set: a ResNet stem's 3 x 3 max pool (stride 2, padding
    1) of 64 planes of 56 x 56, a 2 x 2 average of 256 planes of 14 x 14,
    and adaptive averages of 256 planes of 15 x 15 to 7 x 7 (3 x 3 windows
    every 2) and of 10 x 9 to 4 x 5 (windows of unequal sizes), and an
    adaptive max of 15 x 15 to 4 x 4; batch 32."""
    g = torch.Generator().manual_seed(2)
    n = 32 if s is FULL else 2

    def pool(*shape):
        return [(torch.randn(n, *shape, generator=g),) for _ in range(POOL)]

    return {
        "maxpool_3x3_s2": (Op(lambda x: F.max_pool2d(x, 3, 2, 1)), pool(64, 56, 56)),
        "avgpool_2x2": (Op(lambda x: F.avg_pool2d(x, 2)), pool(256, 14, 14)),
        "adaptive_avg_15_to_7": (Op(lambda x: F.adaptive_avg_pool2d(x, 7)), pool(256, 15, 15)),
        "adaptive_avg_10x9_to_4x5": (Op(lambda x: F.adaptive_avg_pool2d(x, (4, 5))),
                                     pool(256, 10, 9)),
        "adaptive_max_15_to_4": (Op(lambda x: F.adaptive_max_pool2d(x, 4)), pool(256, 15, 15)),
    }


def small_models(s: Sizes) -> dict[str, tuple[nn.Module, list[tuple]]]:
    """The ``small`` set, calls of microseconds where each call's own
    overhead counts: the MLP on one row, the transformer block on one
    sequence of 16, a softmax of 8 x 128."""
    g = torch.Generator().manual_seed(1)

    def pool(*shape):
        return [(torch.randn(*shape, generator=g),) for _ in range(POOL)]

    return {
        "mlp_batch1": (MLP(s), pool(1, s.mlp_width)),
        "block_batch1": (Block(s), pool(1, min(16, s.block_seq), s.block_dim)),
        "op_small_softmax": (Op(lambda x: torch.softmax(x, -1)), pool(8, 128)),
    }


def dlrm_inputs(s: Sizes, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    dense = torch.randn(s.batch, s.dense, generator=g)
    indices = torch.randint(0, s.rows, (s.tables, s.batch * s.bag), generator=g)
    offsets = (torch.arange(s.batch) * s.bag).repeat(s.tables, 1)
    return dense, indices, offsets


def jax_dlrm(model: DLRM, s: Sizes):
    """The same DLRM in JAX (weights shared through numpy), under jax.jit."""
    import jax
    import jax.numpy as jnp

    def lin(m):
        return jnp.asarray(m.weight.detach().numpy().T), jnp.asarray(m.bias.detach().numpy())

    tables = [jnp.asarray(e.weight.detach().numpy()) for e in model.embs]
    b1, b2 = lin(model.bottom[0]), lin(model.bottom[2])
    t1, t2 = lin(model.top[0]), lin(model.top[2])
    li, lj = np.asarray(model.li), np.asarray(model.lj)

    def fwd(params, dense, indices):
        tables, b1, b2, t1, t2 = params
        x = jax.nn.relu(jax.nn.relu(dense @ b1[0] + b1[1]) @ b2[0] + b2[1])
        feats = [x] + [jnp.take(t, indices[k], axis=0).reshape(s.batch, s.bag, s.dim).sum(1)
                       for k, t in enumerate(tables)]
        z = jnp.stack(feats, 1)
        inter = jnp.einsum("bid,bjd->bij", z, z)[:, li, lj]
        h = jax.nn.relu(jnp.concatenate([x, inter], 1) @ t1[0] + t1[1])
        return jax.nn.sigmoid(h @ t2[0] + t2[1])

    jitted = jax.jit(fwd)
    params = (tables, b1, b2, t1, t2)
    return lambda dense, indices, offsets: jitted(params, dense, indices), (jax, jnp)


# --- harness --------------------------------------------------------------------


def interleaved(names: list[str], rounds: int, time_one: Callable[[str, int], float],
                settle: Callable[[str, int], object]) -> dict[str, list[float]]:
    """Times every variant once per round: ``time_one(name, round)`` gives
    the time, right after an untimed ``settle(name, round)`` of the same
    variant. Each round takes the variants in its own seeded random order.

    The settling call makes the timed one follow its own variant: a timing
    right after another framework's call measured, with several threads,
    that framework's OpenMP workers still spinning on the cores, and a
    random order does not give every variant the same predecessors (41
    seeded rounds of four variants gave one 15 eager predecessors, another
    8). A rotation (each variant always after the same one) is worse."""
    times: dict[str, list[float]] = {k: [] for k in names}
    for r in range(rounds):
        for k in random.Random(r).sample(names, len(names)):
            settle(k, r)
            times[k].append(time_one(k, r))
    return times


def timed(fn, args, calls: int = 1) -> float:
    """Milliseconds per call of ``fn(*args)``, over ``calls`` calls in a row."""
    t0 = time.perf_counter()
    for _ in range(calls):
        out = fn(*args)
        if hasattr(out, "block_until_ready"):
            out.block_until_ready()
    return (time.perf_counter() - t0) * 1e3 / calls


#: A timing of a model whose call is shorter spans several calls in a row
#: (the ``small`` set: there the call's own overhead, dynamo's guards and the
#: wrapper around the kernel, is what is measured).
MIN_TIMING_MS = 2.0


def bench_model(name: str, model: nn.Module, pool: list[tuple], rounds: int,
                extra: dict | None = None, remote: dict | None = None) -> dict:
    """Times the variants of ``model``; round r's call of variant i takes
    ``pool[(r + i * len(pool) // variants) % len(pool)]``.

    ``extra`` maps a variant name to ``(fn, convert)``: ``fn`` is called on
    ``convert(args)`` (converted once per pool entry, before timing).
    ``remote`` maps a variant name to the arguments of a :class:`Worker`
    that times it in a child process on the same pool, after the others.
    """
    import llvmaccel.torch as lt
    from llvmaccel import compiler

    seen = set(compiler._cache)  # noqa: SLF001 - to name the matmul kernels used
    # Models of one class share their forward's code object: without a reset,
    # dynamo's recompile limit would quietly run later models eagerly.
    torch._dynamo.reset()
    model.eval()
    variants = {
        "llvmaccel": torch.compile(model, backend="llvmaccel", dynamic=False),
        "llvmaccel-noaccel": torch.compile(model, backend="llvmaccel", dynamic=False,
                                           options={"auto": "none"}),
        "eager": model,
        "inductor": torch.compile(model, dynamic=False),
    }
    pools = {k: pool for k in variants}
    for k, (fn, convert) in (extra or {}).items():
        variants[k] = fn
        pools[k] = [convert(args) for args in pool]
    remote = remote or {}
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = model(*pool[0])
        compile_s = {}
        for k, fn in variants.items():
            t0 = time.perf_counter()
            out = fn(*pools[k][0])
            compile_s[k] = time.perf_counter() - t0
            _assert_close(out, ref)
        for k, fn in variants.items():  # second warm-up call
            fn(*pools[k][1 % len(pool)])
        # Calls per timing: from eager's call time (1 for every model but
        # the small ones).
        eager_ms = min(timed(model, pool[0]) for _ in range(3))
        calls = max(1, min(1000, round(MIN_TIMING_MS / max(eager_ms, 1e-6))))
        names = list(variants)
        # Variant i's call j takes batch (j + i * POOL / variants) of the
        # pool: every variant goes through the pool in the same order, each
        # batch as often as for any other variant, and the calls of one
        # round take different batches (the next call never finds its batch
        # in the cache from the call before). A count shared by all calls
        # gave each variant the batches of its positions in the random
        # orders, not the same ones for every variant.
        offset = {k: i * len(pool) // len(names) for i, k in enumerate(names)}
        # The untimed call before each timing takes the variant's previous
        # batch, so the timed one never finds its own batch in the cache.
        times = interleaved(
            names, rounds,
            lambda k, r: timed(variants[k], pools[k][(r + offset[k]) % len(pool)], calls),
            lambda k, r: variants[k](*pools[k][(r + offset[k] - 1) % len(pool)]))
        for k, args in remote.items():
            worker = Worker(args)
            compile_s[k] = worker.first_call_s
            times[k] = [worker.call(i % len(pool)) for i in range(rounds)]
            worker.close()
        ex = lt.explain(model, *pool[0])
    matmuls: dict[str, int] = {}
    attention: dict[str, int] = {}
    # The kernels compiled with and without the passes (auto "all", "none"),
    # paired by the rest of their cache key.
    pairs: dict[tuple, dict[str, compiler.CompiledGraph]] = {}
    for key, c in list(compiler._cache.items()):  # noqa: SLF001
        if key in seen:
            continue
        pairs.setdefault(key[:5] + key[6:], {})[key[5]] = c
        if key[5] == "all":  # the llvmaccel variant's kernels
            for _, kernel, _ in c.kernel.matmuls:
                matmuls[kernel] = matmuls.get(kernel, 0) + 1
            for _, kind, _ in c.kernel.attention:
                attention[kind] = attention.get(kind, 0) + 1
    med = {k: statistics.median(v) for k, v in times.items()}
    base = med["llvmaccel"]
    same_ir = _same_ir_as_noaccel(pairs.values())
    return {
        "model": name,
        "median_ms": med,
        "calls_per_timing": calls,
        "all_ms": times,
        "first_call_s": compile_s,
        "speedup_of_llvmaccel_over": {k: v / base for k, v in med.items() if k != "llvmaccel"},
        "fully_compiled": ex.fully_compiled,
        "passes_fired": ex.passes_fired(),
        "matmul_kernels": matmuls,
        "attention": attention,
        "same_ir_as_noaccel": same_ir,
        "prefetch_remarks": [r.message for r in ex.remarks
                             if r.pass_name == "accel-prefetch" and r.kind == "passed"],
    }


def _same_ir_as_noaccel(pairs) -> bool | None:
    """Whether every kernel came out of the default pipeline with the
    llvmaccel passes (``auto="all"``) as it did without them (``"none"``):
    then the two variants run the same machine code, and any difference
    between their times is noise. ``pairs``: the kernels of one graph by their
    ``auto``. None when there is no pair."""
    both = [p for p in pairs if "all" in p and "none" in p]
    if not both:
        return None
    return all(p["all"].optimized_ir == p["none"].optimized_ir for p in both)


def _assert_close(out, ref) -> None:
    """``out`` (a tensor, array or tuple of them) matches eager's ``ref``."""
    if isinstance(ref, (tuple, list)):
        for o, r in zip(out, ref, strict=True):
            _assert_close(o, r)
        return
    out = torch.from_numpy(np.asarray(out)) if not isinstance(out, torch.Tensor) else out
    torch.testing.assert_close(out.reshape(ref.shape), ref, rtol=2e-3, atol=2e-3)


class Worker:
    """A variant timed in a child process (``run.py --jax-worker``), one call
    per request, after the other variants: interleaved with them, even from
    another process, JAX's DLRM made the torch variants vary by up to 2x
    between rounds (without it they vary by about 3%); its own time is 5x
    theirs, far outside that noise. The child builds the same model and pool
    (same seeds), checks its output against eager, and answers each request
    "batch k" with the time of one call on pool[k] in ms.
    """

    def __init__(self, args: list[str]) -> None:
        import subprocess

        self.proc = subprocess.Popen([sys.executable, str(Path(__file__).resolve()), *args],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        ready = self._read()
        if not ready.startswith("ready"):
            raise RuntimeError(f"worker failed to start: {ready!r}")
        self.first_call_s = float(ready.split(" ", 1)[1])

    def _read(self) -> str:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"worker exited with status {self.proc.wait()}")
        return line.strip()

    def call(self, batch: int) -> float:
        assert self.proc.stdin is not None
        self.proc.stdin.write(f"{batch}\n")
        self.proc.stdin.flush()
        return float(self._read())

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        self.proc.wait(timeout=60)


def jax_worker(s: Sizes) -> int:
    """The child of :class:`Worker` for the JAX DLRM (see there)."""
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = DLRM(s).eval()
    pool = [dlrm_inputs(s, seed=k) for k in range(POOL)]
    fn, (jax, jnp) = jax_dlrm(model, s)
    jpool = [(jnp.asarray(a[0].numpy()), jnp.asarray(a[1].numpy()), None) for a in pool]
    with torch.no_grad():
        ref = model(*pool[0])
    t0 = time.perf_counter()
    out = torch.from_numpy(np.asarray(fn(*jpool[0])))
    first = time.perf_counter() - t0
    torch.testing.assert_close(out.reshape(ref.shape), ref, rtol=2e-3, atol=2e-3)
    fn(*jpool[1 % POOL]).block_until_ready()
    print("ready", first, flush=True)
    for line in sys.stdin:
        print(f"{timed(fn, jpool[int(line)]):.6f}", flush=True)
    return 0


class Embeddings(nn.Module):
    """The embedding bags of a DLRM, concatenated (what accel-prefetch works on)."""

    def __init__(self, dlrm: DLRM):
        super().__init__()
        self.embs = dlrm.embs

    def forward(self, dense, indices, offsets):
        return torch.cat([e(indices[t], offsets[t]) for t, e in enumerate(self.embs)], 1)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="tiny sizes (a smoke run)")
    ap.add_argument("--rounds", type=int, default=None)
    ap.add_argument("--out", type=Path, default=None,
                    help="directory for frontends.json and frontends.md (default: "
                         "bench/results, or bench/work/frontends-quick with --quick)")
    ap.add_argument("--models", default="dlrm,emb,mlp,block,ops,rope,small,pool",
                    help="comma-separated: dlrm, emb, mlp, block, ops, rope, small, pool")
    ap.add_argument("--ops", default=None,
                    help="with --models ops: only these ops (comma-separated, e.g. op_sdpa)")
    ap.add_argument("--threads", type=int, default=1, help="threads for every variant")
    ap.add_argument("--jax-worker", action="store_true", help=argparse.SUPPRESS)
    opts = ap.parse_args(argv)
    s = QUICK if opts.quick else FULL
    if opts.jax_worker:
        return jax_worker(s)
    rounds = opts.rounds or s.rounds
    load_start = os.getloadavg()
    out_dir = opts.out or (REPO / "bench" / "work" / "frontends-quick" if opts.quick else RESULTS)
    torch.set_num_threads(opts.threads)
    torch.manual_seed(0)
    os.environ.setdefault("LLVMACCEL_CACHE_DIR", "off")
    from llvmaccel import blas

    threshold = ""
    if blas.load() is not None and blas.mode() == "auto":
        # The library's threshold, measured now: its kernels (compiled to
        # time both) are then not counted as a model's matmuls.
        threshold = f"the library {blas.threshold_text(4)}"
    results = []
    models = opts.models.split(",")
    if "dlrm" in models or "emb" in models:
        model = DLRM(s).eval()
        # Between two uses of a batch come POOL - 1 calls on other batches,
        # each touching 64 MiB of rows: no call finds its rows in cache.
        pool = [dlrm_inputs(s, seed=k) for k in range(POOL)]
        if "emb" in models:
            results.append(bench_model("dlrm_embeddings", Embeddings(model), pool, rounds))
        if "dlrm" in models:
            remote = {}
            try:
                import jax  # noqa: F401

                remote["jax.jit"] = ["--jax-worker"] + (["--quick"] if opts.quick else [])
            except ImportError:
                pass
            r = bench_model("dlrm", model, pool, rounds, remote=remote)
            r["table_bytes"] = s.tables * s.rows * s.dim * 4
            results.append(r)
        del model, pool
    if "mlp" in models:
        results.append(bench_model("mlp", MLP(s), [(torch.randn(s.mlp_batch, s.mlp_width),)
                                                    for _ in range(POOL)], rounds))
    if "block" in models:
        results.append(bench_model(
            "transformer_block", Block(s),
            [(torch.randn(s.block_batch, s.block_seq, s.block_dim),) for _ in range(POOL)],
            rounds))
    if "ops" in models:
        for name, (model, pool) in op_models(s).items():
            if opts.ops and name not in opts.ops.split(","):
                continue
            results.append(bench_model(name, model, pool, rounds))
    if "pool" in models:
        for name, (model, pool) in pool_models(s).items():
            results.append(bench_model(name, model, pool, rounds))
    if "small" in models:
        for name, (model, pool) in small_models(s).items():
            results.append(bench_model(name, model, pool, rounds))
    if "rope" in models:
        b, t, hq, hk, d = ROPE_SIZES[opts.quick]
        r = bench_model("rope", Rope(d, t), [rope_inputs(opts.quick, k) for k in range(POOL)],
                        rounds)
        r["shape"] = {"batch": b, "seq": t, "q_heads": hq, "kv_heads": hk, "head_dim": d}
        results.append(r)
    command = shlex.join([".venv/bin/python", "bench/frontends/run.py",
                          *(argv if argv is not None else sys.argv[1:])])
    meta = {
        "command": command,
        "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "machine": platform.machine(),
        "cpu": _cpu_name(),
        "host": _host(),
        "torch": torch.__version__,
        "threads": opts.threads,
        "load_average": [round(v, 2) for v in (*load_start, *os.getloadavg())],
        "rounds": rounds,
        "sizes": asdict(s),
    }
    if threshold:
        meta["note"] = f"BLAS matmuls (llvmaccel.blas.threshold, f32): {threshold}."
    try:
        import jax

        meta["jax"] = jax.__version__
    except ImportError:
        pass
    import llvmaccel

    meta["llvm"] = llvmaccel.llvm_version()
    out_dir.mkdir(parents=True, exist_ok=True)
    hosts = _merge_host(out_dir / "frontends.json", meta, results)
    (out_dir / "frontends.json").write_text(json.dumps({"hosts": hosts}, indent=2) + "\n")
    write_markdown(out_dir / "frontends.md", hosts, _host_key(meta))
    print(_markdown(meta, results))
    return 0


def _merge_host(path: Path, meta: dict, results: list[dict]) -> dict:
    """The results file's hosts with this run's figures in place: earlier
    hosts are kept, and on this host only the models this run measured (with
    the same thread count) are replaced."""
    hosts: dict = {}
    if path.exists():
        old = json.loads(path.read_text())
        if "hosts" in old:
            hosts = old["hosts"]
        elif "meta" in old:  # the first format: one host, before hosts were named
            hosts = {"amd-epyc (family/model not recorded) (1 thread)": old}
    key = _host_key(meta)
    entry = hosts.get(key, {"meta": meta, "results": []})
    measured = {r["model"] for r in results}
    kept = [r for r in entry["results"] if r["model"] not in measured]
    # Each model's figures say which run measured them (the section's
    # header is the latest run's).
    for r in kept:
        r.setdefault("run", _run_of(entry["meta"]))
    for r in results:
        r["run"] = _run_of(meta)
    hosts[key] = {"meta": meta, "results": kept + results}
    return hosts


def _run_of(meta: dict) -> dict:
    """What names a run beside its figures: its date and command."""
    return {"date": meta["date"], "command": meta["command"]}


def write_markdown(path: Path, hosts: dict, key: str) -> None:
    """Writes the results file ``path``: in an existing one, the section of
    ``key`` (this run's host and thread count) is replaced and the one it
    replaces follows as an earlier run; other hosts, earlier runs,
    hand-written paragraphs and bench/frontends/jax_control.py's section
    stay as they are."""
    mdsections.update(path, [_markdown_host(key, hosts[key])], lambda: _markdown_hosts(hosts),
                      before="<!-- jax-control:begin -->")


def _host_key(meta: dict) -> str:
    """The results' key of a run: the host's and the thread count."""
    return f"{meta['host']['key']} ({meta['threads']} thread{'s' * (meta['threads'] > 1)})"


def _markdown_host(key: str, entry: dict) -> str:
    """The section of one host (and thread count)."""
    return f"## {key}\n\n" + _markdown(entry["meta"], entry["results"]).split("\n", 2)[2]


def _markdown_hosts(hosts: dict) -> str:
    parts = ["# llvmaccel frontends benchmark\n",
             "One section per host (and thread count) the benchmark was recorded on; a run "
             "replaces only its own host's section, and keeps the section it replaces "
             "below it as an earlier run.\n"]
    for key, entry in hosts.items():
        parts.append(_markdown_host(key, entry))
    return "\n".join(parts)


def _markdown(meta: dict, results: list[dict]) -> str:
    s = meta["sizes"]
    lines = [
        "# llvmaccel frontends benchmark",
        "",
        f"Reproduce: `{meta['command']}`",
        "",
        f"{meta['date']}, {meta['cpu']}, {meta.get('threads', 1)} thread(s), "
        f"torch {meta['torch']}, "
        f"jax {meta.get('jax', '-')}, LLVM {meta['llvm']}; median of {meta['rounds']} "
        "interleaved rounds; each call takes the next of "
        f"{POOL} input batches (other rows each time, see the module docstring). "
        "`jax.jit` is timed in a child process after the other variants."
        + (f" Load average (1/5/15 min) at start {meta['load_average'][:3]}, at end "
           f"{meta['load_average'][3:]}." if "load_average" in meta else "")
        + (f" {meta['note']}" if "note" in meta else ""),
        "",
        f"DLRM: {s['tables']} tables x {s['rows']} rows x {s['dim']} f32 "
        f"({s['tables'] * s['rows'] * s['dim'] * 4 / 2**30:.2f} GiB), batch {s['batch']}, "
        f"bags of {s['bag']}. MLP: batch {s['mlp_batch']}, width {s['mlp_width']}. "
        f"Transformer block: {s['block_batch']}x{s['block_seq']}x{s['block_dim']}.",
        "",
        "| model | variant | median ms | llvmaccel speed-up vs variant |",
        "|---|---|---:|---:|",
    ]
    for r in results:
        for k, v in r["median_ms"].items():
            sp = r["speedup_of_llvmaccel_over"].get(k)
            ms = f"{v:.2f}" if v >= 0.1 else f"{v:.4f}"
            lines.append(f"| {r['model']} | {k} | {ms} | {'' if sp is None else f'{sp:.2f}x'} |")
    lines.append("")
    earlier: dict[tuple, list[str]] = {}
    for r in results:
        run = r.get("run")
        if run and run["date"] != meta["date"]:
            earlier.setdefault((run["date"], run["command"]), []).append(r["model"])
    for (date, command), names in earlier.items():
        lines.append(f"Measured in an earlier run ({date}, `{command}`): "
                     f"{', '.join(names)}.")
        lines.append("")
    for r in results:
        lines.append(f"- {r['model']}: fully compiled: {r['fully_compiled']}; passes fired: "
                     f"{', '.join(r['passes_fired']) or '(none)'}"
                     + (f"; {len(r['prefetch_remarks'])} prefetch remark(s)"
                        if r["prefetch_remarks"] else "")
                     + ("; matmuls: " + ", ".join(f"{v} {k}" for k, v in
                                                  sorted(r["matmul_kernels"].items()))
                        if r.get("matmul_kernels") else "")
                     + ("; attention: " + ", ".join(f"{v} {k}" for k, v in
                                                    sorted(r["attention"].items()))
                        if r.get("attention") else "")
                     + ("; optimized IR identical to llvmaccel-noaccel's"
                        if r.get("same_ir_as_noaccel") else "")
                     + (f"; {r['calls_per_timing']} calls per timing"
                        if r.get("calls_per_timing", 1) > 1 else ""))
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
