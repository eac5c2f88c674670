; Loops the pass must leave alone, each with the remark that says why: the
; check guards a call or a volatile access, the bound changes inside the
; loop, the index can wrap, the index steps by 2.

; RUN: opt %loadaccel -passes=accel-masked-load -pass-remarks-missed=accel-masked-load \
; RUN:   -S %s 2>%t.remarks | FileCheck %s
; RUN: FileCheck %s --check-prefix=REMARK --input-file=%t.remarks

; REMARK: remark: {{.*}}range check j ult n not split: the bound changes inside the loop
; REMARK: remark: {{.*}}range check j sge 0 not split: SCEV cannot prove that its index does not wrap
; REMARK: remark: {{.*}}range check j slt n not split: SCEV cannot prove that its index does not wrap
; REMARK: remark: {{.*}}range check j sge 0 not split: its index does not step by +1 or -1
; REMARK: remark: {{.*}}range check j slt n not split: its index does not step by +1 or -1
; REMARK-NOT: remark

; No loop is copied anywhere:
; CHECK-NOT: accel.

declare void @use(i64)

; if (0 <= j < n) use(j): a call, not a memory access.
define void @guards_call(i64 %n, i64 %m) {
entry:
  br label %loop

loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %latch ]
  %j = add nsw i64 %i, -1
  %lo = icmp sge i64 %j, 0
  %hi = icmp slt i64 %j, %n
  %ok = and i1 %lo, %hi
  br i1 %ok, label %then, label %latch

then:
  call void @use(i64 %j)
  br label %latch

latch:
  %i.next = add nuw nsw i64 %i, 1
  %done = icmp eq i64 %i.next, %m
  br i1 %done, label %exit, label %loop

exit:
  ret void
}

; A volatile load behind the check (a device register window).
define void @guards_volatile(ptr noalias %y, ptr %x, i64 %n, i64 %m) {
entry:
  br label %loop

loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %latch ]
  %j = add nsw i64 %i, -1
  %lo = icmp sge i64 %j, 0
  %hi = icmp slt i64 %j, %n
  %ok = and i1 %lo, %hi
  br i1 %ok, label %then, label %latch

then:
  %px = getelementptr inbounds float, ptr %x, i64 %j
  %v = load volatile float, ptr %px, align 4
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

; The bound is a running count that grows inside the loop.
define void @bound_varies(ptr noalias %y, ptr noalias %x, ptr noalias %len, i64 %m) {
entry:
  br label %loop

loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %latch ]
  %n = phi i64 [ 0, %entry ], [ %n.next, %latch ]
  %j = add nsw i64 %i, -1
  %ok = icmp ult i64 %j, %n
  br i1 %ok, label %then, label %latch

then:
  %px = getelementptr inbounds float, ptr %x, i64 %j
  %v = load float, ptr %px, align 4
  br label %latch

latch:
  %r = phi float [ %v, %then ], [ 0.0, %loop ]
  %py = getelementptr inbounds float, ptr %y, i64 %i
  store float %r, ptr %py, align 4
  %pl = getelementptr inbounds i64, ptr %len, i64 %i
  %l = load i64, ptr %pl, align 8
  %n.next = add i64 %n, %l
  %i.next = add nuw nsw i64 %i, 1
  %done = icmp eq i64 %i.next, %m
  br i1 %done, label %exit, label %loop

exit:
  ret void
}

; j = i + d in i32 without nsw, i in i64: j wraps when d is large.
define void @may_wrap(ptr noalias %y, ptr noalias %x, i32 %n, i32 %d, i64 %m) {
entry:
  br label %loop

loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %latch ]
  %i32 = trunc i64 %i to i32
  %j = add i32 %i32, %d
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

; A strided index (j = 2i - 1): the pass splits unit steps only.
define void @stride2(ptr noalias %y, ptr noalias %x, i64 %n, i64 %m) {
entry:
  br label %loop

loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %latch ]
  %i2 = shl nuw nsw i64 %i, 1
  %j = add nsw i64 %i2, -1
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
