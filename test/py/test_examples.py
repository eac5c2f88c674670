"""The README's examples are the files under examples/, and each runs.

Every line of a ``sh`` or ``python`` block of README.md (and every ``$``
command of a transcript) is a line of a file under examples/, so the README
shows what the files do; the tests below run each file. The few blocks that
are not examples (the entry points CI runs, transcripts of recorded runs, an
IR excerpt) are listed in NOT_EXAMPLES with what runs them instead.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import llvmaccel

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
BIN = Path(sys.executable).parent

# First line of a README block that is not an example -> what runs it instead.
NOT_EXAMPLES = {
    "make demo   # set up (apt LLVM 22 if missing, .venv, build) and run the demo table":
        "the entry points themselves: .ci/run runs `make test`; test_demo*.py the demo",
    "$ llvmaccel profile gather.ll -f gather --compare \\":
        "a recorded transcript (timings differ per run); test_irprofile.py runs profile_ir",
    "$ llvmaccel check gather.ll --transform 'sh test/py/planted_miscompile.sh lookahead' "
    "--reduce": "a recorded transcript; test_check.py runs the planted miscompile",
    "body:": "an excerpt of a fuzz finding, kept as a lit test under test/lit",
    "cmake -G Ninja -S . -B build/llvm-22 -DLLVMACCEL_LLVM_VERSION=22   # or -DLLVM_DIR=...":
        "scripts/setup.sh runs these steps (cmake, ninja, pip install), make test-lit runs lit",
}


def _blocks(text: str) -> list[tuple[str, list[str]]]:
    """(language, lines) of each fenced block."""
    blocks, lang, lines = [], None, []
    for line in text.splitlines():
        fence = re.match(r"^```(\w*)\s*$", line)
        if fence and lang is None:
            lang, lines = fence.group(1), []
        elif line.startswith("```") and lang is not None:
            blocks.append((lang, lines))
            lang = None
        elif lang is not None:
            lines.append(line)
    return blocks


def _example_lines() -> set[str]:
    lines: set[str] = set()
    for path in EXAMPLES.rglob("*"):
        if path.is_file() and path.suffix in (".py", ".sh", ".ll", ".c"):
            lines.update(line.strip() for line in path.read_text().splitlines())
    return lines


def _unquoted(readme: str) -> tuple[list[str], set[str]]:
    """README lines that no example file has, and the NOT_EXAMPLES keys seen."""
    known = _example_lines()
    missing, seen = [], set()
    for lang, lines in _blocks(readme):
        body = [line for line in lines if line.strip()]
        if not body:
            continue
        if body[0] in NOT_EXAMPLES:
            seen.add(body[0])
            continue
        if lang == "text":  # an example's output; the test that runs it checks it
            continue
        if lang == "console":
            body = [line[2:] for line in body if line.startswith("$ ")]
        missing += [line for line in body if line.strip() not in known]
    return missing, seen


def test_every_readme_example_is_a_file_under_examples():
    missing, seen = _unquoted((ROOT / "README.md").read_text())
    assert not missing, "README lines that no file under examples/ has:\n" + "\n".join(missing)
    assert seen == set(NOT_EXAMPLES), f"stale NOT_EXAMPLES entries: {set(NOT_EXAMPLES) - seen}"


def test_the_drift_check_can_fail():
    readme = ("```sh\nllvmaccel passes                       # every pass, its parameters and "
              "defaults\nopt-22 -passes=frobnicate in.ll\n```\n")
    assert _unquoted(readme)[0] == ["opt-22 -passes=frobnicate in.ll"]


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(BIN), env.get("PATH", "")])
    return env


def _major() -> int:
    return int(llvmaccel.llvm_version().split(".")[0])


def _run(cmd: list[str], timeout: float = 600, **kw: object) -> subprocess.CompletedProcess:
    out = subprocess.run(cmd, cwd=ROOT, env=_env(), capture_output=True, text=True,
                         timeout=timeout, **kw)
    assert out.returncode == 0, f"{cmd} failed:\n{out.stdout}\n{out.stderr}"
    return out


def test_command_line_examples(tmp_path):
    major = _major()
    script = EXAMPLES / "command-line.sh"
    text = script.read_text()
    if major != 22:  # the same commands with this release's opt-NN and clang-NN
        text = text.replace("opt-22 ", f"opt-{major} ").replace("clang-22 ", f"clang-{major} ")
        if major < 22:  # as the README says: clang 19-21 read -mllvm before loading plugins
            text = text.replace("-fpass-plugin=$PLUGIN -mllvm", "-fpass-plugin=$PLUGIN "
                                "-fplugin=$PLUGIN -mllvm")
        text = text.replace('"$(dirname "$0")"', f'"{EXAMPLES}"')
        script = tmp_path / "command-line.sh"
        script.write_text(text)
    for tool in (f"opt-{major}", f"clang-{major}"):
        if not any((Path(d) / tool).exists() for d in os.environ.get("PATH", "").split(":")):
            pytest.skip(f"needs {tool} on PATH (Debian's llvm-{major}, clang-{major})")
    out = _run(["bash", str(script)])
    # The remark the README shows for the pass alone, and clang's.
    readme = (ROOT / "README.md").read_text()
    remark = "remark: <unknown>:0:0: prefetched T[...] via B, 32 iterations ahead, 4 lines"
    assert remark in readme
    assert remark in out.stderr
    assert "kernel.c:11:17: remark: prefetched" in out.stderr
    assert "accel-prefetch" in out.stdout  # -print-passes and `llvmaccel passes`
    assert "time per call" in out.stdout   # llvmaccel profile
    assert "library: " in out.stdout       # llvmaccel blas


def test_check_examples():
    import shutil

    # The --targets line runs aarch64 and riscv64 code under qemu-user.
    tools = ("qemu-aarch64", "qemu-riscv64", "aarch64-linux-gnu-gcc", "riscv64-linux-gnu-gcc")
    if not all(shutil.which(t) for t in tools):
        pytest.skip("needs qemu-user and the cross compilers (scripts/setup.sh --cross)")
    out = _run(["bash", str(EXAMPLES / "check.sh")], timeout=1200)
    assert "@embedding_sum" in out.stdout


def test_fuzz_examples():
    env = dict(_env(), FUZZ_EXAMPLE_SECONDS="5")
    out = subprocess.run(["bash", str(EXAMPLES / "fuzz.sh")], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "llvmaccel fuzz --pass accel-prefetch" in out.stdout
    assert "stages (" in out.stdout and "worker:jit" in out.stdout  # --profile
    assert "generated kernels: 48 checked" in out.stdout  # --kernels 48 --group 1
    assert "| `accel-prefetch` | 1 |" in out.stdout  # the campaign's totals


def test_python_example():
    out = _run([sys.executable, str(EXAMPLES / "quickstart.py")])
    assert "accel-prefetch passed embedding_sum" in out.stdout


def _needs(module: str) -> None:
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"needs {module}")


def test_torch_example():
    _needs("torch")
    out = _run([sys.executable, str(EXAMPLES / "torch_model.py")])
    assert "accel-prefetch" in out.stdout  # explain: the passes that fired


def test_jax_example():
    _needs("jax")
    out = _run([sys.executable, str(EXAMPLES / "jax_functions.py")])
    assert "jax examples: ok" in out.stdout


def test_custom_op_example():
    _needs("torch")
    _needs("jax")
    out = _run([sys.executable, str(EXAMPLES / "custom_ops" / "csr_spmm.py")])
    assert "agree" in out.stdout


def test_inter_op_example():
    _needs("torch")
    _needs("jax")
    out = _run([sys.executable, str(EXAMPLES / "inter_op.py")])
    assert "inter-op examples: ok" in out.stdout


def test_cross_target_example():
    _needs("jax")
    from llvmaccel import crossrun
    if crossrun.available("aarch64"):
        pytest.skip(f"aarch64: {crossrun.available('aarch64')} (scripts/setup.sh --cross)")
    out = _run([sys.executable, str(EXAMPLES / "cross_target.py")])
    assert "neoverse-v1: 128-bit vectors, same results" in out.stdout
