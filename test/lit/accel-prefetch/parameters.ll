; Pass parameters: the -print-pipeline-passes round trip, and the exact text
; of each parse error.

; RUN: opt %loadaccel -passes='accel-prefetch' -print-pipeline-passes -disable-output %s \
; RUN:   | FileCheck %s --check-prefix=DEFAULT
; DEFAULT: accel-prefetch<max-lines=8;indirect;strided;no-writes>

; RUN: opt %loadaccel -print-pipeline-passes -disable-output %s \
; RUN:   -passes='accel-prefetch<distance=24;latency=400;cache-line=128;min-stride=1024;max-lines=4;no-indirect;no-strided;writes>' \
; RUN:   | FileCheck %s --check-prefix=ALL
; ALL: accel-prefetch<distance=24;latency=400;cache-line=128;min-stride=1024;max-lines=4;no-indirect;no-strided;writes>

; The printed pipeline parses back to itself.
; RUN: opt %loadaccel -print-pipeline-passes -disable-output %s \
; RUN:   -passes='function(accel-prefetch<distance=24;latency=400;cache-line=128;min-stride=1024;max-lines=4;no-indirect;no-strided;writes>)' \
; RUN:   | FileCheck %s --check-prefix=ALL

; RUN: not opt %loadaccel -passes='accel-prefetch<foo>' -disable-output %s 2>&1 \
; RUN:   | FileCheck %s --check-prefix=UNKNOWN
; UNKNOWN: LLVMAccel: error: invalid accel-prefetch pass parameter 'foo'
; UNKNOWN-NEXT: {{.*}}accel-prefetch<foo>

; RUN: not opt %loadaccel -passes='accel-prefetch<distance>' -disable-output %s 2>&1 \
; RUN:   | FileCheck %s --check-prefix=NOVALUE
; NOVALUE: LLVMAccel: error: invalid accel-prefetch pass parameter 'distance': expected distance=<non-negative integer>

; RUN: not opt %loadaccel -passes='accel-prefetch<latency=x>' -disable-output %s 2>&1 \
; RUN:   | FileCheck %s --check-prefix=NOTINT
; NOTINT: LLVMAccel: error: invalid accel-prefetch pass parameter 'latency=x': expected latency=<non-negative integer>

; RUN: not opt %loadaccel -passes='accel-prefetch<distance=0>' -disable-output %s 2>&1 \
; RUN:   | FileCheck %s --check-prefix=ZERO
; ZERO: LLVMAccel: error: invalid accel-prefetch pass parameter 'distance=0': distance must be at least 1

; RUN: not opt %loadaccel -passes='accel-prefetch<max-lines=0>' -disable-output %s 2>&1 \
; RUN:   | FileCheck %s --check-prefix=MAXLINES
; MAXLINES: LLVMAccel: error: invalid accel-prefetch pass parameter 'max-lines=0': max-lines must be at least 1

; RUN: not opt %loadaccel -passes='accel-prefetch<cache-line=96>' -disable-output %s 2>&1 \
; RUN:   | FileCheck %s --check-prefix=POW2
; POW2: LLVMAccel: error: invalid accel-prefetch pass parameter 'cache-line=96': cache-line must be a power of two

; RUN: not opt %loadaccel -passes='accel-prefetch<writes=1>' -disable-output %s 2>&1 \
; RUN:   | FileCheck %s --check-prefix=FLAGVALUE
; FLAGVALUE: LLVMAccel: error: invalid accel-prefetch pass parameter 'writes=1'

; RUN: not opt %loadaccel -passes='accel-prefetch<no-distance>' -disable-output %s 2>&1 \
; RUN:   | FileCheck %s --check-prefix=NODIST
; NODIST: LLVMAccel: error: invalid accel-prefetch pass parameter 'no-distance'

; min-stride=0 is allowed (prefetch every affine access).
; RUN: opt %loadaccel -passes='accel-prefetch<min-stride=0>' -print-pipeline-passes -disable-output %s \
; RUN:   | FileCheck %s --check-prefix=MINSTRIDE0
; MINSTRIDE0: accel-prefetch<min-stride=0;max-lines=8;indirect;strided;no-writes>

define void @empty() {
  ret void
}
