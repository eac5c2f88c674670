"""A deliberately wrong "pass" for testing llvmaccel.check: IR on stdin, IR on stdout.

    python planted_miscompile.py lookahead    # loads index arrays 16 iterations ahead,
                                              # unclamped (faults at the guard page)
    python planted_miscompile.py off-by-one   # loop latches `icmp eq %i.next, %n` run once more

Never used outside tests: it is how the test suite proves that check and
reduction find and shrink a miscompile.
"""

from __future__ import annotations

import re
import sys

_GEP = re.compile(r"^(\s*)(%[\w.]+) = getelementptr inbounds (i32|i64), ptr (%[\w.]+), "
                  r"i64 (%[\w.]+)\s*$")


def lookahead(ir: str) -> str:
    out, n = [], 0
    for line in ir.splitlines():
        out.append(line)
        m = _GEP.match(line)
        if m:
            ind, _, ty, base, idx = m.groups()
            n += 1
            out += [f"{ind}%ahead{n}.i = add i64 {idx}, 16",
                    f"{ind}%ahead{n}.p = getelementptr inbounds {ty}, ptr {base}, i64 %ahead{n}.i",
                    f"{ind}%ahead{n}.v = load {ty}, ptr %ahead{n}.p",
                    f"{ind}%ahead{n}.a = getelementptr i8, ptr {base}, {ty} %ahead{n}.v",
                    f"{ind}call void @llvm.prefetch.p0(ptr %ahead{n}.a, i32 0, i32 3, i32 1)"]
    text = "\n".join(out) + "\n"
    if n and "declare void @llvm.prefetch.p0" not in text:
        text += "declare void @llvm.prefetch.p0(ptr, i32, i32, i32)\n"
    return text


def off_by_one(ir: str) -> str:
    return re.sub(r"icmp eq i64 (%[\w.]+\.next), (%[\w.]+)", r"icmp ugt i64 \1, \2", ir)


if __name__ == "__main__":
    mode = sys.argv[1] if len(sys.argv) > 1 else "lookahead"
    text = sys.stdin.read()
    sys.stdout.write(lookahead(text) if mode == "lookahead" else off_by_one(text))
