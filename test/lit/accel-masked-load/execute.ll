; Execution: every kernel of the accel-masked-load tests runs before and after
; the pass (alone, and followed by the loop vectorizer) on the same inputs and
; prints a checksum of the bits of its results: they must be identical. The
; input x ends right before a PROT_NONE guard page (for n = 0 it is the guard
; page itself), so a split that ran the unchecked main loop one element too
; far, or a clamped load of an empty x, faults. Index arrays hold negative and
; out-of-range entries and end at a guard page too. Sizes 0..100, offsets
; -5..7 (all three loops of a split, and each one alone). A gather checked
; against a bound 8 larger than its x (its indices all below x's size or
; out of range) runs too: x[clamp(j, 0, n-1)] would read past the guard
; there, so only an x known to hold n elements (@take_fill's table of 128,
; n <= 128) gets the clamp; @take_fill_unsigned is left alone.

; REQUIRES: lli, clang, host-x86_64
; RUN: %lli %s > %t.before
; RUN: opt %loadaccel -passes=accel-masked-load %s -o %t.pass.bc
; RUN: %lli %t.pass.bc > %t.pass
; RUN: diff %t.before %t.pass
; Compiled without optimization too: the JIT's codegen sinks a new load back
; behind its check (MachineSink), which would hide a load that faults.
; RUN: %clang -O0 -Wno-override-module %t.pass.bc -o %t.exe
; RUN: %t.exe > %t.exe.out
; RUN: diff %t.before %t.exe.out
; RUN: opt %loadaccel -passes='accel-masked-load,loop-vectorize' %s -o %t.vec.bc
; RUN: %lli %t.vec.bc > %t.vec
; RUN: diff %t.before %t.vec
; RUN: opt %loadaccel -passes='accel-masked-load<no-clamp>' %s -o %t.noclamp.bc
; RUN: %lli %t.noclamp.bc > %t.noclamp
; RUN: diff %t.before %t.noclamp
; The transformed code really is split and clamped:
; RUN: opt %loadaccel -passes=accel-masked-load -S %s -o %t.ll
; RUN: FileCheck %s --check-prefix=IR --input-file=%t.ll
; RUN: FileCheck %s --check-prefix=CLAMP --input-file=%t.ll
; RUN: FileCheck %s --input-file=%t.before
; IR-COUNT-20: %accel.more{{[0-9]*}} = icmp ne
; CLAMP: define void @take_fill(
; CLAMP: %accel.clamp
; CLAMP: define void @take_fill_unsigned(
; CLAMP-NOT: %accel.clamp
; CLAMP: define void @scatter_guarded(
; CHECK: n=0 d=-5
; CHECK: n=100 d=7
; CHECK: pool h=7 w=9

@y = internal global [256 x float] zeroinitializer, align 64
@ys = internal global [256 x float] zeroinitializer, align 64
@fmt = private constant [68 x i8] c"n=%lld d=%lld pad=%llx sum=%x sel=%llx flip=%llx st=%llx take=%llx\0A\00"
@fmt2 = private constant [41 x i8] c"n=%lld takeu=%llx scatter=%llx big=%llx\0A\00"
@fmt3 = private constant [31 x i8] c"pool h=%lld w=%lld sum=%llx\0A\00\00\00"
@ns = private constant [9 x i64] [i64 0, i64 1, i64 2, i64 3, i64 4, i64 7, i64 16, i64 33, i64 100]
@ds = private constant [6 x i64] [i64 -5, i64 -2, i64 0, i64 1, i64 3, i64 7]

declare ptr @mmap(ptr, i64, i32, i32, i32, i64)
declare i32 @mprotect(ptr, i64, i32)
declare i32 @printf(ptr, ...)
declare void @llvm.memset.p0.i64(ptr, i8, i64, i1)

; A 64 KiB buffer followed by a PROT_NONE page: returns the guard page.
define internal ptr @guarded_end() {
  %p = call ptr @mmap(ptr null, i64 69632, i32 3, i32 34, i32 -1, i64 0)
  %guard = getelementptr i8, ptr %p, i64 65536
  %r = call i32 @mprotect(ptr %guard, i64 4096, i32 0)
  ret ptr %guard
}

; sum of bits(a[k]) * (k + 1), k < m
define internal i64 @checksum(ptr %a, i64 %m) {
entry:
  br label %loop
loop:
  %k = phi i64 [ 0, %entry ], [ %k.next, %loop ]
  %s = phi i64 [ 0, %entry ], [ %s.next, %loop ]
  %p = getelementptr inbounds i32, ptr %a, i64 %k
  %v = load i32, ptr %p, align 4
  %vx = zext i32 %v to i64
  %k.next = add nuw nsw i64 %k, 1
  %t = mul i64 %vx, %k.next
  %s.next = add i64 %s, %t
  %done = icmp eq i64 %k.next, %m
  br i1 %done, label %exit, label %loop
exit:
  ret i64 %s.next
}

; n floats x[k] = 0.37 k + 1 ending at %guard; returns x.
define internal ptr @fill_x(ptr %guard, i64 %n) {
entry:
  %bytes = shl i64 %n, 2
  %neg = sub i64 0, %bytes
  %x = getelementptr i8, ptr %guard, i64 %neg
  %empty = icmp eq i64 %n, 0
  br i1 %empty, label %exit, label %loop
loop:
  %k = phi i64 [ 0, %entry ], [ %k.next, %loop ]
  %f = sitofp i64 %k to float
  %g = fmul float %f, 0x3FD7AE1480000000
  %h = fadd float %g, 1.0
  %p = getelementptr inbounds float, ptr %x, i64 %k
  store float %h, ptr %p, align 4
  %k.next = add nuw nsw i64 %k, 1
  %done = icmp eq i64 %k.next, %n
  br i1 %done, label %exit, label %loop
exit:
  ret ptr %x
}

; 40 indices (k * 7) mod (n + 9) - 4 of type i32 (or i64) ending at %guard.
define internal ptr @fill_idx(ptr %guard, i64 %n, i1 %wide) {
entry:
  %sz = select i1 %wide, i64 320, i64 160
  %neg = sub i64 0, %sz
  %a = getelementptr i8, ptr %guard, i64 %neg
  %mod = add i64 %n, 9
  br label %loop
loop:
  %k = phi i64 [ 0, %entry ], [ %k.next, %store ]
  %k7 = mul i64 %k, 7
  %r = urem i64 %k7, %mod
  %v = sub i64 %r, 4
  br i1 %wide, label %w64, label %w32
w64:
  %p64 = getelementptr inbounds i64, ptr %a, i64 %k
  store i64 %v, ptr %p64, align 8
  br label %store
w32:
  %v32 = trunc i64 %v to i32
  %p32 = getelementptr inbounds i32, ptr %a, i64 %k
  store i32 %v32, ptr %p32, align 4
  br label %store
store:
  %k.next = add nuw nsw i64 %k, 1
  %done = icmp eq i64 %k.next, 40
  br i1 %done, label %exit, label %loop
exit:
  ret ptr %a
}

define internal void @run(ptr %gx, ptr %gi, ptr %gl, ptr %gt, i64 %n, i64 %d) {
  %x = call ptr @fill_x(ptr %gx, i64 %n)
  call void @llvm.memset.p0.i64(ptr @y, i8 0, i64 1024, i1 false)
  call void @pad_branch(ptr @y, ptr %x, i64 %n, i64 40, i64 %d)
  %c1 = call i64 @checksum(ptr @y, i64 40)
  %n32 = trunc i64 %n to i32
  %s2 = call float @pad_unsigned_sum(ptr %x, i32 %n32, i32 40)
  %c2 = bitcast float %s2 to i32
  call void @pad_select_pointer(ptr @y, ptr %x, i64 %n, i64 40)
  %c3 = call i64 @checksum(ptr @y, i64 40)
  %dd = add i64 %d, 20
  ; flip reads x[d + 20 - i] with no upper check: from @y (256 floats).
  call void @flip(ptr @ys, ptr @y, i64 40, i64 %dd)
  %c4 = call i64 @checksum(ptr @ys, i64 40)
  call void @llvm.memset.p0.i64(ptr @ys, i8 0, i64 1024, i1 false)
  %nn = add i64 %n, 1
  %nmin = call i64 @llvm.umin.i64(i64 %nn, i64 40)
  call void @guarded_store(ptr @ys, ptr @y, i64 %nmin, i64 40, i64 %d)
  %c5 = call i64 @checksum(ptr @ys, i64 40)
  %idx = call ptr @fill_idx(ptr %gi, i64 %n, i1 false)
  %table = call ptr @fill_x(ptr %gt, i64 128)
  call void @take_fill(ptr @y, ptr %table, ptr %idx, i32 %n32, i64 40)
  %c6 = call i64 @checksum(ptr @y, i64 40)
  call i32 (ptr, ...) @printf(ptr @fmt, i64 %n, i64 %d, i64 %c1, i32 %c2, i64 %c3, i64 %c4, i64 %c5, i64 %c6)
  ret void
}

define internal void @run_wide(ptr %gx, ptr %gl, i64 %n) {
  %x = call ptr @fill_x(ptr %gx, i64 %n)
  %idx = call ptr @fill_idx(ptr %gl, i64 %n, i1 true)
  call void @llvm.memset.p0.i64(ptr @y, i8 0, i64 1024, i1 false)
  %pos = icmp sgt i64 %n, 0
  br i1 %pos, label %take, label %scatter
take:
  call void @take_fill_unsigned(ptr @y, ptr %x, ptr %idx, i64 %n, i64 40)
  br label %scatter
scatter:
  %c1 = call i64 @checksum(ptr @y, i64 40)
  call void @llvm.memset.p0.i64(ptr @ys, i8 0, i64 1024, i1 false)
  %nmin = call i64 @llvm.umin.i64(i64 %n, i64 200)
  call void @scatter_guarded(ptr @ys, ptr @y, ptr %idx, i64 %nmin, i64 40)
  %c2 = call i64 @checksum(ptr @ys, i64 200)
  ; A bound larger than x: indices (k * 7) mod (n + 4) - 4, so below n or
  ; (as unsigned) out of range.
  %five = icmp uge i64 %n, 5
  br i1 %five, label %big, label %done
big:
  %n5 = sub i64 %n, 5
  %idx5 = call ptr @fill_idx(ptr %gl, i64 %n5, i1 true)
  call void @llvm.memset.p0.i64(ptr @y, i8 0, i64 1024, i1 false)
  %n8 = add i64 %n, 8
  call void @take_fill_unsigned(ptr @y, ptr %x, ptr %idx5, i64 %n8, i64 40)
  %c3.big = call i64 @checksum(ptr @y, i64 40)
  br label %done
done:
  %c3 = phi i64 [ 0, %scatter ], [ %c3.big, %big ]
  call i32 (ptr, ...) @printf(ptr @fmt2, i64 %n, i64 %c1, i64 %c2, i64 %c3)
  ret void
}

define internal void @run_pool(ptr %gx, i64 %h, i64 %w) {
  %hw = mul i64 %h, %w
  %in = call ptr @fill_x(ptr %gx, i64 %hw)
  call void @llvm.memset.p0.i64(ptr @y, i8 0, i64 1024, i1 false)
  call void @pool3x3(ptr @y, ptr %in, i64 %h, i64 %w)
  %c = call i64 @checksum(ptr @y, i64 %hw)
  call i32 (ptr, ...) @printf(ptr @fmt3, i64 %h, i64 %w, i64 %c)
  ret void
}

declare i64 @llvm.umin.i64(i64, i64)
declare void @llvm.assume(i1)

define i32 @main() {
entry:
  %gx = call ptr @guarded_end()
  %gi = call ptr @guarded_end()
  %gl = call ptr @guarded_end()
  %gt = call ptr @guarded_end()
  br label %nloop
nloop:
  %ni = phi i64 [ 0, %entry ], [ %ni.next, %nlatch ]
  %pn = getelementptr inbounds [9 x i64], ptr @ns, i64 0, i64 %ni
  %n = load i64, ptr %pn, align 8
  call void @run_wide(ptr %gx, ptr %gl, i64 %n)
  br label %dloop
dloop:
  %di = phi i64 [ 0, %nloop ], [ %di.next, %dloop ]
  %pd = getelementptr inbounds [6 x i64], ptr @ds, i64 0, i64 %di
  %d = load i64, ptr %pd, align 8
  call void @run(ptr %gx, ptr %gi, ptr %gl, ptr %gt, i64 %n, i64 %d)
  %di.next = add nuw nsw i64 %di, 1
  %ddone = icmp eq i64 %di.next, 6
  br i1 %ddone, label %nlatch, label %dloop
nlatch:
  %ni.next = add nuw nsw i64 %ni, 1
  %ndone = icmp eq i64 %ni.next, 9
  br i1 %ndone, label %pools, label %nloop
pools:
  call void @run_pool(ptr %gx, i64 1, i64 1)
  call void @run_pool(ptr %gx, i64 1, i64 5)
  call void @run_pool(ptr %gx, i64 2, i64 3)
  call void @run_pool(ptr %gx, i64 5, i64 4)
  call void @run_pool(ptr %gx, i64 7, i64 9)
  ret i32 0
}

@zero = internal constant float 0.0

define void @pad_branch(ptr noalias %y, ptr noalias %x, i64 %n, i64 %m, i64 %d) {
entry:
  br label %loop

loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %latch ]
  %j = add nsw i64 %i, %d
  %lo = icmp sge i64 %j, 0
  %hi = icmp slt i64 %j, %n
  %ok = and i1 %lo, %hi
  br i1 %ok, label %then, label %latch

then:
  %px = getelementptr inbounds float, ptr %x, i64 %j
  %v = load float, ptr %px, align 4
  br label %latch

latch:
  %r = phi float [ %v, %then ], [ 0.0, %loop ]
  %py = getelementptr inbounds float, ptr %y, i64 %i
  store float %r, ptr %py, align 4
  %i.next = add nuw nsw i64 %i, 1
  %done = icmp eq i64 %i.next, %m
  br i1 %done, label %exit, label %loop

exit:
  ret void
}

define float @pad_unsigned_sum(ptr noalias %x, i32 %n, i32 %m) {
entry:
  %nonempty = icmp sgt i32 %m, 0
  br i1 %nonempty, label %loop, label %exit

loop:
  %i = phi i32 [ 0, %entry ], [ %i.next, %latch ]
  %s = phi float [ 0.0, %entry ], [ %s.next, %latch ]
  %j = add nsw i32 %i, -3
  %in = icmp ult i32 %j, %n
  br i1 %in, label %then, label %latch

then:
  %jx = zext i32 %j to i64
  %px = getelementptr inbounds float, ptr %x, i64 %jx
  %v = load float, ptr %px, align 4
  %add = fadd float %s, %v
  br label %latch

latch:
  %s.next = phi float [ %add, %then ], [ %s, %loop ]
  %i.next = add nuw nsw i32 %i, 1
  %done = icmp eq i32 %i.next, %m
  br i1 %done, label %exit, label %loop

exit:
  %res = phi float [ 0.0, %entry ], [ %s.next, %latch ]
  ret float %res
}

define void @pad_select_pointer(ptr noalias %y, ptr noalias %x, i64 %n, i64 %m) {
entry:
  br label %loop

loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %loop ]
  %j = add nsw i64 %i, -2
  %out = icmp slt i64 %j, 0
  %past = icmp sge i64 %j, %n
  %bad = or i1 %out, %past
  %px = getelementptr inbounds float, ptr %x, i64 %j
  %p = select i1 %bad, ptr @zero, ptr %px
  %v = load float, ptr %p, align 4
  %py = getelementptr inbounds float, ptr %y, i64 %i
  store float %v, ptr %py, align 4
  %i.next = add nuw nsw i64 %i, 1
  %done = icmp eq i64 %i.next, %m
  br i1 %done, label %exit, label %loop

exit:
  ret void
}

define void @flip(ptr noalias %y, ptr noalias %x, i64 %m, i64 %d) {
entry:
  br label %loop

loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %latch ]
  %j = sub nsw i64 %d, %i
  %lo = icmp sge i64 %j, 0
  br i1 %lo, label %then, label %latch

then:
  %px = getelementptr inbounds float, ptr %x, i64 %j
  %v = load float, ptr %px, align 4
  br label %latch

latch:
  %r = phi float [ %v, %then ], [ 0.0, %loop ]
  %py = getelementptr inbounds float, ptr %y, i64 %i
  store float %r, ptr %py, align 4
  %i.next = add nuw nsw i64 %i, 1
  %done = icmp eq i64 %i.next, %m
  br i1 %done, label %exit, label %loop

exit:
  ret void
}

define void @guarded_store(ptr noalias %y, ptr noalias %x, i64 %n, i64 %m, i64 %d) {
entry:
  br label %loop

loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %latch ]
  %j = add nsw i64 %i, %d
  %lo = icmp sge i64 %j, 0
  %hi = icmp slt i64 %j, %n
  %ok = and i1 %lo, %hi
  %px = getelementptr inbounds float, ptr %x, i64 %i
  %v = load float, ptr %px, align 4
  br i1 %ok, label %then, label %latch

then:
  %py = getelementptr inbounds float, ptr %y, i64 %j
  store float %v, ptr %py, align 4
  br label %latch

latch:
  %i.next = add nuw nsw i64 %i, 1
  %done = icmp eq i64 %i.next, %m
  br i1 %done, label %exit, label %loop

exit:
  ret void
}

define void @take_fill(ptr noalias %y, ptr noalias dereferenceable(512) %x, ptr noalias %idx, i32 %n, i64 %m) {
entry:
  %fits = icmp sle i32 %n, 128
  call void @llvm.assume(i1 %fits)
  br label %loop

loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %latch ]
  %pi = getelementptr inbounds i32, ptr %idx, i64 %i
  %j = load i32, ptr %pi, align 4
  %lo = icmp sge i32 %j, 0
  %hi = icmp slt i32 %j, %n
  %ok = and i1 %lo, %hi
  br i1 %ok, label %then, label %latch

then:
  %jx = sext i32 %j to i64
  %px = getelementptr inbounds float, ptr %x, i64 %jx
  %v = load float, ptr %px, align 4
  br label %latch

latch:
  %r = phi float [ %v, %then ], [ 0.0, %loop ]
  %py = getelementptr inbounds float, ptr %y, i64 %i
  store float %r, ptr %py, align 4
  %i.next = add nuw nsw i64 %i, 1
  %done = icmp eq i64 %i.next, %m
  br i1 %done, label %exit, label %loop

exit:
  ret void
}

define void @take_fill_unsigned(ptr noalias %y, ptr noalias %x, ptr noalias %idx, i64 %n, i64 %m) {
entry:
  %nonempty = icmp sgt i64 %n, 0
  br i1 %nonempty, label %loop, label %exit

loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %latch ]
  %pi = getelementptr inbounds i64, ptr %idx, i64 %i
  %j = load i64, ptr %pi, align 8
  %in = icmp ult i64 %j, %n
  br i1 %in, label %then, label %latch

then:
  %px = getelementptr inbounds float, ptr %x, i64 %j
  %v = load float, ptr %px, align 4
  br label %latch

latch:
  %r = phi float [ %v, %then ], [ -1.0, %loop ]
  %py = getelementptr inbounds float, ptr %y, i64 %i
  store float %r, ptr %py, align 4
  %i.next = add nuw nsw i64 %i, 1
  %done = icmp eq i64 %i.next, %m
  br i1 %done, label %exit, label %loop

exit:
  ret void
}

define void @scatter_guarded(ptr noalias %y, ptr noalias %x, ptr noalias %idx, i64 %n, i64 %m) {
entry:
  br label %loop

loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %latch ]
  %pi = getelementptr inbounds i64, ptr %idx, i64 %i
  %j = load i64, ptr %pi, align 8
  %px = getelementptr inbounds float, ptr %x, i64 %i
  %v = load float, ptr %px, align 4
  %in = icmp ult i64 %j, %n
  br i1 %in, label %then, label %latch

then:
  %py = getelementptr inbounds float, ptr %y, i64 %j
  store float %v, ptr %py, align 4
  br label %latch

latch:
  %i.next = add nuw nsw i64 %i, 1
  %done = icmp eq i64 %i.next, %m
  br i1 %done, label %exit, label %loop

exit:
  ret void
}

define void @pool3x3(ptr noalias %out, ptr noalias %in, i64 %h, i64 %w) {
entry:
  %hpos = icmp sgt i64 %h, 0
  %wpos = icmp sgt i64 %w, 0
  %both = and i1 %hpos, %wpos
  br i1 %both, label %row, label %exit

row:
  %r = phi i64 [ 0, %entry ], [ %r.next, %row.latch ]
  %rm = add nsw i64 %r, -1
  %rp = add nsw i64 %r, 1
  %rm.ok = icmp sge i64 %rm, 0
  %rp.ok = icmp slt i64 %rp, %h
  %rowoff = mul nsw i64 %r, %w
  %rowoff.m = sub nsw i64 %rowoff, %w
  %rowoff.p = add nsw i64 %rowoff, %w
  br label %col

col:
  %c = phi i64 [ 0, %row ], [ %c.next, %col.latch ]
  %cm = add nsw i64 %c, -1
  %cp = add nsw i64 %c, 1
  %cm.ok = icmp sge i64 %cm, 0
  %cp.ok = icmp slt i64 %cp, %w
  ; center row: left, center, right
  %i.c = add nsw i64 %rowoff, %c
  %p.c = getelementptr inbounds float, ptr %in, i64 %i.c
  %v.c = load float, ptr %p.c, align 4
  br i1 %cm.ok, label %l, label %l.j
l:
  %i.l = add nsw i64 %i.c, -1
  %p.l = getelementptr inbounds float, ptr %in, i64 %i.l
  %v.l = load float, ptr %p.l, align 4
  br label %l.j
l.j:
  %s1 = phi float [ %v.l, %l ], [ 0.0, %col ]
  %a1 = fadd float %v.c, %s1
  br i1 %cp.ok, label %rr, label %rr.j
rr:
  %i.r = add nsw i64 %i.c, 1
  %p.r = getelementptr inbounds float, ptr %in, i64 %i.r
  %v.r = load float, ptr %p.r, align 4
  br label %rr.j
rr.j:
  %s2 = phi float [ %v.r, %rr ], [ 0.0, %l.j ]
  %a2 = fadd float %a1, %s2
  ; row above (center column only, for brevity)
  br i1 %rm.ok, label %up, label %up.j
up:
  %i.u = add nsw i64 %rowoff.m, %c
  %p.u = getelementptr inbounds float, ptr %in, i64 %i.u
  %v.u = load float, ptr %p.u, align 4
  br label %up.j
up.j:
  %s3 = phi float [ %v.u, %up ], [ 0.0, %rr.j ]
  %a3 = fadd float %a2, %s3
  ; row below
  br i1 %rp.ok, label %dn, label %col.latch
dn:
  %i.d = add nsw i64 %rowoff.p, %c
  %p.d = getelementptr inbounds float, ptr %in, i64 %i.d
  %v.d = load float, ptr %p.d, align 4
  br label %col.latch
col.latch:
  %s4 = phi float [ %v.d, %dn ], [ 0.0, %up.j ]
  %a4 = fadd float %a3, %s4
  %p.o = getelementptr inbounds float, ptr %out, i64 %i.c
  store float %a4, ptr %p.o, align 4
  %c.next = add nuw nsw i64 %c, 1
  %c.done = icmp eq i64 %c.next, %w
  br i1 %c.done, label %row.latch, label %col

row.latch:
  %r.next = add nuw nsw i64 %r, 1
  %r.done = icmp eq i64 %r.next, %h
  br i1 %r.done, label %exit, label %row

exit:
  ret void
}
