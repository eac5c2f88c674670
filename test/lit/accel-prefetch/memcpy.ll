; Row copies that LLVM's loop idiom recognition turned into memcpy calls, as
; in a gather `out[i, :] = T[idx[i], :]` (JAX's `take` in its default `fill`
; mode copies a row only when the index is in range): the source of each
; copy is an access of the copy's length, prefetched through the index like
; a load; the copy may be conditional (a prefetch never faults, and the
; look-ahead index load is one the loop makes on every iteration).

; (The work threshold of the cost model, tested in cost-model.ll, is off.)
; RUN: opt %loadaccel -passes='accel-prefetch<distance=8;min-work=0>' \
; RUN:   -S %s | FileCheck %s
; RUN: opt %loadaccel -passes='accel-prefetch<distance=8;min-work=0>' \
; RUN:   -pass-remarks=accel-prefetch \
; RUN:   -pass-remarks-missed=accel-prefetch -disable-output %s 2>&1 \
; RUN:   | FileCheck %s --check-prefix=REMARK

; CHECK-LABEL: define void @gather_rows(
; CHECK:       loop:
; CHECK:         %id.ahead = load i32, ptr
; CHECK-COUNT-4: call void @llvm.prefetch.p0(ptr %{{.*}}, i32 0, i32 3, i32 1)
; CHECK-NOT:     call void @llvm.prefetch.p0(
; CHECK:       copy:
; CHECK:         call void @llvm.memcpy.p0.p0.i64(ptr align 4 %dst, ptr align 4 %row.src, i64 256, i1 false)
; REMARK: remark: {{.*}} prefetched T[...] via idx, 8 iterations ahead, 4 lines

define void @gather_rows(ptr noalias %T, ptr noalias %idx, ptr noalias %out, i64 %n) {
entry:
  br label %loop

loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %latch ]
  %id.addr = getelementptr inbounds i32, ptr %idx, i64 %i
  %id = load i32, ptr %id.addr, align 4
  %dst.off = shl nuw nsw i64 %i, 8
  %dst = getelementptr i8, ptr %out, i64 %dst.off
  %ok = icmp ult i32 %id, 1048576
  br i1 %ok, label %copy, label %fill

copy:
  %row = zext nneg i32 %id to i64
  %row.off = shl nuw nsw i64 %row, 8
  %row.src = getelementptr i8, ptr %T, i64 %row.off
  call void @llvm.memcpy.p0.p0.i64(ptr align 4 %dst, ptr align 4 %row.src, i64 256, i1 false)
  br label %latch

fill:
  call void @llvm.memset.p0.i64(ptr align 4 %dst, i8 -1, i64 256, i1 false)
  br label %latch

latch:
  %i.next = add nuw nsw i64 %i, 1
  %done = icmp eq i64 %i.next, %n
  br i1 %done, label %exit, label %loop

exit:
  ret void
}

; A volatile copy is left alone, with a remark.
; CHECK-LABEL: define void @volatile_copy(
; CHECK-NOT:     call void @llvm.prefetch.p0(
; CHECK:         ret void
; REMARK: remark: {{.*}} volatile and atomic accesses are not prefetched

define void @volatile_copy(ptr noalias %T, ptr noalias %idx, ptr noalias %out, i64 %n) {
entry:
  br label %loop

loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %loop ]
  %id.addr = getelementptr inbounds i64, ptr %idx, i64 %i
  %id = load i64, ptr %id.addr, align 8
  %dst.off = shl nuw nsw i64 %i, 8
  %dst = getelementptr i8, ptr %out, i64 %dst.off
  %row.off = shl nuw nsw i64 %id, 8
  %row.src = getelementptr i8, ptr %T, i64 %row.off
  call void @llvm.memcpy.p0.p0.i64(ptr align 4 %dst, ptr align 4 %row.src, i64 256, i1 true)
  %i.next = add nuw nsw i64 %i, 1
  %done = icmp eq i64 %i.next, %n
  br i1 %done, label %exit, label %loop

exit:
  ret void
}

declare void @llvm.memcpy.p0.p0.i64(ptr, ptr, i64, i1)
declare void @llvm.memset.p0.i64(ptr, i8, i64, i1)
