#!/usr/bin/env python3
"""Where the time of a tiny torch.compile call goes: eager, inductor and
llvmaccel through ``torch.compile``, and llvmaccel's own part of the call
(its runner, as aot_autograd calls it, and the planned kernel call beneath).

Each figure is microseconds per call, the median of ``--rounds`` timings of
``--calls`` calls in a row, the variants interleaved round by round. The
cases are a 64-element ``tanh(x) * y + 1`` (a function) and a softmax of
8 x 128 (an ``nn.Module``, as the ``small`` set of run.py has it), under
``torch.no_grad()`` and without it.

Usage::

    .venv/bin/python bench/frontends/call_overhead.py [--threads 1] [--rounds 9]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from hostinfo import cpu_name, host  # noqa: E402  (bench/hostinfo.py)


class Softmax(torch.nn.Module):
    def forward(self, x):
        return torch.softmax(x, -1)


def cases() -> dict:
    """name -> (function or module, inputs)."""
    return {
        "tanh(x) * y + 1, 64 elements": (lambda x, y: torch.tanh(x) * y + 1.0,
                                         (torch.randn(64), torch.randn(64))),
        "softmax module, 8 x 128": (Softmax().eval(), (torch.randn(8, 128),)),
    }


def measure(fn, args, grad: bool, rounds: int, calls: int) -> dict[str, float]:
    from llvmaccel.torch import dynamo

    runners = []
    real = dynamo._runner

    def spy(lowered, compiled):
        runners.append(real(lowered, compiled))
        return runners[-1]

    torch._dynamo.reset()
    dynamo._runner = spy
    try:
        with torch.set_grad_enabled(grad):
            variants = {"eager": fn,
                        "inductor": torch.compile(fn, dynamic=False),
                        "llvmaccel": torch.compile(fn, backend="llvmaccel", dynamic=False)}
            for v in variants.values():
                v(*args)
                v(*args)
    finally:
        dynamo._runner = real
    (run,) = runners
    listed = list(args)
    variants["llvmaccel runner"] = lambda *a: run.boxed(listed)
    variants["llvmaccel planned call"] = lambda *a: run.compiled.call_tensors(listed)
    times: dict[str, list[float]] = {k: [] for k in variants}
    with torch.set_grad_enabled(grad):
        for _ in range(rounds):
            for k, v in variants.items():
                t0 = time.perf_counter_ns()
                for _ in range(calls):
                    v(*args)
                times[k].append((time.perf_counter_ns() - t0) / calls / 1e3)
    return {k: statistics.median(v) for k, v in times.items()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--calls", type=int, default=3000)
    opts = ap.parse_args(argv)
    torch.set_num_threads(opts.threads)
    import llvmaccel.torch  # noqa: F401  (registers the backend)

    print(f"{cpu_name()} ({host()['key']}), {opts.threads} thread(s), torch "
          f"{torch.__version__}; us per call, median of {opts.rounds} x {opts.calls} calls")
    names = ["eager", "inductor", "llvmaccel", "llvmaccel runner", "llvmaccel planned call"]
    print("| case | grad | " + " | ".join(names) + " |")
    print("|---|---|" + "---:|" * len(names))
    for name, (fn, args) in cases().items():
        for grad in (False, True):
            med = measure(fn, args, grad, opts.rounds, opts.calls)
            print(f"| {name} | {'on' if grad else 'no_grad'} | "
                  + " | ".join(f"{med[k]:.2f}" for k in names) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
