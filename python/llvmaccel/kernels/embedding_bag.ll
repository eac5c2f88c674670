; ModuleID = 'embedding_bag.c'
source_filename = "embedding_bag.c"

; Function Attrs: nounwind uwtable
define dso_local void @embedding_bag_sum(ptr noundef %table, ptr noundef %indices, ptr noundef %offsets, i64 noundef %num_bags, ptr noundef %out) #0 {
entry:
  %table.addr = alloca ptr, align 8
  %indices.addr = alloca ptr, align 8
  %offsets.addr = alloca ptr, align 8
  %num_bags.addr = alloca i64, align 8
  %out.addr = alloca ptr, align 8
  %b = alloca i64, align 8
  %cleanup.dest.slot = alloca i32, align 4
  %o = alloca ptr, align 8
  %k = alloca i32, align 4
  %j = alloca i64, align 8
  %row = alloca ptr, align 8
  %k14 = alloca i32, align 4
  store ptr %table, ptr %table.addr, align 8, !tbaa !4
  store ptr %indices, ptr %indices.addr, align 8, !tbaa !4
  store ptr %offsets, ptr %offsets.addr, align 8, !tbaa !4
  store i64 %num_bags, ptr %num_bags.addr, align 8, !tbaa !8
  store ptr %out, ptr %out.addr, align 8, !tbaa !4
  call void @llvm.lifetime.start.p0(i64 8, ptr %b) #2
  store i64 0, ptr %b, align 8, !tbaa !8
  br label %for.cond

for.cond:                                         ; preds = %for.inc30, %entry
  %0 = load i64, ptr %b, align 8, !tbaa !8
  %1 = load i64, ptr %num_bags.addr, align 8, !tbaa !8
  %cmp = icmp slt i64 %0, %1
  br i1 %cmp, label %for.body, label %for.cond.cleanup

for.cond.cleanup:                                 ; preds = %for.cond
  store i32 2, ptr %cleanup.dest.slot, align 4
  call void @llvm.lifetime.end.p0(i64 8, ptr %b) #2
  br label %for.end32

for.body:                                         ; preds = %for.cond
  call void @llvm.lifetime.start.p0(i64 8, ptr %o) #2
  %2 = load ptr, ptr %out.addr, align 8, !tbaa !4
  %3 = load i64, ptr %b, align 8, !tbaa !8
  %mul = mul nsw i64 %3, 64
  %add.ptr = getelementptr inbounds float, ptr %2, i64 %mul
  store ptr %add.ptr, ptr %o, align 8, !tbaa !4
  call void @llvm.lifetime.start.p0(i64 4, ptr %k) #2
  store i32 0, ptr %k, align 4, !tbaa !10
  br label %for.cond1

for.cond1:                                        ; preds = %for.inc, %for.body
  %4 = load i32, ptr %k, align 4, !tbaa !10
  %cmp2 = icmp slt i32 %4, 64
  br i1 %cmp2, label %for.body4, label %for.cond.cleanup3

for.cond.cleanup3:                                ; preds = %for.cond1
  store i32 5, ptr %cleanup.dest.slot, align 4
  call void @llvm.lifetime.end.p0(i64 4, ptr %k) #2
  br label %for.end

for.body4:                                        ; preds = %for.cond1
  %5 = load ptr, ptr %o, align 8, !tbaa !4
  %6 = load i32, ptr %k, align 4, !tbaa !10
  %idxprom = sext i32 %6 to i64
  %arrayidx = getelementptr inbounds float, ptr %5, i64 %idxprom
  store float 0.000000e+00, ptr %arrayidx, align 4, !tbaa !12
  br label %for.inc

for.inc:                                          ; preds = %for.body4
  %7 = load i32, ptr %k, align 4, !tbaa !10
  %inc = add nsw i32 %7, 1
  store i32 %inc, ptr %k, align 4, !tbaa !10
  br label %for.cond1, !llvm.loop !14

for.end:                                          ; preds = %for.cond.cleanup3
  call void @llvm.lifetime.start.p0(i64 8, ptr %j) #2
  %8 = load ptr, ptr %offsets.addr, align 8, !tbaa !4
  %9 = load i64, ptr %b, align 8, !tbaa !8
  %arrayidx5 = getelementptr inbounds i64, ptr %8, i64 %9
  %10 = load i64, ptr %arrayidx5, align 8, !tbaa !8
  store i64 %10, ptr %j, align 8, !tbaa !8
  br label %for.cond6

for.cond6:                                        ; preds = %for.inc27, %for.end
  %11 = load i64, ptr %j, align 8, !tbaa !8
  %12 = load ptr, ptr %offsets.addr, align 8, !tbaa !4
  %13 = load i64, ptr %b, align 8, !tbaa !8
  %add = add nsw i64 %13, 1
  %arrayidx7 = getelementptr inbounds i64, ptr %12, i64 %add
  %14 = load i64, ptr %arrayidx7, align 8, !tbaa !8
  %cmp8 = icmp slt i64 %11, %14
  br i1 %cmp8, label %for.body10, label %for.cond.cleanup9

for.cond.cleanup9:                                ; preds = %for.cond6
  store i32 8, ptr %cleanup.dest.slot, align 4
  call void @llvm.lifetime.end.p0(i64 8, ptr %j) #2
  br label %for.end29

for.body10:                                       ; preds = %for.cond6
  call void @llvm.lifetime.start.p0(i64 8, ptr %row) #2
  %15 = load ptr, ptr %table.addr, align 8, !tbaa !4
  %16 = load ptr, ptr %indices.addr, align 8, !tbaa !4
  %17 = load i64, ptr %j, align 8, !tbaa !8
  %arrayidx11 = getelementptr inbounds i64, ptr %16, i64 %17
  %18 = load i64, ptr %arrayidx11, align 8, !tbaa !8
  %mul12 = mul nsw i64 %18, 64
  %add.ptr13 = getelementptr inbounds float, ptr %15, i64 %mul12
  store ptr %add.ptr13, ptr %row, align 8, !tbaa !4
  call void @llvm.lifetime.start.p0(i64 4, ptr %k14) #2
  store i32 0, ptr %k14, align 4, !tbaa !10
  br label %for.cond15

for.cond15:                                       ; preds = %for.inc24, %for.body10
  %19 = load i32, ptr %k14, align 4, !tbaa !10
  %cmp16 = icmp slt i32 %19, 64
  br i1 %cmp16, label %for.body18, label %for.cond.cleanup17

for.cond.cleanup17:                               ; preds = %for.cond15
  store i32 11, ptr %cleanup.dest.slot, align 4
  call void @llvm.lifetime.end.p0(i64 4, ptr %k14) #2
  br label %for.end26

for.body18:                                       ; preds = %for.cond15
  %20 = load ptr, ptr %row, align 8, !tbaa !4
  %21 = load i32, ptr %k14, align 4, !tbaa !10
  %idxprom19 = sext i32 %21 to i64
  %arrayidx20 = getelementptr inbounds float, ptr %20, i64 %idxprom19
  %22 = load float, ptr %arrayidx20, align 4, !tbaa !12
  %23 = load ptr, ptr %o, align 8, !tbaa !4
  %24 = load i32, ptr %k14, align 4, !tbaa !10
  %idxprom21 = sext i32 %24 to i64
  %arrayidx22 = getelementptr inbounds float, ptr %23, i64 %idxprom21
  %25 = load float, ptr %arrayidx22, align 4, !tbaa !12
  %add23 = fadd float %25, %22
  store float %add23, ptr %arrayidx22, align 4, !tbaa !12
  br label %for.inc24

for.inc24:                                        ; preds = %for.body18
  %26 = load i32, ptr %k14, align 4, !tbaa !10
  %inc25 = add nsw i32 %26, 1
  store i32 %inc25, ptr %k14, align 4, !tbaa !10
  br label %for.cond15, !llvm.loop !16

for.end26:                                        ; preds = %for.cond.cleanup17
  call void @llvm.lifetime.end.p0(i64 8, ptr %row) #2
  br label %for.inc27

for.inc27:                                        ; preds = %for.end26
  %27 = load i64, ptr %j, align 8, !tbaa !8
  %inc28 = add nsw i64 %27, 1
  store i64 %inc28, ptr %j, align 8, !tbaa !8
  br label %for.cond6, !llvm.loop !17

for.end29:                                        ; preds = %for.cond.cleanup9
  call void @llvm.lifetime.end.p0(i64 8, ptr %o) #2
  br label %for.inc30

for.inc30:                                        ; preds = %for.end29
  %28 = load i64, ptr %b, align 8, !tbaa !8
  %inc31 = add nsw i64 %28, 1
  store i64 %inc31, ptr %b, align 8, !tbaa !8
  br label %for.cond, !llvm.loop !18

for.end32:                                        ; preds = %for.cond.cleanup
  ret void
}

; Function Attrs: nocallback nofree nosync nounwind willreturn memory(argmem: readwrite)
declare void @llvm.lifetime.start.p0(i64 immarg, ptr nocapture) #1

; Function Attrs: nocallback nofree nosync nounwind willreturn memory(argmem: readwrite)
declare void @llvm.lifetime.end.p0(i64 immarg, ptr nocapture) #1

attributes #0 = { nounwind uwtable "min-legal-vector-width"="0" "no-trapping-math"="true" "stack-protector-buffer-size"="8" }
attributes #1 = { nocallback nofree nosync nounwind willreturn memory(argmem: readwrite) }
attributes #2 = { nounwind }

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
!11 = !{!"int", !6, i64 0}
!12 = !{!13, !13, i64 0}
!13 = !{!"float", !6, i64 0}
!14 = distinct !{!14, !15}
!15 = !{!"llvm.loop.mustprogress"}
!16 = distinct !{!16, !15}
!17 = distinct !{!17, !15}
!18 = distinct !{!18, !15}
