#!/usr/bin/env python3
"""The affine row sum ``(x * 1.5 + 0.5).sum(-1)`` of run.py's ops, 2048 x
4096 float32 (a 32 MiB stream), compiled by llvmaccel and by inductor and
timed interleaved in a random order per round, with and without eager
PyTorch among the variants, each call's time kept by what ran just before
it: eager's call writes two 32 MiB temporaries, whose dirty lines and freed
pages the next call meets. A third variant, ``direct``, calls llvmaccel's
compiled graph itself (``CompiledGraph.__call__``, no dynamo or AOTAutograd
wrapper around it) on the same inputs.

Usage::

    .venv/bin/python bench/frontends/affine_order.py --threads 2
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402
from hostinfo import cpu_name, host  # noqa: E402

import llvmaccel.torch  # noqa: E402, F401
from llvmaccel import compiler  # noqa: E402


def affine(x: torch.Tensor) -> torch.Tensor:
    return (x * 1.5 + 0.5).sum(-1)


def run(with_eager: bool, rounds: int) -> dict[tuple[str, str], list[float]]:
    torch._dynamo.reset()
    pool = [torch.randn(2048, 4096) for _ in range(8)]
    compiler.clear_memory_cache()
    ours = torch.compile(affine, backend="llvmaccel", dynamic=False)
    ours(pool[0])
    (graph,) = compiler._cache.values()  # noqa: SLF001
    variants = {"llvmaccel": ours, "inductor": torch.compile(affine, dynamic=False),
                "direct": graph}
    if with_eager:
        variants["eager"] = affine
    for v in variants.values():
        v(pool[0])
        v(pool[1])
    times: dict[tuple[str, str], list[float]] = {}
    prev = "-"
    names = list(variants)
    for r in range(rounds):
        for name in random.Random(r).sample(names, len(names)):
            x = pool[(r + 3 * names.index(name)) % len(pool)]
            t0 = time.perf_counter()
            variants[name](x)
            dt = (time.perf_counter() - t0) * 1e3
            times.setdefault((name, "eager" if prev == "eager" else "other"), []).append(dt)
            times.setdefault((name, "all"), []).append(dt)
            prev = name
    return times


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--rounds", type=int, default=300)
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    print(f"{cpu_name()} ({host()['key']}), {args.threads} thread(s), torch {torch.__version__}, "
          f"{args.rounds} rounds; median ms (calls)")
    print("| variants | after | llvmaccel | inductor | direct | llvmaccel vs inductor |")
    print("|---|---|---:|---:|---:|---:|")
    for with_eager in (False, True):
        t = run(with_eager, args.rounds)
        label = "llvmaccel, inductor, direct" + (", eager" if with_eager else "")
        for after in (("all", "eager", "other") if with_eager else ("all",)):
            a, b = t.get(("llvmaccel", after)), t.get(("inductor", after))
            d = t.get(("direct", after))
            if not a or not b or not d:
                continue
            ma, mb, md = statistics.median(a), statistics.median(b), statistics.median(d)
            what = {"all": "any", "eager": "eager", "other": "not eager"}[after]
            print(f"| {label} | {what} | {ma:.3f} ({len(a)}) | {mb:.3f} ({len(b)}) | "
                  f"{md:.3f} ({len(d)}) | {mb / ma:.2f}x |", flush=True)


if __name__ == "__main__":
    main()
