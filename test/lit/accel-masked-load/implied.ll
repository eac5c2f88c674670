; Checks that are always true where they are evaluated are removed outright:
; implied by the loop's bounds, by llvm.assume, by !range on the index load,
; or by a dominating condition.

; RUN: opt %loadaccel -passes=accel-masked-load -pass-remarks=accel-masked-load \
; RUN:   -S %s 2>%t.remarks | FileCheck %s
; RUN: FileCheck %s --check-prefix=REMARK --input-file=%t.remarks

; REMARK: remark: {{.*}}range check i slt n is always true here (implied by the loop bounds, assumptions or dominating conditions): removed
; REMARK: remark: {{.*}}range check j ult n is always true here
; REMARK: remark: {{.*}}range check j sge 0 is always true here
; REMARK: remark: {{.*}}range check j slt n is always true here

; for (i = 0; i < n; i++) if (i < n) y[i] = x[i];
; CHECK-LABEL: define void @loop_bound(
; CHECK:       loop:
; CHECK-NOT:     icmp slt i64 %i, %n
; CHECK:         br label %then
define void @loop_bound(ptr noalias %y, ptr noalias %x, i64 %n) {
entry:
  %nonempty = icmp sgt i64 %n, 0
  br i1 %nonempty, label %loop, label %exit

loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %latch ]
  %in = icmp slt i64 %i, %n
  br i1 %in, label %then, label %latch

then:
  %px = getelementptr inbounds float, ptr %x, i64 %i
  %v = load float, ptr %px, align 4
  %py = getelementptr inbounds float, ptr %y, i64 %i
  store float %v, ptr %py, align 4
  br label %latch

latch:
  %i.next = add nuw nsw i64 %i, 1
  %more = icmp slt i64 %i.next, %n
  br i1 %more, label %loop, label %exit

exit:
  ret void
}

; The index array holds values below 1024 (!range) and n >= 1024 (assume).
; CHECK-LABEL: define void @range_and_assume(
; CHECK:         br label %then
define void @range_and_assume(ptr noalias %y, ptr noalias %x, ptr noalias %idx, i64 %n, i64 %m) {
entry:
  %big = icmp uge i64 %n, 1024
  call void @llvm.assume(i1 %big)
  br label %loop

loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %latch ]
  %pi = getelementptr inbounds i64, ptr %idx, i64 %i
  %j = load i64, ptr %pi, align 8, !range !0
  %in = icmp ult i64 %j, %n
  br i1 %in, label %then, label %latch

then:
  %px = getelementptr inbounds float, ptr %x, i64 %j
  %v = load float, ptr %px, align 4
  br label %latch

latch:
  %r = phi float [ %v, %then ], [ 0.0, %loop ]
  %py = getelementptr inbounds float, ptr %y, i64 %i
  store float %r, ptr %py, align 4
  %i.next = add nuw nsw i64 %i, 1
  %done = icmp eq i64 %i.next, %m
  br i1 %done, label %exit, label %loop

exit:
  ret void
}

; A dominating condition: inside `if (j < n)`, a second `j < n` guard (and
; j >= 0 from the index being a masked byte) is decided.
; CHECK-LABEL: define float @dominated(
; CHECK:       inner:
; CHECK-NEXT:    br label %then
define float @dominated(ptr noalias %x, ptr noalias %idx, i32 %n, i64 %m) {
entry:
  br label %loop

loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %latch ]
  %s = phi float [ 0.0, %entry ], [ %s.next, %latch ]
  %pi = getelementptr inbounds i32, ptr %idx, i64 %i
  %raw = load i32, ptr %pi, align 4
  %j = and i32 %raw, 255
  %outer = icmp slt i32 %j, %n
  br i1 %outer, label %inner, label %latch

inner:
  %lo = icmp sge i32 %j, 0
  %hi = icmp slt i32 %j, %n
  %ok = and i1 %lo, %hi
  br i1 %ok, label %then, label %latch

then:
  %jx = zext i32 %j to i64
  %px = getelementptr inbounds float, ptr %x, i64 %jx
  %v = load float, ptr %px, align 4
  %add = fadd float %s, %v
  br label %latch

latch:
  %s.next = phi float [ %add, %then ], [ %s, %inner ], [ %s, %loop ]
  %i.next = add nuw nsw i64 %i, 1
  %done = icmp eq i64 %i.next, %m
  br i1 %done, label %exit, label %loop

exit:
  ret float %s.next
}

declare void @llvm.assume(i1)

!0 = !{i64 0, i64 1024}
