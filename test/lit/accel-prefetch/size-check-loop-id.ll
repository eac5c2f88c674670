; The copy the size check makes for small objects keeps its loop's
; properties under a loop ID of its own: a loop ID names one loop, and a
; later pass that marks one of the two (`llvm.loop.isvectorized`, an unroll
; count) must not mark the other.

; RUN: opt %loadaccel -passes='accel-prefetch<min-work=16;distance=8>' -S %s | FileCheck %s

; CHECK-LABEL: define i64 @hist_memset(
; CHECK:       loop.noprefetch:
; CHECK:         br i1 %done.noprefetch, label %{{.*}}, label %loop.noprefetch, !llvm.loop ![[COPY:[0-9]+]]
; CHECK:       loop:
; CHECK:         br i1 %done, label %{{.*}}, label %loop, !llvm.loop ![[ID:[0-9]+]]
; CHECK-DAG:   ![[ID]] = distinct !{![[ID]], ![[MP:[0-9]+]]}
; CHECK-DAG:   ![[COPY]] = distinct !{![[COPY]], ![[MP]]}
; CHECK-DAG:   ![[MP]] = !{!"llvm.loop.mustprogress"}

define i64 @hist_memset(ptr noalias %keys, i64 %n, ptr noalias %count, i64 %nb) {
entry:
  %bytes = shl i64 %nb, 2
  call void @llvm.memset.p0.i64(ptr %count, i8 0, i64 %bytes, i1 false)
  %guard = icmp sgt i64 %n, 0
  br i1 %guard, label %loop, label %exit

loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %loop ]
  %k.addr = getelementptr inbounds i32, ptr %keys, i64 %i
  %k = load i32, ptr %k.addr, align 4
  %idx = zext i32 %k to i64
  %c.addr = getelementptr inbounds i32, ptr %count, i64 %idx
  %c = load i32, ptr %c.addr, align 4
  %c1 = add i32 %c, 1
  store i32 %c1, ptr %c.addr, align 4
  %i.next = add nuw nsw i64 %i, 1
  %done = icmp eq i64 %i.next, %n
  br i1 %done, label %exit, label %loop, !llvm.loop !0

exit:
  %r = phi i64 [ 0, %entry ], [ %i.next, %loop ]
  ret i64 %r
}

declare void @llvm.memset.p0.i64(ptr, i8, i64, i1)

!0 = distinct !{!0, !1}
!1 = !{!"llvm.loop.mustprogress"}
