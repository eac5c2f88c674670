#!/usr/bin/env python3
"""Where ``llvmaccel fuzz`` spends its time: per stage, parent and worker.

Runs :func:`llvmaccel.fuzz.fuzz` for one pass over a fixed number of kernels
(loop shapes or task shapes, ``--shapes loop|task``) under cProfile, with the
checking worker profiled too (``$LLVMACCEL_CHECKWORKER_PROFILE``), and prints

* the stage timers the fuzz run keeps (``FuzzReport.times``: generation,
  llvm-stress, the checking worker's wall time, and the worker's own stages:
  parse, pipeline, print, describe, jit, inputs, execute, compare, emit);
* the top functions of the parent's and the worker's profiles by cumulative
  time.

Pin it to one core for figures that compare (``taskset -c 1``)::

    taskset -c 1 .venv/bin/python bench/verify/profile_fuzz.py --pass accel-prefetch \\
        --shapes loop --kernels 96
    .venv/bin/python bench/verify/profile_fuzz.py --table runs.jsonl   # markdown
"""

from __future__ import annotations

import argparse
import cProfile
import glob
import io
import json
import os
import pstats
import sys
import tempfile
import time

from llvmaccel import kernelgen, taskgen
from llvmaccel.fuzz import fuzz


def _top(stats: pstats.Stats, limit: int) -> str:
    out = io.StringIO()
    stats.stream = out
    stats.sort_stats("cumulative").print_stats(limit)
    return out.getvalue()


#: Stages in the order of the table, with the parent's ``check`` wall time
#: split into the workers' stages and the rest (worker start-up, IPC, waiting).
_ORDER = ("generate", "stress", "worker:worker-start", "worker:parse", "worker:pipeline",
          "worker:print", "worker:describe", "worker:jit", "worker:inputs", "worker:execute",
          "worker:compare", "worker:confirm", "worker:emit", "worker-stress:parse",
          "worker-stress:pipeline", "worker-stress:print", "worker-stress:describe",
          "worker-stress:jit", "worker-stress:emit", "ipc")


def table(paths: list[str]) -> str:
    """Markdown: milliseconds per generated kernel per stage, one column per
    JSON line of ``--json`` (runs without cProfile)."""
    runs = []
    for path in paths:
        with open(path) as f:
            runs += [json.loads(line) for line in f if line.strip()]
    runs = [r for r in runs if not r["cprofile"]]
    head = "| stage (ms per kernel) | " + " | ".join(
        f"{r['pass']} {r['shapes']} {r.get('label', '')}".strip() for r in runs) + " |"
    rows = [head, "|---|" + "---:|" * len(runs)]
    for stage in _ORDER:
        cells = []
        for r in runs:
            t = r["times"]
            if stage == "ipc":
                inner = sum(v for k, v in t.items() if k.startswith("worker")
                            and not k.endswith(":children"))
                v = t.get("check", 0.0) - inner
            else:
                v = t.get(stage, 0.0)
            cells.append(f"{1000.0 * v / max(1, r['kernels']):.1f}")
        if any(c != "0.0" for c in cells):
            rows.append(f"| {stage} | " + " | ".join(cells) + " |")
    forks = []
    for r in runs:
        n = r["times"].get("worker:children")
        forks.append(f"{n / max(1, r['kernels']):.2f}" if n is not None else "-")
    rows.append("| children forked per kernel | " + " | ".join(forks) + " |")
    rows.append("| **wall, ms per kernel** | " + " | ".join(
        f"**{1000.0 * r['wall'] / max(1, r['kernels']):.0f}**" for r in runs) + " |")
    rows.append("| kernels per minute | " + " | ".join(
        f"{60.0 * r['kernels'] / r['wall']:.0f}" for r in runs) + " |")
    rows.append("| llvm-stress modules per minute | " + " | ".join(
        f"{60.0 * r['stress'] / r['wall']:.0f}" for r in runs) + " |")
    return "\n".join(rows) + "\n"


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "--table":
        print(table(sys.argv[2:]), end="")
        return 0
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pass", dest="pass_name", required=True)
    ap.add_argument("--shapes", choices=("loop", "task"), default="loop")
    ap.add_argument("--kernels", type=int, default=96)
    ap.add_argument("--seed", type=int, default=500000)
    ap.add_argument("--top", type=int, default=25, help="functions listed per profile")
    ap.add_argument("--json", help="append the stage times as a JSON line here")
    ap.add_argument("--label", default="", help="a word for the --table column")
    ap.add_argument("--no-cprofile", action="store_true",
                    help="stage timers only (cProfile slows Python-heavy stages)")
    ap.add_argument("--mix", choices=("fuzz", "round-robin"), default="fuzz",
                    help="shapes as fuzz draws them, or in turn by seed (the same kernels "
                         "whatever the weighting: to compare two versions of the harness)")
    ap.add_argument("--fuzz-arg", action="append", default=[], metavar="KEY=VALUE",
                    help="another keyword of fuzz() (int values), e.g. jobs=2")
    args = ap.parse_args()
    shapes = (list(kernelgen.LOOP_SHAPES) if args.shapes == "loop"
              else [s for s in taskgen.available()])
    if not shapes:
        print("no task shapes here (mlir-opt, clang and the MLIR async runtime needed)",
              file=sys.stderr)
        return 1
    extra = {k: int(v) for k, v in (a.split("=", 1) for a in args.fuzz_arg)}
    if args.mix == "round-robin":
        import llvmaccel.fuzz
        # Both the weighted draw of this version and the one before it call
        # fuzz._shape(shapes, seed, ...).
        llvmaccel.fuzz._shape = lambda names, seed, *rest: names[seed % len(names)]
    work = tempfile.mkdtemp(prefix="llvmaccel-profile-")
    if not args.no_cprofile:
        os.environ["LLVMACCEL_CHECKWORKER_PROFILE"] = work
    prof = cProfile.Profile()
    start = time.perf_counter()
    if args.no_cprofile:
        report = fuzz(args.pass_name, kernels=args.kernels, seed=args.seed, shapes=shapes,
                      out_dir=os.path.join(work, "findings"), **extra)
    else:
        report = prof.runcall(fuzz, args.pass_name, kernels=args.kernels, seed=args.seed,
                              shapes=shapes, out_dir=os.path.join(work, "findings"), **extra)
    wall = time.perf_counter() - start
    print(report.table())
    print(report.stage_table())
    rate = 60.0 * report.kernels / wall
    print(f"  {report.kernels} kernels, {report.stress_modules} llvm-stress modules in "
          f"{wall:.1f} s: {rate:.0f} kernels/min (with cProfile: "
          f"{'no' if args.no_cprofile else 'yes'})")
    if not args.no_cprofile:
        print("\n== parent (cumulative) ==")
        print(_top(pstats.Stats(prof), args.top))
        files = glob.glob(os.path.join(work, "worker-*.prof"))
        if files:
            print(f"== checking workers ({len(files)} processes, cumulative) ==")
            print(_top(pstats.Stats(*files), args.top))
    if args.json:
        with open(args.json, "a") as f:
            f.write(json.dumps({"pass": args.pass_name, "shapes": args.shapes,
                                "kernels": report.kernels, "stress": report.stress_modules,
                                "wall": round(wall, 2), "cprofile": not args.no_cprofile,
                                "mix": args.mix, "transformed": report.kernels_transformed,
                                "label": args.label,
                                "times": {k: round(v, 3) for k, v in report.times.items()},
                                **({"fuzz_args": extra} if extra else {})}) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
