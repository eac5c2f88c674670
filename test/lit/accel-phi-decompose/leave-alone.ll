; What the pass must leave alone: loops with scalar phis only (not a byte
; changes), a phi with more elements than max-elements, and a phi whose
; incoming value is an invoke result (its elements cannot be extracted on
; the edge). Each declined aggregate gets a missed remark saying why.

; RUN: opt -passes=verify -S < %s > %t.before.ll
; RUN: opt %loadaccel -passes=accel-phi-decompose -S < %s > %t.after.ll \
; RUN:   -pass-remarks-missed=accel-phi-decompose 2>%t.remarks
; RUN: diff %t.before.ll %t.after.ll
; RUN: FileCheck %s < %t.remarks

; CHECK: remark: {{.*}} phi of [64 x i32] has more than max-elements=16 elements
; CHECK: remark: {{.*}} phi of { i64, i64 } has an incoming value defined by an invoke or callbr, whose elements cannot be extracted on the edge
; CHECK-NOT: remark

; Scalar phis only, with sizes that are loop-carried (induction variables
; are SCEV's business; no anchor is stated at a loop header).
define float @scalar(ptr %a, i64 %n) {
entry:
  %guard = icmp sgt i64 %n, 0
  br i1 %guard, label %loop, label %exit

loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %loop ]
  %s = phi float [ 0.0, %entry ], [ %s.next, %loop ]
  %p = getelementptr inbounds float, ptr %a, i64 %i
  %x = load float, ptr %p, align 4
  %s.next = fadd float %s, %x
  %i.next = add nuw nsw i64 %i, 1
  %done = icmp eq i64 %i.next, %n
  br i1 %done, label %exit, label %loop

exit:
  %r = phi float [ 0.0, %entry ], [ %s.next, %loop ]
  ret float %r
}

; A histogram carried as an array of 64 counters.
define [64 x i32] @histogram(ptr %a, i64 %n) {
entry:
  br label %loop

loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %loop ]
  %h = phi [64 x i32] [ zeroinitializer, %entry ], [ %h.next, %loop ]
  %c = extractvalue [64 x i32] %h, 0
  %c.next = add i32 %c, 1
  %h.next = insertvalue [64 x i32] %h, i32 %c.next, 0
  %i.next = add nuw nsw i64 %i, 1
  %done = icmp eq i64 %i.next, %n
  br i1 %done, label %exit, label %loop

exit:
  ret [64 x i32] %h.next
}

declare { i64, i64 } @shape()
declare i32 @__gxx_personality_v0(...)

define i64 @from_invoke(i1 %c) personality ptr @__gxx_personality_v0 {
entry:
  br i1 %c, label %call, label %join

call:
  %s = invoke { i64, i64 } @shape() to label %join unwind label %lpad

join:
  %t = phi { i64, i64 } [ %s, %call ], [ zeroinitializer, %entry ]
  %d0 = extractvalue { i64, i64 } %t, 0
  ret i64 %d0

lpad:
  %lp = landingpad { ptr, i32 } cleanup
  resume { ptr, i32 } %lp
}
