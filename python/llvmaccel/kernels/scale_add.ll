; ModuleID = 'scale_add.c'
source_filename = "scale_add.c"

; Function Attrs: nounwind uwtable
define dso_local void @scale_add(ptr noundef %out, ptr noundef %x, ptr noundef %y, float noundef %a, i64 noundef %n) #0 {
entry:
  %out.addr = alloca ptr, align 8
  %x.addr = alloca ptr, align 8
  %y.addr = alloca ptr, align 8
  %a.addr = alloca float, align 4
  %n.addr = alloca i64, align 8
  %i = alloca i64, align 8
  store ptr %out, ptr %out.addr, align 8, !tbaa !4
  store ptr %x, ptr %x.addr, align 8, !tbaa !4
  store ptr %y, ptr %y.addr, align 8, !tbaa !4
  store float %a, ptr %a.addr, align 4, !tbaa !8
  store i64 %n, ptr %n.addr, align 8, !tbaa !10
  call void @llvm.lifetime.start.p0(i64 8, ptr %i) #3
  store i64 0, ptr %i, align 8, !tbaa !10
  br label %for.cond

for.cond:                                         ; preds = %for.inc, %entry
  %0 = load i64, ptr %i, align 8, !tbaa !10
  %1 = load i64, ptr %n.addr, align 8, !tbaa !10
  %cmp = icmp slt i64 %0, %1
  br i1 %cmp, label %for.body, label %for.cond.cleanup

for.cond.cleanup:                                 ; preds = %for.cond
  call void @llvm.lifetime.end.p0(i64 8, ptr %i) #3
  br label %for.end

for.body:                                         ; preds = %for.cond
  %2 = load float, ptr %a.addr, align 4, !tbaa !8
  %3 = load ptr, ptr %x.addr, align 8, !tbaa !4
  %4 = load i64, ptr %i, align 8, !tbaa !10
  %arrayidx = getelementptr inbounds float, ptr %3, i64 %4
  %5 = load float, ptr %arrayidx, align 4, !tbaa !8
  %6 = load ptr, ptr %y.addr, align 8, !tbaa !4
  %7 = load i64, ptr %i, align 8, !tbaa !10
  %arrayidx1 = getelementptr inbounds float, ptr %6, i64 %7
  %8 = load float, ptr %arrayidx1, align 4, !tbaa !8
  %9 = call float @llvm.fmuladd.f32(float %2, float %5, float %8)
  %10 = load ptr, ptr %out.addr, align 8, !tbaa !4
  %11 = load i64, ptr %i, align 8, !tbaa !10
  %arrayidx2 = getelementptr inbounds float, ptr %10, i64 %11
  store float %9, ptr %arrayidx2, align 4, !tbaa !8
  br label %for.inc

for.inc:                                          ; preds = %for.body
  %12 = load i64, ptr %i, align 8, !tbaa !10
  %inc = add nsw i64 %12, 1
  store i64 %inc, ptr %i, align 8, !tbaa !10
  br label %for.cond, !llvm.loop !12

for.end:                                          ; preds = %for.cond.cleanup
  ret void
}

; Function Attrs: nocallback nofree nosync nounwind willreturn memory(argmem: readwrite)
declare void @llvm.lifetime.start.p0(i64 immarg, ptr nocapture) #1

; Function Attrs: nocallback nofree nosync nounwind speculatable willreturn memory(none)
declare float @llvm.fmuladd.f32(float, float, float) #2

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
!9 = !{!"float", !6, i64 0}
!10 = !{!11, !11, i64 0}
!11 = !{!"long", !6, i64 0}
!12 = distinct !{!12, !13}
!13 = !{!"llvm.loop.mustprogress"}
