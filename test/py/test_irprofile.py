"""llvmaccel.irprofile.profile_ir and ``llvmaccel profile``: one function of
an IR file timed on generated inputs, per loop nest, with and without the
llvmaccel passes."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from conftest import GATHER_IR
from llvmaccel.irprofile import ProfileError, profile_ir, without_accel
from llvmaccel.target import host

HAS_COUNTER = host().triple.startswith(("x86_64", "aarch64"))

GATHER_ARGS = {"T": "bytes:65536,elem:double", "B": "bytes:131072,elem:i64,bound:8192",
               "w": "bytes:131072,elem:double", "n": "values:16384"}

FAULTS_IR = """
define i32 @reads_past(ptr %p) {
  %q = getelementptr i8, ptr %p, i64 4096
  %v = load i32, ptr %q
  ret i32 %v
}
"""


def _specs(texts: dict[str, str]):
    from llvmaccel.check import cli_args

    return cli_args([f"{k}={v}" for k, v in texts.items()])


@pytest.mark.parametrize(("pipeline", "expected"), [
    ("default<O3>", "default<O3>"),
    ("function(sroa,accel-prefetch<distance=8>)", "function(sroa)"),
    ("function(accel-prefetch),function(accel-masked-load<no-split>)", "verify"),
    ("module(accel-async-fusion,function(instcombine,accel-phi-decompose))",
     "module(function(instcombine))"),
])
def test_without_accel(pipeline, expected):
    assert without_accel(pipeline) == expected


def test_profile_times_the_function_and_its_loop():
    # min-work=0: the prefetch fires whatever this host's cost model says.
    pipeline = "default<O3>,function(accel-prefetch<min-work=0>)"
    prof = profile_ir(GATHER_IR, "gather", pipeline, compare=True,
                      args=_specs(GATHER_ARGS), rounds=3, min_round_seconds=0.005)
    assert prof.seconds > 0 and prof.baseline_seconds > 0
    assert prof.passes.get("accel-prefetch", 0) >= 1  # the indirect load is prefetched
    assert "%T: 65536-byte buffer of double" in prof.inputs
    if HAS_COUNTER:
        assert len(prof.loops) == 1
        (loop,) = prof.loops
        assert loop.function == "gather" and loop.entries == 1
        # The loop is the whole call: its time is about the call's.
        assert 0.3 * prof.seconds < loop.seconds < 3 * prof.seconds
    text = prof.table()
    assert "accel-prefetch" in text and "without the llvmaccel passes" in text


def test_profile_without_passes_reports_none_fired():
    prof = profile_ir(GATHER_IR, "gather", "function(sroa)", loops=False,
                      args=_specs(GATHER_ARGS), rounds=1, min_round_seconds=0.001)
    assert prof.passes == {} and prof.loops == [] and prof.baseline_seconds is None
    assert "llvmaccel passes that fired: none" in prof.table()


def test_a_faulting_function_is_an_exception_not_a_crash():
    with pytest.raises(ProfileError, match="died of SIGSEGV|SIGBUS"):
        profile_ir(FAULTS_IR, "reads_past", "default<O1>", rounds=1)


def test_bad_arguments():
    with pytest.raises(ProfileError, match="nope"):
        profile_ir(GATHER_IR, "nope", rounds=1)
    with pytest.raises(ValueError, match="rounds"):
        profile_ir(GATHER_IR, "gather", rounds=0)


def test_cli_profile(tmp_path):
    path = tmp_path / "gather.ll"
    path.write_text(GATHER_IR)
    argv = [sys.executable, "-m", "llvmaccel", "profile", str(path), "-f", "gather",
            "--compare", "--rounds", "2"]
    for k, v in GATHER_ARGS.items():
        argv += ["--arg", f"{k}={v}"]
    out = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "@gather through 'default<O3>'" in out.stdout
    assert "x with them" in out.stdout
    if HAS_COUNTER:
        assert "gather:" in out.stdout and "entries/call" in out.stdout
    js = subprocess.run(argv + ["--json", "--no-loops"], capture_output=True, text=True,
                        timeout=300)
    assert js.returncode == 0, js.stderr
    (data,) = json.loads(js.stdout)
    assert data["function"] == "gather" and data["speedup"] > 0 and data["loops"] == []


def test_cli_profile_fault_is_an_error_message(tmp_path):
    path = tmp_path / "bad.ll"
    path.write_text(FAULTS_IR)
    out = subprocess.run([sys.executable, "-m", "llvmaccel", "profile", str(path)],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 1
    assert "llvmaccel: error: @reads_past died of" in out.stderr
