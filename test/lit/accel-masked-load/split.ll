; Index-set splitting of affine range checks: the loop becomes pre / main /
; post loops, the main loop has no check and the loop vectorizer vectorizes
; it. Branch form (signed and unsigned checks), select of the loaded value and
; of the pointer, an index stepping down, a guarded store.

; RUN: opt %loadaccel -passes=accel-masked-load -pass-remarks=accel-masked-load \
; RUN:   -S %s 2>%t.remarks | FileCheck %s --implicit-check-not='{{[ (<]i128}}'
; RUN: FileCheck %s --check-prefix=REMARK --input-file=%t.remarks
; The main loops vectorize afterwards (generic x86-64, no masked loads):
; RUN: opt %loadaccel -mtriple=x86_64-unknown-linux-gnu \
; RUN:   -passes='accel-masked-load,loop-vectorize' -pass-remarks=loop-vectorize \
; RUN:   -disable-output %s 2>&1 | FileCheck %s --check-prefix=VEC
; RUN: opt -mtriple=x86_64-unknown-linux-gnu -passes=loop-vectorize \
; RUN:   -pass-remarks=loop-vectorize -disable-output %s 2>&1 \
; RUN:   | FileCheck %s --check-prefix=NOVEC

; REMARK: remark: {{.*}}loop split into 3 loops; the main loop runs without the range checks j sge 0, j slt n
; REMARK: remark: {{.*}}loop split into 3 loops; the main loop runs without the range checks j ult n
; REMARK: remark: {{.*}}loop split into 3 loops; the main loop runs without the range checks j sgt -1, j slt n
; REMARK: remark: {{.*}}loop split into 3 loops; the main loop runs without the range checks j sge 0, j slt n
; REMARK: remark: {{.*}}loop split into 2 loops; the main loop runs without the range checks j sge 0
; REMARK: remark: {{.*}}loop split into 3 loops; the main loop runs without the range checks j sge 0, j slt n

; VEC-COUNT-6: remark: {{.*}}vectorized loop
; Without the pass only the select of the loaded value (an unconditional load)
; vectorizes:
; NOVEC-COUNT-1: vectorized loop
; NOVEC-NOT: vectorized loop

; y[i] = 0 <= i+d < n ? x[i+d] : 0, for i in [0, m).
; CHECK-LABEL: define void @pad_branch(
; The iteration bounds are computed before the loop, in the loop's own type:
; the iterations before j = i + d reaches 0 (while 0 is ahead of d) and
; before it reaches n, each clamped to the trip count m; the main loop's end
; is at least its start.
; CHECK:       entry:
; CHECK-NEXT:    %accel.ahead = icmp sgt i64 0, %d
; CHECK-NEXT:    %accel.diff = sub i64 0, %d
; CHECK-NEXT:    %[[LO:.*]] = call i64 @llvm.umin.i64(i64 %accel.diff, i64 %m)
; CHECK-NEXT:    %accel.lo = select i1 %accel.ahead, i64 %[[LO]], i64 0
; CHECK-NEXT:    %[[AHEAD:.*]] = icmp sgt i64 %n, %d
; CHECK-NEXT:    %[[DIFF:.*]] = sub i64 %n, %d
; CHECK-NEXT:    %[[HI:.*]] = call i64 @llvm.umin.i64(i64 %[[DIFF]], i64 %m)
; CHECK-NEXT:    %accel.hi = select i1 %[[AHEAD]], i64 %[[HI]], i64 0
; CHECK-NEXT:    %[[MAINEND:.*]] = call i64 @llvm.umax.i64(i64 %accel.hi, i64 %accel.lo)
; CHECK-NEXT:    %accel.run = icmp ugt i64 %accel.lo, 0
; CHECK-NEXT:    %[[RUNMAIN:.*]] = icmp ugt i64 %[[MAINEND]], %accel.lo
; CHECK-NEXT:    %[[RUNPOST:.*]] = icmp ugt i64 %m, %[[MAINEND]]
; CHECK-NEXT:    br i1 %accel.run, label %loop, label %accel.bridge
; Each loop counts its iterations with the loop's own induction:
; CHECK:       loop:
; CHECK:         %lo = icmp sge i64 %j, 0
; CHECK:         %hi = icmp slt i64 %j, %n
; CHECK:         %accel.more = icmp ne i64 %i.next, %accel.lo
; CHECK-NEXT:    br i1 %accel.more, label %loop, label %accel.bridge
; The main loop: no check, one block.
; CHECK:       loop.main:
; CHECK-NEXT:    %i.main = phi i64 [ %accel.carry, %accel.bridge ], [ %i.next.main, %loop.main ]
; CHECK-NEXT:    %j.main = add nsw i64 %i.main, %d
; CHECK-NEXT:    %px.main = getelementptr inbounds float, ptr %x, i64 %j.main
; CHECK-NEXT:    %v.main = load float, ptr %px.main, align 4
; CHECK-NEXT:    %py.main = getelementptr inbounds float, ptr %y, i64 %i.main
; CHECK-NEXT:    store float %v.main, ptr %py.main, align 4
; CHECK-NEXT:    %i.next.main = add nuw nsw i64 %i.main, 1
; CHECK-NEXT:    %accel.more{{[0-9]+}} = icmp ne i64 %i.next.main, %[[MAINEND]]
; CHECK-NEXT:    br i1 %accel.more{{[0-9]+}}, label %loop.main, label %accel.bridge{{[0-9]+}}
; CHECK:       loop.post:
; CHECK:         %lo.post = icmp sge i64 %j.post, 0
; CHECK:         %hi.post = icmp slt i64 %j.post, %n
; CHECK:         %accel.more{{[0-9]+}} = icmp ne i64 %i.next.post, %m
; CHECK:       accel.bridge:
; CHECK:         br i1 %[[RUNMAIN]], label %loop.main, label %accel.bridge{{[0-9]+}}
; CHECK:       accel.bridge{{[0-9]+}}:
; CHECK:         br i1 %[[RUNPOST]], label %loop.post, label %exit
; CHECK:       exit:
; CHECK-NEXT:    ret void
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

; The unsigned form (j as unsigned < n), i32 index sign-extended, and a sum
; carried across the three loops and used after them.
; CHECK-LABEL: define float @pad_unsigned_sum(
; CHECK:       loop:
; CHECK:         %in = icmp ult i32 %j, %n
; CHECK:       loop.main:
; CHECK-NOT:     icmp ult
; CHECK:       loop.post:
; CHECK:         %in.post = icmp ult i32 %j.post, %n
; CHECK:       accel.bridge:
; CHECK-NEXT:    %accel.carry = phi i32 [ 0, %loop.preheader ], [ %i.next, %latch ]
; CHECK-NEXT:    %accel.carry{{[0-9]*}} = phi float [ 0.000000e+00, %loop.preheader ], [ %s.next, %latch ]
; CHECK:       exit.loopexit:
; CHECK-NEXT:    %s.next.lcssa = phi float [ %accel.carry{{[0-9]+}}, %accel.bridge{{[0-9]+}} ], [ %s.next.post, %latch.post ]
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

; Select of the loaded value (the load is already unconditional: x is padded
; by the caller) and of the pointer (a zero stands in for x[j]).
; CHECK-LABEL: define void @pad_select_value(
; CHECK:       loop.main:
; CHECK-NOT:     select
; CHECK:       loop.post:
; CHECK:         select i1 %ok.post
define void @pad_select_value(ptr noalias %y, ptr noalias %x, i64 %n, i64 %m) {
entry:
  br label %loop

loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %loop ]
  %j = add nsw i64 %i, -2
  %lo = icmp sgt i64 %j, -1
  %hi = icmp slt i64 %j, %n
  %ok = select i1 %lo, i1 %hi, i1 false
  %px = getelementptr float, ptr %x, i64 %j
  %v = load float, ptr %px, align 4
  %r = select i1 %ok, float %v, float 0.0
  %py = getelementptr inbounds float, ptr %y, i64 %i
  store float %r, ptr %py, align 4
  %i.next = add nuw nsw i64 %i, 1
  %done = icmp eq i64 %i.next, %m
  br i1 %done, label %exit, label %loop

exit:
  ret void
}

@zero = internal constant float 0.0

; CHECK-LABEL: define void @pad_select_pointer(
; CHECK:       loop.main:
; CHECK-NOT:     select
; CHECK:         load float, ptr %px.main
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

; The index steps down (a flipped kernel): j = d - i >= 0 fails for the last
; iterations only, so there is no pre loop.
; CHECK-LABEL: define void @flip(
; CHECK:       loop:
; CHECK-NOT:     icmp sge
; CHECK:       loop.post:
; CHECK:         icmp sge i64 %j.post, 0
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

; A guarded store (scatter into a window of y): split, never made
; unconditional.
; CHECK-LABEL: define void @guarded_store(
; CHECK:       loop.main:
; CHECK-NOT:     icmp s
; CHECK:         %py.main = getelementptr
; CHECK-NEXT:    store float
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

; A 3-tap convolution whose weights are loaded behind the checks: in the main
; loop they are invariant and unconditional, and move to a preheader of the
; main loop's own (run only when it runs), so the vectorizer does not count
; them in the loop.
; CHECK-LABEL: define void @conv3(
; CHECK:       accel.main.ph:
; CHECK-NEXT:    %w0.main = load float, ptr %w, align 4
; CHECK-NEXT:    %w2.main = load float, ptr %pw2, align 4
; CHECK-NEXT:    br label %loop.main
; CHECK:       loop.main:
; CHECK-NOT:     load float, ptr %w
; CHECK:         br i1 %accel.more{{[0-9]*}}, label %loop.main
define void @conv3(ptr noalias %y, ptr noalias %x, ptr noalias %w, i64 %n) {
entry:
  %pw1 = getelementptr inbounds float, ptr %w, i64 1
  %pw2 = getelementptr inbounds float, ptr %w, i64 2
  %w1 = load float, ptr %pw1, align 4
  %pos = icmp sgt i64 %n, 0
  br i1 %pos, label %loop, label %exit

loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %tap2.j ]
  %j0 = add nsw i64 %i, -1
  %c0 = icmp sge i64 %j0, 0
  br i1 %c0, label %tap0, label %tap0.j

tap0:
  %px0 = getelementptr inbounds float, ptr %x, i64 %j0
  %x0 = load float, ptr %px0, align 4
  %w0 = load float, ptr %w, align 4
  %m0 = fmul float %x0, %w0
  br label %tap0.j

tap0.j:
  %s0 = phi float [ %m0, %tap0 ], [ 0.0, %loop ]
  %px1 = getelementptr inbounds float, ptr %x, i64 %i
  %x1 = load float, ptr %px1, align 4
  %m1 = fmul float %x1, %w1
  %s1 = fadd float %s0, %m1
  %j2 = add nsw i64 %i, 1
  %c2 = icmp slt i64 %j2, %n
  br i1 %c2, label %tap2, label %tap2.j

tap2:
  %px2 = getelementptr inbounds float, ptr %x, i64 %j2
  %x2 = load float, ptr %px2, align 4
  %w2 = load float, ptr %pw2, align 4
  %m2 = fmul float %x2, %w2
  %s2a = fadd float %s1, %m2
  br label %tap2.j

tap2.j:
  %s2 = phi float [ %s2a, %tap2 ], [ %s1, %tap0.j ]
  %py = getelementptr inbounds float, ptr %y, i64 %i
  store float %s2, ptr %py, align 4
  %i.next = add nuw nsw i64 %i, 1
  %done = icmp eq i64 %i.next, %n
  br i1 %done, label %exit, label %loop

exit:
  ret void
}
