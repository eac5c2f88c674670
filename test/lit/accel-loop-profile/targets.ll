; The counter each target lets user code read: the time-stamp counter on
; x86-64, the virtual (steady) counter on AArch64; no counter on RISC-V, so
; nothing is timed there and a remark says why.

; RUN: sed 's/TRIPLE/x86_64-unknown-linux-gnu/' %s | opt %loadaccel -passes=accel-loop-profile -S \
; RUN:   | FileCheck %s --check-prefix=X86
; RUN: sed 's/TRIPLE/aarch64-unknown-linux-gnu/' %s | opt %loadaccel -passes=accel-loop-profile -S \
; RUN:   | FileCheck %s --check-prefix=ARM
; RUN: sed 's/TRIPLE/riscv64-unknown-linux-gnu/' %s | opt %loadaccel -passes=accel-loop-profile -S \
; RUN:   -pass-remarks-missed=accel-loop-profile 2>&1 | FileCheck %s --check-prefix=RISCV

; X86: call i64 @llvm.readcyclecounter()
; ARM: call i64 @llvm.readsteadycounter()
; RISCV: not timing loop loop: the target has no counter user code reads
; RISCV-NOT: @llvm.read

target triple = "TRIPLE"

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
