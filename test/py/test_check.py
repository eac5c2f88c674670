"""llvmaccel.check: differential testing finds every kind of difference, and
nothing where there is none."""

from __future__ import annotations

import struct
import subprocess
import sys
from pathlib import Path

import pytest

import llvmaccel
from conftest import AXPY_IR, GATHER_IR
from llvmaccel.check import check
from llvmaccel.inputs import ArgSpec, Layout, make_case, parse_arg_spec
from llvmaccel.irinfo import describe

HERE = Path(__file__).resolve().parent
PLANTED = f"sh {HERE / 'planted_miscompile.sh'}"


def test_describe_finds_index_arrays_counts_and_element_types():
    info = describe(GATHER_IR, "gather")
    T, B, w, n = info.params
    assert (T.elem, B.elem, w.elem) == ("double", "i64", "double")
    assert B.index_into == {T.index}
    assert n.compared and not T.written
    assert info.return_type == "double" and not info.fast_math
    axpy = describe(AXPY_IR, "axpy")
    assert axpy.params[0].written and not axpy.params[1].written


def test_inputs_are_deterministic_and_edge_heavy():
    layout = Layout.build(describe(GATHER_IR, "gather"))
    a, b = make_case(layout, 3, 5), make_case(layout, 3, 5)
    assert a.scalars == b.scalars and a.buffers == b.buffers
    doubles = [v for c in range(40) for v in struct.unpack(
        "<512d", make_case(layout, 0, c).buffers[0])]
    assert any(v != v for v in doubles) and float("inf") in doubles
    assert any(v == 0 and struct.pack("<d", v)[-1] == 0x80 for v in doubles)  # -0.0
    indices = [v for c in range(40) for v in struct.unpack("<512q", make_case(layout, 0, c)
                                                           .buffers[1])]
    assert max(indices) >= 512 or min(indices) < 0  # some out of range
    assert sum(0 <= v < 512 for v in indices) > 0.9 * len(indices)


def test_arg_spec_text_round_trip():
    name, spec = parse_arg_spec("B=bytes:64,elem:i32,bound:16,sorted")
    assert name == "B" and spec == ArgSpec(bytes=64, elem="i32", bound=16, sorted=True)
    assert parse_arg_spec(f"B={spec.to_text()}")[1] == spec
    assert parse_arg_spec("n=values:0/1/17")[1].values == (0, 1, 17)
    with pytest.raises(ValueError, match="unknown key"):
        parse_arg_spec("n=frob:1")


def test_prefetch_pipeline_agrees_and_fires():
    result = check(GATHER_IR, "gather", "accel-prefetch<distance=4>", cases=24)
    assert result.ok, [str(f) for f in result.findings]
    assert result.cases == 24 and result.agreed > 12
    csr = llvmaccel.kernelgen.generate(3, "csr")
    result = check(csr.ir, csr.function, "accel-prefetch", args=csr.args, cases=16)
    assert result.ok and result.fired.get("accel-prefetch", 0) > 0


def test_off_by_one_is_a_mismatch_with_its_inputs():
    after = AXPY_IR.replace("icmp eq i64 %i.next, %n", "icmp ugt i64 %i.next, %n")
    result = check(AXPY_IR, "axpy", after=after, cases=32)
    assert not result.ok
    finding = result.findings[0]
    assert finding.kind == "mismatch" and finding.stage == "execute"
    assert "buffer %y" in finding.detail and "%n = " in finding.inputs
    # The same case again reproduces it.
    again = check(AXPY_IR, "axpy", after=after, seed=finding.seed, case_numbers=[finding.case])
    assert [f.kind for f in again.findings] == ["mismatch"]


def test_unclamped_lookahead_faults_at_the_guard_page():
    result = check(GATHER_IR, "gather", transform=f"{PLANTED} lookahead", cases=32)
    assert [f.kind for f in result.findings] == ["fault"]
    assert "SIGSEGV" in result.findings[0].detail


def test_buffer_size_from_dereferenceable_places_the_guard_page():
    src = """
define i32 @last(ptr dereferenceable(12) %p) {
  %q = getelementptr inbounds i32, ptr %p, i64 2
  %v = load i32, ptr %q
  ret i32 %v
}
"""
    assert check(src, "last", "verify", cases=4).ok
    beyond = src.replace("i64 2", "i64 3")
    result = check(src, "last", after=beyond, cases=4)
    assert result.findings and result.findings[0].kind == "fault"


def test_crash_timeout_and_return_value_are_reported():
    src = "define i64 @f(i64 %x) {\n  %r = add i64 %x, 1\n  ret i64 %r\n}\n"
    trap = ("define i64 @f(i64 %x) {\n  call void @llvm.trap()\n  ret i64 0\n}\n"
            "declare void @llvm.trap()\n")
    hang = "define i64 @f(i64 %x) {\nentry:\n  br label %l\nl:\n  br label %l\n}\n"
    wrong = src.replace("add i64 %x, 1", "add i64 %x, 2")
    assert check(src, "f", after=trap, cases=2).findings[0].kind == "crash"
    assert check(src, "f", after=hang, cases=1, timeout=0.3).findings[0].kind == "timeout"
    finding = check(src, "f", after=wrong, cases=2).findings[0]
    assert finding.kind == "mismatch" and "return value" in finding.detail


def test_fast_math_compares_within_ulps():
    src = ("define float @f(float %x) {\n  %r = fmul {flags} float %x, 3.0\n  ret float %r\n}\n")
    strict = src.replace("{flags}", "")
    fast = src.replace("{flags}", "fast")
    one_ulp_off = ("define float @f(float %x) {\n  %r = fmul {flags} float %x, 3.0\n"
                   "  %b = bitcast float %r to i32\n  %c = add i32 %b, 1\n"
                   "  %s = bitcast i32 %c to float\n  ret float %s\n}\n")
    finite = {"x": "values:1.5/2.5/-7.25"}
    assert check(fast, "f", after=one_ulp_off.replace("{flags}", "fast"), args=finite,
                 cases=4).ok
    assert not check(fast, "f", after=one_ulp_off.replace("{flags}", "fast"), args=finite,
                     cases=4, ulps=0).ok
    assert not check(strict, "f", after=one_ulp_off.replace("{flags}", ""), args=finite,
                     cases=4).ok


def test_nan_payload_and_sign_are_not_behaviour():
    # Regression (fuzz-ci, accel-prefetch gather kernel 96209583): the
    # backend commuted an fadd of two NaNs after the pass and the result's
    # payload changed; LangRef leaves a computed NaN's sign and payload open.
    def ret(bits: str) -> str:
        return f"define float @f(float %x) {{\n  ret float {bits}\n}}\n"

    def store(bits: str) -> str:
        return ("define void @g(ptr dereferenceable(8) %p) {\n"
                f"  store float {bits}, ptr %p\n  %q = getelementptr float, ptr %p, i64 1\n"
                "  store float 1.0, ptr %q\n  ret void\n}\n")

    quiet, payload, negative = "0x7FF8000000000000", "0x7FF8000020000000", "0xFFF8000000000000"
    assert check(ret(quiet), "f", after=ret(payload), cases=2).ok
    assert check(ret(quiet), "f", after=ret(negative), cases=2).ok
    assert check(store(quiet), "g", after=store(negative), cases=2).ok
    # NaN against a number, and -0.0 against 0.0, stay mismatches.
    assert not check(ret(quiet), "f", after=ret("1.0"), cases=2).ok
    assert not check(ret("0.0"), "f", after=ret("-0.0"), cases=2).ok
    finding = check(store("0.0"), "g", after=store("-0.0"), cases=2).findings[0]
    assert finding.kind == "mismatch" and "element 0" in finding.detail


def test_a_crash_in_the_pipeline_does_not_kill_the_caller():
    result = check(AXPY_IR, "axpy", transform="exit 3", cases=2)
    assert result.findings[0].kind == "crash" and result.findings[0].stage == "transform"
    with pytest.raises(llvmaccel.PipelineError):
        check(AXPY_IR, "axpy", "frobnicate", cases=1)


def test_changed_signature_is_reported():
    after = AXPY_IR.replace("float %a, i64 %n", "double %a, i64 %n").replace(
        "fmul float %vx, %a", "fmul float %vx, 2.0")
    result = check(AXPY_IR, "axpy", after=after, cases=1)
    assert result.findings[0].kind == "signature"


def test_cli_check_exit_status(tmp_path):
    good = tmp_path / "gather.ll"
    good.write_text(GATHER_IR)
    bad = tmp_path / "bad.ll"
    bad.write_text(AXPY_IR.replace("icmp eq i64 %i.next, %n", "icmp ugt i64 %i.next, %n"))
    src = tmp_path / "axpy.ll"
    src.write_text(AXPY_IR)
    cli = [sys.executable, "-m", "llvmaccel", "check"]
    ok = subprocess.run([*cli, str(good), "--passes", "accel-prefetch", "--cases", "8"],
                        capture_output=True, text=True, timeout=300)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "@gather: OK" in ok.stdout
    found = subprocess.run([*cli, str(src), "--after", str(bad), "--cases", "16"],
                           capture_output=True, text=True, timeout=300)
    assert found.returncode == 1
    assert "mismatch at execute" in found.stdout and "reproduce: llvmaccel check" in found.stdout


WINDOW_IR = """
define void @window(ptr noalias %y, ptr noalias %x, i64 %s, i64 %n, i64 %lo, i64 %hi) {
entry:
  %any = icmp sgt i64 %n, 0
  br i1 %any, label %loop, label %exit
loop:
  %k = phi i64 [ 0, %entry ], [ %k.next, %latch ]
  %j = add nsw i64 %s, %k
  %c.lo = icmp sge i64 %j, %lo
  %c.hi = icmp sle i64 %j, %hi
  %ok = and i1 %c.lo, %c.hi
  br i1 %ok, label %then, label %latch
then:
  %px = getelementptr inbounds float, ptr %x, i64 %k
  %v = load float, ptr %px, align 4
  br label %latch
latch:
  %r = phi float [ %v, %then ], [ 0.0, %loop ]
  %py = getelementptr inbounds float, ptr %y, i64 %k
  store float %r, ptr %py, align 4
  %k.next = add nuw nsw i64 %k, 1
  %done = icmp eq i64 %k.next, %n
  br i1 %done, label %exit, label %loop
exit:
  ret void
}
"""

BYTE_LOOP_IR = """
define void @bytes(ptr noalias %y, ptr noalias %x, i8 %m, i8 %n) {
entry:
  br label %loop
loop:
  %i = phi i8 [ 0, %entry ], [ %i.next, %latch ]
  %in = icmp ult i8 %i, %n
  br i1 %in, label %then, label %latch
then:
  %ix = zext i8 %i to i64
  %px = getelementptr inbounds float, ptr %x, i64 %ix
  %v = load float, ptr %px, align 4
  br label %latch
latch:
  %r = phi float [ %v, %then ], [ 0.0, %loop ]
  %iy = zext i8 %i to i64
  %py = getelementptr inbounds float, ptr %y, i64 %iy
  store float %r, ptr %py, align 4
  %i.next = add i8 %i, 1
  %done = icmp eq i8 %i.next, %m
  br i1 %done, label %exit, label %loop
exit:
  ret void
}
"""


def test_masked_load_split_agrees_at_the_limits():
    """accel-masked-load splits these loops at bounds computed in the loop's
    own type: a window of indices ending at INT64_MAX or starting at
    INT64_MIN, bounds at the limits; an 8-bit loop of up to 256 iterations
    (m = 0: more than an i8 holds, all of them run with the checks)."""
    top, bottom = 2**63 - 1, -(2**63)
    buffers = {"x": ArgSpec(bytes=1024, elem="float"), "y": ArgSpec(bytes=1024, elem="float")}
    window = {**buffers, "s": ArgSpec(values=(top - 40, bottom, bottom + 3, -20)),
              "n": ArgSpec(values=(1, 2, 17, 41)),
              "lo": ArgSpec(values=(bottom, bottom + 1, -3, 0, top - 20, top - 1, top)),
              "hi": ArgSpec(values=(bottom, bottom + 2, -1, 5, top - 30, top - 1, top))}
    result = check(WINDOW_IR, "window", "accel-masked-load", args=window, cases=48)
    assert result.ok, [str(f) for f in result.findings]
    assert result.fired.get("accel-masked-load", 0) > 0 and result.agreed == 48
    # (i8 values as signed ones: -128 is 128, -1 is 255)
    bytes_ = {**buffers, "m": ArgSpec(values=(0, 1, 2, -128, -1)),
              "n": ArgSpec(values=(0, 1, 127, -128, -1))}
    result = check(BYTE_LOOP_IR, "bytes", "accel-masked-load", args=bytes_, cases=32)
    assert result.ok, [str(f) for f in result.findings]
    assert result.fired.get("accel-masked-load", 0) > 0 and result.agreed == 32
