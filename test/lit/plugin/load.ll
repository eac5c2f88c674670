; The plugin loads into opt and its passes are known by their pipeline names,
; alone and inside an explicit function pass manager.
; RUN: opt %loadaccel -passes=accel-prefetch -S %s | FileCheck %s
; RUN: opt %loadaccel -passes='function(accel-prefetch)' -S %s | FileCheck %s
; Without the plugin, the name means nothing to opt.
; RUN: not opt -passes=accel-prefetch -disable-output %s 2>&1 | FileCheck %s --check-prefix=NOPLUGIN

; CHECK-LABEL: define void @f()
; CHECK-NEXT:    ret void
; NOPLUGIN: unknown pass name 'accel-prefetch'

define void @f() {
  ret void
}
