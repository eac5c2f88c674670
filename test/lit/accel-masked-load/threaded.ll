; The shape clang -O3 leaves a 1-D convolution with many taps in after jump
; threading: the induction's increment is computed on both sides of a check
; and merged by a phi (SCEV sees no AddRec), and the tap index `iv + 2` carries
; nuw/nsw flags that SCEV cannot keep. The pass merges the duplicated
; increment (one `add` in the dominating block) and trusts the flags of an
; index whose wrap would make the program undefined (it decides a branch), so
; the loop is split.

; RUN: opt %loadaccel -passes=accel-masked-load -pass-remarks=accel-masked-load \
; RUN:   -S %s 2>%t.remarks | FileCheck %s
; RUN: FileCheck %s --check-prefix=REMARK --input-file=%t.remarks

; REMARK: remark: {{.*}}loop split into 3 loops; the main loop runs without the range checks iv ugt 3, j2 ult n

; CHECK-LABEL: define void @threaded(
; CHECK:       loop:
; CHECK:         %inc.a{{[0-9]*}} = add nuw nsw i64 %iv, 1
; CHECK-NEXT:    br i1 %c0, label %a, label %b
; CHECK:       m:
; CHECK-NOT:     phi i64
; CHECK:       loop.main:
; CHECK-NOT:     icmp {{.*}}%j2.main
; CHECK:       loop.post:
define void @threaded(ptr noalias %y, ptr noalias %x, i64 %n) {
entry:
  %big = icmp ugt i64 %n, 4
  br i1 %big, label %loop, label %exit

loop:
  %iv = phi i64 [ 2, %entry ], [ %iv.next, %latch ]
  %c0 = icmp ugt i64 %iv, 3
  br i1 %c0, label %a, label %b

a:
  %pa = getelementptr float, ptr %x, i64 %iv
  %pa4 = getelementptr i8, ptr %pa, i64 -16
  %va = load float, ptr %pa4, align 4
  %inc.a = add nuw nsw i64 %iv, 1
  br label %m

b:
  %inc.b = add nuw nsw i64 %iv, 1
  br label %m

m:
  %iv.next = phi i64 [ %inc.a, %a ], [ %inc.b, %b ]
  %s0 = phi float [ %va, %a ], [ 0.0, %b ]
  %j2 = add nuw nsw i64 %iv, 2
  %c1 = icmp ult i64 %j2, %n
  br i1 %c1, label %t, label %latch

t:
  %pt = getelementptr inbounds float, ptr %x, i64 %j2
  %vt = load float, ptr %pt, align 4
  %s1 = fadd float %s0, %vt
  br label %latch

latch:
  %s = phi float [ %s1, %t ], [ %s0, %m ]
  %py = getelementptr inbounds float, ptr %y, i64 %iv
  store float %s, ptr %py, align 4
  %done = icmp eq i64 %iv.next, %n
  br i1 %done, label %exit, label %loop

exit:
  ret void
}
