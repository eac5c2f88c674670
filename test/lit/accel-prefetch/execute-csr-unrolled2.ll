; Execution: a CSR loop nest unrolled by 2 at run time, in the shape -O3
; gives an embedding bag whose rows are long (llvmaccel's own bag loops of
; 64 floats): the remainder is at most one iteration, written as one block
; between the preheader and the unrolled loop instead of a loop, and the
; unrolled loop is skipped by comparing the end with start + 1. The
; look-ahead of the unrolled loop runs across the bags up to the end of the
; whole nest (the remainder block loads the odd bag's first index), and the
; results before and after the pass are the same; the index array ends right
; before a PROT_NONE guard page, so an unclamped look-ahead load faults. The
; offsets cover empty bags, bags of one (the remainder only), odd and even
; lengths, non-monotone offsets and a last bag of one, so that the last
; index before the guard page is loaded by the remainder block.

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
; RUN: opt %loadaccel -passes='accel-prefetch<distance=16>' -S %s \
; RUN:   | FileCheck %s --check-prefix=IR
; RUN: opt %loadaccel -passes='accel-prefetch<distance=16>' \
; RUN:   -pass-remarks=accel-prefetch -pass-remarks-missed=accel-prefetch \
; RUN:   -disable-output %s 2>&1 | FileCheck %s --check-prefix=REMARK

; CHECK: case=1 sum=
; CHECK: case=2 sum=
; CHECK: case=3 sum=
; CHECK: case=4 sum=
; CHECK: case=5 sum=
; CHECK: case=6 sum=

; The end of the nest is loaded before the outer loop; the remainder block
; has no prefetch, the unrolled loop one per copy.
; IR-LABEL: define void @bags2(
; IR:          %accel.nest.end{{[0-9]*}} = load i64
; IR:        prol:
; IR-NOT:      call void @llvm.prefetch.p0(
; IR:        inner:
; IR-COUNT-2:  call void @llvm.prefetch.p0(
; IR-NOT:      call void @llvm.prefetch.p0(

; REMARK-COUNT-2: remark: {{.*}} prefetched T[...] via idx, 16 iterations ahead, 1 line, across the iterations of the outer loop
; Not executed, declined to a look-ahead within each bag: a remainder block
; guarded by (end - start) mod 4, which one iteration does not cover, and
; one that loads another index than the bag's first.
; REMARK: remark: {{.*}} look-ahead stops at the loop's last iteration, not at the end of the loop nest: the remainder loop does not walk (end - start) mod 2^k iterations
; REMARK: remark: {{.*}} look-ahead stops at the loop's last iteration, not at the end of the loop nest: the remainder and unrolled loops do not load all the indices the look-ahead may read
; REMARK-NOT: across the iterations of the outer loop

@T = internal global [65536 x float] zeroinitializer, align 64
@out = internal global [16 x float] zeroinitializer, align 64
@o1 = internal constant [7 x i64] [i64 0, i64 3, i64 3, i64 10, i64 11, i64 11, i64 20]
@o2 = internal constant [2 x i64] [i64 0, i64 17]
@o3 = internal constant [6 x i64] [i64 0, i64 5, i64 2, i64 9, i64 9, i64 12]
@o4 = internal constant [2 x i64] [i64 0, i64 1]
@o5 = internal constant [5 x i64] [i64 0, i64 8, i64 24, i64 24, i64 32]
@o6 = internal constant [4 x i64] [i64 0, i64 9, i64 16, i64 17]
@fmt = private constant [25 x i8] c"case=%d sum=%.6e n=%lld\0A\00"


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

define internal void @run(i32 %case, ptr %off, i64 %nb, i64 %n) {
  %I = call ptr @guarded_indices(i64 %n, i64 %n)
  call void @bags2(ptr @T, ptr %I, ptr %off, i64 %nb, ptr @out)
  call void @report(i32 %case, i64 %nb, i64 %n)
  ret void
}

define i32 @main() {
  call void @fill_table()
  call void @run(i32 1, ptr @o1, i64 6, i64 20)
  call void @run(i32 2, ptr @o2, i64 1, i64 17)
  call void @run(i32 3, ptr @o3, i64 5, i64 12)
  call void @run(i32 4, ptr @o4, i64 1, i64 1)
  call void @run(i32 5, ptr @o5, i64 4, i64 32)
  call void @run(i32 6, ptr @o6, i64 3, i64 17)
  ret i32 0
}

define void @bags2(ptr noalias %T, ptr noalias %idx, ptr noalias %off, i64 %nb, ptr noalias %out) {
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
  %start1 = add i64 %start, 1
  %rem = and i64 %len, 1
  %no.rem = icmp eq i64 %rem, 0
  br i1 %no.rem, label %prol.exit, label %prol

prol:
  %idp.addr = getelementptr inbounds i32, ptr %idx, i64 %start
  %idp = load i32, ptr %idp.addr, align 4
  %idp.ext = sext i32 %idp to i64
  %tp.addr = getelementptr inbounds float, ptr %T, i64 %idp.ext
  %tp = load float, ptr %tp.addr, align 4
  %sp = fadd float %tp, 0.0
  %jp.next = add nsw i64 %start, 1
  br label %prol.exit

prol.exit:
  %j.unr = phi i64 [ %start, %bag.ph ], [ %jp.next, %prol ]
  %s.unr = phi float [ 0.0, %bag.ph ], [ %sp, %prol ]
  %short = icmp eq i64 %end, %start1
  br i1 %short, label %inner.exit, label %inner

inner:
  %j = phi i64 [ %j.unr, %prol.exit ], [ %j.next, %inner ]
  %s = phi float [ %s.unr, %prol.exit ], [ %s.1, %inner ]
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
  %j.next = add nsw i64 %j, 2
  %inner.done = icmp eq i64 %j.next, %end
  br i1 %inner.done, label %inner.exit, label %inner

inner.exit:
  %s.bag = phi float [ %s.unr, %prol.exit ], [ %s.1, %inner ]
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

; @bags2 with its remainder block guarded by (end - start) mod 4.
define void @bags2_mod4(ptr noalias %T, ptr noalias %idx, ptr noalias %off, i64 %nb, ptr noalias %out) {
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
  %start1 = add i64 %start, 1
  %rem = and i64 %len, 3
  %no.rem = icmp eq i64 %rem, 0
  br i1 %no.rem, label %prol.exit, label %prol

prol:
  %idp.addr = getelementptr inbounds i32, ptr %idx, i64 %start
  %idp = load i32, ptr %idp.addr, align 4
  %idp.ext = sext i32 %idp to i64
  %tp.addr = getelementptr inbounds float, ptr %T, i64 %idp.ext
  %tp = load float, ptr %tp.addr, align 4
  %sp = fadd float %tp, 0.0
  %jp.next = add nsw i64 %start, 1
  br label %prol.exit

prol.exit:
  %j.unr = phi i64 [ %start, %bag.ph ], [ %jp.next, %prol ]
  %s.unr = phi float [ 0.0, %bag.ph ], [ %sp, %prol ]
  %short = icmp eq i64 %end, %start1
  br i1 %short, label %inner.exit, label %inner

inner:
  %j = phi i64 [ %j.unr, %prol.exit ], [ %j.next, %inner ]
  %s = phi float [ %s.unr, %prol.exit ], [ %s.1, %inner ]
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
  %j.next = add nsw i64 %j, 2
  %inner.done = icmp eq i64 %j.next, %end
  br i1 %inner.done, label %inner.exit, label %inner

inner.exit:
  %s.bag = phi float [ %s.unr, %prol.exit ], [ %s.1, %inner ]
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

; @bags2 with a remainder block that loads idx[start + 1].
define void @bags2_skips(ptr noalias %T, ptr noalias %idx, ptr noalias %off, i64 %nb, ptr noalias %out) {
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
  %start1 = add i64 %start, 1
  %rem = and i64 %len, 1
  %no.rem = icmp eq i64 %rem, 0
  br i1 %no.rem, label %prol.exit, label %prol

prol:
  %idp.addr = getelementptr inbounds i32, ptr %idx, i64 %start1
  %idp = load i32, ptr %idp.addr, align 4
  %idp.ext = sext i32 %idp to i64
  %tp.addr = getelementptr inbounds float, ptr %T, i64 %idp.ext
  %tp = load float, ptr %tp.addr, align 4
  %sp = fadd float %tp, 0.0
  %jp.next = add nsw i64 %start, 1
  br label %prol.exit

prol.exit:
  %j.unr = phi i64 [ %start, %bag.ph ], [ %jp.next, %prol ]
  %s.unr = phi float [ 0.0, %bag.ph ], [ %sp, %prol ]
  %short = icmp eq i64 %end, %start1
  br i1 %short, label %inner.exit, label %inner

inner:
  %j = phi i64 [ %j.unr, %prol.exit ], [ %j.next, %inner ]
  %s = phi float [ %s.unr, %prol.exit ], [ %s.1, %inner ]
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
  %j.next = add nsw i64 %j, 2
  %inner.done = icmp eq i64 %j.next, %end
  br i1 %inner.done, label %inner.exit, label %inner

inner.exit:
  %s.bag = phi float [ %s.unr, %prol.exit ], [ %s.1, %inner ]
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
