; Regression (fuzz campaign 2026-12-05, llvm-stress seed 2401244945, reduced
; by llvm-reduce): two guard checks SCEV proves at their position, where one
; compares the other (%outer = icmp slt i1 %inner, false). Replacing %inner
; by its value folded %outer away with it; replacing %outer next used the
; erased instruction (a crash in replaceAndFold). The pass must run and leave
; valid IR, with both checks gone (and with them the blocks they guarded).
; RUN: opt %loadaccel -passes='accel-masked-load,verify' -S %s | FileCheck %s

; CHECK-LABEL: define void @compare_of_compares(
; CHECK-NOT:     icmp
; CHECK:       outer.loop:
; CHECK-NEXT:    br label %outer.loop
; CHECK-NEXT:  }
define void @compare_of_compares(i32 %s) {
entry:
  br label %outer.loop

outer.loop:
  br i1 true, label %outer.loop, label %inner.loop

inner.loop:
  %zero = shl i32 0, %s
  %inner = icmp ugt i32 0, %zero
  br i1 %inner, label %inner.loop, label %test

test:
  %outer = icmp slt i1 %inner, false
  br i1 %outer, label %outer.loop, label %use

use:
  %p = select i1 %inner, ptr null, ptr null
  %v = load i32, ptr %p, align 4
  br label %outer.loop
}
