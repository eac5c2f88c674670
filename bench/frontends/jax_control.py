#!/usr/bin/env python3
"""Benchmark of JAX control flow under ``llvmaccel.jax.jit`` against
``jax.jit``: a ``lax.scan`` RNN cell and a ``fori_loop`` decode-style loop.

``rnn``
    ``h = tanh(x_t @ W + h @ U + b)`` over ``T`` steps of ``lax.scan``
    (batch ``B``, input ``I``, hidden ``H``), stacking every ``h``.
``decode``
    greedy decoding for ``T`` steps of ``lax.fori_loop``: logits ``h @ W``
    over a vocabulary ``V``, the argmax token, ``h = tanh(h + E[token])``,
    the token written into the output with ``.at[i].set``.
``decode_while``
    the same with ``lax.while_loop``, stopping early at an end token (one
    that the inputs never produce, so every variant runs ``T`` steps; the
    loop's trip count is still the data's).

Each at two sizes (``decode_while`` at the larger). Variants:
``llvmaccel.jax.jit`` (jax.Array outputs), ``kernel`` (its compiled graph
called directly, numpy outputs) and ``jax.jit``, all single-threaded by
default (XLA flags ``--xla_cpu_multi_thread_eigen=false
intra_op_parallelism_threads=1``; llvmaccel's thread count 1). ``--threads
N`` gives XLA's CPU client N intra-op threads and llvmaccel N threads (the
loop bodies' large products are split between them; small bodies stay on
one thread).
Each round calls every variant once, interleaved, the order rotated by one
each round; the median over the rounds is reported. Outputs are compared before timing. The
machine may be shared: the load average at start and end is recorded.

Results: ``bench/results/jax-control.json`` (one entry per host, its
earlier runs kept beside the latest) and a ``JAX control flow`` section of
``bench/results/frontends.md``.

Usage (pinned to one core, as recorded: the machine may be shared)::

    taskset -c 0 .venv/bin/python bench/frontends/jax_control.py   # ~1 min
    .venv/bin/python bench/frontends/jax_control.py --threads 2
    .venv/bin/python bench/frontends/jax_control.py --quick    # smoke run, no files written
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import statistics
import sys
import time
from pathlib import Path


def _threads_arg(argv: list[str]) -> int:
    """``--threads N`` read before JAX is imported (XLA reads its flags then)."""
    for k, a in enumerate(argv):
        if a == "--threads" and k + 1 < len(argv):
            return max(1, int(argv[k + 1]))
        if a.startswith("--threads="):
            return max(1, int(a.split("=", 1)[1]))
    return 1


THREADS = _threads_arg(sys.argv[1:])
os.environ.setdefault("XLA_FLAGS", (
    "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1" if THREADS == 1 else
    f"--xla_cpu_multi_thread_eigen=true intra_op_parallelism_threads={THREADS}"))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax import lax  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from hostinfo import cpu_name  # noqa: E402

import llvmaccel  # noqa: E402
import llvmaccel.blas  # noqa: E402
import llvmaccel.jax as lj  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "bench" / "results"
BEGIN, END = "<!-- jax-control:begin -->", "<!-- jax-control:end -->"


def rnn(h0, xs, w, u, b):
    def cell(h, x):
        h = jnp.tanh(x @ w + h @ u + b)
        return h, h
    return lax.scan(cell, h0, xs)


def decode(h0, emb, w, steps):
    def step(i, c):
        h, toks = c
        tok = jnp.argmax(h @ w).astype(jnp.int32)
        return jnp.tanh(h + emb[tok]), toks.at[i].set(tok)
    return lax.fori_loop(0, steps, step, (h0, jnp.zeros(steps, jnp.int32)))


def decode_while(h0, emb, w, steps, end):
    def cond(c):
        i, h, toks, done = c
        return (i < steps) & ~done

    def step(c):
        i, h, toks, done = c
        tok = jnp.argmax(h @ w).astype(jnp.int32)
        return i + 1, jnp.tanh(h + emb[tok]), toks.at[i].set(tok), tok == end
    return lax.while_loop(cond, step, (0, h0, jnp.zeros(steps, jnp.int32), False))


def workloads(quick: bool) -> dict:
    rng = np.random.default_rng(0)

    def r(*shape, scale=1.0):
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    out = {}
    # (steps, batch, input, hidden): a small cell (loop overhead matters) and a
    # larger one (the matmuls do).
    for t, b, i, h in ((8, 2, 8, 16),) if quick else ((256, 4, 32, 64), (64, 8, 128, 256)):
        out[f"rnn_scan_T{t}_B{b}_I{i}_H{h}"] = (rnn, (r(b, h), r(t, b, i), r(i, h, scale=0.1),
                                                      r(h, h, scale=1.0 / h ** 0.5), r(h)))
    # (steps, vocabulary, hidden)
    for steps, v, h in ((8, 32, 16),) if quick else ((64, 512, 64), (64, 4096, 256)):
        out[f"decode_fori_T{steps}_V{v}_H{h}"] = (
            lambda h0, emb, w, steps=steps: decode(h0, emb, w, steps),
            (r(h), r(v, h), r(h, v, scale=0.1)))
    # A while loop that could stop early: its end token is the vocabulary's
    # size, which argmax never returns (the same work as the fori loop).
    steps, v, h = (8, 32, 16) if quick else (64, 4096, 256)
    out[f"decode_while_T{steps}_V{v}_H{h}"] = (
        lambda h0, emb, w, steps=steps, v=v: decode_while(h0, emb, w, steps, v),
        (r(h), r(v, h), r(h, v, scale=0.1)))
    return out


def timed(fn, args, inner: int) -> float:
    t0 = time.perf_counter()
    for _ in range(inner):
        out = fn(*args)
    jax.block_until_ready(out)
    return (time.perf_counter() - t0) / inner * 1e3


def bench(name: str, fn, args, rounds: int) -> dict:
    ours, ref = lj.jit(fn), jax.jit(fn)
    # The arguments as a JAX program holds them: jax.Arrays (the kernel
    # column gets numpy views of the same buffers).
    args = [jax.device_put(a) for a in args]
    host = [np.asarray(a) for a in args]
    got, want = ours(*args), ref(*args)
    kernel = ours.compiled_for(*args)
    assert kernel is not None
    for a, w in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want),
                    strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(w), rtol=2e-3, atol=2e-4)
    probe = timed(ref, args, 1)
    inner = max(1, int(20 / max(probe, 1e-3)))  # ~20 ms per sample
    order = [("llvmaccel.jax.jit", ours, args), ("kernel", kernel, host),
             ("jax.jit", ref, args)]
    times: dict[str, list[float]] = {label: [] for label, _, _ in order}
    for k in range(rounds):
        for label, f, a in order[k % 3:] + order[:k % 3]:  # rotated each round
            times[label].append(timed(f, a, inner))
    med = {k: statistics.median(v) for k, v in times.items()}
    return {"workload": name, "median_ms": med, "rounds": rounds, "calls_per_sample": inner,
            "speedup_vs_jax_jit": med["jax.jit"] / med["llvmaccel.jax.jit"],
            "kernel_speedup_vs_jax_jit": med["jax.jit"] / med["kernel"]}


# What the llvmaccel.jax.jit column adds to the kernel's, in runs without a
# "note" of their own (those before the outputs became zero-copy).
_OLD_NOTE = ("the argument checks and the conversion of the outputs to `jax.Array` "
             "(`jax.device_put`, a copy of each output).")
# Runs since the concrete calls on jax.Arrays dispatch through XLA: the
# whole sentence about the columns.
COLUMNS = ("Every variant takes the arguments as jax.Arrays (the kernel column numpy "
           "views of them). The kernel column calls the compiled graph of the same "
           "function directly (`compiled_for(...)`, numpy outputs, from Python); "
           "`llvmaccel.jax.jit` runs the same kernel as one `jax.jit` program whose "
           "custom call reaches it through the XLA FFI handler (outputs in XLA's own "
           "buffers), so it may be faster than the kernel column.")


def _threads_text(n: int) -> str:
    return "1 thread" if n == 1 else f"{n} threads"


def host_key(cpu: str, llvm_cpu: str, threads: int) -> str:
    """The results' key: the host, and the thread count when it is not 1."""
    key = f"{cpu} ({llvm_cpu})"
    return key if threads == 1 else f"{key}, {_threads_text(threads)}"


def _run_lines(e: dict, heading: str) -> list[str]:
    m = e["meta"]
    lines = [heading, ""]
    if m.get("threads", 1) != 1:
        lines += [f"Reproduce: `{m['command']}`", ""]
    lines += [
             f"{m['date']}, {m['cpu']}, {_threads_text(m.get('threads', 1))}, jax {m['jax']}, "
             f"LLVM {m['llvm']}; "
             f"median of {m['rounds']} interleaved rounds (each sample averages "
             "repeated calls of ~20 ms). The machine was shared with other jobs: load "
             f"average (1/5/15 min) at start {m['load_start']}, at end {m['load_end']}.",
             "", "| workload | llvmaccel.jax.jit ms | its kernel ms | jax.jit ms | "
             "speed-up vs jax.jit | kernel vs jax.jit |",
             "|---|---:|---:|---:|---:|---:|"]
    for r in e["results"]:
        md = r["median_ms"]
        lines.append(f"| {r['workload']} | {md['llvmaccel.jax.jit']:.3f} | "
                     f"{md['kernel']:.3f} | {md['jax.jit']:.3f} | "
                     f"{r['speedup_vs_jax_jit']:.2f}x | "
                     f"{r['kernel_speedup_vs_jax_jit']:.2f}x |")
    if "columns" in m:
        lines += ["", m["columns"], ""]
    else:
        lines += ["", "The kernel column calls the compiled graph of the same function "
                  "directly (`compiled_for(...)`, numpy outputs): the llvmaccel.jax.jit "
                  f"column adds {m.get('note', _OLD_NOTE)}", ""]
    return lines


def markdown(hosts: dict) -> str:
    lines = [BEGIN, "## JAX control flow (lax.scan, fori_loop) vs jax.jit", "",
             "Reproduce: `taskset -c 0 .venv/bin/python bench/frontends/jax_control.py` "
             "(bench/results/jax-control.json).", ""]
    for host, e in sorted(hosts.items()):
        lines += _run_lines(e, f"### {host}")
        for old in e.get("earlier", []):
            lines += _run_lines(old, f"#### Earlier run ({old['meta']['date']})")
    lines.append(END)
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="tiny sizes, nothing written")
    ap.add_argument("--rounds", type=int, default=None)
    ap.add_argument("--threads", type=int, default=1,
                    help="intra-op threads of XLA and llvmaccel (read before JAX is imported)")
    args = ap.parse_args(argv)
    if args.threads != THREADS:
        raise SystemExit("--threads is read when the module is imported: run it as a script")
    llvmaccel.blas.set_num_threads(args.threads)
    rounds = args.rounds or (3 if args.quick else 15)
    load_start = [round(x, 2) for x in os.getloadavg()]
    results = [bench(name, fn, a, rounds) for name, (fn, a) in workloads(args.quick).items()]
    load_end = [round(x, 2) for x in os.getloadavg()]
    for r in results:
        md = r["median_ms"]
        print(f"{r['workload']}: llvmaccel {md['llvmaccel.jax.jit']:.3f} ms (kernel "
              f"{md['kernel']:.3f} ms), jax.jit {md['jax.jit']:.3f} ms, "
              f"{r['speedup_vs_jax_jit']:.2f}x ({r['kernel_speedup_vs_jax_jit']:.2f}x)")
    print(f"load average: start {load_start}, end {load_end}")
    if args.quick:
        return 0
    meta = {"date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
            "cpu": cpu_name(), "llvm_cpu": llvmaccel.target.host().cpu, "jax": jax.__version__,
            "llvm": llvmaccel.llvm_version(), "rounds": rounds, "load_start": load_start,
            "load_end": load_end, "columns": COLUMNS, "threads": args.threads,
            "command": ("taskset -c 0 .venv/bin/python bench/frontends/jax_control.py"
                        if args.threads == 1 else
                        f".venv/bin/python bench/frontends/jax_control.py --threads "
                        f"{args.threads}")}
    path = RESULTS / "jax-control.json"
    hosts = json.loads(path.read_text()) if path.exists() else {}
    host = host_key(meta["cpu"], meta["llvm_cpu"], args.threads)
    # The earlier runs of this host stay beside the new one (newest first).
    earlier = []
    if host in hosts:
        prev = dict(hosts[host])
        earlier = prev.pop("earlier", [])
        earlier.insert(0, prev)
    hosts[host] = {"meta": meta, "results": results, "earlier": earlier}
    path.write_text(json.dumps(hosts, indent=2) + "\n")
    md_path = RESULTS / "frontends.md"
    text = md_path.read_text()
    section = markdown(hosts)
    if BEGIN in text:
        text = text[:text.index(BEGIN)] + section + text[text.index(END) + len(END):]
    else:
        text = text.rstrip("\n") + "\n\n" + section + "\n"
    md_path.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
