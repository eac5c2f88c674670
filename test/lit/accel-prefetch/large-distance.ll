; The largest distance on a chain whose trip count is an i16. The link is
; looked up 3 * 65536 iterations ahead, more than an i16 (or an unsigned
; DenseMap key, whose ~0u is reserved) can hold: the look-ahead step is
; umin(left, 65535), so every look-ahead load stays within the loop's own
; iterations, and the module verifies. (Once a crash: distance=4294967295
; collided with the reserved key of the per-distance map.)

; RUN: opt %loadaccel -passes='accel-prefetch<distance=65536>' -S %s | FileCheck %s
; RUN: opt %loadaccel -passes='accel-prefetch<distance=65536>' -verify-each \
; RUN:   -disable-output %s

; CHECK-LABEL: define float @chain16(
; The link's look-ahead and the final access's both clamp to the i16 range,
; so they share one look-ahead iteration.
; CHECK:         call i16 @llvm.umin.i16(i16 %accel.left, i16 -1)
; CHECK-NOT:     @llvm.umin
; CHECK:         call void @llvm.prefetch.p0(
; CHECK:         call void @llvm.prefetch.p0(

define float @chain16(ptr noalias %A, ptr noalias %B, ptr noalias %C, i16 %n, float %w) {
entry:
  %guard = icmp sgt i16 %n, 0
  br i1 %guard, label %loop, label %exit

loop:
  %i = phi i16 [ 0, %entry ], [ %i.next, %loop ]
  %s = phi float [ 0.0, %entry ], [ %s.next, %loop ]
  %i.ext = zext i16 %i to i64
  %c.addr = getelementptr inbounds i32, ptr %C, i64 %i.ext
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
  %i.next = add nuw nsw i16 %i, 1
  %done = icmp eq i16 %i.next, %n
  br i1 %done, label %exit, label %loop

exit:
  %res = phi float [ 0.0, %entry ], [ %s.next, %loop ]
  ret float %res
}
