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
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field

from .errors import LLVMAccelError, PipelineError
from .inputs import ArgSpec
from .ir import Module, same_module_text

__all__ = ["CheckResult", "CheckWorkers", "Finding", "check", "make_job", "run_jobs",
           "FINDING_KINDS"]

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
            ``execute``, ``compare``, ``confirm``, ``emit``; ``worker-start``
            on the first job of each worker process: from its start to its
            first event; ``children``: how many children were forked, a count).
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
    execute_unchanged: bool = True,
) -> dict:
    """The job :func:`check` runs, as a JSON-able dict (see :func:`check` for the
    arguments; ``codegen=False`` with ``execute=False`` skips the JIT, for
    modules of other targets; ``execute_unchanged=False`` ends a pipeline job
    after the pipeline when it left the module as it was: the same IR runs the
    same way, so executing it twice would test only whether the original is
    deterministic); ``transform`` is applied here. Raises ValueError on bad
    arguments."""
    if sum(x is not None for x in (pipeline, after, transform)) != 1:
        raise ValueError("give exactly one of pipeline, after= or transform=")
    before_ir = _text(module)
    job: dict = {"function": function, "before": before_ir, "cases": cases, "seed": seed,
                 "timeout": timeout, "ulps": ulps, "verify_each": verify_each,
                 "seconds": seconds, "case_numbers": case_numbers,
                 "stop_at_first": stop_at_first, "execute": execute,
                 "stop_at_timeout": stop_at_timeout, "compile": codegen, "target": target,
                 "compile_pipeline": compile_pipeline, "libraries": list(libraries or []),
                 "execute_unchanged": execute_unchanged,
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


#: Loop kernels whose cases share a forked child, by default (see
#: :class:`CheckWorkers`); ``$LLVMACCEL_CHECK_GROUP`` overrides it.
DEFAULT_GROUP = 8


def run_jobs(jobs: list[dict], *, python: str | None = None,
             raise_errors: bool = True) -> list[CheckResult]:
    """Runs jobs from :func:`make_job` in one worker process (restarted after a
    crash, which becomes the finding of the job it happened in).

    With ``raise_errors`` false, a job whose pipeline is malformed or whose
    original cannot be compiled gets an ``error`` finding instead of raising.
    """
    with CheckWorkers(python=python) as workers:
        return workers.run(jobs, raise_errors=raise_errors)


class _Proc:
    """One checking worker process, its event stream and the tail of its stderr."""

    def __init__(self, python: str) -> None:
        import collections
        self.launched = time.monotonic()
        self.proc = subprocess.Popen([python, "-m", "llvmaccel._checkworker"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
        self.stderr: collections.deque[str] = collections.deque(maxlen=50)
        self.start_seconds: float | None = None  # reported with the first job it ends
        self._reader = threading.Thread(target=self._drain, daemon=True)
        self._reader.start()

    def _drain(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.stderr.append(line)

    def send(self, message: dict) -> bool:
        """Writes one message; False when the process is gone."""
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(json.dumps(message) + "\n")
            self.proc.stdin.flush()
            return True
        except (BrokenPipeError, OSError):
            return False

    def close(self) -> None:
        """Ends the process (it leaves when its stdin closes) and its pipes."""
        if self.proc.poll() is None:
            try:
                assert self.proc.stdin is not None
                self.proc.stdin.close()
                self.proc.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()
        self._reader.join(timeout=5)
        for pipe in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            try:
                if pipe is not None:
                    pipe.close()
            except OSError:
                pass


class CheckWorkers:
    """Checking worker processes kept for many jobs (:func:`run_jobs` makes one
    for a call; a fuzz run keeps one for the whole run).

    Each worker serves jobs until closed, so Python, numpy and the LLVM library
    start once. ``group`` loop kernels (no writable globals, no runtime library
    of their own) share a forked child for their cases, before and after; a
    finding made there is checked again with that case alone. A worker that
    dies (a pass crashed it, or it ran past the jobs' time budget) gives the
    job it was in a ``crash`` or ``timeout`` finding and is restarted for the
    jobs after it; one that dies while running a group's children runs those
    jobs again one at a time. With ``processes`` > 1, that many workers take
    jobs from one queue, ``group`` at a time.

    Args:
        processes: Worker processes (each runs one job at a time).
        python: Interpreter for the workers (default: this one).
        group: Loop kernels per shared child (1: each job's cases per version
            in children of their own; default :data:`DEFAULT_GROUP` or
            ``$LLVMACCEL_CHECK_GROUP``).
    """

    def __init__(self, processes: int = 1, *, python: str | None = None,
                 group: int | None = None) -> None:
        if processes < 1:
            raise ValueError(f"processes must be at least 1, got {processes}")
        env_group = os.environ.get("LLVMACCEL_CHECK_GROUP")
        if group is None:
            group = int(env_group) if env_group else DEFAULT_GROUP
        if group < 1:
            raise ValueError(f"group must be at least 1, got {group}")
        self.group = group
        self.processes = processes
        self.python = python or sys.executable
        self._procs: list[_Proc | None] = [None] * processes
        self.restarts = 0

    def __enter__(self) -> CheckWorkers:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Ends the worker processes."""
        for i, proc in enumerate(self._procs):
            if proc is not None:
                proc.close()
                self._procs[i] = None

    def _proc(self, slot: int) -> _Proc:
        proc = self._procs[slot]
        if proc is None or proc.proc.poll() is not None:
            if proc is not None:
                proc.close()
                self.restarts += 1
            proc = self._procs[slot] = _Proc(self.python)
        return proc

    def run(self, jobs: list[dict], *, raise_errors: bool = True) -> list[CheckResult]:
        """Runs jobs from :func:`make_job`; a result per job, in order.

        With ``raise_errors`` false, a job whose pipeline is malformed or whose
        original cannot be compiled gets an ``error`` finding instead of raising
        (PipelineError, ValueError or LLVMAccelError).
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
                    results[i].changed = not same_module_text(job["after"], start_ir)
        units = [todo[k:k + self.group] for k in range(0, len(todo), self.group)]
        errors: list[BaseException] = []
        lock = threading.Lock()

        def serve(slot: int) -> None:
            while not errors:
                with lock:
                    if not units:
                        return
                    unit = units.pop(0)
                try:
                    self._run_unit(slot, unit, jobs, results, raise_errors)
                except BaseException as err:  # noqa: BLE001 - raised by run() below
                    errors.append(err)
                    return

        threads = min(self.processes, len(units))
        if threads <= 1:
            serve(0)
        else:
            pool = [threading.Thread(target=serve, args=(k,), daemon=True)
                    for k in range(threads)]
            for t in pool:
                t.start()
            for t in pool:
                t.join()
        if errors:
            raise errors[0]
        return results

    def _run_unit(self, slot: int, unit: list[int], jobs: list[dict],
                  results: list[CheckResult], raise_errors: bool) -> None:
        """Runs the jobs ``unit`` in the worker of ``slot`` until each has ended."""
        remaining, group = list(unit), self.group
        while remaining:
            proc = self._proc(slot)
            proc.stderr.clear()
            ended, group = self._serve_message(proc, remaining, group, jobs, results,
                                               raise_errors)
            remaining = [i for i in remaining if i not in ended]

    def _serve_message(self, proc: _Proc, numbers: list[int], group: int, jobs: list[dict],
                       results: list[CheckResult],
                       raise_errors: bool) -> tuple[set[int], int]:
        """Sends the jobs ``numbers`` to ``proc`` and reads their events; returns
        the jobs that are over (ended, or given a crash or timeout finding) and
        the group size for the jobs left, which are sent again if it died."""
        budget = sum(_budget(jobs[i]) for i in numbers) + 60.0
        timer = threading.Timer(budget, proc.proc.kill)
        ended: set[int] = set()
        starts: dict[int, float] = {}
        current, stage = None, "start"
        in_group: set[int] = set()  # the jobs of a shared child not ended yet
        timer.start()
        try:
            sent = proc.send({"numbers": numbers, "jobs": [jobs[i] for i in numbers],
                              "group": group})
            assert proc.proc.stdout is not None
            while sent and len(ended) < len(numbers):
                line = proc.proc.stdout.readline()
                if not line:
                    break
                if not line.startswith("{"):
                    continue
                event = json.loads(line)
                kind = event["event"]
                if kind == "ready":
                    proc.start_seconds = time.monotonic() - proc.launched
                    continue
                current = event["job"]
                starts.setdefault(current, time.monotonic())
                result = results[current]
                if kind == "stage":
                    stage = event["stage"]
                    in_group = set(event.get("group") or ())
                elif kind == "pipeline":
                    result.after_ir = event["after"]
                    result.changed = event["changed"]
                    result.fired = event["fired"]
                    result.statistics = event["statistics"]
                elif kind == "layout":
                    result.layout = event["text"]
                elif kind == "finding":
                    result.findings.append(Finding(event["kind"], event["stage"],
                                                   event["detail"], event.get("case"),
                                                   event.get("seed"), event.get("inputs", "")))
                elif kind == "done":
                    result.agreed = event["counts"]["ok"]
                    result.undefined = event["counts"]["both-undefined"]
                elif kind == "error":
                    if raise_errors:
                        proc.proc.kill()
                        raise _error_of(event["detail"])
                    result.findings.append(Finding("error", stage, event["detail"]))
                elif kind == "end":
                    result.cases = result.agreed + result.undefined + sum(
                        1 for f in result.findings if f.stage == "execute")
                    result.seconds = time.monotonic() - starts[current]
                    for k, v in (event.get("times") or {}).items():
                        result.times[k] = result.times.get(k, 0.0) + v
                    if proc.start_seconds is not None:
                        result.times["worker-start"] = proc.start_seconds
                        proc.start_seconds = None
                    ended.add(current)
                    in_group.discard(current)
                    if not in_group:
                        stage = "start"
        finally:
            timer.cancel()
        if len(ended) == len(numbers):
            return ended, group
        # The worker died (or could not take the message).
        if proc.proc.poll() is None:
            proc.proc.kill()
        code = proc.proc.wait()
        if in_group and stage == "execute":
            # It died running a group's children (not a pass, not a case):
            # the jobs left run again one at a time, where it shows whose it is.
            return ended, 1
        crashed = current if current is not None and current not in ended else next(
            i for i in numbers if i not in ended)
        result = results[crashed]
        if code == -9 and timer.finished.is_set():
            result.findings.append(Finding(
                "timeout", stage, f"the checking process did not finish within {budget:.0f} s"))
        else:
            sig = f"signal {-code}" if code < 0 else f"exit status {code}"
            tail = "".join(list(proc.stderr)[-25:]).strip()
            what = "the pipeline" if stage == "pipeline" else "the checking process"
            result.findings.append(Finding("crash", stage, f"{what} died ({sig}):\n{tail}"))
        result.seconds = time.monotonic() - starts.get(crashed, time.monotonic())
        ended.add(crashed)
        return ended, group


def _error_of(detail: str) -> Exception:
    """The exception an ``error`` event stands for."""
    if detail.startswith("PipelineError"):
        return PipelineError(detail.split(": ", 1)[1])
    if detail.startswith("ValueError"):
        return ValueError(detail.split(": ", 1)[1])
    return LLVMAccelError(detail)


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
