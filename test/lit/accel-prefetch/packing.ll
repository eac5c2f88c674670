; GEMM packing (reduced from the linear layer llvmaccel's matmul codegen
; emits for x @ W^T, W 1024 x 512 floats): each iteration copies a row
; segment of the weights, 4 KiB from the previous one, into a stack panel
; that the micro-kernel then reads for every row tile. The copy reads its
; source once, in row segments the hardware prefetcher follows: no strided
; prefetch (it cost 10% on an MLP). The same walk copying into memory that
; is not a local buffer is still prefetched. @pack_memcpy: the fused
; attention packs value rows with memcpy (here unrolled by 2: two 64-byte
; row segments, 1 KiB apart, 2 KiB per iteration), a packing copy as well.

; RUN: opt %loadaccel -passes='accel-prefetch' -pass-remarks=accel-prefetch \
; RUN:   -pass-remarks-missed=accel-prefetch -S %s -o %t.ll 2>&1 | FileCheck %s --check-prefix=REMARK
; RUN: FileCheck %s --input-file=%t.ll

; REMARK: remark: {{.*}} not prefetching w: a packing copy into panel reads its source once, in row segments the hardware prefetcher follows
; REMARK: remark: {{.*}} prefetched w with stride 4096 bytes, {{[0-9]+}} iterations ahead, 2 lines
; REMARK: remark: {{.*}} not prefetching v: a packing copy into stk reads its source once, in row segments the hardware prefetcher follows

; CHECK-LABEL: define void @pack(
; CHECK-NOT:   @llvm.prefetch
; CHECK-LABEL: define void @copy_out(
; CHECK-COUNT-2: call void @llvm.prefetch.p0(
; CHECK-NOT:   @llvm.prefetch
; CHECK:       ret void
; CHECK-LABEL: define void @pack_memcpy(
; CHECK-NOT:   call void @llvm.prefetch
; CHECK:       ret void

declare void @kernel(ptr)

define void @pack(ptr noalias readonly dereferenceable(2097152) %w, i64 %pc, i64 %j0) {
entry:
  %panel = alloca [8192 x float], align 64
  br label %rows

rows:
  %c = phi i64 [ 0, %entry ], [ %c.next, %rows ]
  %row = add nuw nsw i64 %j0, %c
  %row.off = shl nuw nsw i64 %row, 12
  %pc.off = shl nuw nsw i64 %pc, 2
  %off = add nuw nsw i64 %row.off, %pc.off
  %src = getelementptr inbounds nuw i8, ptr %w, i64 %off
  %v0 = load <16 x float>, ptr %src, align 4
  %src1 = getelementptr inbounds nuw i8, ptr %src, i64 64
  %v1 = load <16 x float>, ptr %src1, align 4
  %dst.off = shl nuw nsw i64 %c, 7
  %dst = getelementptr inbounds nuw i8, ptr %panel, i64 %dst.off
  store <16 x float> %v0, ptr %dst, align 64
  %dst1 = getelementptr inbounds nuw i8, ptr %dst, i64 64
  store <16 x float> %v1, ptr %dst1, align 64
  %c.next = add nuw nsw i64 %c, 1
  %done = icmp eq i64 %c.next, 32
  br i1 %done, label %exit, label %rows

exit:
  call void @kernel(ptr %panel)
  ret void
}

define void @copy_out(ptr noalias readonly dereferenceable(2097152) %w, i64 %pc, i64 %j0, ptr noalias %out) {
entry:
  br label %rows

rows:
  %c = phi i64 [ 0, %entry ], [ %c.next, %rows ]
  %row = add nuw nsw i64 %j0, %c
  %row.off = shl nuw nsw i64 %row, 12
  %pc.off = shl nuw nsw i64 %pc, 2
  %off = add nuw nsw i64 %row.off, %pc.off
  %src = getelementptr inbounds nuw i8, ptr %w, i64 %off
  %v0 = load <16 x float>, ptr %src, align 4
  %src1 = getelementptr inbounds nuw i8, ptr %src, i64 64
  %v1 = load <16 x float>, ptr %src1, align 4
  %dst.off = shl nuw nsw i64 %c, 7
  %dst = getelementptr inbounds nuw i8, ptr %out, i64 %dst.off
  store <16 x float> %v0, ptr %dst, align 64
  %dst1 = getelementptr inbounds nuw i8, ptr %dst, i64 64
  store <16 x float> %v1, ptr %dst1, align 64
  %c.next = add nuw nsw i64 %c, 1
  %done = icmp eq i64 %c.next, 32
  br i1 %done, label %exit, label %rows

exit:
  ret void
}

define void @pack_memcpy(ptr noalias readonly dereferenceable(2097152) %v) {
entry:
  %stk = alloca [4096 x float], align 64
  br label %rows

rows:
  %j = phi i64 [ 0, %entry ], [ %j.next, %rows ]
  %src.off = shl nuw nsw i64 %j, 11
  %src = getelementptr inbounds nuw i8, ptr %v, i64 %src.off
  %dst.off = shl nuw nsw i64 %j, 7
  %dst = getelementptr inbounds nuw i8, ptr %stk, i64 %dst.off
  call void @llvm.memcpy.p0.p0.i64(ptr align 64 %dst, ptr align 4 %src, i64 64, i1 false)
  %src1 = getelementptr inbounds nuw i8, ptr %src, i64 1024
  %dst1 = getelementptr inbounds nuw i8, ptr %dst, i64 64
  call void @llvm.memcpy.p0.p0.i64(ptr align 64 %dst1, ptr align 4 %src1, i64 64, i1 false)
  %j.next = add nuw nsw i64 %j, 1
  %done = icmp eq i64 %j.next, 128
  br i1 %done, label %exit, label %rows

exit:
  call void @kernel(ptr %stk)
  ret void
}

declare void @llvm.memcpy.p0.p0.i64(ptr, ptr, i64, i1)
