"""What differential testing needs to know about a function, read from its IR text.

:func:`describe` parses a function's parameters (types, names, ``dereferenceable``
and ``align`` attributes) and walks its body once to learn, for every pointer
parameter, the element types it is loaded and stored as, whether it is written,
and whether values loaded from it (or a scalar parameter) feed the index of an
address computation into another parameter, and which scalar parameters are
compared (trip counts, bounds). It is a light textual data-flow over SSA names,
good enough to choose inputs; it never decides correctness.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

__all__ = ["FunctionInfo", "Param", "describe", "type_size", "FAST_MATH_FLAGS"]

#: Instruction flags that license results differing from strict IEEE evaluation.
FAST_MATH_FLAGS = ("fast", "reassoc", "nnan", "ninf", "nsz", "arcp", "contract", "afn")

_SIZES = {"i1": 1, "i8": 1, "i16": 2, "i32": 4, "i64": 8, "half": 2, "bfloat": 2,
          "float": 4, "double": 8, "ptr": 8}
_NAME = r"%[-\w.$]+|%\"[^\"]*\""
_NAME_RE = re.compile(_NAME)


@dataclass
class Param:
    """One parameter of the function under test.

    Attributes:
        index: Position in the parameter list.
        name: The IR name without ``%`` (``"0"`` for an unnamed first parameter).
        type: LLVM type text, e.g. ``"ptr"``, ``"i64"``, ``"ptr addrspace(1)"``.
        dereferenceable: Bytes from ``dereferenceable(N)`` (0 if absent).
        align: Alignment from ``align N`` (0 if absent).
        elem: Scalar element type the body loads or stores through it (pointers).
        written: The body stores through it (pointers).
        index_into: Parameters whose addresses this one's values index.
        compared: Used by an integer comparison (scalars: trip counts, bounds).
    """

    index: int
    name: str
    type: str
    dereferenceable: int = 0
    align: int = 0
    elem: str = ""
    written: bool = False
    index_into: set[int] = field(default_factory=set)
    compared: bool = False

    @property
    def is_pointer(self) -> bool:
        """True for ``ptr`` in any address space."""
        return self.type.startswith("ptr")


@dataclass
class FunctionInfo:
    """A function's parameters and what its body does with them."""

    name: str
    return_type: str
    params: list[Param]
    fast_math: bool
    address_spaces: set[int]

    def param(self, key: int | str) -> Param:
        """The parameter at position ``key`` or called ``key``."""
        for p in self.params:
            if (isinstance(key, int) and p.index == key) or p.name == str(key):
                return p
        raise KeyError(f"function @{self.name} has no parameter {key!r}")


def type_size(ty: str) -> int:
    """Size in bytes of a scalar or vector LLVM type (8 for unknown types)."""
    ty = ty.strip()
    m = re.fullmatch(r"<\s*(\d+)\s+x\s+(.+?)\s*>", ty)
    if m:
        return int(m.group(1)) * type_size(m.group(2))
    if ty.startswith("ptr"):
        return 8
    if ty in _SIZES:
        return _SIZES[ty]
    m = re.fullmatch(r"i(\d+)", ty)
    return max(1, (int(m.group(1)) + 7) // 8) if m else 8


def _scalar(ty: str) -> str:
    m = re.fullmatch(r"<\s*\d+\s+x\s+(.+?)\s*>", ty.strip())
    return m.group(1) if m else ty.strip()


def _split_top(text: str) -> list[str]:
    """Splits on commas outside (), <>, [] and {}."""
    parts, depth, cur = [], 0, []
    for ch in text:
        if ch in "(<[{":
            depth += 1
        elif ch in ")>]}":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    if "".join(cur).strip():
        parts.append("".join(cur))
    return parts


def _define(ir: str, function: str) -> tuple[str, str, list[str]]:
    """(return type, parameter text, body lines) of ``define ... @function(``."""
    lines = ir.splitlines()
    pat = re.compile(r"^define\b(.*?)@(?:" + re.escape(function) + r'|"' + re.escape(function)
                     + r'")\(')
    for i, line in enumerate(lines):
        m = pat.match(line)
        if not m:
            continue
        start = m.end()
        depth, j = 1, start
        while depth and j < len(line):
            depth += {"(": 1, ")": -1}.get(line[j], 0)
            j += 1
        params = line[start:j - 1]
        ret_words = [w for w in m.group(1).split() if w not in _LINKAGE]
        ret = _return_type(ret_words)
        body = []
        for rest in lines[i + 1:]:
            if rest.startswith("}"):
                break
            body.append(rest)
        return ret, params, body
    raise KeyError(f"no definition of @{function} in the module")


_LINKAGE = {"internal", "private", "dso_local", "hidden", "protected", "external", "weak",
            "linkonce_odr", "weak_odr", "linkonce", "fastcc", "ccc", "noundef", "signext",
            "zeroext", "inreg", "nonnull", "local_unnamed_addr", "unnamed_addr", "default",
            "dllexport", "available_externally", "spir_kernel", "ptx_kernel",
            "amdgpu_kernel", "noalias"}


def _return_type(words: list[str]) -> str:
    text = " ".join(words)
    text = re.sub(r"\b(range|align|dereferenceable)\([^)]*\)", "", text)
    text = re.sub(r"\balign \d+", "", text)
    return text.strip() or "void"


def _param(index: int, text: str, implicit: list[int]) -> Param:
    text = text.strip()
    names = _NAME_RE.findall(text)
    if names and text.endswith(names[-1]):
        name = names[-1][1:].strip('"')
        text = text[: -len(names[-1])].strip()
    else:
        name = str(implicit[0])
        implicit[0] += 1
    m = re.match(r"(ptr(?:\s+addrspace\(\d+\))?|<[^>]*>|\{[^}]*\}|\[[^\]]*\]|\S+)", text)
    ty = m.group(1) if m else text
    deref = re.search(r"\bdereferenceable(?:_or_null)?\((\d+)\)", text)
    align = re.search(r"\balign\s+(\d+)", text)
    return Param(index, name, ty, int(deref.group(1)) if deref else 0,
                 int(align.group(1)) if align else 0)


_FAST_FLAG = re.compile(r"\b(?:" + "|".join(FAST_MATH_FLAGS) + r")\b")
_FLOAT_OP = re.compile(r"\b(fadd|fsub|fmul|fdiv|frem|fneg|fcmp|call)\b")
_ASSIGN = re.compile(r"^\s*(" + _NAME + r")\s*=\s*(.*)$")
_ADDRSPACE = re.compile(r"ptr addrspace\((\d+)\)")


def describe(ir: str, function: str, *, body: bool = True) -> FunctionInfo:
    """Parameters of ``function`` in module text ``ir`` and how its body uses them.

    With ``body`` false only the signature is read (return and parameter
    types, names and attributes), not what the body does with them.

    Raises:
        KeyError: the module has no definition of ``function``.
    """
    ret, ptext, lines = _define(ir, function)
    implicit = [0]
    params = [_param(i, t, implicit) for i, t in enumerate(_split_top(ptext))]
    if not body:
        return FunctionInfo(function, ret, params, False, set())
    body_lines = lines
    by_name = {"%" + p.name: p for p in params}
    root: dict[str, int] = {n: p.index for n, p in by_name.items() if p.is_pointer}
    taint: dict[str, set[int]] = {n: {p.index} for n, p in by_name.items() if not p.is_pointer}
    fast = False
    spaces: set[int] = set()
    codes = [line.split(";", 1)[0] for line in body_lines]
    for code in codes:
        if not fast and _FAST_FLAG.search(code) and _FLOAT_OP.search(code):
            fast = True
        spaces.update(int(s) for s in _ADDRSPACE.findall(code))
    for _ in range(3):  # phis name values defined later: iterate to a fixed point
        for code in codes:
            _visit(code, params, root, taint)
    return FunctionInfo(function, ret, params, fast, spaces)


_PTR_OPERAND = re.compile(r"ptr(?:\s+addrspace\(\d+\))?\s+(?:\w+\s+)*(" + _NAME + ")")
_STORE = re.compile(r"store\s+(?:volatile\s+)?(.+?)\s+(\S+),\s*ptr(?:\s+addrspace\(\d+\))?\s+("
                    + _NAME + ")")
_LOAD = re.compile(r"load\s+(?:atomic\s+)?(?:volatile\s+)?(.+?),\s*ptr")
_GEP = re.compile(r"getelementptr\s+(?:(?:inbounds|nuw|nusw)\s+)*(.+?),\s*ptr"
                  r"(?:\s+addrspace\(\d+\))?\s+(" + _NAME + r")(.*)$")


def _ptr_operand(rhs: str) -> str | None:
    m = _PTR_OPERAND.search(rhs)
    return m.group(1) if m else None


def _visit(code: str, params: list[Param], root: dict[str, int],
           taint: dict[str, set[int]]) -> None:
    m = _ASSIGN.match(code)
    dest, rhs = (m.group(1), m.group(2)) if m else (None, code.strip())
    words = rhs.split()
    if not words:
        return
    op = words[0]
    operands = _NAME_RE.findall(rhs)
    if op == "store":
        # store T %v, ptr %p
        sm = _STORE.match(rhs)
        if sm and sm.group(3) in root:
            p = params[root[sm.group(3)]]
            p.written = True
            p.elem = p.elem or _scalar(sm.group(1))
        return
    if op == "call" or (op == "tail" and "call" in words[:3]):
        if "@llvm.mem" in rhs:  # memcpy/memmove/memset: the first pointer is written
            first = _ptr_operand(rhs)
            if first in root:
                params[root[first]].written = True
        elif "@llvm.masked.store" in rhs:
            ptrs = [n for n in operands if n in root]
            if ptrs:
                params[root[ptrs[0]]].written = True
    if dest is None:
        return
    if op == "load":
        lm = _LOAD.match(rhs)
        src = _ptr_operand(rhs)
        if src in root:
            p = params[root[src]]
            if lm:
                p.elem = p.elem or _scalar(lm.group(1))
            taint[dest] = {p.index}
        return
    if op == "getelementptr":
        gm = _GEP.match(rhs)
        if gm:
            base, rest = gm.group(2), gm.group(3)
            if base in root:
                root[dest] = root[base]
                target = params[root[base]]
                elem = _scalar(gm.group(1))
                if elem in _SIZES and not target.elem:
                    target.elem = elem
                for idx in _NAME_RE.findall(rest):
                    for k in taint.get(idx, ()):
                        params[k].index_into.add(target.index)
            return
    if op == "icmp":
        for name in operands:
            for k in taint.get(name, ()):
                if not params[k].is_pointer:
                    params[k].compared = True
    for name in operands:
        if name in root and dest not in root:
            root[dest] = root[name]
        if name in taint:
            taint.setdefault(dest, set()).update(taint[name])
