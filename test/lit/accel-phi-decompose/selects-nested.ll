; Phis fed by selects of aggregates, selects of aggregates on their own, and
; chains of phis across a loop nest in LCSSA form: every link is split part
; to part, so no aggregate is built or taken apart on the way, and each
; scalar that leaves a loop still goes through an LCSSA phi of its exit.

; RUN: opt %loadaccel -passes='accel-phi-decompose,verify' -S %s | FileCheck %s
; RUN: opt %loadaccel -passes=accel-phi-decompose -disable-output %s \
; RUN:   -pass-remarks=accel-phi-decompose 2>&1 | FileCheck %s --check-prefix=REMARK
; The output is still in LCSSA form: LCSSA itself finds nothing to add.
; RUN: opt %loadaccel -passes=accel-phi-decompose -S < %s > %t.split.ll
; RUN: opt -passes=lcssa -S < %t.split.ll > %t.lcssa.ll
; RUN: diff %t.split.ll %t.lcssa.ll

; REMARK: split phi of { float, float } into 2 scalar phis (1 extract users rewired, 0 other users)
; REMARK-NEXT: split select of { float, float } into 2 scalar selects (0 extract users rewired, 0 other users)
; REMARK-NEXT: split phi of { float, float } into 2 scalar phis (1 extract users rewired, 0 other users)
; REMARK-NEXT: split select of { i64, i64 } into 2 scalar selects (2 extract users rewired, 0 other users)
; REMARK-NEXT: split phi of { float, float } into 2 scalar phis (0 extract users rewired, 0 other users)
; REMARK-NEXT: split phi of { float, float } into 2 scalar phis (2 extract users rewired, 0 other users)
; REMARK-NEXT: split phi of { float, float } into 2 scalar phis (0 extract users rewired, 0 other users)
; REMARK-NEXT: split phi of { float, float } into 2 scalar phis (0 extract users rewired, rebuilt once for 1 other users)

; A complex maximum-by-real-part: the accumulator is a select of the old
; value and the new element.
define float @phi_of_select(ptr %a, i64 %n) {
; CHECK-LABEL: @phi_of_select(
; CHECK:       loop:
; CHECK:         %best.0 = phi float [ {{0xFFF0000000000000|-inf}}, %entry ], [ %best.next.0, %loop ]
; CHECK-NEXT:    %best.1 = phi float [ 0.000000e+00, %entry ], [ %best.next.1, %loop ]
; CHECK:         %gt = fcmp ogt float %re, %best.0
; CHECK-NEXT:    %best.next.0 = select i1 %gt, float %re, float %best.0
; CHECK-NEXT:    %best.next.1 = select i1 %gt, float %im, float %best.1
; CHECK-NOT:     select i1 %gt, {
; CHECK:       exit:
; CHECK-NEXT:    %best.lcssa.0 = phi float [ %best.next.0, %loop ]
; CHECK-NEXT:    %best.lcssa.1 = phi float [ %best.next.1, %loop ]
; CHECK-NEXT:    ret float %best.lcssa.1
entry:
  br label %loop

loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %loop ]
  %best = phi { float, float } [ { float 0xFFF0000000000000, float 0.0 }, %entry ], [ %best.next, %loop ]
  %p = getelementptr inbounds { float, float }, ptr %a, i64 %i
  %re.p = getelementptr inbounds i8, ptr %p, i64 0
  %im.p = getelementptr inbounds i8, ptr %p, i64 4
  %re = load float, ptr %re.p, align 4
  %im = load float, ptr %im.p, align 4
  %c0 = insertvalue { float, float } poison, float %re, 0
  %c = insertvalue { float, float } %c0, float %im, 1
  %b.re = extractvalue { float, float } %best, 0
  %gt = fcmp ogt float %re, %b.re
  %best.next = select i1 %gt, { float, float } %c, { float, float } %best
  %i.next = add nuw nsw i64 %i, 1
  %done = icmp eq i64 %i.next, %n
  br i1 %done, label %exit, label %loop

exit:
  %best.lcssa = phi { float, float } [ %best.next, %loop ]
  %r = extractvalue { float, float } %best.lcssa, 1
  ret float %r
}

; A select of two shape tuples with no phi around it.
define i64 @select_alone(i1 %c, { i64, i64 } %x, i64 %a, i64 %b) {
; CHECK-LABEL: @select_alone(
; CHECK-NEXT:    %x.x.0 = extractvalue { i64, i64 } %x, 0
; CHECK-NEXT:    %x.x.1 = extractvalue { i64, i64 } %x, 1
; CHECK-NEXT:    %s.0 = select i1 %c, i64 %a, i64 %x.x.0
; CHECK-NEXT:    %s.1 = select i1 %c, i64 %b, i64 %x.x.1
; CHECK-NEXT:    %m = mul i64 %s.0, %s.1
; CHECK-NEXT:    ret i64 %m
  %y0 = insertvalue { i64, i64 } poison, i64 %a, 0
  %y = insertvalue { i64, i64 } %y0, i64 %b, 1
  %s = select i1 %c, { i64, i64 } %y, { i64, i64 } %x
  %d0 = extractvalue { i64, i64 } %s, 0
  %d1 = extractvalue { i64, i64 } %s, 1
  %m = mul i64 %d0, %d1
  ret i64 %m
}

; sum over rows of a complex matrix; the row sum restarts at the outer
; accumulator and flows back to it through the inner loop's LCSSA phi.
define { float, float } @nest(ptr %m, i64 %rows, i64 %cols) {
; CHECK-LABEL: @nest(
; CHECK:       outer:
; CHECK-NEXT:    %r = phi i64
; CHECK-NEXT:    %tot.0 = phi float [ 0.000000e+00, %entry ], [ %row.lcssa.0, %outer.latch ]
; CHECK-NEXT:    %tot.1 = phi float [ 0.000000e+00, %entry ], [ %row.lcssa.1, %outer.latch ]
; CHECK:       inner:
; CHECK-NEXT:    %c = phi i64
; CHECK-NEXT:    %row.0 = phi float [ %tot.0, %outer ], [ %re.next, %inner ]
; CHECK-NEXT:    %row.1 = phi float [ %tot.1, %outer ], [ %im.next, %inner ]
; CHECK:       outer.latch:
; CHECK-NEXT:    %row.lcssa.0 = phi float [ %re.next, %inner ]
; CHECK-NEXT:    %row.lcssa.1 = phi float [ %im.next, %inner ]
; CHECK:       exit:
; CHECK-NEXT:    %tot.lcssa.0 = phi float [ %row.lcssa.0, %outer.latch ]
; CHECK-NEXT:    %tot.lcssa.1 = phi float [ %row.lcssa.1, %outer.latch ]
; CHECK-NEXT:    %tot.lcssa.rebuilt = insertvalue { float, float } poison, float %tot.lcssa.0, 0
; CHECK-NEXT:    %tot.lcssa.rebuilt1 = insertvalue { float, float } %tot.lcssa.rebuilt, float %tot.lcssa.1, 1
; CHECK-NEXT:    ret { float, float } %tot.lcssa.rebuilt1
; CHECK-NOT:     phi {
entry:
  br label %outer

outer:
  %r = phi i64 [ 0, %entry ], [ %r.next, %outer.latch ]
  %tot = phi { float, float } [ zeroinitializer, %entry ], [ %row.lcssa, %outer.latch ]
  br label %inner

inner:
  %c = phi i64 [ 0, %outer ], [ %c.next, %inner ]
  %row = phi { float, float } [ %tot, %outer ], [ %row.next, %inner ]
  %off = mul nuw nsw i64 %r, %cols
  %k = add nuw nsw i64 %off, %c
  %p = getelementptr inbounds { float, float }, ptr %m, i64 %k
  %im.p = getelementptr inbounds i8, ptr %p, i64 4
  %x.re = load float, ptr %p, align 4
  %x.im = load float, ptr %im.p, align 4
  %re = extractvalue { float, float } %row, 0
  %im = extractvalue { float, float } %row, 1
  %re.next = fadd float %re, %x.re
  %im.next = fadd float %im, %x.im
  %n0 = insertvalue { float, float } poison, float %re.next, 0
  %row.next = insertvalue { float, float } %n0, float %im.next, 1
  %c.next = add nuw nsw i64 %c, 1
  %c.done = icmp eq i64 %c.next, %cols
  br i1 %c.done, label %outer.latch, label %inner

outer.latch:
  %row.lcssa = phi { float, float } [ %row.next, %inner ]
  %r.next = add nuw nsw i64 %r, 1
  %r.done = icmp eq i64 %r.next, %rows
  br i1 %r.done, label %exit, label %outer

exit:
  %tot.lcssa = phi { float, float } [ %row.lcssa, %outer.latch ]
  ret { float, float } %tot.lcssa
}
