; Embedding bags whose row width is an argument (%dim floats): the inner
; loop's trip count is known only at run time, but it is the same for every
; row, so the row T + idx[j] * dim * 4 spans dim * 4 bytes. The outer loop
; prefetches up to max-lines lines of the row idx[j + d]: the first always,
; each later one only when the row reaches it (conditions computed in the
; preheader, nested so that a row stops one branch past its last line).
; Without the span only the access's own 4 bytes (one line) were prefetched.

; RUN: opt %loadaccel -passes='accel-prefetch<distance=16>,verify' -S %s | FileCheck %s
; RUN: opt %loadaccel -passes='accel-prefetch<distance=16;max-lines=2>' -S %s \
; RUN:   | FileCheck %s --check-prefix=MAX2
; RUN: opt %loadaccel -passes=accel-prefetch -pass-remarks=accel-prefetch \
; RUN:   -disable-output %s 2>&1 | FileCheck %s --check-prefix=REMARK

; CHECK-LABEL: define void @bag(
; CHECK:       outer.ph:
; CHECK:         %[[END:.*]] = shl i64 %dim, 2
; CHECK:         %[[R64:.*]] = icmp sgt i64 %[[END]], 64
; CHECK:         %[[R128:.*]] = icmp sgt i64 %[[END]], 128
; CHECK:       outer:
; CHECK:         %id.ahead = load i32, ptr
; CHECK:         %[[ROW:.*]] = getelementptr i8, ptr %T, i64
; CHECK-NEXT:    call void @llvm.prefetch.p0(ptr %[[ROW]], i32 0, i32 3, i32 1)
; CHECK-NEXT:    br i1 %[[R64]], label %[[THEN1:.*]], label %[[TAIL:.*]]
; CHECK:       [[THEN1]]:
; CHECK-NEXT:    %[[L1:.*]] = getelementptr i8, ptr %[[ROW]], i64 64
; CHECK-NEXT:    call void @llvm.prefetch.p0(ptr %[[L1]], i32 0, i32 3, i32 1)
; CHECK-NEXT:    br i1 %[[R128]], label %[[THEN2:.*]], label
; CHECK:       [[THEN2]]:
; CHECK-NEXT:    %[[L2:.*]] = getelementptr i8, ptr %[[ROW]], i64 128
; CHECK-NEXT:    call void @llvm.prefetch.p0(ptr %[[L2]], i32 0, i32 3, i32 1)
; CHECK-COUNT-5: call void @llvm.prefetch.p0(
; CHECK-NOT:     call void @llvm.prefetch
; CHECK:       inner:
; CHECK-NOT:     @llvm.prefetch
; CHECK:         ret void

; MAX2-LABEL: define void @bag(
; MAX2-COUNT-2: call void @llvm.prefetch
; MAX2-NOT:     call void @llvm.prefetch
; MAX2:         ret void

; REMARK: remark: {{.*}} prefetched T[...] via idx, {{[0-9]+}} iterations ahead, 8 lines at most (a row of run-time length)

define void @bag(ptr noalias %T, ptr noalias %idx, i64 %n, i64 %dim,
                 ptr noalias %out) {
entry:
  %guard = icmp sgt i64 %n, 0
  %wide = icmp sgt i64 %dim, 0
  %both = and i1 %guard, %wide
  br i1 %both, label %outer.ph, label %exit

outer.ph:
  br label %outer

outer:
  %j = phi i64 [ 0, %outer.ph ], [ %j.next, %outer.latch ]
  %idx.addr = getelementptr inbounds i32, ptr %idx, i64 %j
  %id = load i32, ptr %idx.addr, align 4
  %id.ext = sext i32 %id to i64
  %row.off = mul nsw i64 %id.ext, %dim
  %row = getelementptr inbounds float, ptr %T, i64 %row.off
  br label %inner

inner:
  %k = phi i64 [ 0, %outer ], [ %k.next, %inner ]
  %x.addr = getelementptr inbounds float, ptr %row, i64 %k
  %x = load float, ptr %x.addr, align 4
  %o.addr = getelementptr inbounds float, ptr %out, i64 %k
  %o = load float, ptr %o.addr, align 4
  %sum = fadd float %o, %x
  store float %sum, ptr %o.addr, align 4
  %k.next = add nuw nsw i64 %k, 1
  %k.done = icmp eq i64 %k.next, %dim
  br i1 %k.done, label %outer.latch, label %inner

outer.latch:
  %j.next = add nuw nsw i64 %j, 1
  %j.done = icmp eq i64 %j.next, %n
  br i1 %j.done, label %exit, label %outer

exit:
  ret void
}
