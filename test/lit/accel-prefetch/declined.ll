; Loops and accesses accel-prefetch leaves alone, each with a missed remark.

; RUN: opt %loadaccel -passes='accel-prefetch' -pass-remarks-missed=accel-prefetch \
; RUN:   -S %s -o %t.ll 2>&1 | FileCheck %s --check-prefix=REMARK
; RUN: FileCheck %s --input-file=%t.ll
; Only the hand-written prefetch remains.
; CHECK-NOT: accel.
; CHECK-NOT: .ahead
; CHECK:     call void @llvm.prefetch.p0(ptr %t.addr, i32 0, i32 3, i32 1)
; CHECK-NOT: accel.
; CHECK-NOT: .ahead
; CHECK-NOT: call void @llvm.prefetch.p0(
; CHECK:     declare void @llvm.prefetch.p0(

; A while loop scanning until a sentinel: no trip count, so the look-ahead
; index cannot be clamped and could read past the sentinel.
; REMARK: remark: {{.*}} loop trip count is unknown: cannot clamp the look-ahead index
define float @sentinel(ptr noalias %T, ptr noalias %B, float %w) {
entry:
  br label %loop

loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %body ]
  %s = phi float [ 0.0, %entry ], [ %s.next, %body ]
  %b.addr = getelementptr inbounds i32, ptr %B, i64 %i
  %b = load i32, ptr %b.addr, align 4
  %end = icmp slt i32 %b, 0
  br i1 %end, label %exit, label %body

body:
  %b.ext = zext i32 %b to i64
  %t.addr = getelementptr inbounds float, ptr %T, i64 %b.ext
  %t = load float, ptr %t.addr, align 4
  %x = fmul float %t, %w
  %x2 = fmul float %x, %x
  %x3 = fmul float %x2, %x
  %a = fmul float %x2, 3.0
  %p1 = fadd float %x3, %a
  %d = fadd float %x, 5.0
  %r = fdiv float 1.0, %d
  %v = fadd float %p1, %r
  %s.next = fadd float %s, %v
  %i.next = add nuw nsw i64 %i, 1
  br label %loop

exit:
  ret float %s
}

; The tight gather s += T[B[i]]: the core already overlaps these misses.
; REMARK: remark: {{.*}} not prefetching T[...] via B: the loop does {{[0-9]+}} units of work per indirect access (needs 16: the default for a generic CPU): out-of-order execution already overlaps these misses
define float @tight(ptr noalias %T, ptr noalias %B, i64 %n) {
entry:
  %guard = icmp sgt i64 %n, 0
  br i1 %guard, label %ph, label %exit

ph:
  br label %loop

loop:
  %i = phi i64 [ 0, %ph ], [ %i.next, %loop ]
  %s = phi float [ 0.0, %ph ], [ %s.next, %loop ]
  %b.addr = getelementptr inbounds i32, ptr %B, i64 %i
  %b = load i32, ptr %b.addr, align 4
  %b.ext = sext i32 %b to i64
  %t.addr = getelementptr inbounds float, ptr %T, i64 %b.ext
  %t = load float, ptr %t.addr, align 4
  %s.next = fadd float %s, %t
  %i.next = add nuw nsw i64 %i, 1
  %done = icmp eq i64 %i.next, %n
  br i1 %done, label %exit, label %loop

exit:
  %res = phi float [ 0.0, %entry ], [ %s.next, %loop ]
  ret float %res
}

; Volatile loads are never prefetched, nor re-loaded ahead.
; REMARK: remark: {{.*}} volatile and atomic accesses are not prefetched
; REMARK: remark: {{.*}} not prefetching T: cannot compute the address ahead: the address depends on a volatile or atomic load
define float @volatile(ptr noalias %T, ptr noalias %B, i64 %n, float %w) {
entry:
  %guard = icmp sgt i64 %n, 0
  br i1 %guard, label %ph, label %exit

ph:
  br label %loop

loop:
  %i = phi i64 [ 0, %ph ], [ %i.next, %loop ]
  %s = phi float [ 0.0, %ph ], [ %s.next, %loop ]
  %b.addr = getelementptr inbounds i32, ptr %B, i64 %i
  %b = load volatile i32, ptr %b.addr, align 4
  %b.ext = sext i32 %b to i64
  %t.addr = getelementptr inbounds float, ptr %T, i64 %b.ext
  %t = load float, ptr %t.addr, align 4
  %x = fmul float %t, %w
  %x2 = fmul float %x, %x
  %x3 = fmul float %x2, %x
  %a = fmul float %x2, 3.0
  %p1 = fadd float %x3, %a
  %d = fadd float %x, 5.0
  %r = fdiv float 1.0, %d
  %v = fadd float %p1, %r
  %s.next = fadd float %s, %v
  %i.next = add nuw nsw i64 %i, 1
  %done = icmp eq i64 %i.next, %n
  br i1 %done, label %exit, label %loop

exit:
  %res = phi float [ 0.0, %entry ], [ %s.next, %loop ]
  ret float %res
}

; A loop the programmer already prefetched by hand.
; REMARK: remark: {{.*}} loop already contains software prefetches
define float @hand_prefetched(ptr noalias %T, ptr noalias %B, i64 %n, float %w) {
entry:
  %guard = icmp sgt i64 %n, 0
  br i1 %guard, label %ph, label %exit

ph:
  br label %loop

loop:
  %i = phi i64 [ 0, %ph ], [ %i.next, %loop ]
  %s = phi float [ 0.0, %ph ], [ %s.next, %loop ]
  %b.addr = getelementptr inbounds i32, ptr %B, i64 %i
  %b = load i32, ptr %b.addr, align 4
  %b.ext = sext i32 %b to i64
  %t.addr = getelementptr inbounds float, ptr %T, i64 %b.ext
  call void @llvm.prefetch.p0(ptr %t.addr, i32 0, i32 3, i32 1)
  %t = load float, ptr %t.addr, align 4
  %x = fmul float %t, %w
  %x2 = fmul float %x, %x
  %x3 = fmul float %x2, %x
  %a = fmul float %x2, 3.0
  %p1 = fadd float %x3, %a
  %d = fadd float %x, 5.0
  %r = fdiv float 1.0, %d
  %v = fadd float %p1, %r
  %s.next = fadd float %s, %v
  %i.next = add nuw nsw i64 %i, 1
  %done = icmp eq i64 %i.next, %n
  br i1 %done, label %exit, label %loop

exit:
  %res = phi float [ 0.0, %entry ], [ %s.next, %loop ]
  ret float %res
}

; The index is loaded only under a condition: B[i + d] might be one the loop
; never reads.
; REMARK: remark: {{.*}} not prefetching T: cannot compute the address ahead: the index load from B is not executed on every iteration
define float @conditional_index(ptr noalias %T, ptr noalias %B, ptr noalias %M, i64 %n, float %w) {
entry:
  %guard = icmp sgt i64 %n, 0
  br i1 %guard, label %ph, label %exit

ph:
  br label %loop

loop:
  %i = phi i64 [ 0, %ph ], [ %i.next, %latch ]
  %s = phi float [ 0.0, %ph ], [ %s.next, %latch ]
  %m.addr = getelementptr inbounds i8, ptr %M, i64 %i
  %m = load i8, ptr %m.addr, align 1
  %take = icmp ne i8 %m, 0
  br i1 %take, label %then, label %latch

then:
  %b.addr = getelementptr inbounds i32, ptr %B, i64 %i
  %b = load i32, ptr %b.addr, align 4
  %b.ext = sext i32 %b to i64
  %t.addr = getelementptr inbounds float, ptr %T, i64 %b.ext
  %t = load float, ptr %t.addr, align 4
  %x = fmul float %t, %w
  %x2 = fmul float %x, %x
  %x3 = fmul float %x2, %x
  %a = fmul float %x2, 3.0
  %p1 = fadd float %x3, %a
  %d = fadd float %x, 5.0
  %r = fdiv float 1.0, %d
  %v = fadd float %p1, %r
  %add = fadd float %s, %v
  br label %latch

latch:
  %s.next = phi float [ %s, %loop ], [ %add, %then ]
  %i.next = add nuw nsw i64 %i, 1
  %done = icmp eq i64 %i.next, %n
  br i1 %done, label %exit, label %loop

exit:
  %res = phi float [ 0.0, %entry ], [ %s.next, %latch ]
  ret float %res
}

; Pointer chasing: the next address is a loop-carried value.
; REMARK: remark: {{.*}} not prefetching p: cannot compute the address ahead: the address depends on a loop-carried value
define i64 @chase(ptr %head, i64 %n) {
entry:
  %guard = icmp sgt i64 %n, 0
  br i1 %guard, label %ph, label %exit

ph:
  br label %loop

loop:
  %i = phi i64 [ 0, %ph ], [ %i.next, %loop ]
  %p = phi ptr [ %head, %ph ], [ %next, %loop ]
  %next = load ptr, ptr %p, align 8
  %i.next = add nuw nsw i64 %i, 1
  %done = icmp eq i64 %i.next, %n
  br i1 %done, label %exit, label %loop

exit:
  %res = phi i64 [ 0, %entry ], [ %i.next, %loop ]
  ret i64 %res
}

declare void @llvm.prefetch.p0(ptr, i32, i32, i32)

; An acquire load in the loop orders later reads after another thread's
; writes: reading B ahead across it could race, so the loop is left alone.
; REMARK: remark: {{.*}} volatile and atomic accesses are not prefetched
; REMARK: remark: {{.*}} loop synchronizes with other threads (atomic, volatile or fence): look-ahead loads could race
define float @acquire(ptr noalias %T, ptr noalias %B, ptr %flag, i64 %n, float %w) {
entry:
  %guard = icmp sgt i64 %n, 0
  br i1 %guard, label %ph, label %exit

ph:
  br label %loop

loop:
  %i = phi i64 [ 0, %ph ], [ %i.next, %loop ]
  %s = phi float [ 0.0, %ph ], [ %s.next, %loop ]
  %f = load atomic i32, ptr %flag acquire, align 4
  %b.addr = getelementptr inbounds i32, ptr %B, i64 %i
  %b = load i32, ptr %b.addr, align 4
  %b.ext = sext i32 %b to i64
  %t.addr = getelementptr inbounds float, ptr %T, i64 %b.ext
  %t = load float, ptr %t.addr, align 4
  %ff = sitofp i32 %f to float
  %x = fmul float %t, %w
  %x2 = fmul float %x, %ff
  %x3 = fmul float %x2, %x
  %a = fmul float %x2, 3.0
  %p1 = fadd float %x3, %a
  %d = fadd float %x, 5.0
  %r = fdiv float 1.0, %d
  %v = fadd float %p1, %r
  %s.next = fadd float %s, %v
  %i.next = add nuw nsw i64 %i, 1
  %done = icmp eq i64 %i.next, %n
  br i1 %done, label %exit, label %loop

exit:
  %res = phi float [ 0.0, %entry ], [ %s.next, %loop ]
  ret float %res
}

; A gather from an object known to be small (a global, an alloca or a
; dereferenceable(N) argument of at most 1 MiB) hits in cache: prefetching
; it would only add work.
; REMARK: remark: {{.*}} not prefetching T[...] via B: the indexed object is only 4096 bytes: it stays in cache
; REMARK: remark: {{.*}} not prefetching small.table[...] via B: the indexed object is only 65536 bytes: it stays in cache
@small.table = internal global [16384 x float] zeroinitializer

define float @small_argument(ptr noalias dereferenceable(4096) %T, ptr noalias %B, i64 %n, float %w) {
entry:
  %guard = icmp sgt i64 %n, 0
  br i1 %guard, label %ph, label %exit

ph:
  br label %loop

loop:
  %i = phi i64 [ 0, %ph ], [ %i.next, %loop ]
  %s = phi float [ 0.0, %ph ], [ %s.next, %loop ]
  %b.addr = getelementptr inbounds i32, ptr %B, i64 %i
  %b = load i32, ptr %b.addr, align 4
  %b.ext = sext i32 %b to i64
  %t.addr = getelementptr inbounds float, ptr %T, i64 %b.ext
  %t = load float, ptr %t.addr, align 4
  %x = fmul float %t, %w
  %x2 = fmul float %x, %x
  %x3 = fmul float %x2, %x
  %a = fmul float %x2, 3.0
  %p1 = fadd float %x3, %a
  %d = fadd float %x, 5.0
  %r = fdiv float 1.0, %d
  %v = fadd float %p1, %r
  %s.next = fadd float %s, %v
  %i.next = add nuw nsw i64 %i, 1
  %done = icmp eq i64 %i.next, %n
  br i1 %done, label %exit, label %loop

exit:
  %res = phi float [ 0.0, %entry ], [ %s.next, %loop ]
  ret float %res
}

define float @small_global(ptr noalias %B, i64 %n, float %w) {
entry:
  %guard = icmp sgt i64 %n, 0
  br i1 %guard, label %ph, label %exit

ph:
  br label %loop

loop:
  %i = phi i64 [ 0, %ph ], [ %i.next, %loop ]
  %s = phi float [ 0.0, %ph ], [ %s.next, %loop ]
  %b.addr = getelementptr inbounds i32, ptr %B, i64 %i
  %b = load i32, ptr %b.addr, align 4
  %b.ext = sext i32 %b to i64
  %t.addr = getelementptr inbounds float, ptr @small.table, i64 %b.ext
  %t = load float, ptr %t.addr, align 4
  %x = fmul float %t, %w
  %x2 = fmul float %x, %x
  %x3 = fmul float %x2, %x
  %a = fmul float %x2, 3.0
  %p1 = fadd float %x3, %a
  %d = fadd float %x, 5.0
  %r = fdiv float 1.0, %d
  %v = fadd float %p1, %r
  %s.next = fadd float %s, %v
  %i.next = add nuw nsw i64 %i, 1
  %done = icmp eq i64 %i.next, %n
  br i1 %done, label %exit, label %loop

exit:
  %res = phi float [ 0.0, %entry ], [ %s.next, %loop ]
  ret float %res
}

; The same for a strided walk: the rows of a 64 KiB matrix, 4 KiB apart
; (a stride the hardware prefetcher does not follow across pages), stay in
; cache.
; REMARK: remark: {{.*}} not prefetching M: the object is only 65536 bytes: it stays in cache
define float @small_strided(ptr noalias dereferenceable(65536) %M) {
entry:
  br label %loop

loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %loop ]
  %s = phi float [ 0.0, %entry ], [ %s.next, %loop ]
  %row = shl nuw nsw i64 %i, 12
  %m.addr = getelementptr inbounds i8, ptr %M, i64 %row
  %m = load float, ptr %m.addr, align 4
  %s.next = fadd float %s, %m
  %i.next = add nuw nsw i64 %i, 1
  %done = icmp eq i64 %i.next, 16
  br i1 %done, label %exit, label %loop

exit:
  ret float %s.next
}
