; Execution: a CSR loop nest runtime-unrolled by 4 (what -O3 makes of the
; inner loop for generic x86-64: a remainder loop over [off[b], off[b] +
; (len mod 4)), at most 3 iterations, followed by the loop unrolled by 4
; over the rest of the bag) computes the same results before and after the
; pass. The remainder loop is too short to look ahead within itself, but
; its look-ahead runs across the bags as far as the unrolled loop's (it
; used to be declined as a short loop, leaving the indices it walks
; unprefetched: about 9% of a CSR SpMV's with 8 to 24 nonzeros per row).
; The index array ends right before a PROT_NONE guard page, so a
; look-ahead index load not clamped to the last index the nest loads
; faults. The offsets are those of execute-csr-unrolled.ll (8-way): bags
; shorter than the unroll factor, multiples of it, empty bags, non-monotone
; offsets, a last offset below the current bag, and a last bag walked by
; its remainder loop only.

; REQUIRES: lli, host-x86_64
; RUN: %lli %s > %t.before
; RUN: opt %loadaccel -passes='accel-prefetch<distance=16>' %s -o %t.d16.bc
; RUN: %lli %t.d16.bc > %t.d16
; RUN: diff %t.before %t.d16
; RUN: opt %loadaccel -passes='accel-prefetch<distance=1>' %s -o %t.d1.bc
; RUN: %lli %t.d1.bc > %t.d1
; RUN: diff %t.before %t.d1
; RUN: opt %loadaccel -passes='accel-prefetch<distance=256>' %s -o %t.d256.bc
; RUN: %lli %t.d256.bc > %t.d256
; RUN: diff %t.before %t.d256
; RUN: FileCheck %s --input-file=%t.before
; Both loops really look ahead across the nest, with the default work
; threshold (a cross-bag look-ahead needs no minimum work):
; RUN: opt %loadaccel -passes='accel-prefetch<distance=16>' -S %s \
; RUN:   | FileCheck %s --check-prefix=IR
; RUN: opt %loadaccel -passes='accel-prefetch<distance=16>' \
; RUN:   -pass-remarks=accel-prefetch -disable-output %s 2>&1 \
; RUN:   | FileCheck %s --check-prefix=REMARK

; CHECK: case=1 sum=
; CHECK: case=2 sum=
; CHECK: case=3 sum=
; CHECK: case=4 sum=
; CHECK: case=5 sum=
; CHECK: case=6 sum=
; CHECK: case=7 sum=
; CHECK: case=8 sum=
; CHECK: case=9 sum=

; IR-LABEL: define void @bags(
; IR-COUNT-2:  %accel.nest.end{{[0-9]*}} = load i64
; IR:        prol:
; IR-COUNT-1:  call void @llvm.prefetch.p0(
; IR-NOT:      call void @llvm.prefetch.p0(
; IR:        inner:
; IR-COUNT-4:  call void @llvm.prefetch.p0(
; IR-NOT:      call void @llvm.prefetch.p0(
; IR-LABEL: define void @bags_exit_block(
; IR-COUNT-2:  %accel.nest.end{{[0-9]*}} = load i64
; IR:        prol:
; IR-COUNT-1:  call void @llvm.prefetch.p0(
; IR-NOT:      call void @llvm.prefetch.p0(
; IR:        prol.store:
; IR:        inner:
; IR-COUNT-4:  call void @llvm.prefetch.p0(
; IR-NOT:      call void @llvm.prefetch.p0(

; The remainder loop looks ahead as many indices as the unrolled loop.
; REMARK: remark: {{.*}} prefetched T[...] via idx, 64 iterations ahead, 1 line, across the iterations of the outer loop
; REMARK-COUNT-4: remark: {{.*}} prefetched T[...] via idx, 16 iterations ahead, 1 line, across the iterations of the outer loop
; REMARK: remark: {{.*}} prefetched T[...] via idx, 64 iterations ahead, 1 line, across the iterations of the outer loop
; REMARK-COUNT-4: remark: {{.*}} prefetched T[...] via idx, 16 iterations ahead, 1 line, across the iterations of the outer loop
; REMARK-NOT: remark

@T = internal global [65536 x float] zeroinitializer, align 64
@out = internal global [16 x float] zeroinitializer, align 64
@fmt = private constant [25 x i8] c"case=%d sum=%.6e n=%lld\0A\00"

; Bags of 3, 0, 7, 1, 0, 9; one bag of 17; non-monotone; last offset below
; the first bag's start; one index; multiples of 8; a last bag of 3 (its
; remainder loop loads the last indices); bags of 8 then 2; bags of 15, 16.
@o1 = internal constant [7 x i64] [i64 0, i64 3, i64 3, i64 10, i64 11, i64 11, i64 20]
@o2 = internal constant [2 x i64] [i64 0, i64 17]
@o3 = internal constant [6 x i64] [i64 0, i64 5, i64 2, i64 9, i64 9, i64 12]
@o4 = internal constant [3 x i64] [i64 4, i64 12, i64 0]
@o5 = internal constant [2 x i64] [i64 0, i64 1]
@o6 = internal constant [5 x i64] [i64 0, i64 8, i64 24, i64 24, i64 32]
@o7 = internal constant [4 x i64] [i64 0, i64 9, i64 17, i64 20]
@o8 = internal constant [3 x i64] [i64 0, i64 8, i64 10]
@o9 = internal constant [3 x i64] [i64 0, i64 15, i64 31]

declare ptr @mmap(ptr, i64, i32, i32, i32, i64)
declare i32 @mprotect(ptr, i64, i32)
declare i32 @printf(ptr, ...)

define internal i64 @lcg(i64 %s) {
  %m = mul i64 %s, 6364136223846793005
  %a = add i64 %m, 1442695040888963407
  ret i64 %a
}

; n (<= 1024) pseudo-random indices below 65536, ending at a guard page.
define internal ptr @guarded_indices(i64 %n, i64 %seed) {
entry:
  %p = call ptr @mmap(ptr null, i64 8192, i32 3, i32 34, i32 -1, i64 0)
  %guard = getelementptr i8, ptr %p, i64 4096
  %r = call i32 @mprotect(ptr %guard, i64 4096, i32 0)
  %bytes = shl i64 %n, 2
  %neg = sub i64 0, %bytes
  %base = getelementptr i8, ptr %guard, i64 %neg
  br label %loop

loop:
  %k = phi i64 [ 0, %entry ], [ %k.next, %loop ]
  %s = phi i64 [ %seed, %entry ], [ %s.next, %loop ]
  %s.next = call i64 @lcg(i64 %s)
  %hi = lshr i64 %s.next, 33
  %v = urem i64 %hi, 65536
  %v32 = trunc i64 %v to i32
  %addr = getelementptr inbounds i32, ptr %base, i64 %k
  store i32 %v32, ptr %addr, align 4
  %k.next = add nuw nsw i64 %k, 1
  %done = icmp eq i64 %k.next, %n
  br i1 %done, label %exit, label %loop

exit:
  ret ptr %base
}

define internal void @fill_table() {
entry:
  br label %loop

loop:
  %k = phi i64 [ 0, %entry ], [ %k.next, %loop ]
  %s = phi i64 [ 42, %entry ], [ %s.next, %loop ]
  %s.next = call i64 @lcg(i64 %s)
  %hi = lshr i64 %s.next, 40
  %f = uitofp i64 %hi to float
  %addr = getelementptr inbounds float, ptr @T, i64 %k
  store float %f, ptr %addr, align 4
  %k.next = add nuw nsw i64 %k, 1
  %done = icmp eq i64 %k.next, 65536
  br i1 %done, label %exit, label %loop

exit:
  ret void
}

; Prints the sum of out[0 .. nb) weighted by the bag number.
define internal void @report(i32 %case, i64 %nb, i64 %n) {
entry:
  br label %loop

loop:
  %k = phi i64 [ 0, %entry ], [ %k.next, %loop ]
  %acc = phi double [ 0.0, %entry ], [ %acc.next, %loop ]
  %addr = getelementptr inbounds float, ptr @out, i64 %k
  %o = load float, ptr %addr, align 4
  %od = fpext float %o to double
  %kf = uitofp i64 %k to double
  %kw = fadd double %kf, 1.0
  %x = fmul double %od, %kw
  %acc.next = fadd double %acc, %x
  %k.next = add nuw nsw i64 %k, 1
  %done = icmp eq i64 %k.next, %nb
  br i1 %done, label %print, label %loop

print:
  %p = call i32 (ptr, ...) @printf(ptr @fmt, i32 %case, double %acc.next, i64 %n)
  ret void
}

; n indices ending at a guard page, summed into nb bags by @bags and by
; @bags_exit_block.
define internal void @run(i32 %case, ptr %off, i64 %nb, i64 %n) {
  %I = call ptr @guarded_indices(i64 %n, i64 %n)
  call void @bags(ptr @T, ptr %I, ptr %off, i64 %nb, ptr @out)
  call void @report(i32 %case, i64 %nb, i64 %n)
  call void @bags_exit_block(ptr @T, ptr %I, ptr %off, i64 %nb, ptr @out)
  call void @report(i32 %case, i64 %nb, i64 %n)
  ret void
}

define i32 @main() {
  call void @fill_table()
  call void @run(i32 1, ptr @o1, i64 6, i64 20)
  call void @run(i32 2, ptr @o2, i64 1, i64 17)
  call void @run(i32 3, ptr @o3, i64 5, i64 12)
  call void @run(i32 4, ptr @o4, i64 2, i64 12)
  call void @run(i32 5, ptr @o5, i64 1, i64 1)
  call void @run(i32 6, ptr @o6, i64 4, i64 32)
  call void @run(i32 7, ptr @o7, i64 3, i64 20)
  call void @run(i32 8, ptr @o8, i64 2, i64 10)
  call void @run(i32 9, ptr @o9, i64 2, i64 31)
  ret i32 0
}

; The shape clang -O3 gives an embedding bag once the inner loop is unrolled
; at run time: the start of a bag is the end loaded in the previous outer
; iteration, the remainder loop walks (end - start) mod 4 indices, the
; unrolled loop the rest; it is skipped when end - start < 4.
define void @bags(ptr noalias %T, ptr noalias %idx, ptr noalias %off, i64 %nb, ptr noalias %out) {
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

; @bags with the remainder loop leaving through a block that stores its
; partial sum (where LICM sinks the stores of a promoted accumulator) before
; the unrolled loop: the same look-ahead across the bags.
define void @bags_exit_block(ptr noalias %T, ptr noalias %idx, ptr noalias %off, i64 %nb, ptr noalias %out) {
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
