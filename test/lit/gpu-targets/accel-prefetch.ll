; On GPU targets the latency of a gather is hidden by switching between
; threads, not by prefetching, and SPIR-V has no way to say llvm.prefetch:
; accel-prefetch leaves GPU kernels alone and says why, and the backends
; compile the result.

; RUN: opt %loadaccel -mtriple=nvptx64-nvidia-cuda -passes=accel-prefetch \
; RUN:   -pass-remarks-missed=accel-prefetch -S %s -o %t.nvptx.ll 2>&1 | FileCheck %s --check-prefix=REMARK
; RUN: FileCheck %s --input-file=%t.nvptx.ll
; RUN: llc -mtriple=nvptx64-nvidia-cuda %t.nvptx.ll -o /dev/null
; RUN: opt %loadaccel -mtriple=amdgcn-amd-amdhsa -passes=accel-prefetch \
; RUN:   -pass-remarks-missed=accel-prefetch -S %s -o %t.amdgpu.ll 2>&1 | FileCheck %s --check-prefix=REMARK
; RUN: FileCheck %s --input-file=%t.amdgpu.ll
; RUN: llc -mtriple=amdgcn-amd-amdhsa -mcpu=gfx90a %t.amdgpu.ll -o /dev/null
; RUN: %if spirv-registered-target %{ opt %loadaccel -mtriple=spirv64-unknown-unknown -passes=accel-prefetch -pass-remarks-missed=accel-prefetch -S %s -o %t.spirv.ll 2>&1 | FileCheck %s --check-prefix=REMARK %}
; RUN: %if spirv-registered-target %{ llc -mtriple=spirv64-unknown-unknown %t.spirv.ll -o /dev/null %}
; An explicit cache-line= still asks for prefetches where the backend has them.
; RUN: opt %loadaccel -mtriple=nvptx64-nvidia-cuda -passes='accel-prefetch<cache-line=128>' \
; RUN:   -S %s | FileCheck %s --check-prefix=FORCED

; REMARK: remark: {{.*}} not prefetching on a GPU target: threads hide memory latency
; CHECK-NOT: @llvm.prefetch
; FORCED: call void @llvm.prefetch.p0(

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
