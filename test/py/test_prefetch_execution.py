"""accel-prefetch never changes results: the demo kernels (C compiled to IR)
run before and after the pass, on the same random inputs, give identical
outputs, for distances from 1 to 256 and for awkward shapes (empty bags, a
single bag, rows shorter than the distance)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import llvmaccel

KERNELS = Path(llvmaccel.__file__).parent / "kernels"
DISTANCES = (1, 3, 16, 256)


def _variants(ir_file: str) -> list[llvmaccel.jit.CompiledModule]:
    module = llvmaccel.load_module(KERNELS / ir_file)
    base = llvmaccel.jit.compile(module, "default<O3>", auto="none")
    accel = [llvmaccel.jit.compile(module, f"default<O3>,function(accel-prefetch<distance={d}>)",
                                   auto="none") for d in DISTANCES]
    accel.append(llvmaccel.jit.compile(module, "default<O3>", auto="all"))
    for compiled in accel:
        assert compiled.report.passed("accel-prefetch"), compiled.report.table()
    assert not base.report.remarks
    return [base, *accel]


def _offsets(rng: np.random.Generator, bags: int, max_len: int) -> np.ndarray:
    lengths = rng.integers(0, max_len + 1, bags)
    return np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)


@pytest.fixture(scope="module")
def embedding_bag():
    variants = _variants("embedding_bag.ll")
    return [v["embedding_bag_sum"] for v in variants]


@pytest.fixture(scope="module")
def spmv():
    variants = _variants("spmv.ll")
    return [v["spmv_csr"] for v in variants]


@pytest.mark.parametrize("bags, max_len", [(1, 1), (1, 40), (7, 0), (33, 3), (200, 64)])
def test_embedding_bag_same_results(embedding_bag, bags, max_len):
    rng = np.random.default_rng(bags * 1000 + max_len)
    rows = 512
    table = rng.standard_normal((rows, 64), dtype=np.float32)
    offsets = _offsets(rng, bags, max_len)
    # The index array is exactly as long as the last offset says.
    indices = rng.integers(0, rows, int(offsets[-1]), dtype=np.int64)
    outputs = []
    for fn in embedding_bag:
        out = np.full((bags, 64), np.nan, dtype=np.float32)
        fn(table, indices, offsets, bags, out)
        outputs.append(out)
    for out in outputs[1:]:
        np.testing.assert_array_equal(out, outputs[0])


@pytest.mark.parametrize("rows, max_len", [(1, 5), (9, 0), (50, 17), (300, 40)])
def test_spmv_same_results(spmv, rows, max_len):
    rng = np.random.default_rng(rows * 1000 + max_len)
    n = 4096
    row_ptr = _offsets(rng, rows, max_len)
    nnz = int(row_ptr[-1])
    cols = rng.integers(0, n, nnz, dtype=np.int32)
    vals = rng.standard_normal(nnz)
    x = rng.standard_normal(n)
    outputs = []
    for fn in spmv:
        y = np.full(rows, np.nan)
        fn(row_ptr, cols, vals, x, rows, y)
        outputs.append(y)
    for y in outputs[1:]:
        np.testing.assert_array_equal(y, outputs[0])
