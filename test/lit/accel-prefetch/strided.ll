; Affine accesses: a column walk of a row-major 1024-float matrix (stride
; 4096 bytes, which the hardware prefetcher misses) is prefetched `distance`
; iterations ahead; a unit-stride walk is left to the hardware. Stores are
; prefetched (with write intent) only under `writes`.

; RUN: opt %loadaccel -passes='accel-prefetch<distance=8>' -S %s | FileCheck %s
; RUN: opt %loadaccel -passes='accel-prefetch<distance=8;writes>' -S %s \
; RUN:   | FileCheck %s --check-prefix=WRITES
; RUN: opt %loadaccel -passes='accel-prefetch<distance=8;min-stride=8192>' -S %s \
; RUN:   | FileCheck %s --check-prefix=MINSTRIDE
; RUN: opt %loadaccel -passes='accel-prefetch<distance=8;no-strided>' -S %s \
; RUN:   | FileCheck %s --check-prefix=MINSTRIDE
; RUN: opt %loadaccel -passes='accel-prefetch<distance=8;writes>' -pass-remarks=accel-prefetch \
; RUN:   -pass-remarks-missed=accel-prefetch -disable-output %s 2>&1 | FileCheck %s --check-prefix=REMARK

; M + i * 4096 + c * 4 + 8 * 4096: the invariant part goes to the preheader.
; CHECK-LABEL: define void @column(
; CHECK:       ph:
; CHECK-NEXT:    %[[C:.*]] = shl nsw i64 %c, 2
; CHECK-NEXT:    %[[OFF:.*]] = add i64 %[[C]], 32768
; CHECK:       loop:
; CHECK:         %[[I:.*]] = shl i64 %i, 12
; CHECK-NEXT:    %[[A:.*]] = add i64 %[[OFF]], %[[I]]
; CHECK-NEXT:    %[[P:.*]] = getelementptr i8, ptr %M, i64 %[[A]]
; CHECK-NEXT:    call void @llvm.prefetch.p0(ptr %[[P]], i32 0, i32 3, i32 1)
; CHECK-NOT:     @llvm.prefetch
; CHECK:         ret void

; WRITES-LABEL: define void @column(
; WRITES:         call void @llvm.prefetch.p0(ptr %{{.*}}, i32 0, i32 3, i32 1)
; WRITES:         call void @llvm.prefetch.p0(ptr %{{.*}}, i32 1, i32 3, i32 1)
; WRITES-NOT:     @llvm.prefetch
; WRITES:         ret void

; MINSTRIDE-NOT: call void @llvm.prefetch

; REMARK-DAG: remark: {{.*}} prefetched M with stride 4096 bytes, 8 iterations ahead, 1 line
; REMARK-DAG: remark: {{.*}} prefetched D with stride 4096 bytes, 8 iterations ahead, 1 line (for writing)
; REMARK-DAG: remark: {{.*}} not prefetching V: stride of 4 bytes is covered by the hardware prefetcher

; D[i][c] = M[i][c] * V[i]
define void @column(ptr noalias %M, ptr noalias %V, ptr noalias %D, i64 %c, i64 %n) {
entry:
  %guard = icmp sgt i64 %n, 0
  br i1 %guard, label %ph, label %exit

ph:
  br label %loop

loop:
  %i = phi i64 [ 0, %ph ], [ %i.next, %loop ]
  %m.addr = getelementptr inbounds [1024 x float], ptr %M, i64 %i, i64 %c
  %m = load float, ptr %m.addr, align 4
  %v.addr = getelementptr inbounds float, ptr %V, i64 %i
  %v = load float, ptr %v.addr, align 4
  %p = fmul float %m, %v
  %d.addr = getelementptr inbounds [1024 x float], ptr %D, i64 %i, i64 %c
  store float %p, ptr %d.addr, align 4
  %i.next = add nuw nsw i64 %i, 1
  %done = icmp eq i64 %i.next, %n
  br i1 %done, label %exit, label %loop

exit:
  ret void
}
