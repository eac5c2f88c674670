; Random-access table updates in blocks (HPCC RandomAccess style): the outer
; loop runs blocks of 128 updates T[v & mask] ^= v. When the update values
; are one stream walked in blocks (v = ran[b * 128 + j]), the nest walks one
; index space: the look-ahead continues into the next blocks, up to the last
; update of the nest, instead of stopping at the end of each block. When
; each block reads the same 128 values again (HPCC: advanced in place), the
; look-ahead wraps around to the start of the next block (whose values the
; current block has already written), unless the block is the last one.
; Either way the work gate does not apply: the look-ahead runs past the
; inner loop's exits. Blocks that overlap neither way keep the look-ahead
; within the block, and a remark says why.

; RUN: opt %loadaccel -passes='accel-prefetch<distance=32>' -S %s \
; RUN:   | FileCheck %s --implicit-check-not='{{[ (<]i128}}'
; RUN: opt %loadaccel -passes='accel-prefetch<distance=32>' \
; RUN:   -pass-remarks=accel-prefetch -pass-remarks-missed=accel-prefetch \
; RUN:   -disable-output %s 2>&1 | FileCheck %s --check-prefix=REMARK

; The last update the look-ahead may reach: 128 * (nb - 1 - b) + 127,
; saturated to i64, computed in i64: it fits exactly when the blocks left,
; nb - 1 - b, are at most (2^64 - 1 - 127) / 128 = 2^57 - 1.
; CHECK-LABEL: define void @blocks(
; CHECK:       block.preheader:
; CHECK-NEXT:    %[[BTC:.*]] = add i64 %nb, -1
; CHECK-NEXT:    %[[NB128:.*]] = shl i64 %nb, 7
; CHECK-NEXT:    %[[END:.*]] = add i64 %[[NB128]], -1
; CHECK:       block:
; CHECK:         %[[MB:.*]] = mul nsw i64 %b, -1
; CHECK-NEXT:    %[[LEFT:.*]] = add i64 %[[BTC]], %[[MB]]
; CHECK-NEXT:    %[[B128:.*]] = mul i64 %b, -128
; CHECK-NEXT:    %[[L:.*]] = add i64 %[[END]], %[[B128]]
; CHECK:         %accel.past.max = icmp ugt i64 %[[LEFT]], 144115188075855871
; CHECK-NEXT:    %accel.last = select i1 %accel.past.max, i64 -1, i64 %[[L]]
; CHECK:       update:
; CHECK:         %accel.left = sub nuw i64 %accel.last, %j
; CHECK:         %accel.step = call i64 @llvm.umin.i64(i64 %accel.left, i64 32)
; CHECK:         %accel.iter = add nuw i64 %j, %accel.step
; CHECK:         %v.ahead = load i64, ptr
; CHECK:         call void @llvm.prefetch.p0(ptr %{{.*}}, i32 0, i32 3, i32 1)
; CHECK:         ret void

; REMARK: remark: {{.*}} prefetched T[...] via ran, 32 iterations ahead, 1 line, across the iterations of the outer loop
; REMARK: remark: {{.*}} prefetched T[...] via ran, 32 iterations ahead, 1 line, across the iterations of the outer loop
; REMARK: remark: {{.*}} look-ahead stops at the loop's last iteration, not at the end of the loop nest: the index arrays are neither walked in blocks of the inner loop's trip count nor read again by each outer iteration
; REMARK: remark: {{.*}} prefetched T[...] via ran, 32 iterations ahead, 1 line; its object's size, from its index range [0, mask] of 8-byte elements, is compared with resident-bytes (1048576) at run time

define void @blocks(ptr noalias %T, i64 %mask, ptr noalias %ran, i64 %nb) {
entry:
  %guard = icmp sgt i64 %nb, 0
  br i1 %guard, label %block, label %exit

block:
  %b = phi i64 [ 0, %entry ], [ %b.next, %block.latch ]
  %off = shl nsw i64 %b, 10
  %base = getelementptr inbounds nuw i8, ptr %ran, i64 %off
  br label %update.ph

update.ph:
  br label %update

update:
  %j = phi i64 [ 0, %update.ph ], [ %j.next, %update ]
  %v.addr = getelementptr inbounds nuw i64, ptr %base, i64 %j
  %v = load i64, ptr %v.addr, align 8
  %h = and i64 %v, %mask
  %t.addr = getelementptr inbounds nuw i64, ptr %T, i64 %h
  %t = load i64, ptr %t.addr, align 8
  %t.new = xor i64 %t, %v
  store i64 %t.new, ptr %t.addr, align 8
  %j.next = add nuw nsw i64 %j, 1
  %j.done = icmp eq i64 %j.next, 128
  br i1 %j.done, label %block.latch, label %update

block.latch:
  %b.next = add nuw nsw i64 %b, 1
  %b.done = icmp eq i64 %b.next, %nb
  br i1 %b.done, label %exit, label %block

exit:
  ret void
}

; In place: past the block's end, iteration j + 32 - 128 of the next block,
; while there is one.
; CHECK-LABEL: define void @in_place(
; CHECK:       update.ph:
; CHECK:         %accel.has.next = icmp ult i64 %b,
; CHECK:       update:
; CHECK:         %accel.left = sub nuw i64 127, %j
; CHECK:         %accel.over = icmp ult i64 %accel.left, 32
; CHECK:         %[[W:.*]] = sub i64 31, %accel.left
; CHECK:         %accel.wrapped = call i64 @llvm.umin.i64(i64 %[[W]], i64 127)
; CHECK:         %[[C:.*]] = and i1 %accel.over, %accel.has.next
; CHECK:         %accel.iter.next = select i1 %[[C]], i64 %accel.wrapped, i64 %accel.iter
; CHECK:         %old.ahead = load i64, ptr
; CHECK:         call void @llvm.prefetch.p0(
; CHECK:         ret void
define void @in_place(ptr noalias %T, i64 %mask, ptr noalias %ran, i64 %nb) {
entry:
  %guard = icmp sgt i64 %nb, 0
  br i1 %guard, label %block, label %exit

block:
  %b = phi i64 [ 0, %entry ], [ %b.next, %block.latch ]
  br label %update.ph

update.ph:
  br label %update

update:
  %j = phi i64 [ 0, %update.ph ], [ %j.next, %update ]
  %v.addr = getelementptr inbounds nuw i64, ptr %ran, i64 %j
  %old = load i64, ptr %v.addr, align 8
  %shl = shl i64 %old, 1
  %neg = icmp slt i64 %old, 0
  %poly = select i1 %neg, i64 7, i64 0
  %v = xor i64 %shl, %poly
  store i64 %v, ptr %v.addr, align 8
  %h = and i64 %v, %mask
  %t.addr = getelementptr inbounds nuw i64, ptr %T, i64 %h
  %t = load i64, ptr %t.addr, align 8
  %t.new = xor i64 %t, %v
  store i64 %t.new, ptr %t.addr, align 8
  %j.next = add nuw nsw i64 %j, 1
  %j.done = icmp eq i64 %j.next, 128
  br i1 %j.done, label %block.latch, label %update

block.latch:
  %b.next = add nuw nsw i64 %b, 1
  %b.done = icmp eq i64 %b.next, %nb
  br i1 %b.done, label %exit, label %block

exit:
  ret void
}

; Blocks of 128 starting 64 apart: each block rereads half of the previous
; one, so the next block does not continue where this one ends. The
; look-ahead stays within the block, where the work gate applies: the mask
; bounds the table, so the loop runs with prefetches only when the table
; exceeds resident-bytes (mask >= 2^20 / 8), a copy without them otherwise.
; CHECK-LABEL: define void @overlapping(
; CHECK:         %[[LARGE:.*]] = icmp uge i64 %mask, 131072
; CHECK:         br i1 %{{.*}}, label %update.ph{{.*}}, label %update.ph{{.*}}.noprefetch
; CHECK:       update.noprefetch:
; CHECK-NOT:     @llvm.prefetch
; CHECK:         br i1 %j.done.noprefetch
; CHECK:       update:
; CHECK:         call void @llvm.prefetch.p0(
; CHECK:       ret void
define void @overlapping(ptr noalias %T, i64 %mask, ptr noalias %ran, i64 %nb) {
entry:
  %guard = icmp sgt i64 %nb, 0
  br i1 %guard, label %block, label %exit

block:
  %b = phi i64 [ 0, %entry ], [ %b.next, %block.latch ]
  %off = shl nsw i64 %b, 9
  %base = getelementptr inbounds nuw i8, ptr %ran, i64 %off
  br label %update.ph

update.ph:
  br label %update

update:
  %j = phi i64 [ 0, %update.ph ], [ %j.next, %update ]
  %v.addr = getelementptr inbounds nuw i64, ptr %base, i64 %j
  %v = load i64, ptr %v.addr, align 8
  %h = and i64 %v, %mask
  %t.addr = getelementptr inbounds nuw i64, ptr %T, i64 %h
  %t = load i64, ptr %t.addr, align 8
  %t.new = xor i64 %t, %v
  store i64 %t.new, ptr %t.addr, align 8
  %j.next = add nuw nsw i64 %j, 1
  %j.done = icmp eq i64 %j.next, 128
  br i1 %j.done, label %block.latch, label %update

block.latch:
  %b.next = add nuw nsw i64 %b, 1
  %b.done = icmp eq i64 %b.next, %nb
  br i1 %b.done, label %exit, label %block

exit:
  ret void
}
