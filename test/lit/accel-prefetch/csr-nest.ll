; CSR loop nests: an outer loop over bags (rows), an inner loop over
; idx[off[b]] .. idx[off[b+1]]. The ranges of the inner loop tile one index
; space, so the look-ahead runs past the end of a bag into the next ones, up
; to the end of the whole nest: off[nb] is loaded once in the outer preheader
; and bounds the look-ahead iteration in the inner header. Nests whose ranges
; do not tile, or whose outer loop has an unknown trip count, keep the
; look-ahead within the inner loop's own iterations and say why. Runtime
; unrolled inner loops (a remainder loop, then the unrolled loop) walk each
; bag in two pieces; the unrolled loop still looks ahead across the bags
; when the two pieces provably cover the whole bag.

; RUN: opt %loadaccel -passes='accel-prefetch<distance=8;min-work=0>' \
; RUN:   -S %s | FileCheck %s
; RUN: opt %loadaccel -passes='accel-prefetch<distance=8;min-work=0>' \
; RUN:   -pass-remarks=accel-prefetch \
; RUN:   -pass-remarks-missed=accel-prefetch -disable-output %s 2>&1 \
; RUN:   | FileCheck %s --check-prefix=REMARK

; Embedding bag as clang -O3 leaves it: the start of bag b is the end loaded
; in iteration b - 1. The last end is off[nb - 1 + 1], loaded before the nest.
; CHECK-LABEL: define void @bag(
; CHECK:       entry:
; CHECK:         %[[LASTP:.*]] = getelementptr i8, ptr %off, i64
; CHECK:         %accel.nest.end = load i64, ptr %[[LASTP]], align 8
; CHECK:       bag.ph:
; CHECK:         %smax = call i64 @llvm.smax.i64(i64 %end, i64 %accel.nest.end)
; CHECK:         %accel.last = sub i64 %{{.*}}, %start
; CHECK:       bag:
; CHECK:         %accel.left{{[0-9]*}} = sub nuw i64 %accel.last, %indvar
; CHECK:         %accel.step{{[0-9]*}} = call i64 @llvm.umin.i64(i64 %accel.left{{[0-9]*}}, i64 8)
; CHECK:         %accel.iter = add nuw i64 %indvar, %accel.step
; CHECK:         %id.ahead = load i32, ptr
; CHECK-COUNT-4: call void @llvm.prefetch.p0(
; CHECK-NOT:     @llvm.prefetch
; CHECK:         ret void

; REMARK: remark: {{.*}} prefetched T[...] via idx, 8 iterations ahead, 4 lines, across the iterations of the outer loop

define void @bag(ptr noalias %T, ptr noalias %idx, ptr noalias %off, i64 %nb, ptr noalias %out) {
entry:
  %first = load i64, ptr %off, align 8
  br label %outer

outer:
  %b = phi i64 [ 0, %entry ], [ %b.next, %latch ]
  %start = phi i64 [ %first, %entry ], [ %end, %latch ]
  %b.next = add nuw nsw i64 %b, 1
  %end.addr = getelementptr inbounds i64, ptr %off, i64 %b.next
  %end = load i64, ptr %end.addr, align 8
  %o = getelementptr inbounds [64 x float], ptr %out, i64 %b
  %nonempty = icmp slt i64 %start, %end
  br i1 %nonempty, label %bag.ph, label %latch

bag.ph:
  br label %bag

bag:
  %j = phi i64 [ %start, %bag.ph ], [ %j.next, %bag.latch ]
  %id.addr = getelementptr inbounds i32, ptr %idx, i64 %j
  %id = load i32, ptr %id.addr, align 4
  %id.ext = sext i32 %id to i64
  %row = getelementptr inbounds [64 x float], ptr %T, i64 %id.ext
  br label %sum

sum:
  %k = phi i64 [ 0, %bag ], [ %k.next, %sum ]
  %t.addr = getelementptr inbounds float, ptr %row, i64 %k
  %t = load float, ptr %t.addr, align 4
  %o.addr = getelementptr inbounds float, ptr %o, i64 %k
  %acc = load float, ptr %o.addr, align 4
  %acc.next = fadd float %acc, %t
  store float %acc.next, ptr %o.addr, align 4
  %k.next = add nuw nsw i64 %k, 1
  %sum.done = icmp eq i64 %k.next, 64
  br i1 %sum.done, label %bag.latch, label %sum

bag.latch:
  %j.next = add nsw i64 %j, 1
  %bag.done = icmp eq i64 %j.next, %end
  br i1 %bag.done, label %latch, label %bag

latch:
  %outer.done = icmp eq i64 %b.next, %nb
  br i1 %outer.done, label %exit, label %outer

exit:
  ret void
}

; SpMV: both bounds loaded in every row from 64-bit row pointers, 32-bit
; column indices. The row pointer of the last row is rowptr[nrows - 1 + 1].
; CHECK-LABEL: define void @spmv(
; CHECK:       entry:
; CHECK:         %accel.nest.end = load i64, ptr
; CHECK:       row:
; CHECK:         %accel.left{{[0-9]*}} = sub nuw i64 %accel.last, %indvar
; CHECK:         %accel.step{{[0-9]*}} = call i64 @llvm.umin.i64(i64 %accel.left{{[0-9]*}}, i64 8)
; CHECK:         %col.ahead = load i32, ptr
; CHECK:         call void @llvm.prefetch.p0(
; CHECK-NOT:     @llvm.prefetch
; CHECK:         ret void

; REMARK: remark: {{.*}} prefetched x[...] via cols, 8 iterations ahead, 1 line, across the iterations of the outer loop

define void @spmv(i64 %nrows, ptr noalias %rowptr, ptr noalias %cols, ptr noalias %vals, ptr noalias %x, ptr noalias %y) {
entry:
  %any = icmp sgt i64 %nrows, 0
  br i1 %any, label %outer, label %exit

outer:
  %r = phi i64 [ 0, %entry ], [ %r.next, %latch ]
  %start.addr = getelementptr inbounds i64, ptr %rowptr, i64 %r
  %start = load i64, ptr %start.addr, align 8
  %r.next = add nuw nsw i64 %r, 1
  %end.addr = getelementptr inbounds i64, ptr %rowptr, i64 %r.next
  %end = load i64, ptr %end.addr, align 8
  %nonempty = icmp slt i64 %start, %end
  br i1 %nonempty, label %row, label %latch

row:
  %j = phi i64 [ %j.next, %row ], [ %start, %outer ]
  %s = phi double [ %s.next, %row ], [ 0.0, %outer ]
  %v.addr = getelementptr inbounds double, ptr %vals, i64 %j
  %v = load double, ptr %v.addr, align 8
  %col.addr = getelementptr inbounds i32, ptr %cols, i64 %j
  %col = load i32, ptr %col.addr, align 4
  %col.ext = sext i32 %col to i64
  %x.addr = getelementptr inbounds double, ptr %x, i64 %col.ext
  %xv = load double, ptr %x.addr, align 8
  %s.next = call double @llvm.fmuladd.f64(double %v, double %xv, double %s)
  %j.next = add nsw i64 %j, 1
  %row.done = icmp eq i64 %j.next, %end
  br i1 %row.done, label %latch, label %row

latch:
  %res = phi double [ 0.0, %outer ], [ %s.next, %row ]
  %y.addr = getelementptr inbounds double, ptr %y, i64 %r
  store double %res, ptr %y.addr, align 8
  %outer.done = icmp eq i64 %r.next, %nrows
  br i1 %outer.done, label %exit, label %outer

exit:
  ret void
}

; The ranges come from two arrays (start = starts[b], end = ends[b]): they
; need not tile, the indices between them need not be loaded by the program.
; The look-ahead is clamped to the bag's own last iteration.
; CHECK-LABEL: define void @ranges(
; CHECK-NOT:     accel.nest.end
; CHECK:       inner:
; CHECK:         %accel.left{{[0-9]*}} = sub nuw i64 %{{.*}}, %indvar
; CHECK:         call void @llvm.prefetch.p0(
; CHECK:         ret void

; REMARK: remark: {{.*}} look-ahead stops at the loop's last iteration, not at the end of the loop nest: the ranges of the inner loop do not tile: its start is not the previous end (offsets[b] .. offsets[b+1])
; REMARK: remark: {{.*}} prefetched T[...] via idx, 8 iterations ahead, 1 line{{$}}

define void @ranges(ptr noalias %T, ptr noalias %idx, ptr noalias %starts, ptr noalias %ends, i64 %nb, ptr noalias %out) {
entry:
  br label %outer

outer:
  %b = phi i64 [ 0, %entry ], [ %b.next, %latch ]
  %start.addr = getelementptr inbounds i64, ptr %starts, i64 %b
  %start = load i64, ptr %start.addr, align 8
  %end.addr = getelementptr inbounds i64, ptr %ends, i64 %b
  %end = load i64, ptr %end.addr, align 8
  %nonempty = icmp slt i64 %start, %end
  br i1 %nonempty, label %inner, label %latch

inner:
  %j = phi i64 [ %j.next, %inner ], [ %start, %outer ]
  %s = phi float [ %s.next, %inner ], [ 0.0, %outer ]
  %id.addr = getelementptr inbounds i32, ptr %idx, i64 %j
  %id = load i32, ptr %id.addr, align 4
  %id.ext = sext i32 %id to i64
  %t.addr = getelementptr inbounds float, ptr %T, i64 %id.ext
  %t = load float, ptr %t.addr, align 4
  %s.next = fadd float %s, %t
  %j.next = add nsw i64 %j, 1
  %inner.done = icmp eq i64 %j.next, %end
  br i1 %inner.done, label %latch, label %inner

latch:
  %sum = phi float [ 0.0, %outer ], [ %s.next, %inner ]
  %o.addr = getelementptr inbounds float, ptr %out, i64 %b
  store float %sum, ptr %o.addr, align 4
  %b.next = add nuw nsw i64 %b, 1
  %outer.done = icmp eq i64 %b.next, %nb
  br i1 %outer.done, label %exit, label %outer

exit:
  ret void
}

; The outer loop stops at the first negative offset: its trip count is
; unknown, so the end of the nest is unknown too.
; CHECK-LABEL: define void @until_negative(
; CHECK-NOT:     accel.nest.end
; CHECK:       inner:
; CHECK:         call void @llvm.prefetch.p0(
; CHECK:         ret void

; REMARK: remark: {{.*}} look-ahead stops at the loop's last iteration, not at the end of the loop nest: the outer loop: loop trip count is unknown: cannot clamp the look-ahead index
; REMARK: remark: {{.*}} prefetched T[...] via idx, 8 iterations ahead, 1 line{{$}}

define void @until_negative(ptr noalias %T, ptr noalias %idx, ptr noalias %off, ptr noalias %out) {
entry:
  %first = load i64, ptr %off, align 8
  br label %outer

outer:
  %b = phi i64 [ 0, %entry ], [ %b.next, %latch ]
  %start = phi i64 [ %first, %entry ], [ %end, %latch ]
  %b.next = add nuw nsw i64 %b, 1
  %end.addr = getelementptr inbounds i64, ptr %off, i64 %b.next
  %end = load i64, ptr %end.addr, align 8
  %nonempty = icmp slt i64 %start, %end
  br i1 %nonempty, label %inner, label %latch

inner:
  %j = phi i64 [ %j.next, %inner ], [ %start, %outer ]
  %s = phi float [ %s.next, %inner ], [ 0.0, %outer ]
  %id.addr = getelementptr inbounds i32, ptr %idx, i64 %j
  %id = load i32, ptr %id.addr, align 4
  %id.ext = sext i32 %id to i64
  %t.addr = getelementptr inbounds float, ptr %T, i64 %id.ext
  %t = load float, ptr %t.addr, align 4
  %s.next = fadd float %s, %t
  %j.next = add nsw i64 %j, 1
  %inner.done = icmp eq i64 %j.next, %end
  br i1 %inner.done, label %latch, label %inner

latch:
  %sum = phi float [ 0.0, %outer ], [ %s.next, %inner ]
  %o.addr = getelementptr inbounds float, ptr %out, i64 %b
  store float %sum, ptr %o.addr, align 4
  %stop = icmp slt i64 %end, 0
  br i1 %stop, label %exit, label %outer

exit:
  ret void
}

declare double @llvm.fmuladd.f64(double, double, double)

; Runtime-unrolled by 4 (what -O3 makes of @bag's inner loop): a remainder
; loop over [start, start + (len mod 4)), then the unrolled loop, skipped
; when len < 4, which looks ahead across the bags and reads its look-ahead
; indices from one pointer. The remainder loop runs at most 3 iterations,
; too few to look ahead within itself, but it looks ahead across the bags
; as many indices as the unrolled loop (8 steps of 4: 32), so that the
; indices it walks are prefetched too.
; CHECK-LABEL: define void @unrolled(
; CHECK:       entry:
; CHECK:         %accel.nest.end = load i64
; CHECK:       prol:
; CHECK:         call void @llvm.prefetch.p0(
; CHECK-NOT:     call void @llvm.prefetch.p0(
; CHECK:       inner.preheader:
; CHECK:         %smax{{[0-9]*}} = call i64 @llvm.smax.i64(i64 %end, i64 %accel.nest.end{{[0-9]*}})
; CHECK:         %[[SPAN:.*]] = sub i64 %smax{{[0-9]*}}, %j.unr
; CHECK:         %[[ITERS:.*]] = lshr i64 %[[SPAN]], 2
; CHECK:         %accel.last{{[0-9]*}} = add nsw i64 %[[ITERS]], -1
; CHECK:       inner:
; CHECK:         %id.ahead = load i32, ptr %[[P:[a-z0-9.]+]], align 4
; CHECK:         call void @llvm.prefetch.p0(
; CHECK:         %id.addr.1.ahead = getelementptr i8, ptr %[[P]], i64 4
; CHECK:         %id.1.ahead = load i32, ptr %id.addr.1.ahead, align 4
; CHECK-COUNT-3: call void @llvm.prefetch.p0(
; CHECK-NOT:     call void @llvm.prefetch.p0(
; CHECK:         ret void

; REMARK-NOT: remark: {{.*}} loop runs at most 3 iterations
; REMARK: remark: {{.*}} prefetched T[...] via idx, 32 iterations ahead, 1 line, across the iterations of the outer loop
; REMARK-COUNT-4: remark: {{.*}} prefetched T[...] via idx, 8 iterations ahead, 1 line, across the iterations of the outer loop

define void @unrolled(ptr noalias %T, ptr noalias %idx, ptr noalias %off, i64 %nb, ptr noalias %out) {
entry:
  %first = load i64, ptr %off, align 8
  br label %outer

outer:
  %b = phi i64 [ 0, %entry ], [ %b.next, %latch ]
  %start = phi i64 [ %first, %entry ], [ %end, %latch ]
  %b.next = add nuw nsw i64 %b, 1
  %end.addr = getelementptr inbounds i64, ptr %off, i64 %b.next
  %end = load i64, ptr %end.addr, align 8
  %nonempty = icmp slt i64 %start, %end
  br i1 %nonempty, label %bag.ph, label %latch

bag.ph:
  %len = sub i64 %end, %start
  %rem = and i64 %len, 3
  %no.rem = icmp eq i64 %rem, 0
  br i1 %no.rem, label %prol.exit, label %prol

prol:
  %jp = phi i64 [ %start, %bag.ph ], [ %jp.next, %prol ]
  %sp = phi float [ 0.0, %bag.ph ], [ %sp.next, %prol ]
  %np = phi i64 [ 0, %bag.ph ], [ %np.next, %prol ]
  %idp.addr = getelementptr inbounds i32, ptr %idx, i64 %jp
  %idp = load i32, ptr %idp.addr, align 4
  %idp.ext = sext i32 %idp to i64
  %tp.addr = getelementptr inbounds float, ptr %T, i64 %idp.ext
  %tp = load float, ptr %tp.addr, align 4
  %sp.next = fadd float %sp, %tp
  %jp.next = add nsw i64 %jp, 1
  %np.next = add i64 %np, 1
  %prol.done = icmp eq i64 %np.next, %rem
  br i1 %prol.done, label %prol.exit, label %prol

prol.exit:
  %j.unr = phi i64 [ %start, %bag.ph ], [ %jp.next, %prol ]
  %s.unr = phi float [ 0.0, %bag.ph ], [ %sp.next, %prol ]
  %neg.len = sub i64 %start, %end
  %short = icmp ugt i64 %neg.len, -4
  br i1 %short, label %inner.exit, label %inner

inner:
  %j = phi i64 [ %j.unr, %prol.exit ], [ %j.next, %inner ]
  %s = phi float [ %s.unr, %prol.exit ], [ %s.3, %inner ]
  %id.addr = getelementptr inbounds i32, ptr %idx, i64 %j
  %id = load i32, ptr %id.addr, align 4
  %id.ext = sext i32 %id to i64
  %t.addr = getelementptr inbounds float, ptr %T, i64 %id.ext
  %t = load float, ptr %t.addr, align 4
  %s.0 = fadd float %s, %t
  %j.1 = add nsw i64 %j, 1
  %id.addr.1 = getelementptr inbounds i32, ptr %idx, i64 %j.1
  %id.1 = load i32, ptr %id.addr.1, align 4
  %id.ext.1 = sext i32 %id.1 to i64
  %t.addr.1 = getelementptr inbounds float, ptr %T, i64 %id.ext.1
  %t.1 = load float, ptr %t.addr.1, align 4
  %s.1 = fadd float %s.0, %t.1
  %j.2 = add nsw i64 %j, 2
  %id.addr.2 = getelementptr inbounds i32, ptr %idx, i64 %j.2
  %id.2 = load i32, ptr %id.addr.2, align 4
  %id.ext.2 = sext i32 %id.2 to i64
  %t.addr.2 = getelementptr inbounds float, ptr %T, i64 %id.ext.2
  %t.2 = load float, ptr %t.addr.2, align 4
  %s.2 = fadd float %s.1, %t.2
  %j.3 = add nsw i64 %j, 3
  %id.addr.3 = getelementptr inbounds i32, ptr %idx, i64 %j.3
  %id.3 = load i32, ptr %id.addr.3, align 4
  %id.ext.3 = sext i32 %id.3 to i64
  %t.addr.3 = getelementptr inbounds float, ptr %T, i64 %id.ext.3
  %t.3 = load float, ptr %t.addr.3, align 4
  %s.3 = fadd float %s.2, %t.3
  %j.next = add nsw i64 %j, 4
  %inner.done = icmp eq i64 %j.next, %end
  br i1 %inner.done, label %inner.exit, label %inner

inner.exit:
  %s.bag = phi float [ %s.unr, %prol.exit ], [ %s.3, %inner ]
  br label %latch

latch:
  %sum = phi float [ 0.0, %outer ], [ %s.bag, %inner.exit ]
  %o.addr = getelementptr inbounds float, ptr %out, i64 %b
  store float %sum, ptr %o.addr, align 4
  %outer.done = icmp eq i64 %b.next, %nb
  br i1 %outer.done, label %exit, label %outer

exit:
  ret void
}

; The same, but the unrolled loop is also skipped when len is 4 to 7, where
; its part of the bag is not empty: those indices are not loaded, and its
; look-ahead stops at its own last iteration.
; CHECK-LABEL: define void @unrolled_skips_too_much(
; CHECK-NOT:     accel.nest.end
; CHECK:         ret void

; REMARK: remark: {{.*}} loop runs at most 3 iterations
; REMARK: remark: {{.*}} look-ahead stops at the loop's last iteration, not at the end of the loop nest: the unrolled loop may be skipped on a range it does not leave to its remainder loop
; REMARK-COUNT-4: remark: {{.*}} prefetched T[...] via idx, 8 iterations ahead, 1 line{{$}}

define void @unrolled_skips_too_much(ptr noalias %T, ptr noalias %idx, ptr noalias %off, i64 %nb, ptr noalias %out) {
entry:
  %first = load i64, ptr %off, align 8
  br label %outer

outer:
  %b = phi i64 [ 0, %entry ], [ %b.next, %latch ]
  %start = phi i64 [ %first, %entry ], [ %end, %latch ]
  %b.next = add nuw nsw i64 %b, 1
  %end.addr = getelementptr inbounds i64, ptr %off, i64 %b.next
  %end = load i64, ptr %end.addr, align 8
  %nonempty = icmp slt i64 %start, %end
  br i1 %nonempty, label %bag.ph, label %latch

bag.ph:
  %len = sub i64 %end, %start
  %rem = and i64 %len, 3
  %no.rem = icmp eq i64 %rem, 0
  br i1 %no.rem, label %prol.exit, label %prol

prol:
  %jp = phi i64 [ %start, %bag.ph ], [ %jp.next, %prol ]
  %sp = phi float [ 0.0, %bag.ph ], [ %sp.next, %prol ]
  %np = phi i64 [ 0, %bag.ph ], [ %np.next, %prol ]
  %idp.addr = getelementptr inbounds i32, ptr %idx, i64 %jp
  %idp = load i32, ptr %idp.addr, align 4
  %idp.ext = sext i32 %idp to i64
  %tp.addr = getelementptr inbounds float, ptr %T, i64 %idp.ext
  %tp = load float, ptr %tp.addr, align 4
  %sp.next = fadd float %sp, %tp
  %jp.next = add nsw i64 %jp, 1
  %np.next = add i64 %np, 1
  %prol.done = icmp eq i64 %np.next, %rem
  br i1 %prol.done, label %prol.exit, label %prol

prol.exit:
  %j.unr = phi i64 [ %start, %bag.ph ], [ %jp.next, %prol ]
  %s.unr = phi float [ 0.0, %bag.ph ], [ %sp.next, %prol ]
  %neg.len = sub i64 %start, %end
  %short = icmp ugt i64 %neg.len, -8
  br i1 %short, label %inner.exit, label %inner

inner:
  %j = phi i64 [ %j.unr, %prol.exit ], [ %j.next, %inner ]
  %s = phi float [ %s.unr, %prol.exit ], [ %s.3, %inner ]
  %id.addr = getelementptr inbounds i32, ptr %idx, i64 %j
  %id = load i32, ptr %id.addr, align 4
  %id.ext = sext i32 %id to i64
  %t.addr = getelementptr inbounds float, ptr %T, i64 %id.ext
  %t = load float, ptr %t.addr, align 4
  %s.0 = fadd float %s, %t
  %j.1 = add nsw i64 %j, 1
  %id.addr.1 = getelementptr inbounds i32, ptr %idx, i64 %j.1
  %id.1 = load i32, ptr %id.addr.1, align 4
  %id.ext.1 = sext i32 %id.1 to i64
  %t.addr.1 = getelementptr inbounds float, ptr %T, i64 %id.ext.1
  %t.1 = load float, ptr %t.addr.1, align 4
  %s.1 = fadd float %s.0, %t.1
  %j.2 = add nsw i64 %j, 2
  %id.addr.2 = getelementptr inbounds i32, ptr %idx, i64 %j.2
  %id.2 = load i32, ptr %id.addr.2, align 4
  %id.ext.2 = sext i32 %id.2 to i64
  %t.addr.2 = getelementptr inbounds float, ptr %T, i64 %id.ext.2
  %t.2 = load float, ptr %t.addr.2, align 4
  %s.2 = fadd float %s.1, %t.2
  %j.3 = add nsw i64 %j, 3
  %id.addr.3 = getelementptr inbounds i32, ptr %idx, i64 %j.3
  %id.3 = load i32, ptr %id.addr.3, align 4
  %id.ext.3 = sext i32 %id.3 to i64
  %t.addr.3 = getelementptr inbounds float, ptr %T, i64 %id.ext.3
  %t.3 = load float, ptr %t.addr.3, align 4
  %s.3 = fadd float %s.2, %t.3
  %j.next = add nsw i64 %j, 4
  %inner.done = icmp eq i64 %j.next, %end
  br i1 %inner.done, label %inner.exit, label %inner

inner.exit:
  %s.bag = phi float [ %s.unr, %prol.exit ], [ %s.3, %inner ]
  br label %latch

latch:
  %sum = phi float [ 0.0, %outer ], [ %s.bag, %inner.exit ]
  %o.addr = getelementptr inbounds float, ptr %out, i64 %b
  store float %sum, ptr %o.addr, align 4
  %outer.done = icmp eq i64 %b.next, %nb
  br i1 %outer.done, label %exit, label %outer

exit:
  ret void
}

; The same, with the remainder loop leaving through a block that stores its
; partial result and falls through to the unrolled loop's preheader (where
; LICM sinks the stores of an accumulator it promoted, as in embedding bags
; whose output row lives in registers): the tiles are still walked whole.
; CHECK-LABEL: define void @unrolled_exit_block(
; CHECK:       entry:
; CHECK:         %accel.nest.end = load i64
; CHECK:       prol:
; CHECK:         call void @llvm.prefetch.p0(
; CHECK:       prol.store:
; CHECK-NEXT:    %op.addr = getelementptr
; CHECK-NEXT:    store float %sp.next
; CHECK:       inner:
; CHECK-COUNT-4: call void @llvm.prefetch.p0(
; CHECK-NOT:     call void @llvm.prefetch.p0(
; CHECK:         ret void

; REMARK: remark: {{.*}} prefetched T[...] via idx, 32 iterations ahead, 1 line, across the iterations of the outer loop
; REMARK-COUNT-4: remark: {{.*}} prefetched T[...] via idx, 8 iterations ahead, 1 line, across the iterations of the outer loop

define void @unrolled_exit_block(ptr noalias %T, ptr noalias %idx, ptr noalias %off, i64 %nb, ptr noalias %out) {
entry:
  %first = load i64, ptr %off, align 8
  br label %outer

outer:
  %b = phi i64 [ 0, %entry ], [ %b.next, %latch ]
  %start = phi i64 [ %first, %entry ], [ %end, %latch ]
  %b.next = add nuw nsw i64 %b, 1
  %end.addr = getelementptr inbounds i64, ptr %off, i64 %b.next
  %end = load i64, ptr %end.addr, align 8
  %nonempty = icmp slt i64 %start, %end
  br i1 %nonempty, label %bag.ph, label %latch

bag.ph:
  %len = sub i64 %end, %start
  %rem = and i64 %len, 3
  %no.rem = icmp eq i64 %rem, 0
  br i1 %no.rem, label %prol.exit, label %prol

prol:
  %jp = phi i64 [ %start, %bag.ph ], [ %jp.next, %prol ]
  %sp = phi float [ 0.0, %bag.ph ], [ %sp.next, %prol ]
  %np = phi i64 [ 0, %bag.ph ], [ %np.next, %prol ]
  %idp.addr = getelementptr inbounds i32, ptr %idx, i64 %jp
  %idp = load i32, ptr %idp.addr, align 4
  %idp.ext = sext i32 %idp to i64
  %tp.addr = getelementptr inbounds float, ptr %T, i64 %idp.ext
  %tp = load float, ptr %tp.addr, align 4
  %sp.next = fadd float %sp, %tp
  %jp.next = add nsw i64 %jp, 1
  %np.next = add i64 %np, 1
  %prol.done = icmp eq i64 %np.next, %rem
  br i1 %prol.done, label %prol.store, label %prol

prol.store:
  %op.addr = getelementptr inbounds float, ptr %out, i64 %b
  store float %sp.next, ptr %op.addr, align 4
  br label %prol.exit

prol.exit:
  %j.unr = phi i64 [ %start, %bag.ph ], [ %jp.next, %prol.store ]
  %s.unr = phi float [ 0.0, %bag.ph ], [ %sp.next, %prol.store ]
  %neg.len = sub i64 %start, %end
  %short = icmp ugt i64 %neg.len, -4
  br i1 %short, label %inner.exit, label %inner

inner:
  %j = phi i64 [ %j.unr, %prol.exit ], [ %j.next, %inner ]
  %s = phi float [ %s.unr, %prol.exit ], [ %s.3, %inner ]
  %id.addr = getelementptr inbounds i32, ptr %idx, i64 %j
  %id = load i32, ptr %id.addr, align 4
  %id.ext = sext i32 %id to i64
  %t.addr = getelementptr inbounds float, ptr %T, i64 %id.ext
  %t = load float, ptr %t.addr, align 4
  %s.0 = fadd float %s, %t
  %j.1 = add nsw i64 %j, 1
  %id.addr.1 = getelementptr inbounds i32, ptr %idx, i64 %j.1
  %id.1 = load i32, ptr %id.addr.1, align 4
  %id.ext.1 = sext i32 %id.1 to i64
  %t.addr.1 = getelementptr inbounds float, ptr %T, i64 %id.ext.1
  %t.1 = load float, ptr %t.addr.1, align 4
  %s.1 = fadd float %s.0, %t.1
  %j.2 = add nsw i64 %j, 2
  %id.addr.2 = getelementptr inbounds i32, ptr %idx, i64 %j.2
  %id.2 = load i32, ptr %id.addr.2, align 4
  %id.ext.2 = sext i32 %id.2 to i64
  %t.addr.2 = getelementptr inbounds float, ptr %T, i64 %id.ext.2
  %t.2 = load float, ptr %t.addr.2, align 4
  %s.2 = fadd float %s.1, %t.2
  %j.3 = add nsw i64 %j, 3
  %id.addr.3 = getelementptr inbounds i32, ptr %idx, i64 %j.3
  %id.3 = load i32, ptr %id.addr.3, align 4
  %id.ext.3 = sext i32 %id.3 to i64
  %t.addr.3 = getelementptr inbounds float, ptr %T, i64 %id.ext.3
  %t.3 = load float, ptr %t.addr.3, align 4
  %s.3 = fadd float %s.2, %t.3
  %j.next = add nsw i64 %j, 4
  %inner.done = icmp eq i64 %j.next, %end
  br i1 %inner.done, label %inner.exit, label %inner

inner.exit:
  %s.bag = phi float [ %s.unr, %prol.exit ], [ %s.3, %inner ]
  br label %latch

latch:
  %sum = phi float [ 0.0, %outer ], [ %s.bag, %inner.exit ]
  %o.addr = getelementptr inbounds float, ptr %out, i64 %b
  store float %sum, ptr %o.addr, align 4
  %outer.done = icmp eq i64 %b.next, %nb
  br i1 %outer.done, label %exit, label %outer

exit:
  ret void
}
