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

; A loop the pass declines (a unit-stride stream, which the hardware
; prefetcher follows) leaves exactly as it came: the preheader given to it
; for the analysis is folded back, so the pass leaves no extra block or jump
; behind. The same holds for an inner loop, whose preheader would belong to
; the outer loop (verify<loops> and verify<domtree> check both analyses).

; RUN: opt %loadaccel -passes='accel-prefetch,verify<loops>,verify<domtree>' \
; RUN:   -S %s | FileCheck %s --check-prefix=DECLINED

; DECLINED-LABEL: define float @stream(
; DECLINED:       entry:
; DECLINED-NEXT:    %guard = icmp sgt i64 %n, 0
; DECLINED-NEXT:    br i1 %guard, label %loop, label %exit
; DECLINED-EMPTY:
; DECLINED-NEXT:  loop:
; DECLINED-NEXT:    %i = phi i64 {{.*}}[ 0, %entry ]
; DECLINED-NOT:   preheader
; DECLINED-LABEL: define void @rows(
; DECLINED:       outer:
; DECLINED:         br i1 %inner.guard, label %inner, label %outer.latch
; DECLINED-EMPTY:
; DECLINED-NEXT:  inner:
; DECLINED-NEXT:    %j = phi i64 {{.*}}[ 0, %outer ]
; DECLINED-NOT:   preheader
; DECLINED-LABEL: define float @two_ways_in(
; DECLINED:       left:
; DECLINED-NEXT:    br label %loop
; DECLINED:       right:
; DECLINED-NEXT:    br label %loop
; DECLINED-EMPTY:
; DECLINED-NEXT:  loop:
; DECLINED-NOT:   preheader

define float @stream(ptr noalias %A, i64 %n) {
entry:
  %guard = icmp sgt i64 %n, 0
  br i1 %guard, label %loop, label %exit

loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %loop ]
  %s = phi float [ 0.0, %entry ], [ %s.next, %loop ]
  %a.addr = getelementptr inbounds float, ptr %A, i64 %i
  %a = load float, ptr %a.addr, align 4
  %s.next = fadd float %s, %a
  %i.next = add nuw nsw i64 %i, 1
  %done = icmp eq i64 %i.next, %n
  br i1 %done, label %exit, label %loop

exit:
  %res = phi float [ 0.0, %entry ], [ %s.next, %loop ]
  ret float %res
}

define void @rows(ptr noalias %A, ptr noalias %Out, i64 %m, i64 %n) {
entry:
  br label %outer

outer:
  %r = phi i64 [ 0, %entry ], [ %r.next, %outer.latch ]
  %row = mul nsw i64 %r, %n
  %inner.guard = icmp sgt i64 %n, 0
  br i1 %inner.guard, label %inner, label %outer.latch

inner:
  %j = phi i64 [ 0, %outer ], [ %j.next, %inner ]
  %s = phi float [ 0.0, %outer ], [ %s.next, %inner ]
  %idx = add nsw i64 %row, %j
  %a.addr = getelementptr inbounds float, ptr %A, i64 %idx
  %a = load float, ptr %a.addr, align 4
  %s.next = fadd float %s, %a
  %j.next = add nuw nsw i64 %j, 1
  %inner.done = icmp eq i64 %j.next, %n
  br i1 %inner.done, label %outer.latch, label %inner

outer.latch:
  %sum = phi float [ 0.0, %outer ], [ %s.next, %inner ]
  %o.addr = getelementptr inbounds float, ptr %Out, i64 %r
  store float %sum, ptr %o.addr, align 4
  %r.next = add nuw nsw i64 %r, 1
  %outer.done = icmp eq i64 %r.next, %m
  br i1 %outer.done, label %exit, label %outer

exit:
  ret void
}

; Two ways into the loop: the preheader the pass makes merges them with phis
; of its own, and is folded back all the same.
define float @two_ways_in(ptr noalias %A, i64 %n, i1 %c) {
entry:
  br i1 %c, label %left, label %right

left:
  br label %loop

right:
  br label %loop

loop:
  %i = phi i64 [ 0, %left ], [ 1, %right ], [ %i.next, %loop ]
  %s = phi float [ 0.0, %left ], [ 1.0, %right ], [ %s.next, %loop ]
  %a.addr = getelementptr inbounds float, ptr %A, i64 %i
  %a = load float, ptr %a.addr, align 4
  %s.next = fadd float %s, %a
  %i.next = add nuw nsw i64 %i, 1
  %done = icmp uge i64 %i.next, %n
  br i1 %done, label %exit, label %loop

exit:
  ret float %s.next
}
