; Parameters survive a round trip through -print-pipeline-passes; options not
; given stay unset (the target's defaults apply).
; RUN: opt %loadaccel -passes=accel-prefetch -print-pipeline-passes -disable-output %s | FileCheck %s --check-prefix=DEFAULT
; RUN: opt %loadaccel -passes='accel-prefetch<distance=24;cache-line=128;no-indirect;writes>' -print-pipeline-passes -disable-output %s | FileCheck %s --check-prefix=GIVEN

; DEFAULT: function(accel-prefetch<max-lines=8;resident-bytes=1048576;indirect;strided;no-writes;size-check>)
; GIVEN: function(accel-prefetch<distance=24;cache-line=128;max-lines=8;resident-bytes=1048576;no-indirect;strided;writes;size-check>)

define void @f() {
  ret void
}
