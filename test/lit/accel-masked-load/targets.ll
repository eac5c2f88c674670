; Gathers with a default (fill-mode take): the index comes from an index
; array, so no split can help. Where the target has masked gathers (x86-64
; with AVX-512, AArch64 with SVE) the guarded load is left to the loop
; vectorizer, which makes the check the mask of llvm.masked.gather; elsewhere
; (generic x86-64, AArch64 without SVE) it becomes an unconditional load of
; x[clamp(j, 0, n-1)] where x is known to hold n elements (an llvm.assume
; "dereferenceable" bundle, or dereferenceable bytes with n bounded by them);
; elsewhere it is left alone, since a bound check says nothing of the
; object's size. A guarded store through an index array becomes a masked
; scatter or stays as it is, never an unconditional store.

; REQUIRES: x86-registered-target, aarch64-registered-target
; RUN: opt %loadaccel -mtriple=x86_64-unknown-linux-gnu -passes=accel-masked-load \
; RUN:   -pass-remarks=accel-masked-load -pass-remarks-missed=accel-masked-load -S %s 2>%t.x86 \
; RUN:   | FileCheck %s --check-prefix=CLAMP
; RUN: FileCheck %s --check-prefix=REMARK-CLAMP --input-file=%t.x86
; RUN: opt %loadaccel -mtriple=x86_64-unknown-linux-gnu -mattr=+avx512f -passes=accel-masked-load \
; RUN:   -pass-remarks=accel-masked-load -pass-remarks-missed=accel-masked-load -S %s 2>%t.avx512 \
; RUN:   | FileCheck %s --check-prefix=KEEP
; RUN: FileCheck %s --check-prefix=REMARK-MASKED --input-file=%t.avx512
; RUN: opt %loadaccel -mtriple=aarch64-unknown-linux-gnu -passes=accel-masked-load \
; RUN:   -S %s | FileCheck %s --check-prefix=CLAMP
; RUN: opt %loadaccel -mtriple=aarch64-unknown-linux-gnu -mattr=+sve -passes=accel-masked-load \
; RUN:   -pass-remarks=accel-masked-load -S %s 2>%t.sve | FileCheck %s --check-prefix=KEEP
; RUN: FileCheck %s --check-prefix=REMARK-MASKED --input-file=%t.sve
; no-masked: clamp even where masked gathers exist.
; RUN: opt %loadaccel -mtriple=x86_64-unknown-linux-gnu -mattr=+avx512f \
; RUN:   -passes='accel-masked-load<no-masked>' -S %s | FileCheck %s --check-prefix=CLAMP
; no-clamp and no masked gathers: left alone.
; RUN: opt %loadaccel -mtriple=x86_64-unknown-linux-gnu -passes='accel-masked-load<no-clamp>' \
; RUN:   -pass-remarks-missed=accel-masked-load -S %s 2>%t.noclamp | FileCheck %s --check-prefix=KEEP
; RUN: FileCheck %s --check-prefix=REMARK-NOCLAMP --input-file=%t.noclamp
; The vectorizer then vectorizes the clamped gathers where the target has
; plain gathers but no masked ones (AVX2 on Haswell), and the guarded ones
; as masked gathers with AVX-512:
; RUN: opt %loadaccel -mtriple=x86_64-unknown-linux-gnu -mcpu=haswell \
; RUN:   -passes='accel-masked-load,loop-vectorize' \
; RUN:   -pass-remarks=loop-vectorize -disable-output %s 2>&1 | FileCheck %s --check-prefix=VEC
; RUN: opt %loadaccel -mtriple=x86_64-unknown-linux-gnu -mattr=+avx512f \
; RUN:   -passes='accel-masked-load,loop-vectorize' -S %s | FileCheck %s --check-prefix=MASKED
; Without the pass, Haswell vectorizes one of the three loops:
; RUN: opt -mtriple=x86_64-unknown-linux-gnu -mcpu=haswell -passes=loop-vectorize \
; RUN:   -pass-remarks=loop-vectorize -disable-output %s 2>&1 | FileCheck %s --check-prefix=NOVEC

; REMARK-CLAMP-COUNT-2: remark: {{.*}}guarded gather made unconditional: loads x[clamp(j, 0, n-1)] and keeps the default when the check fails{{$}}
; REMARK-CLAMP: remark: {{.*}}guarded store with a non-affine index left alone: a store is only rewritten to a masked store or by splitting, and the target has no masked scatter
; REMARK-CLAMP: remark: {{.*}}guarded gather made unconditional: loads x[clamp(j, 0, n-1)] and keeps the default when the check fails{{$}}
; REMARK-CLAMP-COUNT-2: remark: {{.*}}guarded gather left alone: x is not known to hold n elements, so x[clamp(j, 0, n-1)] could read past it (give x dereferenceable bytes with n bounded by them, or an llvm.assume "dereferenceable" bundle of n * size bytes)
; REMARK-MASKED: remark: {{.*}}guarded load left to the loop vectorizer: the target has masked gathers, the check becomes their mask
; REMARK-MASKED: remark: {{.*}}guarded load left to the loop vectorizer: the target has masked gathers, the check becomes their mask
; REMARK-MASKED: remark: {{.*}}guarded store left to the loop vectorizer: the target has masked scatters, the check becomes their mask
; REMARK-MASKED: remark: {{.*}}guarded load left to the loop vectorizer: the target has masked gathers, the check becomes their mask
; REMARK-MASKED: remark: {{.*}}guarded load left to the loop vectorizer: the target has masked gathers, the check becomes their mask
; REMARK-NOCLAMP: remark: {{.*}}guarded gather left alone: no-clamp was given and the target has no masked gather

; VEC-COUNT-5: remark: {{.*}}vectorized loop
; VEC-NOT: vectorized loop
; NOVEC-COUNT-1: remark: {{.*}}vectorized loop
; NOVEC-NOT: vectorized loop
; MASKED-COUNT-4: call <{{[0-9]+}} x float> @llvm.masked.gather.v{{[0-9]+}}f32.v{{[0-9]+}}p0(
; MASKED: call void @llvm.masked.scatter.v{{[0-9]+}}f32.v{{[0-9]+}}p0(

; y[i] = (0 <= idx[i] < n) ? x[idx[i]] : 0, x of 1024 elements and
; n <= 1024 (n may be <= 0: x[0] is there all the same; where only a
; bundle of n * size bytes says what x holds, a stack slot stands in for x
; then, extent-bundle.ll).
; CLAMP-LABEL: define void @take_fill(
; CLAMP-NOT:     alloca
; CLAMP:       loop:
; CLAMP:         %ok = and i1 %lo, %hi
; CLAMP-NEXT:    [[MAX:%.*]] = call i32 @llvm.smax.i32(i32 %n, i32 1)
; CLAMP-NEXT:    %accel.last = sub i32 [[MAX]], 1
; CLAMP-NEXT:    [[LO:%.*]] = call i32 @llvm.smax.i32(i32 %j, i32 0)
; CLAMP-NEXT:    %accel.clamp = call i32 @llvm.smin.i32(i32 [[LO]], i32 %accel.last)
; CLAMP-NEXT:    [[EXT:%.*]] = zext i32 %accel.clamp to i64
; CLAMP-NEXT:    %accel.addr = getelementptr inbounds float, ptr %x, i64 [[EXT]]
; CLAMP-NEXT:    %accel.load = load float, ptr %accel.addr, align 4
; CLAMP-NEXT:    br i1 %ok, label %then, label %latch
; CLAMP:       then:
; CLAMP-NEXT:    br label %latch
; CLAMP:       latch:
; CLAMP-NEXT:    %r = phi float [ %accel.load, %then ], [ 0.000000e+00, %loop ]
; KEEP-LABEL: define void @take_fill(
; KEEP:        then:
; KEEP-NEXT:     %jx = sext i32 %j to i64
; KEEP-NEXT:     %px = getelementptr inbounds float, ptr %x, i64 %jx
; KEEP-NEXT:     %v = load float, ptr %px, align 4
define void @take_fill(ptr noalias %y, ptr noalias dereferenceable(4096) %x, ptr noalias %idx, i32 %n, i64 %m) {
entry:
  %fits = icmp sle i32 %n, 1024
  call void @llvm.assume(i1 %fits)
  br label %loop

loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %latch ]
  %pi = getelementptr inbounds i32, ptr %idx, i64 %i
  %j = load i32, ptr %pi, align 4
  %lo = icmp sge i32 %j, 0
  %hi = icmp slt i32 %j, %n
  %ok = and i1 %lo, %hi
  br i1 %ok, label %then, label %latch

then:
  %jx = sext i32 %j to i64
  %px = getelementptr inbounds float, ptr %x, i64 %jx
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

; The unsigned check, with n > 0 known at the loop entry and n <= 1024 by
; its mask, x dereferenceable for 4 KiB: x itself is safe to read at x[0],
; no slot is needed.
; CLAMP-LABEL: define void @take_fill_unsigned(
; CLAMP-NOT:     alloca
; CLAMP:         %accel.clamp = call i64 @llvm.umin.i64(i64 %j, i64 %accel.last)
; CLAMP-NEXT:    %accel.addr = getelementptr inbounds float, ptr %x, i64 %accel.clamp
; CLAMP-NEXT:    %accel.load = load float, ptr %accel.addr, align 4
define void @take_fill_unsigned(ptr noalias %y, ptr noalias dereferenceable(4096) %x, ptr noalias %idx, i64 %n.any, i64 %m) {
entry:
  %n = and i64 %n.any, 1023
  %nonempty = icmp sgt i64 %n, 0
  br i1 %nonempty, label %loop, label %exit

loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %latch ]
  %pi = getelementptr inbounds i64, ptr %idx, i64 %i
  %j = load i64, ptr %pi, align 8
  %in = icmp ult i64 %j, %n
  br i1 %in, label %then, label %latch

then:
  %px = getelementptr inbounds float, ptr %x, i64 %j
  %v = load float, ptr %px, align 4
  br label %latch

latch:
  %r = phi float [ %v, %then ], [ -1.0, %loop ]
  %py = getelementptr inbounds float, ptr %y, i64 %i
  store float %r, ptr %py, align 4
  %i.next = add nuw nsw i64 %i, 1
  %done = icmp eq i64 %i.next, %m
  br i1 %done, label %exit, label %loop

exit:
  ret void
}

; A guarded scatter: y[idx[i]] = x[i] when idx[i] is in range.
; CLAMP-LABEL: define void @scatter_guarded(
; CLAMP:       then:
; CLAMP-NEXT:    %py = getelementptr inbounds float, ptr %y, i64 %j
; CLAMP-NEXT:    store float %v, ptr %py, align 4
define void @scatter_guarded(ptr noalias %y, ptr noalias %x, ptr noalias %idx, i64 %n, i64 %m) {
entry:
  br label %loop

loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %latch ]
  %pi = getelementptr inbounds i64, ptr %idx, i64 %i
  %j = load i64, ptr %pi, align 8
  %px = getelementptr inbounds float, ptr %x, i64 %i
  %v = load float, ptr %px, align 4
  %in = icmp ult i64 %j, %n
  br i1 %in, label %then, label %latch

then:
  %py = getelementptr inbounds float, ptr %y, i64 %j
  store float %v, ptr %py, align 4
  br label %latch

latch:
  %i.next = add nuw nsw i64 %i, 1
  %done = icmp eq i64 %i.next, %m
  br i1 %done, label %exit, label %loop

exit:
  ret void
}

; The unsigned check, n <= 1024 by an assume and nothing known of n > 0.
; CLAMP-LABEL: define void @take_fill_unsigned_any(
; CLAMP-NOT:     alloca
; CLAMP:         %accel.clamp = call i64 @llvm.umin.i64(i64 %j, i64 %accel.last)
; CLAMP-NEXT:    %accel.addr = getelementptr inbounds float, ptr %x, i64 %accel.clamp
define void @take_fill_unsigned_any(ptr noalias %y, ptr noalias dereferenceable(4096) %x, ptr noalias %idx, i64 %n, i64 %m) {
entry:
  %fits = icmp ule i64 %n, 1024
  call void @llvm.assume(i1 %fits)
  br label %loop

loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %latch ]
  %pi = getelementptr inbounds i64, ptr %idx, i64 %i
  %j = load i64, ptr %pi, align 8
  %in = icmp ult i64 %j, %n
  br i1 %in, label %then, label %latch

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

; Nothing says x holds n elements: a program may check against a bound larger
; than x and never reach its end, so x[clamp(j, 0, n-1)] could read past it.
; Left alone.
; CLAMP-LABEL: define void @take_fill_no_extent(
; CLAMP-NOT:     alloca
; CLAMP:       then:
; CLAMP-NEXT:    %px = getelementptr inbounds float, ptr %x, i64 %j
; CLAMP-NEXT:    %v = load float, ptr %px, align 4
define void @take_fill_no_extent(ptr noalias %y, ptr noalias %x, ptr noalias %idx, i64 %n, i64 %m) {
entry:
  br label %loop

loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %latch ]
  %pi = getelementptr inbounds i64, ptr %idx, i64 %i
  %j = load i64, ptr %pi, align 8
  %in = icmp ult i64 %j, %n
  br i1 %in, label %then, label %latch

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

; x dereferenceable for 4 KiB, but n not bounded by it: left alone too.
; CLAMP-LABEL: define void @take_fill_unbounded(
; CLAMP:       then:
; CLAMP-NEXT:    %jx = zext i32 %j to i64
; CLAMP-NEXT:    %px = getelementptr inbounds float, ptr %x, i64 %jx
; CLAMP-NEXT:    %v = load float, ptr %px, align 4
define void @take_fill_unbounded(ptr noalias %y, ptr noalias dereferenceable(4096) %x, ptr noalias %idx, i32 %n, i64 %m) {
entry:
  br label %loop

loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %latch ]
  %pi = getelementptr inbounds i32, ptr %idx, i64 %i
  %j = load i32, ptr %pi, align 4
  %out = icmp uge i32 %j, %n
  br i1 %out, label %latch, label %then

then:
  %jx = zext i32 %j to i64
  %px = getelementptr inbounds float, ptr %x, i64 %jx
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

declare void @llvm.assume(i1)

; n <= 1024 by an assume (as `__builtin_assume(n <= 1024)` with a
; `float x[static 1024]` parameter gives it): clamped.
; CLAMP-LABEL: define void @take_fill_assumed_bound(
; CLAMP:         %accel.clamp = call i32 @llvm.smin.i32(
define void @take_fill_assumed_bound(ptr noalias %y, ptr noalias dereferenceable(4096) %x, ptr noalias %idx, i32 %n, i64 %m) {
entry:
  %small = icmp sle i32 %n, 1024
  call void @llvm.assume(i1 %small)
  br label %loop

loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %latch ]
  %pi = getelementptr inbounds i32, ptr %idx, i64 %i
  %j = load i32, ptr %pi, align 4
  %lo = icmp sge i32 %j, 0
  %hi = icmp slt i32 %j, %n
  %ok = and i1 %lo, %hi
  br i1 %ok, label %then, label %latch

then:
  %jx = sext i32 %j to i64
  %px = getelementptr inbounds float, ptr %x, i64 %jx
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
