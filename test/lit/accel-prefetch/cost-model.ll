; How accel-prefetch prices an iteration.
;  - @rows_with_fallback: the distance comes from the cheapest path through
;    the body. The row is summed by straight-line code; a scalar fallback
;    loop (as a runtime alias check leaves behind) is rarely taken and does
;    not make the loop look slow: the distance, latency over the cost of the
;    cheapest path, is 38 iterations.
;  - @row_stream: each iteration reads the whole 256-byte stride, so the
;    accesses form one contiguous stream: no strided prefetch even when the
;    stride passes min-stride.

; RUN: opt %loadaccel -passes='accel-prefetch<min-stride=128>' -pass-remarks=accel-prefetch \
; RUN:   -pass-remarks-missed=accel-prefetch -disable-output %s 2>&1 | FileCheck %s

; CHECK: remark: {{.*}} prefetched T[...] via idx, 38 iterations ahead, 4 lines
; CHECK: remark: {{.*}} not prefetching M: each iteration reads the 256 bytes up to the next one: a contiguous stream the hardware prefetcher covers
; CHECK-NOT: remark: {{.*}} prefetched M

define void @rows_with_fallback(ptr noalias %T, ptr noalias %idx, i64 %n, ptr noalias %out, i1 %overlap) {
entry:
  %guard = icmp sgt i64 %n, 0
  br i1 %guard, label %ph, label %exit

ph:
  br label %loop

loop:
  %j = phi i64 [ 0, %ph ], [ %j.next, %latch ]
  %idx.addr = getelementptr inbounds i64, ptr %idx, i64 %j
  %id = load i64, ptr %idx.addr, align 8
  %off = shl nsw i64 %id, 8
  %row = getelementptr inbounds i8, ptr %T, i64 %off
  br i1 %overlap, label %scalar, label %vector

vector:
  %r1 = getelementptr inbounds i8, ptr %row, i64 64
  %r2 = getelementptr inbounds i8, ptr %row, i64 128
  %r3 = getelementptr inbounds i8, ptr %row, i64 192
  %o1 = getelementptr inbounds i8, ptr %out, i64 64
  %o2 = getelementptr inbounds i8, ptr %out, i64 128
  %o3 = getelementptr inbounds i8, ptr %out, i64 192
  %v0 = load <16 x float>, ptr %row, align 4
  %v1 = load <16 x float>, ptr %r1, align 4
  %v2 = load <16 x float>, ptr %r2, align 4
  %v3 = load <16 x float>, ptr %r3, align 4
  %a0 = load <16 x float>, ptr %out, align 4
  %a1 = load <16 x float>, ptr %o1, align 4
  %a2 = load <16 x float>, ptr %o2, align 4
  %a3 = load <16 x float>, ptr %o3, align 4
  %s0 = fadd <16 x float> %v0, %a0
  %s1 = fadd <16 x float> %v1, %a1
  %s2 = fadd <16 x float> %v2, %a2
  %s3 = fadd <16 x float> %v3, %a3
  store <16 x float> %s0, ptr %out, align 4
  store <16 x float> %s1, ptr %o1, align 4
  store <16 x float> %s2, ptr %o2, align 4
  store <16 x float> %s3, ptr %o3, align 4
  br label %latch

scalar:
  %k = phi i64 [ 0, %loop ], [ %k.next, %scalar ]
  %pr = getelementptr inbounds float, ptr %row, i64 %k
  %po = getelementptr inbounds float, ptr %out, i64 %k
  %x = load float, ptr %pr, align 4
  %y = load float, ptr %po, align 4
  %z = fadd float %x, %y
  store float %z, ptr %po, align 4
  %k.next = add nuw nsw i64 %k, 1
  %k.done = icmp eq i64 %k.next, 64
  br i1 %k.done, label %latch, label %scalar

latch:
  %j.next = add nuw nsw i64 %j, 1
  %done = icmp eq i64 %j.next, %n
  br i1 %done, label %exit, label %loop

exit:
  ret void
}

define float @row_stream(ptr noalias %M, i64 %rows) {
entry:
  %guard = icmp sgt i64 %rows, 0
  br i1 %guard, label %ph, label %exit

ph:
  br label %loop

loop:
  %r = phi i64 [ 0, %ph ], [ %r.next, %loop ]
  %acc = phi <16 x float> [ zeroinitializer, %ph ], [ %acc.next, %loop ]
  %off = shl nuw nsw i64 %r, 8
  %p0 = getelementptr inbounds i8, ptr %M, i64 %off
  %p1 = getelementptr inbounds i8, ptr %p0, i64 64
  %p2 = getelementptr inbounds i8, ptr %p0, i64 128
  %p3 = getelementptr inbounds i8, ptr %p0, i64 192
  %v0 = load <16 x float>, ptr %p0, align 4
  %v1 = load <16 x float>, ptr %p1, align 4
  %v2 = load <16 x float>, ptr %p2, align 4
  %v3 = load <16 x float>, ptr %p3, align 4
  %s01 = fadd <16 x float> %v0, %v1
  %s23 = fadd <16 x float> %v2, %v3
  %s = fadd <16 x float> %s01, %s23
  %acc.next = fadd <16 x float> %acc, %s
  %r.next = add nuw nsw i64 %r, 1
  %done = icmp eq i64 %r.next, %rows
  br i1 %done, label %exit.loop, label %loop

exit.loop:
  %red = call float @llvm.vector.reduce.fadd.v16f32(float 0.0, <16 x float> %acc.next)
  br label %exit

exit:
  %res = phi float [ 0.0, %entry ], [ %red, %exit.loop ]
  ret float %res
}

declare float @llvm.vector.reduce.fadd.v16f32(float, <16 x float>)
