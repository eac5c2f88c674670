"""``llvmaccel fuzz``: generated kernels and llvm-stress modules through a pass.

Every generated kernel (:mod:`llvmaccel.kernelgen`) goes through the pass with
the verifier after every pass and through :func:`llvmaccel.check` on its
inputs (a kernel the pass leaves as it was is verified, not executed: the
same IR runs the same way, and running it twice would only test whether the
original is deterministic); every ``llvm-stress`` module goes through the pass with the verifier
and is compiled before and after (llvm-stress code branches on poison and
loops forever, so it is not executed). Each failing case is kept under
``out_dir`` as the input module, a reduced module (llvm-reduce) and a text file
with the finding and the command that reproduces it.
"""

from __future__ import annotations

import os
import random
import subprocess
import time
from collections import Counter
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field

from . import kernelgen
from .check import CheckResult, CheckWorkers, Finding, make_job, reproduce_command
from .pipeline import passes

__all__ = ["FuzzReport", "fuzz", "shape_weights"]


@dataclass
class FuzzReport:
    """Counts of a fuzz run (see :meth:`table`)."""

    pass_name: str
    pipeline: str
    seed: int
    #: The seed after the last kernel generated (a next run starts here).
    next_seed: int = 0
    seconds: float = 0.0
    kernels: int = 0
    kernels_transformed: int = 0
    #: Generated kernels the pipeline left as they were: verified by the
    #: pipeline (``-verify-each``), not executed (the same IR runs the same way).
    kernels_unchanged: int = 0
    stress_modules: int = 0
    stress_transformed: int = 0
    cases: int = 0
    findings: Counter = field(default_factory=Counter)
    by_shape: dict[str, Counter] = field(default_factory=dict)
    saved: list[str] = field(default_factory=list)
    generator_errors: int = 0
    #: Seconds per stage: ``generate`` (kernelgen) and ``stress``
    #: (llvm-stress), made in a thread while the workers check the batch
    #: before, ``wait for generation`` (the checking waiting for them),
    #: ``check`` (the checking workers, wall time), and the workers' own
    #: stages as ``worker:<stage>`` for kernels and ``worker-stress:<stage>``
    #: for llvm-stress modules (see :attr:`llvmaccel.check.CheckResult.times`;
    #: ``...:children`` is the number of children forked).
    times: dict[str, float] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """True when nothing was found (and every generated program was valid)."""
        return not sum(self.findings.values()) and not self.generator_errors

    def table(self) -> str:
        """The counts as text."""
        lines = [
            f"llvmaccel fuzz --pass {self.pass_name} (pipeline {self.pipeline!r}, seed "
            f"{self.seed}, {self.seconds:.0f} s)",
            f"  generated kernels: {self.kernels} checked, {self.kernels_transformed} "
            f"transformed ({_pct(self.kernels_transformed, self.kernels)}), "
            f"{self.kernels_unchanged} left unchanged (not executed), "
            f"{self.cases} inputs executed",
            f"  llvm-stress modules: {self.stress_modules} verified and compiled, "
            f"{self.stress_transformed} transformed",
            "  findings: " + (", ".join(f"{k} {v}" for k, v in sorted(self.findings.items()))
                              or "none (0 mismatches, 0 crashes)"),
            "  per shape (checked/transformed): " + ", ".join(
                f"{s} {c['checked']}/{c['transformed']}" for s, c in sorted(self.by_shape.items())),
        ]
        if self.generator_errors:
            lines.append(f"  generator errors (programs the MLIR tools or clang rejected): "
                         f"{self.generator_errors}")
        lines += [f"  kept: {p}" for p in self.saved]
        return "\n".join(lines)

    def stage_table(self) -> str:
        """Where the time went, per stage (seconds and share of the run)."""
        total = self.seconds or sum(v for k, v in self.times.items() if ":" not in k) or 1.0
        rows = [f"  {k:<24} {v:9.2f} s  {100.0 * v / total:5.1f}%"
                for k, v in sorted(self.times.items(), key=lambda kv: -kv[1])
                if not k.endswith(":children")]
        counts = [f"  {k:<24} {v:9.0f}" for k, v in sorted(self.times.items())
                  if k.endswith(":children")]
        return "\n".join([f"  stages ({self.seconds:.1f} s in all):", *rows,
                          "  forked children:", *counts])

    def _add_time(self, stage: str, seconds: float) -> None:
        self.times[stage] = self.times.get(stage, 0.0) + seconds


def _pct(a: int, b: int) -> str:
    return f"{100.0 * a / b:.0f}%" if b else "-"


def _stress_module(tool: str, seed: int) -> str | None:
    out = subprocess.run([tool, f"-seed={seed}", f"-size={50 + seed % 200}"],
                         capture_output=True, text=True, timeout=60)
    return out.stdout if out.returncode == 0 else None


@dataclass
class _Batch:
    """Kernels and llvm-stress modules made for one round of checking."""

    seed: int
    size: int
    kernels: list[kernelgen.GeneratedKernel]
    #: (seed, shape, error) of programs the MLIR tools or clang rejected.
    errors: list[tuple[int, str, Exception]]
    stress: list[tuple[int, str]]
    generate_seconds: float
    stress_seconds: float


def _make_batch(seed: int, requests: list[tuple[int, str]], n_stress: int,
                stress_tool: str) -> _Batch:
    t0 = time.perf_counter()
    made = kernelgen.generate_many(requests)
    t1 = time.perf_counter()
    stress = [(s, _stress_module(stress_tool, s)) for s in range(seed, seed + n_stress)]
    return _Batch(seed, len(requests),
                  [k for k in made if isinstance(k, kernelgen.GeneratedKernel)],
                  [(s, shape, k) for (s, shape), k in zip(requests, made, strict=True)
                   if not isinstance(k, kernelgen.GeneratedKernel)],
                  [(s, ir) for s, ir in stress if ir], t1 - t0, time.perf_counter() - t1)


def fuzz(
    pass_name: str,
    *,
    seconds: float | None = None,
    kernels: int | None = None,
    stress: int | None = None,
    seed: int = 0,
    cases: int = 16,
    batch: int = 24,
    out_dir: str = "fuzz-findings",
    reduce_findings: bool = True,
    reduce_seconds: float | None = 300.0,
    params: str = "",
    shapes: list[str] | None = None,
    progress: bool = False,
    jobs: int = 1,
    group: int | None = None,
    prior: dict[str, Counter] | None = None,
) -> FuzzReport:
    """Runs generated kernels and llvm-stress modules through ``pass_name``.

    Args:
        pass_name: An llvmaccel pass (any name in :func:`llvmaccel.passes`).
        seconds: Stop after this long (default: when ``kernels`` are done).
        kernels: Generated kernels to check (default: unbounded with ``seconds``).
        stress: llvm-stress modules per batch of kernels (default: a quarter).
        seed: First kernel seed; kernel i has seed ``seed + i``.
        cases: Inputs per kernel.
        batch: Kernels generated at a time (per worker process).
        out_dir: Where failing cases are kept.
        reduce_findings: Reduce each failing case with llvm-reduce.
        reduce_seconds: Keep a case unreduced when llvm-reduce takes longer
            (None: no bound); a bounded run stays bounded.
        params: Pass parameters, e.g. ``"distance=4"`` (the pipeline becomes
            ``pass<params>``).
        shapes: Generate only these shapes (default: all); the first batch of
            a run without counts (its own or ``prior``'s) is one kernel of
            each, the others are drawn by :func:`shape_weights`.
        progress: Print a line per batch.
        jobs: Checking worker processes (one per core to use).
        group: Loop kernels whose cases share a forked child (see
            :class:`llvmaccel.check.CheckWorkers`).
        prior: Counts per shape from earlier runs of this pass (``checked``,
            ``transformed``, ``seconds``), where :func:`shape_weights` starts.

    Raises:
        ValueError: the pass is not in the plugin's catalog, or no bound is given.
    """
    known = [p.name for p in passes()]
    if pass_name not in known:
        raise ValueError(f"unknown llvmaccel pass {pass_name!r} (known: {', '.join(known)})")
    if seconds is None and kernels is None:
        raise ValueError("give seconds or kernels")
    if jobs < 1:
        raise ValueError(f"jobs must be at least 1, got {jobs}")
    from .reduce import find_llvm_tool
    pipeline = f"{pass_name}<{params}>" if params else pass_name
    report = FuzzReport(pass_name, pipeline, seed, next_seed=seed)
    start = time.monotonic()
    stress_tool = find_llvm_tool("llvm-stress")
    # Shapes with variants are weighted variant by variant.
    names = kernelgen.units(shapes)
    state = {"next_seed": seed, "planned": 0, "probed": False}

    def plan() -> Future[_Batch] | None:
        """The next batch, made in the background while the workers check
        the one before (its shapes weighted by the kernels checked so far)."""
        n = batch * jobs if kernels is None else min(batch * jobs,
                                                     kernels - state["planned"])
        if n <= 0:
            return None
        # Knowing nothing yet (no kernel checked, no prior), the first batch
        # is one kernel of each shape in turn: what each costs and whether
        # the pass acts on it, for the weights of the next.
        first = not state["probed"] and not report.by_shape and not any(
            (prior or {}).get(name, Counter())["checked"] for name in names)
        state["probed"] = True
        if first:
            n = min(n, len(names))
        s0 = state["next_seed"]
        weights = shape_weights(names, report.by_shape, prior)
        requests = [(s, names[(s - s0) % len(names)] if first else _shape(names, s, weights))
                    for s in range(s0, s0 + n)]
        n_stress = stress if stress is not None else max(1, n // 4)
        state["next_seed"] += n
        state["planned"] += n
        return maker.submit(_make_batch, s0, requests, n_stress, stress_tool)

    with CheckWorkers(jobs, group=group) as workers, ThreadPoolExecutor(1) as maker:
        pending = plan()
        while pending is not None:
            t0 = time.perf_counter()
            b = pending.result()
            report._add_time("wait for generation", time.perf_counter() - t0)
            elapsed = time.monotonic() - start
            if seconds is not None and elapsed >= seconds:
                break
            pending = plan()
            report._add_time("generate", b.generate_seconds)
            report._add_time("stress", b.stress_seconds)
            for s, shape, err in b.errors:
                # mlir-opt or clang rejected a generated program: a bug of
                # the generator, counted and kept, never a finding of the pass.
                report.generator_errors += 1
                _keep_generator_error(report, out_dir,
                                      f"{pass_name}-{shape.replace(':', '-')}-{s}", str(err))
            gens = b.kernels
            # target="host": the pass sees this machine's facts (TTI), as code
            # the JIT runs here would.
            batch_jobs = [make_job(k.ir, k.function, pipeline, args=k.args, cases=cases,
                                   seed=k.seed, timeout=1.0,
                                   seconds=(seconds - elapsed) if seconds else None,
                                   target="host", compile_pipeline=k.compile_pipeline,
                                   libraries=k.libraries, execute_unchanged=False)
                          for k in gens]
            batch_jobs += [make_job(ir, _stress_function(ir), pipeline, execute=False, seed=s,
                                    target="host") for s, ir in b.stress]
            t0 = time.perf_counter()
            results = workers.run(batch_jobs, raise_errors=False)
            report._add_time("check", time.perf_counter() - t0)
            for i, r in enumerate(results):
                for k, v in r.times.items():
                    report._add_time(f"{'worker' if i < len(gens) else 'worker-stress'}:{k}", v)
            for k, r in zip(gens, results[: len(gens)], strict=True):
                cost = k.seconds + sum(v for key, v in r.times.items()
                                       if key not in ("worker-start", "children"))
                _count_kernel(report, k, r, cost)
                if r.findings:
                    stem = f"{pass_name}-{k.shape.replace(':', '-')}-{k.seed}"
                    _keep(report, out_dir, stem, k.ir, k.function,
                          pipeline, r.findings[0], {a: s.to_text() for a, s in k.args.items()},
                          reduce_findings, k.libraries, reduce_seconds)
            for (s, ir), r in zip(b.stress, results[len(gens):], strict=True):
                # An llvm-stress module the JIT cannot compile even before the
                # pass ("error") says nothing about the pass: not counted.
                found = [f for f in r.findings if f.kind != "error"]
                report.stress_modules += len(found) == len(r.findings)
                report.stress_transformed += bool(r.fired.get(pass_name))
                for f in found:
                    report.findings[f.kind] += 1
                if found:
                    _keep(report, out_dir, f"{pass_name}-stress-{s}", ir, _stress_function(ir),
                          pipeline, found[0], {}, False)
            report.next_seed = b.seed + b.size
            if progress:
                print(f"  ... {report.kernels} kernels, {report.stress_modules} llvm-stress "
                      f"modules, {sum(report.findings.values())} findings, "
                      f"{time.monotonic() - start:.0f} s", flush=True)
        if pending is not None:
            pending.cancel()
    report.seconds = time.monotonic() - start
    return report


#: Share of the kernels drawn to explore: spread evenly over the shapes, less
#: for a shape that costs more than the median (so that a few costly shapes do
#: not take most of the time); the rest goes to the shapes by the transformed
#: kernels a second they give.
EXPLORE = 0.3
#: At most this many kernels' worth of a prior's counts per shape (a pass may
#: have changed since: the run's own counts soon outweigh it).
PRIOR_KERNELS = 50


def shape_weights(names: list[str], seen: dict[str, Counter],
                  prior: dict[str, Counter] | None = None) -> list[float]:
    """Weights of drawing each shape next, from what the pass did so far.

    Per shape, ``p`` is the share of its kernels the pass transformed and
    ``cost`` the seconds a kernel took (the run's counts plus ``prior``'s,
    scaled to at most :data:`PRIOR_KERNELS` kernels; ``p`` is 0.5 and the cost
    the median for a shape not seen yet). A shape's weight is ``EXPLORE / N``
    (times ``median cost / cost`` when it costs more than the median) plus
    the rest in proportion to ``p / cost``, the transformed kernels a second
    it gives; evenly by time when the pass transformed nothing yet. So every
    shape keeps being drawn, and a run soon spends most of its kernels on the
    shapes the pass acts on, the cheap ones first.
    """
    stats = []
    for name in names:
        c = seen.get(name, Counter())
        checked, transformed, secs = c["checked"], c["transformed"], c["seconds"]
        if prior and name in prior and prior[name]["checked"]:
            pc = prior[name]
            scale = min(1.0, PRIOR_KERNELS / pc["checked"])
            checked += pc["checked"] * scale
            transformed += pc["transformed"] * scale
            secs += pc["seconds"] * scale
        stats.append((checked, transformed, secs))
    costs = sorted(s / c for c, _, s in stats if c and s > 0)
    median = costs[len(costs) // 2] if costs else 1.0
    cost = [s / c if c and s > 0 else median for c, _, s in stats]
    p = [t / c if c else 0.5 for c, t, _ in stats]
    floor = [EXPLORE / len(names) * min(1.0, median / k) for k in cost]
    gain = [pi / k for pi, k in zip(p, cost, strict=True)]
    if not sum(gain):
        gain = [1.0 / k for k in cost]
    rest = 1.0 - sum(floor)
    total = sum(gain)
    return [f + rest * g / total for f, g in zip(floor, gain, strict=True)]


def _shape(names: list[str], seed: int, weights: list[float]) -> str:
    """The shape of kernel ``seed``, drawn with ``weights``."""
    return random.Random(f"shape:{seed}").choices(names, weights)[0]


def _stress_function(ir: str) -> str:
    from .check import defined_functions
    return defined_functions(ir)[0]


def _count_kernel(report: FuzzReport, k: kernelgen.GeneratedKernel, r: CheckResult,
                  cost: float) -> None:
    report.kernels += 1
    fired = bool(r.fired.get(report.pass_name))
    report.kernels_transformed += fired
    report.kernels_unchanged += not r.changed and not r.findings
    report.cases += r.cases
    shape = report.by_shape.setdefault(k.shape, Counter())
    shape["checked"] += 1
    shape["transformed"] += fired
    shape["seconds"] += cost
    for f in r.findings:
        report.findings[f.kind] += 1


def _keep_generator_error(report: FuzzReport, out_dir: str, stem: str, detail: str) -> None:
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, stem + ".generator-error.txt")
    with open(path, "w") as f:
        f.write(detail + "\n")
    report.saved.append(path)


def _keep(report: FuzzReport, out_dir: str, stem: str, ir: str, function: str, pipeline: str,
          finding: Finding, args: dict[str, str], reduce_it: bool,
          libraries: list[str] | None = None, reduce_seconds: float | None = None) -> None:
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, stem + ".ll")
    with open(path, "w") as f:
        f.write(ir)
    arg_texts = [f"{a}={t}" for a, t in args.items()]
    lines = [str(finding), "", "reproduce:",
             "  " + reproduce_command(path, function, pipeline=pipeline, seed=finding.seed or 0,
                                      case=finding.case, args=arg_texts, target="host",
                                      libraries=libraries)]
    if reduce_it and finding.stage in ("execute", "pipeline"):
        from .reduce import reduce
        try:
            red = reduce(path, function, finding.kind, pipeline=pipeline, args=args,
                         seed=finding.seed or 0, case=finding.case, target="host",
                         libraries=libraries, max_seconds=reduce_seconds)
            lines += ["", f"reduced ({red.lines[0]} -> {red.lines[1]} lines, "
                      f"{red.seconds:.0f} s): {red.path}", "  " + red.command]
        except (RuntimeError, FileNotFoundError) as err:
            lines += ["", f"not reduced: {err}"]
    with open(os.path.join(out_dir, stem + ".txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
    report.saved.append(path)
