; Loop splitting at the limits of the loop's type. The split bounds are
; computed in the loop's own type (the widest of its trip count and checked
; indices), never in a wider one: every difference is taken only where it is
; exact and clamped to the trip count TC = BTC + 1. When TC may not fit its
; type (BTC all ones: 2^64 iterations of an i64 loop, 256 of an i8 one), a
; flag decides before the loop that the guarded copy runs all of them.
;
; Execution (Inputs/limits-main.c): signed and unsigned checks (strict and
; not), the index stepping up and down, unsigned compares of an index that
; only does not wrap as a signed value, starts, offsets and bounds at
; INT64_MIN / INT64_MAX / 0 / UINT64_MAX and next to them; 8-bit loops of
; every trip count up to 256 (through the all-guarded flag), an 8-bit loop
; checking a 32-bit index. The hashes of the results are the same before and
; after the pass (alone, and followed by the loop vectorizer).

; REQUIRES: clang
; RUN: %clang -O0 -Wno-override-module %S/Inputs/limits-main.c %s -o %t.before.exe
; RUN: %t.before.exe > %t.before
; RUN: opt %loadaccel -passes=accel-masked-load %s -o %t.pass.bc
; RUN: %clang -O0 -Wno-override-module %S/Inputs/limits-main.c %t.pass.bc -o %t.pass.exe
; RUN: %t.pass.exe > %t.pass
; RUN: diff %t.before %t.pass
; RUN: opt %loadaccel -passes='accel-masked-load,loop-vectorize' %s -o %t.vec.bc
; RUN: %clang -O0 -Wno-override-module %S/Inputs/limits-main.c %t.vec.bc -o %t.vec.exe
; RUN: %t.vec.exe > %t.vec
; RUN: diff %t.before %t.vec
; RUN: FileCheck %s --check-prefix=OUT --input-file=%t.before
; RUN: opt %loadaccel -passes=accel-masked-load -pass-remarks=accel-masked-load \
; RUN:   -pass-remarks-missed=accel-masked-load \
; RUN:   -pass-remarks-analysis=accel-masked-load -S %s 2>%t.remarks \
; RUN:   | FileCheck %s --implicit-check-not='{{[ (<]i128}}'
; RUN: FileCheck %s --check-prefix=REMARK --input-file=%t.remarks

; OUT: up_s s=8000000000000000 c=1 d=0
; OUT: down_mixed_incl
; OUT: u8_full n=255
; OUT: s8_full lo=127
; OUT: s8_down n=127
; OUT: u8_index32 d=200
; OUT: u64_any m=255

; Every kernel is split (none declined); the 8-bit loops and @u64_any, whose
; trip count may be 2^8 (2^64), get the flag.
; REMARK-NOT: not split
; REMARK-COUNT-12: remark: {{.*}}loop split into 3 loops; the main loop runs without the range checks j {{[su]g[te]}} lo, j {{[su]l[te]}} hi
; REMARK-NEXT: remark: {{.*}}loop split into 2 loops; the main loop runs without the range checks i ult n
; REMARK-NEXT: remark: {{.*}}the trip count may be 2^8 (more than its type holds): the loop runs with its checks for all iterations when it is
; REMARK-NEXT: remark: {{.*}}loop split into 3 loops; the main loop runs without the range checks i sge lo, i slt hi
; REMARK-NEXT: remark: {{.*}}the trip count may be 2^8
; REMARK-NEXT: remark: {{.*}}loop split into 3 loops; the main loop runs without the range checks i ult n
; REMARK-NEXT: remark: {{.*}}the trip count may be 2^8
; REMARK-NEXT: remark: {{.*}}loop split into 3 loops; the main loop runs without the range checks j sge 0, j slt n
; REMARK-NEXT: remark: {{.*}}loop split into 2 loops; the main loop runs without the range checks i ult n
; REMARK-NEXT: remark: {{.*}}the trip count may be 2^64
; REMARK-NEXT: remark: {{.*}}loop split into 2 loops; the main loop runs without the range checks i ult n
; REMARK-NOT: remark

; The iterations before j = i + d reaches lo, and before it reaches hi, in
; i64: where lo is ahead of j's start X = s + d, lo - X is exact, clamped to
; the trip count e - s. The induction's `add nsw` says that the trip count
; fits: no flag.
; CHECK-LABEL: define void @up_s(
; CHECK:       loop.preheader:
; CHECK-NEXT:    %[[TC:.*]] = sub i64 %e, %s
; CHECK-NEXT:    %[[X:.*]] = add i64 %d, %s
; CHECK-NEXT:    %accel.ahead = icmp sgt i64 %lo, %[[X]]
; CHECK-NEXT:    %accel.diff = sub i64 %lo, %[[X]]
; CHECK-NEXT:    %[[L:.*]] = call i64 @llvm.umin.i64(i64 %accel.diff, i64 %[[TC]])
; CHECK-NEXT:    %accel.lo = select i1 %accel.ahead, i64 %[[L]], i64 0
; CHECK-NOT:     accel.all.guarded
; CHECK:       loop:
; Signed, stepping up: lo <= j < hi.
define void @up_s(ptr noalias %y, ptr noalias %x, i64 %s, i64 %e, i64 %d, i64 %lo, i64 %hi, i64 %base) {
entry:
  %any = icmp slt i64 %s, %e
  br i1 %any, label %loop, label %exit

loop:
  %i = phi i64 [ %s, %entry ], [ %i.next, %latch ]
  %j = add nsw i64 %i, %d
  %c.lo = icmp sge i64 %j, %lo
  %c.hi = icmp slt i64 %j, %hi
  %ok = and i1 %c.lo, %c.hi
  br i1 %ok, label %then, label %latch

then:
  %off = sub i64 %j, %base
  %px = getelementptr inbounds float, ptr %x, i64 %off
  %v = load float, ptr %px, align 4
  br label %latch

latch:
  %r = phi float [ %v, %then ], [ 0.0, %loop ]
  %k = sub i64 %i, %s
  %py = getelementptr inbounds float, ptr %y, i64 %k
  store float %r, ptr %py, align 4
  %i.next = add nsw i64 %i, 1
  %done = icmp eq i64 %i.next, %e
  br i1 %done, label %exit, label %loop

exit:
  ret void
}

; Not strict: the iterations while j <= lo are lo - X + 1, which may not
; fit (lo = INT64_MAX, X = INT64_MIN): clamped to BTC = e - 1 - s first.
; CHECK-LABEL: define void @up_s_incl(
; CHECK:       loop.preheader:
; CHECK-NEXT:    %[[E1:.*]] = add i64 %e, -1
; CHECK-NEXT:    %[[BTC:.*]] = sub i64 %[[E1]], %s
; CHECK-NEXT:    %[[TC:.*]] = sub i64 %e, %s
; CHECK-NEXT:    %[[X:.*]] = add i64 %d, %s
; CHECK-NEXT:    %accel.ahead = icmp sge i64 %lo, %[[X]]
; CHECK-NEXT:    %accel.diff = sub i64 %lo, %[[X]]
; CHECK-NEXT:    %[[L:.*]] = call i64 @llvm.umin.i64(i64 %accel.diff, i64 %[[BTC]])
; CHECK-NEXT:    %[[L1:.*]] = add i64 %[[L]], 1
; CHECK-NEXT:    %accel.lo = select i1 %accel.ahead, i64 %[[L1]], i64 0
; lo < j <= hi.
define void @up_s_incl(ptr noalias %y, ptr noalias %x, i64 %s, i64 %e, i64 %d, i64 %lo, i64 %hi, i64 %base) {
entry:
  %any = icmp slt i64 %s, %e
  br i1 %any, label %loop, label %exit

loop:
  %i = phi i64 [ %s, %entry ], [ %i.next, %latch ]
  %j = add nsw i64 %i, %d
  %c.lo = icmp sgt i64 %j, %lo
  %c.hi = icmp sle i64 %j, %hi
  %ok = and i1 %c.lo, %c.hi
  br i1 %ok, label %then, label %latch

then:
  %off = sub i64 %j, %base
  %px = getelementptr inbounds float, ptr %x, i64 %off
  %v = load float, ptr %px, align 4
  br label %latch

latch:
  %r = phi float [ %v, %then ], [ 0.0, %loop ]
  %k = sub i64 %i, %s
  %py = getelementptr inbounds float, ptr %y, i64 %k
  store float %r, ptr %py, align 4
  %i.next = add nsw i64 %i, 1
  %done = icmp eq i64 %i.next, %e
  br i1 %done, label %exit, label %loop

exit:
  ret void
}

; Unsigned, stepping up: lo <= j < hi.
define void @up_u(ptr noalias %y, ptr noalias %x, i64 %s, i64 %e, i64 %d, i64 %lo, i64 %hi, i64 %base) {
entry:
  %any = icmp ult i64 %s, %e
  br i1 %any, label %loop, label %exit

loop:
  %i = phi i64 [ %s, %entry ], [ %i.next, %latch ]
  %j = add nuw i64 %i, %d
  %c.lo = icmp uge i64 %j, %lo
  %c.hi = icmp ult i64 %j, %hi
  %ok = and i1 %c.lo, %c.hi
  br i1 %ok, label %then, label %latch

then:
  %off = sub i64 %j, %base
  %px = getelementptr inbounds float, ptr %x, i64 %off
  %v = load float, ptr %px, align 4
  br label %latch

latch:
  %r = phi float [ %v, %then ], [ 0.0, %loop ]
  %k = sub i64 %i, %s
  %py = getelementptr inbounds float, ptr %y, i64 %k
  store float %r, ptr %py, align 4
  %i.next = add nuw i64 %i, 1
  %done = icmp eq i64 %i.next, %e
  br i1 %done, label %exit, label %loop

exit:
  ret void
}

; lo < j <= hi.
define void @up_u_incl(ptr noalias %y, ptr noalias %x, i64 %s, i64 %e, i64 %d, i64 %lo, i64 %hi, i64 %base) {
entry:
  %any = icmp ult i64 %s, %e
  br i1 %any, label %loop, label %exit

loop:
  %i = phi i64 [ %s, %entry ], [ %i.next, %latch ]
  %j = add nuw i64 %i, %d
  %c.lo = icmp ugt i64 %j, %lo
  %c.hi = icmp ule i64 %j, %hi
  %ok = and i1 %c.lo, %c.hi
  br i1 %ok, label %then, label %latch

then:
  %off = sub i64 %j, %base
  %px = getelementptr inbounds float, ptr %x, i64 %off
  %v = load float, ptr %px, align 4
  br label %latch

latch:
  %r = phi float [ %v, %then ], [ 0.0, %loop ]
  %k = sub i64 %i, %s
  %py = getelementptr inbounds float, ptr %y, i64 %k
  store float %r, ptr %py, align 4
  %i.next = add nuw i64 %i, 1
  %done = icmp eq i64 %i.next, %e
  br i1 %done, label %exit, label %loop

exit:
  ret void
}

; Signed, stepping down.
define void @down_s(ptr noalias %y, ptr noalias %x, i64 %s, i64 %e, i64 %d, i64 %lo, i64 %hi, i64 %base) {
entry:
  %any = icmp sgt i64 %s, %e
  br i1 %any, label %loop, label %exit

loop:
  %i = phi i64 [ %s, %entry ], [ %i.next, %latch ]
  %j = add nsw i64 %i, %d
  %c.lo = icmp sge i64 %j, %lo
  %c.hi = icmp slt i64 %j, %hi
  %ok = and i1 %c.lo, %c.hi
  br i1 %ok, label %then, label %latch

then:
  %off = sub i64 %j, %base
  %px = getelementptr inbounds float, ptr %x, i64 %off
  %v = load float, ptr %px, align 4
  br label %latch

latch:
  %r = phi float [ %v, %then ], [ 0.0, %loop ]
  %k = sub i64 %s, %i
  %py = getelementptr inbounds float, ptr %y, i64 %k
  store float %r, ptr %py, align 4
  %i.next = add nsw i64 %i, -1
  %done = icmp eq i64 %i.next, %e
  br i1 %done, label %exit, label %loop

exit:
  ret void
}

define void @down_s_incl(ptr noalias %y, ptr noalias %x, i64 %s, i64 %e, i64 %d, i64 %lo, i64 %hi, i64 %base) {
entry:
  %any = icmp sgt i64 %s, %e
  br i1 %any, label %loop, label %exit

loop:
  %i = phi i64 [ %s, %entry ], [ %i.next, %latch ]
  %j = add nsw i64 %i, %d
  %c.lo = icmp sgt i64 %j, %lo
  %c.hi = icmp sle i64 %j, %hi
  %ok = and i1 %c.lo, %c.hi
  br i1 %ok, label %then, label %latch

then:
  %off = sub i64 %j, %base
  %px = getelementptr inbounds float, ptr %x, i64 %off
  %v = load float, ptr %px, align 4
  br label %latch

latch:
  %r = phi float [ %v, %then ], [ 0.0, %loop ]
  %k = sub i64 %s, %i
  %py = getelementptr inbounds float, ptr %y, i64 %k
  store float %r, ptr %py, align 4
  %i.next = add nsw i64 %i, -1
  %done = icmp eq i64 %i.next, %e
  br i1 %done, label %exit, label %loop

exit:
  ret void
}

; Unsigned, stepping down.
define void @down_u(ptr noalias %y, ptr noalias %x, i64 %s, i64 %e, i64 %d, i64 %lo, i64 %hi, i64 %base) {
entry:
  %any = icmp ugt i64 %s, %e
  br i1 %any, label %loop, label %exit

loop:
  %i = phi i64 [ %s, %entry ], [ %i.next, %latch ]
  %j = add nuw i64 %i, %d
  %c.lo = icmp uge i64 %j, %lo
  %c.hi = icmp ult i64 %j, %hi
  %ok = and i1 %c.lo, %c.hi
  br i1 %ok, label %then, label %latch

then:
  %off = sub i64 %j, %base
  %px = getelementptr inbounds float, ptr %x, i64 %off
  %v = load float, ptr %px, align 4
  br label %latch

latch:
  %r = phi float [ %v, %then ], [ 0.0, %loop ]
  %k = sub i64 %s, %i
  %py = getelementptr inbounds float, ptr %y, i64 %k
  store float %r, ptr %py, align 4
  %i.next = sub nuw i64 %i, 1
  %done = icmp eq i64 %i.next, %e
  br i1 %done, label %exit, label %loop

exit:
  ret void
}

define void @down_u_incl(ptr noalias %y, ptr noalias %x, i64 %s, i64 %e, i64 %d, i64 %lo, i64 %hi, i64 %base) {
entry:
  %any = icmp ugt i64 %s, %e
  br i1 %any, label %loop, label %exit

loop:
  %i = phi i64 [ %s, %entry ], [ %i.next, %latch ]
  %j = add nuw i64 %i, %d
  %c.lo = icmp ugt i64 %j, %lo
  %c.hi = icmp ule i64 %j, %hi
  %ok = and i1 %c.lo, %c.hi
  br i1 %ok, label %then, label %latch

then:
  %off = sub i64 %j, %base
  %px = getelementptr inbounds float, ptr %x, i64 %off
  %v = load float, ptr %px, align 4
  br label %latch

latch:
  %r = phi float [ %v, %then ], [ 0.0, %loop ]
  %k = sub i64 %s, %i
  %py = getelementptr inbounds float, ptr %y, i64 %k
  store float %r, ptr %py, align 4
  %i.next = sub nuw i64 %i, 1
  %done = icmp eq i64 %i.next, %e
  br i1 %done, label %exit, label %loop

exit:
  ret void
}

; Unsigned compares of an index that does not wrap as a signed value.
; Only the non-negative indices agree: from j >= 0 on, and a negative bound
; (as unsigned above every such index) decides alone: no iteration passes
; j uge lo then, all pass j ult hi.
; CHECK-LABEL: define void @up_mixed(
; CHECK:       loop.preheader:
; CHECK-NEXT:    %[[TC:.*]] = sub i64 %e, %s
; CHECK-NEXT:    %[[X:.*]] = add i64 %d, %s
; CHECK-NEXT:    %accel.ahead = icmp sgt i64 0, %[[X]]
; CHECK:         %accel.lo = select i1 %accel.ahead
; CHECK:         %accel.neg = icmp slt i64 %lo, 0
; CHECK-NEXT:    %{{.*}} = select i1 %accel.neg, i64 %[[TC]], i64
; CHECK:         %accel.neg{{[0-9]+}} = icmp slt i64 %hi, 0
; CHECK-NEXT:    %{{.*}} = select i1 %accel.neg{{[0-9]+}}, i64 %[[TC]], i64
define void @up_mixed(ptr noalias %y, ptr noalias %x, i64 %s, i64 %e, i64 %d, i64 %lo, i64 %hi, i64 %base) {
entry:
  %any = icmp slt i64 %s, %e
  br i1 %any, label %loop, label %exit

loop:
  %i = phi i64 [ %s, %entry ], [ %i.next, %latch ]
  %j = add nsw i64 %i, %d
  %c.lo = icmp uge i64 %j, %lo
  %c.hi = icmp ult i64 %j, %hi
  %ok = and i1 %c.lo, %c.hi
  br i1 %ok, label %then, label %latch

then:
  %off = sub i64 %j, %base
  %px = getelementptr inbounds float, ptr %x, i64 %off
  %v = load float, ptr %px, align 4
  br label %latch

latch:
  %r = phi float [ %v, %then ], [ 0.0, %loop ]
  %k = sub i64 %i, %s
  %py = getelementptr inbounds float, ptr %y, i64 %k
  store float %r, ptr %py, align 4
  %i.next = add nsw i64 %i, 1
  %done = icmp eq i64 %i.next, %e
  br i1 %done, label %exit, label %loop

exit:
  ret void
}

define void @up_mixed_incl(ptr noalias %y, ptr noalias %x, i64 %s, i64 %e, i64 %d, i64 %lo, i64 %hi, i64 %base) {
entry:
  %any = icmp slt i64 %s, %e
  br i1 %any, label %loop, label %exit

loop:
  %i = phi i64 [ %s, %entry ], [ %i.next, %latch ]
  %j = add nsw i64 %i, %d
  %c.lo = icmp ugt i64 %j, %lo
  %c.hi = icmp ule i64 %j, %hi
  %ok = and i1 %c.lo, %c.hi
  br i1 %ok, label %then, label %latch

then:
  %off = sub i64 %j, %base
  %px = getelementptr inbounds float, ptr %x, i64 %off
  %v = load float, ptr %px, align 4
  br label %latch

latch:
  %r = phi float [ %v, %then ], [ 0.0, %loop ]
  %k = sub i64 %i, %s
  %py = getelementptr inbounds float, ptr %y, i64 %k
  store float %r, ptr %py, align 4
  %i.next = add nsw i64 %i, 1
  %done = icmp eq i64 %i.next, %e
  br i1 %done, label %exit, label %loop

exit:
  ret void
}

define void @down_mixed(ptr noalias %y, ptr noalias %x, i64 %s, i64 %e, i64 %d, i64 %lo, i64 %hi, i64 %base) {
entry:
  %any = icmp sgt i64 %s, %e
  br i1 %any, label %loop, label %exit

loop:
  %i = phi i64 [ %s, %entry ], [ %i.next, %latch ]
  %j = add nsw i64 %i, %d
  %c.lo = icmp uge i64 %j, %lo
  %c.hi = icmp ult i64 %j, %hi
  %ok = and i1 %c.lo, %c.hi
  br i1 %ok, label %then, label %latch

then:
  %off = sub i64 %j, %base
  %px = getelementptr inbounds float, ptr %x, i64 %off
  %v = load float, ptr %px, align 4
  br label %latch

latch:
  %r = phi float [ %v, %then ], [ 0.0, %loop ]
  %k = sub i64 %s, %i
  %py = getelementptr inbounds float, ptr %y, i64 %k
  store float %r, ptr %py, align 4
  %i.next = add nsw i64 %i, -1
  %done = icmp eq i64 %i.next, %e
  br i1 %done, label %exit, label %loop

exit:
  ret void
}

define void @down_mixed_incl(ptr noalias %y, ptr noalias %x, i64 %s, i64 %e, i64 %d, i64 %lo, i64 %hi, i64 %base) {
entry:
  %any = icmp sgt i64 %s, %e
  br i1 %any, label %loop, label %exit

loop:
  %i = phi i64 [ %s, %entry ], [ %i.next, %latch ]
  %j = add nsw i64 %i, %d
  %c.lo = icmp ugt i64 %j, %lo
  %c.hi = icmp ule i64 %j, %hi
  %ok = and i1 %c.lo, %c.hi
  br i1 %ok, label %then, label %latch

then:
  %off = sub i64 %j, %base
  %px = getelementptr inbounds float, ptr %x, i64 %off
  %v = load float, ptr %px, align 4
  br label %latch

latch:
  %r = phi float [ %v, %then ], [ 0.0, %loop ]
  %k = sub i64 %s, %i
  %py = getelementptr inbounds float, ptr %y, i64 %k
  store float %r, ptr %py, align 4
  %i.next = add nsw i64 %i, -1
  %done = icmp eq i64 %i.next, %e
  br i1 %done, label %exit, label %loop

exit:
  ret void
}


; CHECK-LABEL: define void @u8_full(
; CHECK:       entry:
; CHECK-NEXT:    %[[BTC:.*]] = add i8 %m, -1
; CHECK-NEXT:    %accel.ahead = icmp ugt i8 %n, 0
; CHECK-NEXT:    %[[H:.*]] = call i8 @llvm.umin.i8(i8 %n, i8 %m)
; CHECK-NEXT:    %accel.hi = select i1 %accel.ahead, i8 %[[H]], i8 0
; CHECK-NEXT:    %accel.all.guarded = icmp eq i8 %[[BTC]], -1
; The main loop runs first, unless the flag says so; the post loop then runs
; from 0 to 256, 0 in i8:
; CHECK-NEXT:    %[[R0:.*]] = icmp ugt i8 %accel.hi, 0
; CHECK-NEXT:    %[[NOT:.*]] = xor i1 %accel.all.guarded, true
; CHECK-NEXT:    %[[RUNMAIN:.*]] = and i1 %[[NOT]], %[[R0]]
; CHECK-NEXT:    %[[R1:.*]] = icmp ugt i8 %m, %accel.hi
; CHECK-NEXT:    %[[RUNPOST:.*]] = or i1 %accel.all.guarded, %[[R1]]
; CHECK-NEXT:    %accel.from = select i1 %accel.all.guarded, i8 0, i8 %accel.hi
; CHECK-NEXT:    br i1 %[[RUNMAIN]], label %loop, label %accel.bridge
; CHECK:       loop:
; CHECK-NOT:     icmp ult
; CHECK:         %accel.more = icmp ne i8 %i.next, %accel.hi
; CHECK:       loop.post:
; CHECK:         %in.post = icmp ult i8 %i.post, %n
; CHECK:         %accel.more{{[0-9]*}} = icmp ne i8 %i.next.post, %m
; CHECK:       accel.bridge:
; CHECK-NEXT:    %accel.carry = phi i8 [ 0, %entry ], [ %i.next, %loop ]
; CHECK-NEXT:    br i1 %[[RUNPOST]], label %loop.post, label %exit
; 8-bit loops of up to 256 iterations (m = 0), one more than an i8 holds: the
; copies run with the checks for all of them then.
define void @u8_full(ptr noalias %y, ptr noalias %x, i8 %m, i8 %n) {
entry:
  br label %loop

loop:
  %i = phi i8 [ 0, %entry ], [ %i.next, %latch ]
  %in = icmp ult i8 %i, %n
  br i1 %in, label %then, label %latch

then:
  %ix = zext i8 %i to i64
  %px = getelementptr inbounds float, ptr %x, i64 %ix
  %v = load float, ptr %px, align 4
  br label %latch

latch:
  %r = phi float [ %v, %then ], [ 0.0, %loop ]
  %iy = zext i8 %i to i64
  %py = getelementptr inbounds float, ptr %y, i64 %iy
  store float %r, ptr %py, align 4
  %i.next = add i8 %i, 1
  %done = icmp eq i8 %i.next, %m
  br i1 %done, label %exit, label %loop

exit:
  ret void
}

; Every signed 8-bit index from -128 (e = -128: all 256). With the flag the
; pre loop, the first guarded one, runs them all.
; CHECK-LABEL: define void @s8_full(
; CHECK:         %accel.all.guarded = icmp eq i8
; CHECK:         %accel.run{{[0-9]*}} = or i1 %accel.all.guarded, %{{.*}}
; CHECK-NEXT:    %accel.to = select i1 %accel.all.guarded, i8 0, i8 %accel.lo
define void @s8_full(ptr noalias %y, ptr noalias %x, i8 %e, i8 %lo, i8 %hi) {
entry:
  br label %loop

loop:
  %i = phi i8 [ -128, %entry ], [ %i.next, %latch ]
  %c.lo = icmp sge i8 %i, %lo
  %c.hi = icmp slt i8 %i, %hi
  %ok = and i1 %c.lo, %c.hi
  br i1 %ok, label %then, label %latch

then:
  %is = sext i8 %i to i64
  %ix = add nsw i64 %is, 128
  %px = getelementptr inbounds float, ptr %x, i64 %ix
  %v = load float, ptr %px, align 4
  br label %latch

latch:
  %r = phi float [ %v, %then ], [ 0.0, %loop ]
  %ys = sext i8 %i to i64
  %iy = add nsw i64 %ys, 128
  %py = getelementptr inbounds float, ptr %y, i64 %iy
  store float %r, ptr %py, align 4
  %i.next = add i8 %i, 1
  %done = icmp eq i8 %i.next, %e
  br i1 %done, label %exit, label %loop

exit:
  ret void
}

; Down from 127 (e = 127: all 256), an unsigned compare of an index that
; wraps as an unsigned value (through 0 to -1) but not as a signed one.
define void @s8_down(ptr noalias %y, ptr noalias %x, i8 %e, i8 %n) {
entry:
  br label %loop

loop:
  %i = phi i8 [ 127, %entry ], [ %i.next, %latch ]
  %in = icmp ult i8 %i, %n
  br i1 %in, label %then, label %latch

then:
  %is = sext i8 %i to i64
  %ix = add nsw i64 %is, 128
  %px = getelementptr inbounds float, ptr %x, i64 %ix
  %v = load float, ptr %px, align 4
  br label %latch

latch:
  %r = phi float [ %v, %then ], [ 0.0, %loop ]
  %ys = sext i8 %i to i64
  %iy = add nsw i64 %ys, 128
  %py = getelementptr inbounds float, ptr %y, i64 %iy
  store float %r, ptr %py, align 4
  %i.next = add i8 %i, -1
  %done = icmp eq i8 %i.next, %e
  br i1 %done, label %exit, label %loop

exit:
  ret void
}

; CHECK-LABEL: define void @u8_index32(
; CHECK:       entry:
; CHECK-NEXT:    %[[BTC:.*]] = add i8 %m, -1
; CHECK-NEXT:    %[[BTC32:.*]] = zext i8 %[[BTC]] to i32
; CHECK-NEXT:    %[[TC:.*]] = add nuw nsw i32 %[[BTC32]], 1
; CHECK-NOT:     accel.all.guarded
; CHECK:         %accel.end{{[0-9]*}} = trunc i32 %[[TC]] to i8
; An 8-bit loop (up to 256 iterations) checking a 32-bit index: the bounds
; are computed in i32, where 256 fits, and the copies count in i8 (256 is 0
; there, reached after 256 iterations).
define void @u8_index32(ptr noalias %y, ptr noalias %x, i8 %m, i32 %d, i32 %n) {
entry:
  br label %loop

loop:
  %i = phi i8 [ 0, %entry ], [ %i.next, %latch ]
  %iz = zext i8 %i to i32
  %j = add nsw i32 %iz, %d
  %c.lo = icmp sge i32 %j, 0
  %c.hi = icmp slt i32 %j, %n
  %ok = and i1 %c.lo, %c.hi
  br i1 %ok, label %then, label %latch

then:
  %jx = sext i32 %j to i64
  %px = getelementptr inbounds float, ptr %x, i64 %jx
  %v = load float, ptr %px, align 4
  br label %latch

latch:
  %r = phi float [ %v, %then ], [ 0.0, %loop ]
  %iy = zext i8 %i to i64
  %py = getelementptr inbounds float, ptr %y, i64 %iy
  store float %r, ptr %py, align 4
  %i.next = add i8 %i, 1
  %done = icmp eq i8 %i.next, %m
  br i1 %done, label %exit, label %loop

exit:
  ret void
}

; CHECK-LABEL: define void @u64_any(
; CHECK:         %accel.all.guarded = icmp eq i64 %{{.*}}, -1
; The 64-bit form of @u8_full: m = 0 would run 2^64 iterations (not
; executed), the guarded copy all of them.
define void @u64_any(ptr noalias %y, ptr noalias %x, i64 %m, i64 %n) {
entry:
  br label %loop

loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %latch ]
  %in = icmp ult i64 %i, %n
  br i1 %in, label %then, label %latch

then:
  %px = getelementptr inbounds float, ptr %x, i64 %i
  %v = load float, ptr %px, align 4
  br label %latch

latch:
  %r = phi float [ %v, %then ], [ 0.0, %loop ]
  %py = getelementptr inbounds float, ptr %y, i64 %i
  store float %r, ptr %py, align 4
  %i.next = add i64 %i, 1
  %done = icmp eq i64 %i.next, %m
  br i1 %done, label %exit, label %loop

exit:
  ret void
}

; CHECK-LABEL: define void @u8_from_one(
; CHECK-NOT:     accel.all.guarded
; CHECK:         %accel.run{{[0-9]*}} = icmp ugt i8 -1, %accel.hi
; 255 iterations (i = 1 .. 255), the most an i8 trip count holds: no flag.
define void @u8_from_one(ptr noalias %y, ptr noalias %x, i8 %n) {
entry:
  br label %loop

loop:
  %i = phi i8 [ 1, %entry ], [ %i.next, %latch ]
  %in = icmp ult i8 %i, %n
  br i1 %in, label %then, label %latch

then:
  %ix = zext i8 %i to i64
  %px = getelementptr inbounds float, ptr %x, i64 %ix
  %v = load float, ptr %px, align 4
  br label %latch

latch:
  %r = phi float [ %v, %then ], [ 0.0, %loop ]
  %iy = zext i8 %i to i64
  %py = getelementptr inbounds float, ptr %y, i64 %iy
  store float %r, ptr %py, align 4
  %i.next = add i8 %i, 1
  %done = icmp eq i8 %i.next, 0
  br i1 %done, label %exit, label %loop

exit:
  ret void
}
