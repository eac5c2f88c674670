; Users other than extractvalue (a store, a call, a return, an insertvalue
; that builds something else) get the aggregate rebuilt once, right after
; the phis; an extractvalue of a nested aggregate gets that sub-aggregate
; built from its parts in front of it.

; RUN: opt %loadaccel -passes='accel-phi-decompose,verify' -S %s | FileCheck %s
; RUN: opt %loadaccel -passes=accel-phi-decompose -disable-output %s \
; RUN:   -pass-remarks=accel-phi-decompose 2>&1 | FileCheck %s --check-prefix=REMARK

; REMARK: split phi of { float, float } into 2 scalar phis (2 extract users rewired, rebuilt once for 3 other users)
; REMARK: split phi of { i64, [2 x i64] } into 3 scalar phis (2 extract users rewired, 0 other users)

declare void @observe({ float, float })

define void @other_uses(ptr %out, ptr %a, i64 %n) {
; CHECK-LABEL: @other_uses(
; CHECK:       loop:
; CHECK:         %z.0 = phi float [ 0.000000e+00, %entry ], [ %re.next, %loop ]
; CHECK-NEXT:    %z.1 = phi float [ 0.000000e+00, %entry ], [ %im.next, %loop ]
; CHECK-NEXT:    %z.rebuilt = insertvalue { float, float } poison, float %z.0, 0
; CHECK-NEXT:    %z.rebuilt1 = insertvalue { float, float } %z.rebuilt, float %z.1, 1
; CHECK-NEXT:    store { float, float } %z.rebuilt1, ptr %out, align 4
; CHECK-NEXT:    call void @observe({ float, float } %z.rebuilt1)
; CHECK:         %re.next = fadd float %z.0, %x
; CHECK:         %pair = insertvalue { { float, float }, i64 } poison, { float, float } %z.rebuilt1, 0
; CHECK-NOT:     insertvalue { float, float }
; CHECK-NOT:     phi {
entry:
  br label %loop

loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %loop ]
  %z = phi { float, float } [ zeroinitializer, %entry ], [ %z.next, %loop ]
  store { float, float } %z, ptr %out, align 4
  call void @observe({ float, float } %z)
  %p = getelementptr inbounds float, ptr %a, i64 %i
  %x = load float, ptr %p, align 4
  %re = extractvalue { float, float } %z, 0
  %im = extractvalue { float, float } %z, 1
  %re.next = fadd float %re, %x
  %im.next = fsub float %im, %x
  %z.b = insertvalue { float, float } poison, float %re.next, 0
  %z.next = insertvalue { float, float } %z.b, float %im.next, 1
  %pair = insertvalue { { float, float }, i64 } poison, { float, float } %z, 0
  %pair.p = getelementptr inbounds i8, ptr %out, i64 8
  store { { float, float }, i64 } %pair, ptr %pair.p, align 8
  %i.next = add nuw nsw i64 %i, 1
  %done = icmp eq i64 %i.next, %n
  br i1 %done, label %exit, label %loop

exit:
  ret void
}

; extractvalue of the nested [2 x i64]: rebuilt from its two parts.
define i64 @sub_aggregate({ i64, [2 x i64] } %init, i64 %n) {
; CHECK-LABEL: @sub_aggregate(
; CHECK:       loop:
; CHECK:         %t.0 = phi i64
; CHECK-NOT:     phi {
; The array is the same on every path: its parts fold to the entry values.
; CHECK:         %t.sub = insertvalue [2 x i64] poison, i64 %init.x.1.0, 0
; CHECK-NEXT:    %t.sub1 = insertvalue [2 x i64] %t.sub, i64 %init.x.1.1, 1
; CHECK-NEXT:    %dims = call i64 @product([2 x i64] %t.sub1)
entry:
  br label %loop

loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %loop ]
  %t = phi { i64, [2 x i64] } [ %init, %entry ], [ %t.next, %loop ]
  %dims.arr = extractvalue { i64, [2 x i64] } %t, 1
  %dims = call i64 @product([2 x i64] %dims.arr)
  %rank = extractvalue { i64, [2 x i64] } %t, 0
  %rank.next = add i64 %rank, %dims
  %t.next = insertvalue { i64, [2 x i64] } %t, i64 %rank.next, 0
  %i.next = add nuw nsw i64 %i, 1
  %done = icmp eq i64 %i.next, %n
  br i1 %done, label %exit, label %loop

exit:
  ret i64 %rank.next
}

declare i64 @product([2 x i64])
