; How far ahead a cheap gather loop looks is capped by the accesses a core
; keeps in flight. LLVM's scheduling models carry no such figure: the pass
; takes the one measured for the function's CPU where it differs (Zen 3: 16,
; Emerald Rapids: 32) and 64 for every other CPU, generic ones included; `in-flight=` overrides
; both. The work gate is not loosened by the larger figure: the reorder
; buffer is still weighed against 16 accesses.

; REQUIRES: x86-registered-target

; RUN: opt %loadaccel -mtriple=x86_64-unknown-linux-gnu -passes='accel-prefetch<latency=100000;min-work=0>' \
; RUN:   -pass-remarks=accel-prefetch -disable-output %s 2>&1 | FileCheck %s --check-prefix=DEFAULT
; RUN: sed 's/"znver5"/"znver3"/' %s | opt %loadaccel -mtriple=x86_64-unknown-linux-gnu \
; RUN:   -passes='accel-prefetch<latency=100000;min-work=0>' -pass-remarks=accel-prefetch \
; RUN:   -disable-output 2>&1 | FileCheck %s --check-prefix=ZEN3
; RUN: sed 's/"znver5"/"emeraldrapids"/' %s | opt %loadaccel -mtriple=x86_64-unknown-linux-gnu \
; RUN:   -passes='accel-prefetch<latency=100000;min-work=0>' -pass-remarks=accel-prefetch \
; RUN:   -disable-output 2>&1 | FileCheck %s --check-prefix=EMR
; RUN: sed 's/"znver5"/"x86-64"/' %s | opt %loadaccel -mtriple=x86_64-unknown-linux-gnu \
; RUN:   -passes='accel-prefetch<latency=100000;min-work=0>' -pass-remarks=accel-prefetch \
; RUN:   -disable-output 2>&1 | FileCheck %s --check-prefix=DEFAULT
; RUN: opt %loadaccel -mtriple=x86_64-unknown-linux-gnu -passes='accel-prefetch<latency=100000;min-work=0;in-flight=8>' \
; RUN:   -pass-remarks=accel-prefetch -disable-output %s 2>&1 | FileCheck %s --check-prefix=GIVEN
; RUN: opt %loadaccel -mtriple=x86_64-unknown-linux-gnu -passes='accel-prefetch' \
; RUN:   -pass-remarks-missed=accel-prefetch -disable-output %s 2>&1 | FileCheck %s --check-prefix=GATE

; DEFAULT: prefetched T[...] via idx, 64 iterations ahead
; ZEN3:  prefetched T[...] via idx, 16 iterations ahead
; EMR:   prefetched T[...] via idx, 32 iterations ahead
; GIVEN: prefetched T[...] via idx, 8 iterations ahead
; GATE:  units of work per indirect access (needs 20: the 320-micro-op reorder buffer of znver5 over 16 accesses in flight)

define float @gather(ptr noalias %T, ptr noalias %idx, i64 %n) #0 {
entry:
  %guard = icmp sgt i64 %n, 0
  br i1 %guard, label %loop, label %exit

loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %loop ]
  %s = phi float [ 0.0, %entry ], [ %s.next, %loop ]
  %idx.addr = getelementptr inbounds i32, ptr %idx, i64 %i
  %id = load i32, ptr %idx.addr, align 4
  %id.ext = sext i32 %id to i64
  %t.addr = getelementptr inbounds float, ptr %T, i64 %id.ext
  %t = load float, ptr %t.addr, align 4
  %s.next = fadd float %s, %t
  %i.next = add nuw nsw i64 %i, 1
  %done = icmp eq i64 %i.next, %n
  br i1 %done, label %exit, label %loop

exit:
  %res = phi float [ 0.0, %entry ], [ %s.next, %loop ]
  ret float %res
}

attributes #0 = { "target-cpu"="znver5" }
