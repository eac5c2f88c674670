#!/usr/bin/env python3
"""Benchmark harness for the ``accel-masked-load`` pass of llvmaccel.

Every kernel in ``kernels/`` is built from the same C source in four variants
(clang-22 front end at ``-O3 -march=native``, or ``-march=haswell`` for the
``_avx2`` gathers, then ``opt``, ``llc``):

``o3``
    ``opt -passes='default<O3>'`` (what ``clang -O3`` runs): the baseline.
``accel``
    the same with the plugin loaded and only accel-masked-load joining the
    pipeline (``LLVMACCEL_AUTO=accel-masked-load``, at VectorizerStart).
``irce``
    the baseline plus LLVM's inductive range check elimination at the same
    point (``--passes-ep-vectorizer-start=irce``).
``hand``
    the kernel's ``#ifdef HAND`` code (split by hand, or the branch-free gather
    written by hand) through the baseline pipeline.

Each variant is a shared library with its own copy of the same seeded data.
After a warm-up call, the checksum of every variant's full output (the bits of
every element) must equal the baseline's, or the run stops with status 2 and
writes nothing. Then ``rounds`` interleaved rounds run every variant once
(each sample repeats the call enough times to last ~30 ms and is the thread's
CPU time, since the machine is shared); the median over
the rounds is reported, ``ratio = median(o3) / median(variant)``.

Usage::

    .venv/bin/python bench/masked-load/run.py            # full run
    .venv/bin/python bench/masked-load/run.py --quick    # smoke run
"""

from __future__ import annotations

import argparse
import ctypes
import datetime as dt
import hashlib
import json
import os
import platform
import shlex
import shutil
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
KERNELS = HERE / "kernels"
LLVM_BIN = Path(os.environ.get("LLVM_BIN", "/usr/lib/llvm-22/bin"))
DEFAULT_PLUGIN = REPO / "build" / "llvm-22" / "lib" / "LLVMAccel.so"
FRONT = ["-O3", "-fPIC", "-Xclang", "-disable-llvm-optzns"]
VARIANTS = ("o3", "accel", "irce", "hand")
SAMPLE_SECONDS = 0.03


@dataclass(frozen=True)
class Kernel:
    name: str
    source: str
    defines: tuple[str, ...]
    full: int  # setup() scale of the full run
    quick: int
    group: str
    goal: str
    march: str = "native"


KERNEL_LIST = [
    *(
        Kernel(f"conv1d_k{k}", "conv1d.c", (f"K={k}",), 1 << 20, 1 << 12, "conv1d",
               "within 5% of hand")
        for k in (3, 5, 7, 9, 11)
    ),
    Kernel("conv2d_3x3", "conv2d.c", ("OP_CONV",), 1024, 48, "conv2d", "within 5% of hand"),
    Kernel("maxpool_3x3", "conv2d.c", ("OP_POOL",), 1024, 48, "conv2d", "within 5% of hand"),
    # Gathers from a table whose extent the code states (EXTENT).
    Kernel("take_fill_64KiB", "gather.c", ("TABLE=16384", "EXTENT"), 1 << 22, 1 << 12,
           "gather", "vectorized, >= 2x"),
    Kernel("take_fill_256MiB", "gather.c", ("TABLE=67108864", "EXTENT"), 1 << 22, 1 << 12,
           "gather", "vectorized"),
    # The same for a target without masked gathers (AVX2 as Haswell has it:
    # gathers, but LLVM treats them as too slow to mask), where the pass
    # clamps instead of leaving the load to the vectorizer.
    Kernel("take_fill_64KiB_avx2", "gather.c", ("TABLE=16384", "EXTENT"), 1 << 22, 1 << 12,
           "gather", "vectorized, >= 2x", march="haswell"),
    Kernel("take_fill_256MiB_avx2", "gather.c", ("TABLE=67108864", "EXTENT"), 1 << 22,
           1 << 12, "gather", "vectorized", march="haswell"),
    # A table of unknown extent: the pass must leave it alone.
    Kernel("take_fill_64KiB_avx2_unknown", "gather.c", ("TABLE=16384",), 1 << 22, 1 << 12,
           "control", "no slowdown beyond 2%", march="haswell"),
    Kernel("ragged_scores", "ragged.c", (), 4096, 16, "ragged", "better than o3"),
    Kernel("control_saxpy", "control.c", ("OP_SAXPY",), 1 << 22, 1 << 12, "control",
           "no slowdown beyond 2%"),
    Kernel("control_valid_conv", "control.c", ("OP_VALID",), 1 << 20, 1 << 12, "control",
           "no slowdown beyond 2%"),
]


def run(cmd: list[str], env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        sys.exit(f"command failed ({proc.returncode}): {shlex.join(cmd)}\n{proc.stderr}")
    return proc


def build(kernel: Kernel, variant: str, plugin: Path, work: Path) -> tuple[Path, int]:
    """Builds one variant; returns the library and its vectorized-loop count."""
    stem = f"{kernel.name}-{variant}"
    defines = [f"-D{d}" for d in kernel.defines] + (["-DHAND"] if variant == "hand" else [])
    ll, opt_bc, obj, lib = (work / f"{stem}{ext}" for ext in (".ll", ".opt.bc", ".o", ".so"))
    run([str(LLVM_BIN / "clang"), *FRONT, f"-march={kernel.march}", *defines, "-S", "-emit-llvm",
         str(KERNELS / kernel.source), "-o", str(ll)])
    opt = [str(LLVM_BIN / "opt"), "-passes=default<O3>", "-pass-remarks=loop-vectorize"]
    env = dict(os.environ)
    if variant == "accel":
        opt.insert(1, f"-load-pass-plugin={plugin}")
        env["LLVMACCEL_AUTO"] = "accel-masked-load"
    else:
        env["LLVMACCEL_AUTO"] = "none"
    if variant == "irce":
        opt.append("--passes-ep-vectorizer-start=irce")
    proc = run([*opt, str(ll), "-o", str(opt_bc)], env)
    vectorized = proc.stderr.count("vectorized loop")
    run([str(LLVM_BIN / "llc"), "-O3", "-relocation-model=pic", "-filetype=obj",
         str(opt_bc), "-o", str(obj)])
    run([str(LLVM_BIN / "clang"), "-shared", str(obj), "-o", str(lib)])
    return lib, vectorized


def load(lib: Path, scale: int) -> ctypes.CDLL:
    dll = ctypes.CDLL(str(lib))
    dll.setup.argtypes = [ctypes.c_long]
    dll.setup.restype = None
    dll.run.argtypes = []
    dll.run.restype = None
    dll.check.argtypes = []
    dll.check.restype = ctypes.c_uint64
    dll.setup(scale)
    return dll


def cpu_info() -> dict[str, str]:
    info: dict[str, str] = {}
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    except OSError:
        out = ""
    for line in out.splitlines():
        key, _, value = line.partition(":")
        key = key.strip()
        if key in ("Model name", "Vendor ID", "CPU family", "Model"):
            info[key] = value.strip()
    return info


def measure(kernel: Kernel, libs: dict[str, ctypes.CDLL], rounds: int) -> dict:
    base = libs["o3"]
    base.run()
    expect = base.check()
    for variant, dll in libs.items():
        dll.run()
        got = dll.check()
        if got != expect:
            print(f"error: {kernel.name}: {variant} output differs from o3 "
                  f"({got:#x} != {expect:#x})", file=sys.stderr)
            sys.exit(2)
    start = time.perf_counter()
    base.run()
    once = max(time.perf_counter() - start, 1e-7)
    reps = max(1, int(SAMPLE_SECONDS / once))
    # Samples are the thread's CPU time: on a machine shared with other jobs
    # (load averages of 4-8 on 2 cores were seen), wall time mostly measures
    # the scheduler. Wall time is recorded too.
    samples: dict[str, list[float]] = {v: [] for v in libs}
    walls: dict[str, list[float]] = {v: [] for v in libs}
    for _ in range(rounds):
        for variant, dll in libs.items():
            start, wall = time.thread_time(), time.perf_counter()
            for _ in range(reps):
                dll.run()
            samples[variant].append((time.thread_time() - start) / reps)
            walls[variant].append((time.perf_counter() - wall) / reps)
    for variant, dll in libs.items():
        if dll.check() != expect:
            print(f"error: {kernel.name}: {variant} output changed while timed",
                  file=sys.stderr)
            sys.exit(2)
    med = {v: statistics.median(s) for v, s in samples.items()}
    return {
        "reps_per_sample": reps,
        "median_ms": {v: med[v] * 1e3 for v in med},
        "ratio": {v: med["o3"] / med[v] for v in med},
        "samples_cpu_ms": {v: [x * 1e3 for x in s] for v, s in samples.items()},
        "samples_wall_ms": {v: [x * 1e3 for x in s] for v, s in walls.items()},
    }


def goal_met(kernel: Kernel, res: dict) -> str:
    r = res["ratio"]
    if kernel.group in ("conv1d", "conv2d"):
        return "yes" if r["accel"] >= 0.95 * r["hand"] else "no"
    if kernel.group == "gather" and kernel.name.startswith("take_fill_64KiB"):
        ok = res["vectorized"]["accel"] > 0 and r["accel"] >= 2.0
        return "yes" if ok else "no"
    if kernel.group == "gather":
        return "yes" if res["vectorized"]["accel"] > 0 else "no"
    if kernel.group == "control":
        return "yes" if r["accel"] >= 0.98 else "no"
    return "yes" if r["accel"] > 1.0 else "no"


def markdown(meta: dict, results: dict) -> str:
    cpu = meta["cpu"]
    lines = [
        "# accel-masked-load benchmark",
        "",
        f"Command: `{meta['command']}`  ",
        f"Date: {meta['date']}  ",
        f"CPU: {cpu.get('Model name', '?')} ({cpu.get('Vendor ID', '?')}, family "
        f"{cpu.get('CPU family', '?')}, model {cpu.get('Model', '?')})  ",
        f"LLVM: {meta['llvm']}; plugin sha256 {meta['plugin_sha256'][:12]}  ",
        f"Rounds: {meta['rounds']} interleaved (o3, accel, irce, hand), median per variant "
        "of the thread's CPU time per call; single thread. "
        f"Load average at start: {meta['loadavg_start']}, at end: {meta['loadavg_end']}.",
        "",
        "Measured on a shared machine (2 cores used by other jobs at the same time): "
        "absolute times are noisy, the in-run ratios against `o3` are what count. "
        "Every variant's full output was checked bit for bit against `o3`.",
        "",
        "| kernel | -march | o3 ms | accel | irce | hand "
        "| vectorized loops (o3/accel/irce/hand) | goal | met |",
        "|---|---|---:|---:|---:|---:|---|---|---|",
    ]
    for name, res in results.items():
        r, v = res["ratio"], res["vectorized"]
        lines.append(
            f"| {name} | {res['march']} | {res['median_ms']['o3']:.3f} | {r['accel']:.2f}x "
            f"| {r['irce']:.2f}x "
            f"| {r['hand']:.2f}x | {v['o3']}/{v['accel']}/{v['irce']}/{v['hand']} "
            f"| {res['goal']} | {res['met']} |")
    lines += [
        "",
        "Ratios are `median(o3) / median(variant)`: above 1 is faster than clang -O3.",
        "`vectorized loops` counts the loop vectorizer's remarks for the kernel's file.",
        "",
    ]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="tiny sizes, 2 rounds, results elsewhere")
    ap.add_argument("--rounds", type=int, default=None)
    ap.add_argument("--kernels", default="", help="comma-separated subset")
    ap.add_argument("--plugin", type=Path, default=DEFAULT_PLUGIN)
    ap.add_argument("--cpu", type=int, default=0, help="CPU to pin to")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()

    rounds = args.rounds or (2 if args.quick else 11)
    out_dir = args.out or (REPO / "bench" / "work" / "results-quick" if args.quick
                           else REPO / "bench" / "results")
    if not args.plugin.exists():
        sys.exit(f"plugin not found: {args.plugin} (build it first, see bench/README.md)")
    kernels = [k for k in KERNEL_LIST
               if not args.kernels or k.name in args.kernels.split(",")]
    work = REPO / "bench" / "work" / "masked-load"
    work.mkdir(parents=True, exist_ok=True)
    plugin = work / "LLVMAccel.so"
    shutil.copyfile(args.plugin, plugin)

    jobs = [(k, v) for k in kernels for v in VARIANTS]
    with ThreadPoolExecutor(max_workers=2) as pool:
        built = list(pool.map(lambda kv: build(kv[0], kv[1], plugin, work), jobs))
    libs_of = {(k.name, v): b for (k, v), b in zip(jobs, built, strict=True)}

    if hasattr(os, "sched_setaffinity"):
        try:
            os.sched_setaffinity(0, {args.cpu})
        except OSError:
            pass

    loadavg_start = " ".join(f"{x:.2f}" for x in os.getloadavg())
    results: dict[str, dict] = {}
    for k in kernels:
        scale = k.quick if args.quick else k.full
        libs = {v: load(libs_of[(k.name, v)][0], scale) for v in VARIANTS}
        res = measure(k, libs, rounds)
        res["vectorized"] = {v: libs_of[(k.name, v)][1] for v in VARIANTS}
        res["goal"] = k.goal
        res["met"] = goal_met(k, res)
        res["scale"] = scale
        res["march"] = k.march
        results[k.name] = res
        r = res["ratio"]
        print(f"{k.name:20s} o3 {res['median_ms']['o3']:8.3f} ms  accel {r['accel']:.2f}x  "
              f"irce {r['irce']:.2f}x  hand {r['hand']:.2f}x  goal met: {res['met']}",
              flush=True)

    llvm = run([str(LLVM_BIN / "clang"), "--version"]).stdout.splitlines()[0]
    meta = {
        "command": shlex.join([".venv/bin/python", "bench/masked-load/run.py", *sys.argv[1:]]),
        "date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "cpu": cpu_info(),
        "machine": platform.machine(),
        "llvm": llvm,
        "plugin_sha256": hashlib.sha256(plugin.read_bytes()).hexdigest(),
        "rounds": rounds,
        "quick": args.quick,
        "shared_machine": True,
        "loadavg_start": loadavg_start,
        "loadavg_end": " ".join(f"{x:.2f}" for x in os.getloadavg()),
        "timing": "thread CPU time (time.thread_time), median over rounds",
    }
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "masked-load.json").write_text(
        json.dumps({"meta": meta, "results": results}, indent=1) + "\n")
    (out_dir / "masked-load.md").write_text(markdown(meta, results))
    print(f"wrote {out_dir / 'masked-load.md'}")


if __name__ == "__main__":
    main()
