#!/usr/bin/env python3
"""Figures of llvmaccel's verification tooling (bench/results/verify.{json,md}).

For every pass in the plugin's catalog: a fuzz run of ``--seconds`` (generated
kernels through the pass and through ``check``; llvm-stress modules through the
pass with the verifier and both compiled), giving kernels and modules checked
per minute, the share of kernels the pass transformed, per shape, and the
findings. Then the time ``llvm-reduce`` takes to shrink two planted
miscompiles found by ``check`` (test/py/planted_miscompile.sh: an off-by-one
latch in a 20-line kernel, an unclamped look-ahead load in a generated CSR
kernel), and cross-target runs of generated kernels on x86-64, AArch64 (SVE)
and RISC-V (V) under qemu-user, and NVPTX/AMDGPU/SPIR-V compiled by llc.

Usage::

    .venv/bin/python bench/verify/run.py              # ~5 minutes per pass
    .venv/bin/python bench/verify/run.py --quick      # smoke run, bench/work/
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import platform
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "test" / "py"))

import llvmaccel  # noqa: E402
from llvmaccel import kernelgen  # noqa: E402
from llvmaccel.check import check  # noqa: E402
from llvmaccel.crosstarget import available_targets, check_targets  # noqa: E402
from llvmaccel.fuzz import fuzz  # noqa: E402
from llvmaccel.reduce import reduce  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from campaign import cpu  # noqa: E402

PLANTED = f"sh {ROOT / 'test' / 'py' / 'planted_miscompile.sh'}"


def planted(work: Path) -> list[dict]:
    from conftest import AXPY_IR
    rows = []
    k = kernelgen.generate(3, "csr")
    cases = [("off-by-one latch, axpy (20 lines)", AXPY_IR, "axpy", "off-by-one", {}),
             ("unclamped look-ahead load, generated CSR kernel", k.ir, k.function, "lookahead",
              {a: s.to_text() for a, s in k.args.items()})]
    for name, ir, fn, mode, args in cases:
        src = work / f"planted-{mode}.ll"
        src.write_text(ir)
        t0 = time.monotonic()
        res = check(src, fn, transform=f"{PLANTED} {mode}", args=args, cases=64)
        found = time.monotonic() - t0
        f = res.findings[0]
        red = reduce(str(src), fn, f.kind, transform=f"{PLANTED} {mode}", args=args,
                     seed=f.seed or 0, case=f.case)
        rows.append({"bug": name, "kind": f.kind, "case": f.case, "found_s": round(found, 2),
                     "reduce_s": round(red.seconds, 1), "lines": list(red.lines),
                     "reduced": red.ir, "command": red.command.replace(str(ROOT) + "/", "")})
        print(f"planted {mode}: {f.kind} in {found:.1f} s, reduced {red.lines} in "
              f"{red.seconds:.0f} s", flush=True)
    return rows


def targets(n: int) -> dict:
    avail = available_targets()
    names = [t for t, why in avail.items() if not why]
    executed, findings, statuses = 0, [], {}
    for seed in range(n):
        k = kernelgen.generate(seed)
        r = check(k.ir, k.function, "accel-prefetch", args=k.args, cases=2)
        rep = check_targets(k.ir, r.after_ir, k.function, names, cases=6, args=k.args,
                            pipeline="accel-prefetch")
        executed += 1
        findings += rep.findings
        for t, s in rep.status.items():
            key = s.split(" (")[0] if not s.startswith("not compiled") else s
            statuses.setdefault(t, {})
            statuses[t][key] = statuses[t].get(key, 0) + 1
        print(f"targets: kernel {seed} ({k.shape}): {'ok' if rep.ok else rep.findings}",
              flush=True)
    return {"kernels": executed, "targets": statuses, "unavailable": {t: w for t, w in
            avail.items() if w}, "findings": findings}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seconds", type=float, default=300, help="fuzz time per pass")
    ap.add_argument("--target-kernels", type=int, default=6)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--pass", dest="pass_names", action="append", metavar="NAME",
                    help="re-run only the fuzz row of this pass, keeping the rest of verify.json")
    ap.add_argument("--only-targets", action="store_true",
                    help="re-run only the cross-target part, keeping the rest of verify.json")
    args = ap.parse_args()
    out_dir = ROOT / ("bench/work/results-quick" if args.quick else "bench/results")
    work = ROOT / "bench/work"
    work.mkdir(parents=True, exist_ok=True)
    out_dir.mkdir(parents=True, exist_ok=True)
    seconds = 20 if args.quick else args.seconds
    if args.only_targets:
        data = json.loads((out_dir / "verify.json").read_text())
        data["cross_target"] = targets(args.target_kernels)
        data["cross_target"]["command"] = " ".join(["bench/verify/run.py", *sys.argv[1:]])
        data["cross_target"]["commit"] = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
            cwd=ROOT).stdout.strip()
        (out_dir / "verify.json").write_text(json.dumps(data, indent=2) + "\n")
        write_markdown(out_dir / "verify.md", markdown(data))
        return 0
    started = dt.datetime.now(dt.timezone.utc)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True, cwd=ROOT).stdout.strip()
    names = args.pass_names or [p.name for p in llvmaccel.passes()]
    runs = []
    for name in names:
        rep = fuzz(name, seconds=seconds, seed=1_000_000, out_dir=str(work / "findings"),
                   progress=True)
        print(rep.table(), flush=True)
        runs.append({"pass": name, "seconds": round(rep.seconds, 1), "kernels": rep.kernels,
                     "kernels_transformed": rep.kernels_transformed,
                     "kernels_unchanged": rep.kernels_unchanged, "cases": rep.cases,
                     "stress_modules": rep.stress_modules,
                     "stress_transformed": rep.stress_transformed,
                     "findings": dict(rep.findings), "commit": commit,
                     "command": " ".join(["bench/verify/run.py", *sys.argv[1:]]),
                     "by_shape": {k: dict(v) for k, v in rep.by_shape.items()}})
    if args.pass_names:
        data = json.loads((out_dir / "verify.json").read_text())
        data["fuzz"] = [r for r in data["fuzz"] if r["pass"] not in names] + runs
        (out_dir / "verify.json").write_text(json.dumps(data, indent=2) + "\n")
        write_markdown(out_dir / "verify.md", markdown(data))
        return 0
    plant = planted(work) if not args.quick else []
    tg = targets(2 if args.quick else args.target_kernels)
    data = {"command": " ".join(["bench/verify/run.py", *sys.argv[1:]]), "commit": commit,
            "date": started.isoformat(timespec="seconds"), "cpu": cpu(),
            "machine": platform.machine(), "llvm": llvmaccel.llvm_version(),
            "fuzz": runs, "planted": plant, "cross_target": tg}
    (out_dir / "verify.json").write_text(json.dumps(data, indent=2) + "\n")
    write_markdown(out_dir / "verify.md", markdown(data))
    print(f"wrote {out_dir / 'verify.md'}")
    return 0


BEGIN = "<!-- generated by bench/verify/run.py: replaced on each run -->"
END = "<!-- end of the generated part: sections below are kept -->"


def write_markdown(path: Path, generated: str) -> None:
    """Writes ``generated`` between the markers of ``path``, keeping what the
    file holds outside them (hand-written sections of later runs). A file
    without the markers keeps all of its text after the new part."""
    block = f"{BEGIN}\n{generated.rstrip()}\n{END}\n"
    if not path.exists():
        path.write_text(block)
        return
    old = path.read_text()
    if BEGIN in old and END in old:
        head, rest = old.split(BEGIN, 1)
        tail = rest.split(END, 1)[1].lstrip("\n")
        path.write_text(head + block + ("\n" + tail if tail else ""))
    else:
        path.write_text(block + "\n" + old)


def markdown(d: dict) -> str:
    c = d["cpu"]
    lines = [
        "# Verification figures (`llvmaccel check`, `llvmaccel fuzz`, reduction, targets)",
        "",
        f"Command: `.venv/bin/python {d['command']}` · commit {d.get('commit', '?')} · "
        f"date {d['date']} · LLVM {d['llvm']} · "
        f"CPU {c.get('model', '?')} ({c.get('vendor', '?')}, family {c.get('family', '?')}, "
        f"model {c.get('model_number', '?')}, {c.get('cpus', '?')} CPUs).",
        "",
        "Measured on a shared machine (2 cores, other jobs running): rates are what this run "
        "saw, not the tool's ceiling.",
        "",
        "## Fuzz runs, per pass",
        "",
        "| pass | seconds | generated kernels | per minute | transformed | inputs executed | "
        "llvm-stress modules | per minute | findings |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in d["fuzz"]:
        m = r["seconds"] / 60 or 1
        pct = 100 * r["kernels_transformed"] / max(1, r["kernels"])
        share = f"{r['kernels_transformed']} ({pct:.0f}%)"
        found = (", ".join(f"{k} {v}" for k, v in r["findings"].items())
                 or "0 mismatches, 0 crashes")
        at = f" (commit {r['commit']})" if r.get("commit") else ""
        lines.append(f"| `{r['pass']}`{at} | {r['seconds']:.0f} | {r['kernels']} | "
                     f"{r['kernels'] / m:.0f} | {share} | {r['cases']} | {r['stress_modules']} | "
                     f"{r['stress_modules'] / m:.0f} | {found} |")
    reruns = sorted({r["command"] for r in d["fuzz"] if r.get("command")})
    if reruns:
        lines += ["", "Rows with a commit were run by " + ", ".join(
            f"`.venv/bin/python {c}`" for c in reruns) + "."]
    lines += ["", "Against the issue's goals (100,000 generated kernels and 10,000 llvm-stress "
              "modules per pass, zero findings, at least a third of the kernels transformed):", ""]
    for r in d["fuzz"]:
        per_min = r["kernels"] / (r["seconds"] / 60 or 1)
        stress_min = r["stress_modules"] / (r["seconds"] / 60 or 1)
        share = r["kernels_transformed"] / max(1, r["kernels"])
        hours = 100000 / max(per_min, 1) / 60
        stress_hours = 10000 / max(stress_min, 1) / 60
        lines.append(
            f"* `{r['pass']}`: at this rate 100,000 kernels take {hours:.1f} h and 10,000 "
            f"llvm-stress modules {stress_hours:.1f} h of one "
            f"fuzz process (the nightly job runs 40 minutes per pass; CI's bounded run "
            f"120 s split over the passes); transformed share {100 * share:.0f}% "
            f"({'meets' if share >= 1 / 3 else 'below'} the one-third goal).")
    lines += ["", "Per shape (kernels checked / transformed by the pass):", ""]
    for r in d["fuzz"]:
        shapes = ", ".join(f"{s} {v.get('checked', 0)}/{v.get('transformed', 0)}"
                           for s, v in sorted(r["by_shape"].items()))
        lines.append(f"* `{r['pass']}`: {shapes}")
    if d["planted"]:
        lines += ["", "## Planted miscompiles: found by check, reduced by llvm-reduce", "",
                  "| planted bug | finding | found in | llvm-reduce | lines before -> after |",
                  "|---|---|---:|---:|---|"]
        for p in d["planted"]:
            lines.append(f"| {p['bug']} | {p['kind']} (case {p['case']}) | {p['found_s']} s | "
                         f"{p['reduce_s']} s | {p['lines'][0]} -> {p['lines'][1]} |")
        for p in d["planted"]:
            lines += ["", f"Reduced ({p['bug']}); reproduce with `{p['command']}`:", "",
                      "```llvm", p["reduced"].strip(), "```"]
    t = d["cross_target"]
    again = (f" (`.venv/bin/python {t['command']}` at commit {t.get('commit', '?')})"
             if t.get("command") else "")
    lines += ["", "## Targets", "",
              f"{t['kernels']} generated kernels, before and after `accel-prefetch`, 6 inputs "
              f"each{again}:", ""]
    lines += [f"* {name}: " + "; ".join(f"{status}: {n}" for status, n in counts.items())
              for name, counts in t["targets"].items()]
    lines += [f"* {name}: not run ({why})" for name, why in t["unavailable"].items()]
    lines += ["", "Findings: " + ("; ".join(t["findings"]) if t["findings"] else "none"), ""]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
