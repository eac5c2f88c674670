#!/usr/bin/env python3
"""Matmul shape classes: llvmaccel's own kernel, the same matmul through the
tuned BLAS (llvmaccel.blas), and ``torch.mm``/``torch.bmm`` (the library
eager PyTorch and inductor call), so that the selection rule of
``llvmaccel.blas.choose`` rests on measurements.

Each shape is one graph ``C = A @ B`` (float32, ``B`` read transposed as
``linear``'s weight where the class says so), compiled twice
(``LLVMACCEL_BLAS=off`` and ``always``). In each round every variant runs
once, interleaved, the order rotated by one per round; medians are reported,
with the load average (the machine may be shared).

Usage::

    .venv/bin/python bench/gemm/run.py                 # 1 thread
    .venv/bin/python bench/gemm/run.py --threads 2
    .venv/bin/python bench/gemm/run.py --quick         # bench/work/gemm-quick
    .venv/bin/python bench/gemm/run.py --library openblas  # the library's GEMM:
                                                       # torch's own (the default
                                                       # once torch is imported)
    .venv/bin/python bench/gemm/run.py --dtype bf16    # bfloat16 operands: the bf16
                                                       # kernel (codegen.matmul_bf16, or
                                                       # f32 casts where the CPU has no
                                                       # bf16 dot) against the library's
                                                       # gemm_bf16bf16f32 (MIN_FLOPS_BF16)
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import shlex
import statistics
import sys
import time
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path.insert(0, str(REPO / "bench" / "frontends"))
sys.path.insert(0, str(REPO / "bench"))
import mdsections  # noqa: E402  (bench/mdsections.py: sections replaced, the rest kept)

# (class, batch, M, N, K, B transposed)
SHAPES = [
    ("tiny", 1, 8, 8, 8, False),
    ("small", 1, 16, 64, 64, True),
    ("small", 1, 64, 64, 64, True),
    ("medium", 1, 128, 128, 128, False),
    ("medium", 1, 64, 256, 256, True),
    ("medium", 1, 192, 192, 192, False),
    ("large", 1, 256, 256, 256, False),
    ("large", 1, 128, 256, 512, True),
    ("mlp", 1, 256, 1024, 512, True),
    ("mlp", 1, 256, 512, 1024, True),
    ("block", 1, 512, 768, 256, True),
    ("attention", 16, 128, 128, 64, True),
    ("attention", 16, 128, 64, 128, False),
    ("attention", 32, 256, 256, 64, True),
    ("attention", 32, 256, 64, 256, False),
    ("square", 1, 1024, 1024, 1024, False),
    ("narrow", 1, 256, 16, 512, True),
    ("narrow", 1, 1024, 16, 1024, True),
    ("narrow", 1, 8192, 8, 128, False),
    ("narrow", 1, 4096, 32, 256, False),
    ("narrow", 1, 2048, 48, 512, True),
    ("matrix-vector", 1, 2048, 1, 2048, False),
    # Batch-1 linear layers, x @ W^T: a classifier head (MobileNetV3's), a
    # decode step's projection (64 MiB of W: from memory), four rows.
    ("linear-b1", 1, 1, 1000, 1024, True),
    ("linear-b1", 1, 1, 4096, 4096, True),
    ("linear-b1", 1, 4, 1024, 576, True),
    # ResNet-18's convolutions as im2col GEMMs: W [Cout, Cin*9] @ col [Cin*9, H*W].
    ("conv", 1, 64, 3136, 576, False),
    ("conv", 1, 128, 784, 1152, False),
    ("conv", 1, 256, 196, 2304, False),
    ("conv", 1, 512, 49, 4608, False),
]
QUICK = [s for s in SHAPES if s[2:5] in ((8, 8, 8), (64, 64, 64), (256, 16, 512))]


def graph(b: int, m: int, n: int, k: int, tb: bool, dtype: str = "f32"):
    from llvmaccel.graph import DType, Graph

    g = Graph()
    batch = (b,) if b > 1 else ()
    dt = DType.bf16 if dtype == "bf16" else DType.f32
    a = g.input("a", batch + (m, k), dt)
    w = g.input("b", batch + ((n, k) if tb else (k, n)), dt)
    if tb:
        w = g.permute(w, tuple(range(w.rank - 2)) + (w.rank - 1, w.rank - 2))
    g.set_outputs([g.matmul(a, w)])
    return g


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--library", choices=["auto", "torch", "openblas"], default="auto",
                    help="LLVMACCEL_BLAS_LIBRARY for the llvmaccel-blas variant")
    ap.add_argument("--dtype", choices=["f32", "bf16"], default="f32",
                    help="operand dtype (bf16: f32 products and sums, bf16 result, "
                         "as torch.mm of bfloat16 tensors)")
    opts = ap.parse_args(argv)
    os.environ["LLVMACCEL_BLAS_LIBRARY"] = opts.library
    torch.set_num_threads(opts.threads)
    os.environ.setdefault("LLVMACCEL_CACHE_DIR", "off")
    from run import _cpu_name, _host  # bench/frontends/run.py

    from llvmaccel import blas, compiler
    from llvmaccel.codegen import generate

    load_start = os.getloadavg()
    rows = []
    for cls, b, m, n, k, tb in (QUICK if opts.quick else SHAPES):
        g = graph(b, m, n, k, tb, opts.dtype)
        variants = {}
        for mode in ("off", "always"):
            os.environ["LLVMACCEL_BLAS"] = mode
            variants["llvmaccel-own" if mode == "off" else "llvmaccel-blas"] = \
                compiler.compile_graph(g)
        os.environ.pop("LLVMACCEL_BLAS")
        gen = torch.Generator().manual_seed(0)
        batch = (b,) if b > 1 else ()
        tdt = torch.bfloat16 if opts.dtype == "bf16" else torch.float32
        xa = torch.randn(*batch, m, k, generator=gen).to(tdt)
        xb = torch.randn(*batch, *((n, k) if tb else (k, n)), generator=gen).to(tdt)
        wb = xb.transpose(-1, -2) if tb else xb
        mm = torch.bmm if b > 1 else torch.mm
        fns = {k2: (lambda c=c, xa=xa, xb=xb: c(xa, xb)[0]) for k2, c in variants.items()}
        fns["torch"] = lambda mm=mm, xa=xa, wb=wb: mm(xa, wb)
        ref = fns["torch"]()
        # bf16: the f32 sums of k products, each rounded once to bf16 (1/128
        # of the value), their order differing between kernels.
        tol = (1.6e-2, 1e-2 * k ** 0.5) if opts.dtype == "bf16" else (1e-3, 1e-3)
        for f in fns.values():
            torch.testing.assert_close(f(), ref, rtol=tol[0], atol=tol[1])
        reps = max(1, int(2e7 // max(1, b * m * n * k)))  # ~ms per sample
        times: dict[str, list[float]] = {v: [] for v in fns}
        names = list(fns)
        for r in range(opts.rounds):
            for v in names[r % len(names):] + names[:r % len(names)]:
                t0 = time.perf_counter()
                for _ in range(reps):
                    fns[v]()
                times[v].append((time.perf_counter() - t0) * 1e6 / reps)
        med = {v: statistics.median(t) for v, t in times.items()}
        os.environ["LLVMACCEL_BLAS"] = "auto"
        chosen = generate(g).matmuls[0][1]
        os.environ.pop("LLVMACCEL_BLAS")
        row = {"class": cls, "batch": b, "m": m, "n": n, "k": k, "b_transposed": tb,
               "median_us": med, "auto_choice": chosen}
        rows.append(row)
        print(f"{cls:14s} {b}x{m}x{n}x{k}{' tb' if tb else ''}: "
              + ", ".join(f"{v} {t:.1f} us" for v, t in med.items()) + f"; auto: {chosen}",
              flush=True)
    meta = {
        "command": shlex.join([".venv/bin/python", "bench/gemm/run.py",
                               *(argv if argv is not None else sys.argv[1:])]),
        "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "cpu": _cpu_name(), "host": _host(), "machine": platform.machine(),
        "threads": opts.threads, "rounds": opts.rounds, "torch": torch.__version__,
        "dtype": opts.dtype,
        "blas": blas.status(),
        "threshold": _threshold(blas, opts.dtype),
        "load_average": [round(v, 2) for v in (*load_start, *os.getloadavg())],
    }
    out = opts.out or (REPO / "bench" / ("work/gemm-quick" if opts.quick else "results"))
    out.mkdir(parents=True, exist_ok=True)
    path = out / "gemm.json"
    hosts = json.loads(path.read_text())["hosts"] if path.exists() else {}
    key = (f"{meta['host']['key']} ({opts.threads} thread{'s' * (opts.threads > 1)}, "
           f"{blas.library()} BLAS{', bf16' if opts.dtype == 'bf16' else ''})")
    hosts[key] = {"meta": meta, "results": rows}
    path.write_text(json.dumps({"hosts": hosts}, indent=2) + "\n")
    write_markdown(out / "gemm.md", hosts, key)
    return 0


def _threshold(blas, dtype: str) -> str:
    """What ``auto`` went by: the size from which f32 matmuls call the
    library (measured on this host unless set or turned off)."""
    if dtype != "f32":
        return "bf16: MIN_FLOPS_BF16 where the CPU has AMX-BF16"
    return "-" if blas.load() is None else f"the library {blas.threshold_text(4)}"


def markdown(hosts: dict) -> str:
    parts = ["# Matmul shape classes: llvmaccel's kernel, the BLAS it calls, torch.mm\n",
             "One section per host and thread count (a run replaces its own and keeps "
             "the one it replaces below it as an earlier run). `auto` is the kernel "
             "`llvmaccel.blas.choose` picks for the shape (from 2026-12-07 by a threshold "
             "measured on the host, `llvmaccel.blas.calibrate`). Ratios > 1: faster than torch.\n"]
    for key, entry in hosts.items():
        parts.append(host_markdown(key, entry))
    return "\n".join(parts)


def write_markdown(path: Path, hosts: dict, key: str) -> None:
    """Writes ``path``: in an existing file the section of ``key`` is
    replaced and the one it replaces follows as an earlier run; the rest,
    hand-written paragraphs included, stays (bench/mdsections.py)."""
    mdsections.update(path, [host_markdown(key, hosts[key])], lambda: markdown(hosts))


def host_markdown(key: str, entry: dict) -> str:
    """The section of one host (thread count, library, dtype)."""
    parts = []
    meta = entry["meta"]
    parts.append(f"## {key}\n")
    la = meta["load_average"]
    parts.append(f"Reproduce: `{meta['command']}`\n\n{meta['date']}, {meta['cpu']}, "
                 f"{meta['threads']} thread(s), torch {meta['torch']}, BLAS: "
                 f"{meta['blas']}; median of {meta['rounds']} interleaved rounds. "
                 f"Load average (1/5/15 min) at start {la[:3]}, at end {la[3:]} "
                 "(a shared machine: only in-run ratios count)."
                 + (f" `auto`: {meta['threshold']}." if meta.get("threshold") else "")
                 + "\n")
    parts.append("| class | batch x M x N x K | own us | blas us | torch us | "
                 "own vs torch | blas vs torch | auto |")
    parts.append("|---|---|---:|---:|---:|---:|---:|---|")
    for r in entry["results"]:
        md = r["median_us"]
        t = md["torch"]
        parts.append(
            f"| {r['class']} | {r['batch']}x{r['m']}x{r['n']}x{r['k']}"
            f"{' (B^T)' if r['b_transposed'] else ''} | {md['llvmaccel-own']:.1f} | "
            f"{md['llvmaccel-blas']:.1f} | {t:.1f} | {t / md['llvmaccel-own']:.2f}x | "
            f"{t / md['llvmaccel-blas']:.2f}x | {r['auto_choice']} |")
    parts.append("")
    return "\n".join(parts)


if __name__ == "__main__":
    sys.exit(main())
