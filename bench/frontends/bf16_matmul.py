#!/usr/bin/env python3
"""bfloat16 matmuls with native dot products: a 1024x1024x1024 bf16 matmul
and a 2-layer ``nn.TransformerEncoder`` (d_model 256, 4 heads, ff 1024,
batch_first) on a 4x128x256 bf16 input, inference under ``no_grad``.

Variants, interleaved per round (the order rotated by one each round),
median over the rounds (each round's figure: the mean of at least 3 calls
filling ``--sample`` seconds):

``eager``         PyTorch eager (oneDNN's bf16 GEMM where the CPU has one).
``llvmaccel``     ``torch.compile(backend="llvmaccel")``: bf16 matmuls with
                  the target's bf16 dot product (codegen.matmul_bf16).
``llvmaccel-f32`` the same with ``LLVMACCEL_BF16_DOT=off``: operands cast to
                  f32, the f32 matmul (BLAS sgemm or llvmaccel's kernel).

Outputs are checked against eager before timing (rtol 1.6e-2, bf16's; atol
2e-3 for the f32 sums of 1024 products, 5e-2 for the encoder's two layers of
bf16 rounding). One thread
by default. Writes JSON (``--json``) and prints a Markdown table."""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time

import torch

import llvmaccel.torch  # noqa: F401 - registers the backend
from llvmaccel.target import host


def _models() -> dict:
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(256, 4, 1024, dropout=0.0, batch_first=True)
    enc = torch.nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
    enc = enc.to(torch.bfloat16).eval()
    x = torch.randn(4, 128, 256, dtype=torch.bfloat16)
    a = torch.randn(1024, 1024, dtype=torch.bfloat16)
    b = torch.randn(1024, 1024, dtype=torch.bfloat16)
    # atol: f32 sums of 1024 products in another order differ by ~1e-3 where
    # they cancel to near zero (bf16's default atol, 1e-5, is below that).
    return {"matmul-1024": (lambda p, q: p @ q, (a, b), (1.6e-2, 2e-3)),
            "transformer-encoder": (enc, (x,), (5e-2, 5e-2))}


def _compiled(fn, native: bool):
    # No torch._dynamo.reset() between the variants: it would drop the
    # other variant's compiled code. Both share the model's code object and
    # dynamo keeps one cache entry per backend, so the f32 variant's options
    # differ (auto="all" is the default written out): another backend.
    os.environ["LLVMACCEL_BF16_DOT"] = "" if native else "off"
    opts = {"strict": True} if native else {"strict": True, "auto": "all"}
    c = torch.compile(fn, backend="llvmaccel", options=opts)
    return c


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--sample", type=float, default=0.4,
                    help="seconds of calls per variant and round (at least 3 calls)")
    ap.add_argument("--json", default="")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    out: dict = {"cpu": host().cpu, "features_bf16": "avx512bf16" in host().features,
                 "threads": args.threads, "rounds": args.rounds,
                 "loadavg_before": os.getloadavg(), "models": {}}
    torch._dynamo.reset()
    for name, (fn, inputs, (rtol, atol)) in _models().items():
        with torch.no_grad():
            want = fn(*inputs)
            variants = {"eager": fn}
            for label, native in (("llvmaccel", True), ("llvmaccel-f32", False)):
                c = _compiled(fn, native)
                got = c(*inputs)  # compiles with the environment of this variant
                torch.testing.assert_close(got, want, rtol=rtol, atol=atol)
                variants[label] = c
            times: dict[str, list[float]] = {v: [] for v in variants}
            order = list(variants)
            for r in range(args.rounds):
                for v in order[r % len(order):] + order[:r % len(order)]:
                    fn_v = variants[v]
                    # The backend looks its kernels up per call (keyed on the
                    # setting too): each variant runs with its own.
                    os.environ["LLVMACCEL_BF16_DOT"] = "off" if v == "llvmaccel-f32" else ""
                    fn_v(*inputs)
                    reps, t0 = 0, time.perf_counter()
                    while reps < 3 or time.perf_counter() - t0 < args.sample:
                        fn_v(*inputs)
                        reps += 1
                    times[v].append((time.perf_counter() - t0) / reps * 1e3)
        med = {v: statistics.median(t) for v, t in times.items()}
        out["models"][name] = {"median_ms": med, "runs_ms": times}
    os.environ["LLVMACCEL_BF16_DOT"] = ""
    out["loadavg_after"] = os.getloadavg()
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
    print(f"CPU {out['cpu']}, {args.threads} thread(s), {args.rounds} rounds, load average "
          f"{out['loadavg_before'][0]:.2f} before / {out['loadavg_after'][0]:.2f} after")
    print("| model | eager ms | llvmaccel (bf16 dot) ms | llvmaccel f32 path ms | "
          "eager / llvmaccel | f32 path / llvmaccel |")
    print("|---|---|---|---|---|---|")
    for name, r in out["models"].items():
        m = r["median_ms"]
        print(f"| {name} | {m['eager']:.2f} | {m['llvmaccel']:.2f} | {m['llvmaccel-f32']:.2f} | "
              f"{m['eager'] / m['llvmaccel']:.2f} | {m['llvmaccel-f32'] / m['llvmaccel']:.2f} |")


if __name__ == "__main__":
    main()
