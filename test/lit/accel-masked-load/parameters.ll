; Pass parameters: the -print-pipeline-passes round trip, the ends of the
; max-growth range, and the text of each parse error. Each flag's effect is
; tested with the kernels (split: below; masked, clamp: targets.ll;
; max-growth: pad2d.ll).

; RUN: opt %loadaccel -passes='accel-masked-load' -print-pipeline-passes -disable-output %s \
; RUN:   | FileCheck %s --check-prefix=DEFAULT
; DEFAULT: accel-masked-load<split;masked;clamp;max-growth=4096>

; RUN: opt %loadaccel -print-pipeline-passes -disable-output %s \
; RUN:   -passes='accel-masked-load<no-split;no-masked;no-clamp;max-growth=0>' \
; RUN:   | FileCheck %s --check-prefix=ALL
; ALL: accel-masked-load<no-split;no-masked;no-clamp;max-growth=0>
; RUN: opt %loadaccel -print-pipeline-passes -disable-output %s \
; RUN:   -passes='function(accel-masked-load<no-split;no-masked;no-clamp;max-growth=0>)' \
; RUN:   | FileCheck %s --check-prefix=ALL
; RUN: opt %loadaccel -print-pipeline-passes -disable-output %s \
; RUN:   -passes='accel-masked-load<split;masked;clamp;max-growth=1000000>' \
; RUN:   | FileCheck %s --check-prefix=MAX
; MAX: accel-masked-load<split;masked;clamp;max-growth=1000000>

; RUN: not opt %loadaccel -passes='accel-masked-load<foo>' -disable-output %s 2>&1 \
; RUN:   | FileCheck %s --check-prefix=UNKNOWN
; UNKNOWN: LLVMAccel: error: invalid accel-masked-load pass parameter 'foo'{{$}}
; RUN: not opt %loadaccel -passes='accel-masked-load<max-growth=1000001>' -disable-output %s 2>&1 \
; RUN:   | FileCheck %s --check-prefix=TOOBIG
; TOOBIG: LLVMAccel: error: invalid accel-masked-load pass parameter 'max-growth=1000001': max-growth must be an integer from 0 to 1000000
; RUN: not opt %loadaccel -passes='accel-masked-load<max-growth=-1>' -disable-output %s 2>&1 \
; RUN:   | FileCheck %s --check-prefix=NEGATIVE
; NEGATIVE: LLVMAccel: error: invalid accel-masked-load pass parameter 'max-growth=-1': max-growth must be an integer from 0 to 1000000
; RUN: not opt %loadaccel -passes='accel-masked-load<max-growth>' -disable-output %s 2>&1 \
; RUN:   | FileCheck %s --check-prefix=NOVALUE
; NOVALUE: LLVMAccel: error: invalid accel-masked-load pass parameter 'max-growth': max-growth must be an integer from 0 to 1000000
; RUN: not opt %loadaccel -passes='accel-masked-load<max-growth=x>' -disable-output %s 2>&1 \
; RUN:   | FileCheck %s --check-prefix=NOTINT
; NOTINT: LLVMAccel: error: invalid accel-masked-load pass parameter 'max-growth=x': max-growth must be an integer from 0 to 1000000
; RUN: not opt %loadaccel -passes='accel-masked-load<split=1>' -disable-output %s 2>&1 \
; RUN:   | FileCheck %s --check-prefix=FLAGVALUE
; FLAGVALUE: LLVMAccel: error: invalid accel-masked-load pass parameter 'split=1': split takes no value
; RUN: not opt %loadaccel -passes='accel-masked-load<masked;no-masked>' -disable-output %s 2>&1 \
; RUN:   | FileCheck %s --check-prefix=TWICE
; TWICE: LLVMAccel: error: invalid accel-masked-load pass parameter 'no-masked': masked is given twice
; RUN: not opt %loadaccel -passes='accel-masked-load<clamp;>' -disable-output %s 2>&1 \
; RUN:   | FileCheck %s --check-prefix=EMPTY
; EMPTY: LLVMAccel: error: invalid accel-masked-load pass parameter '': empty parameter
; RUN: not opt %loadaccel -passes='accel-masked-load<>' -disable-output %s 2>&1 \
; RUN:   | FileCheck %s --check-prefix=EMPTYLIST
; EMPTYLIST: LLVMAccel: error: invalid accel-masked-load pass parameter '': empty parameter

; no-split leaves the padded loop alone; max-growth=0 too, with a remark.
; RUN: opt %loadaccel -passes='accel-masked-load<no-split>' -S %s | FileCheck %s --check-prefix=NOSPLIT
; NOSPLIT-NOT: loop.main
; RUN: opt %loadaccel -passes='accel-masked-load<max-growth=0>' -pass-remarks-missed=accel-masked-load \
; RUN:   -disable-output %s 2>&1 | FileCheck %s --check-prefix=GROWTH0
; GROWTH0: remark: {{.*}}loop not split: the copies would add {{[0-9]+}} instructions, more than max-growth=0
; RUN: opt %loadaccel -passes='accel-masked-load<split>' -S %s | FileCheck %s --check-prefix=SPLIT
; SPLIT: loop.main:

define void @pad(ptr noalias %y, ptr noalias %x, i64 %n, i64 %m) {
entry:
  br label %loop

loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %latch ]
  %j = add nsw i64 %i, -1
  %lo = icmp sge i64 %j, 0
  %hi = icmp slt i64 %j, %n
  %ok = and i1 %lo, %hi
  br i1 %ok, label %then, label %latch

then:
  %px = getelementptr inbounds float, ptr %x, i64 %j
  %v = load float, ptr %px, align 4
  br label %latch

latch:
  %r = phi float [ %v, %then ], [ 0.0, %loop ]
  %py = getelementptr inbounds float, ptr %y, i64 %i
  store float %r, ptr %py, align 4
  %i.next = add nuw nsw i64 %i, 1
  %done = icmp eq i64 %i.next, %m
  br i1 %done, label %exit, label %loop

exit:
  ret void
}
