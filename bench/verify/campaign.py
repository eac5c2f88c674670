#!/usr/bin/env python3
"""A cumulative fuzz campaign: pass after pass, recorded, summed across runs and hosts.

Issue 12's volume goal is, per pass, 100,000 generated kernels and 10,000
llvm-stress modules checked with no finding. No one run gets there, so every
run adds to a record (``bench/results/verify-campaign.jsonl``, a JSON line per
slice of a pass's run) and ``totals`` sums the record:

    .venv/bin/python bench/verify/campaign.py run --seconds 3600
    .venv/bin/python bench/verify/campaign.py totals --markdown

``run`` splits its budget evenly over the passes (``--pass``, default every
pass in the plugin), in slices of at most ``--slice`` seconds, pass after pass
(round after round); each
slice is one :func:`llvmaccel.fuzz.fuzz` call whose line is appended as soon
as it ends (an interrupted campaign loses at most the slice it was in, and a
next run just adds to the record). Each slice takes a block of
:data:`BLOCK` kernel seeds no line of the record has used, drawn at random in
``[2^31, 2^32)`` (llvm-stress takes 32-bit seeds; clock-seeded runs use seeds
below 2^31 until 2038), so no kernel or llvm-stress seed is checked twice for
a pass, and two hosts starting from the same record rarely pick the same
block (``totals`` reports any overlap). The shape weighting of each slice
starts from the pass's counts per shape in the record
(:func:`llvmaccel.fuzz.shape_weights`, ``prior``). A line holds the seeds,
counts per shape, findings and the files kept for them, the CPU (lscpu's
model name, vendor, family and model), the commit, the command and the
dates.

``totals`` reads the record and any other record files given (``--record``,
e.g. the nightly workflow job's artifact) and prints per pass the kernels,
llvm-stress modules, transformed shares, findings and the distance to the
goal, and the rates per host (kernels and modules checked a minute per worker
process).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import random
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RECORD = ROOT / "bench" / "results" / "verify-campaign.jsonl"

#: Kernel seeds per slice (a slice stops there even within its time).
BLOCK = 1 << 20
#: Where the blocks lie: [SEED_BASE, SEED_BASE + BLOCKS * BLOCK) = [2^31, 2^32).
SEED_BASE = 1 << 31
BLOCKS = 2048
#: The goal per pass (issue 12).
GOAL_KERNELS = 100_000
GOAL_STRESS = 10_000


def cpu() -> dict[str, str]:
    """lscpu's model name, vendor, family, model and CPU count."""
    out = subprocess.run(["lscpu"], capture_output=True, text=True, check=False).stdout
    keys = {"Model name": "model", "Vendor ID": "vendor", "CPU family": "family",
            "Model": "model_number", "CPU(s)": "cpus"}
    info = {}
    for line in out.splitlines():
        k, _, v = line.partition(":")
        if k.strip() in keys and keys[k.strip()] not in info:
            info[keys[k.strip()]] = v.strip()
    return info


def cpu_text(c: dict[str, str]) -> str:
    """``Model (Vendor, family F, model M, N CPUs)``."""
    return (f"{c.get('model', '?')} ({c.get('vendor', '?')}, family {c.get('family', '?')}, "
            f"model {c.get('model_number', '?')}, {c.get('cpus', '?')} CPUs)")


def read_records(paths: list[Path]) -> list[dict]:
    """The lines of the record files (missing files are empty records).

    Raises:
        ValueError: a line is not JSON (with its file and line number).
    """
    lines = []
    for path in paths:
        if not path.exists():
            continue
        for n, text in enumerate(path.read_text().splitlines(), 1):
            if not text.strip():
                continue
            try:
                lines.append(json.loads(text))
            except json.JSONDecodeError as err:
                raise ValueError(f"{path}:{n}: not a JSON line: {err}") from err
    return lines


def seed_range(line: dict) -> tuple[int, int]:
    """The kernel seeds a line used, [first, end)."""
    first = int(line["seed"])
    return first, int(line.get("next_seed") or first + int(line["kernels"]))


def free_block(lines: list[dict], rng: random.Random) -> int:
    """The first seed of a block no line has used.

    Raises:
        RuntimeError: every block is used.
    """
    used = set()
    for line in lines:
        first, end = seed_range(line)
        if end <= first:
            continue
        for b in range(max(0, (first - SEED_BASE) // BLOCK),
                       min(BLOCKS - 1, (end - 1 - SEED_BASE) // BLOCK) + 1):
            if first < SEED_BASE + (b + 1) * BLOCK and end > SEED_BASE + b * BLOCK:
                used.add(b)
    free = [b for b in range(BLOCKS) if b not in used]
    if not free:
        raise RuntimeError("every seed block of the campaign is used")
    return SEED_BASE + rng.choice(free) * BLOCK


def prior_of(lines: list[dict], pass_name: str) -> dict[str, Counter]:
    """The pass's counts per shape over the record."""
    out: dict[str, Counter] = {}
    for line in lines:
        if line["pass"] != pass_name:
            continue
        for shape, counts in line.get("by_shape", {}).items():
            out.setdefault(shape, Counter()).update(counts)
    return out


def _commit() -> str:
    out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                         text=True, cwd=ROOT, check=False)
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "python"],
                           capture_output=True, text=True, cwd=ROOT, check=False).stdout
    return out.stdout.strip() + ("+changes" if dirty.strip() else "") or "unknown"


def run(args: argparse.Namespace) -> int:
    """Runs slices pass after pass until the budget is spent; appends a line each."""
    import llvmaccel
    from llvmaccel.fuzz import fuzz

    names = args.pass_name or [p.name for p in llvmaccel.passes()]
    record = Path(args.record)
    record.parent.mkdir(parents=True, exist_ok=True)
    rng = random.Random(int.from_bytes(os.urandom(8), "little"))
    host, commit = cpu(), _commit()
    command = " ".join(["bench/verify/campaign.py", *sys.argv[1:]])
    left = {name: args.seconds / len(names) for name in names}
    status = 0
    while any(v >= 5 for v in left.values()):
        for name in names:
            if left[name] < 5:
                continue
            lines = read_records([record, *map(Path, args.also or [])])
            seed = free_block(lines, rng)
            started = dt.datetime.now(dt.timezone.utc)
            t0 = time.monotonic()
            report = fuzz(name, seconds=min(args.slice, left[name]), kernels=BLOCK, seed=seed,
                          out_dir=args.out, reduce_seconds=args.reduce_seconds or None,
                          jobs=args.jobs, prior=prior_of(lines, name), progress=args.progress,
                          shapes=args.shape)
            left[name] -= time.monotonic() - t0
            line = {"pass": name, "pipeline": report.pipeline, "seed": seed,
                    "next_seed": report.next_seed, "seconds": round(report.seconds, 1),
                    "jobs": args.jobs, "kernels": report.kernels,
                    "kernels_transformed": report.kernels_transformed,
                     "kernels_unchanged": report.kernels_unchanged, "cases": report.cases,
                    "stress_modules": report.stress_modules,
                    "stress_transformed": report.stress_transformed,
                    "findings": dict(report.findings),
                    "generator_errors": report.generator_errors,
                    "saved": [os.path.relpath(p, ROOT) for p in report.saved],
                    "by_shape": {k: {c: round(n, 3) if isinstance(n, float) else n
                                     for c, n in v.items()}
                                 for k, v in sorted(report.by_shape.items())},
                    "cpu": host, "commit": commit, "llvm": llvmaccel.llvm_version(),
                    "command": command, "nice": os.nice(0),
                    "started": started.isoformat(timespec="seconds"),
                    "ended": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")}
            with open(record, "a") as f:
                f.write(json.dumps(line) + "\n")
            print(report.table(), flush=True)
            if not report.ok:
                status = 1
    return status


def totals(lines: list[dict]) -> dict:
    """Per pass: summed counts, per-shape counts, findings, and rates per host."""
    out: dict[str, dict] = {}
    for line in lines:
        t = out.setdefault(line["pass"], {
            "kernels": 0, "kernels_transformed": 0, "kernels_unchanged": 0,
            "stress_modules": 0, "cases": 0, "seconds": 0.0, "findings": Counter(),
            "generator_errors": 0, "runs": 0,
            "by_shape": {}, "hosts": {}, "ranges": [], "saved": []})
        # kernels_unchanged: since the fuzz stopped executing the kernels a
        # pass leaves as they were (earlier lines executed every kernel).
        for key in ("kernels", "kernels_transformed", "kernels_unchanged", "stress_modules",
                    "cases", "generator_errors"):
            t[key] += int(line.get(key, 0))
        t["seconds"] += float(line.get("seconds", 0.0))
        t["runs"] += 1
        t["findings"].update(line.get("findings", {}))
        t["saved"] += line.get("saved", [])
        t["ranges"].append(seed_range(line))
        for shape, counts in line.get("by_shape", {}).items():
            t["by_shape"].setdefault(shape, Counter()).update(
                {k: v for k, v in counts.items() if k != "seconds"})
        host = cpu_text(line["cpu"]) if line.get("cpu") else line.get("host", "unknown host")
        h = t["hosts"].setdefault(host, {"kernels": 0, "stress_modules": 0,
                                         "process_seconds": 0.0, "runs": 0})
        h["kernels"] += int(line.get("kernels", 0))
        h["stress_modules"] += int(line.get("stress_modules", 0))
        h["process_seconds"] += float(line.get("seconds", 0.0)) * int(line.get("jobs", 1))
        h["runs"] += 1
    for t in out.values():
        ranges = sorted(t["ranges"])
        t["overlaps"] = sum(1 for a, b in zip(ranges, ranges[1:], strict=False) if b[0] < a[1])
    return out


def markdown(summary: dict) -> str:
    """The totals as markdown tables."""
    rows = ["| pass | runs | generated kernels | transformed | unchanged, not executed | "
            "llvm-stress modules | inputs executed | findings | to 100,000 kernels | "
            "to 10,000 modules |",
            "|---|---:|---:|---:|---:|---:|---:|---|---:|---:|"]
    for name, t in sorted(summary.items()):
        found = ", ".join(f"{k} {v}" for k, v in sorted(t["findings"].items())) or "none"
        share = 100.0 * t["kernels_transformed"] / t["kernels"] if t["kernels"] else 0.0
        rows.append(f"| `{name}` | {t['runs']} | {t['kernels']:,} | "
                    f"{t['kernels_transformed']:,} ({share:.0f}%) | {t['kernels_unchanged']:,} | "
                    f"{t['stress_modules']:,} | "
                    f"{t['cases']:,} | {found} | "
                    f"{max(0, GOAL_KERNELS - t['kernels']):,} | "
                    f"{max(0, GOAL_STRESS - t['stress_modules']):,} |")
    rows += ["", "Rates per host (per worker process: a run's kernels over its seconds times "
             "its `--jobs`):", "",
             "| pass | host | kernels | per minute | llvm-stress modules | per minute |",
             "|---|---|---:|---:|---:|---:|"]
    for name, t in sorted(summary.items()):
        for host, h in sorted(t["hosts"].items()):
            minutes = h["process_seconds"] / 60.0 or 1.0
            rows.append(f"| `{name}` | {host} | {h['kernels']:,} | "
                        f"{h['kernels'] / minutes:.0f} | {h['stress_modules']:,} | "
                        f"{h['stress_modules'] / minutes:.0f} |")
    rows.append("")
    for name, t in sorted(summary.items()):
        shapes = ", ".join(f"{s} {c['checked']}/{c['transformed']}"
                           for s, c in sorted(t["by_shape"].items()))
        rows.append(f"* `{name}` per shape (checked/transformed): {shapes}; seed ranges "
                    f"overlapping: {t['overlaps']}")
    return "\n".join(rows) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="command", required=True)
    p = sub.add_parser("run", help="fuzz pass after pass, appending to the record")
    p.add_argument("--seconds", type=float, required=True, help="the whole budget")
    p.add_argument("--pass", dest="pass_name", action="append", metavar="NAME",
                   help="pass to fuzz (repeatable; default: every pass in the plugin)")
    p.add_argument("--slice", type=float, default=600.0,
                   help="at most this long per line of the record (default 600 s)")
    p.add_argument("--jobs", type=int, default=1, help="worker processes (default 1)")
    p.add_argument("--shape", action="append",
                   help="generate only this shape (repeatable; default: every shape)")
    p.add_argument("--record", default=str(RECORD), help="the record appended to")
    p.add_argument("--also", action="append", metavar="PATH",
                   help="another record whose seed blocks are taken (repeatable)")
    p.add_argument("--out", default=str(ROOT / "bench" / "work" / "campaign-findings"),
                   help="where failing cases are kept, reduced")
    p.add_argument("--reduce-seconds", type=float, default=300.0)
    p.add_argument("--progress", action="store_true")
    p = sub.add_parser("totals", help="sum the record(s)")
    p.add_argument("--record", action="append", metavar="PATH",
                   help="record files (repeatable; default the campaign's)")
    p.add_argument("--markdown", action="store_true", help="markdown tables")
    args = ap.parse_args()
    if args.command == "run":
        if args.seconds <= 0 or args.slice <= 0 or args.jobs < 1:
            ap.error("--seconds and --slice must be positive and --jobs at least 1")
        return run(args)
    summary = totals(read_records([Path(p) for p in (args.record or [str(RECORD)])]))
    if args.markdown:
        print(markdown(summary), end="")
    else:
        print(json.dumps(summary, indent=2, default=lambda o: dict(o) if isinstance(
            o, Counter) else str(o)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
