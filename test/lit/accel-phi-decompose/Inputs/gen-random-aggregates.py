"""Random loops that carry aggregates, for execute-random.test.

Each kernel k<seed> carries a random struct/array type (up to two levels,
i32/i64/float leaves) through a loop: random extractvalue/insertvalue
updates, sometimes a call that takes the whole aggregate, sometimes a select
of the new and the old aggregate, an update on a conditional path merged by
a phi in the latch, and an LCSSA phi at the exit, whose every element goes
into a checksum. Usage: gen-random-aggregates.py FIRST_SEED LAST_SEED.
"""

import random
import sys


def rtype(r, depth=0):
    k = r.random()
    if depth < 2 and k < 0.3:
        n = r.randint(1, 3)
        return ("s", [rtype(r, depth + 1) for _ in range(n)])
    if depth < 2 and k < 0.45:
        return ("a", r.randint(1, 3), rtype(r, depth + 1))
    return r.choice(["i32", "float", "i64"])


def tstr(t):
    if isinstance(t, str):
        return t
    if t[0] == "s":
        return "{ " + ", ".join(tstr(e) for e in t[1]) + " }"
    return f"[{t[1]} x {tstr(t[2])}]"


def leaves(t, p=()):
    if isinstance(t, str):
        return [(p, t)]
    if t[0] == "s":
        return [l for i, e in enumerate(t[1]) for l in leaves(e, p + (i,))]
    return [l for i in range(t[1]) for l in leaves(t[2], p + (i,))]


def const(t, r):
    return f"{r.randint(-5, 5)}.0" if t == "float" else str(r.randint(-100, 100))


def zero_agg(t, r):
    if isinstance(t, str):
        return f"{tstr(t)} {const(t, r)}"
    if t[0] == "s":
        return tstr(t) + " { " + ", ".join(zero_agg(e, r) for e in t[1]) + " }"
    return tstr(t) + " [ " + ", ".join(zero_agg(t[2], r) for _ in range(t[1])) + " ]"


def gen(seed):
    r = random.Random(seed)
    K = f"k{seed}"
    T = rtype(r)
    while isinstance(T, str):
        T = rtype(r)
    ts = tstr(T)
    L = leaves(T)
    out = []
    c = [0]

    def v():
        c[0] += 1
        return f"%v{c[0]}"

    out.append(f"@sinkacc.{K} = internal global i64 0")
    out.append(f"define internal void @sink.{K}({ts} %a) {{")
    # sink: sum first leaf bits
    p, lt = L[0]
    out.append(f"  %e = extractvalue {ts} %a, {', '.join(map(str, p))}")
    if lt == "float":
        out.append("  %b = fptosi float %e to i64")
    elif lt == "i32":
        out.append("  %b = sext i32 %e to i64")
    else:
        out.append("  %b = add i64 %e, 0")
    out.append(
        f"  %o = load i64, ptr @sinkacc.{K}\n  %n = add i64 %o, %b\n  store i64 %n, ptr @sinkacc.{K}\n  ret void\n}}"
    )
    init = zero_agg(T, r)
    out.append(f"define i64 @kernel.{K}(i64 %n) {{\nentry:\n  br label %loop\nloop:")
    out.append(f"  %i = phi i64 [ 0, %entry ], [ %i.next, %latch ]")
    out.append(
        f"  %agg = phi {init}, %entry ], [ %agg.next, %latch ]".replace(
            f"phi {ts} ", f"phi {ts} [ ", 1
        )
    )
    cur = "%agg"
    for step in range(r.randint(1, 4)):
        p, lt = r.choice(L)
        idx = ", ".join(map(str, p))
        e = v()
        out.append(f"  {e} = extractvalue {ts} {cur}, {idx}")
        nv = v()
        if lt == "float":
            it = v()
            out.append(f"  {it} = sitofp i64 %i to float")
            out.append(f"  {nv} = fadd float {e}, {it}")
        else:
            ii = v()
            out.append(
                f"  {ii} = trunc i64 %i to {lt}" if lt == "i32" else f"  {ii} = add i64 %i, 0"
            )
            out.append(f"  {nv} = {r.choice(['add', 'xor', 'mul'])} {lt} {e}, {ii}")
        nx = v()
        out.append(f"  {nx} = insertvalue {ts} {cur}, {lt} {nv}, {idx}")
        cur = nx
    if r.random() < 0.5:
        out.append(f"  call void @sink.{K}({ts} {cur})")
    par = v()
    out.append(f"  {par} = trunc i64 %i to i1")
    if r.random() < 0.5:
        s = v()
        out.append(f"  {s} = select i1 {par}, {ts} {cur}, {ts} %agg")
        cur = s
    out.append(f"  br i1 {par}, label %odd, label %latch\nodd:")
    # in odd block, another modification
    p, lt = r.choice(L)
    idx = ", ".join(map(str, p))
    e = v()
    out.append(f"  {e} = extractvalue {ts} {cur}, {idx}")
    nv = v()
    out.append(
        f"  {nv} = {'fmul float' if lt == 'float' else 'sub ' + lt} {e}, {'2.0' if lt == 'float' else '3'}"
    )
    o2 = v()
    out.append(f"  {o2} = insertvalue {ts} {cur}, {lt} {nv}, {idx}")
    out.append(f"  br label %latch\nlatch:")
    out.append(f"  %agg.next = phi {ts} [ {cur}, %loop ], [ {o2}, %odd ]")
    out.append(
        f"  %i.next = add nuw nsw i64 %i, 1\n  %done = icmp uge i64 %i.next, %n\n  br i1 %done, label %exit, label %loop\nexit:"
    )
    out.append(f"  %res = phi {ts} [ %agg.next, %latch ]")
    acc = "0"
    for k, (p, lt) in enumerate(L):
        idx = ", ".join(map(str, p))
        e = v()
        out.append(f"  {e} = extractvalue {ts} %res, {idx}")
        b = v()
        if lt == "float":
            out.append(f"  {b} = bitcast float {e} to i32")
            b2 = v()
            out.append(f"  {b2} = zext i32 {b} to i64")
            b = b2
        elif lt == "i32":
            out.append(f"  {b} = zext i32 {e} to i64")
        else:
            out.append(f"  {b} = add i64 {e}, 0")
        m = v()
        out.append(f"  {m} = mul i64 {acc}, 31")
        a = v()
        out.append(f"  {a} = add i64 {m}, {b}")
        acc = a
    out.append(f"  %sk = load i64, ptr @sinkacc.{K}\n  %r = add i64 {acc}, %sk\n  ret i64 %r\n}}")
    return "\n".join(out) + "\n"


def main():
    first, last = int(sys.argv[1]), int(sys.argv[2])
    print("declare i32 @printf(ptr, ...)")
    print('@fmt = private constant [9 x i8] c"%d %lld\\0A\\00"')
    for s in range(first, last + 1):
        print(gen(s))
    print("define i32 @main() {")
    for s in range(first, last + 1):
        for n in (1, 2, 7, 100):
            print(f"  %r{s}.{n} = call i64 @kernel.k{s}(i64 {n})")
            print(f"  %p{s}.{n} = call i32 (ptr, ...) @printf(ptr @fmt, i32 {s}, i64 %r{s}.{n})")
    print("  ret i32 0\n}")


main()
