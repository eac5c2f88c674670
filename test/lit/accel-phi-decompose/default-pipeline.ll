; accel-phi-decompose joins default<O2>/default<O3> at the Peephole extension
; point: right after InstCombine, both in the early simplification and in
; each function's simplification after the inliner, ahead of LICM, the
; second SROA and the loop vectorizer; -llvmaccel-auto=none leaves it out.
; A complex accumulator written as an aggregate phi leaves no aggregate phi
; after default<O3> with the plugin, and its loop vectorizes.

; RUN: opt %loadaccel -passes='default<O3>' -print-pipeline-passes -disable-output %s \
; RUN:   | FileCheck %s --check-prefix=PIPE
; RUN: opt %loadaccel -passes='default<O2>' -print-pipeline-passes -disable-output %s \
; RUN:   | FileCheck %s --check-prefix=PIPE
; RUN: opt %loadaccel -passes='default<O3>' -llvmaccel-auto=none -print-pipeline-passes -disable-output %s \
; RUN:   | FileCheck %s --check-prefix=NONE
; PIPE: instcombine<{{[^>]*}}>,accel-phi-decompose<max-elements=16;vectors;anchors>
; PIPE: cgscc(
; PIPE: instcombine<{{[^>]*}}>,accel-phi-decompose<max-elements=16;vectors;anchors>
; PIPE: licm
; PIPE: loop-vectorize
; NONE-NOT: accel-phi-decompose

; REQUIRES: x86-registered-target
; RUN: opt %loadaccel -passes='default<O3>' -S %s -mtriple=x86_64-unknown-linux-gnu -mattr=+avx2 \
; RUN:   | FileCheck %s --check-prefix=O3
; RUN: opt %loadaccel -passes='default<O3>' -llvmaccel-auto=none -S %s -mtriple=x86_64-unknown-linux-gnu -mattr=+avx2 \
; RUN:   | FileCheck %s --check-prefix=PLAIN
; O3-NOT: phi {
; O3: vector.body:
; O3: fadd reassoc <8 x float>
; O3-NOT: phi {
; PLAIN: phi { float, float }
; PLAIN-NOT: vector.body:

define { float, float } @csum(ptr %a, i64 %n) {
entry:
  br label %loop

loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %loop ]
  %acc = phi { float, float } [ zeroinitializer, %entry ], [ %acc.next, %loop ]
  %p = getelementptr inbounds { float, float }, ptr %a, i64 %i
  %x = load { float, float }, ptr %p, align 4
  %xr = extractvalue { float, float } %x, 0
  %xi = extractvalue { float, float } %x, 1
  %re = extractvalue { float, float } %acc, 0
  %im = extractvalue { float, float } %acc, 1
  %re.next = fadd reassoc float %re, %xr
  %im.next = fadd reassoc float %im, %xi
  %b = insertvalue { float, float } poison, float %re.next, 0
  %acc.next = insertvalue { float, float } %b, float %im.next, 1
  %i.next = add nuw nsw i64 %i, 1
  %done = icmp eq i64 %i.next, %n
  br i1 %done, label %exit, label %loop

exit:
  ret { float, float } %acc.next
}
