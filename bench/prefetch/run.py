#!/usr/bin/env python3
"""Benchmark harness for the ``accel-prefetch`` pass of llvmaccel.

Every kernel in ``kernels/`` is compiled with clang-22 at ``-O3 -march=native``
in several variants and loaded as a shared library through ctypes:

``o3``
    plain ``-O3 -march=native`` (the baseline).
``accel``
    the same plus ``-fpass-plugin=LLVMAccel.so`` (accel-prefetch joins the O3
    pipeline at OptimizerLast); ``--accel-params`` adds variants that run
    ``accel-prefetch<PARAMS>`` explicitly with opt on the O3 output.
``ldp-dN``
    LLVM's own ``loop-data-prefetch`` run by opt on the O3 output with
    ``-prefetch-distance=N -cache-line-size=64`` (x86 has no pipeline slot and
    no prefetch distance for it, so clang alone never runs it), then llc.
``hand-dN``
    the kernel's ``#ifdef HAND_PREFETCH`` code with ``-DPF_DIST=N``.

The data is set up once; in each round every variant runs once, in a fixed
interleaved order, on the same data. Per variant the median over the rounds is
reported and ``ratio = median(o3) / median(variant)``. The checksum of every
call (and the full output of kernels that write one) must equal the ``o3``
one, or the run fails.

Usage::

    .venv/bin/python bench/prefetch/run.py            # full run
    .venv/bin/python bench/prefetch/run.py --quick    # smoke run
"""

from __future__ import annotations

import argparse
import ctypes
import dataclasses
import datetime as dt
import hashlib
import json
import mmap
import os
import platform
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
KERNELS = HERE / "kernels"
LLVM_BIN = Path(os.environ.get("LLVM_BIN", "/usr/lib/llvm-22/bin"))
DEFAULT_PLUGIN = REPO / "build" / "llvm-22" / "lib" / "LLVMAccel.so"
CFLAGS = ["-O3", "-march=native", "-fPIC"]
MIB = 1 << 20

# ---------------------------------------------------------------------------
# Sizes
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Sizes:
    """Problem sizes for one run (see ``FULL`` and ``QUICK``)."""

    emb_rows: int  # rows of 64 floats in the embedding table
    emb_bags: int
    emb_bag_size: int
    gather_n: int  # lookups of the tight gathers
    small_table_floats: int  # cache-resident gather table
    spmv_x: int  # doubles in x
    spmv_rows: int
    spmv_nnz_min: int
    spmv_nnz_max: int
    hash_log2_slots: int  # 16-byte slots
    hash_keys: int
    hash_probes: int
    stream_u64: int
    hj_log2_buckets: int  # 32-byte buckets of the chained hash join
    hj_build: int
    hj_probe: int
    ra_log2_table: int  # uint64 entries of the random-access table
    ra_blocks: int  # blocks of 128 updates
    hist_keys: int
    hist_buckets: int  # uint32 counters
    rounds: int


FULL = Sizes(
    emb_rows=4 << 20,  # 4M x 64 x 4 B = 1 GiB
    emb_bags=64 << 10,
    emb_bag_size=32,
    gather_n=16 << 20,
    small_table_floats=16 << 10,  # 64 KiB
    spmv_x=64 << 20,  # 512 MiB
    spmv_rows=512 << 10,
    spmv_nnz_min=8,
    spmv_nnz_max=24,
    hash_log2_slots=26,  # 64M x 16 B = 1 GiB
    hash_keys=32 << 20,  # load factor 0.5
    hash_probes=4 << 20,
    stream_u64=128 << 20,  # 1 GiB
    hj_log2_buckets=23,  # 8M x 32 B = 256 MiB
    hj_build=12_800_000,
    hj_probe=12_800_000,
    ra_log2_table=27,  # 128M x 8 B = 1 GiB
    ra_blocks=64 << 10,  # 8M updates
    hist_keys=16 << 20,
    hist_buckets=32 << 20,  # 128 MiB of counters
    rounds=11,
)

QUICK = Sizes(
    emb_rows=16 << 10,
    emb_bags=512,
    emb_bag_size=32,
    gather_n=64 << 10,
    small_table_floats=16 << 10,
    spmv_x=256 << 10,
    spmv_rows=4 << 10,
    spmv_nnz_min=8,
    spmv_nnz_max=24,
    hash_log2_slots=16,
    hash_keys=32 << 10,
    hash_probes=16 << 10,
    stream_u64=1 << 20,
    hj_log2_buckets=14,
    hj_build=25_000,
    hj_probe=25_000,
    ra_log2_table=16,
    ra_blocks=256,
    hist_keys=64 << 10,
    hist_buckets=64 << 10,
    rounds=2,
)

#: Counters of the cache-resident histogram control (64 KiB), at every size.
HIST_SMALL_BUCKETS = 16 << 10

FULL_HAND_DISTS = (4, 8, 16, 32, 64)
QUICK_HAND_DISTS = (16,)
FULL_LDP_DISTS = (64, 256, 1024, 4096)
QUICK_LDP_DISTS = (256,)

# ---------------------------------------------------------------------------
# Variants and building
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Variant:
    """One way of compiling a kernel."""

    name: str
    kind: str  # o3 | accel | accel-explicit | ldp | hand
    param: str = ""  # distance (ldp, hand) or accel-prefetch parameters

    @property
    def family(self) -> str:
        """The column the variant is reported in (sweeps collapse to one)."""
        return {"accel-explicit": "accel-explicit"}.get(self.kind, self.kind)


def make_variants(
    hand_dists: Sequence[int], ldp_dists: Sequence[int], accel_params: Sequence[str]
) -> list[Variant]:
    """The variants in the order each round runs them."""
    vs = [Variant("o3", "o3"), Variant("accel", "accel")]
    vs += [Variant(f"accel[{p}]", "accel-explicit", p) for p in accel_params]
    vs += [Variant(f"ldp-d{d}", "ldp", str(d)) for d in ldp_dists]
    vs += [Variant(f"hand-d{d}", "hand", str(d)) for d in hand_dists]
    return vs


class BuildError(RuntimeError):
    """A build command failed; ``stderr`` has its diagnostics."""

    def __init__(self, cmd: Sequence[str], returncode: int, stderr: str) -> None:
        """Records the failed command line, its exit status and its stderr."""
        super().__init__(f"command failed ({returncode}): {shlex.join(cmd)}\n{stderr}")
        self.cmd = list(cmd)
        self.stderr = stderr


def _run(cmd: Sequence[str]) -> None:
    proc = subprocess.run(list(cmd), capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise BuildError(cmd, proc.returncode, proc.stderr)
    # Surface diagnostics such as plugin errors even when the command succeeded.
    if proc.stderr.strip():
        sys.stderr.write(proc.stderr)


def _failure_summary(stderr: str) -> str:
    """One line saying why a build failed: the crash site or the first error."""
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    errors = [ln for ln in lines if re.search(r"(^|\s)error:", ln)]
    if "Stack dump:" in stderr:
        where = [ln for ln in lines if re.match(r"\d+\.\s+Running pass", ln)]
        signal = next((ln for ln in errors if "signal" in ln or "Segmentation" in ln), "")
        site = where[-1].split(None, 1)[1] if where else "unknown pass"
        return f"compiler crashed {signal.split('error:', 1)[-1].strip()} - {site}"
    return errors[0] if errors else (lines[0] if lines else "no diagnostics")


def _file_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@dataclass
class Build:
    """A compiled kernel library and how it was made."""

    lib: Path | None  # None: the build failed (accel variants only)
    commands: list[list[str]]
    prefetch_insns: int | None
    error: str | None = None  # first lines of the failure; full log beside the lib


class Builder:
    """Compiles kernel sources into cached shared libraries."""

    def __init__(self, work: Path, plugin: Path) -> None:
        """Builds go to ``work``; ``plugin`` is the LLVMAccel pass plugin."""
        self.work = work
        self.plugin = plugin
        self.clang = str(LLVM_BIN / "clang")
        self.opt = str(LLVM_BIN / "opt")
        self.llc = str(LLVM_BIN / "llc")
        self.objdump = str(LLVM_BIN / "llvm-objdump")
        self.work.mkdir(parents=True, exist_ok=True)
        self.plugin_source = plugin
        self._plugin_digest = _file_digest(plugin) if plugin.exists() else "missing"
        if plugin.exists():
            # Build against a snapshot: the plugin may be rebuilt while we run.
            snap = self.work / "plugins" / f"LLVMAccel.{self._plugin_digest[:12]}.so"
            if not snap.exists():
                snap.parent.mkdir(exist_ok=True)
                tmp = snap.with_suffix(".tmp")
                shutil.copyfile(plugin, tmp)
                tmp.replace(snap)
            self.plugin = snap

    def commands(self, src: Path, v: Variant, out: Path) -> list[list[str]]:
        """The command lines that build ``src`` as variant ``v`` into ``out``."""
        cc = [self.clang, *CFLAGS]
        ll = out.with_suffix(".ll")
        opt_ll = out.with_suffix(".opt.ll")
        obj = out.with_suffix(".o")
        if v.kind == "o3":
            return [[*cc, "-shared", str(src), "-o", str(out)]]
        if v.kind == "accel":
            return [[*cc, f"-fpass-plugin={self.plugin}", "-shared", str(src), "-o", str(out)]]
        if v.kind == "hand":
            return [
                [
                    *cc,
                    "-DHAND_PREFETCH",
                    f"-DPF_DIST={v.param}",
                    "-shared",
                    str(src),
                    "-o",
                    str(out),
                ]
            ]
        # ldp / accel-explicit: O3 to IR, one extra opt pass, then llc (the same
        # codegen clang would run; checked to give identical code for o3).
        if v.kind == "ldp":
            opt = [
                self.opt,
                "-passes=loop-data-prefetch",
                f"-prefetch-distance={v.param}",
                "-cache-line-size=64",
            ]
        elif v.kind == "accel-explicit":
            # "PARAMS -flag ...": pass parameters, then extra opt options
            # (e.g. the pass's hidden tuning knobs).
            params, *flags = str(v.param).split()
            opt = [
                self.opt,
                f"-load-pass-plugin={self.plugin}",
                f"-passes=function(accel-prefetch<{params}>)",
                *flags,
            ]
        else:
            raise ValueError(v.kind)
        return [
            [*cc, "-S", "-emit-llvm", str(src), "-o", str(ll)],
            [*opt, "-S", str(ll), "-o", str(opt_ll)],
            [
                self.llc,
                "-O3",
                "-relocation-model=pic",
                "-filetype=obj",
                str(opt_ll),
                "-o",
                str(obj),
            ],
            [self.clang, "-shared", str(obj), "-o", str(out)],
        ]

    def build(self, src: Path, v: Variant) -> Build:
        """Builds (or reuses) ``src`` as variant ``v``."""
        key = hashlib.sha256()
        key.update(src.read_bytes())
        key.update(repr(v).encode())
        key.update(repr(CFLAGS).encode())
        if v.kind.startswith("accel"):
            key.update(self._plugin_digest.encode())
        stem = f"{src.stem}.{v.name.replace('[', '_').replace(']', '').replace(';', '_')}"
        stem = "".join(c if c.isalnum() or c in "._-" else "_" for c in stem)
        out = self.work / f"{stem}.{key.hexdigest()[:12]}.so"
        cmds = self.commands(src, v, out)
        if not out.exists():
            try:
                for cmd in cmds:
                    _run(cmd)
            except BuildError as e:
                if not v.kind.startswith("accel"):
                    raise
                # The pass under test crashed or rejected its parameters: report it
                # and measure everything else.
                log = out.with_suffix(".log")
                log.write_text(f"$ {shlex.join(e.cmd)}\n{e.stderr}")
                head = _failure_summary(e.stderr)
                return Build(None, cmds, None, f"{head} (log: {log})")
        return Build(out, cmds, self.count_prefetches(out))

    def count_prefetches(self, lib: Path) -> int:
        """Number of prefetch instructions in ``lib``'s code."""
        proc = subprocess.run(
            [self.objdump, "-d", "--no-show-raw-insn", str(lib)],
            capture_output=True,
            text=True,
            check=True,
        )
        return sum(1 for line in proc.stdout.splitlines() if "\tprefetch" in line)


# ---------------------------------------------------------------------------
# Data
# ---------------------------------------------------------------------------

_MAPPINGS: list[mmap.mmap] = []


def big_array(shape: int | tuple[int, ...], dtype: npt.DTypeLike, thp: bool) -> np.ndarray:
    """A page-aligned zeroed array on its own mapping, with THP advice."""
    dt_ = np.dtype(dtype)
    count = int(np.prod(shape))
    nbytes = max(count * dt_.itemsize, 1)
    m = mmap.mmap(-1, nbytes, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    advice = getattr(mmap, "MADV_HUGEPAGE" if thp else "MADV_NOHUGEPAGE", None)
    if advice is not None:
        m.madvise(advice)
    _MAPPINGS.append(m)
    return np.frombuffer(m, dtype=dt_, count=count).reshape(shape)


def ptr(a: np.ndarray) -> ctypes.c_void_p:
    """The address of ``a``'s data for a ctypes call."""
    return ctypes.c_void_p(a.ctypes.data)


@dataclass
class Data:
    """All benchmark inputs and outputs, allocated once per process."""

    emb_table: np.ndarray  # [rows, 64] float32
    emb_indices: np.ndarray  # int64
    emb_offsets: np.ndarray  # int64, num_bags + 1
    emb_out: np.ndarray  # [bags, 64] float32
    gather_idx: np.ndarray  # int32 over the whole table viewed as floats
    small_idx: np.ndarray  # int32 over the small table
    spmv_rowptr: np.ndarray
    spmv_cols: np.ndarray
    spmv_vals: np.ndarray
    spmv_x: np.ndarray
    spmv_y: np.ndarray
    hash_table: np.ndarray  # uint64 pairs (key, payload)
    hash_keys: np.ndarray
    hash_longest_probe: int
    hj_buckets: np.ndarray  # 32-byte chained buckets, as uint64 quads
    hj_overflow: np.ndarray
    hj_keys: np.ndarray  # uint32 probe keys
    ra_table: np.ndarray  # uint64
    ra_seeds: np.ndarray  # uint64[128]
    hist_keys: np.ndarray  # uint32
    hist_count: np.ndarray  # uint32
    hist_small_keys: np.ndarray  # uint32 below hist_small_buckets
    hj_overflow_used: int
    setup_seconds: float
    total_bytes: int


def make_data(s: Sizes, setup: ctypes.CDLL, thp: bool) -> Data:
    """Allocates and fills all inputs (deterministic, seeded)."""
    t0 = time.perf_counter()
    i64, u64 = ctypes.c_int64, ctypes.c_uint64
    emb_table = big_array((s.emb_rows, 64), np.float32, thp)
    setup.fill_f32(ptr(emb_table), i64(emb_table.size), u64(1))
    n_lookups = s.emb_bags * s.emb_bag_size
    emb_indices = big_array(n_lookups, np.int64, thp)
    setup.fill_idx_i64(ptr(emb_indices), i64(n_lookups), i64(s.emb_rows), u64(2))
    emb_offsets = big_array(s.emb_bags + 1, np.int64, thp)
    setup.fill_arange_i64(ptr(emb_offsets), i64(s.emb_bags + 1), i64(s.emb_bag_size))
    emb_out = big_array((s.emb_bags, 64), np.float32, thp)

    gather_idx = big_array(s.gather_n, np.int32, thp)
    setup.fill_idx_i32(ptr(gather_idx), i64(s.gather_n), i64(emb_table.size), u64(3))
    small_idx = big_array(s.gather_n, np.int32, thp)
    setup.fill_idx_i32(ptr(small_idx), i64(s.gather_n), i64(s.small_table_floats), u64(4))

    rng = np.random.default_rng(5)
    lengths = rng.integers(s.spmv_nnz_min, s.spmv_nnz_max + 1, size=s.spmv_rows)
    spmv_rowptr = big_array(s.spmv_rows + 1, np.int64, thp)
    spmv_rowptr[0] = 0
    np.cumsum(lengths, out=spmv_rowptr[1:])
    nnz = int(spmv_rowptr[-1])
    spmv_cols = big_array(nnz, np.int32, thp)
    setup.fill_idx_i32(ptr(spmv_cols), i64(nnz), i64(s.spmv_x), u64(6))
    spmv_vals = big_array(nnz, np.float64, thp)
    setup.fill_f64(ptr(spmv_vals), i64(nnz), u64(7))
    spmv_x = big_array(s.spmv_x, np.float64, thp)
    setup.fill_f64(ptr(spmv_x), i64(s.spmv_x), u64(8))
    spmv_y = big_array(s.spmv_rows, np.float64, thp)

    hash_table = big_array(2 << s.hash_log2_slots, np.uint64, thp)
    setup.hash_build.restype = ctypes.c_int64
    longest = setup.hash_build(ptr(hash_table), i64(s.hash_log2_slots), i64(s.hash_keys), u64(9))
    hash_keys = big_array(s.hash_probes, np.uint64, thp)
    setup.hash_probe_keys(ptr(hash_keys), i64(s.hash_probes), i64(s.hash_keys), u64(9), i64(500))
    hj_buckets = big_array(4 << s.hj_log2_buckets, np.uint64, thp)
    max_overflow = s.hj_build // 2 + 16
    hj_overflow = big_array(4 * max_overflow, np.uint64, thp)
    hj_keys = big_array(s.hj_probe, np.uint32, thp)
    setup.hj_chain_build.restype = ctypes.c_int64
    hj_used = setup.hj_chain_build(
        ptr(hj_buckets),
        i64(s.hj_log2_buckets),
        ptr(hj_overflow),
        i64(max_overflow),
        i64(s.hj_build),
        ptr(hj_keys),
        i64(s.hj_probe),
        u64(10),
    )
    if hj_used < 0:
        raise RuntimeError("hj_chain_build: overflow pool too small")
    ra_table = big_array(1 << s.ra_log2_table, np.uint64, thp)
    setup.fill_u64(ptr(ra_table), i64(ra_table.size), u64(11))
    ra_seeds = big_array(128, np.uint64, thp)
    setup.fill_u64(ptr(ra_seeds), i64(128), u64(12))
    hist_keys = big_array(s.hist_keys, np.uint32, thp)
    setup.fill_u32_range(
        ptr(hist_keys), i64(s.hist_keys), ctypes.c_uint32(s.hist_buckets), u64(13)
    )
    hist_count = big_array(s.hist_buckets, np.uint32, thp)
    hist_small_keys = big_array(s.hist_keys, np.uint32, thp)
    setup.fill_u32_range(
        ptr(hist_small_keys), i64(s.hist_keys), ctypes.c_uint32(HIST_SMALL_BUCKETS), u64(14)
    )
    arrays = [
        emb_table,
        emb_indices,
        emb_offsets,
        emb_out,
        gather_idx,
        small_idx,
        spmv_rowptr,
        spmv_cols,
        spmv_vals,
        spmv_x,
        spmv_y,
        hash_table,
        hash_keys,
    ]
    more = [hj_buckets, hj_overflow, hj_keys, ra_table, ra_seeds, hist_keys, hist_count,
            hist_small_keys]
    return Data(
        *arrays,
        int(longest),
        *more,
        int(hj_used),
        time.perf_counter() - t0,
        sum(a.nbytes for a in arrays + more),
    )


# ---------------------------------------------------------------------------
# Kernels
# ---------------------------------------------------------------------------


@dataclass
class Kernel:
    """A benchmark kernel: its source, entry point, inputs and goal."""

    name: str
    source: str
    symbol: str
    restype: Any
    description: str
    goal: float | None  # accel ratio to reach; None: informational only
    control: bool
    args: Callable[[Data, Sizes], tuple[Any, ...]]
    output: Callable[[Data], np.ndarray | None] = lambda d: None
    # Extra result read after the call (e.g. an out-parameter), part of the checksum.
    extra: Callable[[tuple[Any, ...]], Any] = lambda a: None
    working_set: Callable[[Data, Sizes], int] = lambda d, s: 0


def _i64(v: int) -> ctypes.c_int64:
    return ctypes.c_int64(v)


def _hash_args(d: Data, s: Sizes) -> tuple[Any, ...]:
    return (
        ptr(d.hash_table),
        _i64(s.hash_log2_slots),
        ptr(d.hash_keys),
        _i64(s.hash_probes),
        ctypes.pointer(ctypes.c_int64(0)),
    )


def _hash_matches(args: tuple[Any, ...]) -> int:
    return int(args[4].contents.value)



def _embbag_args(d: Any, s: Any) -> tuple:
    """Arguments of the fixed-width embedding-bag kernels."""
    return (ptr(d.emb_table), ptr(d.emb_indices), ptr(d.emb_offsets), _i64(s.emb_bags),
            ptr(d.emb_out))


KERNEL_LIST: list[Kernel] = [
    Kernel(
        "embbag",
        "embbag.c",
        "embbag_sum",
        ctypes.c_double,
        "embedding-bag sum into out[b, :], rows of 64 floats (compile-time width), "
        "1 GiB table, bags of 32 random rows",
        1.4,
        False,
        _embbag_args,
        output=lambda d: d.emb_out,
        working_set=lambda d, s: d.emb_table.nbytes,
    ),
    Kernel(
        "embbag-acc",
        "embbag_acc.c",
        "embbag_sum_acc",
        ctypes.c_double,
        "embedding-bag sum as embbag, each bag summed in a local float[64] "
        "(kept in registers: out-of-order execution already overlaps the rows)",
        None,
        False,
        _embbag_args,
        output=lambda d: d.emb_out,
        working_set=lambda d, s: d.emb_table.nbytes,
    ),
    Kernel(
        "embbag-dyn",
        "embbag_dyn.c",
        "embbag_sum_dyn",
        ctypes.c_double,
        "embedding-bag sum as embbag, row width a run-time argument (64)",
        1.4,
        False,
        lambda d, s: (
            ptr(d.emb_table),
            ptr(d.emb_indices),
            ptr(d.emb_offsets),
            _i64(s.emb_bags),
            _i64(64),
            ptr(d.emb_out),
        ),
        output=lambda d: d.emb_out,
        working_set=lambda d, s: d.emb_table.nbytes,
    ),
    Kernel(
        "spmv",
        "spmv.c",
        "spmv_csr",
        ctypes.c_double,
        "CSR SpMV y=Ax, 8-24 (avg 16) nnz/row, random columns over a 512 MiB x",
        1.2,
        False,
        lambda d, s: (
            _i64(s.spmv_rows),
            ptr(d.spmv_rowptr),
            ptr(d.spmv_cols),
            ptr(d.spmv_vals),
            ptr(d.spmv_x),
            ptr(d.spmv_y),
        ),
        output=lambda d: d.spmv_y,
        working_set=lambda d, s: d.spmv_x.nbytes,
    ),
    Kernel(
        "hashprobe",
        "hashprobe.c",
        "hash_probe",
        ctypes.c_uint64,
        "hash-join probe, 1 GiB open-addressing table (load 0.5, linear probing), "
        "50% hits, sum of payloads",
        1.2,
        False,
        _hash_args,
        extra=_hash_matches,
        working_set=lambda d, s: d.hash_table.nbytes,
    ),
    Kernel(
        "hashjoin-chain",
        "hashjoin_chain.c",
        "hj_chain_probe",
        ctypes.c_uint64,
        "hash-join probe over chained 32-byte buckets of 2 tuples (no-partition "
        "join layout), 12.8M build and 12.8M probe tuples, 256 MiB of buckets",
        1.2,
        False,
        lambda d, s: (
            ptr(d.hj_buckets),
            ctypes.c_uint32((1 << s.hj_log2_buckets) - 1),
            ptr(d.hj_keys),
            _i64(s.hj_probe),
        ),
        working_set=lambda d, s: d.hj_buckets.nbytes + d.hj_overflow_used * 32,
    ),
    Kernel(
        "randacc",
        "randacc.c",
        "randacc",
        ctypes.c_uint64,
        "random-access updates T[v & mask] ^= v in blocks of 128 streams advanced "
        "in place (HPCC RandomAccess shape), 1 GiB table",
        1.1,
        False,
        lambda d, s: (
            ptr(d.ra_table),
            ctypes.c_uint64(d.ra_table.size - 1),
            ptr(d.ra_seeds),
            _i64(s.ra_blocks),
        ),
        working_set=lambda d, s: d.ra_table.nbytes,
    ),
    Kernel(
        "histogram",
        "histogram.c",
        "key_histogram",
        ctypes.c_uint64,
        "integer-sort key histogram count[key[i]]++ over 128 MiB of counters "
        "(cleared first)",
        1.1,
        False,
        lambda d, s: (
            ptr(d.hist_keys),
            _i64(s.hist_keys),
            ptr(d.hist_count),
            _i64(s.hist_buckets),
        ),
        output=lambda d: d.hist_count,
        working_set=lambda d, s: d.hist_count.nbytes,
    ),
    Kernel(
        "histogram-small",
        "histogram.c",
        "key_histogram",
        ctypes.c_uint64,
        "control: the key histogram over 64 KiB of counters (cache-resident)",
        0.97,
        True,
        lambda d, s: (
            ptr(d.hist_small_keys),
            _i64(s.hist_keys),
            ptr(d.hist_count),
            _i64(HIST_SMALL_BUCKETS),
        ),
        output=lambda d: d.hist_count[:HIST_SMALL_BUCKETS],
        working_set=lambda d, s: HIST_SMALL_BUCKETS * 4,
    ),
    Kernel(
        "hashlookup",
        "hashlookup.c",
        "hash_lookup",
        ctypes.c_uint64,
        "single-probe hash lookup, 1 GiB direct-mapped table of (key, payload); "
        "vectorized with gathers where the target has them",
        1.2,
        False,
        lambda d, s: (
            ptr(d.hash_table),
            _i64(s.hash_log2_slots),
            ptr(d.hash_keys),
            _i64(s.hash_probes),
        ),
        working_set=lambda d, s: d.hash_table.nbytes,
    ),
    Kernel(
        "stream",
        "stream.c",
        "stream_sum",
        ctypes.c_uint64,
        "control: contiguous uint64 sum over 1 GiB",
        0.97,
        True,
        lambda d, s: (ptr(d.hash_table), _i64(min(s.stream_u64, d.hash_table.size))),
        working_set=lambda d, s: min(s.stream_u64, d.hash_table.size) * 8,
    ),
    Kernel(
        "gather",
        "gather.c",
        "gather_sum",
        ctypes.c_float,
        "control: tight s += T[idx[i]] over a 1 GiB float table",
        0.97,
        True,
        lambda d, s: (ptr(d.emb_table), ptr(d.gather_idx), _i64(s.gather_n)),
        working_set=lambda d, s: d.emb_table.nbytes,
    ),
    Kernel(
        "gather-small",
        "gather.c",
        "gather_sum",
        ctypes.c_float,
        "control: tight s += T[idx[i]] over a 64 KiB (cache-resident) table",
        0.97,
        True,
        lambda d, s: (ptr(d.emb_table), ptr(d.small_idx), _i64(s.gather_n)),
        working_set=lambda d, s: s.small_table_floats * 4,
    ),
]
KERNELS_BY_NAME = {k.name: k for k in KERNEL_LIST}


# ---------------------------------------------------------------------------
# Measurement
# ---------------------------------------------------------------------------


# A sample whose thread CPU time is below this share of its wall time was
# preempted (another process ran on the pinned CPU); it is re-run.
MIN_CPU_SHARE = 0.95
MAX_RETAKES = 2


class ChecksumError(RuntimeError):
    """A variant computed something different from the o3 baseline."""


@dataclass
class Result:
    """Timings and checks for one kernel variant."""

    times_ms: list[float] = field(default_factory=list)  # the measurement (see measure)
    wall_ms: list[float] = field(default_factory=list)
    cpu_ms: list[float] = field(default_factory=list)  # thread CPU time per sample
    retakes: int = 0  # samples re-run because the thread was not on the CPU
    preempted: int = 0  # samples preempted even after MAX_RETAKES retakes
    checksum: Any = None
    output_digest: str | None = None
    prefetch_insns: int | None = None
    build_commands: list[str] = field(default_factory=list)

    @property
    def median(self) -> float:
        """Median time in milliseconds."""
        return statistics.median(self.times_ms)


def _digest(a: np.ndarray | None) -> str | None:
    if a is None:
        return None
    return hashlib.blake2b(np.ascontiguousarray(a).view(np.uint8), digest_size=16).hexdigest()


class TorchEmbeddingBag:
    """``torch.nn.functional.embedding_bag(mode='sum')`` over the same buffers."""

    def __init__(self, d: Data) -> None:
        """Wraps the embedding table, indices and offsets without copying."""
        import torch  # imported late: thread settings must be in the environment

        torch.set_num_threads(1)
        self.torch = torch
        self.weight = torch.from_numpy(d.emb_table)
        self.indices = torch.from_numpy(d.emb_indices)
        self.offsets = torch.from_numpy(d.emb_offsets)
        self.out: Any = None
        assert self.weight.data_ptr() == d.emb_table.ctypes.data

    def __call__(self) -> float:
        """Runs one embedding_bag; returns the sum of column 0 like embbag.c."""
        self.out = self.torch.nn.functional.embedding_bag(
            self.indices, self.weight, self.offsets, mode="sum", include_last_offset=True
        )
        return 0.0

    def checksum(self) -> float:
        """Same checksum as embbag.c, computed outside the timed region."""
        col = self.out[:, 0].numpy().astype(np.float64)
        total = 0.0
        for v in col:
            total += float(v)
        return total


def measure(
    kernel: Kernel,
    variants: list[Variant],
    libs: dict[str, ctypes.CDLL],
    d: Data,
    s: Sizes,
    rounds: int,
    torch_fn: TorchEmbeddingBag | None,
    log: Callable[[str], None],
) -> dict[str, Result]:
    """Times every variant of ``kernel``, interleaved, checking results.

    A sample whose thread CPU time is under ``MIN_CPU_SHARE`` of its wall time
    was preempted by another process and is re-run (up to ``MAX_RETAKES``
    times); if it is still preempted its CPU time is recorded instead of its
    wall time.
    """
    fns: dict[str, Callable[[], Any]] = {}
    argsets: dict[str, tuple[Any, ...]] = {}
    for v in variants:
        fn = getattr(libs[v.name], kernel.symbol)
        fn.restype = kernel.restype
        args = kernel.args(d, s)
        argsets[v.name] = args
        fns[v.name] = (lambda f, a: lambda: f(*a))(fn, args)
    if torch_fn is not None:
        fns["torch"] = torch_fn
    results = {name: Result() for name in fns}
    out = kernel.output(d)

    # Warm-up call per variant: checks the full output against o3.
    ref: tuple[Any, Any, str | None] | None = None
    for name, fn in fns.items():
        if name == "torch":
            assert torch_fn is not None and out is not None
            fn()
            got = torch_fn.out.numpy()
            max_err = float(np.max(np.abs(got - out)))
            results[name].checksum = torch_fn.checksum()
            results[name].output_digest = f"max|torch-o3|={max_err:.3g}"
            if not np.allclose(got, out, rtol=1e-4, atol=1e-4):
                raise ChecksumError(
                    f"{kernel.name}: torch output differs from o3 (max abs err {max_err})"
                )
            continue
        if out is not None:
            out.fill(np.nan if out.dtype.kind == "f" else np.iinfo(out.dtype).max)
        value = fn()
        extra = kernel.extra(argsets[name])
        check = (value, extra)
        digest = _digest(out)
        results[name].checksum = value if extra is None else [value, extra]
        results[name].output_digest = digest
        if ref is None:
            ref = (value, extra, digest)
        elif (value, extra, digest) != ref:
            raise ChecksumError(
                f"{kernel.name}/{name}: checksum {check} output {digest} differs from "
                f"o3: {ref[:2]} output {ref[2]}"
            )

    assert ref is not None
    for r in range(rounds):
        for name, fn in fns.items():
            for _attempt in range(MAX_RETAKES + 1):
                c0, t0 = time.thread_time_ns(), time.perf_counter_ns()
                value = fn()
                t1, c1 = time.perf_counter_ns(), time.thread_time_ns()
                if c1 - c0 >= MIN_CPU_SHARE * (t1 - t0):
                    break
                results[name].retakes += 1  # preempted by another process: retake
            wall, cpu = (t1 - t0) / 1e6, (c1 - c0) / 1e6
            preempted = cpu < MIN_CPU_SHARE * wall
            results[name].wall_ms.append(wall)
            results[name].cpu_ms.append(cpu)
            results[name].preempted += preempted
            # Still preempted after the retakes: the thread's CPU time is the best
            # estimate of its undisturbed wall time.
            results[name].times_ms.append(cpu if preempted else wall)
            if name != "torch" and value != ref[0]:
                raise ChecksumError(
                    f"{kernel.name}/{name}: round {r} checksum {value} != o3 {ref[0]}"
                )
        log(
            f"  round {r + 1}/{rounds}: "
            + " ".join(f"{n}={res.times_ms[-1]:.1f}" for n, res in results.items())
        )
    return results


# ---------------------------------------------------------------------------
# Reporting
# ---------------------------------------------------------------------------


def best_of(results: dict[str, Result], prefix: str) -> tuple[str, Result] | None:
    """The fastest (by median) variant whose name starts with ``prefix``."""
    cands = [(n, r) for n, r in results.items() if n.startswith(prefix)]
    return min(cands, key=lambda nr: nr[1].median) if cands else None


def machine_info(plugin: Path) -> dict[str, Any]:
    """CPU, kernel, toolchain and library versions."""
    cpu = "unknown"
    flags: list[str] = []
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name") and cpu == "unknown":
                cpu = line.split(":", 1)[1].strip()
            elif line.startswith("flags") and not flags:
                flags = line.split(":", 1)[1].split()
    clang_v = subprocess.run(
        [str(LLVM_BIN / "clang"), "--version"], capture_output=True, text=True, check=True
    ).stdout.splitlines()[0]
    try:
        import torch

        torch_v = torch.__version__
    except ImportError:
        torch_v = None

    def read(path: str) -> str | None:
        try:
            return Path(path).read_text().strip()
        except OSError:
            return None

    def l3() -> str | None:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=False).stdout
        for line in out.splitlines():
            if line.startswith("L3"):
                return line.split(":", 1)[1].strip()
        return None

    return {
        "cpu_model": cpu,
        "cpus": os.cpu_count(),
        "avx512f": "avx512f" in flags,
        "l3": l3(),
        "mem_total": read("/proc/meminfo").splitlines()[0] if read("/proc/meminfo") else None,
        "kernel": platform.release(),
        "thp_enabled": read("/sys/kernel/mm/transparent_hugepage/enabled"),
        "llvm": clang_v,
        "python": platform.python_version(),
        "numpy": np.__version__,
        "torch": torch_v,
        "plugin": str(plugin),
        "plugin_sha256": _file_digest(plugin) if plugin.exists() else None,
        "plugin_mtime": (
            dt.datetime.fromtimestamp(plugin.stat().st_mtime, dt.timezone.utc).isoformat()
            if plugin.exists()
            else None
        ),
    }


def _fmt(v: object) -> str:
    return "—" if v is None else str(v)


def _fmt_ratio(r: float | None) -> str:
    return "—" if r is None else f"{r:.2f}x"


def render_markdown(report: dict[str, Any]) -> str:
    """The results as a Markdown document."""
    quick = " · QUICK (smoke sizes, timings meaningless)" if report["quick"] else ""
    lines = [
        "# accel-prefetch benchmark",
        "",
        f"{report['date']} · {report['machine']['cpu_model']} · "
        f"{report['machine']['llvm']} · torch {report['machine']['torch']} · "
        f"{report['rounds']} rounds · `{' '.join(report.get('cflags', CFLAGS))}`{quick}",
        "",
        f"Load average at start / end: {report['loadavg_start'][0]:.2f} / "
        f"{report['loadavg_end'][0]:.2f}; samples retaken after preemption: "
        f"{report['retakes_total']}, still preempted (CPU time used): "
        f"{report['preempted_total']}; data pages: THP {report['thp_advice']}.",
        "",
        "Ratios are median(o3) / median(variant): >1 is faster than -O3. "
        "`ldp` and `hand-best` are the best of their distance sweeps.",
        "",
        "| kernel | o3 ms | accel x | accel pf | ldp x (dist) | hand-best x (dist) "
        "| accel / hand-best | goal | met? |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for k in report["kernels"]:
        s = k["summary"]
        ldp = f"{_fmt_ratio(s['ldp_ratio'])} ({s['ldp_best']})" if s["ldp_best"] else "—"
        hand = f"{_fmt_ratio(s['hand_ratio'])} ({s['hand_best']})" if s["hand_best"] else "—"
        goal = "—" if k["goal"] is None else f"≥{k['goal']:.2f}x"
        met = {None: "n/a", True: "yes", False: "no"}[s["met"]]
        accel = _fmt_ratio(s["accel_ratio"]) if s["accel_error"] is None else "BUILD FAILED"
        if s["accel_prefetch_insns"] == 0 and k["goal"] is not None and not k["control"]:
            met += " (no prefetch emitted)"
        vs_hand = (f"{s['accel_ratio'] / s['hand_ratio']:.2f}"
                   if s["hand_best"] and s["accel_error"] is None else "—")
        lines.append(
            f"| {k['name']} | {s['o3_ms']:.1f} | {accel} | "
            f"{_fmt(s['accel_prefetch_insns'])} | {ldp} | {hand} | {vs_hand} | {goal} | {met} |"
        )
    extra = [k for k in report["kernels"] if k["summary"].get("explicit")]
    if extra:
        lines += [
            "",
            "Explicit accel-prefetch parameters (opt on the O3 output):",
            "",
            "| kernel | variant | x | pf |",
            "|---|---|---:|---:|",
        ]
        for k in extra:
            for name, (ratio, pf) in k["summary"]["explicit"].items():
                shown = "BUILD FAILED" if ratio is None else _fmt_ratio(ratio)
                lines.append(f"| {k['name']} | `{name}` | {shown} | {_fmt(pf)} |")
    t = report.get("torch")
    if t:
        lines += [
            "",
            "PyTorch `F.embedding_bag(mode='sum')`, 1 thread, same table buffer, "
            "interleaved with the embbag variants:",
            "",
            "| | ms | o3 / this | this / torch |",
            "|---|---:|---:|---:|",
            f"| torch.embedding_bag | {t['torch_ms']:.1f} | {t['o3_over_torch']:.2f}x | 1.00x |",
        ]
        rows = [("o3", t["o3_ms"]), ("accel", t["accel_ms"]), (t["hand_best"], t["hand_ms"])]
        for name, ms in rows:
            if ms is None:
                lines.append(f"| embbag {name} | BUILD FAILED | — | — |")
            else:
                lines.append(
                    f"| embbag {name} | {ms:.1f} | {t['o3_ms'] / ms:.2f}x | "
                    f"{t['torch_ms'] / ms:.2f}x |"
                )
    for msg in report.get("build_failures", []):
        lines += ["", f"**{msg}**"]
    lines += [
        "",
        "`accel pf`: prefetch instructions in the accel build of the kernel "
        "(0 = the pass inserted nothing).",
        "",
        "Reproduce:",
        "",
        "```",
        report["command"],
        "```",
        "",
    ]
    return "\n".join(lines)


# ---------------------------------------------------------------------------
# Main
# ---------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """Command-line options."""
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument(
        "--quick",
        action="store_true",
        help="tiny sizes, 2 rounds, 1 distance per sweep (smoke test, ~10 s)",
    )
    p.add_argument("--rounds", type=int, help="rounds (default 11, quick 2)")
    p.add_argument(
        "--kernels",
        default=",".join(KERNELS_BY_NAME),
        help="comma-separated subset of: " + ", ".join(KERNELS_BY_NAME),
    )
    p.add_argument("--hand-dists", help="comma-separated PF_DIST sweep (default 4,8,16,32,64)")
    p.add_argument(
        "--ldp-dists", help="comma-separated -prefetch-distance sweep (default 64,256,1024,4096)"
    )
    p.add_argument(
        "--accel-params",
        action="append",
        default=[],
        help="extra variant: opt -passes='accel-prefetch<PARAMS>' on the O3 "
        "output, e.g. 'distance=16;max-lines=4'; opt options may follow after a space "
        "(repeatable)",
    )
    p.add_argument("--plugin", type=Path, default=DEFAULT_PLUGIN, help="LLVMAccel.so")
    p.add_argument("--no-torch", action="store_true", help="skip the PyTorch comparison")
    p.add_argument(
        "--thp",
        choices=["on", "off"],
        default="off",
        help="madvise the data buffers for (on) or against (off, the default: "
        "like malloc and torch's allocator here) transparent huge pages",
    )
    p.add_argument(
        "--ops-divisor",
        type=int,
        default=1,
        help="divide the lookups, updates and keys of each call (not the tables) by "
        "this (a loaded machine: the tables still miss in cache)",
    )
    p.add_argument(
        "--no-native",
        action="store_true",
        help="compile every variant for the generic x86-64 (or aarch64) target, "
        "without -march=native",
    )
    p.add_argument("--cpu", type=int, default=0, help="CPU to pin the timing to")
    p.add_argument(
        "--out-dir",
        type=Path,
        help="where prefetch.json/.md go (default bench/results, quick: bench/work/results-quick)",
    )
    p.add_argument(
        "--work-dir", type=Path, default=REPO / "bench" / "work" / "prefetch", help="build cache"
    )
    return p.parse_args(argv)


def _ints(text: str | None, default: Sequence[int]) -> list[int]:
    return list(default) if not text else [int(x) for x in text.split(",") if x]


def _repo_relative(path: str) -> str:
    """``path`` relative to the repository when it lies inside it."""
    try:
        return str(Path(path).relative_to(REPO))
    except ValueError:
        return path


def main(argv: Sequence[str] | None = None) -> int:
    """Builds, runs and reports; returns the process exit status."""
    args = parse_args(argv)
    if args.no_native:
        CFLAGS.remove("-march=native")
    sizes = QUICK if args.quick else FULL
    if args.ops_divisor > 1:
        div = args.ops_divisor
        sizes = dataclasses.replace(
            sizes,
            gather_n=sizes.gather_n // div,
            hash_probes=sizes.hash_probes // div,
            hj_probe=sizes.hj_probe // div,
            ra_blocks=sizes.ra_blocks // div,
            hist_keys=sizes.hist_keys // div,
        )
    rounds = args.rounds or sizes.rounds
    hand_dists = _ints(args.hand_dists, QUICK_HAND_DISTS if args.quick else FULL_HAND_DISTS)
    ldp_dists = _ints(args.ldp_dists, QUICK_LDP_DISTS if args.quick else FULL_LDP_DISTS)
    kernels = [KERNELS_BY_NAME[n] for n in args.kernels.split(",") if n]
    out_dir = args.out_dir or (REPO / "bench" / ("work/results-quick" if args.quick else "results"))
    command = shlex.join([_repo_relative(sys.executable), *sys.argv])
    t_start = time.perf_counter()

    def log(msg: str) -> None:
        print(f"[{time.perf_counter() - t_start:6.1f}s] {msg}", flush=True)

    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ[var] = "1"
    if not args.plugin.exists():
        raise SystemExit(
            f"pass plugin not found: {args.plugin} (build it with cmake/ninja, see bench/README.md)"
        )
    for tool in ("clang", "opt", "llc", "llvm-objdump"):
        if not (LLVM_BIN / tool).exists():
            raise SystemExit(f"missing {LLVM_BIN / tool}")
    busy = (
        shutil.which("pgrep")
        and subprocess.run(["pgrep", "-x", "ninja"], capture_output=True, check=False).returncode
        == 0
    )
    if busy:
        log("WARNING: a ninja build is running; timings will be noisy")

    # 1. Build (both cores), then pin to one core for data setup and timing.
    variants = make_variants(hand_dists, ldp_dists, args.accel_params)
    builder = Builder(args.work_dir, args.plugin)
    sources = sorted({k.source for k in kernels})
    jobs = [(src, v) for src in sources for v in variants]
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        built = list(pool.map(lambda sv: builder.build(KERNELS / sv[0], sv[1]), jobs))
    builds = {(src, v.name): b for (src, v), b in zip(jobs, built, strict=True)}
    setup_build = builder.build(KERNELS / "setup.c", Variant("o3", "o3"))
    log(f"built {len(jobs)} kernel libraries in {builder.work}")

    os.sched_setaffinity(0, {args.cpu})
    setup = ctypes.CDLL(str(setup_build.lib))
    data = make_data(sizes, setup, args.thp == "on")
    log(
        f"data: {data.total_bytes / MIB:.0f} MiB set up in {data.setup_seconds:.1f}s "
        f"(hash table longest probe {data.hash_longest_probe})"
    )

    torch_fn = None
    if not args.no_torch:
        try:
            torch_fn = TorchEmbeddingBag(data)
        except ImportError as e:
            log(f"WARNING: no PyTorch comparison ({e})")

    report: dict[str, Any] = {
        "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "command": command,
        "cwd": os.getcwd(),
        "quick": args.quick,
        "rounds": rounds,
        "pinned_cpu": args.cpu,
        "thp_advice": args.thp,
        "cflags": list(CFLAGS),
        "loadavg_start": os.getloadavg(),
        "ninja_running_at_start": bool(busy),
        "machine": machine_info(args.plugin),
        "sizes": sizes.__dict__ | {"rounds": rounds},
        "data_bytes": data.total_bytes,
        "hand_dists": hand_dists,
        "ldp_dists": ldp_dists,
        "accel_params": args.accel_params,
        "variants": {v.name: {"kind": v.kind, "param": v.param} for v in variants},
        "kernels": [],
    }

    build_failures: list[str] = []
    for k in kernels:
        log(f"{k.name}: {k.description}")
        kbuilds = {v.name: builds[(k.source, v.name)] for v in variants}
        failed = {n: b.error for n, b in kbuilds.items() if b.lib is None}
        for n, err in failed.items():
            msg = f"{k.name}/{n}: BUILD FAILED: {err}"
            build_failures.append(msg)
            log(msg)
        kvariants = [v for v in variants if v.name not in failed]
        libs = {v.name: ctypes.CDLL(str(kbuilds[v.name].lib)) for v in kvariants}
        tfn = torch_fn if k.name == "embbag" else None
        try:
            res = measure(k, kvariants, libs, data, sizes, rounds, tfn, log)
        except ChecksumError as e:
            print(f"\nCHECKSUM MISMATCH: {e}", file=sys.stderr)
            print(
                "A prefetch variant computed a different result from o3: that is a "
                "miscompile. No results written.",
                file=sys.stderr,
            )
            return 2
        o3 = res["o3"].median
        for v in kvariants:
            b = kbuilds[v.name]
            res[v.name].prefetch_insns = b.prefetch_insns
            res[v.name].build_commands = [shlex.join(c) for c in b.commands]
        ldp = best_of(res, "ldp-")
        hand = best_of(res, "hand-")
        accel = res.get("accel")
        accel_ratio = o3 / accel.median if accel else None
        summary: dict[str, Any] = {
            "o3_ms": o3,
            "accel_ratio": accel_ratio,
            "accel_prefetch_insns": accel.prefetch_insns if accel else None,
            "accel_error": failed.get("accel"),
            "ldp_best": ldp[0] if ldp else None,
            "ldp_ratio": o3 / ldp[1].median if ldp else None,
            "hand_best": hand[0] if hand else None,
            "hand_ratio": o3 / hand[1].median if hand else None,
            "met": None if k.goal is None else (accel_ratio or 0.0) >= k.goal,
            "explicit": {
                n: (o3 / r.median, r.prefetch_insns)
                for n, r in res.items()
                if n.startswith("accel[")
            }
            | {n: (None, None) for n in failed if n.startswith("accel[")},
        }
        report["kernels"].append(
            {
                "name": k.name,
                "source": f"bench/prefetch/kernels/{k.source}",
                "symbol": k.symbol,
                "description": k.description,
                "goal": k.goal,
                "control": k.control,
                "working_set_bytes": k.working_set(data, sizes),
                "summary": summary,
                "build_failures": failed,
                "variants": {
                    n: {
                        "times_ms": r.times_ms,
                        "wall_ms": r.wall_ms,
                        "cpu_ms": r.cpu_ms,
                        "retakes": r.retakes,
                        "preempted": r.preempted,
                        "median_ms": r.median,
                        "ratio_vs_o3": o3 / r.median,
                        "checksum": r.checksum,
                        "output": r.output_digest,
                        "prefetch_insns": r.prefetch_insns,
                        "build": r.build_commands,
                    }
                    for n, r in res.items()
                },
            }
        )
        if tfn is not None and hand is not None:
            report["torch"] = {
                "torch_ms": res["torch"].median,
                "o3_ms": o3,
                "accel_ms": accel.median if accel else None,
                "hand_best": hand[0],
                "hand_ms": hand[1].median,
                "o3_over_torch": o3 / res["torch"].median,
            }

    report["build_failures"] = build_failures
    report["loadavg_end"] = os.getloadavg()
    report["elapsed_s"] = time.perf_counter() - t_start
    report["retakes_total"] = sum(
        v["retakes"] for k in report["kernels"] for v in k["variants"].values()
    )
    report["preempted_total"] = sum(
        v["preempted"] for k in report["kernels"] for v in k["variants"].values()
    )
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "prefetch.json").write_text(json.dumps(report, indent=1) + "\n")
    md = render_markdown(report)
    (out_dir / "prefetch.md").write_text(md)
    print()
    print(md)
    log(f"wrote {out_dir / 'prefetch.json'} and {out_dir / 'prefetch.md'}")
    if build_failures:
        print("\nBUILD FAILURES (the pass under test):", file=sys.stderr)
        for msg in build_failures:
            print(f"  {msg}", file=sys.stderr)
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main())
