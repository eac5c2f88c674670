; An in-order core overlaps no misses at all: the work gate is 0 there, and
; an out-of-order one's follows its reorder buffer. The 14-unit gather loop
; of work-gate.ll:
;  - @on_cortex_a55 (in order): prefetched.
;  - @on_neoverse_v2 (320 entries over 16 accesses, 20 units): declined.

; REQUIRES: aarch64-registered-target
; RUN: opt %loadaccel -passes='accel-prefetch' -pass-remarks=accel-prefetch \
; RUN:   -pass-remarks-missed=accel-prefetch -S %s -o - 2>%t.remarks | FileCheck %s
; RUN: FileCheck %s --check-prefix=REMARK --input-file=%t.remarks

; CHECK-LABEL: define float @on_cortex_a55(
; CHECK:         call void @llvm.prefetch.p0(
; CHECK-LABEL: define float @on_neoverse_v2(
; CHECK-NOT:     call void @llvm.prefetch.p0(

; REMARK: remark: {{.*}} prefetched T[...] via idx, {{[0-9]+}} iterations ahead, 1 line
; REMARK-NEXT: remark: {{.*}} not prefetching T[...] via idx: the loop does {{[0-9]+}} units of work per indirect access (needs 20: the 320-micro-op reorder buffer of neoverse-v2 over 16 accesses in flight)

target triple = "aarch64-unknown-linux-gnu"

define float @on_cortex_a55(ptr noalias %T, ptr noalias %idx, i64 %n, float %a) #0 {
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

define float @on_neoverse_v2(ptr noalias %T, ptr noalias %idx, i64 %n, float %a) #1 {
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

attributes #0 = { "target-cpu"="cortex-a55" }
attributes #1 = { "target-cpu"="neoverse-v2" }
