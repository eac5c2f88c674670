; CSR SpMV with int32 row pointers and int indices (HPCG, NAS CG), as
; clang -O3 leaves it: the row start is the phi of the previous iteration's
; rowptr[r + 1] load (%start), the inner loop is runtime-unrolled (a
; remainder loop, then the loop unrolled by 4) over [sext(start), sext(end)),
; and the guard of the row compares the narrow values (start <s end). The
; rows tile one index space all the same, so the unrolled loop's look-ahead
; runs across rows to the end of the nest.

; RUN: opt %loadaccel -passes='accel-prefetch<distance=8>' -pass-remarks=accel-prefetch \
; RUN:   -pass-remarks-missed=accel-prefetch -S %s -o %t.ll 2>&1 | FileCheck %s --check-prefix=REMARK
; RUN: FileCheck %s --input-file=%t.ll

; REMARK-NOT: do not tile
; REMARK-COUNT-4: remark: {{.*}} prefetched x[...] via cols, 8 iterations ahead, 1 line, across the iterations of the outer loop
; REMARK-NOT: do not tile

; The end of the nest, rowptr[n], is loaded once before the outer loop.
; CHECK-LABEL: define void @spmv32(
; CHECK:       for.body.preheader:
; CHECK:         %accel.nest.end = load i32, ptr
; CHECK:       for.body6:
; CHECK:         call i64 @llvm.umin.i64(i64 %accel.left
; CHECK-COUNT-4: call void @llvm.prefetch.p0(
; CHECK-NOT:     call void @llvm.prefetch.p0(
; CHECK:         br i1

define void @spmv32(i32 %n, ptr noalias %rowptr, ptr noalias %cols, ptr noalias %vals, ptr noalias %x, ptr noalias %y) {
entry:
  %cmp31 = icmp sgt i32 %n, 0
  br i1 %cmp31, label %for.body.preheader, label %for.cond.cleanup

for.body.preheader:
  %wide.trip.count37 = zext nneg i32 %n to i64
  %.pre = load i32, ptr %rowptr, align 4
  br label %for.body

for.cond.cleanup:
  ret void

for.body:
  %start = phi i32 [ %.pre, %for.body.preheader ], [ %end, %for.cond.cleanup5 ]
  %indvars.iv34 = phi i64 [ 0, %for.body.preheader ], [ %indvars.iv.next35, %for.cond.cleanup5 ]
  %indvars.iv.next35 = add nuw nsw i64 %indvars.iv34, 1
  %arrayidx3 = getelementptr inbounds nuw i32, ptr %rowptr, i64 %indvars.iv.next35
  %end = load i32, ptr %arrayidx3, align 4
  %cmp427 = icmp slt i32 %start, %end
  br i1 %cmp427, label %for.body6.preheader, label %for.cond.cleanup5

for.body6.preheader:
  %start.ext = sext i32 %start to i64
  %wide.trip.count = sext i32 %end to i64
  %len = sub nsw i64 %wide.trip.count, %start.ext
  %xtraiter = and i64 %len, 3
  %lcmp.mod.not = icmp eq i64 %xtraiter, 0
  br i1 %lcmp.mod.not, label %for.body6.prol.loopexit, label %for.body6.prol

for.body6.prol:
  %indvars.iv.prol = phi i64 [ %indvars.iv.next.prol, %for.body6.prol ], [ %start.ext, %for.body6.preheader ]
  %s.028.prol = phi double [ %v7, %for.body6.prol ], [ 0.000000e+00, %for.body6.preheader ]
  %prol.iter = phi i64 [ %prol.iter.next, %for.body6.prol ], [ 0, %for.body6.preheader ]
  %arrayidx8.prol = getelementptr inbounds double, ptr %vals, i64 %indvars.iv.prol
  %v4 = load double, ptr %arrayidx8.prol, align 8
  %arrayidx10.prol = getelementptr inbounds i32, ptr %cols, i64 %indvars.iv.prol
  %v5 = load i32, ptr %arrayidx10.prol, align 4
  %idxprom11.prol = sext i32 %v5 to i64
  %arrayidx12.prol = getelementptr inbounds double, ptr %x, i64 %idxprom11.prol
  %v6 = load double, ptr %arrayidx12.prol, align 8
  %v7 = tail call double @llvm.fmuladd.f64(double %v4, double %v6, double %s.028.prol)
  %indvars.iv.next.prol = add nsw i64 %indvars.iv.prol, 1
  %prol.iter.next = add i64 %prol.iter, 1
  %prol.iter.cmp.not = icmp eq i64 %prol.iter.next, %xtraiter
  br i1 %prol.iter.cmp.not, label %for.body6.prol.loopexit, label %for.body6.prol

for.body6.prol.loopexit:
  %.lcssa.unr = phi double [ poison, %for.body6.preheader ], [ %v7, %for.body6.prol ]
  %indvars.iv.unr = phi i64 [ %start.ext, %for.body6.preheader ], [ %indvars.iv.next.prol, %for.body6.prol ]
  %s.028.unr = phi double [ 0.000000e+00, %for.body6.preheader ], [ %v7, %for.body6.prol ]
  %v8 = sub nsw i64 %start.ext, %wide.trip.count
  %v9 = icmp ugt i64 %v8, -4
  br i1 %v9, label %for.cond.cleanup5, label %for.body6

for.cond.cleanup5:
  %s.0.lcssa = phi double [ 0.000000e+00, %for.body ], [ %.lcssa.unr, %for.body6.prol.loopexit ], [ %v25, %for.body6 ]
  %arrayidx14 = getelementptr inbounds nuw double, ptr %y, i64 %indvars.iv34
  store double %s.0.lcssa, ptr %arrayidx14, align 8
  %exitcond38.not = icmp eq i64 %indvars.iv.next35, %wide.trip.count37
  br i1 %exitcond38.not, label %for.cond.cleanup, label %for.body

for.body6:
  %indvars.iv = phi i64 [ %indvars.iv.next.3, %for.body6 ], [ %indvars.iv.unr, %for.body6.prol.loopexit ]
  %s.028 = phi double [ %v25, %for.body6 ], [ %s.028.unr, %for.body6.prol.loopexit ]
  %arrayidx8 = getelementptr inbounds double, ptr %vals, i64 %indvars.iv
  %v10 = load double, ptr %arrayidx8, align 8
  %arrayidx10 = getelementptr inbounds i32, ptr %cols, i64 %indvars.iv
  %v11 = load i32, ptr %arrayidx10, align 4
  %idxprom11 = sext i32 %v11 to i64
  %arrayidx12 = getelementptr inbounds double, ptr %x, i64 %idxprom11
  %v12 = load double, ptr %arrayidx12, align 8
  %v13 = tail call double @llvm.fmuladd.f64(double %v10, double %v12, double %s.028)
  %indvars.iv.next = add nsw i64 %indvars.iv, 1
  %arrayidx8.1 = getelementptr inbounds double, ptr %vals, i64 %indvars.iv.next
  %v14 = load double, ptr %arrayidx8.1, align 8
  %arrayidx10.1 = getelementptr inbounds i32, ptr %cols, i64 %indvars.iv.next
  %v15 = load i32, ptr %arrayidx10.1, align 4
  %idxprom11.1 = sext i32 %v15 to i64
  %arrayidx12.1 = getelementptr inbounds double, ptr %x, i64 %idxprom11.1
  %v16 = load double, ptr %arrayidx12.1, align 8
  %v17 = tail call double @llvm.fmuladd.f64(double %v14, double %v16, double %v13)
  %indvars.iv.next.1 = add nsw i64 %indvars.iv, 2
  %arrayidx8.2 = getelementptr inbounds double, ptr %vals, i64 %indvars.iv.next.1
  %v18 = load double, ptr %arrayidx8.2, align 8
  %arrayidx10.2 = getelementptr inbounds i32, ptr %cols, i64 %indvars.iv.next.1
  %v19 = load i32, ptr %arrayidx10.2, align 4
  %idxprom11.2 = sext i32 %v19 to i64
  %arrayidx12.2 = getelementptr inbounds double, ptr %x, i64 %idxprom11.2
  %v20 = load double, ptr %arrayidx12.2, align 8
  %v21 = tail call double @llvm.fmuladd.f64(double %v18, double %v20, double %v17)
  %indvars.iv.next.2 = add nsw i64 %indvars.iv, 3
  %arrayidx8.3 = getelementptr inbounds double, ptr %vals, i64 %indvars.iv.next.2
  %v22 = load double, ptr %arrayidx8.3, align 8
  %arrayidx10.3 = getelementptr inbounds i32, ptr %cols, i64 %indvars.iv.next.2
  %v23 = load i32, ptr %arrayidx10.3, align 4
  %idxprom11.3 = sext i32 %v23 to i64
  %arrayidx12.3 = getelementptr inbounds double, ptr %x, i64 %idxprom11.3
  %v24 = load double, ptr %arrayidx12.3, align 8
  %v25 = tail call double @llvm.fmuladd.f64(double %v22, double %v24, double %v21)
  %indvars.iv.next.3 = add nsw i64 %indvars.iv, 4
  %exitcond.not.3 = icmp eq i64 %indvars.iv.next.3, %wide.trip.count
  br i1 %exitcond.not.3, label %for.cond.cleanup5, label %for.body6
}
