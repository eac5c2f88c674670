"""Differential testing: run a function before and after a transformation and compare.

>>> result = llvmaccel.check(module, "gather", "accel-prefetch", cases=200)
>>> result.ok, result.findings

The transformation is a pass pipeline (applied in the checking process, with
the verifier after every pass), a second module (the "after" IR, made
anywhere), or a shell command that reads IR on stdin and writes IR on stdout.
Each case's inputs come from :mod:`llvmaccel.inputs` (edge-heavy scalars,
buffers before guard pages, NaN/inf/-0.0, out-of-range indices where a value
feeds an index); both versions run in forked children of a separate worker
process, so a fault, crash or hang is reported and never kills the caller.
Return values and every buffer are compared bit for bit (except that any NaN
equals any NaN: LangRef leaves a computed NaN's sign and payload
unspecified), or within ``ulps`` units in the last place when the function
uses fast-math flags.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field

from .errors import LLVMAccelError, PipelineError
from .inputs import ArgSpec
from .ir import Module

__all__ = ["CheckResult", "Finding", "check", "make_job", "run_jobs", "FINDING_KINDS"]

#: Kinds of finding, from the least to the most severe stage.
FINDING_KINDS = ("mismatch", "fault", "crash", "timeout", "verify", "codegen", "signature",
                 "error")


@dataclass
class Finding:
    """A difference between before and after, with what caused it.

    Attributes:
        kind: One of :data:`FINDING_KINDS` (``mismatch``: different results;
            ``fault``: the result touched unmapped memory where the original did
            not; ``crash``/``timeout``: the result (or, at stage ``pipeline``,
            the pass) crashed or hung; ``verify``: the pipeline produced invalid
            IR; ``codegen``: the result does not compile; ``signature``: the
            function's type changed).
        stage: ``pipeline``, ``transform``, ``compile`` or ``execute``.
        detail: What differed.
        case: The case number (execute stage), reproduced with ``seed``.
        seed: The seed of the case stream.
        inputs: The case's inputs as text.
    """

    kind: str
    stage: str
    detail: str
    case: int | None = None
    seed: int | None = None
    inputs: str = ""

    def __str__(self) -> str:
        where = f" (seed {self.seed}, case {self.case})" if self.case is not None else ""
        text = f"{self.kind} at {self.stage}{where}: {self.detail}"
        return text + ("\ninputs:\n  " + self.inputs.replace("\n", "\n  ") if self.inputs else "")


@dataclass
class CheckResult:
    """What :func:`check` found.

    Attributes:
        function: The function checked.
        findings: Every finding (empty when before and after agree).
        cases: Cases executed.
        agreed: Cases where both ran to completion with equal results.
        undefined: Cases where the original itself faulted, crashed or hung
            (not compared).
        changed: The after module differs from the before module.
        fired: Passed remarks per pass (pipeline mode).
        statistics: Pass statistics (pipeline mode).
        after_ir: The after module's text.
        layout: How the inputs were made, one phrase per parameter.
        seconds: Wall time.
        times: Seconds the checking worker spent per stage (``parse``,
            ``pipeline``, ``print``, ``describe``, ``jit``, ``inputs``,
            ``execute``, ``compare``, ``emit``; ``worker-start`` on the first
            job of each worker process: from its start to its first event).
    """

    function: str
    findings: list[Finding] = field(default_factory=list)
    cases: int = 0
    agreed: int = 0
    undefined: int = 0
    changed: bool = False
    fired: dict[str, int] = field(default_factory=dict)
    statistics: dict[str, int] = field(default_factory=dict)
    after_ir: str = ""
    layout: str = ""
    seconds: float = 0.0
    times: dict[str, float] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """True when nothing was found."""
        return not self.findings

    def summary(self) -> str:
        """One line: cases, agreement, findings."""
        verdict = "OK" if self.ok else f"{len(self.findings)} finding(s)"
        fired = ", ".join(f"{k} x{v}" for k, v in self.fired.items()) or "none"
        fired = f"passes fired: {fired}; " if self.fired or self.statistics else ""
        return (f"@{self.function}: {verdict}; {self.cases} cases ({self.agreed} agreed, "
                f"{self.undefined} undefined in the original); transformed: "
                f"{'yes' if self.changed else 'no'}; {fired}{self.seconds:.2f} s")


def _text(module: Module | str | bytes | os.PathLike) -> str:
    if isinstance(module, Module):
        return str(module)
    if isinstance(module, bytes):
        from .ir import parse_ir
        return str(parse_ir(module))
    if isinstance(module, os.PathLike) or (isinstance(module, str) and "\n" not in module
                                           and module.endswith((".ll", ".bc"))):
        from .ir import load_module
        return str(load_module(module))
    return module


def _normalized(ir: str) -> str:
    return "\n".join(line for line in ir.splitlines()
                     if not line.startswith(("; ModuleID", "source_filename")))


def run_transform(command: str, ir: str, timeout: float = 120.0) -> tuple[str | None, str]:
    """Runs a shell command with ``ir`` on stdin; (IR on stdout or None, error text)."""
    try:
        out = subprocess.run(command, shell=True, input=ir, capture_output=True, text=True,
                             timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, f"transform command timed out after {timeout:g} s"
    if out.returncode != 0:
        return None, (f"transform command exited with status {out.returncode}: "
                      + out.stderr.strip()[-2000:])
    return out.stdout, ""


def make_job(
    module: Module | str | bytes | os.PathLike,
    function: str,
    pipeline: str | None = None,
    *,
    after: Module | str | bytes | os.PathLike | None = None,
    transform: str | None = None,
    cases: int = 64,
    seed: int = 0,
    args: Mapping[str, ArgSpec | str] | None = None,
    timeout: float = 2.0,
    ulps: int = 16,
    verify_each: bool = True,
    seconds: float | None = None,
    case_numbers: list[int] | None = None,
    stop_at_first: bool = True,
    execute: bool = True,
    stop_at_timeout: bool = False,
    codegen: bool = True,
    target: str | None = None,
    compile_pipeline: str | None = None,
    libraries: list[str] | None = None,
) -> dict:
    """The job :func:`check` runs, as a JSON-able dict (see :func:`check` for the
    arguments; ``codegen=False`` with ``execute=False`` skips the JIT, for
    modules of other targets); ``transform`` is applied here. Raises ValueError
    on bad arguments."""
    if sum(x is not None for x in (pipeline, after, transform)) != 1:
        raise ValueError("give exactly one of pipeline, after= or transform=")
    before_ir = _text(module)
    job: dict = {"function": function, "before": before_ir, "cases": cases, "seed": seed,
                 "timeout": timeout, "ulps": ulps, "verify_each": verify_each,
                 "seconds": seconds, "case_numbers": case_numbers,
                 "stop_at_first": stop_at_first, "execute": execute,
                 "stop_at_timeout": stop_at_timeout, "compile": codegen, "target": target,
                 "compile_pipeline": compile_pipeline, "libraries": list(libraries or []),
                 "args": {k: (_spec(k, v)).to_dict() for k, v in (args or {}).items()}}
    if after is not None:
        job["after"] = _text(after)
    elif transform is not None:
        out, err = run_transform(transform, before_ir)
        if out is None:
            job["transform_error"] = err
        job["after"] = out
    else:
        job["pipeline"] = pipeline
    return job


def check(
    module: Module | str | bytes | os.PathLike,
    function: str,
    pipeline: str | None = None,
    *,
    after: Module | str | bytes | os.PathLike | None = None,
    transform: str | None = None,
    cases: int = 64,
    seed: int = 0,
    args: Mapping[str, ArgSpec | str] | None = None,
    timeout: float = 2.0,
    ulps: int = 16,
    verify_each: bool = True,
    seconds: float | None = None,
    case_numbers: list[int] | None = None,
    stop_at_first: bool = True,
    execute: bool = True,
    target: str | None = None,
    compile_pipeline: str | None = None,
    libraries: list[str] | None = None,
    python: str | None = None,
) -> CheckResult:
    """Checks that ``function`` computes the same before and after a transformation.

    Args:
        module: The original module (Module, IR text, bitcode, or a .ll/.bc path).
        function: Name of the function to run.
        pipeline: A pass pipeline (``"accel-prefetch"``, ``"default<O3>"``) to
            apply to a copy, with the verifier after every pass.
        after: The transformed module instead of a pipeline.
        transform: A shell command turning IR on stdin into IR on stdout
            (``"opt-22 -passes=instcombine -S"``), instead of a pipeline.
        cases: How many inputs to run (``seed`` and the case number make each).
        seed: Seed of the input stream.
        args: Specs by parameter name or position (:class:`ArgSpec`, or the
            ``"key:value,..."`` text of ``--arg``).
        timeout: Seconds each run may take.
        ulps: Tolerance in units in the last place for fast-math functions.
        verify_each: Verify after every pass of ``pipeline``.
        seconds: Stop running cases after this long.
        case_numbers: Run exactly these cases (to reproduce a finding).
        stop_at_first: Stop at the first finding.
        execute: False to only transform and verify (no runs).
        target: ``"host"`` to run the pipeline for this machine (the passes
            then see its target facts, as the JIT that runs them does);
            ``None``: the module's own triple.
        compile_pipeline: A pipeline both versions go through before the JIT
            compiles them (default: none, or coroutine splitting when the
            module has presplit coroutines, as MLIR's async lowering makes).
        libraries: Shared libraries loaded into the running process first (the
            code may call them); ``libmlir_async_runtime.so`` is loaded
            without asking when the module calls ``mlirAsyncRuntime*``.
        python: Interpreter for the worker process (default: this one).

    Returns:
        A :class:`CheckResult`; ``result.ok`` is False when something differs.

    Raises:
        PipelineError: the pipeline is malformed; ValueError: bad arguments.
    """
    job = make_job(module, function, pipeline, after=after, transform=transform, cases=cases,
                   seed=seed, args=args, timeout=timeout, ulps=ulps, verify_each=verify_each,
                   seconds=seconds, case_numbers=case_numbers, stop_at_first=stop_at_first,
                   execute=execute, target=target, compile_pipeline=compile_pipeline,
                   libraries=libraries)
    return run_jobs([job], python=python)[0]


def _spec(key: str, value: ArgSpec | str) -> ArgSpec:
    if isinstance(value, ArgSpec):
        return value
    from .inputs import parse_arg_spec
    return parse_arg_spec(f"{key}={value}")[1]


def _budget(job: dict) -> float:
    timeout = job["timeout"]
    budget = 60.0 + (len(job["case_numbers"] or ()) or job["cases"]) * 2 * (timeout + 0.2)
    if job.get("seconds"):
        budget = min(budget, 60.0 + job["seconds"] + 2 * timeout)
    return budget


def run_jobs(jobs: list[dict], *, python: str | None = None,
             raise_errors: bool = True) -> list[CheckResult]:
    """Runs jobs from :func:`make_job` in one worker process (restarted after a
    crash, which becomes the finding of the job it happened in).

    With ``raise_errors`` false, a job whose pipeline is malformed or whose
    original cannot be compiled gets an ``error`` finding instead of raising.
    """
    results = [CheckResult(job["function"]) for job in jobs]
    todo: list[int] = []
    for i, job in enumerate(jobs):
        start_ir = job["before"]
        if job.get("transform_error"):
            results[i].findings.append(Finding("crash", "transform", job["transform_error"]))
        else:
            todo.append(i)
            if job.get("after") is not None:
                results[i].after_ir = job["after"]
                results[i].changed = _normalized(job["after"]) != _normalized(start_ir)
    runnable = [jobs[i] for i in todo]
    first = 0
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump({"jobs": runnable}, f)
        path = f.name
    try:
        while first < len(runnable):
            first = _run_worker(path, runnable, first, [results[i] for i in todo],
                                python or sys.executable, raise_errors)
    finally:
        os.unlink(path)
    return results


def _run_worker(path: str, jobs: list[dict], first: int, results: list[CheckResult],
                python: str, raise_errors: bool) -> int:
    """Runs jobs ``first``... in one worker; returns the job to restart from."""
    budget = sum(_budget(j) for j in jobs[first:])
    starts = {i: time.monotonic() for i in range(first, first + 1)}
    launched = time.monotonic()
    proc = subprocess.Popen([python, "-m", "llvmaccel._checkworker", path, str(first)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    stage, current, ended = "start", first, first - 1
    stderr_lines: list[str] = []

    def drain() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            stderr_lines.append(line)
            del stderr_lines[:-50]

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    timer = threading.Timer(budget, proc.kill)
    timer.start()
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            if not line.startswith("{"):
                continue
            event = json.loads(line)
            current = event["job"]
            starts.setdefault(current, time.monotonic())
            result = results[current]
            kind = event["event"]
            if kind == "stage":
                stage = event["stage"]
            elif kind == "ready":
                result.times["worker-start"] = time.monotonic() - launched
            elif kind == "pipeline":
                result.after_ir = event["after"]
                result.changed = _normalized(event["after"]) != _normalized(jobs[current]["before"])
                result.fired = event["fired"]
                result.statistics = event["statistics"]
            elif kind == "layout":
                result.layout = event["text"]
            elif kind == "finding":
                result.findings.append(Finding(event["kind"], event["stage"], event["detail"],
                                               event.get("case"), event.get("seed"),
                                               event.get("inputs", "")))
            elif kind == "done":
                result.agreed = event["counts"]["ok"]
                result.undefined = event["counts"]["both-undefined"]
            elif kind == "error":
                if raise_errors:
                    proc.kill()
                    detail = event["detail"]
                    if detail.startswith("PipelineError"):
                        raise PipelineError(detail.split(": ", 1)[1])
                    if detail.startswith("ValueError"):
                        raise ValueError(detail.split(": ", 1)[1])
                    raise LLVMAccelError(detail)
                result.findings.append(Finding("error", stage, event["detail"]))
            elif kind == "end":
                result.cases = result.agreed + result.undefined + sum(
                    1 for f in result.findings if f.stage == "execute")
                result.seconds = time.monotonic() - starts[current]
                for k, v in (event.get("times") or {}).items():
                    result.times[k] = result.times.get(k, 0.0) + v
                ended, stage = current, "start"
        code = proc.wait()
    finally:
        timer.cancel()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    reader.join(timeout=5)
    if ended == len(jobs) - 1 and code == 0:
        return len(jobs)
    crashed = ended + 1
    result = results[crashed]
    if code == -9 and timer.finished.is_set():
        result.findings.append(Finding(
            "timeout", stage, f"the checking process did not finish within {budget:.0f} s"))
    else:
        sig = f"signal {-code}" if code < 0 else f"exit status {code}"
        tail = "".join(stderr_lines[-25:]).strip()
        what = "the pipeline" if stage == "pipeline" else "the checking process"
        result.findings.append(Finding("crash", stage, f"{what} died ({sig}):\n{tail}"))
    result.seconds = time.monotonic() - starts.get(crashed, time.monotonic())
    return crashed + 1


def cli_args(texts: list[str] | None) -> dict[str, ArgSpec]:
    """``--arg`` texts as specs by name."""
    from .inputs import parse_arg_spec
    out = {}
    for text in texts or []:
        name, spec = parse_arg_spec(text)
        out[name] = spec
    return out


def reproduce_command(path: str, function: str, *, pipeline: str | None = None,
                      after: str | None = None, transform: str | None = None,
                      seed: int = 0, case: int | None = None,
                      args: list[str] | None = None, target: str | None = None,
                      libraries: list[str] | None = None) -> str:
    """The ``llvmaccel check`` command line that runs the same check again."""
    words = ["llvmaccel", "check", path, "--function", function]
    if pipeline is not None:
        words += ["--passes", pipeline]
    if after is not None:
        words += ["--after", after]
    if transform is not None:
        words += ["--transform", transform]
    words += ["--seed", str(seed)]
    if case is not None:
        words += ["--case", str(case)]
    for a in args or []:
        words += ["--arg", a]
    if target:
        words += ["--target", target]
    for lib in libraries or []:
        words += ["--load", lib]
    return " ".join(shlex.quote(w) for w in words)


def defined_functions(ir: str) -> list[str]:
    """Names of the functions the module defines (not declarations)."""
    return re.findall(r'^define\b[^@]*@("[^"]+"|[-\w.$]+)\(', ir, re.M)
