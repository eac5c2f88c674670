; accel-masked-load on GPU targets (NVPTX, AMDGPU, SPIR-V): no masked gathers, so guarded gathers
; of an x known to hold n elements are clamped (a select-free unconditional
; load, no divergent branch around it) in the kernel's global address space.
; Without a proof of x's extent the gather is left alone (and without one
; that n > 0, extent-bundle.ll: the stack slot that stands in for an empty x
; cannot live in the global address space). Splitting works as on CPUs.

; RUN: %if nvptx-registered-target %{ opt %loadaccel -mtriple=nvptx64-nvidia-cuda \
; RUN:   -passes=accel-masked-load -pass-remarks='accel-masked-load' \
; RUN:   -pass-remarks-missed=accel-masked-load -S %s 2>%t.nvptx | FileCheck %s %}
; RUN: %if nvptx-registered-target %{ FileCheck %s --check-prefix=REMARK --input-file=%t.nvptx %}
; RUN: %if amdgpu-registered-target %{ opt %loadaccel -mtriple=amdgcn-amd-amdhsa -mcpu=gfx90a \
; RUN:   -passes=accel-masked-load -pass-remarks='accel-masked-load' \
; RUN:   -pass-remarks-missed=accel-masked-load -S %s 2>%t.amdgpu | FileCheck %s %}
; RUN: %if amdgpu-registered-target %{ FileCheck %s --check-prefix=REMARK --input-file=%t.amdgpu %}
; RUN: %if spirv-registered-target %{ opt %loadaccel -mtriple=spirv64-unknown-unknown \
; RUN:   -passes=accel-masked-load -pass-remarks='accel-masked-load' \
; RUN:   -pass-remarks-missed=accel-masked-load -S %s 2>%t.spirv | FileCheck %s %}
; RUN: %if spirv-registered-target %{ FileCheck %s --check-prefix=REMARK --input-file=%t.spirv %}

; REMARK: remark: {{.*}}guarded gather made unconditional: loads x[clamp(j, 0, n-1)] and keeps the default when the check fails{{$}}
; REMARK: remark: {{.*}}guarded gather left alone: x is not known to hold n elements, so x[clamp(j, 0, n-1)] could read past it
; REMARK: remark: {{.*}}loop split into 3 loops; the main loop runs without the range checks j sge 0, j slt n

; n > 0 at the loop entry: the clamped load stays in address space 1.
; CHECK-LABEL: define void @take_fill(
; CHECK-NOT:     alloca
; CHECK:         %accel.clamp = call i32 @llvm.smin.i32(
; CHECK:         %accel.addr = getelementptr inbounds float, ptr addrspace(1) %x, i64
; CHECK-NEXT:    %accel.load = load float, ptr addrspace(1) %accel.addr, align 4
define void @take_fill(ptr addrspace(1) noalias %y, ptr addrspace(1) noalias dereferenceable(4096) %x,
                       ptr addrspace(1) noalias %idx, i32 %n, i64 %m) {
entry:
  %fits = icmp sle i32 %n, 1024
  call void @llvm.assume(i1 %fits)
  %nonempty = icmp sgt i32 %n, 0
  br i1 %nonempty, label %loop, label %exit

loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %latch ]
  %pi = getelementptr inbounds i32, ptr addrspace(1) %idx, i64 %i
  %j = load i32, ptr addrspace(1) %pi, align 4
  %lo = icmp sge i32 %j, 0
  %hi = icmp slt i32 %j, %n
  %ok = and i1 %lo, %hi
  br i1 %ok, label %then, label %latch

then:
  %jx = sext i32 %j to i64
  %px = getelementptr inbounds float, ptr addrspace(1) %x, i64 %jx
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

; Nothing says x holds n elements: left alone.
; CHECK-LABEL: define void @take_fill_no_extent(
; CHECK:       then:
; CHECK-NEXT:    %px = getelementptr inbounds float, ptr addrspace(1) %x, i64 %j
; CHECK-NEXT:    %v = load float, ptr addrspace(1) %px, align 4
define void @take_fill_no_extent(ptr addrspace(1) noalias %y, ptr addrspace(1) noalias %x,
                                 ptr addrspace(1) noalias %idx, i64 %n, i64 %m) {
entry:
  %nonempty = icmp sgt i64 %n, 0
  br i1 %nonempty, label %loop, label %exit

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

; A thread's row of a padded 1-D convolution: split as on CPUs.
; CHECK-LABEL: define void @pad_row(
; CHECK:       loop.main:
; CHECK-NOT:     icmp s{{.*}} %j.main
; CHECK:       loop.post:
define void @pad_row(ptr addrspace(1) noalias %y, ptr addrspace(1) noalias %x, i64 %n, i64 %m) {
entry:
  br label %loop

loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %latch ]
  %j = add nsw i64 %i, -1
  %lo = icmp sge i64 %j, 0
  %hi = icmp slt i64 %j, %n
  %ok = and i1 %lo, %hi
  br i1 %ok, label %then, label %latch

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
