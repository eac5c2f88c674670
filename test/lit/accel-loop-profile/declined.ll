; Late in the pipeline SimplifyCFG folds preheaders and exit blocks away:
; the pass forms them again and times the loop (a loop entered from two
; blocks, a loop that exits to a block also reached from outside). Loops
; where they cannot be formed are left alone, each with a missed remark: one
; that never exits, one that exits to an exception handler. Inner loops are
; timed with depth=2.

; RUN: opt %loadaccel -passes='accel-loop-profile,verify<loops>' -S %s \
; RUN:   -pass-remarks-missed=accel-loop-profile 2>%t.remarks | FileCheck %s
; RUN: FileCheck %s --check-prefix=REMARK < %t.remarks
; RUN: opt %loadaccel -passes='accel-loop-profile<depth=2>' -S %s | FileCheck %s --check-prefix=DEPTH2

target triple = "x86_64-unknown-linux-gnu"

; CHECK: @__llvmaccel_loop_count = constant i64 3
; DEPTH2: @__llvmaccel_loop_count = constant i64 4
; REMARK-DAG: not timing loop spin.forever: it never exits
; REMARK-DAG: not timing loop calls: it exits to an exception handler

; The new preheader merges the two ways in and reads the counter.
; CHECK-LABEL: define void @two_entries(
; CHECK:       loop.preheader:
; CHECK-NEXT:    %i.ph = phi i64 [ 1, %b ], [ 0, %a ]
; CHECK-NEXT:    %loopprof.start = call i64 @llvm.readcyclecounter()
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

; The exit shared with the path around the loop gets a block of the loop's
; own, where the time is added.
; CHECK-LABEL: define void @shared_exit(
; CHECK:       exit.loopexit:
; CHECK-NEXT:    %loopprof.end = call i64 @llvm.readcyclecounter()
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

; CHECK-LABEL: define void @forever(
; CHECK-NOT:   call i64 @llvm.readcyclecounter
define void @forever(ptr %p) {
entry:
  br label %spin.forever
spin.forever:
  store volatile i8 0, ptr %p
  br label %spin.forever
}

declare void @may_throw(i64)
declare i32 @__gxx_personality_v0(...)

; CHECK-LABEL: define void @unwinds(
; CHECK-NOT:   call i64 @llvm.readcyclecounter
define void @unwinds(i64 %n) personality ptr @__gxx_personality_v0 {
entry:
  br label %calls
calls:
  %i = phi i64 [ 0, %entry ], [ %i.next, %cont ]
  invoke void @may_throw(i64 %i) to label %cont unwind label %lpad
cont:
  %i.next = add i64 %i, 1
  %d = icmp eq i64 %i.next, %n
  br i1 %d, label %exit, label %calls
lpad:
  %lp = landingpad { ptr, i32 } cleanup
  resume { ptr, i32 } %lp
exit:
  ret void
}
