; The README's input for `opt` and `llvmaccel opt`: an embedding-bag sum,
; out[k] += T[B[i] * 64 + k] over the n indices B[i] (rows of 64 floats).
; The rows' addresses depend on loaded indices, which the hardware
; prefetcher cannot predict; accel-prefetch loads B[i + d] d iterations
; ahead (clamped to the last iteration) and prefetches that row.
define void @embedding_sum(ptr noalias %out, ptr noalias %T, ptr noalias %B, i64 %n) {
entry:
  %empty = icmp eq i64 %n, 0
  br i1 %empty, label %exit, label %loop

loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %latch ]
  %pb = getelementptr inbounds i64, ptr %B, i64 %i
  %b = load i64, ptr %pb
  %row = mul i64 %b, 64
  %prow = getelementptr inbounds float, ptr %T, i64 %row
  br label %inner

inner:
  %k = phi i64 [ 0, %loop ], [ %k.next, %inner ]
  %pt = getelementptr inbounds float, ptr %prow, i64 %k
  %t = load float, ptr %pt
  %po = getelementptr inbounds float, ptr %out, i64 %k
  %o = load float, ptr %po
  %s = fadd float %o, %t
  store float %s, ptr %po
  %k.next = add nuw nsw i64 %k, 1
  %kdone = icmp eq i64 %k.next, 64
  br i1 %kdone, label %latch, label %inner

latch:
  %i.next = add nuw i64 %i, 1
  %done = icmp eq i64 %i.next, %n
  br i1 %done, label %exit, label %loop

exit:
  ret void
}
