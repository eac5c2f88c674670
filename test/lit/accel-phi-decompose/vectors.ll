; Loop-carried vector phis are split where the vector is narrower than the
; target's vector registers (TTI's fixed-width register size), so the loop
; vectorizer can widen the loop itself; a vector that already fills the
; registers is left alone, with a missed remark. The lane-wise vector
; instructions of the loop whose users are all split go lane by lane too
; (a vector load becomes one load per lane, of the same bytes), so the loop
; keeps no vector value; one with another user stays a vector.

; REQUIRES: x86-registered-target, aarch64-registered-target
; RUN: opt %loadaccel -passes=accel-phi-decompose -S %s -mtriple=x86_64-unknown-linux-gnu -mattr=+avx2 \
; RUN:   -pass-remarks-missed=accel-phi-decompose 2>%t.avx2.txt | FileCheck %s --check-prefixes=CHECK,SPLIT4,KEEP8
; RUN: FileCheck %s --check-prefix=AVX2-MISSED < %t.avx2.txt
; RUN: opt %loadaccel -passes=accel-phi-decompose -S %s -mtriple=x86_64-unknown-linux-gnu -mattr=+avx512f \
; RUN:   | FileCheck %s --check-prefixes=CHECK,SPLIT4,SPLIT8
; RUN: opt %loadaccel -passes=accel-phi-decompose -S %s -mtriple=aarch64-unknown-linux-gnu \
; RUN:   -pass-remarks-missed=accel-phi-decompose 2>%t.a64.txt | FileCheck %s --check-prefixes=CHECK,KEEP4,KEEP8
; RUN: FileCheck %s --check-prefix=A64-MISSED < %t.a64.txt
; RUN: opt %loadaccel -passes='accel-phi-decompose<no-vectors>' -S %s -mtriple=x86_64-unknown-linux-gnu -mattr=+avx512f \
; RUN:   -pass-remarks-missed=accel-phi-decompose 2>%t.novec.txt | FileCheck %s --check-prefixes=CHECK,KEEP4,KEEP8
; RUN: FileCheck %s --check-prefix=NOVEC-MISSED < %t.novec.txt
; Under default<O3> with AVX2, the loop of @sum4 vectorizes (8 lanes) once its
; phi is split; without the plugin it keeps the <4 x float> phi, scalar.
; RUN: opt %loadaccel -passes='default<O3>' -S %s -mtriple=x86_64-unknown-linux-gnu -mattr=+avx2 \
; RUN:   -pass-remarks=loop-vectorize 2>&1 | FileCheck %s --check-prefix=O3
; RUN: opt %loadaccel -passes='default<O3>' -llvmaccel-auto=none -S %s -mtriple=x86_64-unknown-linux-gnu \
; RUN:   -mattr=+avx2 | FileCheck %s --check-prefix=O3-PLAIN
; O3: remark: {{.*}} vectorized loop (vectorization width: 8
; O3-LABEL: @sum4(
; O3: vector.body:
; O3: fadd reassoc <8 x float>
; O3-PLAIN-LABEL: @sum4(
; O3-PLAIN: phi <4 x float>
; O3-PLAIN-NOT: vector.body:

; AVX2-MISSED: remark: {{.*}} phi of <8 x float> (256 bits) already fills the target's 256-bit vector registers
; AVX2-MISSED: remark: {{.*}} phi of <4 x float>: a vector value of its loop has a user that needs the whole vector, so the loop would stay vector
; A64-MISSED: remark: {{.*}} phi of <4 x float> (128 bits) already fills the target's 128-bit vector registers
; A64-MISSED: remark: {{.*}} phi of <8 x float> (256 bits) already fills the target's 128-bit vector registers
; NOVEC-MISSED: remark: {{.*}} phi of <4 x float> is loop-carried, but no-vectors
; NOVEC-MISSED: remark: {{.*}} phi of <8 x float> is loop-carried, but no-vectors
; NOVEC-MISSED: remark: {{.*}} phi of <4 x float> is loop-carried, but no-vectors

; Four partial sums in a <4 x float>, reduced after the loop.
define float @sum4(ptr %a, i64 %n) {
; CHECK-LABEL: @sum4(
; SPLIT4:      loop:
; SPLIT4:        %acc.0 = phi float [ 0.000000e+00, %entry ], [ %acc.next.lane0, %loop ]
; SPLIT4-NEXT:   %acc.1 = phi float [ 0.000000e+00, %entry ], [ %acc.next.lane1, %loop ]
; SPLIT4-NEXT:   %acc.2 = phi float [ 0.000000e+00, %entry ], [ %acc.next.lane2, %loop ]
; SPLIT4-NEXT:   %acc.3 = phi float [ 0.000000e+00, %entry ], [ %acc.next.lane3, %loop ]
; SPLIT4-NEXT:   %p = getelementptr inbounds <4 x float>, ptr %a, i64 %i
; SPLIT4-NEXT:   %v.lane0 = load float, ptr %p, align 16
; SPLIT4-NEXT:   %v.lane1.addr = getelementptr inbounds i8, ptr %p, i64 4
; SPLIT4-NEXT:   %v.lane1 = load float, ptr %v.lane1.addr, align 4
; SPLIT4:        %v.lane3 = load float, ptr %v.lane3.addr, align 4
; SPLIT4-NEXT:   %acc.next.lane0 = fadd reassoc float %acc.0, %v.lane0
; SPLIT4-NEXT:   %acc.next.lane1 = fadd reassoc float %acc.1, %v.lane1
; SPLIT4-NEXT:   %acc.next.lane2 = fadd reassoc float %acc.2, %v.lane2
; SPLIT4-NEXT:   %acc.next.lane3 = fadd reassoc float %acc.3, %v.lane3
; SPLIT4-NOT:    <4 x float>
; The LCSSA phi is split with it, and the extracts after it take its parts.
; SPLIT4:      exit:
; SPLIT4-NEXT:   %r.0 = phi float [ %acc.next.lane0, %loop ]
; SPLIT4:        %r.3 = phi float [ %acc.next.lane3, %loop ]
; SPLIT4-NEXT:   %s01 = fadd float %r.0, %r.1
; KEEP4:       loop:
; KEEP4:         %acc = phi <4 x float>
entry:
  br label %loop

loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %loop ]
  %acc = phi <4 x float> [ zeroinitializer, %entry ], [ %acc.next, %loop ]
  %p = getelementptr inbounds <4 x float>, ptr %a, i64 %i
  %v = load <4 x float>, ptr %p, align 16
  %acc.next = fadd reassoc <4 x float> %acc, %v
  %i.next = add nuw nsw i64 %i, 1
  %done = icmp eq i64 %i.next, %n
  br i1 %done, label %exit, label %loop

exit:
  %r = phi <4 x float> [ %acc.next, %loop ]
  %e0 = extractelement <4 x float> %r, i64 0
  %e1 = extractelement <4 x float> %r, i64 1
  %e2 = extractelement <4 x float> %r, i64 2
  %e3 = extractelement <4 x float> %r, i64 3
  %s01 = fadd float %e0, %e1
  %s23 = fadd float %e2, %e3
  %s = fadd float %s01, %s23
  ret float %s
}

define <8 x float> @sum8(ptr %a, i64 %n) {
; CHECK-LABEL: @sum8(
; SPLIT8:        %acc.7 = phi float
; SPLIT8-NOT:    phi <8 x float>
; KEEP8:         %acc = phi <8 x float>
entry:
  br label %loop

loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %loop ]
  %acc = phi <8 x float> [ zeroinitializer, %entry ], [ %acc.next, %loop ]
  %p = getelementptr inbounds <8 x float>, ptr %a, i64 %i
  %v = load <8 x float>, ptr %p, align 32
  %acc.next = fadd <8 x float> %acc, %v
  %i.next = add nuw nsw i64 %i, 1
  %done = icmp eq i64 %i.next, %n
  br i1 %done, label %exit, label %loop

exit:
  %r = phi <8 x float> [ %acc.next, %loop ]
  ret <8 x float> %r
}

; The running vector is also stored every iteration: the loop would keep a
; vector value whatever is split, so the phi is left alone (InstCombine would
; fold its lanes back into a vector phi).
define void @stored(ptr %a, ptr %out, i64 %n) {
; CHECK-LABEL: @stored(
; CHECK:         %acc = phi <4 x float>
; CHECK:         store <4 x float> %acc.next, ptr %out, align 16
entry:
  br label %loop

loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %loop ]
  %acc = phi <4 x float> [ zeroinitializer, %entry ], [ %acc.next, %loop ]
  %p = getelementptr inbounds <4 x float>, ptr %a, i64 %i
  %v = load <4 x float>, ptr %p, align 16
  %acc.next = fadd <4 x float> %acc, %v
  store <4 x float> %acc.next, ptr %out, align 16
  %i.next = add nuw nsw i64 %i, 1
  %done = icmp eq i64 %i.next, %n
  br i1 %done, label %exit, label %loop

exit:
  ret void
}

; A vector phi where two paths merge (no loop) is never split.
define <4 x float> @merge(i1 %c, <4 x float> %x, <4 x float> %y) {
; CHECK-LABEL: @merge(
; CHECK:         %m = phi <4 x float> [ %x, %a ], [ %y, %b ]
entry:
  br i1 %c, label %a, label %b
a:
  br label %join
b:
  br label %join
join:
  %m = phi <4 x float> [ %x, %a ], [ %y, %b ]
  ret <4 x float> %m
}
