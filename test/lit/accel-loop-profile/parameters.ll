; Parameters: the printed pipeline, the ends of the depth range and each
; parse error; the pass joins no default pipeline.

; RUN: opt %loadaccel -passes=accel-loop-profile -print-pipeline-passes -disable-output %s \
; RUN:   | FileCheck %s --check-prefix=DEFAULT
; DEFAULT: accel-loop-profile<depth=1>
; RUN: opt %loadaccel -passes='accel-loop-profile<depth=16>' -print-pipeline-passes \
; RUN:   -disable-output %s | FileCheck %s --check-prefix=MAX
; MAX: accel-loop-profile<depth=16>

; RUN: not opt %loadaccel -passes='accel-loop-profile<depth=0>' -disable-output %s 2>&1 \
; RUN:   | FileCheck %s --check-prefix=ZERO
; ZERO: LLVMAccel: error: invalid accel-loop-profile pass parameter 'depth=0': depth must be an integer from 1 to 16
; RUN: not opt %loadaccel -passes='accel-loop-profile<depth=17>' -disable-output %s 2>&1 \
; RUN:   | FileCheck %s --check-prefix=TOOBIG
; TOOBIG: LLVMAccel: error: invalid accel-loop-profile pass parameter 'depth=17': depth must be an integer from 1 to 16
; RUN: not opt %loadaccel -passes='accel-loop-profile<depth=x>' -disable-output %s 2>&1 \
; RUN:   | FileCheck %s --check-prefix=NOTINT
; NOTINT: LLVMAccel: error: invalid accel-loop-profile pass parameter 'depth=x': depth must be an integer from 1 to 16
; RUN: not opt %loadaccel -passes='accel-loop-profile<depth=1;depth=2>' -disable-output %s 2>&1 \
; RUN:   | FileCheck %s --check-prefix=TWICE
; TWICE: LLVMAccel: error: invalid accel-loop-profile pass parameter 'depth=2': depth is given twice
; RUN: not opt %loadaccel -passes='accel-loop-profile<bogus>' -disable-output %s 2>&1 \
; RUN:   | FileCheck %s --check-prefix=UNKNOWN
; UNKNOWN: LLVMAccel: error: invalid accel-loop-profile pass parameter 'bogus'{{$}}
; RUN: not opt %loadaccel -passes='accel-loop-profile<>' -disable-output %s 2>&1 \
; RUN:   | FileCheck %s --check-prefix=EMPTY
; EMPTY: LLVMAccel: error: invalid accel-loop-profile pass parameter '': empty parameter

; default<O3> with every llvmaccel pass enabled does not instrument.
; RUN: opt %loadaccel -passes='default<O3>' -llvmaccel-auto=all -S %s | FileCheck %s --check-prefix=O3
; O3-NOT: readcyclecounter

target triple = "x86_64-unknown-linux-gnu"

define void @fill(ptr %p, i64 %n) {
entry:
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %loop ]
  %q = getelementptr inbounds i32, ptr %p, i64 %i
  store i32 7, ptr %q
  %i.next = add nuw i64 %i, 1
  %d = icmp eq i64 %i.next, %n
  br i1 %d, label %exit, label %loop
exit:
  ret void
}
