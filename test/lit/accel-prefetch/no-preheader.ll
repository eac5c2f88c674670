; At OptimizerLast, SimplifyCFG may have folded a loop's preheader into the
; block before it. accel-prefetch gives the loop a preheader back (where the
; trip count is computed) and prefetches as usual.

; RUN: opt %loadaccel -passes='accel-prefetch<distance=16>' -S %s | FileCheck %s

; CHECK-LABEL: define float @poly_gather(
; CHECK:       entry:
; CHECK-NEXT:    %guard = icmp sgt i64 %n, 0
; CHECK-NEXT:    br i1 %guard, label %loop.preheader, label %exit
; CHECK:       loop.preheader:
; CHECK:         %[[BTC:.*]] = add {{.*}}i64 %n, -1
; CHECK-NEXT:    br label %loop
; CHECK:       loop:
; CHECK:         %accel.left = sub nuw i64 %[[BTC]], %i
; CHECK:         %b.ahead = load i32, ptr
; CHECK:         call void @llvm.prefetch.p0(

define float @poly_gather(ptr noalias %T, ptr noalias %B, i64 %n, float %w) {
entry:
  %guard = icmp sgt i64 %n, 0
  br i1 %guard, label %loop, label %exit

loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %loop ]
  %s = phi float [ 0.0, %entry ], [ %s.next, %loop ]
  %b.addr = getelementptr inbounds i32, ptr %B, i64 %i
  %b = load i32, ptr %b.addr, align 4
  %b.ext = sext i32 %b to i64
  %t.addr = getelementptr inbounds float, ptr %T, i64 %b.ext
  %t = load float, ptr %t.addr, align 4
  %x = fmul float %t, %w
  %x2 = fmul float %x, %x
  %x3 = fmul float %x2, %x
  %a = fmul float %x2, 3.0
  %c = fmul float %x, 2.0
  %p1 = fadd float %x3, %a
  %p2 = fadd float %p1, %c
  %d = fadd float %x, 5.0
  %r = fdiv float 1.0, %d
  %v = fadd float %p2, %r
  %s.next = fadd float %s, %v
  %i.next = add nuw nsw i64 %i, 1
  %done = icmp eq i64 %i.next, %n
  br i1 %done, label %exit, label %loop

exit:
  %res = phi float [ 0.0, %entry ], [ %s.next, %loop ]
  ret float %res
}
