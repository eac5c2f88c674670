; Execution: the kernels give the same results, bit for bit, before the
; pass, after it alone, and after default<O3> with the plugin (no kernel has
; a fast-math flag, so nothing may be reassociated). Every input ends right
; before a PROT_NONE guard page, and the trip counts cover 0, 1, odd, a
; vector step and more.

; REQUIRES: lli, host-x86_64
; RUN: %lli %s > %t.before
; RUN: opt %loadaccel -passes=accel-phi-decompose %s -o %t.pass.bc
; RUN: %lli %t.pass.bc > %t.pass
; RUN: diff %t.before %t.pass
; RUN: opt %loadaccel -passes='default<O3>' %s -o %t.o3.bc
; RUN: %lli %t.o3.bc > %t.o3
; RUN: diff %t.before %t.o3
; RUN: FileCheck %s --input-file=%t.before
; Idempotent on all of them: a second run changes nothing.
; RUN: opt %loadaccel -passes=accel-phi-decompose -S < %s > %t.once.ll
; RUN: opt %loadaccel -passes=accel-phi-decompose -S < %t.once.ll > %t.twice.ll
; RUN: diff %t.once.ll %t.twice.ll
; The kernels really were split:
; RUN: opt %loadaccel -passes=accel-phi-decompose -S %s | FileCheck %s --check-prefix=IR

; CHECK-COUNT-6: n={{[0-9]+}} csum=
; CHECK: scale=
; IR-NOT: phi {
; IR-NOT: phi [
; IR: @llvm.assume

@fmt = private constant [73 x i8] c"n=%lld csum=%a,%a cmax=%a,%a nest=%a,%a desc=%a four=%lld sel=%lld v=%a\0A\00"
@fmt.scale = private constant [18 x i8] c"scale=%a,%a,%lld\0A\00"
@logged = internal global i64 0

declare ptr @mmap(ptr, i64, i32, i32, i32, i64)
declare i32 @mprotect(ptr, i64, i32)
declare i32 @printf(ptr, ...)

; %bytes (at most 60 KiB) of pseudo-random floats in [-1, 1), ending at a
; guard page.
define internal ptr @guarded_floats(i64 %count, i64 %seed) {
entry:
  %p = call ptr @mmap(ptr null, i64 65536, i32 3, i32 34, i32 -1, i64 0)
  %guard = getelementptr i8, ptr %p, i64 61440
  %r = call i32 @mprotect(ptr %guard, i64 4096, i32 0)
  %bytes = shl i64 %count, 2
  %neg = sub i64 0, %bytes
  %base = getelementptr i8, ptr %guard, i64 %neg
  %any = icmp eq i64 %count, 0
  br i1 %any, label %exit, label %loop

loop:
  %k = phi i64 [ 0, %entry ], [ %k.next, %loop ]
  %s = phi i64 [ %seed, %entry ], [ %s.next, %loop ]
  %m = mul i64 %s, 6364136223846793005
  %s.next = add i64 %m, 1442695040888963407
  %hi = lshr i64 %s.next, 40
  %f = uitofp i64 %hi to float
  %f1 = fmul float %f, 0x3E80000000000000
  %f2 = fsub float %f1, 1.0
  %addr = getelementptr inbounds float, ptr %base, i64 %k
  store float %f2, ptr %addr, align 4
  %k.next = add nuw nsw i64 %k, 1
  %done = icmp eq i64 %k.next, %count
  br i1 %done, label %exit, label %loop

exit:
  ret ptr %base
}

define internal void @run(i64 %n) {
entry:
  %n2 = shl i64 %n, 1
  %a = call ptr @guarded_floats(i64 %n2, i64 %n)
  %n4 = shl i64 %n, 2
  %v = call ptr @guarded_floats(i64 %n4, i64 7)
  %cs = call { float, float } @csum(ptr %a, i64 %n)
  %cm = call { float, float } @cmax(ptr %a, i64 %n)
  %rows = add i64 %n, 1
  %cols = udiv i64 %n2, %rows
  %ns = call { float, float } @nest(ptr %a, i64 %rows, i64 %cols)
  %ds = call float @descriptor(ptr %a, i64 %n2, i64 %n)
  %init0 = insertvalue { i32, float, i64, double } poison, i32 3, 0
  %init1 = insertvalue { i32, float, i64, double } %init0, float 0.5, 1
  %init2 = insertvalue { i32, float, i64, double } %init1, i64 %n, 2
  %init = insertvalue { i32, float, i64, double } %init2, double 1.5, 3
  %fo = call i64 @four_fields({ i32, float, i64, double } %init, i64 %n)
  %odd = trunc i64 %n to i1
  %x0 = insertvalue { i64, i64 } poison, i64 %n, 0
  %x = insertvalue { i64, i64 } %x0, i64 5, 1
  %se = call i64 @select_alone(i1 %odd, { i64, i64 } %x, i64 3, i64 %n2)
  %vs = call float @sum4(ptr %v, i64 %n)
  %cs.r = extractvalue { float, float } %cs, 0
  %cs.i = extractvalue { float, float } %cs, 1
  %cm.r = extractvalue { float, float } %cm, 0
  %cm.i = extractvalue { float, float } %cm, 1
  %ns.r = extractvalue { float, float } %ns, 0
  %ns.i = extractvalue { float, float } %ns, 1
  %d1 = fpext float %cs.r to double
  %d2 = fpext float %cs.i to double
  %d3 = fpext float %cm.r to double
  %d4 = fpext float %cm.i to double
  %d5 = fpext float %ns.r to double
  %d6 = fpext float %ns.i to double
  %d7 = fpext float %ds to double
  %d8 = fpext float %vs to double
  %pr = call i32 (ptr, ...) @printf(ptr @fmt, i64 %n, double %d1, double %d2, double %d3, double %d4,
                                    double %d5, double %d6, double %d7, i64 %fo, i64 %se, double %d8)
  ret void
}

define i32 @main() {
  call void @run(i64 0)
  call void @run(i64 1)
  call void @run(i64 7)
  call void @run(i64 16)
  call void @run(i64 33)
  call void @run(i64 1000)
  ; @scale on 128 and 256 floats (padded and blocked layouts).
  %x = call ptr @guarded_floats(i64 256, i64 3)
  %y = call ptr @guarded_floats(i64 256, i64 4)
  call void @scale(ptr %y, ptr %x, i64 0, i64 0, i1 true)
  call void @scale(ptr %y, ptr %x, i64 0, i64 2, i1 false)
  %y0p = getelementptr inbounds float, ptr %y, i64 127
  %y0 = load float, ptr %y0p, align 4
  %y1p = getelementptr inbounds float, ptr %y, i64 255
  %y1 = load float, ptr %y1p, align 4
  %e0 = fpext float %y0 to double
  %e1 = fpext float %y1 to double
  %lg = load i64, ptr @logged, align 8
  %pr = call i32 (ptr, ...) @printf(ptr @fmt.scale, double %e0, double %e1, i64 %lg)
  ret i32 0
}

; --- kernels (as in struct-phis.ll, selects-nested.ll, vectors.ll, anchors.ll)

define { float, float } @csum(ptr %a, i64 %n) {
entry:
  %empty = icmp eq i64 %n, 0
  br i1 %empty, label %exit, label %loop

loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %loop ]
  %acc = phi { float, float } [ { float 0.0, float 1.0 }, %entry ], [ %acc.next, %loop ]
  %p = getelementptr inbounds { float, float }, ptr %a, i64 %i
  %x = load { float, float }, ptr %p, align 4
  %xr = extractvalue { float, float } %x, 0
  %xi = extractvalue { float, float } %x, 1
  %re = extractvalue { float, float } %acc, 0
  %im = extractvalue { float, float } %acc, 1
  %pr = fmul float %xr, %xr
  %pi = fmul float %xi, %xi
  %re.next = fadd float %re, %pr
  %im.next = fsub float %im, %pi
  %b = insertvalue { float, float } poison, float %re.next, 0
  %acc.next = insertvalue { float, float } %b, float %im.next, 1
  %i.next = add nuw nsw i64 %i, 1
  %done = icmp eq i64 %i.next, %n
  br i1 %done, label %exit, label %loop

exit:
  %r = phi { float, float } [ zeroinitializer, %entry ], [ %acc.next, %loop ]
  ret { float, float } %r
}

define { float, float } @cmax(ptr %a, i64 %n) {
entry:
  %empty = icmp eq i64 %n, 0
  br i1 %empty, label %exit, label %loop

loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %loop ]
  %best = phi { float, float } [ { float 0xFFF0000000000000, float 0.0 }, %entry ], [ %best.next, %loop ]
  %p = getelementptr inbounds { float, float }, ptr %a, i64 %i
  %c = load { float, float }, ptr %p, align 4
  %re = extractvalue { float, float } %c, 0
  %b.re = extractvalue { float, float } %best, 0
  %gt = fcmp ogt float %re, %b.re
  %best.next = select i1 %gt, { float, float } %c, { float, float } %best
  %i.next = add nuw nsw i64 %i, 1
  %done = icmp eq i64 %i.next, %n
  br i1 %done, label %exit, label %loop

exit:
  %r = phi { float, float } [ zeroinitializer, %entry ], [ %best.next, %loop ]
  ret { float, float } %r
}

define { float, float } @nest(ptr %m, i64 %rows, i64 %cols) {
entry:
  %none = icmp eq i64 %cols, 0
  br i1 %none, label %exit, label %outer

outer:
  %r = phi i64 [ 0, %entry ], [ %r.next, %outer.latch ]
  %tot = phi { float, float } [ zeroinitializer, %entry ], [ %row.lcssa, %outer.latch ]
  br label %inner

inner:
  %c = phi i64 [ 0, %outer ], [ %c.next, %inner ]
  %row = phi { float, float } [ %tot, %outer ], [ %row.next, %inner ]
  %off = mul nuw nsw i64 %r, %cols
  %k = add nuw nsw i64 %off, %c
  %p = getelementptr inbounds float, ptr %m, i64 %k
  %x = load float, ptr %p, align 4
  %re = extractvalue { float, float } %row, 0
  %im = extractvalue { float, float } %row, 1
  %re.next = fadd float %re, %x
  %xx = fmul float %x, %re
  %im.next = fadd float %im, %xx
  %n0 = insertvalue { float, float } poison, float %re.next, 0
  %row.next = insertvalue { float, float } %n0, float %im.next, 1
  %c.next = add nuw nsw i64 %c, 1
  %c.done = icmp eq i64 %c.next, %cols
  br i1 %c.done, label %outer.latch, label %inner

outer.latch:
  %row.lcssa = phi { float, float } [ %row.next, %inner ]
  %r.next = add nuw nsw i64 %r, 1
  %r.done = icmp eq i64 %r.next, %rows
  br i1 %r.done, label %exit, label %outer

exit:
  %res = phi { float, float } [ zeroinitializer, %entry ], [ %row.lcssa, %outer.latch ]
  ret { float, float } %res
}

define float @descriptor(ptr %base, i64 %size, i64 %n) {
entry:
  %empty = icmp eq i64 %n, 0
  br i1 %empty, label %exit, label %ph

ph:
  %d0 = insertvalue { ptr, ptr, i64, [1 x i64], [1 x i64] } poison, ptr %base, 0
  %d1 = insertvalue { ptr, ptr, i64, [1 x i64], [1 x i64] } %d0, ptr %base, 1
  %d2 = insertvalue { ptr, ptr, i64, [1 x i64], [1 x i64] } %d1, i64 0, 2
  %d3 = insertvalue { ptr, ptr, i64, [1 x i64], [1 x i64] } %d2, i64 %size, 3, 0
  %d4 = insertvalue { ptr, ptr, i64, [1 x i64], [1 x i64] } %d3, i64 3, 4, 0
  br label %loop

loop:
  %i = phi i64 [ 0, %ph ], [ %i.next, %loop ]
  %s = phi float [ 0.0, %ph ], [ %s.next, %loop ]
  %d = phi { ptr, ptr, i64, [1 x i64], [1 x i64] } [ %d4, %ph ], [ %d.next, %loop ]
  %aligned = extractvalue { ptr, ptr, i64, [1 x i64], [1 x i64] } %d, 1
  %off = extractvalue { ptr, ptr, i64, [1 x i64], [1 x i64] } %d, 2
  %sz = extractvalue { ptr, ptr, i64, [1 x i64], [1 x i64] } %d, 3, 0
  %st = extractvalue { ptr, ptr, i64, [1 x i64], [1 x i64] } %d, 4, 0
  %p = getelementptr inbounds float, ptr %aligned, i64 %off
  %x = load float, ptr %p, align 4
  %s.next = fadd float %s, %x
  %off.1 = add i64 %off, %st
  %wrap = icmp uge i64 %off.1, %sz
  %off.w = sub i64 %off.1, %sz
  %off.next = select i1 %wrap, i64 %off.w, i64 %off.1
  %d.next = insertvalue { ptr, ptr, i64, [1 x i64], [1 x i64] } %d, i64 %off.next, 2
  %i.next = add nuw nsw i64 %i, 1
  %done = icmp eq i64 %i.next, %n
  br i1 %done, label %exit, label %loop

exit:
  %r = phi float [ 0.0, %entry ], [ %s.next, %loop ]
  ret float %r
}

define i64 @four_fields({ i32, float, i64, double } %init, i64 %n) {
entry:
  br label %loop

loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %loop ]
  %s = phi { i32, float, i64, double } [ %init, %entry ], [ %s.next, %loop ]
  %a = extractvalue { i32, float, i64, double } %s, 0
  %b = extractvalue { i32, float, i64, double } %s, 1
  %c = extractvalue { i32, float, i64, double } %s, 2
  %d = extractvalue { i32, float, i64, double } %s, 3
  %a.next = mul i32 %a, 3
  %b.next = fadd float %b, 1.0
  %bi = fptosi float %b.next to i64
  %c.1 = add i64 %c, %bi
  %ai = sext i32 %a.next to i64
  %c.next = xor i64 %c.1, %ai
  %d.next = fmul double %d, 0.75
  %b1 = insertvalue { i32, float, i64, double } poison, i32 %a.next, 0
  %b2 = insertvalue { i32, float, i64, double } %b1, float %b.next, 1
  %b3 = insertvalue { i32, float, i64, double } %b2, i64 %c.next, 2
  %s.next = insertvalue { i32, float, i64, double } %b3, double %d.next, 3
  %i.next = add nuw nsw i64 %i, 1
  %done = icmp uge i64 %i.next, %n
  br i1 %done, label %exit, label %loop

exit:
  %dd = fptosi double %d.next to i64
  %r = add i64 %c.next, %dd
  ret i64 %r
}

define i64 @select_alone(i1 %c, { i64, i64 } %x, i64 %a, i64 %b) {
  %y0 = insertvalue { i64, i64 } poison, i64 %a, 0
  %y = insertvalue { i64, i64 } %y0, i64 %b, 1
  %s = select i1 %c, { i64, i64 } %y, { i64, i64 } %x
  %d0 = extractvalue { i64, i64 } %s, 0
  %d1 = extractvalue { i64, i64 } %s, 1
  %m = mul i64 %d0, %d1
  ret i64 %m
}

define float @sum4(ptr %a, i64 %n) {
entry:
  %empty = icmp eq i64 %n, 0
  br i1 %empty, label %exit, label %loop

loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %loop ]
  %acc = phi <4 x float> [ zeroinitializer, %entry ], [ %acc.next, %loop ]
  %p = getelementptr inbounds <4 x float>, ptr %a, i64 %i
  %v = load <4 x float>, ptr %p, align 4
  %acc.next = fadd <4 x float> %acc, %v
  %i.next = add nuw nsw i64 %i, 1
  %done = icmp eq i64 %i.next, %n
  br i1 %done, label %exit, label %loop

exit:
  %r = phi <4 x float> [ zeroinitializer, %entry ], [ %acc.next, %loop ]
  %e0 = extractelement <4 x float> %r, i64 0
  %e1 = extractelement <4 x float> %r, i64 1
  %e2 = extractelement <4 x float> %r, i64 2
  %e3 = extractelement <4 x float> %r, i64 3
  %s01 = fadd float %e0, %e1
  %s23 = fadd float %e2, %e3
  %s = fadd float %s01, %s23
  ret float %s
}

define internal void @log_layout(i64 %n) {
  %old = load i64, ptr @logged, align 8
  %new = add i64 %old, %n
  store i64 %new, ptr @logged, align 8
  ret void
}

define void @scale(ptr noalias %y, ptr noalias %x, i64 %a, i64 %b, i1 %padded) {
entry:
  br i1 %padded, label %pad, label %blocks

pad:
  %a64 = mul nuw i64 %a, 64
  %n.pad = add nuw i64 %a64, 128
  call void @log_layout(i64 %n.pad)
  br label %join

blocks:
  %b2 = shl nuw i64 %b, 1
  %n.blk = mul nuw i64 %b2, 64
  call void @log_layout(i64 %n.blk)
  br label %join

join:
  %n = phi i64 [ %n.pad, %pad ], [ %n.blk, %blocks ]
  %empty = icmp eq i64 %n, 0
  br i1 %empty, label %exit, label %loop

loop:
  %i = phi i64 [ 0, %join ], [ %i.next, %loop ]
  %xp = getelementptr inbounds float, ptr %x, i64 %i
  %v = load float, ptr %xp, align 4
  %m = fmul float %v, 2.0
  %yp = getelementptr inbounds float, ptr %y, i64 %i
  store float %m, ptr %yp, align 4
  %i.next = add nuw i64 %i, 1
  %done = icmp eq i64 %i.next, %n
  br i1 %done, label %exit, label %loop

exit:
  ret void
}
