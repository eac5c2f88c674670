; A gather from x of n elements, as llvmaccel's frontends state their
; buffers: an llvm.assume "dereferenceable" bundle of n * 4 bytes (LLVM 22
; takes bundles of a non-constant size). Clamped, with the stack slot
; standing in for x when n may be 0; for x in another address space (a GPU
; kernel's global memory) no slot can, so that gather is left alone. A
; bundle smaller than n elements proves nothing.

; REQUIRES: llvm-ge-22, x86-registered-target
; RUN: opt %loadaccel -mtriple=x86_64-unknown-linux-gnu -passes=accel-masked-load \
; RUN:   -pass-remarks-missed=accel-masked-load -S %s 2>%t.x86 | FileCheck %s
; RUN: FileCheck %s --check-prefix=REMARK --input-file=%t.x86

; REMARK: remark: {{.*}}guarded gather left alone: x is not known to hold n elements
; REMARK: remark: {{.*}}guarded gather left alone: the object may hold no element and lives in address space 1, where no stack slot can stand in for it
; REMARK-NOT: remark

; CHECK-LABEL: define void @take_fill(
; CHECK:       entry:
; CHECK-NEXT:    %accel.slot = alloca float, align 16
; CHECK:         %accel.base = select i1 %accel.nonempty, ptr %x, ptr %accel.slot
; CHECK:         %accel.clamp = call i32 @llvm.smin.i32(
define void @take_fill(ptr noalias %y, ptr noalias %x, ptr noalias %idx, i32 %n, i64 %m) {
entry:
  %nz = zext i32 %n to i64
  %bytes = mul i64 %nz, 4
  call void @llvm.assume(i1 true) [ "dereferenceable"(ptr %x, i64 %bytes) ]
  br label %loop

loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %latch ]
  %pi = getelementptr inbounds i32, ptr %idx, i64 %i
  %j = load i32, ptr %pi, align 4
  %lo = icmp sge i32 %j, 0
  %hi = icmp slt i32 %j, %n
  %ok = and i1 %lo, %hi
  br i1 %ok, label %then, label %latch

then:
  %jx = sext i32 %j to i64
  %px = getelementptr inbounds float, ptr %x, i64 %jx
  %v = load float, ptr %px, align 4
  br label %latch

latch:
  %r = phi float [ %v, %then ], [ 0.0, %loop ]
  %py = getelementptr inbounds float, ptr %y, i64 %i
  store float %r, ptr %py, align 4
  %i.next = add nuw nsw i64 %i, 1
  %done = icmp eq i64 %i.next, %m
  br i1 %done, label %exit, label %loop

exit:
  ret void
}

; x holds n - 1 elements by its bundle: not enough.
; CHECK-LABEL: define void @take_fill_short(
; CHECK-NOT:     %accel.clamp
; CHECK:       then:
; CHECK-NEXT:    %px = getelementptr inbounds float, ptr %x, i64 %j
; CHECK-NEXT:    %v = load float, ptr %px, align 4
define void @take_fill_short(ptr noalias %y, ptr noalias %x, ptr noalias %idx, i64 %n, i64 %m) {
entry:
  %n1 = add i64 %n, -1
  %bytes = mul i64 %n1, 4
  call void @llvm.assume(i1 true) [ "dereferenceable"(ptr %x, i64 %bytes) ]
  br label %loop

loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %latch ]
  %pi = getelementptr inbounds i64, ptr %idx, i64 %i
  %j = load i64, ptr %pi, align 8
  %in = icmp ult i64 %j, %n
  br i1 %in, label %then, label %latch

then:
  %px = getelementptr inbounds float, ptr %x, i64 %j
  %v = load float, ptr %px, align 4
  br label %latch

latch:
  %r = phi float [ %v, %then ], [ 0.0, %loop ]
  %py = getelementptr inbounds float, ptr %y, i64 %i
  store float %r, ptr %py, align 4
  %i.next = add nuw nsw i64 %i, 1
  %done = icmp eq i64 %i.next, %m
  br i1 %done, label %exit, label %loop

exit:
  ret void
}

; x in address space 1, of n elements, n maybe 0.
; CHECK-LABEL: define void @take_fill_global(
; CHECK-NOT:     %accel.clamp
; CHECK:       then:
; CHECK-NEXT:    %px = getelementptr inbounds float, ptr addrspace(1) %x, i64 %j
define void @take_fill_global(ptr addrspace(1) noalias %y, ptr addrspace(1) noalias %x,
                              ptr addrspace(1) noalias %idx, i64 %n, i64 %m) {
entry:
  %bytes = mul i64 %n, 4
  call void @llvm.assume(i1 true) [ "dereferenceable"(ptr addrspace(1) %x, i64 %bytes) ]
  br label %loop

loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %latch ]
  %pi = getelementptr inbounds i64, ptr addrspace(1) %idx, i64 %i
  %j = load i64, ptr addrspace(1) %pi, align 8
  %in = icmp ult i64 %j, %n
  br i1 %in, label %then, label %latch

then:
  %px = getelementptr inbounds float, ptr addrspace(1) %x, i64 %j
  %v = load float, ptr addrspace(1) %px, align 4
  br label %latch

latch:
  %r = phi float [ %v, %then ], [ 0.0, %loop ]
  %py = getelementptr inbounds float, ptr addrspace(1) %y, i64 %i
  store float %r, ptr addrspace(1) %py, align 4
  %i.next = add nuw nsw i64 %i, 1
  %done = icmp eq i64 %i.next, %m
  br i1 %done, label %exit, label %loop

exit:
  ret void
}

declare void @llvm.assume(i1)
