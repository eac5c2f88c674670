; Static shape anchors. A phi of sizes whose incoming values are equal (the
; same value, or equal by a dominating llvm.assume) is folded; where every
; incoming value of a size is a multiple of 2^k, or lies in a range, that the
; merged value is not known to be, the fact is stated once as llvm.assume
; where the paths converge -- only where that adds no undefined behaviour (the
; size is known not to be poison or undef, or a branch depends on it anyway).
; With the divisibility stated, the vectorized loop
; of @scale needs no remainder: default<O3> drops the middle block, the
; epilogue vector loop and the scalar remainder loop.

; RUN: opt %loadaccel -passes=accel-phi-decompose -S %s | FileCheck %s
; RUN: opt %loadaccel -passes=accel-phi-decompose -disable-output %s \
; RUN:   -pass-remarks=accel-phi-decompose -pass-remarks-missed=accel-phi-decompose 2>&1 \
; RUN:   | FileCheck %s --check-prefix=REMARK
; RUN: opt %loadaccel -passes='accel-phi-decompose<no-anchors>' -S %s | FileCheck %s --check-prefix=OFF
; Idempotent: a second run adds nothing.
; RUN: opt %loadaccel -passes=accel-phi-decompose -S < %s > %t.once.ll
; RUN: opt %loadaccel -passes=accel-phi-decompose -S < %t.once.ll > %t.twice.ll
; RUN: diff %t.once.ll %t.twice.ll

; The remainder loop, with and without the anchor (x86-64 with AVX2).
; REQUIRES: x86-registered-target
; RUN: opt %loadaccel -passes='default<O3>' -S %s -mtriple=x86_64-unknown-linux-gnu -mattr=+avx2 \
; RUN:   | FileCheck %s --check-prefix=O3
; RUN: opt %loadaccel -passes='default<O3>' -llvmaccel-auto=none -S %s -mtriple=x86_64-unknown-linux-gnu -mattr=+avx2 \
; RUN:   | FileCheck %s --check-prefix=O3-PLAIN

; REMARK: remark: {{.*}} stated that n is a multiple of 64 where its paths converge
; REMARK: remark: {{.*}} stated that len lies in [16, 1024] where its paths converge
; REMARK: remark: {{.*}} folded phi rows: its incoming values are equal by llvm.assume
; REMARK: remark: {{.*}} size k: its incoming values share no divisibility or range fact that it is not already known to have
; REMARK: remark: {{.*}} size stride: may be poison or undef where no branch depends on it, so no fact is stated
; REMARK: remark: {{.*}} stated that stride is a multiple of 4 where its paths converge

declare void @log_layout(i64)

; The row length comes from one of two layouts (each path logs which):
; padded to a multiple of 64 floats, or 128 floats per block.
define void @scale(ptr noalias %y, ptr noalias %x, i64 %a, i64 %b, i1 %padded) {
; CHECK-LABEL: @scale(
; CHECK:       join:
; CHECK-NEXT:    %n = phi i64 [ %n.pad, %pad ], [ %n.blk, %blocks ]
; CHECK-NEXT:    %n.low = and i64 %n, 63
; CHECK-NEXT:    %n.multiple = icmp eq i64 %n.low, 0
; CHECK-NEXT:    call void @llvm.assume(i1 %n.multiple)
; CHECK-NOT:     @llvm.assume
; CHECK:       exit:
; OFF-LABEL:   @scale(
; OFF-NOT:       @llvm.assume
; O3-LABEL:    @scale(
; O3:            call void @llvm.assume
; O3:          vector.body:
; O3-NOT:      middle.block:
; O3-NOT:      vec.epilog
; O3:            ret void
; O3-PLAIN-LABEL: @scale(
; O3-PLAIN:    vector.body:
; O3-PLAIN:    middle.block:
entry:
  br i1 %padded, label %pad, label %blocks

pad:
  %a64 = mul nuw i64 %a, 64
  %n.pad = add nuw i64 %a64, 128
  call void @log_layout(i64 %n.pad)
  br label %join

blocks:
  %b2 = shl nuw i64 %b, 1
  %n.blk = mul nuw i64 %b2, 64
  call void @log_layout(i64 %n.blk)
  br label %join

join:
  %n = phi i64 [ %n.pad, %pad ], [ %n.blk, %blocks ]
  %empty = icmp eq i64 %n, 0
  br i1 %empty, label %exit, label %loop

loop:
  %i = phi i64 [ 0, %join ], [ %i.next, %loop ]
  %xp = getelementptr inbounds float, ptr %x, i64 %i
  %v = load float, ptr %xp, align 4
  %m = fmul float %v, 2.0
  %yp = getelementptr inbounds float, ptr %y, i64 %i
  store float %m, ptr %yp, align 4
  %i.next = add nuw i64 %i, 1
  %done = icmp eq i64 %i.next, %n
  br i1 %done, label %exit, label %loop

exit:
  ret void
}

; A length read from one of two descriptors, each with its known range
; (16..1024 and 32..512): between 16 and 1024 either way.
define void @clamped(ptr %y, ptr %du, ptr %dv, i1 %c) {
; CHECK-LABEL: @clamped(
; CHECK:       join:
; CHECK-NEXT:    %len = phi i64
; CHECK-NEXT:    %len.max = icmp ule i64 %len, 1024
; CHECK-NEXT:    call void @llvm.assume(i1 %len.max)
; CHECK-NEXT:    %len.min = icmp uge i64 %len, 16
; CHECK-NEXT:    call void @llvm.assume(i1 %len.min)
entry:
  br i1 %c, label %p, label %q

p:
  %u.c = load i64, ptr %du, align 8, !range !0
  call void @log_layout(i64 %u.c)
  br label %join

q:
  %v.c = load i64, ptr %dv, align 8, !range !1
  call void @log_layout(i64 %v.c)
  br label %join

join:
  %len = phi i64 [ %u.c, %p ], [ %v.c, %q ]
  br label %loop

loop:
  %i = phi i64 [ 0, %join ], [ %i.next, %loop ]
  %yp = getelementptr inbounds float, ptr %y, i64 %i
  store float 0.0, ptr %yp, align 4
  %i.next = add nuw i64 %i, 1
  %done = icmp eq i64 %i.next, %len
  br i1 %done, label %exit, label %loop

exit:
  ret void
}

; Two descriptors whose row counts are asserted equal at entry: the merged
; row count is that one value, and the loop bound is the argument again.
define i64 @equal_by_assume(i64 %rows.a, i64 %rows.b, i1 %c) {
; CHECK-LABEL: @equal_by_assume(
; CHECK:       join:
; CHECK-NOT:     phi i64 [ %rows.a
; CHECK:         %r = phi i64 [ 0, %join ], [ %r.next, %loop ]
; CHECK:         %done = icmp eq i64 %r.next, %rows.a
; OFF-LABEL:   @equal_by_assume(
; OFF:           %rows = phi i64 [ %rows.a, %a ], [ %rows.b, %b ]
entry:
  %same = icmp eq i64 %rows.a, %rows.b
  call void @llvm.assume(i1 %same)
  br i1 %c, label %a, label %b

a:
  call void @log_layout(i64 1)
  br label %join

b:
  call void @log_layout(i64 2)
  br label %join

join:
  %rows = phi i64 [ %rows.a, %a ], [ %rows.b, %b ]
  br label %loop

loop:
  %r = phi i64 [ 0, %join ], [ %r.next, %loop ]
  %r.next = add nuw i64 %r, 1
  %done = icmp eq i64 %r.next, %rows
  br i1 %done, label %exit, label %loop

exit:
  ret i64 %r.next
}

; Nothing in common: no fact, a missed remark, and the phi is left as is.
define void @unknown(ptr %y, i64 %k1, i64 %k2, i1 %c) {
; CHECK-LABEL: @unknown(
; CHECK:         %k = phi i64 [ %k1, %p ], [ %k2, %q ]
; CHECK-NEXT:    br label %loop
entry:
  br i1 %c, label %p, label %q
p:
  call void @log_layout(i64 %k1)
  br label %join
q:
  call void @log_layout(i64 %k2)
  br label %join
join:
  %k = phi i64 [ %k1, %p ], [ %k2, %q ]
  br label %loop
loop:
  %i = phi i64 [ 0, %join ], [ %i.next, %loop ]
  %yp = getelementptr inbounds float, ptr %y, i64 %i
  store float 0.0, ptr %yp, align 4
  %i.next = add nuw i64 %i, 1
  %done = icmp eq i64 %i.next, %k
  br i1 %done, label %exit, label %loop
exit:
  ret void
}

; A stride that no branch depends on: from arguments that may be undef, an
; llvm.assume about it could add undefined behaviour, so none is stated; from
; noundef arguments (and no flag that could make poison) it is.
define void @stride(ptr %y, i64 %a, i64 %b, i64 %n, i1 %c) {
; CHECK-LABEL: @stride(
; CHECK-NOT:     @llvm.assume
; CHECK:       exit:
  br i1 %c, label %p, label %q
p:
  %a8 = shl i64 %a, 3
  call void @log_layout(i64 %a8)
  br label %join
q:
  %b16 = shl i64 %b, 4
  call void @log_layout(i64 %b16)
  br label %join
join:
  %stride = phi i64 [ %a8, %p ], [ %b16, %q ]
  br label %loop
loop:
  %i = phi i64 [ 0, %join ], [ %i.next, %loop ]
  %off = mul i64 %i, %stride
  %yp = getelementptr inbounds float, ptr %y, i64 %off
  store float 0.0, ptr %yp, align 4
  %i.next = add nuw i64 %i, 1
  %done = icmp eq i64 %i.next, %n
  br i1 %done, label %exit, label %loop
exit:
  ret void
}

define void @stride_noundef(ptr %y, i64 noundef %a, i64 noundef %b, i64 %n, i1 %c) {
; CHECK-LABEL: @stride_noundef(
; CHECK:         %stride = phi i64 [ %a8, %p ], [ %b16, %q ]
; CHECK-NEXT:    %stride.low = and i64 %stride, 3
; CHECK-NEXT:    %stride.multiple = icmp eq i64 %stride.low, 0
; CHECK-NEXT:    call void @llvm.assume(i1 %stride.multiple)
  br i1 %c, label %p, label %q
p:
  %a4 = shl i64 %a, 2
  %a8 = add i64 %a4, %a4
  call void @log_layout(i64 %a8)
  br label %join
q:
  %b8 = shl i64 %b, 3
  %b16 = add i64 %b8, %b8
  call void @log_layout(i64 %b16)
  br label %join
join:
  %stride = phi i64 [ %a8, %p ], [ %b16, %q ]
  br label %loop
loop:
  %i = phi i64 [ 0, %join ], [ %i.next, %loop ]
  %off = mul i64 %i, %stride
  %yp = getelementptr inbounds float, ptr %y, i64 %off
  store float 0.0, ptr %yp, align 4
  %i.next = add nuw i64 %i, 1
  %done = icmp eq i64 %i.next, %n
  br i1 %done, label %exit, label %loop
exit:
  ret void
}

declare void @llvm.assume(i1)

!0 = !{i64 16, i64 1025}
!1 = !{i64 32, i64 513}
