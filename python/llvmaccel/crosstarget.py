"""Cross-target equivalence: before and after compiled for several targets and run.

For each CPU target the before and after modules are compiled by clang
(``-O2``; AArch64 with SVE, RISC-V with V), linked statically with a C harness
that holds the inputs of :func:`llvmaccel.inputs.make_case` and runs each
case in a forked child on buffers that end before guard pages, then run
natively (x86-64) or under qemu-user (``qemu-aarch64 -cpu max``,
``qemu-riscv64 -cpu rv64,v=true,vlen=256``). On every target, after must
match before; and every target must match x86-64 (NaN payloads, which differ
between architectures, are compared as "NaN").

For GPU targets (NVPTX, AMDGPU, SPIR-V) the before module is moved to the
global address space (``addrspace(1)``), given the target's triple, optimized
with the pipeline when one is given, and compiled with ``llc``; the after
module must not touch memory in an address space the before module did not
use, nor add ``addrspacecast`` (a pass that prefetches or loads through a
generic pointer breaks there). Nothing is executed without a GPU.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field

from .inputs import ArgSpec, Layout, make_case
from .irinfo import describe, type_size

__all__ = ["CPU_TARGETS", "GPU_TARGETS", "TargetReport", "check_targets", "available_targets"]


@dataclass(frozen=True)
class CpuTarget:
    """A CPU target: triple, clang flags, C compiler and how to run its programs."""

    name: str
    triple: str
    flags: tuple[str, ...]
    cc: str
    runner: tuple[str, ...]


CPU_TARGETS = {
    "x86_64": CpuTarget("x86_64", "x86_64-linux-gnu", (), "cc", ()),
    "aarch64": CpuTarget("aarch64", "aarch64-linux-gnu", ("-march=armv8-a+sve",),
                         "aarch64-linux-gnu-gcc", ("qemu-aarch64", "-cpu", "max")),
    "riscv64": CpuTarget("riscv64", "riscv64-linux-gnu", ("-march=rv64gcv",),
                         "riscv64-linux-gnu-gcc",
                         ("qemu-riscv64", "-cpu", "rv64,v=true,vlen=256,vext_spec=v1.0")),
}
GPU_TARGETS = {
    "nvptx": ("nvptx64-nvidia-cuda", ("-mcpu=sm_70",)),
    "amdgpu": ("amdgcn-amd-amdhsa", ("-mcpu=gfx90a",)),
    "spirv": ("spirv64-unknown-unknown", ()),
}


@dataclass
class TargetReport:
    """Per target: ``executed``, ``compiled`` or ``skipped`` (with why), and findings."""

    status: dict[str, str] = field(default_factory=dict)
    findings: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when no target found a difference or failed to compile."""
        return not self.findings

    def table(self) -> str:
        """One line per target, then the findings."""
        lines = [f"  {name}: {status}" for name, status in self.status.items()]
        return "\n".join(["targets:", *lines] + [f"  FINDING: {f}" for f in self.findings])


def _tool(name: str) -> str | None:
    from .reduce import find_llvm_tool
    try:
        return find_llvm_tool(name)
    except FileNotFoundError:
        return None


def available_targets() -> dict[str, str]:
    """Each target and why it cannot run here ("" when it can)."""
    out = {}
    for name, t in CPU_TARGETS.items():
        missing = [x for x in (t.cc, *t.runner[:1]) if not shutil.which(x)]
        out[name] = f"missing {', '.join(missing)}" if missing else ""
    llc = _tool("llc")
    registered = ""
    if llc:
        registered = subprocess.run([llc, "--version"], capture_output=True, text=True).stdout
    for name, (triple, _) in GPU_TARGETS.items():
        arch = triple.split("-")[0]
        if not llc:
            out[name] = "missing llc"
        elif not re.search(rf"^\s+{arch}\s", registered, re.M):
            out[name] = f"llc of this LLVM has no {arch} target"
        else:
            out[name] = ""
    return out


_HARNESS_HEAD = r"""
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

static uint64_t fnv(const unsigned char *p, size_t n, int fk) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; i++) {
    unsigned char c = p[i];
    if (fk == 4 && i % 4 == 0 && i + 4 <= n) {
      float f; memcpy(&f, p + i, 4);
      if (isnan(f)) {
        for (int k = 0; k < 4; k++) h = (h ^ 0xAB) * 1099511628211ull;
        i += 3; continue;
      }
    }
    if (fk == 8 && i % 8 == 0 && i + 8 <= n) {
      double d; memcpy(&d, p + i, 8);
      if (isnan(d)) {
        for (int k = 0; k < 8; k++) h = (h ^ 0xAB) * 1099511628211ull;
        i += 7; continue;
      }
    }
    h = (h ^ c) * 1099511628211ull;
  }
  return h;
}

static unsigned char *guarded(size_t bytes, size_t align) {
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  size_t span = (bytes + align - 1) / align * align;
  size_t pages = (span + page - 1) / page; if (!pages) pages = 1;
  unsigned char *base = mmap(0, (pages + 2) * page, PROT_READ | PROT_WRITE,
                             MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  mprotect(base, page, PROT_NONE);
  mprotect(base + (pages + 1) * page, page, PROT_NONE);
  return base + (pages + 1) * page - span;
}
"""


def _c_type(ty: str) -> str:
    return {"i1": "_Bool", "i8": "int8_t", "i16": "int16_t", "i32": "int32_t",
            "i64": "int64_t", "float": "float", "double": "double", "void": "void"}.get(
                ty, "void *")


def _c_value(v: float, ty: str) -> str:
    if ty in ("float", "double"):
        if v != v:
            return "NAN"
        if v in (float("inf"), float("-inf")):
            return "INFINITY" if v > 0 else "-INFINITY"
        return repr(float(v)) + ("f" if ty == "float" else "")
    if ty == "i64" and int(v) == -(1 << 63):
        return "INT64_MIN"
    return f"{int(v)}" + ("LL" if ty == "i64" else "")


def _harness(layout: Layout, cases: list, fn: str) -> str:
    info = layout.info
    ret = info.return_type
    params = ", ".join(_c_type(p.type) for p in info.params) or "void"
    out = [_HARNESS_HEAD]
    for v in ("before", "after"):
        out.append(f"{_c_type(ret)} {fn}_{v}({params});")
    for case in cases:
        for i, data in case.buffers.items():
            body = ",".join(str(b) for b in data) or "0"
            out.append(f"static const unsigned char c{case.number}_b{i}[] = {{{body}}};")
    out.append("static void run(int which, int c) {")
    out.append("  switch (c) {")
    for case in cases:
        out.append(f"  case {case.number}: {{")
        args = []
        for slot in layout.slots:
            i = slot.param.index
            if slot.param.is_pointer:
                out.append(f"    unsigned char *p{i} = guarded({slot.bytes}, {slot.align});")
                out.append(f"    memcpy(p{i}, c{case.number}_b{i}, {slot.bytes});")
                args.append(f"p{i}")
            else:
                args.append(f"({_c_type(slot.elem)}){_c_value(case.scalars[i], slot.elem)}")
        call = f"(which ? {fn}_after : {fn}_before)({', '.join(args)})"
        if ret == "void":
            out.append(f"    {call};")
            out.append("    printf(\"ret -\");")
        elif ret in ("float", "double"):
            out.append(f"    {_c_type(ret)} r = {call};")
            out.append("    if (isnan(r)) printf(\"ret nan\"); else { unsigned char q[8] = {0}; "
                       "memcpy(q, &r, sizeof r); printf(\"ret %016llx\", "
                       "(unsigned long long)fnv(q, sizeof r, 0)); }")
        else:
            out.append(f"    long long r = (long long){call};")
            out.append("    printf(\"ret %lld\", r);")
        for slot in layout.slots:
            if slot.param.is_pointer:
                i = slot.param.index
                fk = type_size(slot.elem) if slot.elem in ("float", "double") else 0
                out.append(f"    printf(\" b{i} %016llx\", (unsigned long long)"
                           f"fnv(p{i}, {slot.bytes}, {fk}));")
        out.append("    printf(\"\\n\"); break; }")
    out.append("  }\n}")
    numbers = ",".join(str(c.number) for c in cases) or "0"
    out.append(f"""
int main(void) {{
  static const int cases[] = {{{numbers}}};
  for (int which = 0; which < 2; which++)
    for (unsigned k = 0; k < sizeof cases / sizeof cases[0]; k++) {{
      fflush(stdout);
      pid_t pid = fork();
      if (pid == 0) {{ alarm(3); /* a case that never ends dies by SIGALRM */
                      printf("%s %d ", which ? "after" : "before", cases[k]);
                      run(which, cases[k]); fflush(stdout); _exit(0); }}
      int st = 0; waitpid(pid, &st, 0);
      if (WIFSIGNALED(st)) printf("%s %d signal %d\\n", which ? "after" : "before", cases[k],
                                  WTERMSIG(st));
    }}
  return 0;
}}
""")
    return "\n".join(out)


def _rename(ir: str, fn: str, suffix: str) -> str:
    """``ir`` with every function it defines (``fn`` among them) and every
    global variable it defines renamed ``NAME_suffix``, so that the before
    and after modules link into one program."""
    from .check import defined_functions
    names = set(defined_functions(ir)) | {fn}
    names |= set(re.findall(r'^@([-\w.$]+) = (?!.*\b(?:private|internal)\b)', ir, re.M))
    names = {n for n in names if not n.startswith(("llvm.", '"'))}
    if not names:
        return ir
    pattern = re.compile(r"@(" + "|".join(re.escape(n) for n in sorted(names, key=len,
                                                                         reverse=True))
                         + r")(?=[\s(,)*\]}:;]|$)", re.M)
    return pattern.sub(lambda m: f"@{m.group(1)}_{suffix}", ir)


def _run_cpu(t: CpuTarget, before: str, after: str, harness: str, fn: str,
             work: str) -> tuple[dict[tuple[str, str], str], str]:
    clang = _tool("clang")
    if clang is None:
        return {}, "missing clang"
    objs = []
    for v, ir in (("before", before), ("after", after)):
        src = os.path.join(work, f"{t.name}.{v}.ll")
        with open(src, "w") as f:
            f.write(_rename(ir, fn, v))
        obj = src[:-3] + ".o"
        cmd = [clang, f"--target={t.triple}", *t.flags, "-O2", "-Wno-override-module", "-c",
               src, "-o", obj]
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        if out.returncode:
            return {}, f"clang failed on the {v} module: {out.stderr.strip()[-500:]}"
        objs.append(obj)
    hc = os.path.join(work, "harness.c")
    with open(hc, "w") as f:
        f.write(harness)
    exe = os.path.join(work, f"{t.name}.exe")
    out = subprocess.run([t.cc, "-O1", "-static", hc, *objs, "-lm", "-o", exe],
                         capture_output=True, text=True, timeout=300)
    if out.returncode:
        return {}, f"linking failed: {out.stderr.strip()[-500:]}"
    out = subprocess.run([*t.runner, exe], capture_output=True, text=True, timeout=600)
    results = {}
    for line in out.stdout.splitlines():
        words = line.split(" ", 2)
        if len(words) == 3:
            results[(words[0], words[1])] = words[2]
    return results, ""


_MEMOP = re.compile(r"\b(load|store|call|getelementptr)\b.*")
_AS_USE = re.compile(r"ptr addrspace\((\d+)\)|\bptr\b(?!\s+addrspace)")


def _address_spaces(ir: str) -> set[int]:
    spaces: set[int] = set()
    for line in ir.splitlines():
        if line.startswith(("define", "declare")) or not _MEMOP.search(line):
            continue
        for m in _AS_USE.finditer(line):
            spaces.add(int(m.group(1)) if m.group(1) else 0)
    return spaces


def to_global_address_space(ir: str, triple: str) -> str:
    """``ir`` with every pointer in address space 1 and the given triple."""
    text = re.sub(r"\bptr\b(?!\s+addrspace)", "ptr addrspace(1)", ir)
    # Global variables move too (their uses are now addrspace(1) pointers).
    text = re.sub(r"^(@[-\w.$]+ = (?:[a-z_]+ )*?)(global|constant)\b",
                  lambda m: m.group(1) + ("" if "addrspace(" in m.group(1) else "addrspace(1) ")
                  + m.group(2), text, flags=re.M)
    text = re.sub(r"(@llvm\.[\w.]*?)\.p0", r"\1.p1", text)
    text = re.sub(r"(@llvm\.[\w.]*?\.p1)\.p0", r"\1.p1", text)
    return f'target triple = "{triple}"\n' + re.sub(r"^target (triple|datalayout).*$", "",
                                                    text, flags=re.M)


def _gpu(name: str, before: str, pipeline: str | None, fn: str, work: str) -> tuple[str, str]:
    """(status, finding or "") of one GPU target."""
    from .check import make_job, run_jobs
    triple, flags = GPU_TARGETS[name]
    llc = _tool("llc")
    if llc is None:
        return "skipped (missing llc)", ""
    moved = to_global_address_space(before, triple)
    from .errors import LLVMAccelError
    from .ir import parse_ir
    try:
        parse_ir(moved, "moved")
    except LLVMAccelError as err:
        # Something the textual move cannot express (a personality function,
        # a function pointer stored as data): the tool's limit, not a finding.
        first = str(err).splitlines()[0] if str(err) else type(err).__name__
        return f"skipped (the module cannot be moved to addrspace(1): {first})", ""
    if pipeline:
        job = make_job(moved, fn, pipeline, execute=False, codegen=False)
        res = run_jobs([job], raise_errors=False)[0]
        if res.findings:
            return "pipeline failed", f"{name}: {res.findings[0]}"
        after = res.after_ir
    else:
        after = moved
    extra = _address_spaces(after) - _address_spaces(moved)
    if extra:
        return "compiled", (f"{name}: the result uses address space(s) {sorted(extra)} "
                            "the original does not")
    if after.count("addrspacecast") > moved.count("addrspacecast"):
        return "compiled", f"{name}: the result adds addrspacecast"
    def llc_fails(ir: str, tag: str) -> str:
        src = os.path.join(work, f"{name}.{tag}.ll")
        with open(src, "w") as f:
            f.write(ir)
        out = subprocess.run([llc, f"-mtriple={triple}", *flags, "-O2", src, "-o", os.devnull],
                             capture_output=True, text=True, timeout=300)
        return out.stderr.strip().splitlines()[0] if out.returncode and out.stderr.strip() \
            else ("llc failed" if out.returncode else "")

    original_error = llc_fails(moved, "before")
    if original_error:
        # The backend cannot compile the original either: an LLVM limitation
        # or bug, not the transformation's; reported, not a finding.
        return f"not compiled (llc fails on the original too: {original_error})", ""
    error = llc_fails(after, "after")
    if error:
        return "compile failed", f"{name}: llc compiles the original but not the result: {error}"
    return "compiled by llc, address spaces preserved (not executed: no GPU)", ""


def check_targets(before_ir: str, after_ir: str, function: str, targets: list[str], *,
                  cases: int = 16, seed: int = 0, args: dict[str, ArgSpec] | None = None,
                  pipeline: str | None = None,
                  after_by_target: dict[str, str] | None = None) -> TargetReport:
    """Compiles and runs (or, for GPUs, compiles and inspects) before and after.

    Args:
        before_ir, after_ir: The two modules' text.
        function: The function to run.
        targets: Names from :data:`CPU_TARGETS` and :data:`GPU_TARGETS`.
        cases, seed, args: The inputs, as for :func:`llvmaccel.check`.
        pipeline: For GPU targets, the pipeline to apply to the moved module
            (without it the after module is compiled as given).
        after_by_target: The after module made for a CPU target itself (the
            pass run with that target's triple and features, as
            ``opt -mtriple=... -mattr=...`` does), by target name; targets
            not named use ``after_ir``.

    Raises:
        ValueError: an unknown target name.
    """
    report = TargetReport()
    unknown = [t for t in targets if t not in CPU_TARGETS and t not in GPU_TARGETS]
    if unknown:
        raise ValueError(f"unknown target(s) {', '.join(unknown)} (known: "
                         f"{', '.join([*CPU_TARGETS, *GPU_TARGETS])})")
    info = describe(before_ir, function)
    scalar = ("void", "i1", "i8", "i16", "i32", "i64", "float", "double", "ptr")
    odd = [t for t in (info.return_type, *(p.type for p in info.params))
           if t.split(" ")[0] not in scalar]
    made: list = []
    harness = ""
    if not odd:
        layout = Layout.build(info, args)
        made = [make_case(layout, seed, n) for n in range(cases)]
        harness = _harness(layout, made, function)
    avail = available_targets()
    reference: dict[tuple[str, str], str] | None = None
    work = tempfile.mkdtemp(prefix="llvmaccel-targets-")
    try:
        order = sorted(targets, key=lambda t: t != "x86_64")
        for name in order:
            if avail.get(name):
                report.status[name] = f"skipped ({avail[name]})"
                continue
            if name in GPU_TARGETS:
                status, finding = _gpu(name, before_ir, pipeline, function, work)
                report.status[name] = status
                if finding:
                    report.findings.append(finding)
                continue
            after_t = (after_by_target or {}).get(name, after_ir)
            if odd:
                report.status[name] = (f"skipped (a {odd[0]} value, which the C harness cannot "
                                       "pass or receive)")
                continue
            if info.fast_math:
                # Bits compared across compilers and targets: fast-math flags
                # allow other roundings (llvmaccel check compares within ULPs).
                report.status[name] = "skipped (fast-math flags: roundings may differ)"
                continue
            results, err = _run_cpu(CPU_TARGETS[name], before_ir, after_t, harness, function,
                                    work)
            if err:
                report.status[name] = f"failed ({err})"
                report.findings.append(f"{name}: {err}")
                continue
            ran = sum(1 for (v, _), r in results.items() if v == "before"
                      and not r.startswith("signal"))
            report.status[name] = f"executed ({ran}/{cases} cases ran to completion)"
            for c in made:
                b = results.get(("before", str(c.number)))
                a = results.get(("after", str(c.number)))
                if b is None or b.startswith("signal"):
                    continue
                if a != b:
                    report.findings.append(f"{name}: case {c.number}: before {b}, after {a}")
            if name == "x86_64":
                reference = results
            elif reference is not None:
                for key, r in results.items():
                    ref = reference.get(key)
                    if ref is not None and not ref.startswith("signal") and ref != r:
                        report.findings.append(
                            f"{name}: {key[0]} case {key[1]} differs from x86_64: {r} vs {ref}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return report
