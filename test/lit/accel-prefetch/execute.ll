; Execution: the kernels compute the same results before and after the
; pass, for trip counts below, at, and above the distance (n = 1, 3, 17 with
; distance 16, and 1000), and with the largest distance. Every index array ends right before a PROT_NONE
; guard page, so a look-ahead index load that is not clamped to the last
; iteration faults.

; REQUIRES: lli, host-x86_64
; RUN: %lli %s > %t.before
; RUN: opt %loadaccel -passes='accel-prefetch<distance=16>' %s -o %t.d16.bc
; RUN: %lli %t.d16.bc > %t.d16
; RUN: diff %t.before %t.d16
; RUN: opt %loadaccel -passes='accel-prefetch<distance=1>' %s -o %t.d1.bc
; RUN: %lli %t.d1.bc > %t.d1
; RUN: diff %t.before %t.d1
; The largest distance: chain links look 3 * 65536 iterations ahead.
; RUN: opt %loadaccel -passes='accel-prefetch<distance=65536>' %s -o %t.dmax.bc
; RUN: %lli %t.dmax.bc > %t.dmax
; RUN: diff %t.before %t.dmax
; RUN: opt %loadaccel -passes=accel-prefetch %s -o %t.auto.bc
; RUN: %lli %t.auto.bc > %t.auto
; RUN: diff %t.before %t.auto
; RUN: FileCheck %s --input-file=%t.before
; The transformed code really has the look-ahead loads:
; RUN: opt %loadaccel -passes='accel-prefetch<distance=16>' -S %s | FileCheck %s --check-prefix=IR

; CHECK: n=1 gather=
; CHECK: n=3 gather=
; CHECK: n=17 gather=
; CHECK: n=1000 gather=
; IR-COUNT-3: %accel.iter = add nuw i64

@T = internal global [65536 x float] zeroinitializer, align 64
@out = internal global [64 x float] zeroinitializer, align 64
@fmt = private constant [40 x i8] c"n=%lld gather=%.6e chain=%.6e bag=%.6e\0A\00"

declare ptr @mmap(ptr, i64, i32, i32, i32, i64)
declare i32 @mprotect(ptr, i64, i32)
declare i32 @printf(ptr, ...)

define internal i64 @lcg(i64 %s) {
  %m = mul i64 %s, 6364136223846793005
  %a = add i64 %m, 1442695040888963407
  ret i64 %a
}

; n (<= 1024) pseudo-random indices below %range, ending at a guard page.
define internal ptr @guarded_indices(i64 %n, i64 %range, i64 %seed) {
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
  %v = urem i64 %hi, %range
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
  %v = fmul float %f, 0x3E70000000000000
  %addr = getelementptr inbounds float, ptr @T, i64 %k
  store float %v, ptr %addr, align 4
  %k.next = add nuw nsw i64 %k, 1
  %done = icmp eq i64 %k.next, 65536
  br i1 %done, label %exit, label %loop

exit:
  ret void
}

define internal void @run(i64 %n) {
entry:
  %B = call ptr @guarded_indices(i64 %n, i64 65536, i64 %n)
  %g = call float @poly_gather(ptr @T, ptr %B, i64 %n, float 0.5)
  %C = call ptr @guarded_indices(i64 %n, i64 1024, i64 7)
  %L = call ptr @guarded_indices(i64 1024, i64 65536, i64 11)
  %c = call float @chain(ptr @T, ptr %L, ptr %C, i64 %n, float 0.25)
  call void @llvm.memset.p0.i64(ptr @out, i8 0, i64 256, i1 false)
  %I = call ptr @guarded_indices(i64 %n, i64 1024, i64 13)
  call void @bag(ptr @T, ptr %I, i64 %n, ptr @out)
  br label %sum

sum:
  %k = phi i64 [ 0, %entry ], [ %k.next, %sum ]
  %acc = phi float [ 0.0, %entry ], [ %acc.next, %sum ]
  %o.addr = getelementptr inbounds float, ptr @out, i64 %k
  %o = load float, ptr %o.addr, align 4
  %acc.next = fadd float %acc, %o
  %k.next = add nuw nsw i64 %k, 1
  %done = icmp eq i64 %k.next, 64
  br i1 %done, label %print, label %sum

print:
  %gd = fpext float %g to double
  %cd = fpext float %c to double
  %bd = fpext float %acc.next to double
  %p = call i32 (ptr, ...) @printf(ptr @fmt, i64 %n, double %gd, double %cd, double %bd)
  ret void
}

define i32 @main() {
  call void @fill_table()
  call void @run(i64 1)
  call void @run(i64 3)
  call void @run(i64 17)
  call void @run(i64 1000)
  ret i32 0
}

declare void @llvm.memset.p0.i64(ptr, i8, i64, i1)

; The kernels of indirect.ll, chain.ll and embedding-bag.ll.

define float @poly_gather(ptr noalias %T, ptr noalias %B, i64 %n, float %w) {
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
  %c = fmul float %x, 2.0
  %p1 = fadd float %x3, %a
  %p2 = fadd float %p1, %c
  %d = fadd float %x, 5.0
  %r = fdiv float 1.0, %d
  %v = fadd float %p2, %r
  %s.next = fadd float %s, %v
  %i.next = add nuw nsw i64 %i, 1
  %done = icmp eq i64 %i.next, %n
  br i1 %done, label %exit, label %loop

exit:
  %res = phi float [ 0.0, %entry ], [ %s.next, %loop ]
  ret float %res
}

define float @chain(ptr noalias %A, ptr noalias %B, ptr noalias %C, i64 %n, float %w) {
entry:
  %guard = icmp sgt i64 %n, 0
  br i1 %guard, label %ph, label %exit

ph:
  br label %loop

loop:
  %i = phi i64 [ 0, %ph ], [ %i.next, %loop ]
  %s = phi float [ 0.0, %ph ], [ %s.next, %loop ]
  %c.addr = getelementptr inbounds i32, ptr %C, i64 %i
  %c = load i32, ptr %c.addr, align 4
  %c.ext = sext i32 %c to i64
  %b.addr = getelementptr inbounds i32, ptr %B, i64 %c.ext
  %b = load i32, ptr %b.addr, align 4
  %b.ext = zext i32 %b to i64
  %a.addr = getelementptr inbounds float, ptr %A, i64 %b.ext
  %a = load float, ptr %a.addr, align 4
  %x = fmul float %a, %w
  %x2 = fmul float %x, %x
  %x3 = fmul float %x2, %x
  %t1 = fmul float %x2, 3.0
  %t2 = fmul float %x, 2.0
  %p1 = fadd float %x3, %t1
  %p2 = fadd float %p1, %t2
  %d = fadd float %x, 5.0
  %r = fdiv float 1.0, %d
  %v = fadd float %p2, %r
  %s.next = fadd float %s, %v
  %i.next = add nuw nsw i64 %i, 1
  %done = icmp eq i64 %i.next, %n
  br i1 %done, label %exit, label %loop

exit:
  %res = phi float [ 0.0, %entry ], [ %s.next, %loop ]
  ret float %res
}

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
