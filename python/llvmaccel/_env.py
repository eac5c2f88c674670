"""Environment variables read before every kernel call, cheaply.

A kernel call reads the thread settings in force now
(``$LLVMACCEL_NUM_THREADS``, ``$LLVMACCEL_PARALLEL_RUNTIME``,
``$LLVMACCEL_BLAS_LIBRARY``), so that a change made through ``os.environ``
between calls takes effect at the next one. ``os.environ.get`` encodes its
key on every lookup (about 0.6 us here, five of them a call were a third of
what a small graph's call cost above inductor's); :func:`getenv` looks the
key, encoded once, up in the mapping ``os.environ`` keeps its values in,
which every change through ``os.environ`` updates.
"""

from __future__ import annotations

import os

# POSIX CPython keeps os.environ's values in a dict of encoded bytes,
# ``os.environ._data``; elsewhere (Windows: str keys, upper-cased) the public
# mapping is used.
_DATA: dict | None = getattr(os.environ, "_data", None) if os.name == "posix" else None
_KEYS: dict[str, bytes] = {}


def getenv(name: str, default: str = "") -> str:
    """``os.environ.get(name, default)``, at the cost of a dict lookup."""
    if _DATA is None:
        return os.environ.get(name, default)
    key = _KEYS.get(name)
    if key is None:
        key = _KEYS[name] = os.fsencode(name)
    value = _DATA.get(key)
    return default if value is None else os.fsdecode(value)
