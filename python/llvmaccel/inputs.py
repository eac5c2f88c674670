"""Inputs for differential testing: argument specs, edge-heavy values, guarded buffers.

A :class:`Layout` says how every parameter of a function gets its value: a
scalar drawn from an edge-heavy distribution (0, 1, -1, the type's limits,
small values for trip counts and bounds, random ones), or a buffer of a given
size placed so that its last byte sits right before an unmapped (``PROT_NONE``)
page, filled with values that include NaN, infinities, -0.0 and denormals for
floating-point elements, and with indices mostly in range but sometimes out of
range when the buffer feeds an index. :func:`make_case` draws one input from a
seed and a case number, deterministically, so a finding is reproduced by its
``(seed, case)`` alone.
"""

from __future__ import annotations

import ctypes
import math
import mmap
import random
import struct
import zlib
from dataclasses import dataclass, field

import numpy as np

from .irinfo import FunctionInfo, Param, type_size

__all__ = ["ArgSpec", "Case", "Layout", "GuardedBuffers", "make_case", "parse_arg_spec",
           "format_value", "unpack"]

DEFAULT_BUFFER_BYTES = 4096
_PAGE = mmap.PAGESIZE
_FLOATS = {"float": ("f", "I", 4), "double": ("d", "Q", 8)}
_INTS = {"i1": 1, "i8": 1, "i16": 2, "i32": 4, "i64": 8}
_INT_FMT = {1: "b", 2: "h", 4: "i", 8: "q"}


@dataclass
class ArgSpec:
    """How to make one argument (every field optional; unset fields are inferred).

    Attributes:
        bytes: Size of a pointer argument's buffer.
        elem: Element type the buffer is filled with (``"float"``, ``"i32"``...).
        bound: The buffer holds indices (or the scalar is one) in ``[0, bound)``.
        sorted: Index values are non-decreasing (CSR offsets).
        values: A scalar takes one of these values.
        range: A scalar takes values in ``[lo, hi]``.
    """

    bytes: int | None = None
    elem: str | None = None
    bound: int | None = None
    sorted: bool = False
    values: tuple[float, ...] | None = None
    range: tuple[int, int] | None = None

    def to_text(self) -> str:
        """The ``key:value,...`` form :func:`parse_arg_spec` reads."""
        parts = []
        if self.bytes is not None:
            parts.append(f"bytes:{self.bytes}")
        if self.elem:
            parts.append(f"elem:{self.elem}")
        if self.bound is not None:
            parts.append(f"bound:{self.bound}")
        if self.sorted:
            parts.append("sorted")
        if self.values:
            parts.append("values:" + "/".join(repr(v) for v in self.values))
        if self.range:
            parts.append(f"range:{self.range[0]}..{self.range[1]}")
        return ",".join(parts)

    def to_dict(self) -> dict:
        """A JSON-able form (for the worker process)."""
        return {k: v for k, v in self.__dict__.items() if v not in (None, False)}


def parse_arg_spec(text: str) -> tuple[str, ArgSpec]:
    """Parses ``NAME=key:value,...`` as given to ``llvmaccel check --arg``.

    Keys: ``bytes:N``, ``elem:TYPE``, ``bound:N``, ``sorted``,
    ``values:A/B/C``, ``range:LO..HI``. NAME is a parameter name or position.

    Raises:
        ValueError: malformed text.
    """
    if "=" not in text:
        raise ValueError(f"argument spec {text!r}: expected NAME=key:value,...")
    name, rest = text.split("=", 1)
    spec = ArgSpec()
    for item in filter(None, (s.strip() for s in rest.split(","))):
        key, _, value = item.partition(":")
        try:
            if key == "bytes":
                spec.bytes = int(value, 0)
            elif key == "elem":
                spec.elem = value
            elif key == "bound":
                spec.bound = int(value, 0)
            elif key == "sorted":
                spec.sorted = True
            elif key == "values":
                spec.values = tuple(float(v) if "." in v or "e" in v.lower() or "n" in v.lower()
                                    else int(v, 0) for v in value.split("/"))
            elif key == "range":
                lo, hi = value.split("..")
                spec.range = (int(lo, 0), int(hi, 0))
            else:
                raise ValueError(f"unknown key {key!r}")
        except ValueError as err:
            raise ValueError(f"argument spec {text!r}: {err}") from None
    return name.strip().lstrip("%"), spec


@dataclass
class Slot:
    """How one parameter is made: a scalar or a buffer."""

    param: Param
    spec: ArgSpec
    bytes: int = 0
    elem: str = "i8"
    bound: int = 0
    align: int = 1


@dataclass
class Layout:
    """The slots of every parameter of a function, and whether it is fast-math."""

    info: FunctionInfo
    slots: list[Slot]
    fast_math: bool
    count_limit: int

    @classmethod
    def build(cls, info: FunctionInfo, specs: dict[str, ArgSpec] | None = None,
              fast_math: bool | None = None) -> Layout:
        """Chooses buffer sizes, element types and bounds for ``info``'s parameters.

        Raises:
            KeyError: a spec names no parameter.
            TypeError: a parameter type cannot be generated.
        """
        specs = dict(specs or {})
        by_key: dict[int, ArgSpec] = {}
        for key, spec in specs.items():
            by_key[info.param(int(key) if key.isdigit() else key).index] = spec
        slots = []
        for p in info.params:
            spec = by_key.get(p.index, ArgSpec())
            if not p.is_pointer and p.type not in _INTS and p.type not in _FLOATS:
                raise TypeError(f"cannot generate inputs for parameter %{p.name} of type {p.type}")
            slot = Slot(p, spec)
            if p.is_pointer:
                slot.elem = spec.elem or p.elem or "i8"
                if slot.elem not in _INTS and slot.elem not in _FLOATS and slot.elem != "ptr":
                    slot.elem = "i8"
                slot.bytes = spec.bytes or p.dereferenceable or DEFAULT_BUFFER_BYTES
                slot.align = max(p.align, min(type_size(slot.elem), 16), 1)
            else:
                slot.elem = p.type
            slots.append(slot)
        for slot in slots:  # index bounds: the smallest buffer indexed
            if slot.spec.bound is not None:
                slot.bound = slot.spec.bound
            elif slot.param.index_into:
                targets = [slots[k] for k in slot.param.index_into if slots[k].param.is_pointer]
                slot.bound = min((max(1, s.bytes // type_size(s.elem)) for s in targets),
                                 default=0)
        counts = [max(1, s.bytes // type_size(s.elem)) for s in slots if s.param.is_pointer]
        fm = info.fast_math if fast_math is None else fast_math
        return cls(info, slots, fm, min(counts) if counts else 64)

    def describe(self) -> str:
        """One line per parameter: how it is made."""
        out = []
        for s in self.slots:
            if s.param.is_pointer:
                extra = f", indices < {s.bound}" if s.bound else ""
                out.append(f"%{s.param.name}: {s.bytes}-byte buffer of {s.elem}{extra}")
            else:
                out.append(f"%{s.param.name}: {s.elem}")
        return "; ".join(out)


@dataclass
class Case:
    """One input: scalar values and initial buffer contents, by parameter."""

    number: int
    scalars: dict[int, float] = field(default_factory=dict)
    buffers: dict[int, bytes] = field(default_factory=dict)
    notes: dict[int, str] = field(default_factory=dict)


def _int_edges(bits: int) -> list[int]:
    if bits == 1:
        return [0, 1]
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    return [0, 1, -1, 2, lo, hi, hi - 1, lo + 1, 255, 256, 65535, 1 << (bits - 2)]


def _bits(ty: str) -> int:
    return 1 if ty == "i1" else _INTS[ty] * 8


def _float_edges(fast: bool) -> list[float]:
    edges = [0.0, -0.0, 1.0, -1.0, 0.5, 3.0e38, -3.0e38, 1.0e-45, 1.17549435e-38, 2.0, 1e-7]
    if not fast:
        edges += [math.inf, -math.inf, math.nan, -math.nan]
    return edges


def _scalar_value(rng: random.Random, slot: Slot, layout: Layout,
                  typical: bool = False) -> float:
    spec = slot.spec
    if spec.values:
        return rng.choice(spec.values)
    if typical:
        return _typical_scalar(rng, slot, layout)
    if spec.range:
        lo, hi = spec.range
        return rng.choice([lo, hi, rng.randint(lo, hi), rng.randint(lo, hi)])
    if slot.elem in _FLOATS:
        r = rng.random()
        if r < 0.5:
            return rng.choice(_float_edges(layout.fast_math))
        return rng.uniform(-100.0, 100.0)
    bits = _bits(slot.elem)
    if slot.bound:  # an index: mostly in range
        r = rng.random()
        if r < 0.85:
            return rng.randrange(slot.bound)
        return rng.choice([slot.bound, slot.bound - 1, -1, 0])
    if slot.param.compared:  # a trip count or a bound: mostly within the buffers
        r = rng.random()
        if r < 0.7:
            return rng.randint(0, layout.count_limit)
        if r < 0.85:
            return rng.choice([0, 1, 2, layout.count_limit, layout.count_limit - 1])
    r = rng.random()
    if r < 0.6:
        return _wrap(rng.choice(_int_edges(bits)), bits)
    if r < 0.85:
        return rng.randint(0, 64)
    return _wrap(rng.getrandbits(bits), bits)


def _typical_scalar(rng: random.Random, slot: Slot, layout: Layout) -> float:
    """A value a caller would pass when timing: a range's upper end, an index
    in range, a trip count covering the smallest buffer, a small number."""
    if slot.spec.range:
        return slot.spec.range[1]
    if slot.elem in _FLOATS:
        return rng.uniform(-2.0, 2.0)
    if slot.bound:
        return rng.randrange(slot.bound)
    if slot.param.compared:
        return layout.count_limit
    return rng.randint(0, 64)


def _wrap(value: int, bits: int) -> int:
    if bits == 1:
        return value & 1
    value &= (1 << bits) - 1
    return value - (1 << bits) if value >> (bits - 1) else value


_NP_INT = {1: np.int8, 2: np.int16, 4: np.int32, 8: np.int64}


_EDGES: dict[tuple[str, bool], np.ndarray] = {}
_IINFO: dict[type, np.iinfo] = {}


def _float_edge_array(elem: str, fast: bool) -> np.ndarray:
    """:func:`_float_edges` as an array of ``elem`` (made once)."""
    key = (elem, fast)
    if key not in _EDGES:
        dtype = np.float32 if elem == "float" else np.float64
        with np.errstate(over="ignore"):
            _EDGES[key] = np.array(_float_edges(fast), dtype=np.float64).astype(dtype)
    return _EDGES[key]


def _fill(rng: np.random.Generator, slot: Slot, layout: Layout,
          typical: bool = False) -> tuple[bytes, str]:
    size = type_size(slot.elem)
    count = slot.bytes // size
    extra = slot.bytes - count * size
    # (An empty draw takes nothing from the generator: skipping it changes no value.)
    tail = rng.integers(0, 256, extra, dtype=np.uint8).tobytes() if extra else b""
    if slot.elem in _FLOATS:
        dtype = np.float32 if slot.elem == "float" else np.float64
        vals = rng.uniform(-8.0, 8.0, count).astype(dtype)
        special = not typical and bool(rng.random() < 0.6)
        if special and count:
            edges = _float_edge_array(slot.elem, layout.fast_math)
            where = rng.random(count) < 0.15
            vals[where] = rng.choice(edges, int(where.sum()))
        return vals.tobytes() + tail, "specials" if special else "finite"
    if slot.elem == "ptr":
        return bytes(slot.bytes), "null pointers"
    bits = _bits(slot.elem)
    dtype = _NP_INT[max(1, bits // 8)]
    info = _IINFO.get(dtype) or _IINFO.setdefault(dtype, np.iinfo(dtype))
    if slot.bound:
        vals = rng.integers(0, slot.bound, count, dtype=np.int64)
        if slot.spec.sorted:
            vals.sort()
            note = f"sorted indices < {slot.bound}"
        else:
            note = f"indices < {slot.bound}"
        if count and not slot.spec.sorted and not typical and rng.random() < 0.3:
            bad = np.sort(rng.choice(count, max(1, count // 50), replace=False))
            wrong = np.array([slot.bound, slot.bound + 1, -1, info.max, info.min], dtype=np.int64)
            vals[bad] = rng.choice(wrong, len(bad))
            shown = ", ".join(str(int(i)) for i in bad[:8])
            note += f", out of range at [{shown}{', ...' if len(bad) > 8 else ''}]"
        vals = vals.astype(dtype) if bits > 1 else (vals & 1).astype(np.int8)
    elif typical:
        vals = rng.integers(0, 65, count, dtype=np.int64)
        vals = vals.astype(dtype) if bits > 1 else (vals & 1).astype(np.int8)
        note = "small non-negative integers"
    else:
        mode = rng.random()
        if mode < 0.4:
            edges = np.array([_wrap(e, bits) for e in _int_edges(bits)], dtype=np.int64)
            vals = rng.choice(edges, count)
        elif mode < 0.8:
            vals = rng.integers(-4, 65, count, dtype=np.int64)
        else:
            vals = rng.integers(info.min, info.max, count, dtype=dtype, endpoint=True)
        vals = vals.astype(dtype) if bits > 1 else (vals & 1).astype(np.int8)
        note = "edge-heavy integers"
    return vals.astype(dtype, copy=False).tobytes() + tail, note


def make_case(layout: Layout, seed: int, number: int, typical: bool = False) -> Case:
    """The input numbered ``number`` of the stream ``seed`` (deterministic).

    ``typical``: an input for timing rather than for finding bugs: indices in
    range, finite floating-point values, trip counts covering the buffers.
    """
    rng = random.Random(f"{seed}:{number}")
    case = Case(number)
    for slot in layout.slots:
        i = slot.param.index
        if slot.param.is_pointer:
            key = zlib.crc32(f"{seed}:{number}:{i}".encode())
            # (what np.random.default_rng(key) makes, without its checks)
            case.buffers[i], case.notes[i] = _fill(np.random.Generator(np.random.PCG64(key)),
                                                   slot, layout, typical)
        else:
            case.scalars[i] = _scalar_value(rng, slot, layout, typical)
    return case


def unpack(data: bytes, elem: str) -> list[float]:
    """The elements of a buffer of ``elem`` values (whole elements only)."""
    size = type_size(elem)
    count = len(data) // size
    if elem in _FLOATS:
        return list(struct.unpack(f"<{count}{_FLOATS[elem][0]}", data[: count * size]))
    if elem in _INTS:
        fmt = _INT_FMT[max(1, _bits(elem) // 8)]
        return list(struct.unpack(f"<{count}{fmt}", data[: count * size]))
    return list(data)


def format_value(value: float) -> str:
    """A value as text: repr for finite numbers, nan/inf/-0.0 spelled out."""
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if value == 0 and math.copysign(1, value) < 0:
            return "-0.0"
    return repr(value)


def describe_case(layout: Layout, case: Case, limit: int = 8) -> str:
    """The input as readable text: every scalar, and each buffer's first values."""
    parts = []
    for slot in layout.slots:
        i = slot.param.index
        if slot.param.is_pointer:
            vals = unpack(case.buffers[i], slot.elem)
            head = ", ".join(format_value(v) for v in vals[:limit])
            more = ", ..." if len(vals) > limit else ""
            parts.append(f"%{slot.param.name} = {slot.bytes} bytes of {slot.elem} "
                         f"({case.notes.get(i, '')}): [{head}{more}]")
        else:
            parts.append(f"%{slot.param.name} = {format_value(case.scalars[i])}")
    return "\n".join(parts)


# --- Buffers before guard pages ------------------------------------------------

_libc = ctypes.CDLL(None, use_errno=True)
_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                       ctypes.c_int, ctypes.c_long]
_libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
_libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
_PROT_NONE, _PROT_RW = 0, 3
_MAP_SHARED, _MAP_ANON = 0x01, 0x20


#: Mappings of closed GuardedBuffers by size, kept for the next ones (mmap,
#: mprotect and munmap of every buffer of every case cost more than the runs).
_POOL: dict[int, list[int]] = {}
#: At most this many bytes of mappings are kept in the pool.
_POOL_LIMIT = 256 << 20
_POOLED = [0]


def _zero_around(base: int, start: int, size: int, guard: int) -> None:
    """Zeroes a mapping's data pages (from ``base``'s leading guard page to
    the trailing one at ``guard``) but for the buffer of ``size`` bytes at
    ``start``, as they are in a new mapping."""
    ctypes.memset(base + _PAGE, 0, start - base - _PAGE)
    ctypes.memset(start + size, 0, guard - start - size)


class GuardedBuffers:
    """Shared memory for one run: every buffer ends right before a PROT_NONE page.

    Each buffer gets its own mapping: a guard page, the data pages, a guard
    page; the buffer starts at the trailing guard minus its size (rounded up
    to its alignment). The mapping is shared, so a forked child's writes are
    visible to the parent. A last small page holds the return value.
    Mappings are reused once closed (the guard pages stay as they are; the
    data pages are zero around the buffer, as a new mapping's are).
    """

    def __init__(self, layout: Layout, case: Case) -> None:
        self._maps: list[tuple[int, int]] = []
        self.addresses: dict[int, int] = {}
        self.sizes: dict[int, int] = {}
        for slot in layout.slots:
            if not slot.param.is_pointer:
                continue
            span = -(-slot.bytes // slot.align) * slot.align
            data_pages = max(1, -(-span // _PAGE))
            total = (data_pages + 2) * _PAGE
            base, fresh = self._map(total)
            if fresh:
                _libc.mprotect(base, _PAGE, _PROT_NONE)
                _libc.mprotect(base + (data_pages + 1) * _PAGE, _PAGE, _PROT_NONE)
            start = base + (data_pages + 1) * _PAGE - span
            self.addresses[slot.param.index] = start
            self.sizes[slot.param.index] = slot.bytes
            if not fresh:
                _zero_around(base, start, slot.bytes, base + total - _PAGE)
            ctypes.memmove(start, case.buffers[slot.param.index], slot.bytes)
        self.result, fresh = self._map(_PAGE)
        if not fresh:
            ctypes.memset(self.result, 0, _PAGE)

    def refill(self, case: Case) -> None:
        """Puts ``case``'s contents back into these buffers, at the same
        addresses, as a new :class:`GuardedBuffers` of the case would have
        them (to run another version of a function on the very addresses a
        run before it had)."""
        for (base, total), (index, start) in zip(self._maps[:-1], self.addresses.items(),
                                                 strict=True):
            _zero_around(base, start, self.sizes[index], base + total - _PAGE)
            ctypes.memmove(start, case.buffers[index], self.sizes[index])
        ctypes.memset(self.result, 0, _PAGE)

    def _map(self, size: int) -> tuple[int, bool]:
        """A mapping of ``size`` bytes: (address, True when new)."""
        free = _POOL.get(size)
        if free:
            addr = free.pop()
            _POOLED[0] -= size
            self._maps.append((addr, size))
            return addr, False
        addr = _libc.mmap(None, size, _PROT_RW, _MAP_SHARED | _MAP_ANON, -1, 0)
        if addr in (None, ctypes.c_void_p(-1).value):
            raise OSError(ctypes.get_errno(), "mmap failed")
        self._maps.append((addr, size))
        return addr, True

    def read(self, index: int) -> bytes:
        """The contents of the buffer of parameter ``index``."""
        return ctypes.string_at(self.addresses[index], self.sizes[index])

    def close(self) -> None:
        """Gives the mappings back (to the pool, or unmapped past its limit)."""
        for addr, size in self._maps:
            if _POOLED[0] + size <= _POOL_LIMIT:
                _POOL.setdefault(size, []).append(addr)
                _POOLED[0] += size
            else:
                _libc.munmap(addr, size)
        self._maps.clear()
