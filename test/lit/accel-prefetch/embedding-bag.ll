; Embedding bags: the outer loop walks the indices of a bag, the inner loop
; sums a row of 64 floats (256 bytes, 4 cache lines). The access of the outer
; loop is the row T + idx[j] * 256: all 4 lines of the row idx[j + d] are
; prefetched from the outer loop header. The inner loop itself is sequential
; (stride 4) and left to the hardware prefetcher.

; RUN: opt %loadaccel -passes='accel-prefetch<distance=16>' -S %s | FileCheck %s
; RUN: opt %loadaccel -passes='accel-prefetch<distance=16;max-lines=2>' -S %s \
; RUN:   | FileCheck %s --check-prefix=MAX2
; RUN: opt %loadaccel -passes='accel-prefetch<distance=16;cache-line=128>' -S %s \
; RUN:   | FileCheck %s --check-prefix=LINE128
; RUN: opt %loadaccel -passes=accel-prefetch -pass-remarks=accel-prefetch \
; RUN:   -pass-remarks-missed=accel-prefetch -disable-output %s 2>&1 \
; RUN:   | FileCheck %s --check-prefix=REMARK

; CHECK-LABEL: define void @bag(
; CHECK:       outer:
; CHECK:         %accel.step = call i64 @llvm.umin.i64(i64 %accel.left, i64 16)
; CHECK:         %id.ahead = load i32, ptr
; CHECK:         %[[ROW:.*]] = getelementptr i8, ptr %T, i64
; CHECK-NEXT:    call void @llvm.prefetch.p0(ptr %[[ROW]], i32 0, i32 3, i32 1)
; CHECK-NEXT:    %[[L1:.*]] = getelementptr i8, ptr %[[ROW]], i64 64
; CHECK-NEXT:    call void @llvm.prefetch.p0(ptr %[[L1]], i32 0, i32 3, i32 1)
; CHECK-NEXT:    %[[L2:.*]] = getelementptr i8, ptr %[[ROW]], i64 128
; CHECK-NEXT:    call void @llvm.prefetch.p0(ptr %[[L2]], i32 0, i32 3, i32 1)
; CHECK-NEXT:    %[[L3:.*]] = getelementptr i8, ptr %[[ROW]], i64 192
; CHECK-NEXT:    call void @llvm.prefetch.p0(ptr %[[L3]], i32 0, i32 3, i32 1)
; CHECK-NOT:     @llvm.prefetch
; CHECK:       inner:
; CHECK-NOT:     @llvm.prefetch
; CHECK:         ret void

; MAX2-LABEL: define void @bag(
; MAX2-COUNT-2: call void @llvm.prefetch
; MAX2-NOT:     call void @llvm.prefetch
; MAX2-LABEL: define void @batch(

; LINE128-LABEL: define void @bag(
; LINE128-COUNT-2: call void @llvm.prefetch
; LINE128-NOT:     call void @llvm.prefetch
; LINE128-LABEL: define void @batch(

; REMARK: remark: {{.*}} prefetched T[...] via idx, {{[0-9]+}} iterations ahead, 4 lines
; REMARK: remark: {{.*}} not prefetching T: stride of 4 bytes is covered by the hardware prefetcher

define void @bag(ptr noalias %T, ptr noalias %idx, i64 %n, ptr noalias %out) {
entry:
  %guard = icmp sgt i64 %n, 0
  br i1 %guard, label %outer.ph, label %exit

outer.ph:
  br label %outer

outer:
  %j = phi i64 [ 0, %outer.ph ], [ %j.next, %outer.latch ]
  %idx.addr = getelementptr inbounds i32, ptr %idx, i64 %j
  %id = load i32, ptr %idx.addr, align 4
  %id.ext = sext i32 %id to i64
  %row.off = mul nsw i64 %id.ext, 64
  %row = getelementptr inbounds float, ptr %T, i64 %row.off
  br label %inner

inner:
  %k = phi i64 [ 0, %outer ], [ %k.next, %inner ]
  %x.addr = getelementptr inbounds float, ptr %row, i64 %k
  %x = load float, ptr %x.addr, align 4
  %o.addr = getelementptr inbounds float, ptr %out, i64 %k
  %o = load float, ptr %o.addr, align 4
  %sum = fadd float %o, %x
  store float %sum, ptr %o.addr, align 4
  %k.next = add nuw nsw i64 %k, 1
  %k.done = icmp eq i64 %k.next, 64
  br i1 %k.done, label %outer.latch, label %inner

outer.latch:
  %j.next = add nuw nsw i64 %j, 1
  %j.done = icmp eq i64 %j.next, %n
  br i1 %j.done, label %exit, label %outer

exit:
  ret void
}

; Bags inside a batch: bag b holds the indices offsets[b] .. offsets[b+1].
; The middle loop is the one prefetched; its trip count is computed in its
; preheader, inside the batch loop.

; CHECK-LABEL: define void @batch(
; CHECK:       bag.ph:
; CHECK:         %[[END:.*]] = add {{.*}}i64
; CHECK:       bag:
; CHECK:         %accel.left = sub nuw i64
; CHECK:         %accel.step = call i64 @llvm.umin.i64(i64 %accel.left, i64 16)
; CHECK:         %id.ahead = load i32, ptr
; CHECK-COUNT-4: call void @llvm.prefetch.p0(ptr %{{.*}}, i32 0, i32 3, i32 1)
; CHECK-NOT:     @llvm.prefetch
; CHECK:         ret void

define void @batch(ptr noalias %T, ptr noalias %idx, ptr noalias %offsets, i64 %nb, ptr noalias %out) {
entry:
  %guard = icmp sgt i64 %nb, 0
  br i1 %guard, label %batch.ph, label %exit

batch.ph:
  br label %batch

batch:
  %b = phi i64 [ 0, %batch.ph ], [ %b.next, %batch.latch ]
  %lo.addr = getelementptr inbounds i64, ptr %offsets, i64 %b
  %lo = load i64, ptr %lo.addr, align 8
  %b.next = add nuw nsw i64 %b, 1
  %hi.addr = getelementptr inbounds i64, ptr %offsets, i64 %b.next
  %hi = load i64, ptr %hi.addr, align 8
  %outrow = getelementptr inbounds [64 x float], ptr %out, i64 %b
  %nonempty = icmp slt i64 %lo, %hi
  br i1 %nonempty, label %bag.ph, label %batch.latch

bag.ph:
  br label %bag

bag:
  %j = phi i64 [ %lo, %bag.ph ], [ %j.next, %bag.latch ]
  %idx.addr = getelementptr inbounds i32, ptr %idx, i64 %j
  %id = load i32, ptr %idx.addr, align 4
  %id.ext = sext i32 %id to i64
  %row = getelementptr inbounds [64 x float], ptr %T, i64 %id.ext
  br label %inner

inner:
  %k = phi i64 [ 0, %bag ], [ %k.next, %inner ]
  %x.addr = getelementptr inbounds float, ptr %row, i64 %k
  %x = load float, ptr %x.addr, align 4
  %o.addr = getelementptr inbounds float, ptr %outrow, i64 %k
  %o = load float, ptr %o.addr, align 4
  %sum = fadd float %o, %x
  store float %sum, ptr %o.addr, align 4
  %k.next = add nuw nsw i64 %k, 1
  %k.done = icmp eq i64 %k.next, 64
  br i1 %k.done, label %bag.latch, label %inner

bag.latch:
  %j.next = add nsw i64 %j, 1
  %j.done = icmp eq i64 %j.next, %hi
  br i1 %j.done, label %batch.latch, label %bag

batch.latch:
  %b.done = icmp eq i64 %b.next, %nb
  br i1 %b.done, label %exit, label %batch

exit:
  ret void
}
