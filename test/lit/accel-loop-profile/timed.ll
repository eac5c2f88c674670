; A loop nest on x86-64: the outermost loop is timed. The time-stamp counter
; is read in the preheader and again in the exit block, and the difference
; and one entry are added to the loop's slot; the names table says which
; loop the slot is, with the debug location of the loop.

; RUN: opt %loadaccel -passes=accel-loop-profile -S %s | FileCheck %s
; RUN: opt %loadaccel -passes=accel-loop-profile -disable-output \
; RUN:   -pass-remarks=accel-loop-profile %s 2>&1 | FileCheck %s --check-prefix=REMARK

target triple = "x86_64-unknown-linux-gnu"

; CHECK: @__llvmaccel_loop_counters = global [1 x [2 x i64]] zeroinitializer, align 64
; CHECK: @__llvmaccel_loop_names = constant [{{[0-9]+}} x i8] c"rowsum\09outer\09rowsum.c:3\0A\00"
; CHECK: @__llvmaccel_loop_count = constant i64 1

; REMARK: rowsum.c:3:0: timing loop outer in slot 0

define void @rowsum(ptr %a, ptr %out, i64 %n, i64 %m) !dbg !5 {
; CHECK-LABEL: entry:
; CHECK:         %loopprof.start = call i64 @llvm.readcyclecounter()
; CHECK-NEXT:    br label %outer, !dbg
entry:
  br label %outer, !dbg !8

outer:
  %i = phi i64 [ 0, %entry ], [ %i.next, %outer.latch ]
  br label %inner

inner:
  %j = phi i64 [ 0, %outer ], [ %j.next, %inner ]
  %acc = phi float [ 0.0, %outer ], [ %sum, %inner ]
  %row = mul i64 %i, %m
  %k = add i64 %row, %j
  %p = getelementptr inbounds float, ptr %a, i64 %k
  %v = load float, ptr %p
  %sum = fadd float %acc, %v
  %j.next = add nuw i64 %j, 1
  %jd = icmp eq i64 %j.next, %m
  br i1 %jd, label %outer.latch, label %inner

; The inner loop is not timed at the default depth: its preheader has no
; counter read.
; CHECK-LABEL: outer:
; CHECK-NOT:     readcyclecounter
; CHECK-LABEL: outer.latch:
outer.latch:
  %o = getelementptr inbounds float, ptr %out, i64 %i
  store float %sum, ptr %o
  %i.next = add nuw i64 %i, 1
  %id = icmp eq i64 %i.next, %n
  br i1 %id, label %exit, label %outer

; CHECK-LABEL: exit:
; CHECK-NEXT:    %loopprof.end = call i64 @llvm.readcyclecounter()
; CHECK-NEXT:    %loopprof.cycles = sub i64 %loopprof.end, %loopprof.start
; CHECK-NEXT:    {{%.*}} = atomicrmw add ptr @__llvmaccel_loop_counters, i64 %loopprof.cycles monotonic, align 8
; CHECK-NEXT:    {{%.*}} = atomicrmw add ptr getelementptr inbounds ([1 x [2 x i64]], ptr @__llvmaccel_loop_counters, i64 0, i64 0, i64 1), i64 1 monotonic, align 8
; CHECK-NEXT:    ret void
exit:
  ret void
}

!llvm.dbg.cu = !{!0}
!llvm.module.flags = !{!3, !4}
!0 = distinct !DICompileUnit(language: DW_LANG_C11, file: !1, emissionKind: LineTablesOnly)
!1 = !DIFile(filename: "rowsum.c", directory: "/src")
!3 = !{i32 2, !"Debug Info Version", i32 3}
!4 = !{i32 7, !"Dwarf Version", i32 5}
!5 = distinct !DISubprogram(name: "rowsum", scope: !1, file: !1, line: 1, type: !6, unit: !0, spFlags: DISPFlagDefinition)
!6 = !DISubroutineType(types: !7)
!7 = !{}
!8 = !DILocation(line: 3, scope: !5)
