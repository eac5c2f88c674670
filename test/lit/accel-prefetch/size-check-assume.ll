; llvmaccel's frontends state the size of a tensor of symbolic shape as an
; assume bundle "dereferenceable"(ptr, bytes) with bytes computed at entry
; (LLVM takes a non-constant size from release 22 on). A gather from such a
; tensor in a loop with little work is prefetched in a loop that runs when
; the tensor exceeds resident-bytes, an unchanged copy otherwise.

; REQUIRES: llvm-ge-22
; RUN: opt %loadaccel -passes='accel-prefetch<min-work=16;distance=8>' -S %s \
; RUN:   -pass-remarks=accel-prefetch 2>%t.remarks | FileCheck %s
; RUN: FileCheck %s --check-prefix=REMARK --input-file=%t.remarks

; CHECK-LABEL: define float @gather_rows(
; CHECK:         %[[CMP:.*]] = icmp ugt i64 %bytes, 1048576
; CHECK-NEXT:    %accel.prefetch.large = freeze i1 %[[CMP]]
; CHECK-NEXT:    br i1 %accel.prefetch.large, label %loop.ph, label %loop.ph.noprefetch
; CHECK:       loop.noprefetch:
; CHECK-NOT:     @llvm.prefetch
; CHECK:       loop:
; CHECK:         call void @llvm.prefetch.p0(

; REMARK: remark: {{.*}} prefetched x[...] via idx, 8 iterations ahead, 1 line; its object's size, from a dereferenceable assume of bytes bytes, is compared with resident-bytes (1048576) at run time: a copy of the loop without prefetches runs over smaller objects

target triple = "x86_64-unknown-linux-gnu"

; s += x[idx[i]] over x of d0 floats, d0 a symbolic dimension.
define float @gather_rows(ptr noalias %x, ptr noalias %idx, i64 %n, i64 %d0) {
entry:
  %bytes = shl i64 %d0, 2
  call void @llvm.assume(i1 true) [ "dereferenceable"(ptr %x, i64 %bytes) ]
  %guard = icmp sgt i64 %n, 0
  br i1 %guard, label %loop, label %exit

loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %loop ]
  %s = phi float [ 0.0, %entry ], [ %s.next, %loop ]
  %j.addr = getelementptr inbounds i64, ptr %idx, i64 %i
  %j = load i64, ptr %j.addr, align 8
  %v.addr = getelementptr inbounds float, ptr %x, i64 %j
  %v = load float, ptr %v.addr, align 4
  %s.next = fadd float %s, %v
  %i.next = add nuw nsw i64 %i, 1
  %done = icmp eq i64 %i.next, %n
  br i1 %done, label %exit, label %loop

exit:
  %r = phi float [ 0.0, %entry ], [ %s.next, %loop ]
  ret float %r
}

declare void @llvm.assume(i1)
