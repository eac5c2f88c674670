#!/usr/bin/env python3
"""The matmul kernel's inner loop on CPUs this machine is not, in LLVM's
scheduling models: ``llvm-mca`` cycles per k-step of a register tile.

For each CPU the kernel of a square f32 / f64 product is generated for that
CPU (``llvmaccel.crossrun``: its TTI, the JIT's pipeline), compiled by
``llc -mcpu``, and the innermost loop with the most FMAs is handed to
``llvm-mca`` (200 iterations). Two variants in the same run, by
``--compare``: ``lanes``, A's elements broadcast one by one (``a_lanes``
off) against A's rows loaded W elements at a time with FMLA by element (the
AArch64 default); ``rows``, tiles of a power of two rows (the rule before
2026-12-07) against as many rows as the registers hold, at most 16
accumulators (6 x 2 with AVX2's 16 registers). These are model figures,
not measurements: they say where the loop's issue bottleneck is, not what a
core sustains from cache (real AArch64 hardware is needed for that).

Usage::

    .venv/bin/python bench/gemm/mca.py                       # Neoverse N1, V1, V2
    .venv/bin/python bench/gemm/mca.py --cpu aarch64:cortex-a76 --cpu x86_64:znver5
    .venv/bin/python bench/gemm/mca.py --compare rows --cpu x86_64:haswell --cpu x86_64:znver2
"""

from __future__ import annotations

import argparse
import datetime as dt
import re
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

from tile_rules import power_of_two  # noqa: E402

from llvmaccel import crossrun  # noqa: E402
from llvmaccel.codegen import matmul  # noqa: E402
from llvmaccel.graph import DType, Graph  # noqa: E402
from llvmaccel.reduce import find_llvm_tool  # noqa: E402

FMA = re.compile(r"^\s+(fmla|bfdot|vfmadd\w+|vdpbf16ps)\s")


def inner_loop(asm: str) -> tuple[str, int]:
    """The full tiles' k-loop and its FMAs: of the innermost loops (an
    ``Inner Loop Header`` block up to its branch back) with FMAs, the most
    deeply nested (the row tiles' loop holds it; the rest rows' tiles are
    not in that loop), then the one with the most FMAs."""
    lines = asm.splitlines()
    best, count, rank = "", 0, (0, 0)
    for i, line in enumerate(lines):
        if "Inner Loop Header" not in line:
            continue
        depth = int(re.search(r"Depth=(\d+)", line).group(1))
        label = next(lines[j] for j in range(i, -1, -1) if re.match(r"^\.?\w+:", lines[j]))
        name = label.split(":")[0]
        body = []
        for line2 in lines[i + 1:]:
            if re.match(r"^\s+\S", line2) and not line2.strip().startswith(("//", "#", ".")):
                body.append(line2)
            if name in line2 and re.match(r"^\s+(b\.|j)\w*\s", line2):
                break
        n = sum(bool(FMA.match(x)) for x in body)
        if n and (depth, n) > rank:
            best, count, rank = "\n".join(body) + "\n", n, (depth, n)
    return best, count


def cycles_per_fma(arch: str, cpu: str, dtype: DType, compare: str,
                   new: bool) -> tuple[float, int]:
    """llvm-mca's cycles per FMA of the inner loop, and its FMAs: the
    variant ``new`` (or not) of ``compare``."""
    g = Graph()
    a, b = g.input("a", (512, 512), dtype), g.input("b", (512, 512), dtype)
    g.set_outputs([g.matmul(a, b)])
    saved = matmul.a_lanes, matmul._matmul_tiling
    if compare == "lanes" and not new:
        matmul.a_lanes = lambda mm, target: 0
    if compare == "rows" and not new:
        matmul._matmul_tiling = power_of_two
    try:
        program = crossrun.compile_for(g, arch, cpu)
    finally:
        matmul.a_lanes, matmul._matmul_tiling = saved
    triple = program.target.triple
    asm = subprocess.run([find_llvm_tool("llc"), "-O3", f"-mtriple={triple}", f"-mcpu={cpu}",
                          "-o", "-"], input=program.optimized_ir, capture_output=True,
                         text=True, check=True).stdout
    loop, fmas = inner_loop(asm)
    out = subprocess.run([find_llvm_tool("llvm-mca"), f"-mtriple={triple}", f"-mcpu={cpu}",
                          "-iterations=200"], input=loop, capture_output=True, text=True,
                         check=True).stdout
    total = int(re.search(r"Total Cycles:\s+(\d+)", out).group(1))
    return total / 200 / fmas, fmas


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--cpu", action="append", default=[],
                   help="arch:cpu (default aarch64:neoverse-n1, -v1, -v2)")
    p.add_argument("--compare", choices=("lanes", "rows"), default="lanes",
                   help="the two variants (default lanes)")
    args = p.parse_args()
    names = {"lanes": ("broadcasts", "lanes of A"),
             "rows": ("power-of-two rows", "rows filling the registers")}[args.compare]
    cpus = [c.split(":", 1) for c in args.cpu] or [
        ["aarch64", "neoverse-n1"], ["aarch64", "neoverse-v1"], ["aarch64", "neoverse-v2"]]
    print(f"{dt.datetime.now(dt.timezone.utc).isoformat(timespec='seconds')}, LLVM's "
          f"scheduling models (llvm-mca), 512x512x512 product, inner loop of the tile")
    print(f"Reproduce: `.venv/bin/python bench/gemm/mca.py --compare {args.compare} "
          f"{' '.join('--cpu ' + shlex.quote(a + ':' + c) for a, c in cpus)}`\n")
    print(f"| CPU | dtype | FMAs in the loop ({names[0]} / {names[1]}) | cycles per FMA, "
          f"{names[0]} | cycles per FMA, {names[1]} | ratio |")
    print("|---|---|---:|---:|---:|---:|")
    for arch, cpu in cpus:
        for dtype in (DType.f32, DType.f64):
            off, n_off = cycles_per_fma(arch, cpu, dtype, args.compare, False)
            on, n_on = cycles_per_fma(arch, cpu, dtype, args.compare, True)
            print(f"| {cpu} | {dtype.numpy} | {n_off} / {n_on} | {off:.3f} | {on:.3f} | "
                  f"{off / on:.2f}x |", flush=True)


if __name__ == "__main__":
    main()
