#!/usr/bin/env python3
"""Benchmark harness for the ``accel-async-fusion`` pass of llvmaccel.

Task graphs written in MLIR's async dialect (generated below) are lowered with
mlir-opt-22 / mlir-translate-22 as in /work/shared/notes/llvm-versions.md and
compiled in two variants, linked with a C driver against the real MLIR async
runtime (``libmlir_async_runtime.so``):

``unfused``
    ``opt -passes='default<O2>'`` without the plugin (the baseline: every
    ``async.execute`` is a task scheduled on the runtime's thread pool).
``fused``
    the same pipeline with the plugin loaded: accel-async-fusion runs at
    PipelineStart with its defaults.

and, for the fan-out graph, ``sequential``: the same branch bodies in plain C
(clang-22 -O2), called one after the other (what the graph costs without any
task parallelism).

Graphs:

``chain500``
    500 dependent tasks, each adding 1 to a counter (a chain).
``tiny500``
    500 independent tasks in a group, each storing one element.
``fanout``
    a head task, 2 branches doing real work (a 2^21-step integer recurrence
    each) and a fan-in task combining them: the branches must stay parallel.

GPU launch loops (no GPU here): the CUDA host code of
``test/lit/accel-async-fusion/Inputs/launch-loops.cu`` built with and without
the pass and run against the tests' recording CUDA runtime, which counts the
API calls (``cudaLaunchKernel``, ``cudaGraphLaunch``) of a 4-iteration loop of
2 kernels.

The frontends' inter-op mode (``--interop`` runs only this part; the full
run ends with it): the DLRM of bench/frontends and a fan-out/fan-in graph
with real work per branch, compiled sequentially and with
``inter_op=True`` (with and without the pass), in-process; see
``bench/async-fusion/interop.py``. Its figures go to
``bench/results/async-fusion-interop.{json,md}``, one section per host
(earlier hosts' sections are kept).

In each round every variant runs once (a fresh process: one warm-up call, then
``calls`` timed calls; the per-call mean is the round's figure), in a fixed
interleaved order. Per variant the median over the rounds is reported, and
``ratio = median(unfused) / median(variant)``. The memory each variant writes
must equal the unfused one's, or the run fails (exit status 2).

Usage::

    .venv/bin/python bench/async-fusion/run.py            # full run
    .venv/bin/python bench/async-fusion/run.py --quick    # smoke run
    .venv/bin/python bench/async-fusion/run.py --interop  # the inter-op mode only
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import shlex
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
LLVM_BIN = Path(os.environ.get("LLVM_BIN", "/usr/lib/llvm-22/bin"))
LLVM_LIB = LLVM_BIN.parent / "lib"


def use_llvm(major: int) -> None:
    """Builds with LLVM ``major``'s tools (``--llvm``)."""
    global LLVM_BIN, LLVM_LIB
    LLVM_BIN = Path(f"/usr/lib/llvm-{major}/bin")
    LLVM_LIB = LLVM_BIN.parent / "lib"
LOWER = [
    "--async-to-async-runtime",
    "--async-runtime-ref-counting",
    "--async-runtime-ref-counting-opt",
    "--convert-scf-to-cf",
    "--convert-async-to-llvm",
    "--convert-vector-to-llvm",
    "--finalize-memref-to-llvm",
    "--convert-arith-to-llvm",
    "--convert-func-to-llvm",
    "--convert-cf-to-llvm",
    "--reconcile-unrealized-casts",
]
WORK_STEPS = 1 << 21


def chain_mlir(n: int) -> str:
    """n dependent tasks: task k adds 1 to m[0] after task k-1."""
    lines = [
        "func.func @graph(%m: memref<512xi64>) {",
        "  %c0 = arith.constant 0 : index",
        "  %one = arith.constant 1 : i64",
        "  %t0 = async.execute {",
        "    %x = memref.load %m[%c0] : memref<512xi64>",
        "    %y = arith.addi %x, %one : i64",
        "    memref.store %y, %m[%c0] : memref<512xi64>",
        "    async.yield",
        "  }",
    ]
    for k in range(1, n):
        lines += [
            f"  %t{k} = async.execute [%t{k - 1}] {{",
            "    %x = memref.load %m[%c0] : memref<512xi64>",
            "    %y = arith.addi %x, %one : i64",
            "    memref.store %y, %m[%c0] : memref<512xi64>",
            "    async.yield",
            "  }",
        ]
    lines += [f"  async.await %t{n - 1} : !async.token", "  return", "}"]
    return "\n".join(lines) + "\n"


def tiny_mlir(n: int) -> str:
    """n independent tasks in a group: task i adds i + 1 to m[i]."""
    return f"""func.func @graph(%m: memref<512xi64>) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = arith.constant {n} : index
  %g = async.create_group %n : !async.group
  scf.for %i = %c0 to %n step %c1 {{
    %t = async.execute {{
      %x = memref.load %m[%i] : memref<512xi64>
      %ii = arith.index_cast %i : index to i64
      %one = arith.constant 1 : i64
      %d = arith.addi %ii, %one : i64
      %y = arith.addi %x, %d : i64
      memref.store %y, %m[%i] : memref<512xi64>
      async.yield
    }}
    %r = async.add_to_group %t, %g : !async.token
  }}
  async.await_all %g
  return
}}
"""


def fanout_mlir(steps: int, heavy_head: bool = False) -> str:
    """A head, two branches with real work, a fan-in task; with
    ``heavy_head`` the head does real work too (a recurrence of ``steps``
    steps), so it stays a task and both branches wait for its token."""

    def branch(k: int, slot: int) -> str:
        return f"""  %t{k} = async.execute [%t0] {{
    %s0 = memref.load %m[%c0] : memref<512xi64>
    %s = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %s0) -> i64 {{
      %ii = arith.index_cast %i : index to i64
      %a = arith.muli %acc, %mul : i64
      %b = arith.addi %a, %ii : i64
      %c = arith.xori %b, %k{k} : i64
      scf.yield %c : i64
    }}
    memref.store %s, %m[%c{slot}] : memref<512xi64>
    async.yield
  }}
"""

    if heavy_head:
        head = """  %t0 = async.execute {
    %s0 = memref.load %m[%c0] : memref<512xi64>
    %s = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %s0) -> i64 {
      %ii = arith.index_cast %i : index to i64
      %a = arith.muli %acc, %mul : i64
      %b = arith.addi %a, %ii : i64
      scf.yield %b : i64
    }
    memref.store %s, %m[%c0] : memref<512xi64>
    async.yield
  }"""
    else:
        head = """  %t0 = async.execute {
    %x = memref.load %m[%c0] : memref<512xi64>
    %y = arith.addi %x, %one : i64
    memref.store %y, %m[%c0] : memref<512xi64>
    async.yield
  }"""
    return f"""func.func @graph(%m: memref<512xi64>) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %n = arith.constant {steps} : index
  %mul = arith.constant 6364136223846793005 : i64
  %k1 = arith.constant 1442695040888963407 : i64
  %k2 = arith.constant 7 : i64
  %one = arith.constant 1 : i64
{head}
{branch(1, 1)}{branch(2, 2)}  %t3 = async.execute [%t1, %t2] {{
    %x = memref.load %m[%c1] : memref<512xi64>
    %y = memref.load %m[%c2] : memref<512xi64>
    %z = arith.addi %x, %y : i64
    memref.store %z, %m[%c3] : memref<512xi64>
    async.yield
  }}
  async.await %t3 : !async.token
  return
}}
"""


SEQUENTIAL_FANOUT_C = r"""
#include <stdint.h>
void graph(int64_t *a, int64_t *m, int64_t off, int64_t size, int64_t stride) {
  (void)a; (void)off; (void)size; (void)stride;
  m[0] += 1;
  const int64_t k[3] = {0, 1442695040888963407LL, 7};
  for (int b = 1; b <= 2; ++b) {
    uint64_t acc = (uint64_t)m[0];
    for (int64_t i = 0; i < STEPS; ++i)
      acc = ((acc * 6364136223846793005ULL) + (uint64_t)i) ^ (uint64_t)k[b];
    m[b] = (int64_t)acc;
  }
  m[3] = (int64_t)((uint64_t)m[1] + (uint64_t)m[2]);
}
"""

DRIVER_C = r"""
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
void graph(int64_t *, int64_t *, int64_t, int64_t, int64_t);
static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}
int main(int argc, char **argv) {
  int calls = atoi(argv[1]);
  static int64_t m[512];
  graph(m, m, 0, 512, 1); /* warm-up: thread pool started, code paged in */
  memset(m, 0, sizeof m);
  double t0 = now();
  for (int i = 0; i < calls; ++i)
    graph(m, m, 0, 512, 1);
  double t1 = now();
  uint64_t h = 1469598103934665603ULL;
  for (int i = 0; i < 512; ++i)
    h = (h ^ (uint64_t)m[i]) * 1099511628211ULL;
  printf("%.9f %016llx\n", (t1 - t0) / calls, (unsigned long long)h);
  return 0;
}
"""


def run(cmd: list[str], **kw: Any) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw)


def runtime_lib() -> Path:
    """The MLIR async runtime of the LLVM in use, else of another installed
    release (Debian's libmlir-NN-dev packages conflict with each other; the
    runtime's C entry points are the same)."""
    libs = [LLVM_LIB] + sorted(Path("/usr/lib").glob("llvm-*/lib"), reverse=True)
    for lib in libs:
        if lib.is_dir():
            for name in sorted(os.listdir(lib)):
                if name.startswith("libmlir_async_runtime.so"):
                    return lib / name
    sys.exit("libmlir_async_runtime.so not found: apt-get install libmlir-22-dev")


def build(work: Path, name: str, mlir: str, plugin: Path, steps: int) -> dict[str, Path]:
    """Lowers one graph and builds its variants; returns variant -> binary."""
    src = work / f"{name}.mlir"
    src.write_text(mlir)
    ll = work / f"{name}.ll"
    lowered = run([str(LLVM_BIN / "mlir-opt"), *LOWER, str(src)]).stdout
    run([str(LLVM_BIN / "mlir-translate"), "--mlir-to-llvmir", "-o", str(ll)], input=lowered)
    driver = work / "driver.c"
    driver.write_text(DRIVER_C)
    rt = runtime_lib()
    link = [str(rt), f"-Wl,-rpath,{rt.parent}"]
    clang = str(LLVM_BIN / "clang")
    bins: dict[str, Path] = {}
    for variant, load in (("unfused", []), ("fused", [f"-load-pass-plugin={plugin}"])):
        bc = work / f"{name}.{variant}.bc"
        remarks = work / f"{name}.{variant}.remarks"
        res = run(
            [str(LLVM_BIN / "opt"), *load, "-passes=default<O2>", str(ll), "-o", str(bc),
             "-pass-remarks=accel-async-fusion", "-pass-remarks-missed=accel-async-fusion"]
        )
        remarks.write_text(res.stderr)
        exe = work / f"{name}.{variant}"
        run([clang, "-O2", "-w", str(driver), str(bc), *link, "-o", str(exe)])
        bins[variant] = exe
    if name == "fanout":
        c = work / "fanout-seq.c"
        c.write_text(SEQUENTIAL_FANOUT_C)
        exe = work / f"{name}.sequential"
        run([clang, "-O2", f"-DSTEPS={steps}", str(driver), str(c), "-o", str(exe)])
        bins["sequential"] = exe
    return bins


def measure(bins: dict[str, Path], calls: int, rounds: int) -> dict[str, Any]:
    times: dict[str, list[float]] = {v: [] for v in bins}
    digests: dict[str, set[str]] = {v: set() for v in bins}
    for _ in range(rounds):
        for v, exe in bins.items():
            out = run([str(exe), str(calls)]).stdout.split()
            times[v].append(float(out[0]))
            digests[v].add(out[1])
    base = statistics.median(times["unfused"])
    result: dict[str, Any] = {}
    for v in bins:
        med = statistics.median(times[v])
        result[v] = {
            "median_us": med * 1e6,
            "rounds_us": [t * 1e6 for t in times[v]],
            "ratio_vs_unfused": base / med,
            "output_digest": sorted(digests[v]),
        }
    ref = digests["unfused"]
    for v in bins:
        if digests[v] != ref or len(ref) != 1:
            print(f"output mismatch: {v} {digests[v]} vs unfused {ref}", file=sys.stderr)
            sys.exit(2)
    return result


def gpu_launch_counts(work: Path, plugin: Path) -> dict[str, dict[str, int]]:
    """API calls of the `solve` loop (4 iterations, then 3 in a second call
    with the same arguments), before and after the pass."""
    inputs = REPO / "test/lit/accel-async-fusion/Inputs"
    clang = str(LLVM_BIN / "clang")
    ll = work / "launch-loops.ll"
    run([clang, "-w", "-x", "cuda", "--cuda-host-only", "-nocudainc", "-nocudalib", "-O2",
         "-S", "-emit-llvm", str(inputs / "launch-loops.cu"), "-o", str(ll)])
    after = work / "launch-loops.after.ll"
    run([str(LLVM_BIN / "opt"), f"-load-pass-plugin={plugin}", "-passes=accel-async-fusion",
         "-S", str(ll), "-o", str(after)])
    counts: dict[str, dict[str, int]] = {}
    for variant, src in (("unfused", ll), ("fused", after)):
        exe = work / f"launch-loops.{variant}"
        run([clang, "-w", "-O1", str(src), str(inputs / "cuda-recorder.c"),
             str(inputs / "launch-loops-driver.c"), "-rdynamic", "-ldl", "-lm", "-o", str(exe)])
        out = run([str(exe)]).stdout
        # The driver's first call (4 iterations), then the same call again
        # (3 iterations): the cached graph is replayed without a capture.
        for call, section in (("first", "== solve 4"), ("again", "== solve 3 same")):
            log = out.split(section)[1].split("\n== ")[0]
            counts[f"{variant}, {call} call"] = {
                "cudaLaunchKernel": log.count("api cudaLaunchKernel"),
                "cudaGraphLaunch": log.count("api cudaGraphLaunch"),
                "kernels_run": log.count("\nrun "),
            }
    runs = {k: c["kernels_run"] for k, c in counts.items()}
    if runs["unfused, first call"] != runs["fused, first call"] or \
            runs["unfused, again call"] != runs["fused, again call"]:
        print(f"kernel runs differ: {counts}", file=sys.stderr)
        sys.exit(2)
    return counts


def machine_info(plugin: Path) -> dict[str, Any]:
    lscpu = run(["lscpu"]).stdout
    info: dict[str, Any] = {}
    for line in lscpu.splitlines():
        key, _, val = line.partition(":")
        if key.strip() in ("Model name", "Vendor ID", "CPU family", "Model", "CPU(s)"):
            info[key.strip()] = val.strip()
    info["kernel"] = platform.release()
    info["load_average_at_start"] = list(os.getloadavg())
    info["llvm"] = run([str(LLVM_BIN / "clang"), "--version"]).stdout.splitlines()[0]
    info["runtime"] = str(runtime_lib())
    info["plugin"] = str(plugin)
    return info


def host_key(report: dict[str, Any]) -> str:
    """A results section's title: the CPU as lscpu names it, and the LLVM."""
    m = report["machine"]
    return (f"{m.get('Model name')} ({m.get('Vendor ID')}, family {m.get('CPU family')}, "
            f"model {m.get('Model')}), {m['llvm']}"
            + (" QUICK" if report.get("quick") else ""))


def render_section(report: dict[str, Any]) -> str:
    m = report["machine"]
    la = m["load_average_at_start"][0]
    out = [
        f"## {host_key(report)}",
        "",
        f"Command: `{report['command']}`  ",
        f"Date: {report['date']}; {m.get('CPU(s)')} CPUs; load average {la:.1f} at the"
        " start (1-minute)  ",
        f"Runtime: `{m['runtime']}`; {report['rounds']} interleaved rounds, medians"
        + (" · QUICK (smoke sizes, timings meaningless)" if report["quick"] else ""),
        "",
        "| graph | variant | us per graph | vs unfused | what the pass did |",
        "|---|---|---:|---:|---|",
    ]
    for g in report["graphs"]:
        for v, r in g["variants"].items():
            did = g["remarks"] if v == "fused" else ""
            out.append(
                f"| {g['name']} | {v} | {r['median_us']:.1f} | "
                f"{r['ratio_vs_unfused']:.2f}x | {did} |"
            )
    gl = report.get("gpu_launch_loop")
    if gl:
        out += [
            "",
            "GPU launch loop (CUDA host code: a call of 4 iterations of 2 kernels, then the"
            " same call for 3 iterations; recording runtime, no GPU on this machine, so no"
            " times):",
            "",
            "| variant | cudaLaunchKernel | cudaGraphLaunch | kernels run |",
            "|---|---:|---:|---:|",
        ]
        for v, c in gl.items():
            out.append(f"| {v} | {c['cudaLaunchKernel']} | {c['cudaGraphLaunch']} "
                       f"| {c['kernels_run']} |")
    return "\n".join(out) + "\n"


NOTES = """Outputs (the memory each graph writes) are identical across variants, or
the run fails.

- chain500: the fused task runs the 500 bodies one after the other in one
  coroutine, with one token; the unfused graph pays a thread-pool hand-off and
  a token per task.
- tiny500: each task runs inline in the launching loop; its token is still
  created, emplaced, added to the group and dropped (the group and its
  await_all are unchanged), which is most of what is left.
- fanout: a tiny head, two branches with real work, a fan-in. The pass runs
  the head inline, so the branches find its token ready and run in parallel;
  unfused, both branches usually wait for the head's token and MLIR's runtime
  resumes them one after the other on the thread that emplaces it.
  `sequential` is the same work in plain C, one branch after the other.
- fanout-wait: the same with a head that does real work (it stays a task):
  the pass gives each branch a second hop to the thread pool after its wait
  (pool-resume), so they run in parallel instead of in turn.
- On a loaded machine (other jobs on the 2 cores) no variant can show a gain
  from parallelism: there is no idle core to run the second branch.
"""


def render(sections: dict[str, dict[str, Any]]) -> str:
    out = ["# accel-async-fusion benchmark", "",
           "Task graphs through the real MLIR async runtime, unfused (`default<O2>`) and"
           " with the plugin (the pass at PipelineStart); one section per host and LLVM"
           " release, earlier ones kept. Ratios are measured in the same run.", ""]
    for rep in sections.values():
        if "graphs" in rep and "machine" in rep and "command" in rep:
            out.append(render_section(rep))
    out.append(NOTES)
    return "\n".join(out)


def summarize_remarks(path: Path) -> str:
    lines = [ln for ln in path.read_text().splitlines() if "remark:" in ln]
    fused = [ln for ln in lines if "fused a chain" in ln]
    inl = [ln for ln in lines if "inline (@" in ln or "task(s) inline" in ln]
    kept = [ln for ln in lines if "stays asynchronous" in ln]
    pool = [ln for ln in lines if "resumes on the thread pool" in ln]
    parts = []
    if fused:
        tasks = fused[0].split("fused a chain of ")[1].split(" ")[0]
        parts.append(f"{len(fused)} chain(s) fused ({tasks} tasks)")
    if inl:
        parts.append(f"{len(inl)} launch site(s) run inline")
    if kept:
        parts.append(f"{len(kept)} task(s) kept parallel")
    if pool:
        parts.append(f"{len(pool)} task(s) resumed on the pool after a shared wait")
    return "; ".join(parts) or "nothing"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true", help="smoke run (tiny, 2 rounds)")
    p.add_argument("--rounds", type=int, help="rounds (default 7, quick 2)")
    p.add_argument("--llvm", type=int, default=22,
                   help="LLVM release whose tools build the graphs (default 22)")
    p.add_argument("--plugin", type=Path,
                   help="the plugin (default: build/llvm-N/lib/LLVMAccel.so)")
    p.add_argument("--out", type=Path, help="output directory")
    p.add_argument("--interop", action="store_true",
                   help="only the frontends' inter-op mode (DLRM, fan-out graph)")
    a = p.parse_args(argv)
    use_llvm(a.llvm)
    a.plugin = a.plugin or REPO / f"build/llvm-{a.llvm}/lib/LLVMAccel.so"
    rounds = a.rounds or (2 if a.quick else 7)
    out_dir = a.out or (REPO / "bench/work/results-quick" if a.quick else REPO / "bench/results")
    command = " ".join(shlex.quote(x) for x in [
        ".venv/bin/python", "bench/async-fusion/run.py", *(argv or sys.argv[1:])])
    if a.interop:
        return interop_section(a.quick, rounds, out_dir, command)
    work = REPO / "bench/work/async-fusion"
    work.mkdir(parents=True, exist_ok=True)
    steps = 1 << 12 if a.quick else WORK_STEPS
    graphs = [
        ("chain500", chain_mlir(500), 200),
        ("tiny500", tiny_mlir(500), 200),
        ("fanout", fanout_mlir(steps), 20),
        ("fanout-wait", fanout_mlir(steps, heavy_head=True), 20),
    ]
    report: dict[str, Any] = {
        "command": command,
        "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "quick": a.quick,
        "rounds": rounds,
        "machine": machine_info(a.plugin),
        "graphs": [],
    }
    for name, mlir, calls in graphs:
        bins = build(work, name, mlir, a.plugin, steps)
        res = measure(bins, 10 if a.quick else calls, rounds)
        report["graphs"].append(
            {"name": name, "calls_per_round": calls, "variants": res,
             "remarks": summarize_remarks(work / f"{name}.fused.remarks")}
        )
        for v, r in res.items():
            print(f"{name:9s} {v:10s} {r['median_us']:10.1f} us  {r['ratio_vs_unfused']:.2f}x")
    report["gpu_launch_loop"] = gpu_launch_counts(work, a.plugin)
    print(f"gpu launch loop: {report['gpu_launch_loop']}")
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / "async-fusion.json"
    sections = json.loads(path.read_text()) if path.exists() else {}
    if "graphs" in sections:  # one report, as the file held before sections
        sections = {host_key(sections): sections}
    sections[host_key(report)] = report
    path.write_text(json.dumps(sections, indent=2) + "\n")
    (out_dir / "async-fusion.md").write_text(render(sections))
    print(f"wrote {out_dir}/async-fusion.{{json,md}}")
    from llvmaccel.pipeline import llvm_version

    if int(llvm_version().split(".")[0]) != a.llvm:
        print(f"inter-op mode not measured: the llvmaccel package is built on LLVM "
              f"{llvm_version()}, not {a.llvm}")
        return 0
    return interop_section(a.quick, rounds, out_dir, command)


def interop_section(quick: bool, rounds: int, out_dir: Path, command: str) -> int:
    """Runs the inter-op benchmark and records it as this host's section."""
    sys.path.insert(0, str(HERE))
    from interop import render_interop, run_interop

    rounds = max(rounds, 2 if quick else 9)
    section = run_interop(quick, rounds)
    info = machine_info(REPO / "build/llvm-22/lib/LLVMAccel.so")
    from llvmaccel.pipeline import llvm_version

    host = f"{info.get('Model name')} ({info.get('Vendor ID')}, family " \
        f"{info.get('CPU family')}, model {info.get('Model')}), LLVM {llvm_version()}"
    date = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    path = out_dir / "async-fusion-interop.json"
    hosts = json.loads(path.read_text()) if path.exists() else {}
    hosts[host + (" QUICK" if quick else "")] = {"command": command, "date": date,
                                                 "rounds": rounds, **section}
    out_dir.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(hosts, indent=2) + "\n")
    md = ["# The frontends' inter-op mode against the sequential kernel", "",
          "`inter_op=True` (llvmaccel.interop): the graph's independent branches run as"
          " tasks of MLIR's async runtime; `inter-op-nopass` is the same without"
          " accel-async-fusion. Interleaved rounds, medians; outputs compared with the"
          " sequential kernel's (each workload's line says how). The load average says"
          " how busy the cores were (2 cores: above 0.5, the second one was not idle).", ""]
    for h, sec in hosts.items():
        md.append(render_interop(sec, h, sec["date"], sec["command"]))
    (out_dir / "async-fusion-interop.md").write_text("\n".join(md))
    for w in section.get("workloads", []):
        for v, r in w["variants"].items():
            print(f"{w['name']:7s} {v:16s} {r['median_ms']:9.3f} ms  "
                  f"{r['ratio_vs_sequential']:.2f}x")
    print(f"wrote {out_dir}/async-fusion-interop.{{json,md}}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
