#!/usr/bin/env python3
"""Benchmark harness for the ``accel-phi-decompose`` pass of llvmaccel.

The kernels of ``kernels/complex.mlir`` (a complex<f32> dot product, a
complex axpy and a loop that carries a strided view, all with
``fastmath<reassoc,contract>``) are lowered to LLVM IR with mlir-opt-22 and
mlir-translate-22, then built as shared libraries in three variants:

``o3``
    ``opt -passes='default<O3>'`` without llvmaccel passes
    (``-llvmaccel-auto=none``), then ``llc -O3``: the baseline.
``accel``
    the same with the LLVMAccel plugin's passes at their extension points
    (accel-phi-decompose at Peephole; accel-prefetch at OptimizerLast).
``hand``
    ``kernels/hand.c``: the kernels written in C with separate float
    accumulators and the same fast-math flags
    (``#pragma clang fp reassociate(on) contract(fast)``), clang-22 -O3.

All three target this CPU (``-mcpu=native`` / ``-march=native``). The data is
set up once; in each round every variant runs once, in an order that rotates
from round to round; per variant the median over the rounds is reported, with
``ratio = median(o3) / median(variant)``. Results are checked against a
float64 numpy reference before timing (within a relative 1e-4 of the sum of
magnitudes: reassociation is allowed by the flags, so results are not
bit-identical between variants); any mismatch aborts with exit status 2.

Usage::

    .venv/bin/python bench/phi-decompose/run.py            # full run
    .venv/bin/python bench/phi-decompose/run.py --quick    # smoke run
"""

from __future__ import annotations

import argparse
import ctypes
import datetime as dt
import json
import os
import platform
import re
import shlex
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
KERNELS = HERE / "kernels"
LLVM_BIN = Path(os.environ.get("LLVM_BIN", "/usr/lib/llvm-22/bin"))
DEFAULT_PLUGIN = REPO / "build" / "llvm-22" / "lib" / "LLVMAccel.so"
TRIPLE = "x86_64-unknown-linux-gnu"
MLIR_PASSES = [
    "--expand-strided-metadata",
    "--convert-complex-to-standard",
    "--convert-scf-to-cf",
    "--convert-complex-to-llvm",
    "--convert-math-to-llvm",
    "--finalize-memref-to-llvm",
    "--lower-affine",
    "--convert-arith-to-llvm",
    "--convert-func-to-llvm",
    "--convert-cf-to-llvm",
    "--reconcile-unrealized-casts",
]
VARIANTS = ("o3", "accel", "hand", "hand-llc")
GOAL_VS_HAND = 0.95  # accel within 5% of hand-scalarized


def llc_shared(ll: Path, obj: Path, driver: Path, so: Path) -> None:
    """``ll`` compiled by llc (-O3, this CPU) and linked with ``driver`` into
    the shared library ``so``: the codegen path of every IR variant."""
    run([str(LLVM_BIN / "llc"), "-O3", f"-mtriple={TRIPLE}", "-mcpu=native",
         "-relocation-model=pic", "-filetype=obj", str(ll), "-o", str(obj)])
    run([str(LLVM_BIN / "clang"), "-shared", str(obj), str(driver), "-o", str(so)])


def run(cmd: list[str], **kw: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw)


# ---------------------------------------------------------------------------
# Building
# ---------------------------------------------------------------------------


@dataclass
class Build:
    lib: ctypes.CDLL
    aggregate_phis: int  # `phi {` / `phi [` left in the optimized IR
    vectorized: list[str]  # loop-vectorize remarks (passed)
    phi_remarks: int  # accel-phi-decompose remarks (passed)


def build(work: Path, plugin: Path) -> tuple[dict[str, Build], list[str]]:
    work.mkdir(parents=True, exist_ok=True)
    ll = work / "complex.ll"
    lowered = run([str(LLVM_BIN / "mlir-opt"), str(KERNELS / "complex.mlir"), *MLIR_PASSES]).stdout
    run([str(LLVM_BIN / "mlir-translate"), "--mlir-to-llvmir", "-o", str(ll)], input=lowered)
    commands = [
        f"mlir-opt kernels/complex.mlir {' '.join(MLIR_PASSES)} | mlir-translate --mlir-to-llvmir"
    ]
    driver = work / "driver.o"
    driver_hand = work / "driver-hand.o"
    for obj, extra in ((driver, []), (driver_hand, ["-DHAND"])):
        run(
            [
                str(LLVM_BIN / "clang"),
                "-O2",
                "-fPIC",
                "-c",
                *extra,
                str(KERNELS / "driver.c"),
                "-o",
                str(obj),
            ]
        )
    builds: dict[str, Build] = {}
    for variant in ("o3", "accel"):
        auto = "none" if variant == "o3" else "all"
        opt_ll = work / f"{variant}.ll"
        obj = work / f"{variant}.o"
        so = work / f"{variant}.so"
        opt_cmd = [
            str(LLVM_BIN / "opt"),
            f"-load-pass-plugin={plugin}",
            f"-llvmaccel-auto={auto}",
            "-passes=default<O3>",
            f"-mtriple={TRIPLE}",
            "-mcpu=native",
            "-pass-remarks=loop-vectorize|accel-phi-decompose",
            "-S",
            str(ll),
            "-o",
            str(opt_ll),
        ]
        remarks = run(opt_cmd).stderr
        llc_shared(opt_ll, obj, driver, so)
        text = opt_ll.read_text()
        builds[variant] = Build(
            lib=ctypes.CDLL(str(so)),
            aggregate_phis=len(re.findall(r"= phi [{\[]", text)),
            vectorized=re.findall(r"vectorized loop \([^)]*\)", remarks),
            phi_remarks=remarks.count("split phi") + remarks.count("split select"),
        )
        commands.append(
            f"opt -load-pass-plugin=LLVMAccel.so -llvmaccel-auto={auto} -passes='default<O3>' "
            f"-mtriple={TRIPLE} -mcpu=native; llc -O3 -mcpu=native"
        )
    so = work / "hand.so"
    hand_cmd = [
        str(LLVM_BIN / "clang"),
        "-O3",
        "-march=native",
        "-fPIC",
        "-shared",
        str(KERNELS / "hand.c"),
        str(driver_hand),
        "-o",
        str(so),
    ]
    run(hand_cmd)
    commands.append("clang-22 -O3 -march=native -fPIC -shared kernels/hand.c")
    commands.append(
        "each library also has kernels/driver.c (clang-22 -O2), which calls the "
        "kernel reps times from native code"
    )
    builds["hand"] = Build(ctypes.CDLL(str(so)), 0, [], 0)

    # hand-llc: the same C through the codegen path of the MLIR variants. clang
    # marks its functions "min-legal-vector-width"="0", which lets the X86
    # backend honour this CPU's 256-bit preference when it legalizes the
    # deinterleaving shuffles; IR from mlir-translate has no such attribute, so
    # llc uses 512-bit shuffles for it (the same for o3 and accel).
    hand_ll = work / "hand.ll"
    run(
        [
            str(LLVM_BIN / "clang"),
            "-O3",
            "-march=native",
            "-S",
            "-emit-llvm",
            str(KERNELS / "hand.c"),
            "-o",
            str(hand_ll),
        ]
    )
    hand_llc = work / "hand-llc.ll"
    hand_llc.write_text(hand_ll.read_text().replace('"min-legal-vector-width"="0"', ""))
    obj, so = work / "hand-llc.o", work / "hand-llc.so"
    llc_shared(hand_llc, obj, driver_hand, so)
    builds["hand-llc"] = Build(ctypes.CDLL(str(so)), 0, [], 0)
    commands.append(
        "hand-llc: clang-22 -O3 -march=native -S -emit-llvm kernels/hand.c, "
        'without clang\'s "min-legal-vector-width"="0" attribute, then '
        "llc -O3 -mcpu=native (the codegen path of o3 and accel)"
    )
    return builds, commands


# ---------------------------------------------------------------------------
# Cases
# ---------------------------------------------------------------------------

I64 = ctypes.c_int64
PTR = ctypes.c_void_p
F32 = ctypes.c_float


def bind(f: Any, args: list[Any]) -> Callable[[int], None]:
    """A call of driver function \\p f (kernel run `reps` times) on \\p args."""
    return lambda reps: f(I64(reps), *args)


@dataclass
class Case:
    name: str
    what: str
    calls: dict[str, Callable[[int], None]]  # variant -> run the kernel `reps` times
    check: Callable[[str], float]  # relative error of a variant's result
    keep: tuple[np.ndarray, ...] = ()  # the arrays the calls point into


def complex_data(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.uniform(-1.0, 1.0, 2 * n).astype(np.float32)


def cdot_case(builds: dict[str, Build], n: int, label: str) -> Case:
    a, b = complex_data(n, 1), complex_data(n, 2)
    outs = {v: np.zeros(2, np.float32) for v in VARIANTS}
    ac = a[0::2] + 1j * a[1::2].astype(np.float64)
    bc = b[0::2] + 1j * b[1::2].astype(np.float64)
    ref = np.sum(ac.astype(np.complex128) * bc.astype(np.complex128))
    scale = float(np.sum(np.abs(ac) * np.abs(bc)))
    calls: dict[str, Callable[[int], None]] = {}
    for v in VARIANTS:
        args = [PTR(a.ctypes.data), PTR(b.ctypes.data), PTR(outs[v].ctypes.data), I64(n)]
        calls[v] = bind(builds[v].lib.run_cdot, args)

    def check(v: str) -> float:
        calls[v](1)
        got = complex(float(outs[v][0]), float(outs[v][1]))
        return abs(got - ref) / scale

    return Case(
        f"cdot-{label}", f"complex<f32> dot product, n={n}", calls, check, (a, b, *outs.values())
    )


def caxpy_case(builds: dict[str, Build], n: int, label: str) -> Case:
    x = complex_data(n, 3)
    y0 = complex_data(n, 4)
    ys = {v: y0.copy() for v in VARIANTS}
    alpha = complex(0.5, -0.25)
    xc = x[0::2].astype(np.float64) + 1j * x[1::2].astype(np.float64)
    yc = y0[0::2].astype(np.float64) + 1j * y0[1::2].astype(np.float64)
    ref = alpha * xc + yc
    calls: dict[str, Callable[[int], None]] = {}
    for v in VARIANTS:
        args = [
            PTR(x.ctypes.data),
            PTR(ys[v].ctypes.data),
            F32(alpha.real),
            F32(alpha.imag),
            I64(n),
        ]
        calls[v] = bind(builds[v].lib.run_caxpy, args)

    def check(v: str) -> float:
        ys[v][:] = y0
        calls[v](1)
        got = ys[v][0::2].astype(np.float64) + 1j * ys[v][1::2].astype(np.float64)
        err = float(np.max(np.abs(got - ref)))
        ys[v][:] = y0  # timed calls keep accumulating into y: fine, finite
        return err

    return Case(
        f"caxpy-{label}", f"complex<f32> axpy (y in place), n={n}", calls, check, (x, *ys.values())
    )


def window_case(builds: dict[str, Build], m: int, w: int, step: int) -> Case:
    total = (m - 1) * step + w
    rng = np.random.default_rng(5)
    x = rng.uniform(-1.0, 1.0, total).astype(np.float32)
    outs = {v: np.zeros(m, np.float32) for v in VARIANTS}
    idx = np.arange(m)[:, None] * step + np.arange(w)[None, :]
    ref = x.astype(np.float64)[idx].sum(axis=1)
    scale = float(np.abs(x.astype(np.float64)[idx]).sum(axis=1).max())
    calls: dict[str, Callable[[int], None]] = {}
    for v in VARIANTS:
        args = [PTR(x.ctypes.data), I64(total), PTR(outs[v].ctypes.data), I64(m), I64(w), I64(step)]
        calls[v] = bind(builds[v].lib.run_window, args)

    def check(v: str) -> float:
        calls[v](1)
        return float(np.max(np.abs(outs[v] - ref))) / scale

    return Case(
        f"window-w{w}",
        f"sliding-window sums over a carried strided view, {m} windows of {w} floats, step {step}",
        calls,
        check,
        (x, *outs.values()),
    )


# ---------------------------------------------------------------------------
# Timing
# ---------------------------------------------------------------------------


def per_call_seconds(f: Callable[[int], None], reps: int) -> float:
    t0 = time.perf_counter()
    f(reps)
    return (time.perf_counter() - t0) / reps


def calibrate(f: Callable[[int], None], target: float) -> int:
    reps = 1
    while True:
        t = per_call_seconds(f, reps) * reps
        if t >= target or reps >= 1 << 20:
            return max(1, int(reps * target / max(t, 1e-9)))
        reps *= 4


def measure(case: Case, rounds: int, target: float) -> dict[str, list[float]]:
    for f in case.calls.values():
        f(1)  # warm-up
    reps = calibrate(case.calls["o3"], target)
    times: dict[str, list[float]] = {v: [] for v in VARIANTS}
    for r in range(rounds):
        k = r % len(VARIANTS)
        order = VARIANTS[k:] + VARIANTS[:k]
        for v in order:
            times[v].append(per_call_seconds(case.calls[v], reps))
    return times


# ---------------------------------------------------------------------------
# Reporting
# ---------------------------------------------------------------------------


def cpu_info() -> dict[str, str]:
    out = subprocess.run(["lscpu"], capture_output=True, text=True, check=False).stdout
    info: dict[str, str] = {}
    for key in ("Model name", "Vendor ID", "CPU family", "Model"):
        m = re.search(rf"^{key}:\s*(.+)$", out, re.M)
        if m:
            info[key] = m.group(1).strip()
    return info


def write_results(out_dir: Path, payload: dict[str, Any]) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "phi-decompose.json").write_text(json.dumps(payload, indent=2) + "\n")
    cpu = payload["cpu"]
    lines = [
        "# accel-phi-decompose benchmark",
        "",
        f"- command: `{payload['command']}`",
        f"- date: {payload['date']}",
        f"- CPU: {cpu.get('Model name', '?')} ({cpu.get('Vendor ID', '?')}, family "
        f"{cpu.get('CPU family', '?')}, model {cpu.get('Model', '?')}); single thread, "
        f"pinned to CPU {payload['cpu_pinned']}",
        f"- LLVM: {payload['llvm']}; rounds: {payload['rounds']} (interleaved, rotating order); "
        "medians per call",
        "- Measured on a shared machine (2 cores shared with other jobs): absolute times vary "
        "from run to run; the in-run ratios are what count.",
        "",
        "Builds: MLIR lowered with " + payload["build"][0] + "; then",
        *[f"- `{c}`" for c in payload["build"][1:]],
        "",
        "Optimized IR: aggregate phis left / loops vectorized (loop-vectorize remarks):",
        "",
        "| variant | aggregate phis | vectorized loops | accel-phi-decompose splits |",
        "|---|---:|---|---:|",
    ]
    for v in ("o3", "accel"):
        b = payload["builds"][v]
        lines.append(
            f"| {v} | {b['aggregate_phis']} | {', '.join(b['vectorized']) or 'none'} | "
            f"{b['phi_remarks']} |"
        )
    lines += [
        "",
        "| case | what | o3 us | accel us | hand us | hand-llc us | accel vs o3 | hand vs o3 | "
        "accel vs hand | accel vs hand-llc | within 5% of hand (-llc) | min: accel vs o3 / hand / "
        "hand-llc |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---|",
    ]
    for c in payload["cases"]:
        med = c["median_us"]
        lines.append(
            f"| {c['name']} | {c['what']} | {med['o3']:.2f} | {med['accel']:.2f} | "
            f"{med['hand']:.2f} | {med['hand-llc']:.2f} | {c['accel_vs_o3']:.2f}x | "
            f"{c['hand_vs_o3']:.2f}x | {c['accel_vs_hand']:.2f} | {c['accel_vs_hand_llc']:.2f} | "
            f"{'yes' if c['goal_met'] else 'no'} "
            f"({'yes' if c['goal_met_same_codegen'] else 'no'}) | "
            f"{c['min_accel_vs_o3']:.2f}x / {c['min_accel_vs_hand']:.2f} / "
            f"{c['min_accel_vs_hand_llc']:.2f} |"
        )
    lines += [
        "",
        "Columns other than `min:` compare medians; `min:` compares the fastest sample of "
        "each variant, which other jobs on this shared machine disturb least. "
        "`accel vs hand` is hand time / accel time (1.00 = as fast as the hand-scalarized C "
        "built by clang); `accel vs hand-llc` compares with the same C through the codegen "
        'path of o3 and accel (see the build list: clang\'s "min-legal-vector-width" '
        "attribute alone makes the X86 backend lower the deinterleaving shuffles of the "
        "vectorized complex loops with 256-bit instead of 512-bit permutes on this CPU; IR "
        "from mlir-translate has no such attribute, with or without the pass). Results are "
        "checked against a float64 reference before timing (max relative error per variant "
        "in the JSON).",
        "",
    ]
    (out_dir / "phi-decompose.md").write_text("\n".join(lines))


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--quick", action="store_true", help="small sizes, 5 rounds, results elsewhere")
    ap.add_argument("--rounds", type=int, default=None)
    ap.add_argument("--plugin", type=Path, default=DEFAULT_PLUGIN)
    ap.add_argument("--cpu", type=int, default=0)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()

    rounds = args.rounds or (5 if args.quick else 31)
    target = 0.01 if args.quick else 0.05  # seconds per sample
    out_dir = args.out or (
        REPO / "bench" / "work" / "results-quick" if args.quick else REPO / "bench" / "results"
    )
    work = REPO / "bench" / "work" / "phi-decompose"
    if not args.plugin.exists():
        print(f"run.py: no plugin at {args.plugin} (build it first)", file=sys.stderr)
        return 1
    builds, build_cmds = build(work, args.plugin)
    try:
        os.sched_setaffinity(0, {args.cpu})
    except (AttributeError, OSError):
        pass

    small, large = (4096, 1 << 16) if args.quick else (4096, 4 << 20)
    cases = [
        cdot_case(builds, small, "4k"),
        cdot_case(builds, large, "64k" if args.quick else "4M"),
        caxpy_case(builds, small, "4k"),
        caxpy_case(builds, large, "64k" if args.quick else "4M"),
        window_case(builds, 4096, 64, 16),
    ]
    results = []
    for case in cases:
        errors = {v: case.check(v) for v in VARIANTS}
        bad = {v: e for v, e in errors.items() if not e <= 1e-4}
        if bad:
            print(f"run.py: {case.name}: results differ from the reference: {bad}", file=sys.stderr)
            return 2
        times = measure(case, rounds, target)
        med = {v: statistics.median(t) * 1e6 for v, t in times.items()}
        res = {
            "name": case.name,
            "what": case.what,
            "median_us": med,
            "samples_us": {v: [s * 1e6 for s in t] for v, t in times.items()},
            "max_rel_error": errors,
            "accel_vs_o3": med["o3"] / med["accel"],
            "hand_vs_o3": med["o3"] / med["hand"],
            "accel_vs_hand": med["hand"] / med["accel"],
            "accel_vs_hand_llc": med["hand-llc"] / med["accel"],
            # Fastest sample per variant: less exposed to other jobs on a
            # shared machine than the median (reported alongside it).
            "min_us": {v: min(t) * 1e6 for v, t in times.items()},
        }
        mins = res["min_us"]
        res["min_accel_vs_o3"] = mins["o3"] / mins["accel"]
        res["min_accel_vs_hand"] = mins["hand"] / mins["accel"]
        res["min_accel_vs_hand_llc"] = mins["hand-llc"] / mins["accel"]
        res["goal_met"] = res["accel_vs_hand"] >= GOAL_VS_HAND
        res["goal_met_same_codegen"] = res["accel_vs_hand_llc"] >= GOAL_VS_HAND
        results.append(res)
        print(
            f"{case.name:14s} o3 {med['o3']:10.2f} us  accel {med['accel']:10.2f} us  "
            f"hand {med['hand']:10.2f} us  accel/o3 {res['accel_vs_o3']:.2f}x  "
            f"hand-llc {med['hand-llc']:10.2f} us  accel vs hand {res['accel_vs_hand']:.2f}  "
            f"vs hand-llc {res['accel_vs_hand_llc']:.2f}",
            flush=True,
        )

    llvm = run([str(LLVM_BIN / "opt"), "--version"]).stdout
    m = re.search(r"LLVM version (\S+)", llvm)
    payload = {
        "command": " ".join(
            shlex.quote(a)
            for a in [".venv/bin/python", "bench/phi-decompose/run.py", *sys.argv[1:]]
        ),
        "date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "cpu": cpu_info(),
        "cpu_pinned": args.cpu,
        "machine": platform.machine(),
        "llvm": m.group(1) if m else "?",
        "rounds": rounds,
        "shared_machine": True,
        "build": build_cmds,
        "builds": {
            v: {
                "aggregate_phis": builds[v].aggregate_phis,
                "vectorized": builds[v].vectorized,
                "phi_remarks": builds[v].phi_remarks,
            }
            for v in ("o3", "accel")
        },
        "cases": results,
    }
    write_results(out_dir, payload)
    print(f"wrote {out_dir / 'phi-decompose.json'} and .md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
