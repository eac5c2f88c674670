; Vector gathers: on targets with gathers the loop vectorizer turns a hash
; lookup `if (table[h(keys[i])].key == keys[i]) ...` into a wide load of the
; keys, vector arithmetic and llvm.masked.gather. The pointer vector is
; recomputed `d` vector iterations ahead (the wide load of the keys at the
; clamped iteration, the arithmetic cloned) and each of its lanes
; prefetched: 4 on AVX2, 8 on AVX-512, and on SVE the known minimum of a
; scalable vector. A gather whose pointers come from another gather is not
; followed (that would be a new gather at another iteration).

; RUN: opt %loadaccel -mtriple=x86_64-unknown-linux-gnu -mattr=+avx2 \
; RUN:   -passes='accel-prefetch<distance=8;min-work=0>' -S %s | FileCheck %s --check-prefix=AVX2
; RUN: opt %loadaccel -mtriple=x86_64-unknown-linux-gnu -mattr=+avx512f \
; RUN:   -passes='accel-prefetch<distance=8;min-work=0>' -S %s | FileCheck %s --check-prefix=AVX512
; RUN: %if aarch64-registered-target %{ opt %loadaccel -mtriple=aarch64-unknown-linux-gnu -mattr=+sve \
; RUN:   -passes='accel-prefetch<distance=8;min-work=0>' -S %s | FileCheck %s --check-prefix=SVE %}
; RUN: opt %loadaccel -mtriple=x86_64-unknown-linux-gnu -mattr=+avx512f \
; RUN:   -passes='accel-prefetch<distance=8;min-work=0>' -pass-remarks=accel-prefetch \
; RUN:   -pass-remarks-missed=accel-prefetch -disable-output %s 2>&1 | FileCheck %s --check-prefix=REMARK

; AVX2-LABEL: define i64 @lookup4(
; AVX2:       vector.body:
; AVX2:         %accel.step = call i64 @llvm.umin.i64(i64 %accel.left, i64 8)
; AVX2:         %k.ahead = load <4 x i64>, ptr
; AVX2:         %slot.ahead = getelementptr { i64, i64 }, ptr %table, <4 x i64>
; AVX2:         %accel.lane = extractelement <4 x ptr> %slot.ahead, i64 0
; AVX2-NEXT:    call void @llvm.prefetch.p0(ptr %accel.lane, i32 0, i32 3, i32 1)
; AVX2-COUNT-3: call void @llvm.prefetch.p0(
; AVX2-NOT:     call void @llvm.prefetch.p0(
; AVX2:         ret i64

; AVX512-LABEL: define i64 @lookup8(
; AVX512:       vector.body:
; AVX512:         %k.ahead = load <8 x i64>, ptr
; AVX512-COUNT-8: call void @llvm.prefetch.p0(
; AVX512-NOT:     call void @llvm.prefetch.p0(
; AVX512:         ret i64

; SVE-LABEL: define i64 @lookup_sve(
; SVE:       vector.body:
; SVE:         %k.ahead = load <vscale x 2 x i64>, ptr
; SVE:         extractelement <vscale x 2 x ptr> %slot.ahead, i64 0
; SVE-COUNT-2: call void @llvm.prefetch.p0(
; SVE-NOT:     call void @llvm.prefetch.p0(
; SVE:         ret i64

; REMARK: remark: {{.*}} prefetched the 4 lanes of a gather from table via keys, 8 vector iterations ahead
; REMARK: remark: {{.*}} prefetched the 8 lanes of a gather from table via keys, 8 vector iterations ahead
; REMARK: remark: {{.*}} prefetched the 2 lanes of a gather from table via keys, 8 vector iterations ahead
; REMARK: remark: {{.*}} not prefetching the lanes of a gather from T: cannot compute the addresses ahead: the address depends on a call
; REMARK: remark: {{.*}} prefetched the 8 lanes of a gather from B via keys, 8 vector iterations ahead

define i64 @lookup4(ptr noalias %table, ptr noalias %keys, i64 %n, i64 %shift) {
entry:
  %nvec = and i64 %n, -4
  %guard = icmp sgt i64 %nvec, 0
  br i1 %guard, label %ph, label %exit

ph:
  %s.ins = insertelement <4 x i64> poison, i64 %shift, i64 0
  %s.splat = shufflevector <4 x i64> %s.ins, <4 x i64> poison, <4 x i32> zeroinitializer
  br label %vector.body

vector.body:
  %index = phi i64 [ 0, %ph ], [ %index.next, %vector.body ]
  %acc = phi <4 x i64> [ zeroinitializer, %ph ], [ %acc.next, %vector.body ]
  %k.addr = getelementptr inbounds i64, ptr %keys, i64 %index
  %k = load <4 x i64>, ptr %k.addr, align 8
  %m = mul <4 x i64> %k, <i64 -7046029254386353131, i64 -7046029254386353131, i64 -7046029254386353131, i64 -7046029254386353131>
  %h = lshr <4 x i64> %m, %s.splat
  %slot = getelementptr inbounds { i64, i64 }, ptr %table, <4 x i64> %h
  %key = call <4 x i64> @llvm.masked.gather.v4i64.v4p0(<4 x ptr> %slot, i32 8, <4 x i1> <i1 true, i1 true, i1 true, i1 true>, <4 x i64> poison)
  %hit = icmp eq <4 x i64> %key, %k
  %val = select <4 x i1> %hit, <4 x i64> %k, <4 x i64> zeroinitializer
  %acc.next = add <4 x i64> %acc, %val
  %index.next = add nuw i64 %index, 4
  %done = icmp eq i64 %index.next, %nvec
  br i1 %done, label %exit.red, label %vector.body

exit.red:
  %r = call i64 @llvm.vector.reduce.add.v4i64(<4 x i64> %acc.next)
  br label %exit

exit:
  %sum = phi i64 [ 0, %entry ], [ %r, %exit.red ]
  ret i64 %sum
}

define i64 @lookup8(ptr noalias %table, ptr noalias %keys, i64 %n, i64 %shift) {
entry:
  %nvec = and i64 %n, -8
  %guard = icmp sgt i64 %nvec, 0
  br i1 %guard, label %ph, label %exit

ph:
  %s.ins = insertelement <8 x i64> poison, i64 %shift, i64 0
  %s.splat = shufflevector <8 x i64> %s.ins, <8 x i64> poison, <8 x i32> zeroinitializer
  br label %vector.body

vector.body:
  %index = phi i64 [ 0, %ph ], [ %index.next, %vector.body ]
  %acc = phi <8 x i64> [ zeroinitializer, %ph ], [ %acc.next, %vector.body ]
  %k.addr = getelementptr inbounds i64, ptr %keys, i64 %index
  %k = load <8 x i64>, ptr %k.addr, align 8
  %h = lshr <8 x i64> %k, %s.splat
  %slot = getelementptr inbounds { i64, i64 }, ptr %table, <8 x i64> %h
  %key = call <8 x i64> @llvm.masked.gather.v8i64.v8p0(<8 x ptr> %slot, i32 8, <8 x i1> <i1 true, i1 true, i1 true, i1 true, i1 true, i1 true, i1 true, i1 true>, <8 x i64> poison)
  %hit = icmp eq <8 x i64> %key, %k
  %val = select <8 x i1> %hit, <8 x i64> %k, <8 x i64> zeroinitializer
  %acc.next = add <8 x i64> %acc, %val
  %index.next = add nuw i64 %index, 8
  %done = icmp eq i64 %index.next, %nvec
  br i1 %done, label %exit.red, label %vector.body

exit.red:
  %r = call i64 @llvm.vector.reduce.add.v8i64(<8 x i64> %acc.next)
  br label %exit

exit:
  %sum = phi i64 [ 0, %entry ], [ %r, %exit.red ]
  ret i64 %sum
}

define i64 @lookup_sve(ptr noalias %table, ptr noalias %keys, i64 %nvec, i64 %shift) {
entry:
  %vs = call i64 @llvm.vscale.i64()
  %step = shl i64 %vs, 1
  %guard = icmp sgt i64 %nvec, 0
  br i1 %guard, label %ph, label %exit

ph:
  %s.ins = insertelement <vscale x 2 x i64> poison, i64 %shift, i64 0
  %s.splat = shufflevector <vscale x 2 x i64> %s.ins, <vscale x 2 x i64> poison, <vscale x 2 x i32> zeroinitializer
  %t.ins = insertelement <vscale x 2 x i1> poison, i1 true, i64 0
  %all = shufflevector <vscale x 2 x i1> %t.ins, <vscale x 2 x i1> poison, <vscale x 2 x i32> zeroinitializer
  br label %vector.body

vector.body:
  %iv = phi i64 [ 0, %ph ], [ %iv.next, %vector.body ]
  %acc = phi <vscale x 2 x i64> [ zeroinitializer, %ph ], [ %acc.next, %vector.body ]
  %index = mul i64 %iv, %step
  %k.addr = getelementptr inbounds i64, ptr %keys, i64 %index
  %k = load <vscale x 2 x i64>, ptr %k.addr, align 8
  %h = lshr <vscale x 2 x i64> %k, %s.splat
  %slot = getelementptr inbounds { i64, i64 }, ptr %table, <vscale x 2 x i64> %h
  %key = call <vscale x 2 x i64> @llvm.masked.gather.nxv2i64.nxv2p0(<vscale x 2 x ptr> %slot, i32 8, <vscale x 2 x i1> %all, <vscale x 2 x i64> poison)
  %hit = icmp eq <vscale x 2 x i64> %key, %k
  %val = select <vscale x 2 x i1> %hit, <vscale x 2 x i64> %k, <vscale x 2 x i64> zeroinitializer
  %acc.next = add <vscale x 2 x i64> %acc, %val
  %iv.next = add nuw i64 %iv, 1
  %done = icmp eq i64 %iv.next, %nvec
  br i1 %done, label %exit.red, label %vector.body

exit.red:
  %r = call i64 @llvm.vector.reduce.add.nxv2i64(<vscale x 2 x i64> %acc.next)
  br label %exit

exit:
  %sum = phi i64 [ 0, %entry ], [ %r, %exit.red ]
  ret i64 %sum
}

; T[B[keys[i]]] with B read by a gather: the gather from T would need that
; gather re-issued ahead.
define i64 @gather_of_gather(ptr noalias %T, ptr noalias %B, ptr noalias %keys, i64 %n) {
entry:
  %nvec = and i64 %n, -8
  %guard = icmp sgt i64 %nvec, 0
  br i1 %guard, label %vector.body, label %exit

vector.body:
  %index = phi i64 [ 0, %entry ], [ %index.next, %vector.body ]
  %acc = phi <8 x i64> [ zeroinitializer, %entry ], [ %acc.next, %vector.body ]
  %k.addr = getelementptr inbounds i64, ptr %keys, i64 %index
  %k = load <8 x i64>, ptr %k.addr, align 8
  %b.addr = getelementptr inbounds i64, ptr %B, <8 x i64> %k
  %b = call <8 x i64> @llvm.masked.gather.v8i64.v8p0(<8 x ptr> %b.addr, i32 8, <8 x i1> <i1 true, i1 true, i1 true, i1 true, i1 true, i1 true, i1 true, i1 true>, <8 x i64> poison)
  %t.addr = getelementptr inbounds i64, ptr %T, <8 x i64> %b
  %t = call <8 x i64> @llvm.masked.gather.v8i64.v8p0(<8 x ptr> %t.addr, i32 8, <8 x i1> <i1 true, i1 true, i1 true, i1 true, i1 true, i1 true, i1 true, i1 true>, <8 x i64> poison)
  %acc.next = add <8 x i64> %acc, %t
  %index.next = add nuw i64 %index, 8
  %done = icmp eq i64 %index.next, %nvec
  br i1 %done, label %exit.red, label %vector.body

exit.red:
  %r = call i64 @llvm.vector.reduce.add.v8i64(<8 x i64> %acc.next)
  br label %exit

exit:
  %sum = phi i64 [ 0, %entry ], [ %r, %exit.red ]
  ret i64 %sum
}

declare <4 x i64> @llvm.masked.gather.v4i64.v4p0(<4 x ptr>, i32, <4 x i1>, <4 x i64>)
declare <8 x i64> @llvm.masked.gather.v8i64.v8p0(<8 x ptr>, i32, <8 x i1>, <8 x i64>)
declare <vscale x 2 x i64> @llvm.masked.gather.nxv2i64.nxv2p0(<vscale x 2 x ptr>, i32, <vscale x 2 x i1>, <vscale x 2 x i64>)
declare i64 @llvm.vector.reduce.add.v4i64(<4 x i64>)
declare i64 @llvm.vector.reduce.add.v8i64(<8 x i64>)
declare i64 @llvm.vector.reduce.add.nxv2i64(<vscale x 2 x i64>)
declare i64 @llvm.vscale.i64()
