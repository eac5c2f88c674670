"""Graphs compiled for another CPU and run there: under qemu-user, or natively.

:func:`run` is what ``compile_graph(graph)(*inputs)`` does, for a target
other than this machine: an AArch64 server CPU (``neoverse-v1``: SVE and
bf16 dot products; ``neoverse-n1``: NEON only), or an x86-64 CPU other than
the host (``haswell``'s AVX2 on an AVX-512 host). So the code generator's
target-dependent choices (vector widths and tiles taken from the target's
TargetTransformInfo, glibc's vector math variants of that ISA, the bf16 dot
products of each ISA) are executed and checked on targets this machine is
not. The stages:

1. :func:`llvmaccel.codegen.generate` for :func:`llvmaccel.target.named`
   ``(triple, cpu)``: the serial kernel (no thread pool, no BLAS: those are
   this process's, not the target's);
2. the pipeline the JIT runs (``default<O3>`` with the llvmaccel passes and
   glibc's vector math), for the target's triple and CPU;
3. ``llc`` to an object file, linked statically with a C driver written for
   the kernel's signature by the target's C compiler
   (``aarch64-linux-gnu-gcc``; ``cc`` for x86-64), with the vector math
   variants its C library has (:func:`vector_math`: none in glibc before
   2.38 on AArch64, so the math stays scalar there);
4. the program runs under ``qemu-aarch64 -cpu max`` (natively for x86-64)
   on buffers that each end at an unmapped page (outputs and temporaries
   start 64-byte aligned, as the JIT's caller allocates them, and are
   filled with ``0xff`` bytes first: NaN for floats, so a kernel that reads
   an output before writing it shows), and the outputs come back as numpy
   arrays.

Timings under emulation mean nothing; results do. Needs the cross tools
(``scripts/setup.sh --cross``: qemu-user, gcc-aarch64-linux-gnu with its C
library); :func:`available` says what is missing.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import shutil
import struct
import subprocess
import tempfile
from collections.abc import Mapping
from typing import Any

import numpy as np

from .codegen import Kernel, generate
from .compiler import DEFAULT_PIPELINE, bind_inputs, buffer_sizes, raise_kernel_error
from .crosstarget import CPU_TARGETS
from .graph import Graph
from .ir import parse_ir
from .pipeline import run_passes
from .target import TargetInfo, named

__all__ = ["available", "compile_for", "run", "vector_math", "CrossProgram", "DEFAULT_CPUS"]

#: The CPU a target's name stands for when none is given.
DEFAULT_CPUS = {"aarch64": "neoverse-v1", "x86_64": "x86-64-v3"}


def available(arch: str = "aarch64") -> str:
    """Why programs for ``arch`` cannot be built and run here ("" when they can)."""
    if arch not in CPU_TARGETS:
        return f"unknown architecture {arch!r} (known: {', '.join(CPU_TARGETS)})"
    from .reduce import find_llvm_tool
    cc, runner = _tools(arch)
    missing = [x for x in (cc, *runner[:1]) if not shutil.which(x)]
    try:
        find_llvm_tool("llc")
    except FileNotFoundError:
        missing.append("llc")
    return f"missing {', '.join(missing)}" if missing else ""


def _target(target: TargetInfo | str, cpu: str | None) -> TargetInfo:
    if isinstance(target, str):
        if target not in CPU_TARGETS:
            raise ValueError(f"unknown architecture {target!r} "
                             f"(known: {', '.join(CPU_TARGETS)})")
        triple = CPU_TARGETS[target].triple.replace("-linux-", "-unknown-linux-")
        target = named(triple, cpu or DEFAULT_CPUS.get(target, "generic"))
    if target.vector_math is None and target.arch in CPU_TARGETS:
        target = dataclasses.replace(target, vector_math=vector_math(target.arch))
    return target


@functools.cache
def vector_math(arch: str) -> frozenset[str]:
    """The vector math variants (``_ZGV...``) of the C library the programs
    for ``arch`` link with: its static ``libmvec`` (glibc has AArch64 ones
    from 2.38 on; Debian 12's cross libc, 2.36, has none)."""
    from .reduce import find_llvm_tool
    cc = _tools(arch)[0]
    path = subprocess.run([cc, "-print-file-name=libmvec.a"], capture_output=True,
                          text=True).stdout.strip()
    if not os.path.isabs(path) or not os.path.exists(path):
        return frozenset()
    listed = subprocess.run([find_llvm_tool("llvm-nm"), "--defined-only", "--just-symbol-name",
                             path], capture_output=True, text=True).stdout
    return frozenset(s for s in listed.split() if s.startswith("_ZGV"))


def _with_target(ir: str, t: TargetInfo) -> str:
    """The kernel's module for ``t``: its triple, and every function compiled
    for its CPU (as the JIT names the host's in every function)."""
    attrs = f'"target-cpu"="{t.cpu}"'
    lines = []
    for line in ir.splitlines():
        if line.startswith("define ") and line.endswith("{"):
            line = line[:-1] + attrs + " {"
        lines.append(line)
    return f'target triple = "{t.triple}"\n' + "\n".join(lines) + "\n"



def _driver(kernel: Kernel, nptr: int) -> str:
    """A C program that reads the buffers and sizes, calls the kernel once and
    writes its return code and output buffers (see :meth:`CrossProgram.run`)."""
    params = ", ".join(["void *"] * nptr + ["int64_t"] * len(kernel.symbols)) or "void"
    args = ", ".join([f"b[{i}]" for i in range(nptr)] +
                     [f"s[{j}]" for j in range(len(kernel.symbols))])
    return _DRIVER.replace("@PARAMS@", params).replace("@ARGS@", args).replace(
        "@NAME@", kernel.name)


_DRIVER = r"""
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int32_t @NAME@(@PARAMS@);

static void need(int ok, const char *what) {
  if (!ok) { perror(what); exit(3); }
}

/* A buffer of n bytes whose end is as close to an unmapped page as its
   alignment allows. */
static void *guarded(uint64_t n, uint64_t align) {
  long page = sysconf(_SC_PAGESIZE);
  uint64_t span = (n + align - 1) / align * align;
  uint64_t pages = (span + page - 1) / page + 1;
  char *base = mmap(0, pages * page, PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  need(base != MAP_FAILED, "mmap");
  need(mprotect(base + (pages - 1) * page, page, PROT_NONE) == 0, "mprotect");
  return base + (pages - 1) * page - span;
}

int main(int argc, char **argv) {
  need(argc == 3, "usage: driver in out");
  FILE *in = fopen(argv[1], "rb");
  need(in != 0, "input");
  uint32_t nbuf, nsym;
  need(fread(&nbuf, 4, 1, in) == 1, "read");
  void **b = calloc(nbuf + 1, sizeof(void *));
  uint64_t *sizes = calloc(nbuf + 1, 8);
  uint32_t *kinds = calloc(nbuf + 1, 4);
  for (uint32_t i = 0; i < nbuf; i++) {
    need(fread(&sizes[i], 8, 1, in) == 1 && fread(&kinds[i], 4, 1, in) == 1, "read");
    if (!sizes[i]) { b[i] = 0; continue; }
    /* inputs end exactly at the guard page; outputs and temporaries start
       64-byte aligned, as the JIT's caller allocates them */
    b[i] = guarded(sizes[i], kinds[i] == 0 ? 1 : 64);
    if (kinds[i] == 0)
      need(fread(b[i], 1, sizes[i], in) == sizes[i], "read");
    else
      memset(b[i], 0xff, sizes[i]);
  }
  need(fread(&nsym, 4, 1, in) == 1, "read");
  int64_t *s = calloc(nsym + 1, 8);
  need(fread(s, 8, nsym, in) == nsym, "read");
  fclose(in);
  int32_t rc = @NAME@(@ARGS@);
  FILE *out = fopen(argv[2], "wb");
  need(out != 0, "output");
  fwrite(&rc, 4, 1, out);
  for (uint32_t i = 0; i < nbuf; i++)
    if (kinds[i] == 1 && sizes[i])
      fwrite(b[i], 1, sizes[i], out);
  fclose(out);
  return 0;
}
"""


class CrossProgram:
    """A graph's kernel compiled for another target into a program; call
    :meth:`run` with inputs as :class:`llvmaccel.CompiledGraph` takes them.

    Attributes:
        graph: The source graph.
        kernel: The generated code (``kernel.ir`` before the pipeline).
        target: The target it was generated and compiled for.
        optimized_ir: The module after the pipeline, as llc compiled it.
        path: The program (in a temporary directory kept with this object).
    """

    def __init__(self, graph: Graph, kernel: Kernel, target: TargetInfo, arch: str,
                 optimized_ir: str, workdir: tempfile.TemporaryDirectory, path: str) -> None:
        self.graph = graph
        self.kernel = kernel
        self.target = target
        self.arch = arch
        self.optimized_ir = optimized_ir
        self._workdir = workdir
        self.path = path

    def run(self, *inputs: Any, symbols: Mapping[str, int] | None = None,
            timeout: float = 600.0) -> list[np.ndarray]:
        """Runs the program once on ``inputs`` (numpy arrays) and returns the
        graph's outputs.

        Raises:
            TypeError, ValueError: inputs that do not fit the graph (as a
                compiled graph raises them).
            KernelIndexError, KernelZeroDivisionError: the kernel's own checks.
            RuntimeError: the program did not run to completion (a fault,
                with the signal, or the emulator's error).
        """
        env = bind_inputs(self.graph, self.kernel, inputs, dict(symbols or {}))
        k = self.kernel
        arrays = [np.ascontiguousarray(np.asarray(x)) for x in inputs]
        arrays += [self.graph.constants[c] for c in k.constants]
        outs = buffer_sizes(k.outputs, env, "output")
        temps = buffer_sizes(k.temps, env, "intermediate")
        blob = [struct.pack("<I", len(arrays) + len(outs) + len(temps))]
        for a in arrays:
            blob += [struct.pack("<QI", a.nbytes, 0), a.tobytes()]
        out_bytes = []
        for dims, (_, dt) in zip(outs, k.outputs, strict=True):
            n = int(np.prod(dims, dtype=np.int64)) * dt.itemsize
            out_bytes.append(n)
            blob.append(struct.pack("<QI", n, 1))
        for dims, (_, dt) in zip(temps, k.temps, strict=True):
            blob.append(struct.pack("<QI", int(np.prod(dims, dtype=np.int64)) * dt.itemsize, 2))
        blob.append(struct.pack("<I", len(k.symbols)))
        blob += [struct.pack("<q", env[s]) for s in k.symbols]
        d = self._workdir.name
        src, dst = os.path.join(d, "in.bin"), os.path.join(d, "out.bin")
        with open(src, "wb") as f:
            f.write(b"".join(blob))
        runner = _tools(self.arch)[1]
        done = subprocess.run([*runner, self.path, src, dst], capture_output=True,
                              timeout=timeout)
        if done.returncode != 0:
            how = (f"signal {-done.returncode}" if done.returncode < 0
                   else f"exit status {done.returncode}")
            raise RuntimeError(f"the {self.arch} program ({self.target.cpu}) ended with {how}: "
                               f"{done.stderr.decode(errors='replace').strip()[-500:]}")
        with open(dst, "rb") as f:
            data = f.read()
        (rc,) = struct.unpack_from("<i", data)
        if rc:
            raise_kernel_error(k, rc)
        at, results = 4, []
        for dims, (_, dt), n in zip(outs, k.outputs, out_bytes, strict=True):
            results.append(np.frombuffer(data[at:at + n], dtype=dt.np_dtype).reshape(dims).copy())
            at += n
        return [results[i] for i in k.output_map]


def _tools(arch: str) -> tuple[str, tuple[str, ...]]:
    """The C compiler and the runner of programs for ``arch``: this machine's
    own (``cc``, run directly) for its architecture, else the cross
    compiler and qemu-user (an x86-64 program on an AArch64 host too)."""
    if arch == os.uname().machine:
        return "cc", ()
    if arch == "x86_64":
        return "x86_64-linux-gnu-gcc", ("qemu-x86_64",)
    t = CPU_TARGETS[arch]
    return t.cc, t.runner


def compile_for(graph: Graph, target: TargetInfo | str = "aarch64", cpu: str | None = None,
                *, pipeline: str = DEFAULT_PIPELINE) -> CrossProgram:
    """Generates ``graph``'s kernel for ``target`` and builds a program of it.

    Args:
        graph: The graph.
        target: An architecture (``"aarch64"``, ``"x86_64"``; its CPU is
            ``cpu``, else :data:`DEFAULT_CPUS`'s) or a :class:`TargetInfo`.
        cpu: LLVM's name of the CPU (``"neoverse-n1"``, ``"haswell"``).
        pipeline: The pass pipeline (the JIT's by default).

    Raises:
        RuntimeError: the tools are missing (:func:`available`), or a step
            failed (with its error output).
        PipelineError: LLVM does not know the target or the CPU.
    """
    t = _target(target, cpu)
    arch = t.arch
    why = available(arch)
    if why:
        raise RuntimeError(f"cannot build programs for {arch} here: {why} "
                           "(scripts/setup.sh --cross installs them)")
    kernel = generate(graph, target=t, threads=False)
    if kernel.uses_blas or kernel.links:
        raise RuntimeError("the kernel calls this machine's libraries (BLAS or custom op "
                           "bodies), which a program for another target cannot")
    module = parse_ir(_with_target(kernel.ir, t), "llvmaccel-cross")
    # LLVM's own table of glibc's variants, as the JIT has it, where the
    # target's library has them.
    run_passes(module, pipeline, auto="all", vector_library="libmvec" if t.vector_math else None,
               remarks=None)
    optimized = str(module)
    from .reduce import find_llvm_tool
    work = tempfile.TemporaryDirectory(prefix="llvmaccel-cross-")
    d = work.name
    ll, obj = os.path.join(d, "kernel.ll"), os.path.join(d, "kernel.o")
    driver, exe = os.path.join(d, "driver.c"), os.path.join(d, "program")
    with open(ll, "w") as f:
        f.write(optimized)
    with open(driver, "w") as f:
        f.write(_driver(kernel, len(kernel.inputs) + len(kernel.constants) +
                        len(kernel.outputs) + len(kernel.temps)))
    steps = [[find_llvm_tool("llc"), "-O3", f"-mtriple={t.triple}", f"-mcpu={t.cpu}",
              "-filetype=obj", ll, "-o", obj],
             [_tools(arch)[0], "-O1", "-static", driver, obj,
              *(["-lmvec"] if t.vector_math else []), "-lm", "-o", exe]]
    for cmd in steps:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        if done.returncode != 0:
            raise RuntimeError(f"{os.path.basename(cmd[0])} failed: {done.stderr.strip()[-1000:]}")
    return CrossProgram(graph, kernel, t, arch, optimized, work, exe)


def run(graph: Graph, *inputs: Any, target: TargetInfo | str = "aarch64",
        cpu: str | None = None, symbols: Mapping[str, int] | None = None) -> list[np.ndarray]:
    """``graph``'s outputs on ``inputs``, computed by its kernel compiled for
    ``target`` (see :func:`compile_for`) and run there once."""
    return compile_for(graph, target, cpu).run(*inputs, symbols=symbols)
