; Phis of structs (2 and 4 fields), of nested arrays and of a memref-like
; descriptor become one phi per scalar element; extractvalue users take the
; scalar phi, and the insertvalue chains that built the incoming values give
; their scalars straight to the new phis (nothing is extracted again).

; RUN: opt %loadaccel -passes=accel-phi-decompose -S %s | FileCheck %s
; RUN: opt %loadaccel -passes=accel-phi-decompose -S %s \
; RUN:   -pass-remarks=accel-phi-decompose 2>&1 >/dev/null | FileCheck %s --check-prefix=REMARK
; Idempotent: a second run changes nothing.
; RUN: opt %loadaccel -passes=accel-phi-decompose -S < %s > %t.once.ll
; RUN: opt %loadaccel -passes=accel-phi-decompose -S < %t.once.ll > %t.twice.ll
; RUN: diff %t.once.ll %t.twice.ll

; REMARK: remark: {{.*}} split phi of { float, float } into 2 scalar phis (2 extract users rewired, 0 other users)
; REMARK: remark: {{.*}} split phi of { i32, float, i64, double } into 4 scalar phis (4 extract users rewired, 0 other users)
; REMARK: remark: {{.*}} split phi of [2 x [2 x i64]] into 4 scalar phis (4 extract users rewired, 0 other users)
; REMARK: remark: {{.*}} split phi of { ptr, ptr, i64, [1 x i64], [1 x i64] } into 5 scalar phis (5 extract users rewired, 0 other users)

; A complex<f32> accumulator.
define { float, float } @two_fields(ptr %a, i64 %n) {
; CHECK-LABEL: @two_fields(
; CHECK:       loop:
; CHECK:         %acc.0 = phi float [ 0.000000e+00, %entry ], [ %re.next, %loop ]
; CHECK-NEXT:    %acc.1 = phi float [ 1.000000e+00, %entry ], [ %im.next, %loop ]
; CHECK-NOT:     phi {
; CHECK:         %re.next = fadd float %acc.0, %x
; CHECK-NEXT:    %im.next = fadd float %acc.1, %x
; CHECK-NOT:     extractvalue
; CHECK-NOT:     insertvalue { float, float } %{{.*}}, float %im.next
; CHECK:       exit:
; CHECK-NEXT:    %r.0 = insertvalue { float, float } poison, float %re.next, 0
; CHECK-NEXT:    %r = insertvalue { float, float } %r.0, float %im.next, 1
entry:
  br label %loop

loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %loop ]
  %acc = phi { float, float } [ { float 0.0, float 1.0 }, %entry ], [ %acc.next, %loop ]
  %p = getelementptr inbounds float, ptr %a, i64 %i
  %x = load float, ptr %p, align 4
  %re = extractvalue { float, float } %acc, 0
  %im = extractvalue { float, float } %acc, 1
  %re.next = fadd float %re, %x
  %im.next = fadd float %im, %x
  %acc.b = insertvalue { float, float } poison, float %re.next, 0
  %acc.next = insertvalue { float, float } %acc.b, float %im.next, 1
  %i.next = add nuw nsw i64 %i, 1
  %done = icmp eq i64 %i.next, %n
  br i1 %done, label %exit, label %loop

exit:
  %r.0 = insertvalue { float, float } poison, float %re.next, 0
  %r = insertvalue { float, float } %r.0, float %im.next, 1
  ret { float, float } %r
}

; Four fields of four types; the incoming aggregate from the preheader is an
; argument, so its fields are extracted once, at the function entry.
define i64 @four_fields({ i32, float, i64, double } %init, i64 %n) {
; CHECK-LABEL: @four_fields(
; CHECK:       entry:
; CHECK-NEXT:    %init.x.0 = extractvalue { i32, float, i64, double } %init, 0
; CHECK-NEXT:    %init.x.1 = extractvalue { i32, float, i64, double } %init, 1
; CHECK-NEXT:    %init.x.2 = extractvalue { i32, float, i64, double } %init, 2
; CHECK-NEXT:    %init.x.3 = extractvalue { i32, float, i64, double } %init, 3
; CHECK:       loop:
; CHECK:         %s.0 = phi i32 [ %init.x.0, %entry ], [ %a.next, %loop ]
; CHECK-NEXT:    %s.1 = phi float [ %init.x.1, %entry ], [ %b.next, %loop ]
; CHECK-NEXT:    %s.2 = phi i64 [ %init.x.2, %entry ], [ %c.next, %loop ]
; CHECK-NEXT:    %s.3 = phi double [ %init.x.3, %entry ], [ %d.next, %loop ]
; CHECK:         %a.next = add i32 %s.0, 1
; CHECK:         %d.next = fmul double %s.3, 2.000000e+00
entry:
  br label %loop

loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %loop ]
  %s = phi { i32, float, i64, double } [ %init, %entry ], [ %s.next, %loop ]
  %a = extractvalue { i32, float, i64, double } %s, 0
  %b = extractvalue { i32, float, i64, double } %s, 1
  %c = extractvalue { i32, float, i64, double } %s, 2
  %d = extractvalue { i32, float, i64, double } %s, 3
  %a.next = add i32 %a, 1
  %b.next = fadd float %b, 1.0
  %c.next = add i64 %c, %i
  %d.next = fmul double %d, 2.0
  %b1 = insertvalue { i32, float, i64, double } poison, i32 %a.next, 0
  %b2 = insertvalue { i32, float, i64, double } %b1, float %b.next, 1
  %b3 = insertvalue { i32, float, i64, double } %b2, i64 %c.next, 2
  %s.next = insertvalue { i32, float, i64, double } %b3, double %d.next, 3
  %i.next = add nuw nsw i64 %i, 1
  %done = icmp eq i64 %i.next, %n
  br i1 %done, label %exit, label %loop

exit:
  ret i64 %c.next
}

; A nested array (a 2x2 shape/stride tuple) built element by element, with
; one element rewritten by a nested index path each iteration.
define i64 @nested_array(i64 %n, i64 %s0, i64 %s1) {
; CHECK-LABEL: @nested_array(
; CHECK:       loop:
; The elements that are the same on every path are not phis at all.
; CHECK:         %t.0.0 = phi i64 [ %n, %entry ], [ %t.0.0.next, %loop ]
; CHECK-NEXT:    %m = mul i64 4, %s0
; CHECK-NEXT:    %m2 = add i64 %m, %s1
; CHECK:         %t.0.0.next = sub i64 %t.0.0, 1
; CHECK-NOT:     phi [2 x [2 x i64]]
; CHECK-NOT:     insertvalue
entry:
  %t0 = insertvalue [2 x [2 x i64]] poison, i64 %n, 0, 0
  %t1 = insertvalue [2 x [2 x i64]] %t0, i64 4, 0, 1
  %row = insertvalue [2 x i64] poison, i64 %s0, 0
  %row1 = insertvalue [2 x i64] %row, i64 %s1, 1
  %t2 = insertvalue [2 x [2 x i64]] %t1, [2 x i64] %row1, 1
  br label %loop

loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %loop ]
  %acc = phi i64 [ 0, %entry ], [ %acc.next, %loop ]
  %t = phi [2 x [2 x i64]] [ %t2, %entry ], [ %t.next, %loop ]
  %e00 = extractvalue [2 x [2 x i64]] %t, 0, 0
  %e01 = extractvalue [2 x [2 x i64]] %t, 0, 1
  %e10 = extractvalue [2 x [2 x i64]] %t, 1, 0
  %e11 = extractvalue [2 x [2 x i64]] %t, 1, 1
  %m = mul i64 %e01, %e10
  %m2 = add i64 %m, %e11
  %acc.next = add i64 %acc, %m2
  %t.0.0.next = sub i64 %e00, 1
  %t.next = insertvalue [2 x [2 x i64]] %t, i64 %t.0.0.next, 0, 0
  %i.next = add nuw nsw i64 %i, 1
  %done = icmp eq i64 %i.next, %n
  br i1 %done, label %exit, label %loop

exit:
  ret i64 %acc.next
}

; A memref descriptor { allocated, aligned, offset, [sizes], [strides] }
; carried through a loop that advances the offset.
define float @descriptor(ptr %base, i64 %size, i64 %n) {
; CHECK-LABEL: @descriptor(
; CHECK:       loop:
; Only the offset changes from iteration to iteration; the pointers, size
; and stride are the entry values again.
; CHECK:         %s = phi float
; CHECK-NEXT:    %d.2 = phi i64 [ 0, %entry ], [ %off.next, %loop ]
; CHECK-NEXT:    %p = getelementptr inbounds float, ptr %base, i64 %d.2
; CHECK:         %off.1 = add i64 %d.2, 1
; CHECK-NEXT:    %wrap = icmp eq i64 %off.1, %size
entry:
  %d0 = insertvalue { ptr, ptr, i64, [1 x i64], [1 x i64] } poison, ptr %base, 0
  %d1 = insertvalue { ptr, ptr, i64, [1 x i64], [1 x i64] } %d0, ptr %base, 1
  %d2 = insertvalue { ptr, ptr, i64, [1 x i64], [1 x i64] } %d1, i64 0, 2
  %d3 = insertvalue { ptr, ptr, i64, [1 x i64], [1 x i64] } %d2, i64 %size, 3, 0
  %d4 = insertvalue { ptr, ptr, i64, [1 x i64], [1 x i64] } %d3, i64 1, 4, 0
  br label %loop

loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %loop ]
  %s = phi float [ 0.0, %entry ], [ %s.next, %loop ]
  %d = phi { ptr, ptr, i64, [1 x i64], [1 x i64] } [ %d4, %entry ], [ %d.next, %loop ]
  %alloc = extractvalue { ptr, ptr, i64, [1 x i64], [1 x i64] } %d, 0
  %aligned = extractvalue { ptr, ptr, i64, [1 x i64], [1 x i64] } %d, 1
  %off = extractvalue { ptr, ptr, i64, [1 x i64], [1 x i64] } %d, 2
  %sz = extractvalue { ptr, ptr, i64, [1 x i64], [1 x i64] } %d, 3, 0
  %st = extractvalue { ptr, ptr, i64, [1 x i64], [1 x i64] } %d, 4, 0
  %p = getelementptr inbounds float, ptr %aligned, i64 %off
  %x = load float, ptr %p, align 4
  %s.next = fadd float %s, %x
  %off.1 = add i64 %off, %st
  %wrap = icmp eq i64 %off.1, %sz
  %off.next = select i1 %wrap, i64 0, i64 %off.1
  %d.next = insertvalue { ptr, ptr, i64, [1 x i64], [1 x i64] } %d, i64 %off.next, 2
  %i.next = add nuw nsw i64 %i, 1
  %done = icmp eq i64 %i.next, %n
  br i1 %done, label %exit, label %loop

exit:
  ret float %s.next
}
