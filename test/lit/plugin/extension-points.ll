; The default O2/O3 pipelines run accel-prefetch at the OptimizerLast
; extension point; O1, Os, Oz and O0 do not, and -llvmaccel-auto (or LLVMACCEL_AUTO)
; chooses which passes join. (LLVM 23 has no default<Os>/<Oz>: size is the
; optsize/minsize function attributes there.)
; RUN: opt %loadaccel -passes='default<O2>' -debug-pass-manager -disable-output %s 2>&1 | FileCheck %s --check-prefix=ON
; RUN: opt %loadaccel -passes='default<O3>' -debug-pass-manager -disable-output %s 2>&1 | FileCheck %s --check-prefix=ON
; RUN: opt %loadaccel -passes='default<O1>' -debug-pass-manager -disable-output %s 2>&1 | FileCheck %s --check-prefix=OFF
; RUN: %if !llvm-ge-23 %{ opt %loadaccel -passes='default<Os>' -debug-pass-manager -disable-output %s 2>&1 | FileCheck %s --check-prefix=OFF %}
; RUN: %if !llvm-ge-23 %{ opt %loadaccel -passes='default<Oz>' -debug-pass-manager -disable-output %s 2>&1 | FileCheck %s --check-prefix=OFF %}
; RUN: opt %loadaccel -passes='default<O3>' -llvmaccel-auto=none -debug-pass-manager -disable-output %s 2>&1 | FileCheck %s --check-prefix=OFF
; RUN: opt %loadaccel -passes='default<O3>' -llvmaccel-auto=accel-prefetch -debug-pass-manager -disable-output %s 2>&1 | FileCheck %s --check-prefix=ON
; RUN: env LLVMACCEL_AUTO=none opt %loadaccel -passes='default<O3>' -debug-pass-manager -disable-output %s 2>&1 | FileCheck %s --check-prefix=OFF
; The option wins over the environment.
; RUN: env LLVMACCEL_AUTO=none opt %loadaccel -passes='default<O3>' -llvmaccel-auto=all -debug-pass-manager -disable-output %s 2>&1 | FileCheck %s --check-prefix=ON
; An unknown name is an error, from the option or the environment.
; RUN: not opt %loadaccel -passes='default<O3>' -llvmaccel-auto=accel-prefetch,bogus -disable-output %s 2>&1 | FileCheck %s --check-prefix=UNKNOWN
; RUN: env LLVMACCEL_AUTO=bogus not opt %loadaccel -passes='default<O3>' -disable-output %s 2>&1 | FileCheck %s --check-prefix=UNKNOWN

; ON: Running pass: LoopVectorizePass on f
; ON: Running pass: AccelPrefetchPass on f
; OFF-NOT: AccelPrefetchPass
; UNKNOWN: LLVMAccel: error: -llvmaccel-auto names unknown pass 'bogus' (known: all, none, accel-prefetch

define void @f(ptr %p, i64 %n) {
entry:
  br label %loop

loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %loop ]
  %a = getelementptr inbounds float, ptr %p, i64 %i
  store float 0.0, ptr %a
  %i.next = add nuw i64 %i, 1
  %done = icmp eq i64 %i.next, %n
  br i1 %done, label %exit, label %loop

exit:
  ret void
}
