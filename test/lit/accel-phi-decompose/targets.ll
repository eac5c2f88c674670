; The same kernel for x86-64, AArch64, NVPTX and AMDGPU: the complex
; accumulator is split on every target (no target keeps an aggregate in a
; register), the loop-carried <2 x float> only where the target's vector
; registers (as TTI gives them: 256 or 128 bits on the CPUs, 32 on NVPTX, 64 on AMDGPU) are wider than 64 bits; each backend compiles the result.

; RUN: %if x86-registered-target %{ opt %loadaccel -mtriple=x86_64-unknown-linux-gnu -passes=accel-phi-decompose \
; RUN:   -pass-remarks-missed=accel-phi-decompose -S %s -o %t.x86.ll 2>%t.x86.txt %}
; RUN: %if x86-registered-target %{ FileCheck %s --check-prefixes=CHECK,SPLITV < %t.x86.ll %}
; RUN: %if x86-registered-target %{ llc -mtriple=x86_64-unknown-linux-gnu %t.x86.ll -o /dev/null %}
; RUN: %if aarch64-registered-target %{ opt %loadaccel -mtriple=aarch64-unknown-linux-gnu -passes=accel-phi-decompose \
; RUN:   -S %s -o %t.a64.ll %}
; RUN: %if aarch64-registered-target %{ FileCheck %s --check-prefixes=CHECK,SPLITV < %t.a64.ll %}
; RUN: %if aarch64-registered-target %{ llc -mtriple=aarch64-unknown-linux-gnu %t.a64.ll -o /dev/null %}
; RUN: %if nvptx-registered-target %{ opt %loadaccel -mtriple=nvptx64-nvidia-cuda -passes=accel-phi-decompose \
; RUN:   -pass-remarks-missed=accel-phi-decompose -S %s -o %t.nvptx.ll 2>%t.nvptx.txt %}
; RUN: %if nvptx-registered-target %{ FileCheck %s --check-prefixes=CHECK,KEEPV < %t.nvptx.ll %}
; RUN: %if nvptx-registered-target %{ FileCheck %s --check-prefix=GPU-MISSED < %t.nvptx.txt %}
; RUN: %if nvptx-registered-target %{ llc -mtriple=nvptx64-nvidia-cuda %t.nvptx.ll -o /dev/null %}
; RUN: %if amdgpu-registered-target %{ opt %loadaccel -mtriple=amdgcn-amd-amdhsa -mcpu=gfx90a -passes=accel-phi-decompose -pass-remarks-missed=accel-phi-decompose \
; RUN:   -S %s -o %t.amdgpu.ll 2>%t.amdgpu.txt %}
; RUN: %if amdgpu-registered-target %{ FileCheck %s --check-prefix=GPU-MISSED < %t.amdgpu.txt %}
; RUN: %if amdgpu-registered-target %{ FileCheck %s --check-prefixes=CHECK,KEEPV < %t.amdgpu.ll %}
; RUN: %if amdgpu-registered-target %{ llc -mtriple=amdgcn-amd-amdhsa -mcpu=gfx90a %t.amdgpu.ll -o /dev/null %}

; GPU-MISSED: remark: {{.*}} phi of <2 x float> (64 bits) already fills the target's {{[0-9]+}}-bit vector registers

define void @kernel(ptr %out, ptr %a, i64 %n) {
; CHECK-LABEL: @kernel(
; CHECK:       loop:
; CHECK-NOT:     phi {
; CHECK:         %z.0 = phi float
; CHECK-NEXT:    %z.1 = phi float
; SPLITV-NEXT:   %v.0 = phi float
; SPLITV-NEXT:   %v.1 = phi float
; KEEPV-NEXT:    %v = phi <2 x float>
; CHECK-NOT:     phi {
entry:
  br label %loop

loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %loop ]
  %z = phi { float, float } [ zeroinitializer, %entry ], [ %z.next, %loop ]
  %v = phi <2 x float> [ zeroinitializer, %entry ], [ %v.next, %loop ]
  %p = getelementptr inbounds { float, float }, ptr %a, i64 %i
  %x = load { float, float }, ptr %p, align 4
  %xr = extractvalue { float, float } %x, 0
  %xi = extractvalue { float, float } %x, 1
  %zr = extractvalue { float, float } %z, 0
  %zi = extractvalue { float, float } %z, 1
  %zr.n = fadd float %zr, %xr
  %zi.n = fadd float %zi, %xi
  %z.b = insertvalue { float, float } poison, float %zr.n, 0
  %z.next = insertvalue { float, float } %z.b, float %zi.n, 1
  %xv0 = insertelement <2 x float> poison, float %xr, i64 0
  %xv = insertelement <2 x float> %xv0, float %xi, i64 1
  %v.next = fmul <2 x float> %v, %xv
  %i.next = add nuw nsw i64 %i, 1
  %done = icmp eq i64 %i.next, %n
  br i1 %done, label %exit, label %loop

exit:
  %z.lcssa = phi { float, float } [ %z.next, %loop ]
  %v.lcssa = phi <2 x float> [ %v.next, %loop ]
  store { float, float } %z.lcssa, ptr %out, align 4
  %vp = getelementptr inbounds i8, ptr %out, i64 8
  store <2 x float> %v.lcssa, ptr %vp, align 8
  ret void
}
