; A one-level indirect access T[B[i]] with enough floating-point work per
; iteration: the index B[i] is loaded again `distance` iterations ahead,
; clamped to the last iteration (n - 1), and T[B[i + d]] is prefetched.

; RUN: opt %loadaccel -passes='accel-prefetch<distance=16>' -S %s | FileCheck %s
; RUN: opt %loadaccel -passes=accel-prefetch -pass-remarks=accel-prefetch \
; RUN:   -disable-output %s 2>&1 | FileCheck %s --check-prefix=AUTO
; RUN: opt %loadaccel -passes='accel-prefetch<latency=1>' -pass-remarks=accel-prefetch \
; RUN:   -disable-output %s 2>&1 | FileCheck %s --check-prefix=LATENCY-MIN
; RUN: opt %loadaccel -passes='accel-prefetch<latency=100000>' -pass-remarks=accel-prefetch \
; RUN:   -disable-output %s 2>&1 | FileCheck %s --check-prefix=IN-FLIGHT
; RUN: opt %loadaccel -passes='accel-prefetch<latency=100000;in-flight=1024>' -pass-remarks=accel-prefetch \
; RUN:   -disable-output %s 2>&1 \
; RUN:   | FileCheck %s --check-prefix=LATENCY-MAX
; RUN: opt %loadaccel -passes='accel-prefetch<no-indirect>' -S %s | FileCheck %s --check-prefix=OFF

; CHECK-LABEL: define float @poly_gather(
; CHECK:       ph:
; CHECK:         %[[BTC:.*]] = add {{.*}}i64 %n, -1
; CHECK:       loop:
; CHECK:         %i = phi i64
; CHECK:         %accel.left = sub nuw i64 %[[BTC]], %i
; CHECK-NEXT:    %accel.step = call i64 @llvm.umin.i64(i64 %accel.left, i64 16)
; CHECK-NEXT:    %accel.iter = add nuw i64 %i, %accel.step
; CHECK:         %[[BA:.*]] = getelementptr i8, ptr %B, i64
; CHECK-NEXT:    %b.ahead = load i32, ptr %[[BA]], align 4
; CHECK-NEXT:    %[[E:.*]] = sext i32 %b.ahead to i64
; CHECK:         %[[TA:.*]] = getelementptr i8, ptr %T, i64
; CHECK-NEXT:    call void @llvm.prefetch.p0(ptr %[[TA]], i32 0, i32 3, i32 1)
; CHECK-NOT:     @llvm.prefetch
; CHECK:         %b.addr = getelementptr inbounds i32, ptr %B, i64 %i
; CHECK:         %b = load i32, ptr %b.addr

; The distance follows from the latency (300 cycles by default) and the cost
; of an iteration, keeps at most 64 accesses in flight (a generic CPU's
; figure; see in-flight.ll), and stays within [4, 256].
; AUTO: remark: {{.*}} prefetched T[...] via B, {{[0-9]+}} iterations ahead, 1 line
; LATENCY-MIN: remark: {{.*}} prefetched T[...] via B, 4 iterations ahead, 1 line
; IN-FLIGHT: remark: {{.*}} prefetched T[...] via B, 64 iterations ahead, 1 line
; LATENCY-MAX: remark: {{.*}} prefetched T[...] via B, 256 iterations ahead, 1 line

; OFF-NOT: @llvm.prefetch

define float @poly_gather(ptr noalias %T, ptr noalias %B, i64 %n, float %w) {
entry:
  %guard = icmp sgt i64 %n, 0
  br i1 %guard, label %ph, label %exit

ph:
  br label %loop

loop:
  %i = phi i64 [ 0, %ph ], [ %i.next, %loop ]
  %s = phi float [ 0.0, %ph ], [ %s.next, %loop ]
  %b.addr = getelementptr inbounds i32, ptr %B, i64 %i
  %b = load i32, ptr %b.addr, align 4
  %b.ext = sext i32 %b to i64
  %t.addr = getelementptr inbounds float, ptr %T, i64 %b.ext
  %t = load float, ptr %t.addr, align 4
  %x = fmul float %t, %w
  %x2 = fmul float %x, %x
  %x3 = fmul float %x2, %x
  %a = fmul float %x2, 3.0
  %c = fmul float %x, 2.0
  %p1 = fadd float %x3, %a
  %p2 = fadd float %p1, %c
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
