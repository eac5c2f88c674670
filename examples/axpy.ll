; The README's Python example: y[i] = a * x[i] + y[i] (@axpy), and the
; embedding-bag sum of in.ll (@embedding_sum) with rows of 256 floats, where
; accel-prefetch fires for the host too (wide vectors leave a 64-float row
; too little work per access).
define void @axpy(ptr noalias %y, ptr noalias %x, float %a, i64 %n) {
entry:
  %empty = icmp eq i64 %n, 0
  br i1 %empty, label %exit, label %loop

loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %loop ]
  %px = getelementptr inbounds float, ptr %x, i64 %i
  %py = getelementptr inbounds float, ptr %y, i64 %i
  %vx = load float, ptr %px
  %vy = load float, ptr %py
  %m = fmul float %vx, %a
  %s = fadd float %m, %vy
  store float %s, ptr %py
  %i.next = add nuw i64 %i, 1
  %done = icmp eq i64 %i.next, %n
  br i1 %done, label %exit, label %loop

exit:
  ret void
}

define void @embedding_sum(ptr noalias %out, ptr noalias %T, ptr noalias %B, i64 %n) {
entry:
  %empty = icmp eq i64 %n, 0
  br i1 %empty, label %exit, label %loop

loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %latch ]
  %pb = getelementptr inbounds i64, ptr %B, i64 %i
  %b = load i64, ptr %pb
  %row = mul i64 %b, 256
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
  %kdone = icmp eq i64 %k.next, 256
  br i1 %kdone, label %latch, label %inner

latch:
  %i.next = add nuw i64 %i, 1
  %done = icmp eq i64 %i.next, %n
  br i1 %done, label %exit, label %loop

exit:
  ret void
}
