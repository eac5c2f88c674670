; Execution: rows gathered by memcpy under an in-range check (the shape of
; JAX's fill-mode take after loop idiom recognition) are the same before and
; after the pass, for trip counts below, at, and above the distance (n = 1, 3,
; 17 with distance 16, and 1000), with indices in and out of range. The index
; array ends right before a PROT_NONE guard page, so a look-ahead index load
; that is not clamped to the last iteration faults.

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
; RUN: FileCheck %s --input-file=%t.before
; The transformed code really prefetches the copies' sources:
; RUN: opt %loadaccel -passes='accel-prefetch<distance=16;min-work=0>' \
; RUN:   -S %s | FileCheck %s --check-prefix=IR

; CHECK: n=1 rows=
; CHECK: n=3 rows=
; CHECK: n=17 rows=
; CHECK: n=1000 rows=
; IR-LABEL: define void @take_rows(
; IR:         %id.ahead = load i32
; IR-COUNT-4: call void @llvm.prefetch.p0(

@T = internal global [65536 x float] zeroinitializer, align 64
@rows = internal global [64000 x float] zeroinitializer, align 64
@fmt = private constant [23 x i8] c"n=%lld rows=%.9e %lld\0A\00"

declare ptr @mmap(ptr, i64, i32, i32, i32, i64)
declare i32 @mprotect(ptr, i64, i32)
declare i32 @printf(ptr, ...)
declare void @llvm.memcpy.p0.p0.i64(ptr, ptr, i64, i1)
declare void @llvm.memset.p0.i64(ptr, i8, i64, i1)

define internal i64 @lcg(i64 %s) {
  %m = mul i64 %s, 6364136223846793005
  %a = add i64 %m, 1442695040888963407
  ret i64 %a
}

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

; Rows of 64 floats: @T holds 1024 of them; indices up to 1099 also ask for
; rows past the end, which are filled with NaN (0xff bytes) instead of copied.
define void @take_rows(ptr noalias %T, ptr noalias %idx, ptr noalias %out, i64 %n) {
entry:
  br label %loop

loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %latch ]
  %id.addr = getelementptr inbounds i32, ptr %idx, i64 %i
  %id = load i32, ptr %id.addr, align 4
  %dst.off = shl nuw nsw i64 %i, 8
  %dst = getelementptr i8, ptr %out, i64 %dst.off
  %ok = icmp ult i32 %id, 1024
  br i1 %ok, label %copy, label %fill

copy:
  %row = zext nneg i32 %id to i64
  %row.off = shl nuw nsw i64 %row, 8
  %row.src = getelementptr i8, ptr %T, i64 %row.off
  call void @llvm.memcpy.p0.p0.i64(ptr align 4 %dst, ptr align 4 %row.src, i64 256, i1 false)
  br label %latch

fill:
  call void @llvm.memset.p0.i64(ptr align 4 %dst, i8 -1, i64 256, i1 false)
  br label %latch

latch:
  %i.next = add nuw nsw i64 %i, 1
  %done = icmp eq i64 %i.next, %n
  br i1 %done, label %exit, label %loop

exit:
  ret void
}

; Prints the sum of the copied rows weighted by position (NaN rows counted).
define internal void @run(i64 %n) {
entry:
  %I = call ptr @guarded_indices(i64 %n, i64 1100, i64 %n)
  call void @take_rows(ptr @T, ptr %I, ptr @rows, i64 %n)
  %len = shl nuw nsw i64 %n, 6
  br label %sum

sum:
  %k = phi i64 [ 0, %entry ], [ %k.next, %next ]
  %acc = phi double [ 0.0, %entry ], [ %acc.next, %next ]
  %nans = phi i64 [ 0, %entry ], [ %nans.next, %next ]
  %o.addr = getelementptr inbounds float, ptr @rows, i64 %k
  %o = load float, ptr %o.addr, align 4
  %od = fpext float %o to double
  %isnan = fcmp uno double %od, 0.0
  %kf = uitofp i64 %k to double
  %w = fadd double %kf, 1.0
  %x = fmul double %od, %w
  %x.ok = select i1 %isnan, double 0.0, double %x
  %acc.next = fadd double %acc, %x.ok
  %nan.inc = zext i1 %isnan to i64
  %nans.next = add i64 %nans, %nan.inc
  br label %next

next:
  %k.next = add nuw nsw i64 %k, 1
  %done = icmp eq i64 %k.next, %len
  br i1 %done, label %print, label %sum

print:
  %p = call i32 (ptr, ...) @printf(ptr @fmt, i64 %n, double %acc.next, i64 %nans.next)
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
