; The distance comes from the target where TTI gives a prefetch distance
; (AArch64 Kryo: 740 instructions ahead, at most 11 iterations): d =
; ceil(740 / cost of an iteration). Elsewhere (Cortex-A57, x86-64: no such
; figure) it is ceil(latency / (cost / 4)) with the 300-cycle default
; latency. `latency=` overrides the target's figure.

; REQUIRES: aarch64-registered-target

; RUN: opt %loadaccel -mtriple=aarch64-unknown-linux-gnu -mcpu=kryo -passes='accel-prefetch' \
; RUN:   -pass-remarks=accel-prefetch -disable-output %s 2>&1 | FileCheck %s --check-prefix=KRYO
; RUN: opt %loadaccel -mtriple=aarch64-unknown-linux-gnu -mcpu=cortex-a57 -passes='accel-prefetch' \
; RUN:   -pass-remarks=accel-prefetch -disable-output %s 2>&1 | FileCheck %s --check-prefix=A57
; RUN: opt %loadaccel -mtriple=aarch64-unknown-linux-gnu -mcpu=kryo -passes='accel-prefetch<latency=300>' \
; RUN:   -pass-remarks=accel-prefetch -disable-output %s 2>&1 | FileCheck %s --check-prefix=A57

; An iteration costs about 130 units: Kryo ceil(740 / 130) = 6, elsewhere
; ceil(300 / ceil(130 / 4)) = 9.
; KRYO: prefetched T[...] via idx, 6 iterations ahead
; A57: prefetched T[...] via idx, 9 iterations ahead

define float @work(ptr noalias %T, ptr noalias %idx, i64 %n) {
entry:
  %guard = icmp sgt i64 %n, 0
  br i1 %guard, label %loop, label %exit

; Each lookup feeds 128 floating-point operations.
loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %loop ]
  %s = phi float [ 0.0, %entry ], [ %s.next, %loop ]
  %idx.addr = getelementptr inbounds i32, ptr %idx, i64 %i
  %id = load i32, ptr %idx.addr, align 4
  %id.ext = sext i32 %id to i64
  %t.addr = getelementptr inbounds float, ptr %T, i64 %id.ext
  %t = load float, ptr %t.addr, align 4
  %x0 = fmul float %t, 1.5
  %x1 = fadd float %x0, 1.5
  %x2 = fmul float %x1, 1.5
  %x3 = fadd float %x2, 1.5
  %x4 = fmul float %x3, 1.5
  %x5 = fadd float %x4, 1.5
  %x6 = fmul float %x5, 1.5
  %x7 = fadd float %x6, 1.5
  %x8 = fmul float %x7, 1.5
  %x9 = fadd float %x8, 1.5
  %x10 = fmul float %x9, 1.5
  %x11 = fadd float %x10, 1.5
  %x12 = fmul float %x11, 1.5
  %x13 = fadd float %x12, 1.5
  %x14 = fmul float %x13, 1.5
  %x15 = fadd float %x14, 1.5
  %x16 = fmul float %x15, 1.5
  %x17 = fadd float %x16, 1.5
  %x18 = fmul float %x17, 1.5
  %x19 = fadd float %x18, 1.5
  %x20 = fmul float %x19, 1.5
  %x21 = fadd float %x20, 1.5
  %x22 = fmul float %x21, 1.5
  %x23 = fadd float %x22, 1.5
  %x24 = fmul float %x23, 1.5
  %x25 = fadd float %x24, 1.5
  %x26 = fmul float %x25, 1.5
  %x27 = fadd float %x26, 1.5
  %x28 = fmul float %x27, 1.5
  %x29 = fadd float %x28, 1.5
  %x30 = fmul float %x29, 1.5
  %x31 = fadd float %x30, 1.5
  %x32 = fmul float %x31, 1.5
  %x33 = fadd float %x32, 1.5
  %x34 = fmul float %x33, 1.5
  %x35 = fadd float %x34, 1.5
  %x36 = fmul float %x35, 1.5
  %x37 = fadd float %x36, 1.5
  %x38 = fmul float %x37, 1.5
  %x39 = fadd float %x38, 1.5
  %x40 = fmul float %x39, 1.5
  %x41 = fadd float %x40, 1.5
  %x42 = fmul float %x41, 1.5
  %x43 = fadd float %x42, 1.5
  %x44 = fmul float %x43, 1.5
  %x45 = fadd float %x44, 1.5
  %x46 = fmul float %x45, 1.5
  %x47 = fadd float %x46, 1.5
  %x48 = fmul float %x47, 1.5
  %x49 = fadd float %x48, 1.5
  %x50 = fmul float %x49, 1.5
  %x51 = fadd float %x50, 1.5
  %x52 = fmul float %x51, 1.5
  %x53 = fadd float %x52, 1.5
  %x54 = fmul float %x53, 1.5
  %x55 = fadd float %x54, 1.5
  %x56 = fmul float %x55, 1.5
  %x57 = fadd float %x56, 1.5
  %x58 = fmul float %x57, 1.5
  %x59 = fadd float %x58, 1.5
  %x60 = fmul float %x59, 1.5
  %x61 = fadd float %x60, 1.5
  %x62 = fmul float %x61, 1.5
  %x63 = fadd float %x62, 1.5
  %x64 = fmul float %x63, 1.5
  %x65 = fadd float %x64, 1.5
  %x66 = fmul float %x65, 1.5
  %x67 = fadd float %x66, 1.5
  %x68 = fmul float %x67, 1.5
  %x69 = fadd float %x68, 1.5
  %x70 = fmul float %x69, 1.5
  %x71 = fadd float %x70, 1.5
  %x72 = fmul float %x71, 1.5
  %x73 = fadd float %x72, 1.5
  %x74 = fmul float %x73, 1.5
  %x75 = fadd float %x74, 1.5
  %x76 = fmul float %x75, 1.5
  %x77 = fadd float %x76, 1.5
  %x78 = fmul float %x77, 1.5
  %x79 = fadd float %x78, 1.5
  %x80 = fmul float %x79, 1.5
  %x81 = fadd float %x80, 1.5
  %x82 = fmul float %x81, 1.5
  %x83 = fadd float %x82, 1.5
  %x84 = fmul float %x83, 1.5
  %x85 = fadd float %x84, 1.5
  %x86 = fmul float %x85, 1.5
  %x87 = fadd float %x86, 1.5
  %x88 = fmul float %x87, 1.5
  %x89 = fadd float %x88, 1.5
  %x90 = fmul float %x89, 1.5
  %x91 = fadd float %x90, 1.5
  %x92 = fmul float %x91, 1.5
  %x93 = fadd float %x92, 1.5
  %x94 = fmul float %x93, 1.5
  %x95 = fadd float %x94, 1.5
  %x96 = fmul float %x95, 1.5
  %x97 = fadd float %x96, 1.5
  %x98 = fmul float %x97, 1.5
  %x99 = fadd float %x98, 1.5
  %x100 = fmul float %x99, 1.5
  %x101 = fadd float %x100, 1.5
  %x102 = fmul float %x101, 1.5
  %x103 = fadd float %x102, 1.5
  %x104 = fmul float %x103, 1.5
  %x105 = fadd float %x104, 1.5
  %x106 = fmul float %x105, 1.5
  %x107 = fadd float %x106, 1.5
  %x108 = fmul float %x107, 1.5
  %x109 = fadd float %x108, 1.5
  %x110 = fmul float %x109, 1.5
  %x111 = fadd float %x110, 1.5
  %x112 = fmul float %x111, 1.5
  %x113 = fadd float %x112, 1.5
  %x114 = fmul float %x113, 1.5
  %x115 = fadd float %x114, 1.5
  %x116 = fmul float %x115, 1.5
  %x117 = fadd float %x116, 1.5
  %x118 = fmul float %x117, 1.5
  %x119 = fadd float %x118, 1.5
  %x120 = fmul float %x119, 1.5
  %x121 = fadd float %x120, 1.5
  %x122 = fmul float %x121, 1.5
  %x123 = fadd float %x122, 1.5
  %x124 = fmul float %x123, 1.5
  %x125 = fadd float %x124, 1.5
  %x126 = fmul float %x125, 1.5
  %x127 = fadd float %x126, 1.5
  %s.next = fadd float %s, %x127
  %i.next = add nuw nsw i64 %i, 1
  %done = icmp eq i64 %i.next, %n
  br i1 %done, label %exit, label %loop

exit:
  %r = phi float [ 0.0, %entry ], [ %s.next, %loop ]
  ret float %r
}
