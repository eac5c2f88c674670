; The work gate comes from the CPU: an iteration must carry ROB / in-flight
; units of work per indirect access (the reorder buffer from LLVM's
; scheduling model of the function's target-cpu), or out-of-order execution
; already keeps as many of its misses in flight as the core can track.
; The same 14-unit gather loop, `s += f(T[idx[i]])`:
;  - @on_skylake: a 224-entry buffer over 16 accesses, 14 units: prefetched.
;  - @on_rocketlake: 352 entries, 22 units: declined, the remark says why.
;  - @on_generic: x86-64's model stands for no machine: the default 16.
; `min-work=N` overrides the target (@on_rocketlake prefetched with 0).

; REQUIRES: x86-registered-target
; RUN: opt %loadaccel -passes='accel-prefetch' -pass-remarks=accel-prefetch \
; RUN:   -pass-remarks-missed=accel-prefetch -S %s -o - 2>%t.remarks | FileCheck %s
; RUN: FileCheck %s --check-prefix=REMARK --input-file=%t.remarks
; RUN: opt %loadaccel -passes='accel-prefetch<min-work=0>' -S %s \
; RUN:   | FileCheck %s --check-prefix=GIVEN

; CHECK-LABEL: define float @on_skylake(
; CHECK:         call void @llvm.prefetch.p0(
; CHECK-LABEL: define float @on_rocketlake(
; CHECK-NOT:     call void @llvm.prefetch.p0(
; CHECK-LABEL: define float @on_generic(
; CHECK-NOT:     call void @llvm.prefetch.p0(

; REMARK: remark: {{.*}} prefetched T[...] via idx, 64 iterations ahead, 1 line
; REMARK-NEXT: remark: {{.*}} not prefetching T[...] via idx: the loop does 14 units of work per indirect access (needs 22: the 352-micro-op reorder buffer of rocketlake over 16 accesses in flight): out-of-order execution already overlaps these misses
; REMARK-NEXT: remark: {{.*}} not prefetching T[...] via idx: the loop does 14 units of work per indirect access (needs 16: the default for a generic CPU): out-of-order execution already overlaps these misses

; GIVEN-LABEL: define float @on_skylake(
; GIVEN:         call void @llvm.prefetch.p0(
; GIVEN-LABEL: define float @on_rocketlake(
; GIVEN:         call void @llvm.prefetch.p0(
; GIVEN-LABEL: define float @on_generic(
; GIVEN:         call void @llvm.prefetch.p0(

target triple = "x86_64-unknown-linux-gnu"

define float @on_skylake(ptr noalias %T, ptr noalias %idx, i64 %n, float %a) #0 {
entry:
  %guard = icmp sgt i64 %n, 0
  br i1 %guard, label %loop, label %exit

loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %loop ]
  %s = phi float [ 0.0, %entry ], [ %s.next, %loop ]
  %idx.addr = getelementptr inbounds i32, ptr %idx, i64 %i
  %k = load i32, ptr %idx.addr, align 4
  %k64 = sext i32 %k to i64
  %t.addr = getelementptr inbounds float, ptr %T, i64 %k64
  %t = load float, ptr %t.addr, align 4
  %m1 = fmul float %t, %a
  %m2 = fadd float %m1, %a
  %m3 = fmul float %m2, %m2
  %m4 = fadd float %m3, %t
  %m5 = fmul float %m4, %a
  %m6 = fadd float %m5, %m1
  %m7 = fmul float %m6, %m3
  %m8 = fadd float %m7, %m2
  %s.next = fadd float %s, %m8
  %i.next = add nuw nsw i64 %i, 1
  %done = icmp eq i64 %i.next, %n
  br i1 %done, label %exit, label %loop

exit:
  %r = phi float [ 0.0, %entry ], [ %s.next, %loop ]
  ret float %r
}

define float @on_rocketlake(ptr noalias %T, ptr noalias %idx, i64 %n, float %a) #1 {
entry:
  %guard = icmp sgt i64 %n, 0
  br i1 %guard, label %loop, label %exit

loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %loop ]
  %s = phi float [ 0.0, %entry ], [ %s.next, %loop ]
  %idx.addr = getelementptr inbounds i32, ptr %idx, i64 %i
  %k = load i32, ptr %idx.addr, align 4
  %k64 = sext i32 %k to i64
  %t.addr = getelementptr inbounds float, ptr %T, i64 %k64
  %t = load float, ptr %t.addr, align 4
  %m1 = fmul float %t, %a
  %m2 = fadd float %m1, %a
  %m3 = fmul float %m2, %m2
  %m4 = fadd float %m3, %t
  %m5 = fmul float %m4, %a
  %m6 = fadd float %m5, %m1
  %m7 = fmul float %m6, %m3
  %m8 = fadd float %m7, %m2
  %s.next = fadd float %s, %m8
  %i.next = add nuw nsw i64 %i, 1
  %done = icmp eq i64 %i.next, %n
  br i1 %done, label %exit, label %loop

exit:
  %r = phi float [ 0.0, %entry ], [ %s.next, %loop ]
  ret float %r
}

define float @on_generic(ptr noalias %T, ptr noalias %idx, i64 %n, float %a) #2 {
entry:
  %guard = icmp sgt i64 %n, 0
  br i1 %guard, label %loop, label %exit

loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %loop ]
  %s = phi float [ 0.0, %entry ], [ %s.next, %loop ]
  %idx.addr = getelementptr inbounds i32, ptr %idx, i64 %i
  %k = load i32, ptr %idx.addr, align 4
  %k64 = sext i32 %k to i64
  %t.addr = getelementptr inbounds float, ptr %T, i64 %k64
  %t = load float, ptr %t.addr, align 4
  %m1 = fmul float %t, %a
  %m2 = fadd float %m1, %a
  %m3 = fmul float %m2, %m2
  %m4 = fadd float %m3, %t
  %m5 = fmul float %m4, %a
  %m6 = fadd float %m5, %m1
  %m7 = fmul float %m6, %m3
  %m8 = fadd float %m7, %m2
  %s.next = fadd float %s, %m8
  %i.next = add nuw nsw i64 %i, 1
  %done = icmp eq i64 %i.next, %n
  br i1 %done, label %exit, label %loop

exit:
  %r = phi float [ 0.0, %entry ], [ %s.next, %loop ]
  ret float %r
}

attributes #0 = { "target-cpu"="skylake" }
attributes #1 = { "target-cpu"="rocketlake" }
attributes #2 = { "target-cpu"="x86-64" }
