; The cache line size comes from the target: 64 bytes on x86-64 and generic
; AArch64 (a 256-byte row is 4 lines), 256 bytes on A64FX (1 line).
; `cache-line=` overrides the target.

; REQUIRES: x86-registered-target, aarch64-registered-target
; RUN: opt %loadaccel -mtriple=x86_64-unknown-linux-gnu -passes='accel-prefetch<distance=16>' \
; RUN:   -pass-remarks=accel-prefetch -S %s 2>%t.x86 | FileCheck %s --check-prefix=LINES4
; RUN: FileCheck %s --check-prefix=REMARK4 --input-file=%t.x86
; RUN: opt %loadaccel -mtriple=aarch64-unknown-linux-gnu -passes='accel-prefetch<distance=16>' \
; RUN:   -pass-remarks=accel-prefetch -S %s 2>%t.a64 | FileCheck %s --check-prefix=LINES4
; RUN: FileCheck %s --check-prefix=REMARK4 --input-file=%t.a64
; RUN: opt %loadaccel -mtriple=aarch64-unknown-linux-gnu -mcpu=a64fx \
; RUN:   -passes='accel-prefetch<distance=16>' -pass-remarks=accel-prefetch -S %s 2>%t.fx \
; RUN:   | FileCheck %s --check-prefix=LINES1
; RUN: FileCheck %s --check-prefix=REMARK1 --input-file=%t.fx
; RUN: opt %loadaccel -mtriple=aarch64-unknown-linux-gnu -mcpu=a64fx \
; RUN:   -passes='accel-prefetch<distance=16;cache-line=64>' -S %s | FileCheck %s --check-prefix=LINES4

; LINES4-COUNT-4: call void @llvm.prefetch.p0(
; LINES4-NOT:     call void @llvm.prefetch.p0(
; REMARK4: prefetched T[...] via idx, 16 iterations ahead, 4 lines

; LINES1-COUNT-1: call void @llvm.prefetch.p0(
; LINES1-NOT:     call void @llvm.prefetch.p0(
; REMARK1: prefetched T[...] via idx, 16 iterations ahead, 1 line

define void @bag(ptr noalias %T, ptr noalias %idx, i64 %n, ptr noalias %out) {
entry:
  %guard = icmp sgt i64 %n, 0
  br i1 %guard, label %outer.ph, label %exit

outer.ph:
  br label %outer

outer:
  %j = phi i64 [ 0, %outer.ph ], [ %j.next, %outer.latch ]
  %idx.addr = getelementptr inbounds i32, ptr %idx, i64 %j
  %id = load i32, ptr %idx.addr, align 4
  %id.ext = sext i32 %id to i64
  %row = getelementptr inbounds [64 x float], ptr %T, i64 %id.ext
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
  %k.done = icmp eq i64 %k.next, 64
  br i1 %k.done, label %outer.latch, label %inner

outer.latch:
  %j.next = add nuw nsw i64 %j, 1
  %j.done = icmp eq i64 %j.next, %n
  br i1 %j.done, label %exit, label %outer

exit:
  ret void
}
