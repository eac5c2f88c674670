; Execution: CSR loop nests (an outer loop over bags, an inner loop over
; idx[off[b]] .. idx[off[b+1]]) compute the same results before and after
; the pass, whose look-ahead runs across the bags up to the end of the whole
; nest. Every index array ends right before a PROT_NONE guard page, so a
; look-ahead index load not clamped to the last index the nest loads faults.
; The offsets cover empty bags, a single bag, non-monotone offsets and a last
; offset below the current bag (where the clamp must keep the bag's own end).

; REQUIRES: lli, host-x86_64
; RUN: %lli %s > %t.before
; RUN: opt %loadaccel -passes='accel-prefetch<distance=16;min-work=0>' \
; RUN:   %s -o %t.d16.bc
; RUN: %lli %t.d16.bc > %t.d16
; RUN: diff %t.before %t.d16
; RUN: opt %loadaccel -passes='accel-prefetch<distance=1;min-work=0>' \
; RUN:   %s -o %t.d1.bc
; RUN: %lli %t.d1.bc > %t.d1
; RUN: diff %t.before %t.d1
; RUN: opt %loadaccel -passes='accel-prefetch<distance=256;min-work=0>' \
; RUN:   %s -o %t.d256.bc
; RUN: %lli %t.d256.bc > %t.d256
; RUN: diff %t.before %t.d256
; RUN: FileCheck %s --input-file=%t.before
; The transformed kernels really look ahead across the nest:
; RUN: opt %loadaccel -passes='accel-prefetch<distance=16;min-work=0>' \
; RUN:   -S %s | FileCheck %s --check-prefix=IR

; CHECK: case=1 sum=
; CHECK: case=2 sum=
; CHECK: case=3 sum=
; CHECK: case=4 sum=
; CHECK: case=5 sum=
; CHECK: case=6 sum=
; CHECK: case=7 sum=
; IR-COUNT-2: %accel.nest.end = load

@T = internal global [65536 x float] zeroinitializer, align 64
@out = internal global [16 x float] zeroinitializer, align 64
@fmt = private constant [25 x i8] c"case=%d sum=%.6e n=%lld\0A\00"

; Monotone with empty bags; a single bag; non-monotone; last offset below
; the first bag's start; one index.
@o1 = internal constant [7 x i64] [i64 0, i64 3, i64 3, i64 10, i64 11, i64 11, i64 20]
@o2 = internal constant [2 x i64] [i64 0, i64 17]
@o3 = internal constant [6 x i64] [i64 0, i64 5, i64 2, i64 9, i64 9, i64 12]
@o4 = internal constant [3 x i64] [i64 4, i64 12, i64 0]
@o5 = internal constant [2 x i64] [i64 0, i64 1]
@w1 = internal constant [7 x i32] [i32 0, i32 3, i32 3, i32 10, i32 11, i32 11, i32 20]
@w3 = internal constant [6 x i32] [i32 0, i32 5, i32 2, i32 9, i32 9, i32 12]

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

; n indices ending at a guard page, summed into nb bags by @bags64.
define internal void @run64(i32 %case, ptr %off, i64 %nb, i64 %n) {
  %I = call ptr @guarded_indices(i64 %n, i64 %n)
  call void @bags64(ptr @T, ptr %I, ptr %off, i64 %nb, ptr @out)
  call void @report(i32 %case, i64 %nb, i64 %n)
  ret void
}

define internal void @run32(i32 %case, ptr %off, i64 %nb, i64 %n) {
  %I = call ptr @guarded_indices(i64 %n, i64 %n)
  call void @bags32(ptr @T, ptr %I, ptr %off, i64 %nb, ptr @out)
  call void @report(i32 %case, i64 %nb, i64 %n)
  ret void
}

define i32 @main() {
  call void @fill_table()
  call void @run64(i32 1, ptr @o1, i64 6, i64 20)
  call void @run64(i32 2, ptr @o2, i64 1, i64 17)
  call void @run64(i32 3, ptr @o3, i64 5, i64 12)
  call void @run64(i32 4, ptr @o4, i64 2, i64 12)
  call void @run64(i32 5, ptr @o5, i64 1, i64 1)
  call void @run32(i32 6, ptr @w1, i64 6, i64 20)
  call void @run32(i32 7, ptr @w3, i64 5, i64 12)
  ret i32 0
}

; The shape clang -O3 gives an embedding bag: the start of a bag is the end
; loaded in the previous outer iteration.
define void @bags64(ptr noalias %T, ptr noalias %idx, ptr noalias %off, i64 %nb, ptr noalias %out) {
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
  br i1 %nonempty, label %inner.ph, label %latch

inner.ph:
  br label %inner

inner:
  %j = phi i64 [ %start, %inner.ph ], [ %j.next, %inner ]
  %s = phi float [ 0.0, %inner.ph ], [ %s.next, %inner ]
  %id.addr = getelementptr inbounds i32, ptr %idx, i64 %j
  %id = load i32, ptr %id.addr, align 4
  %id.ext = sext i32 %id to i64
  %t.addr = getelementptr inbounds float, ptr %T, i64 %id.ext
  %t = load float, ptr %t.addr, align 4
  %s.next = fadd float %s, %t
  %j.next = add nsw i64 %j, 1
  %inner.done = icmp eq i64 %j.next, %end
  br i1 %inner.done, label %inner.exit, label %inner

inner.exit:
  br label %latch

latch:
  %sum = phi float [ 0.0, %outer ], [ %s.next, %inner.exit ]
  %o.addr = getelementptr inbounds float, ptr %out, i64 %b
  store float %sum, ptr %o.addr, align 4
  %outer.done = icmp eq i64 %b.next, %nb
  br i1 %outer.done, label %exit, label %outer

exit:
  ret void
}

; 32-bit offsets, both bounds loaded in every outer iteration.
define void @bags32(ptr noalias %T, ptr noalias %idx, ptr noalias %off, i64 %nb, ptr noalias %out) {
entry:
  br label %outer

outer:
  %b = phi i64 [ 0, %entry ], [ %b.next, %latch ]
  %start.addr = getelementptr inbounds i32, ptr %off, i64 %b
  %start.32 = load i32, ptr %start.addr, align 4
  %start = sext i32 %start.32 to i64
  %b.next = add nuw nsw i64 %b, 1
  %end.addr = getelementptr inbounds i32, ptr %off, i64 %b.next
  %end.32 = load i32, ptr %end.addr, align 4
  %end = sext i32 %end.32 to i64
  %nonempty = icmp slt i64 %start, %end
  br i1 %nonempty, label %inner.ph, label %latch

inner.ph:
  br label %inner

inner:
  %j = phi i64 [ %start, %inner.ph ], [ %j.next, %inner ]
  %s = phi float [ 0.0, %inner.ph ], [ %s.next, %inner ]
  %id.addr = getelementptr inbounds i32, ptr %idx, i64 %j
  %id = load i32, ptr %id.addr, align 4
  %id.ext = sext i32 %id to i64
  %t.addr = getelementptr inbounds float, ptr %T, i64 %id.ext
  %t = load float, ptr %t.addr, align 4
  %s.next = fadd float %s, %t
  %j.next = add nsw i64 %j, 1
  %inner.done = icmp eq i64 %j.next, %end
  br i1 %inner.done, label %inner.exit, label %inner

inner.exit:
  br label %latch

latch:
  %sum = phi float [ 0.0, %outer ], [ %s.next, %inner.exit ]
  %o.addr = getelementptr inbounds float, ptr %out, i64 %b
  store float %sum, ptr %o.addr, align 4
  %outer.done = icmp eq i64 %b.next, %nb
  br i1 %outer.done, label %exit, label %outer

exit:
  ret void
}
