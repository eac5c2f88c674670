"""Large call outputs are advised onto transparent huge pages (where Linux
gives them on request), small ones are not, and the results do not change."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
import torch

from llvmaccel import compiler, hugepages
from llvmaccel.graph import DType, Graph, Sym

needs_madvise = pytest.mark.skipif(not hugepages.enabled(),
                                   reason="transparent huge pages are not 'madvise' here")


def _vm_flags(address: int) -> list[str]:
    """The VmFlags of the mapping of this process that holds ``address``."""
    inside = False
    with open("/proc/self/smaps") as f:
        for line in f:
            head = line.split()[0]
            if "-" in head and not head.endswith(":"):
                lo, hi = (int(v, 16) for v in head.split("-"))
                inside = lo <= address < hi
            elif inside and head == "VmFlags:":
                return line.split()[1:]
    raise AssertionError(f"no mapping holds {address:#x}")


def _exp_graph() -> Graph:
    g = Graph()
    x = g.input("x", (Sym("n"),), DType.f32)
    g.set_outputs([g.unary("exp", x)])
    return g


@needs_madvise
def test_a_large_output_is_on_huge_pages_and_a_small_one_is_not(monkeypatch):
    advised: list[tuple[int, bool]] = []
    real = hugepages.advise

    def spy(address: int, nbytes: int) -> bool:
        done = real(address, nbytes)
        advised.append((nbytes, done))
        return done

    monkeypatch.setattr(hugepages, "advise", spy)
    c = compiler.compile_graph(_exp_graph())
    big = np.linspace(-3, 3, 8 << 20, dtype=np.float32)  # 32 MiB
    small = big[: 1 << 16]
    for data in (big, torch.from_numpy(big)):
        (out,) = c(data)
        address = out.ctypes.data if isinstance(out, np.ndarray) else out.data_ptr()
        # The interior of the buffer: the first 2 MiB page boundary inside it.
        interior = -(-address // hugepages.HUGE_PAGE) * hugepages.HUGE_PAGE
        assert "hg" in _vm_flags(interior)
        np.testing.assert_allclose(np.asarray(out), np.exp(big), rtol=1e-6)
    assert len(advised) == 2 and all(n >= big.nbytes and done for n, done in advised)
    advised.clear()
    (out,) = c(torch.from_numpy(small))
    # Not advised (the mapping may still be, when the allocator reuses the
    # freed pages of a large buffer advised before: not checked).
    assert advised == [(small.nbytes, False)]
    np.testing.assert_allclose(out.numpy(), np.exp(small), rtol=1e-6)


def test_small_and_null_buffers_are_left_alone():
    assert not hugepages.advise(0, 64 << 20)
    buf = np.empty(1 << 20, np.uint8)
    assert not hugepages.advise(buf.ctypes.data, buf.nbytes)


def test_the_environment_turns_it_off():
    code = "from llvmaccel import hugepages; print(hugepages.enabled())"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**os.environ, "LLVMACCEL_HUGEPAGES": "off"}, check=True)
    assert out.stdout.strip() == "False"
