; A loop-carried <4 x float> accumulator updated by llvm.fmuladd.v4f32 (the
; register tiles of a matmul built for 128-bit vectors): split lane by lane,
; each lane calls the scalar llvm.fmuladd.f32 with its three arguments only
; (not the callee: once a fourth, vector-of-pointers argument), and the
; module verifies.

; RUN: opt %loadaccel -mtriple=x86_64-unknown-linux-gnu -mcpu=x86-64-v3 \
; RUN:   -passes='accel-phi-decompose' -S %s | FileCheck %s
; RUN: opt %loadaccel -mtriple=x86_64-unknown-linux-gnu -mcpu=x86-64-v3 \
; RUN:   -passes='accel-phi-decompose' -verify-each -disable-output %s

; CHECK-LABEL: define <4 x float> @tile(
; CHECK:       loop:
; CHECK-COUNT-4: call float @llvm.fmuladd.f32(float %{{[^,]+}}, float %{{[^,]+}}, float %{{[^,)]+}})
; CHECK-NOT:   call <4 x float> @llvm.fmuladd.v4f32

define <4 x float> @tile(ptr noalias %a, ptr noalias %b, i64 %n) {
entry:
  br label %loop

loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %loop ]
  %acc = phi <4 x float> [ zeroinitializer, %entry ], [ %acc.next, %loop ]
  %pa = getelementptr inbounds <4 x float>, ptr %a, i64 %i
  %av = load <4 x float>, ptr %pa, align 16
  %pb = getelementptr inbounds <4 x float>, ptr %b, i64 %i
  %bv = load <4 x float>, ptr %pb, align 16
  %acc.next = call <4 x float> @llvm.fmuladd.v4f32(<4 x float> %av, <4 x float> %bv, <4 x float> %acc)
  %i.next = add nuw nsw i64 %i, 1
  %done = icmp eq i64 %i.next, %n
  br i1 %done, label %exit, label %loop

exit:
  %r = phi <4 x float> [ %acc.next, %loop ]
  ret <4 x float> %r
}

declare <4 x float> @llvm.fmuladd.v4f32(<4 x float>, <4 x float>, <4 x float>)
