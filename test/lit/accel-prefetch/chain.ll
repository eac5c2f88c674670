; A two-level chain A[B[C[i]]]: the final access is prefetched `distance`
; iterations ahead; the link B[C[i]] twice as far ahead, so it is in cache when
; the look-ahead load B[C[i + d]] needs it. The sequential index stream C is
; left to the hardware prefetcher.

; RUN: opt %loadaccel -passes='accel-prefetch<distance=8>' -S %s | FileCheck %s
; RUN: opt %loadaccel -passes='accel-prefetch<distance=8>' -pass-remarks=accel-prefetch \
; RUN:   -disable-output %s 2>&1 | FileCheck %s --check-prefix=REMARK

; CHECK-LABEL: define float @chain(
; CHECK:       loop:
; The link, 16 iterations ahead: load C[i + 16] and prefetch B[C[i + 16]].
; CHECK:         %accel.step = call i64 @llvm.umin.i64(i64 %accel.left, i64 16)
; CHECK-NEXT:    %accel.iter = add nuw i64 %i, %accel.step
; CHECK:         %c.ahead = load i32, ptr %{{.*}}, align 4
; CHECK:         %[[L:.*]] = getelementptr i8, ptr %B, i64
; CHECK-NEXT:    call void @llvm.prefetch.p0(ptr %[[L]], i32 0, i32 3, i32 1)
; The final access, 8 iterations ahead: load C[i + 8], B[C[i + 8]], prefetch A.
; CHECK:         %accel.step{{.*}} = call i64 @llvm.umin.i64(i64 %accel.left{{.*}}, i64 8)
; CHECK:         %c.ahead{{.*}} = load i32, ptr
; CHECK:         %b.ahead = load i32, ptr
; CHECK:         %[[T:.*]] = getelementptr i8, ptr %A, i64
; CHECK-NEXT:    call void @llvm.prefetch.p0(ptr %[[T]], i32 0, i32 3, i32 1)
; CHECK-NOT:     @llvm.prefetch
; CHECK:         %c.addr = getelementptr

; REMARK: remark: {{.*}} prefetched A[...] via C, B, 8 iterations ahead, 1 line
; REMARK-NOT: prefetched B

define float @chain(ptr noalias %A, ptr noalias %B, ptr noalias %C, i64 %n, float %w) {
entry:
  %guard = icmp sgt i64 %n, 0
  br i1 %guard, label %ph, label %exit

ph:
  br label %loop

loop:
  %i = phi i64 [ 0, %ph ], [ %i.next, %loop ]
  %s = phi float [ 0.0, %ph ], [ %s.next, %loop ]
  %c.addr = getelementptr inbounds i32, ptr %C, i64 %i
  %c = load i32, ptr %c.addr, align 4
  %c.ext = sext i32 %c to i64
  %b.addr = getelementptr inbounds i32, ptr %B, i64 %c.ext
  %b = load i32, ptr %b.addr, align 4
  %b.ext = zext i32 %b to i64
  %a.addr = getelementptr inbounds float, ptr %A, i64 %b.ext
  %a = load float, ptr %a.addr, align 4
  %x = fmul float %a, %w
  %x2 = fmul float %x, %x
  %x3 = fmul float %x2, %x
  %t1 = fmul float %x2, 3.0
  %t2 = fmul float %x, 2.0
  %p1 = fadd float %x3, %t1
  %p2 = fadd float %p1, %t2
  %d = fadd float %x, 5.0
  %r = fdiv float 1.0, %d
  %v = fadd float %p2, %r
  %s.next = fadd float %s, %v
  %i.next = add nuw nsw i64 %i, 1
  %done = icmp eq i64 %i.next, %n
  br i1 %done, label %exit, label %loop

exit:
  %res = phi float [ 0.0, %entry ], [ %s.next, %loop ]
  ret float %res
}
