; 2-D padding: a 3x3 pooling-style window over an H x W image with zero
; padding, unrolled as clang -O3 leaves it. Row checks (on r) split the row
; loop, column checks (on c) split the column loop: the column loop is split
; first, then the row loop around all three column loops; only the
; main x main column loop is left without any check.

; RUN: opt %loadaccel -passes=accel-masked-load -pass-remarks=accel-masked-load \
; RUN:   -S %s 2>%t.remarks | FileCheck %s
; RUN: FileCheck %s --check-prefix=REMARK --input-file=%t.remarks
; RUN: opt %loadaccel -passes=accel-masked-load -S %s | FileCheck %s --check-prefix=COUNT
; COUNT-COUNT-12: %accel.more{{[0-9.a-z]*}} = icmp ne i64
; COUNT-NOT:      %accel.more{{[0-9.a-z]*}} = icmp ne i64
; RUN: opt %loadaccel -passes='accel-masked-load<max-growth=100>' \
; RUN:   -pass-remarks-missed=accel-masked-load -disable-output %s 2>&1 \
; RUN:   | FileCheck %s --check-prefix=GROWTH

; REMARK: remark: {{.*}}loop split into 3 loops; the main loop runs without the range checks cm sge 0, cp slt w
; REMARK: remark: {{.*}}loop split into 3 loops; the main loop runs without the range checks rm sge 0, rp slt h

; GROWTH: remark: {{.*}}loop not split: the copies would add {{[0-9]+}} instructions, more than max-growth=100

; Nine column loops and three row loops, each with its own counter; the
; column loop of the main row loop that is itself the main column loop has no
; check left, and is vectorized afterwards.
; CHECK-LABEL: define void @pool3x3(
; CHECK:       col.main.main:
; CHECK-NOT:     icmp
; CHECK:         %accel.more{{[0-9.a-z]*}} = icmp ne i64
; CHECK-NEXT:    br i1 %accel.more{{[0-9.a-z]*}}, label %col.main.main,
; CHECK:       col.post.main:
; CHECK:         %cm.ok.post.main = icmp sge i64
; RUN: opt %loadaccel -mtriple=x86_64-unknown-linux-gnu -passes='accel-masked-load,loop-vectorize' \
; RUN:   -S %s | FileCheck %s --check-prefix=VEC
; VEC: col.main.main:
; VEC: vector.body:
define void @pool3x3(ptr noalias %out, ptr noalias %in, i64 %h, i64 %w) {
entry:
  %hpos = icmp sgt i64 %h, 0
  %wpos = icmp sgt i64 %w, 0
  %both = and i1 %hpos, %wpos
  br i1 %both, label %row, label %exit

row:
  %r = phi i64 [ 0, %entry ], [ %r.next, %row.latch ]
  %rm = add nsw i64 %r, -1
  %rp = add nsw i64 %r, 1
  %rm.ok = icmp sge i64 %rm, 0
  %rp.ok = icmp slt i64 %rp, %h
  %rowoff = mul nsw i64 %r, %w
  %rowoff.m = sub nsw i64 %rowoff, %w
  %rowoff.p = add nsw i64 %rowoff, %w
  br label %col

col:
  %c = phi i64 [ 0, %row ], [ %c.next, %col.latch ]
  %cm = add nsw i64 %c, -1
  %cp = add nsw i64 %c, 1
  %cm.ok = icmp sge i64 %cm, 0
  %cp.ok = icmp slt i64 %cp, %w
  ; center row: left, center, right
  %i.c = add nsw i64 %rowoff, %c
  %p.c = getelementptr inbounds float, ptr %in, i64 %i.c
  %v.c = load float, ptr %p.c, align 4
  br i1 %cm.ok, label %l, label %l.j
l:
  %i.l = add nsw i64 %i.c, -1
  %p.l = getelementptr inbounds float, ptr %in, i64 %i.l
  %v.l = load float, ptr %p.l, align 4
  br label %l.j
l.j:
  %s1 = phi float [ %v.l, %l ], [ 0.0, %col ]
  %a1 = fadd float %v.c, %s1
  br i1 %cp.ok, label %rr, label %rr.j
rr:
  %i.r = add nsw i64 %i.c, 1
  %p.r = getelementptr inbounds float, ptr %in, i64 %i.r
  %v.r = load float, ptr %p.r, align 4
  br label %rr.j
rr.j:
  %s2 = phi float [ %v.r, %rr ], [ 0.0, %l.j ]
  %a2 = fadd float %a1, %s2
  ; row above (center column only, for brevity)
  br i1 %rm.ok, label %up, label %up.j
up:
  %i.u = add nsw i64 %rowoff.m, %c
  %p.u = getelementptr inbounds float, ptr %in, i64 %i.u
  %v.u = load float, ptr %p.u, align 4
  br label %up.j
up.j:
  %s3 = phi float [ %v.u, %up ], [ 0.0, %rr.j ]
  %a3 = fadd float %a2, %s3
  ; row below
  br i1 %rp.ok, label %dn, label %col.latch
dn:
  %i.d = add nsw i64 %rowoff.p, %c
  %p.d = getelementptr inbounds float, ptr %in, i64 %i.d
  %v.d = load float, ptr %p.d, align 4
  br label %col.latch
col.latch:
  %s4 = phi float [ %v.d, %dn ], [ 0.0, %up.j ]
  %a4 = fadd float %a3, %s4
  %p.o = getelementptr inbounds float, ptr %out, i64 %i.c
  store float %a4, ptr %p.o, align 4
  %c.next = add nuw nsw i64 %c, 1
  %c.done = icmp eq i64 %c.next, %w
  br i1 %c.done, label %row.latch, label %col

row.latch:
  %r.next = add nuw nsw i64 %r, 1
  %r.done = icmp eq i64 %r.next, %h
  br i1 %r.done, label %exit, label %row

exit:
  ret void
}
