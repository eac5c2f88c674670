; Pass parameters: the -print-pipeline-passes round trip, the ends of the
; min-cost range, and the exact text of each parse error.

; RUN: opt %loadaccel -passes='accel-async-fusion' -print-pipeline-passes -disable-output %s \
; RUN:   | FileCheck %s --check-prefix=DEFAULT
; DEFAULT: accel-async-fusion<min-cost=1000;chains;inline-small;pool-resume;gpu-graphs;graph-cache>

; RUN: opt %loadaccel -passes='accel-async-fusion<min-cost=0;no-chains;no-inline-small;no-pool-resume;no-gpu-graphs;no-graph-cache>' \
; RUN:   -print-pipeline-passes -disable-output %s | FileCheck %s --check-prefix=ALL
; ALL: accel-async-fusion<min-cost=0;no-chains;no-inline-small;no-pool-resume;no-gpu-graphs;no-graph-cache>
; RUN: opt %loadaccel -passes='accel-async-fusion<min-cost=0;no-chains;no-inline-small;no-pool-resume;no-gpu-graphs;no-graph-cache>' \
; RUN:   -print-pipeline-passes -disable-output %s | FileCheck %s --check-prefix=ALL
; RUN: opt %loadaccel -passes='accel-async-fusion<min-cost=1000000;chains;inline-small;pool-resume;gpu-graphs;graph-cache>' \
; RUN:   -print-pipeline-passes -disable-output %s | FileCheck %s --check-prefix=MAX
; MAX: accel-async-fusion<min-cost=1000000;chains;inline-small;pool-resume;gpu-graphs;graph-cache>

; RUN: not opt %loadaccel -passes='accel-async-fusion<foo>' -disable-output %s 2>&1 \
; RUN:   | FileCheck %s --check-prefix=UNKNOWN
; UNKNOWN: LLVMAccel: error: invalid accel-async-fusion pass parameter 'foo'{{$}}

; RUN: not opt %loadaccel -passes='accel-async-fusion<min-cost=1000001>' -disable-output %s 2>&1 \
; RUN:   | FileCheck %s --check-prefix=TOOBIG
; TOOBIG: LLVMAccel: error: invalid accel-async-fusion pass parameter 'min-cost=1000001': min-cost must be an integer from 0 to 1000000

; RUN: not opt %loadaccel -passes='accel-async-fusion<min-cost=-1>' -disable-output %s 2>&1 \
; RUN:   | FileCheck %s --check-prefix=NEGATIVE
; NEGATIVE: LLVMAccel: error: invalid accel-async-fusion pass parameter 'min-cost=-1': min-cost must be an integer from 0 to 1000000

; RUN: not opt %loadaccel -passes='accel-async-fusion<min-cost=x>' -disable-output %s 2>&1 \
; RUN:   | FileCheck %s --check-prefix=NOTINT
; NOTINT: LLVMAccel: error: invalid accel-async-fusion pass parameter 'min-cost=x': min-cost must be an integer from 0 to 1000000

; RUN: not opt %loadaccel -passes='accel-async-fusion<min-cost>' -disable-output %s 2>&1 \
; RUN:   | FileCheck %s --check-prefix=NOVALUE
; NOVALUE: LLVMAccel: error: invalid accel-async-fusion pass parameter 'min-cost': min-cost must be an integer from 0 to 1000000

; RUN: not opt %loadaccel -passes='accel-async-fusion<chains=1>' -disable-output %s 2>&1 \
; RUN:   | FileCheck %s --check-prefix=FLAGVALUE
; FLAGVALUE: LLVMAccel: error: invalid accel-async-fusion pass parameter 'chains=1': chains takes no value

; RUN: not opt %loadaccel -passes='accel-async-fusion<inline-small;no-inline-small>' -disable-output %s 2>&1 \
; RUN:   | FileCheck %s --check-prefix=TWICE
; TWICE: LLVMAccel: error: invalid accel-async-fusion pass parameter 'no-inline-small': inline-small is given twice

; RUN: not opt %loadaccel -passes='accel-async-fusion<>' -disable-output %s 2>&1 \
; RUN:   | FileCheck %s --check-prefix=EMPTYLIST
; RUN: not opt %loadaccel -passes='accel-async-fusion<chains;;inline-small>' -disable-output %s 2>&1 \
; RUN:   | FileCheck %s --check-prefix=EMPTY
; EMPTY: LLVMAccel: error: invalid accel-async-fusion pass parameter '': empty parameter
; EMPTYLIST: LLVMAccel: error: invalid accel-async-fusion pass parameter '': empty parameter

; A module without the async runtime is left alone.
; RUN: opt %loadaccel -passes=accel-async-fusion -S %s | FileCheck %s --check-prefix=NOOP
; NOOP: define void @f()
define void @f() {
  ret void
}

; RUN: not opt %loadaccel -passes='accel-async-fusion<gpu-graphs=0>' -disable-output %s 2>&1 \
; RUN:   | FileCheck %s --check-prefix=GPUVALUE
; GPUVALUE: LLVMAccel: error: invalid accel-async-fusion pass parameter 'gpu-graphs=0': gpu-graphs takes no value

; RUN: not opt %loadaccel -passes='accel-async-fusion<graph-cache=1>' -disable-output %s 2>&1 \
; RUN:   | FileCheck %s --check-prefix=CACHEVALUE
; CACHEVALUE: LLVMAccel: error: invalid accel-async-fusion pass parameter 'graph-cache=1': graph-cache takes no value

; RUN: not opt %loadaccel -passes='accel-async-fusion<no-graph-cache;graph-cache>' -disable-output %s 2>&1 \
; RUN:   | FileCheck %s --check-prefix=CACHETWICE
; CACHETWICE: LLVMAccel: error: invalid accel-async-fusion pass parameter 'graph-cache': graph-cache is given twice

; RUN: not opt %loadaccel -passes='accel-async-fusion<pool-resume=0>' -disable-output %s 2>&1 \
; RUN:   | FileCheck %s --check-prefix=POOLVALUE
; POOLVALUE: LLVMAccel: error: invalid accel-async-fusion pass parameter 'pool-resume=0': pool-resume takes no value
