"""Shared fixtures for llvmaccel's Python tests."""

from __future__ import annotations

import pytest

import llvmaccel

# y[i] = a * x[i] + y[i], a counted loop.
AXPY_IR = """
define void @axpy(ptr noalias %y, ptr noalias %x, float %a, i64 %n) {
entry:
  %empty = icmp eq i64 %n, 0
  br i1 %empty, label %exit, label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %loop ]
  %px = getelementptr inbounds float, ptr %x, i64 %i
  %py = getelementptr inbounds float, ptr %y, i64 %i
  %vx = load float, ptr %px
  %vy = load float, ptr %py
  %m = fmul float %vx, %a
  %s = fadd float %m, %vy
  store float %s, ptr %py
  %i.next = add nuw i64 %i, 1
  %done = icmp eq i64 %i.next, %n
  br i1 %done, label %exit, label %loop
exit:
  ret void
}
"""

# s = sum of w[i] * T[B[i]] over i < n: an indirect (gather) access.
GATHER_IR = """
define double @gather(ptr noalias %T, ptr noalias %B, ptr noalias %w, i64 %n) {
entry:
  %empty = icmp eq i64 %n, 0
  br i1 %empty, label %exit, label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %loop ]
  %s = phi double [ 0.0, %entry ], [ %s.next, %loop ]
  %pb = getelementptr inbounds i64, ptr %B, i64 %i
  %b = load i64, ptr %pb
  %pt = getelementptr inbounds double, ptr %T, i64 %b
  %t = load double, ptr %pt
  %pw = getelementptr inbounds double, ptr %w, i64 %i
  %wv = load double, ptr %pw
  %m = fmul double %t, %wv
  %s.next = fadd double %s, %m
  %i.next = add nuw i64 %i, 1
  %done = icmp eq i64 %i.next, %n
  br i1 %done, label %exit, label %loop
exit:
  %r = phi double [ 0.0, %entry ], [ %s.next, %loop ]
  ret double %r
}
"""


@pytest.fixture
def axpy_module() -> llvmaccel.Module:
    return llvmaccel.parse_ir(AXPY_IR, "axpy.ll")


@pytest.fixture
def gather_module() -> llvmaccel.Module:
    return llvmaccel.parse_ir(GATHER_IR, "gather.ll")


def pytest_collection_modifyitems(config, items):
    """Tests marked ``gpu`` run only where $LLVMACCEL_GPU names a GPU runtime;
    tests marked ``slow`` only with LLVMACCEL_SLOW=1 or ``-m slow``."""
    import os

    gpu = os.environ.get("LLVMACCEL_GPU", "")
    skip = pytest.mark.skip(reason="needs a GPU runtime (set LLVMACCEL_GPU=cuda|rocm|level-zero)")
    slow_ok = os.environ.get("LLVMACCEL_SLOW") == "1" or "slow" in (config.option.markexpr or "")
    slow = pytest.mark.skip(reason="slow: set LLVMACCEL_SLOW=1 or run pytest -m slow")
    for item in items:
        if "slow" in item.keywords and not slow_ok:
            item.add_marker(slow)
        marker = item.get_closest_marker("gpu")
        if marker is None:
            continue
        wanted = marker.args[0] if marker.args else None
        if not gpu or (wanted and wanted != gpu):
            item.add_marker(skip)
