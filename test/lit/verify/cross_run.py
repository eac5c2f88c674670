"""Compiles an IR program (with main) for a CPU target and runs it under qemu-user.

    cross_run.py --clang CLANG aarch64|riscv64 program.ll|.bc [args...]

AArch64 is compiled with SVE (-march=armv8-a+sve, run with -cpu max), RISC-V
with V (-march=rv64gcv, run with a 256-bit VLEN); linked statically with the
cross C compiler (scripts/setup.sh --cross installs it and qemu-user). The
program's stdout and exit status are passed through.
"""

import argparse
import os
import subprocess
import sys
import tempfile

TARGETS = {
    "aarch64": ("aarch64-linux-gnu", ["-march=armv8-a+sve"], ["qemu-aarch64", "-cpu", "max"]),
    "riscv64": ("riscv64-linux-gnu", ["-march=rv64gcv"],
                ["qemu-riscv64", "-cpu", "rv64,v=true,vlen=256,vext_spec=v1.0"]),
}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--clang", required=True)
    ap.add_argument("target", choices=sorted(TARGETS))
    ap.add_argument("program")
    ap.add_argument("args", nargs="*")
    a = ap.parse_args()
    triple, march, runner = TARGETS[a.target]
    with tempfile.TemporaryDirectory() as work:
        obj = os.path.join(work, "p.o")
        exe = os.path.join(work, "p")
        subprocess.run([a.clang, f"--target={triple}", *march, "-O2", "-Wno-override-module",
                        "-c", a.program, "-o", obj], check=True)
        subprocess.run([f"{triple}-gcc", "-static", obj, "-lm", "-o", exe], check=True)
        return subprocess.run([*runner, exe, *a.args]).returncode


if __name__ == "__main__":
    sys.exit(main())
