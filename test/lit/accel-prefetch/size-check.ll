; The work gate declines tight indirect loops (a few units of work per
; access) because over a cache-resident table their prefetches only add
; instructions; over a table far larger than the caches they gain. Where the
; IR says how large the indexed object is, the gate stands aside for a large
; one:
;  - @hist_memset: `memset(count, 0, nb * 4)` before a key histogram says
;    the counters are at least nb * 4 bytes, known only at run time. The
;    preheader compares it with resident-bytes and runs either the loop with
;    prefetches or an unchanged copy.
;  - @hist_large / @hist_small: dereferenceable(N) says it at compile time:
;    prefetched without a copy, or declined as cache-resident.
;  - @masked, @shifted: `h & mask` and `h >> s` bound the index, so the
;    table's span is (mask + 1) and 2^(64 - s) elements; @modulo: `h % n`
;    spans n (a constant here: a divisor that may be zero is not
;    recomputed ahead).
;  - @masked_small / @masked_large: the same with constant masks.
;  - @assumed: an assume bundle "dereferenceable"(ptr, n); with n known
;    only at run time (LLVM 22 on) it is size-check-assume.ll's story.
;  - @unknown: nothing says how large the table is: declined, as before.
;  - @with_strided: a strided prefetch that does not depend on the size
;    keeps the loop from being copied; the remark says so.
; no-size-check turns the copy off.

; RUN: opt %loadaccel -passes='accel-prefetch<min-work=16;distance=8>' -S %s \
; RUN:   | FileCheck %s
; RUN: opt %loadaccel -passes='accel-prefetch<min-work=16;distance=8>' \
; RUN:   -pass-remarks=accel-prefetch -pass-remarks-missed=accel-prefetch \
; RUN:   -disable-output %s 2>&1 | FileCheck %s --check-prefix=REMARK
; RUN: opt %loadaccel -passes='accel-prefetch<min-work=16;distance=8;no-size-check>' \
; RUN:   -pass-remarks-missed=accel-prefetch -S %s 2>%t.off | FileCheck %s --check-prefix=OFF
; RUN: FileCheck %s --check-prefix=OFF-REMARK --input-file=%t.off
; RUN: opt %loadaccel -passes='accel-prefetch<min-work=16;distance=8>' \
; RUN:   -verify-each -disable-output %s

; CHECK-LABEL: define i64 @hist_memset(
; CHECK:       loop.preheader:
; CHECK-NEXT:    %[[CMP:.*]] = icmp ugt i64 %bytes, 1048576
; CHECK-NEXT:    %accel.prefetch.large = freeze i1 %[[CMP]]
; CHECK-NEXT:    br i1 %accel.prefetch.large, label %loop.ph, label %loop.ph.noprefetch
; CHECK:       loop.noprefetch:
; CHECK-NOT:     @llvm.prefetch
; CHECK:         br i1 %done.noprefetch,
; CHECK:       loop:
; CHECK:         call void @llvm.prefetch.p0(ptr %{{.*}}, i32 0, i32 3, i32 1)
; CHECK:         br i1 %done,
; The exit takes the count from whichever loop ran.
; CHECK:         phi i64 [ %{{.*}}, %{{.*}} ], [ %{{.*}}, %{{.*}} ]
; CHECK:         ret i64

; CHECK-LABEL: define i64 @hist_large(
; CHECK-NOT:     noprefetch
; CHECK:         call void @llvm.prefetch.p0(
; CHECK-LABEL: define i64 @hist_small(
; CHECK-NOT:     @llvm.prefetch
; CHECK-NOT:     noprefetch
; CHECK-LABEL: define i64 @masked(
; CHECK:         icmp uge i64 %mask, 262144
; CHECK-LABEL: define i64 @masked_small(
; CHECK-NOT:     @llvm.prefetch
; CHECK-NOT:     noprefetch
; CHECK-LABEL: define i64 @masked_large(
; CHECK-NOT:     noprefetch
; CHECK:         call void @llvm.prefetch.p0(
; The largest index of h >> s is all-ones >> s; 16-byte slots.
; CHECK-LABEL: define i64 @shifted(
; CHECK:         %[[MAX:.*]] = lshr i64 -1, %shift
; CHECK-NEXT:    icmp uge i64 %[[MAX]], 65536
; CHECK-LABEL: define i64 @modulo(
; CHECK-NOT:     noprefetch
; CHECK:         call void @llvm.prefetch.p0(
; CHECK-LABEL: define i64 @assumed(
; CHECK-NOT:     noprefetch
; CHECK:         call void @llvm.prefetch.p0(
; CHECK-LABEL: define i64 @unknown(
; CHECK-NOT:     @llvm.prefetch
; CHECK-NOT:     noprefetch
; CHECK-LABEL: define i64 @with_strided(
; CHECK-NOT:     noprefetch
; CHECK:         ret i64

; REMARK: remark: {{.*}} prefetched count[...] via keys, 8 iterations ahead, 1 line; its object's size, from a memset of bytes bytes, is compared with resident-bytes (1048576) at run time: a copy of the loop without prefetches runs over smaller objects
; REMARK: remark: {{.*}} prefetched count[...] via keys, 8 iterations ahead, 1 line; its object's size, from its declared size of 268435456 bytes, exceeds resident-bytes (1048576), so the loop's {{[0-9]+}} units of work per indirect access (below 16) leave its misses exposed
; REMARK: remark: {{.*}} not prefetching count[...] via keys: the indexed object is only 65536 bytes: it stays in cache
; REMARK: remark: {{.*}} prefetched count[...] via keys, 8 iterations ahead, 1 line; its object's size, from its index range [0, mask] of 4-byte elements, is compared with resident-bytes (1048576) at run time
; REMARK: remark: {{.*}} not prefetching count[...] via keys: the loop does {{[0-9]+}} units of work per indirect access (needs 16): out-of-order execution already overlaps these misses{{$}}
; REMARK: remark: {{.*}} prefetched count[...] via keys, 8 iterations ahead, 1 line; its object's size, from its index range [0, 67108863] of 4-byte elements, exceeds resident-bytes (1048576)
; REMARK: remark: {{.*}} prefetched table[...] via keys, 8 iterations ahead, 1 line; its object's size, from its index range [0, 2^(64 - shift)) of 16-byte elements, is compared with resident-bytes (1048576) at run time
; REMARK: remark: {{.*}} prefetched count[...] via keys, 8 iterations ahead, 1 line; its object's size, from its index range [0, 1000003) of 4-byte elements, exceeds resident-bytes (1048576)
; REMARK: remark: {{.*}} prefetched count[...] via keys, 8 iterations ahead, 1 line; its object's size, from a dereferenceable assume of 268435456 bytes, exceeds resident-bytes (1048576)
; REMARK: remark: {{.*}} not prefetching count[...] via keys: the loop does {{[0-9]+}} units of work per indirect access (needs 16): out-of-order execution already overlaps these misses{{$}}
; REMARK: remark: {{.*}} not prefetching count[...] via keys: the loop does {{[0-9]+}} units of work per indirect access (needs 16): out-of-order execution already overlaps these misses; its object's size, from a memset of bytes bytes, is known only at run time, and the loop is not copied for smaller objects: the loop has prefetches that do not depend on it
; REMARK: remark: {{.*}} prefetched rows with stride 4096 bytes

; OFF-LABEL: define i64 @hist_memset(
; OFF-NOT:     noprefetch
; OFF-NOT:     @llvm.prefetch
; OFF:         ret i64
; OFF-REMARK: remark: {{.*}} not prefetching count[...] via keys: {{.*}}; its object's size, from a memset of bytes bytes, is known only at run time, and the loop is not copied for smaller objects: size checks are off (no-size-check)

target triple = "x86_64-unknown-linux-gnu"

; for (i = 0; i < n; i++) count[keys[i]]++, after memset(count, 0, nb * 4).
define i64 @hist_memset(ptr noalias %keys, i64 %n, ptr noalias %count, i64 %nb) {
entry:
  %bytes = shl i64 %nb, 2
  call void @llvm.memset.p0.i64(ptr %count, i8 0, i64 %bytes, i1 false)
  %guard = icmp sgt i64 %n, 0
  br i1 %guard, label %loop, label %exit

loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %loop ]
  %k.addr = getelementptr inbounds i32, ptr %keys, i64 %i
  %k = load i32, ptr %k.addr, align 4
  %idx = zext i32 %k to i64
  %c.addr = getelementptr inbounds i32, ptr %count, i64 %idx
  %c = load i32, ptr %c.addr, align 4
  %c1 = add i32 %c, 1
  store i32 %c1, ptr %c.addr, align 4
  %i.next = add nuw nsw i64 %i, 1
  %done = icmp eq i64 %i.next, %n
  br i1 %done, label %exit, label %loop

exit:
  %r = phi i64 [ 0, %entry ], [ %i.next, %loop ]
  ret i64 %r
}

define i64 @hist_large(ptr noalias %keys, i64 %n, ptr noalias dereferenceable(268435456) %count) {
entry:
  %guard = icmp sgt i64 %n, 0
  br i1 %guard, label %loop, label %exit

loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %loop ]
  %k.addr = getelementptr inbounds i32, ptr %keys, i64 %i
  %k = load i32, ptr %k.addr, align 4
  %idx = zext i32 %k to i64
  %c.addr = getelementptr inbounds i32, ptr %count, i64 %idx
  %c = load i32, ptr %c.addr, align 4
  %c1 = add i32 %c, 1
  store i32 %c1, ptr %c.addr, align 4
  %i.next = add nuw nsw i64 %i, 1
  %done = icmp eq i64 %i.next, %n
  br i1 %done, label %exit, label %loop

exit:
  %r = phi i64 [ 0, %entry ], [ %i.next, %loop ]
  ret i64 %r
}

define i64 @hist_small(ptr noalias %keys, i64 %n, ptr noalias dereferenceable(65536) %count) {
entry:
  %guard = icmp sgt i64 %n, 0
  br i1 %guard, label %loop, label %exit

loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %loop ]
  %k.addr = getelementptr inbounds i32, ptr %keys, i64 %i
  %k = load i32, ptr %k.addr, align 4
  %idx = zext i32 %k to i64
  %c.addr = getelementptr inbounds i32, ptr %count, i64 %idx
  %c = load i32, ptr %c.addr, align 4
  %c1 = add i32 %c, 1
  store i32 %c1, ptr %c.addr, align 4
  %i.next = add nuw nsw i64 %i, 1
  %done = icmp eq i64 %i.next, %n
  br i1 %done, label %exit, label %loop

exit:
  %r = phi i64 [ 0, %entry ], [ %i.next, %loop ]
  ret i64 %r
}

; count[keys[i] & mask]++
define i64 @masked(ptr noalias %keys, i64 %n, ptr noalias %count, i64 %mask) {
entry:
  %guard = icmp sgt i64 %n, 0
  br i1 %guard, label %loop, label %exit

loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %loop ]
  %k.addr = getelementptr inbounds i64, ptr %keys, i64 %i
  %k = load i64, ptr %k.addr, align 8
  %idx = and i64 %k, %mask
  %c.addr = getelementptr inbounds i32, ptr %count, i64 %idx
  %c = load i32, ptr %c.addr, align 4
  %c1 = add i32 %c, 1
  store i32 %c1, ptr %c.addr, align 4
  %i.next = add nuw nsw i64 %i, 1
  %done = icmp eq i64 %i.next, %n
  br i1 %done, label %exit, label %loop

exit:
  %r = phi i64 [ 0, %entry ], [ %i.next, %loop ]
  ret i64 %r
}

; 1024 counters: 4 KiB, cache-resident.
define i64 @masked_small(ptr noalias %keys, i64 %n, ptr noalias %count) {
entry:
  %guard = icmp sgt i64 %n, 0
  br i1 %guard, label %loop, label %exit

loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %loop ]
  %k.addr = getelementptr inbounds i64, ptr %keys, i64 %i
  %k = load i64, ptr %k.addr, align 8
  %idx = and i64 %k, 1023
  %c.addr = getelementptr inbounds i32, ptr %count, i64 %idx
  %c = load i32, ptr %c.addr, align 4
  %c1 = add i32 %c, 1
  store i32 %c1, ptr %c.addr, align 4
  %i.next = add nuw nsw i64 %i, 1
  %done = icmp eq i64 %i.next, %n
  br i1 %done, label %exit, label %loop

exit:
  %r = phi i64 [ 0, %entry ], [ %i.next, %loop ]
  ret i64 %r
}

; 2^26 counters: 256 MiB.
define i64 @masked_large(ptr noalias %keys, i64 %n, ptr noalias %count) {
entry:
  %guard = icmp sgt i64 %n, 0
  br i1 %guard, label %loop, label %exit

loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %loop ]
  %k.addr = getelementptr inbounds i64, ptr %keys, i64 %i
  %k = load i64, ptr %k.addr, align 8
  %idx = and i64 %k, 67108863
  %c.addr = getelementptr inbounds i32, ptr %count, i64 %idx
  %c = load i32, ptr %c.addr, align 4
  %c1 = add i32 %c, 1
  store i32 %c1, ptr %c.addr, align 4
  %i.next = add nuw nsw i64 %i, 1
  %done = icmp eq i64 %i.next, %n
  br i1 %done, label %exit, label %loop

exit:
  %r = phi i64 [ 0, %entry ], [ %i.next, %loop ]
  ret i64 %r
}

; A multiplicative hash into 2^(64 - shift) slots of {key, payload},
; branch-free (a select).
define i64 @shifted(ptr noalias %table, ptr noalias %keys, i64 %n, i64 %shift) {
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

; count[keys[i] % 1000003]++
define i64 @modulo(ptr noalias %keys, i64 %n, ptr noalias %count) {
entry:
  %guard = icmp sgt i64 %n, 0
  br i1 %guard, label %loop, label %exit

loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %loop ]
  %k.addr = getelementptr inbounds i64, ptr %keys, i64 %i
  %k = load i64, ptr %k.addr, align 8
  %idx = urem i64 %k, 1000003
  %c.addr = getelementptr inbounds i32, ptr %count, i64 %idx
  %c = load i32, ptr %c.addr, align 4
  %c1 = add i32 %c, 1
  store i32 %c1, ptr %c.addr, align 4
  %i.next = add nuw nsw i64 %i, 1
  %done = icmp eq i64 %i.next, %n
  br i1 %done, label %exit, label %loop

exit:
  %r = phi i64 [ 0, %entry ], [ %i.next, %loop ]
  ret i64 %r
}

define i64 @assumed(ptr noalias %keys, i64 %n, ptr noalias %count) {
entry:
  call void @llvm.assume(i1 true) [ "dereferenceable"(ptr %count, i64 268435456) ]
  %guard = icmp sgt i64 %n, 0
  br i1 %guard, label %loop, label %exit

loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %loop ]
  %k.addr = getelementptr inbounds i32, ptr %keys, i64 %i
  %k = load i32, ptr %k.addr, align 4
  %idx = zext i32 %k to i64
  %c.addr = getelementptr inbounds i32, ptr %count, i64 %idx
  %c = load i32, ptr %c.addr, align 4
  %c1 = add i32 %c, 1
  store i32 %c1, ptr %c.addr, align 4
  %i.next = add nuw nsw i64 %i, 1
  %done = icmp eq i64 %i.next, %n
  br i1 %done, label %exit, label %loop

exit:
  %r = phi i64 [ 0, %entry ], [ %i.next, %loop ]
  ret i64 %r
}

define i64 @unknown(ptr noalias %keys, i64 %n, ptr noalias %count) {
entry:
  %guard = icmp sgt i64 %n, 0
  br i1 %guard, label %loop, label %exit

loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %loop ]
  %k.addr = getelementptr inbounds i32, ptr %keys, i64 %i
  %k = load i32, ptr %k.addr, align 4
  %idx = zext i32 %k to i64
  %c.addr = getelementptr inbounds i32, ptr %count, i64 %idx
  %c = load i32, ptr %c.addr, align 4
  %c1 = add i32 %c, 1
  store i32 %c1, ptr %c.addr, align 4
  %i.next = add nuw nsw i64 %i, 1
  %done = icmp eq i64 %i.next, %n
  br i1 %done, label %exit, label %loop

exit:
  %r = phi i64 [ 0, %entry ], [ %i.next, %loop ]
  ret i64 %r
}

; The histogram plus a read of one float per 4 KiB row.
define i64 @with_strided(ptr noalias %keys, i64 %n, ptr noalias %count, i64 %nb, ptr noalias %rows, ptr noalias %out) {
entry:
  %bytes = shl i64 %nb, 2
  call void @llvm.memset.p0.i64(ptr %count, i8 0, i64 %bytes, i1 false)
  %guard = icmp sgt i64 %n, 0
  br i1 %guard, label %loop, label %exit

loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %loop ]
  %k.addr = getelementptr inbounds i32, ptr %keys, i64 %i
  %k = load i32, ptr %k.addr, align 4
  %idx = zext i32 %k to i64
  %c.addr = getelementptr inbounds i32, ptr %count, i64 %idx
  %c = load i32, ptr %c.addr, align 4
  %c1 = add i32 %c, 1
  store i32 %c1, ptr %c.addr, align 4
  %row = mul nuw nsw i64 %i, 1024
  %r.addr = getelementptr inbounds float, ptr %rows, i64 %row
  %v = load float, ptr %r.addr, align 4
  %o.addr = getelementptr inbounds float, ptr %out, i64 %i
  store float %v, ptr %o.addr, align 4
  %i.next = add nuw nsw i64 %i, 1
  %done = icmp eq i64 %i.next, %n
  br i1 %done, label %exit, label %loop

exit:
  %r = phi i64 [ 0, %entry ], [ %i.next, %loop ]
  ret i64 %r
}

declare void @llvm.memset.p0.i64(ptr, i8, i64, i1)
declare void @llvm.assume(i1)
