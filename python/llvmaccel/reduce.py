"""Reduction of a failing check with ``llvm-reduce``.

:func:`reduce` writes an interestingness test that re-runs the same check on a
candidate module (the same pipeline, second module or transform command, the
same argument specs, the failing case first and then more cases) and calls the
module interesting when it yields a finding of the same kind. ``llvm-reduce``
(Debian's ``llvm-NN-tools``) shrinks the module under that test; the result is
the reduced module and the ``llvmaccel check`` command that shows the failure.
"""

from __future__ import annotations

import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field

from .check import check, make_job, reproduce_command
from .pipeline import llvm_version

__all__ = ["ReduceResult", "find_llvm_tool", "reduce"]


@dataclass
class ReduceResult:
    """A reduced module and how to reproduce its failure.

    Attributes:
        ir: The reduced module's text.
        path: Where it was written.
        command: The ``llvmaccel check`` command that reproduces the finding.
        kind: The finding's kind.
        seconds: Time llvm-reduce took.
        lines: Lines of the module before and after (non-blank, non-comment).
        log: The tail of llvm-reduce's output.
        tests: Candidates llvm-reduce found interesting.
        tool: The llvm-reduce that reduced it.
        crashed: The llvm-reduce tools that crashed before it (another
            installed release's is tried when one crashes).
    """

    ir: str
    path: str
    command: str
    kind: str
    seconds: float
    lines: tuple[int, int] = (0, 0)
    log: str = ""
    tests: int = 0
    extra: dict = field(default_factory=dict)
    tool: str = ""
    crashed: list[str] = field(default_factory=list)


def find_llvm_tool(name: str) -> str:
    """The path of LLVM tool ``name`` of the release llvmaccel is built against.

    Raises:
        FileNotFoundError: it is not installed (``apt-get install llvm-NN-tools``).
    """
    major = llvm_version().split(".")[0]
    for candidate in (f"/usr/lib/llvm-{major}/bin/{name}", shutil.which(f"{name}-{major}"),
                      shutil.which(name)):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    raise FileNotFoundError(f"{name} not found: apt-get install llvm-{major}-tools")


def _reduce_tools() -> list[str]:
    """``llvm-reduce`` of llvmaccel's release, then those of the other
    installed releases, newest first (tried in turn when one crashes)."""
    first = find_llvm_tool("llvm-reduce")
    others = sorted(glob.glob("/usr/lib/llvm-*/bin/llvm-reduce"),
                    key=lambda p: -int(re.search(r"llvm-(\d+)", p).group(1)))
    return [first] + [t for t in others
                      if os.access(t, os.X_OK) and os.path.realpath(t) != os.path.realpath(first)]


def _count(ir: str) -> int:
    return sum(1 for line in ir.splitlines() if line.strip() and not line.lstrip().startswith(";"))


_IN_PROCESS = ("mismatch", "fault", "timeout", "verify", "signature")


def _same_kind(cfg: dict, original: str | None, candidate: str) -> int:
    mode = {k: cfg[k] for k in ("pipeline", "transform") if cfg.get(k) is not None}
    module = original if original is not None else candidate
    if original is not None:
        mode = {"after": candidate}
    kw = {"cases": cfg["cases"], "seed": cfg["seed"], "args": cfg["args"],
          "timeout": cfg["timeout"], "case_numbers": cfg["case_numbers"],
          "target": cfg.get("target"), "compile_pipeline": cfg.get("compile_pipeline"),
          "libraries": cfg.get("libraries")}
    try:
        if cfg["kind"] in _IN_PROCESS:
            # Runs are forked children already; skipping the worker process
            # halves the cost of each test.
            from ._checkworker import run_job_here
            job = make_job(module, cfg["function"], **mode, **kw, stop_at_timeout=True)
            if job.get("transform_error"):
                return 1
            kinds = {(e["kind"], e["stage"]) for e in run_job_here(job)
                     if e["event"] == "finding"}
        else:
            result = check(module, cfg["function"], **mode, **kw)
            kinds = {(f.kind, f.stage) for f in result.findings}
    except Exception:  # noqa: BLE001 - a candidate that cannot be checked is not interesting
        return 1
    return 0 if any(k == cfg["kind"] and s != "compile" for k, s in kinds) else 1


def interesting(config_path: str, candidate: str) -> int:
    """The interestingness test: 0 when ``candidate`` shows the same finding kind."""
    with open(config_path) as f:
        cfg = json.load(f)
    return _same_kind(cfg, None, candidate)


def reduce(
    path: str,
    function: str,
    kind: str,
    *,
    pipeline: str | None = None,
    after: str | None = None,
    transform: str | None = None,
    args: dict[str, str] | None = None,
    seed: int = 0,
    case: int | None = None,
    cases: int = 4,
    timeout: float = 0.25,
    output: str | None = None,
    jobs: int = 2,
    delta_passes: str | None = None,
    target: str | None = None,
    compile_pipeline: str | None = None,
    libraries: list[str] | None = None,
    max_seconds: float | None = None,
) -> ReduceResult:
    """Shrinks the module at ``path`` while ``check`` still finds a ``kind`` finding.

    In ``after`` mode the "after" module is the one reduced (``path`` stays the
    original): its function must keep the original's signature.

    Args:
        path: The module to reduce (.ll or .bc), or the original in ``after`` mode.
        function: The function checked.
        kind: The finding kind to preserve (``mismatch``, ``fault``, ``crash``...).
        pipeline, after, transform: The transformation, as for :func:`check`.
        args: ``--arg`` texts by parameter name.
        seed, case: The failing input, tried first.
        cases: More cases tried after it.
        timeout: Seconds per run (short: reduction makes infinite loops often).
        output: Where to write the reduced module (default: next to ``path``).
        jobs: llvm-reduce's parallel tests.
        delta_passes: llvm-reduce's ``--delta-passes`` (default: all of them).
        target: As for :func:`check` (``"host"``: the pipeline sees this machine).
        compile_pipeline, libraries: As for :func:`check`.
        max_seconds: Give up (RuntimeError) when llvm-reduce has not finished
            by then (default: no bound).

    Raises:
        FileNotFoundError: llvm-reduce is missing.
        RuntimeError: llvm-reduce failed (e.g. the input is not interesting)
            or ran past ``max_seconds``.
    """
    subject = after if after is not None else path
    stem = os.path.splitext(subject)[0]
    output = output or f"{stem}.reduced.ll"
    numbers = ([case] if case is not None else []) + [n for n in range(cases) if n != case]
    work = tempfile.mkdtemp(prefix="llvmaccel-reduce-")
    config = os.path.join(work, "config.json")
    spec_texts = {k: v.split("=", 1)[1] if "=" in v and v.split("=", 1)[0] == k else v
                  for k, v in (args or {}).items()}
    with open(config, "w") as f:
        json.dump({"function": function, "kind": kind, "seed": seed, "cases": cases,
                   "case_numbers": numbers, "timeout": timeout, "args": spec_texts,
                   "pipeline": pipeline, "transform": transform, "target": target,
                   "compile_pipeline": compile_pipeline, "libraries": libraries or [],
                   "after": None}, f)
    # The test is a bash script that asks a server (one Python process with
    # llvmaccel loaded, forking per candidate) over a local socket: starting
    # Python for every candidate would cost more than checking it.
    port_file = os.path.join(work, "port")
    original = os.path.abspath(path) if after is not None else "-"
    server = subprocess.Popen([sys.executable, "-m", "llvmaccel.reduce", "serve", config,
                               original, port_file], stdin=subprocess.DEVNULL)
    try:
        port = _wait_for_port(port_file, server)
        script = os.path.join(work, "interesting.sh")
        with open(script, "w") as f:
            f.write("#!/bin/bash\n"
                    f"exec 3<>/dev/tcp/127.0.0.1/{port} || exit 1\n"
                    "printf '%s\\n' \"$(realpath \"$1\")\" >&3\n"
                    "read -r rc <&3\n"
                    "exit \"${rc:-1}\"\n")
        os.chmod(script, 0o755)
        extra = [f"--delta-passes={delta_passes}"] if delta_passes else []
        crashed: list[str] = []
        for tool in _reduce_tools():
            start = time.monotonic()
            try:
                out = subprocess.run([tool, f"--test={script}", f"-j={jobs}", *extra, "-o",
                                      output, subject], capture_output=True, text=True,
                                     timeout=max_seconds)
            except subprocess.TimeoutExpired as err:
                raise RuntimeError(f"{tool} did not finish in {max_seconds:g} s") from err
            seconds = time.monotonic() - start
            if out.returncode >= 0:
                break
            # llvm-reduce itself crashed (LLVM 22's on some llvm-stress
            # modules, where LLVM 19's reduces them): another release's, if any.
            crashed.append(f"{tool} (signal {-out.returncode})")
    finally:
        server.kill()
        server.wait()
    shutil.rmtree(work, ignore_errors=True)
    if out.returncode != 0 or not os.path.exists(output):
        raise RuntimeError(f"llvm-reduce failed ({out.returncode}"
                           + (f"; crashed first: {', '.join(crashed[:-1])}" if crashed[:-1]
                              else "") + "): " + (out.stderr or out.stdout).strip()[-1500:])
    with open(output) as f:
        reduced = f.read()
    with open(subject) as f:
        original = f.read()
    arg_list = [f"{k}={v}" for k, v in spec_texts.items()]
    if after is not None:
        command = reproduce_command(path, function, after=output, seed=seed, args=arg_list,
                                    libraries=libraries)
    else:
        command = reproduce_command(output, function, pipeline=pipeline, transform=transform,
                                    seed=seed, args=arg_list, target=target,
                                    libraries=libraries)
    tests = (out.stdout + out.stderr).count("Success!") or 0
    return ReduceResult(reduced, output, command, kind, seconds, (_count(original),
                        _count(reduced)), (out.stdout + out.stderr)[-2000:], tests,
                        tool=tool, crashed=crashed)


def _wait_for_port(port_file: str, server: subprocess.Popen) -> int:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if os.path.exists(port_file):
            with open(port_file) as f:
                text = f.read().strip()
            if text:
                return int(text)
        if server.poll() is not None:
            raise RuntimeError("the interestingness server did not start")
        time.sleep(0.05)
    raise RuntimeError("the interestingness server did not start within 60 s")


def serve(config_path: str, original: str, port_file: str) -> None:
    """Answers interestingness questions: a line with a candidate's path in,
    a line with 0 (interesting) or 1 out; one forked child per candidate."""
    import signal
    import socket
    with open(config_path) as f:
        cfg = json.load(f)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    with open(port_file + ".tmp", "w") as f:
        f.write(str(sock.getsockname()[1]))
    os.replace(port_file + ".tmp", port_file)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children reap themselves
    while True:
        conn, _ = sock.accept()
        if os.fork() == 0:
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            sock.close()
            rc = 1
            try:
                candidate = conn.makefile().readline().strip()
                rc = _same_kind(cfg, None if original == "-" else original, candidate)
            finally:
                conn.sendall(f"{rc}\n".encode())
                conn.close()
                os._exit(0)
        conn.close()


def interesting_after(config_path: str, original: str, candidate: str) -> int:
    """The interestingness test of ``after`` mode: the candidate is the after module."""
    with open(config_path) as f:
        cfg = json.load(f)
    return _same_kind(cfg, original, candidate)


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "serve":
        serve(sys.argv[2], sys.argv[3], sys.argv[4])
