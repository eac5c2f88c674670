; Loops that cannot be timed are left alone, each with a missed remark: a
; loop entered from two blocks (no preheader), a loop that exits to a block
; also reached from outside (no dedicated exit). Inner loops are timed with
; depth=2.

; RUN: opt %loadaccel -passes=accel-loop-profile -S %s \
; RUN:   -pass-remarks-missed=accel-loop-profile 2>%t.remarks | FileCheck %s
; RUN: FileCheck %s --check-prefix=REMARK < %t.remarks
; RUN: opt %loadaccel -passes='accel-loop-profile<depth=2>' -S %s | FileCheck %s --check-prefix=DEPTH2

target triple = "x86_64-unknown-linux-gnu"

; CHECK: @__llvmaccel_loop_count = constant i64 1
; DEPTH2: @__llvmaccel_loop_count = constant i64 2
; REMARK-DAG: not timing loop loop: it has no preheader
; REMARK-DAG: not timing loop spin: its exit blocks are not dedicated

; CHECK-LABEL: define void @two_entries(
; CHECK-NOT:   readcyclecounter
define void @two_entries(ptr %p, i64 %n, i1 %c) {
entry:
  br i1 %c, label %a, label %b
a:
  br label %loop
b:
  br label %loop
loop:
  %i = phi i64 [ 0, %a ], [ 1, %b ], [ %i.next, %loop ]
  %q = getelementptr inbounds i8, ptr %p, i64 %i
  store i8 0, ptr %q
  %i.next = add i64 %i, 1
  %d = icmp eq i64 %i.next, %n
  br i1 %d, label %exit, label %loop
exit:
  ret void
}

; CHECK-LABEL: define void @shared_exit(
; CHECK-NOT:   readcyclecounter
; CHECK-LABEL: define void @nest(
define void @shared_exit(ptr %p, i64 %n, i1 %c) {
entry:
  br i1 %c, label %pre, label %exit
pre:
  br label %spin
spin:
  %i = phi i64 [ 0, %pre ], [ %i.next, %spin ]
  %i.next = add i64 %i, 1
  %d = icmp eq i64 %i.next, %n
  br i1 %d, label %exit, label %spin
exit:
  ret void
}

; DEPTH2-LABEL: define void @nest(
; DEPTH2:       entry:
; DEPTH2-NEXT:    %loopprof.start = call i64 @llvm.readcyclecounter()
; DEPTH2:       outer:
; DEPTH2:         %loopprof.start1 = call i64 @llvm.readcyclecounter()
; DEPTH2-NEXT:    br label %inner
define void @nest(ptr %p, i64 %n) {
entry:
  br label %outer
outer:
  %i = phi i64 [ 0, %entry ], [ %i.next, %latch ]
  br label %inner
inner:
  %j = phi i64 [ 0, %outer ], [ %j.next, %inner ]
  %j.next = add i64 %j, 1
  %jd = icmp eq i64 %j.next, %n
  br i1 %jd, label %latch, label %inner
latch:
  %i.next = add i64 %i, 1
  %id = icmp eq i64 %i.next, %n
  br i1 %id, label %exit, label %outer
exit:
  ret void
}
