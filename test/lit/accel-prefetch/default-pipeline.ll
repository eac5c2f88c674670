; accel-prefetch joins default<O2>/<O3> at OptimizerLast, after unrolling and
; vectorization; -llvmaccel-auto=none leaves it out.

; RUN: opt %loadaccel -passes='default<O3>' -S %s | FileCheck %s
; RUN: opt %loadaccel -passes='default<O2>' -S %s | FileCheck %s
; RUN: opt %loadaccel -passes='default<O3>' -llvmaccel-auto=none -S %s \
; RUN:   | FileCheck %s --check-prefix=NONE
; RUN: opt %loadaccel -passes='default<O1>' -S %s | FileCheck %s --check-prefix=NONE

; CHECK-LABEL: define {{.*}}void @bag(
; CHECK:         load i32, ptr
; CHECK:         call void @llvm.prefetch.p0(ptr %{{.*}}, i32 0, i32 3, i32 1)
; NONE-NOT: call void @llvm.prefetch

target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"
target triple = "x86_64-unknown-linux-gnu"

define void @bag(ptr noalias %T, ptr noalias %idx, i64 %n, ptr noalias %out) {
entry:
  br label %outer.cond

outer.cond:
  %j = phi i64 [ 0, %entry ], [ %j.next, %outer.latch ]
  %more = icmp slt i64 %j, %n
  br i1 %more, label %outer, label %exit

outer:
  %idx.addr = getelementptr inbounds i32, ptr %idx, i64 %j
  %id = load i32, ptr %idx.addr, align 4
  %id.ext = sext i32 %id to i64
  %row = getelementptr inbounds [64 x float], ptr %T, i64 %id.ext
  br label %inner.cond

inner.cond:
  %k = phi i64 [ 0, %outer ], [ %k.next, %inner ]
  %kmore = icmp slt i64 %k, 64
  br i1 %kmore, label %inner, label %outer.latch

inner:
  %x.addr = getelementptr inbounds float, ptr %row, i64 %k
  %x = load float, ptr %x.addr, align 4
  %o.addr = getelementptr inbounds float, ptr %out, i64 %k
  %o = load float, ptr %o.addr, align 4
  %sum = fadd float %o, %x
  store float %sum, ptr %o.addr, align 4
  %k.next = add nuw nsw i64 %k, 1
  br label %inner.cond

outer.latch:
  %j.next = add nuw nsw i64 %j, 1
  br label %outer.cond

exit:
  ret void
}
