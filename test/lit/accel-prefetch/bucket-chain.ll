; Hash join with bucket chains (clang -O3 of
;   b = &buckets[(k & mask) >> shift];
;   do { for (j = 0; j < b->count; j++) if (b->tuples[j].key == k) ...;
;        b = b->next; } while (b);
; with 32-byte buckets). The bucket is first touched inside the chain loop,
; where its address is the header phi [%bucket, %probe], [%next, %chain.latch]:
; in the chain loop it is a loop-carried pointer. Seen from the probe loop the
; phi's first-iteration value &buckets[...] is an indirect access via keys[i],
; prefetched there `d` probes ahead. Its footprint is what the bucket's
; scalar accesses touch (count, the tuples, next: 32 bytes, one line), not
; the 256-byte window of the vectorized tuple loop, which runs only for long
; buckets.

; RUN: opt %loadaccel -passes='accel-prefetch<distance=8>' -S %s | FileCheck %s
; RUN: opt %loadaccel -passes='accel-prefetch<distance=8>' \
; RUN:   -pass-remarks=accel-prefetch -pass-remarks-missed=accel-prefetch \
; RUN:   -disable-output %s 2>&1 | FileCheck %s --check-prefix=REMARK

; CHECK-LABEL: define i64 @probe(
; CHECK:       probe:
; CHECK:         %accel.step = call i64 @llvm.umin.i64(i64 %accel.left, i64 8)
; CHECK-NEXT:    %accel.iter = add nuw i64 %i, %accel.step
; CHECK:         %k.ahead = load i32, ptr
; CHECK:         %[[B:.*]] = getelementptr i8, ptr %buckets, i64
; CHECK-NEXT:    call void @llvm.prefetch.p0(ptr %[[B]], i32 0, i32 3, i32 1)
; CHECK-NOT:     @llvm.prefetch
; CHECK:       chain:
; CHECK-NOT:     @llvm.prefetch
; CHECK:         ret i64

; REMARK: remark: {{.*}} prefetched buckets[...] via keys, 8 iterations ahead, 1 line
; REMARK-NOT: prefetched buckets

define i64 @probe(ptr noalias %buckets, i32 %mask, i32 %shift, ptr noalias %keys, i64 %n) {
entry:
  %guard = icmp sgt i64 %n, 0
  br i1 %guard, label %probe, label %exit

probe:
  %i = phi i64 [ 0, %entry ], [ %i.next, %probe.latch ]
  %sum = phi i64 [ 0, %entry ], [ %sum.chain, %probe.latch ]
  %k.addr = getelementptr inbounds nuw i32, ptr %keys, i64 %i
  %k = load i32, ptr %k.addr, align 4
  %masked = and i32 %k, %mask
  %h = lshr i32 %masked, %shift
  %h.ext = zext i32 %h to i64
  %bucket = getelementptr inbounds nuw { i32, i32, [2 x { i32, i32 }], ptr }, ptr %buckets, i64 %h.ext
  br label %chain

chain:
  %b = phi ptr [ %bucket, %probe ], [ %next, %chain.latch ]
  %sum.b = phi i64 [ %sum, %probe ], [ %sum.t, %chain.latch ]
  %count = load i32, ptr %b, align 8
  %empty = icmp eq i32 %count, 0
  br i1 %empty, label %chain.latch, label %tuples.ph

tuples.ph:
  %tuples = getelementptr inbounds nuw i8, ptr %b, i64 8
  %count.ext = zext i32 %count to i64
  br label %tuples.loop

; The vectorized tuple loop reads 64-byte windows of the bucket's tuples.
tuples.loop:
  %j = phi i64 [ 0, %tuples.ph ], [ %j.next, %tuples.loop ]
  %sum.j = phi i64 [ %sum.b, %tuples.ph ], [ %sum.j.next, %tuples.loop ]
  %t.addr = getelementptr inbounds nuw { i32, i32 }, ptr %tuples, i64 %j
  %w0 = load <16 x i32>, ptr %t.addr, align 8
  %t.addr1 = getelementptr inbounds nuw i8, ptr %t.addr, i64 64
  %w1 = load <16 x i32>, ptr %t.addr1, align 8
  %t.addr2 = getelementptr inbounds nuw i8, ptr %t.addr, i64 128
  %w2 = load <16 x i32>, ptr %t.addr2, align 8
  %t.addr3 = getelementptr inbounds nuw i8, ptr %t.addr, i64 192
  %w3 = load <16 x i32>, ptr %t.addr3, align 8
  %x0 = extractelement <16 x i32> %w0, i64 0
  %x1 = extractelement <16 x i32> %w1, i64 0
  %x2 = extractelement <16 x i32> %w2, i64 0
  %x3 = extractelement <16 x i32> %w3, i64 0
  %x01 = add i32 %x0, %x1
  %x23 = add i32 %x2, %x3
  %x = add i32 %x01, %x23
  %hit = icmp eq i32 %x, %k
  %x.ext = zext i32 %x to i64
  %add = select i1 %hit, i64 %x.ext, i64 0
  %sum.j.next = add i64 %sum.j, %add
  %j.next = add nuw nsw i64 %j, 32
  %more = icmp ult i64 %j.next, %count.ext
  br i1 %more, label %tuples.loop, label %tuples.done

tuples.done:
  %sum.tl = phi i64 [ %sum.j.next, %tuples.loop ]
  br label %chain.latch

chain.latch:
  %sum.t = phi i64 [ %sum.b, %chain ], [ %sum.tl, %tuples.done ]
  %next.addr = getelementptr inbounds nuw i8, ptr %b, i64 24
  %next = load ptr, ptr %next.addr, align 8
  %last = icmp eq ptr %next, null
  br i1 %last, label %probe.latch, label %chain

probe.latch:
  %sum.chain = phi i64 [ %sum.t, %chain.latch ]
  %i.next = add nuw nsw i64 %i, 1
  %done = icmp eq i64 %i.next, %n
  br i1 %done, label %exit, label %probe

exit:
  %r = phi i64 [ 0, %entry ], [ %sum.chain, %probe.latch ]
  ret i64 %r
}
