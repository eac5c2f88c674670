; The pass joins default<O2> and default<O3> at PipelineStart, before
; coroutine lowering starts (coro-early) and long before coroutine splitting;
; not default<O1>; -llvmaccel-auto=none leaves it out.

; RUN: opt %loadaccel -passes='default<O2>' -print-pipeline-passes -disable-output %s \
; RUN:   | FileCheck %s --check-prefix=O2
; RUN: opt %loadaccel -passes='default<O3>' -print-pipeline-passes -disable-output %s \
; RUN:   | FileCheck %s --check-prefix=O2
; O2: accel-async-fusion<min-cost=1000;chains;inline-small;pool-resume;gpu-graphs;graph-cache>,{{.*}}coro-early,{{.*}}coro-split

; RUN: opt %loadaccel -passes='default<O1>' -print-pipeline-passes -disable-output %s \
; RUN:   | FileCheck %s --check-prefix=NONE
; RUN: opt %loadaccel -llvmaccel-auto=none -passes='default<O2>' -print-pipeline-passes -disable-output %s \
; RUN:   | FileCheck %s --check-prefix=NONE
; NONE-NOT: accel-async-fusion

define void @f() {
  ret void
}
