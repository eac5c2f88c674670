"""Arrays that end right before an unmapped page, for execution tests.

A read one element past the end of such an array faults, so a kernel (or a
pass) that reads out of bounds crashes the process instead of returning a
neighbour's bytes. Run code that may fault in a subprocess.
"""

from __future__ import annotations

import ctypes
import mmap

import numpy as np

_libc = ctypes.CDLL(None, use_errno=True)
_libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
_libc.mprotect.restype = ctypes.c_int


def guarded_array(values: np.ndarray) -> np.ndarray:
    """A copy of ``values`` (1-D) whose last byte is followed by a PROT_NONE page."""
    values = np.ascontiguousarray(values)
    page = mmap.PAGESIZE
    nbytes = values.nbytes
    total = -(-nbytes // page) * page + page
    mem = mmap.mmap(-1, total, prot=mmap.PROT_READ | mmap.PROT_WRITE)
    base = ctypes.addressof((ctypes.c_char * total).from_buffer(mem))
    if _libc.mprotect(base + total - page, page, 0) != 0:  # PROT_NONE
        raise OSError(ctypes.get_errno(), "mprotect failed")
    out = np.frombuffer(mem, dtype=values.dtype, count=values.size,
                        offset=total - page - nbytes)
    out[...] = values.reshape(-1)
    return out
