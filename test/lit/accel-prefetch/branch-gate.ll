; A loaded value that decides a branch exempts its access from the work
; gate: each misprediction of a branch on random data discards the
; out-of-order window, so however little work an iteration does, the window
; no longer overlaps the next iterations' misses.
;  - @probe_branch: `if (table[h].key == k) sum += table[h].payload`, a
;    branch on the probed key: prefetched, and the remark says why.
;  - @probe_select: the same lookup written as a select (what the
;    vectorizer makes of it): no branch, declined by the work gate.
; (no-size-check: the shift bounds the table's index range, and the copy of
; the loop for small tables is size-check.ll's story.)

; RUN: opt %loadaccel -passes='accel-prefetch<no-size-check>' -pass-remarks=accel-prefetch \
; RUN:   -pass-remarks-missed=accel-prefetch -S %s -o - 2>%t.remarks | FileCheck %s
; RUN: FileCheck %s --check-prefix=REMARK --input-file=%t.remarks

; CHECK-LABEL: define i64 @probe_branch(
; CHECK:         call void @llvm.prefetch.p0(
; CHECK-LABEL: define i64 @probe_select(
; CHECK-NOT:     call void @llvm.prefetch.p0(

; REMARK: remark: {{.*}} prefetched table[...] via keys, {{[0-9]+}} iterations ahead, 1 line; its value decides a branch, so the loop's {{[0-9]+}} units of work per indirect access (below 16) do not let out-of-order execution overlap the misses
; REMARK-NEXT: remark: {{.*}} not prefetching table[...] via keys: the loop does {{[0-9]+}} units of work per indirect access (needs 16: the default for a generic CPU)

target triple = "x86_64-unknown-linux-gnu"

define i64 @probe_branch(ptr noalias %table, ptr noalias %keys, i64 %n, i64 %shift) {
entry:
  %guard = icmp sgt i64 %n, 0
  br i1 %guard, label %loop, label %exit

loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %latch ]
  %sum = phi i64 [ 0, %entry ], [ %sum.next, %latch ]
  %k.addr = getelementptr inbounds i64, ptr %keys, i64 %i
  %k = load i64, ptr %k.addr, align 8
  %mul = mul i64 %k, -7046029254386353131
  %h = lshr i64 %mul, %shift
  %slot = getelementptr inbounds [2 x i64], ptr %table, i64 %h
  %key = load i64, ptr %slot, align 8
  %hit = icmp eq i64 %key, %k
  br i1 %hit, label %found, label %latch

found:
  %pay.addr = getelementptr inbounds i8, ptr %slot, i64 8
  %pay = load i64, ptr %pay.addr, align 8
  %add = add i64 %sum, %pay
  br label %latch

latch:
  %sum.next = phi i64 [ %add, %found ], [ %sum, %loop ]
  %i.next = add nuw nsw i64 %i, 1
  %done = icmp eq i64 %i.next, %n
  br i1 %done, label %exit, label %loop

exit:
  %r = phi i64 [ 0, %entry ], [ %sum.next, %latch ]
  ret i64 %r
}

define i64 @probe_select(ptr noalias %table, ptr noalias %keys, i64 %n, i64 %shift) {
entry:
  %guard = icmp sgt i64 %n, 0
  br i1 %guard, label %loop, label %exit

loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %loop ]
  %sum = phi i64 [ 0, %entry ], [ %sum.next, %loop ]
  %k.addr = getelementptr inbounds i64, ptr %keys, i64 %i
  %k = load i64, ptr %k.addr, align 8
  %mul = mul i64 %k, -7046029254386353131
  %h = lshr i64 %mul, %shift
  %slot = getelementptr inbounds [2 x i64], ptr %table, i64 %h
  %key = load i64, ptr %slot, align 8
  %hit = icmp eq i64 %key, %k
  %pay.addr = getelementptr inbounds i8, ptr %slot, i64 8
  %pay = load i64, ptr %pay.addr, align 8
  %add = add i64 %sum, %pay
  %sum.next = select i1 %hit, i64 %add, i64 %sum
  %i.next = add nuw nsw i64 %i, 1
  %done = icmp eq i64 %i.next, %n
  br i1 %done, label %exit, label %loop

exit:
  %r = phi i64 [ 0, %entry ], [ %sum.next, %loop ]
  ret i64 %r
}
