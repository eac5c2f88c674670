"""Runs every lit input of one pass on every target: one driver per pass's suite.

    cross_suite.py --opt OPT --plugin PLUGIN --pass accel-masked-load DIR [--targets ...]

For each .ll file of DIR whose RUN lines run the pass with opt (error tests,
``not opt ...``, are left out), and each function it defines (``main`` of the
execution tests included: it is one more function with inputs), the pass is
applied as the file's first such RUN line applies it (with its parameters),
separately for each CPU target's triple and features (``opt -mtriple
-mattr``, so that the pass sees that target's vector registers), and
llvmaccel.crosstarget runs before and after on generated inputs on x86-64,
AArch64 with SVE and RISC-V with V (under qemu-user), comparing after with
before on each target and every target with x86-64; for NVPTX, AMDGPU and
SPIR-V the moved module is run through the pass for that triple, compiled by
llc and checked for address-space correctness. ``--mlir DIR`` adds the
async graphs of an MLIR input (lowered with the recipe of the pass's tests):
their code calls the MLIR async runtime, which Debian builds for the host
only, so on the other CPU targets they are compiled (the pass and coroutine
splitting for that triple, then llc), not executed.

Prints one line per function and target, then a summary; exits 1 on a finding.
"""

import argparse
import os
import re
import shlex
import subprocess
import sys
import tempfile

from llvmaccel.check import defined_functions
from llvmaccel.crosstarget import CPU_TARGETS, available_targets, check_targets

CPU_ATTRS = {"x86_64": ("x86_64-linux-gnu", ""), "aarch64": ("aarch64-linux-gnu", "+sve"),
             "riscv64": ("riscv64-linux-gnu", "+v")}


def _neutral(ir: str) -> str:
    """The module without its triple, data layout and host-specific attributes."""
    ir = re.sub(r"^target (triple|datalayout) = .*$", "", ir, flags=re.M)
    return re.sub(r'"target-(cpu|features)"="[^"]*"|"tune-cpu"="[^"]*"', "", ir)


def _opt_major(opt: str) -> int:
    out = subprocess.run([opt, "--version"], capture_output=True, text=True).stdout
    m = re.search(r"LLVM version (\d+)", out)
    return int(m.group(1)) if m else 0


def _unsupported(path: str, major: int) -> str:
    """Why the file's REQUIRES lines rule out this LLVM release ("" if they do not)."""
    with open(path) as f:
        text = f.read()
    for line in re.findall(r"REQUIRES:(.*)$", text, re.M):
        for feature in (x.strip() for x in line.split(",")):
            m = re.fullmatch(r"llvm(\d+)", feature)
            if m and int(m.group(1)) != major:
                return feature
            m = re.fullmatch(r"llvm-ge-(\d+)", feature)
            if m and major < int(m.group(1)):
                return feature
    return ""


def _pass_pipeline(path: str, pass_name: str) -> str | None:
    """The -passes= value of the file's first RUN line that runs the pass
    (None when only error tests run it)."""
    with open(path) as f:
        text = f.read()
    runs = re.findall(r"^\s*(?:;|//|#)?\s*RUN:(.*)$", text, re.M)
    for run in runs:
        if re.search(r"(^|\|)\s*not\s+opt\b", run) or "opt" not in run:
            continue
        words = shlex.split(run.replace("\\", " "), posix=True)
        for i, w in enumerate(words):
            value = None
            if w.startswith(("-passes=", "--passes=")):
                value = w.split("=", 1)[1]
            elif w in ("-passes", "--passes") and i + 1 < len(words):
                value = words[i + 1]
            if value and pass_name in value:
                return value
    return None


def _opt(opt: str, plugin: str, pipeline: str, ir: str, triple: str, attrs: str) -> str:
    cmd = [opt, f"-load-pass-plugin={plugin}", f"-passes={pipeline}", f"-mtriple={triple}",
           "-S", "-o", "-", "-"]
    if attrs:
        cmd.insert(-4, f"-mattr={attrs}")
    out = subprocess.run(cmd, input=ir, capture_output=True, text=True, timeout=300)
    if out.returncode:
        raise RuntimeError(out.stderr.strip()[-800:])
    return out.stdout


def _undefined_callees(ir: str) -> list[str]:
    """Functions the module declares that neither LLVM nor the C library defines
    (a test's stand-ins for the outside world: nothing to link against)."""
    import ctypes
    libc = ctypes.CDLL(None)
    names = re.findall(r'^declare\b[^@]*@([-\w.$]+)\(', ir, re.M)
    return [n for n in names if not n.startswith("llvm.") and not hasattr(libc, n)]


def _body(ir: str, fn: str) -> str:
    """The text of function ``fn`` in ``ir`` (without attribute-group numbers)."""
    m = re.search(r"^define [^\n]*@" + re.escape(fn) + r"\(.*?^}", ir, re.M | re.S)
    return re.sub(r"#\d+", "", m.group(0)) if m else ""


def _mlir_inputs(path: str, mlir_opt: str, translate: str) -> str:
    from llvmaccel.taskgen import MLIR_ASYNC_LOWERING
    low = subprocess.run([mlir_opt, *MLIR_ASYNC_LOWERING, path], capture_output=True,
                         text=True, check=True)
    return subprocess.run([translate, "--mlir-to-llvmir"], input=low.stdout,
                          capture_output=True, text=True, check=True).stdout


def _compile_only(llc: str, opt: str, plugin: str, pipeline: str, ir: str, triple: str,
                  attrs: str, work: str) -> str:
    """"" when the pass's result for ``triple`` compiles (after coroutine
    splitting), else why not."""
    from llvmaccel.taskgen import COROUTINE_LOWERING
    after = _opt(opt, plugin, f"{pipeline},{COROUTINE_LOWERING}", ir, triple, attrs)
    src = os.path.join(work, "c.ll")
    with open(src, "w") as f:
        f.write(after)
    cmd = [llc, f"-mtriple={triple}", "-O2", src, "-o", os.devnull]
    if attrs:
        cmd.append(f"-mattr={attrs}")
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    return out.stderr.strip()[-300:] if out.returncode else ""


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--opt", required=True)
    ap.add_argument("--llc", help="llc of the same release as --opt (default: llvmaccel's)")
    ap.add_argument("--mlir-opt", help="mlir-opt of that release (default: llvmaccel's)")
    ap.add_argument("--mlir-translate", help="mlir-translate of that release")
    ap.add_argument("--plugin", required=True)
    ap.add_argument("--pass", dest="pass_name", required=True)
    ap.add_argument("--targets", default="x86_64,aarch64,riscv64,nvptx,amdgpu,spirv")
    ap.add_argument("--cases", type=int, default=8)
    ap.add_argument("--mlir", action="append", default=[], help="an MLIR async input")
    ap.add_argument("--known", action="append", default=[], metavar="FILE:TARGET",
                    help="a finding already reported, for any function of FILE on TARGET "
                         "(printed as KNOWN, not counted)")
    ap.add_argument("dir")
    a = ap.parse_args()
    targets = a.targets.split(",")
    avail = available_targets()
    missing = {t: why for t, why in avail.items() if t in targets and why}
    files = sorted(os.path.join(a.dir, n) for n in os.listdir(a.dir) if n.endswith(".ll"))
    findings, functions, inputs = 0, 0, 0
    executed = dict.fromkeys(CPU_TARGETS, 0)
    compiled: dict[str, int] = {}
    async_inputs: list[tuple[str, str, str]] = []
    compiled_cpu: dict[str, int] = {}
    major = _opt_major(a.opt)
    for path in files:
        why = _unsupported(path, major)
        if why:
            print(f"{os.path.basename(path)}: skipped (REQUIRES {why})")
            continue
        pipeline = _pass_pipeline(path, a.pass_name)
        if pipeline is None:
            print(f"{os.path.basename(path)}: skipped (no RUN line applies {a.pass_name})")
            continue
        with open(path) as f:
            before = _neutral(f.read())
        if "@mlirAsyncRuntime" in before:
            async_inputs.append((path, before, pipeline))
            continue
        inputs += 1
        after_by, same_by = {}, {}
        for t in targets:
            if t in CPU_ATTRS:
                try:
                    after_by[t] = _opt(a.opt, a.plugin, pipeline, before, *CPU_ATTRS[t])
                    same_by[t] = _opt(a.opt, a.plugin, "verify", before, *CPU_ATTRS[t])
                except RuntimeError as err:
                    print(f"FINDING {os.path.basename(path)} {t}: opt failed: {err}")
                    findings += 1
        if any(t not in after_by for t in targets if t in CPU_ATTRS):
            continue
        for fn in defined_functions(before):
            cpu = [t for t in after_by if _body(after_by[t], fn) != _body(same_by[t], fn)]
            undefined = _undefined_callees(before)
            if cpu and undefined:
                run_targets = [t for t in targets if t not in CPU_ATTRS]
                print(f"{os.path.basename(path)} @{fn}: not executed (the module calls "
                      f"@{', @'.join(undefined)}, which nothing defines)")
            elif not cpu:
                # The pass leaves it alone on every CPU target: nothing of the
                # pass's to execute there (the GPU triples still run it).
                run_targets = [t for t in targets if t not in CPU_ATTRS]
                print(f"{os.path.basename(path)} @{fn}: unchanged by the pass on the CPU "
                      "targets (not executed)")
            else:
                run_targets = targets
            if not run_targets:
                continue
            try:
                report = check_targets(before, after_by.get("x86_64", before), fn, run_targets,
                                       cases=a.cases, args=None, pipeline=pipeline,
                                       after_by_target=after_by)
            except (KeyError, TypeError, ValueError) as err:
                print(f"{os.path.basename(path)} @{fn}: skipped (inputs: {err})")
                continue
            functions += 1
            for t, status in report.status.items():
                print(f"{os.path.basename(path)} @{fn} {t}: {status}")
                if status.startswith("executed"):
                    executed[t] += 1
                elif status.startswith("compiled"):
                    compiled[t] = compiled.get(t, 0) + 1
            for finding in report.findings:
                where = f"{os.path.basename(path)}:{finding.split(':', 1)[0]}"
                tag = "KNOWN" if where in a.known else "FINDING"
                print(f"{tag} {os.path.basename(path)} @{fn}: {finding}")
                findings += tag == "FINDING"
    if a.mlir or async_inputs:
        from llvmaccel.reduce import find_llvm_tool
        llc = a.llc or find_llvm_tool("llc")
        if a.mlir:
            mlir_opt = a.mlir_opt or find_llvm_tool("mlir-opt")
            translate = a.mlir_translate or find_llvm_tool("mlir-translate")
            async_inputs += [(p, _neutral(_mlir_inputs(p, mlir_opt, translate)),
                              _pass_pipeline(p, a.pass_name) or a.pass_name) for p in a.mlir]
        with tempfile.TemporaryDirectory() as work:
            for path, ir, pipeline in async_inputs:
                inputs += 1
                name = os.path.basename(path)
                for t in targets:
                    if t not in CPU_ATTRS:
                        continue
                    try:
                        why = _compile_only(llc, a.opt, a.plugin, pipeline, ir, *CPU_ATTRS[t],
                                            work)
                    except RuntimeError as err:
                        why = f"opt failed: {err}"
                    if why:
                        print(f"FINDING {name} {t}: does not compile: {why}")
                        findings += 1
                    else:
                        print(f"{name} {t}: compiled (MLIR async tasks: the async runtime is "
                              "built for the host only; executed on x86-64 by the pass's "
                              "execute.test)")
                        compiled_cpu[t] = compiled_cpu.get(t, 0) + 1
    cpu = ", ".join(f"{t} {executed[t]}" for t in CPU_TARGETS if t in targets)
    gpu = ", ".join(f"{t} {compiled.get(t, 0)}" for t in targets if t not in CPU_TARGETS)
    tasks = ", ".join(f"{t} {n}" for t, n in compiled_cpu.items())
    print(f"summary: {a.pass_name}: {functions} functions of {inputs} inputs; executed: {cpu}; "
          f"compiled: {gpu or '-'}; async inputs compiled: {tasks or '-'}; skipped targets: "
          f"{', '.join(f'{t} ({w})' for t, w in missing.items()) or 'none'}; "
          f"findings: {findings}")
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
