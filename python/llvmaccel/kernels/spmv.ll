; ModuleID = 'spmv.c'
source_filename = "spmv.c"

; Function Attrs: nounwind uwtable
define dso_local void @spmv_csr(ptr noundef %row_ptr, ptr noundef %cols, ptr noundef %vals, ptr noundef %x, i64 noundef %num_rows, ptr noundef %y) #0 {
entry:
  %row_ptr.addr = alloca ptr, align 8
  %cols.addr = alloca ptr, align 8
  %vals.addr = alloca ptr, align 8
  %x.addr = alloca ptr, align 8
  %num_rows.addr = alloca i64, align 8
  %y.addr = alloca ptr, align 8
  %r = alloca i64, align 8
  %cleanup.dest.slot = alloca i32, align 4
  %sum = alloca double, align 8
  %j = alloca i64, align 8
  store ptr %row_ptr, ptr %row_ptr.addr, align 8, !tbaa !4
  store ptr %cols, ptr %cols.addr, align 8, !tbaa !4
  store ptr %vals, ptr %vals.addr, align 8, !tbaa !4
  store ptr %x, ptr %x.addr, align 8, !tbaa !4
  store i64 %num_rows, ptr %num_rows.addr, align 8, !tbaa !8
  store ptr %y, ptr %y.addr, align 8, !tbaa !4
  call void @llvm.lifetime.start.p0(i64 8, ptr %r) #3
  store i64 0, ptr %r, align 8, !tbaa !8
  br label %for.cond

for.cond:                                         ; preds = %for.inc10, %entry
  %0 = load i64, ptr %r, align 8, !tbaa !8
  %1 = load i64, ptr %num_rows.addr, align 8, !tbaa !8
  %cmp = icmp slt i64 %0, %1
  br i1 %cmp, label %for.body, label %for.cond.cleanup

for.cond.cleanup:                                 ; preds = %for.cond
  store i32 2, ptr %cleanup.dest.slot, align 4
  call void @llvm.lifetime.end.p0(i64 8, ptr %r) #3
  br label %for.end12

for.body:                                         ; preds = %for.cond
  call void @llvm.lifetime.start.p0(i64 8, ptr %sum) #3
  store double 0.000000e+00, ptr %sum, align 8, !tbaa !10
  call void @llvm.lifetime.start.p0(i64 8, ptr %j) #3
  %2 = load ptr, ptr %row_ptr.addr, align 8, !tbaa !4
  %3 = load i64, ptr %r, align 8, !tbaa !8
  %arrayidx = getelementptr inbounds i64, ptr %2, i64 %3
  %4 = load i64, ptr %arrayidx, align 8, !tbaa !8
  store i64 %4, ptr %j, align 8, !tbaa !8
  br label %for.cond1

for.cond1:                                        ; preds = %for.inc, %for.body
  %5 = load i64, ptr %j, align 8, !tbaa !8
  %6 = load ptr, ptr %row_ptr.addr, align 8, !tbaa !4
  %7 = load i64, ptr %r, align 8, !tbaa !8
  %add = add nsw i64 %7, 1
  %arrayidx2 = getelementptr inbounds i64, ptr %6, i64 %add
  %8 = load i64, ptr %arrayidx2, align 8, !tbaa !8
  %cmp3 = icmp slt i64 %5, %8
  br i1 %cmp3, label %for.body5, label %for.cond.cleanup4

for.cond.cleanup4:                                ; preds = %for.cond1
  store i32 5, ptr %cleanup.dest.slot, align 4
  call void @llvm.lifetime.end.p0(i64 8, ptr %j) #3
  br label %for.end

for.body5:                                        ; preds = %for.cond1
  %9 = load ptr, ptr %vals.addr, align 8, !tbaa !4
  %10 = load i64, ptr %j, align 8, !tbaa !8
  %arrayidx6 = getelementptr inbounds double, ptr %9, i64 %10
  %11 = load double, ptr %arrayidx6, align 8, !tbaa !10
  %12 = load ptr, ptr %x.addr, align 8, !tbaa !4
  %13 = load ptr, ptr %cols.addr, align 8, !tbaa !4
  %14 = load i64, ptr %j, align 8, !tbaa !8
  %arrayidx7 = getelementptr inbounds i32, ptr %13, i64 %14
  %15 = load i32, ptr %arrayidx7, align 4, !tbaa !12
  %idxprom = sext i32 %15 to i64
  %arrayidx8 = getelementptr inbounds double, ptr %12, i64 %idxprom
  %16 = load double, ptr %arrayidx8, align 8, !tbaa !10
  %17 = load double, ptr %sum, align 8, !tbaa !10
  %18 = call double @llvm.fmuladd.f64(double %11, double %16, double %17)
  store double %18, ptr %sum, align 8, !tbaa !10
  br label %for.inc

for.inc:                                          ; preds = %for.body5
  %19 = load i64, ptr %j, align 8, !tbaa !8
  %inc = add nsw i64 %19, 1
  store i64 %inc, ptr %j, align 8, !tbaa !8
  br label %for.cond1, !llvm.loop !14

for.end:                                          ; preds = %for.cond.cleanup4
  %20 = load double, ptr %sum, align 8, !tbaa !10
  %21 = load ptr, ptr %y.addr, align 8, !tbaa !4
  %22 = load i64, ptr %r, align 8, !tbaa !8
  %arrayidx9 = getelementptr inbounds double, ptr %21, i64 %22
  store double %20, ptr %arrayidx9, align 8, !tbaa !10
  call void @llvm.lifetime.end.p0(i64 8, ptr %sum) #3
  br label %for.inc10

for.inc10:                                        ; preds = %for.end
  %23 = load i64, ptr %r, align 8, !tbaa !8
  %inc11 = add nsw i64 %23, 1
  store i64 %inc11, ptr %r, align 8, !tbaa !8
  br label %for.cond, !llvm.loop !16

for.end12:                                        ; preds = %for.cond.cleanup
  ret void
}

; Function Attrs: nocallback nofree nosync nounwind willreturn memory(argmem: readwrite)
declare void @llvm.lifetime.start.p0(i64 immarg, ptr nocapture) #1

; Function Attrs: nocallback nofree nosync nounwind speculatable willreturn memory(none)
declare double @llvm.fmuladd.f64(double, double, double) #2

; Function Attrs: nocallback nofree nosync nounwind willreturn memory(argmem: readwrite)
declare void @llvm.lifetime.end.p0(i64 immarg, ptr nocapture) #1

attributes #0 = { nounwind uwtable "min-legal-vector-width"="0" "no-trapping-math"="true" "stack-protector-buffer-size"="8" }
attributes #1 = { nocallback nofree nosync nounwind willreturn memory(argmem: readwrite) }
attributes #2 = { nocallback nofree nosync nounwind speculatable willreturn memory(none) }
attributes #3 = { nounwind }

!llvm.module.flags = !{!0, !1, !2, !3}

!0 = !{i32 1, !"wchar_size", i32 4}
!1 = !{i32 8, !"PIC Level", i32 2}
!2 = !{i32 7, !"PIE Level", i32 2}
!3 = !{i32 7, !"uwtable", i32 2}
!4 = !{!5, !5, i64 0}
!5 = !{!"any pointer", !6, i64 0}
!6 = !{!"omnipotent char", !7, i64 0}
!7 = !{!"Simple C/C++ TBAA"}
!8 = !{!9, !9, i64 0}
!9 = !{!"long", !6, i64 0}
!10 = !{!11, !11, i64 0}
!11 = !{!"double", !6, i64 0}
!12 = !{!13, !13, i64 0}
!13 = !{!"int", !6, i64 0}
!14 = distinct !{!14, !15}
!15 = !{!"llvm.loop.mustprogress"}
!16 = distinct !{!16, !15}
