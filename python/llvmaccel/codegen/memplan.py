"""Memory planning: temporaries whose lifetimes do not overlap share a buffer.

Every intermediate a kernel materializes is a temporary the caller allocates
(and keeps for the next call). Given one buffer each, a model's temporaries
add up: a two-layer ``TransformerEncoder`` of width 256 on 512 tokens has 51
of them, 25 MiB, more than the weights and beyond the last-level cache of
many CPUs, so the next call finds its weights evicted (eager PyTorch reuses
freed blocks through its allocator; inductor and XLA plan buffer reuse as
this module does).

The plan is made on the emitted IR, where the order of the loop nests and
the control flow between them are plain, and where every access to a
temporary is an instruction using its parameter ``%tmpK`` or a pointer
derived from it (``getelementptr``, ``bitcast``, ``phi``, ``select``):

* A temporary is *live* in the basic blocks that lie on a path from one of
  its accesses to another (reachable from an access and reaching one;
  computed per strongly connected component of the CFG, see
  :meth:`Uses.live`). A
  loop containing an access keeps it live in its whole body, and a value
  written before a loop and read in it stays live across the loop.
* In the SPMD body of a parallel kernel (:mod:`.parallel`) the threads run a
  step's chunks unsynchronized, and a step starts only after every chunk of
  the step before it has finished: a temporary is live over the whole
  interval of steps from its first access to its last. A temporary accessed
  outside every step (by every thread at once) shares nothing.
* A temporary whose address escapes as a value (``ptrtoint``, stored to
  memory) shares nothing, nor does one of a size known only at run time.

Two temporaries conflict when they are live in a common block of some
function of the kernel (or, in an SPMD body, over a common step). The others
are packed into slots, largest first, each into the first slot none of whose
members it conflicts with. Temporaries of one slot are accessed through one
parameter, so ``noalias`` still holds: two slots never overlap, and a loop
nest never accesses two temporaries of one slot (they would be live in its
blocks together).
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from ..graph import DType, shape_numel

_LABEL = re.compile(r"^([-\w.$]+):")
_NAME = re.compile(r"%[-\w.$]+")
_DEF = re.compile(r"^\s*(%[-\w.$]+)\s*=\s*(\w+)\b")
_TARGET = re.compile(r"label\s+(%[-\w.$]+)")
_TEMP = re.compile(r"%tmp(\d+)$")
_STEP = re.compile(r"@llvmaccel_parallel_(claim|done)\(ptr %par\.team, i64 (\d+),")
# Instructions whose result is a pointer into the memory of their pointer
# operand (for phi, select and casts: when the result is a pointer).
_DERIVING = frozenset({"getelementptr", "bitcast", "addrspacecast", "phi", "select"})
_TERMINATORS = ("br ", "switch ", "ret ", "unreachable", "resume ", "indirectbr ")


@dataclass
class Uses:
    """Where one function accesses each temporary."""

    nblocks: int = 0
    succ: list[list[int]] = field(default_factory=list)
    #: temporary -> blocks with an access.
    blocks: dict[int, set[int]] = field(default_factory=dict)
    #: temporary -> SPMD steps with an access (SPMD bodies only).
    steps: dict[int, set[int]] = field(default_factory=dict)
    #: Temporaries that may share nothing.
    pinned: set[int] = field(default_factory=set)

    def live(self) -> dict[int, int]:
        """Temporary -> bit mask of the places where it is live.

        A place is a strongly connected component of the control-flow graph
        (a loop with its inner loops, or a block on no cycle): blocks of one
        component reach each other, so a temporary is live in all of them or
        in none. A component lies on a path from one access to another when
        an access reaches it and it reaches an access: with the components
        in topological order, the temporaries accessed in or before each one
        (``ahead``) and in or after it (``behind``) are one pass each over
        the condensed graph, as bit sets of temporaries (a per-temporary
        search of the blocks took 98 s for MobileNetV3's backward)."""
        comp, ncomp = _components(self.succ)
        csucc: list[set[int]] = [set() for _ in range(ncomp)]
        for b, ss in enumerate(self.succ):
            for s in ss:
                if comp[s] != comp[b]:
                    csucc[comp[b]].add(comp[s])
        ahead = [0] * ncomp
        for t, bs in self.blocks.items():
            for b in bs:
                ahead[comp[b]] |= 1 << t
        behind = list(ahead)
        for c in range(ncomp):  # an edge leads from a component to a later one
            for s in csucc[c]:
                ahead[s] |= ahead[c]
        for c in reversed(range(ncomp)):
            for s in csucc[c]:
                behind[c] |= behind[s]
        places: dict[int, list[int]] = {t: [] for t in self.blocks}
        for c in range(ncomp):
            both = ahead[c] & behind[c]
            while both:
                low = both & -both
                places[low.bit_length() - 1].append(c)
                both ^= low
        return {t: _mask(cs, ncomp) for t, cs in places.items()}


def _components(succ: list[list[int]]) -> tuple[list[int], int]:
    """The strongly connected components of the graph ``succ`` (Tarjan's
    algorithm, iterative): each node's component, numbered in topological
    order (every edge between two components leads to a higher number), and
    their count."""
    n = len(succ)
    index = [-1] * n
    low = [0] * n
    comp = [-1] * n
    on_stack = [False] * n
    stack: list[int] = []
    found: list[list[int]] = []  # components, sinks first
    counter = 0
    for root in range(n):
        if index[root] >= 0:
            continue
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack[root] = True
        work = [(root, 0)]
        while work:
            v, i = work[-1]
            if i < len(succ[v]):
                work[-1] = (v, i + 1)
                w = succ[v][i]
                if index[w] < 0:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack[w] = True
                    work.append((w, 0))
                elif on_stack[w]:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                u = work[-1][0]
                low[u] = min(low[u], low[v])
            if low[v] == index[v]:
                members = []
                while True:
                    w = stack.pop()
                    on_stack[w] = False
                    members.append(w)
                    if w == v:
                        break
                found.append(members)
    for number, members in enumerate(reversed(found)):
        for v in members:
            comp[v] = number
    return comp, len(found)


def _mask(bits: Iterable[int], width: int) -> int:
    """The integer with ``bits`` set (built in one pass, not bit by bit)."""
    flags = bytearray((width + 7) // 8)
    for b in bits:
        flags[b >> 3] |= 1 << (b & 7)
    return int.from_bytes(flags, "little")


def uses(lines: Sequence[str], spmd: bool = False) -> Uses:
    """The accesses to ``%tmpK`` (and pointers derived from it) in the body
    ``lines`` of one function, the entry block first (no ``define`` line)."""
    derived: dict[str, set[int]] = {}  # SSA pointer -> temporaries it points into
    users: dict[str, list[str]] = {}  # SSA name -> deriving instructions' results
    for line in lines:
        m = _DEF.match(line)
        if m and m.group(2) in _DERIVING and _yields_pointer(m.group(2), line):
            for name in _NAME.findall(line[m.end():]):
                users.setdefault(name, []).append(m.group(1))
    # Propagate from the parameters through the deriving instructions.
    todo = deque()
    for name in users:
        if t := _TEMP.match(name):
            derived[name] = {int(t.group(1))}
            todo.append(name)
    while todo:
        name = todo.popleft()
        for result in users.get(name, ()):
            have = derived.setdefault(result, set())
            if not derived[name] <= have:
                have |= derived[name]
                todo.append(result)

    u = Uses()
    labels: dict[str, int] = {"entry": 0}
    block, ends = 0, False
    targets: list[list[str]] = [[]]
    step: int | None = None
    for line in lines:
        if (m := _LABEL.match(line)) is not None:
            block = len(targets)
            if not ends:  # fall-through is not IR, but keep the graph whole
                targets[-1].append("%" + m.group(1))
            labels[m.group(1)] = block
            targets.append([])
            ends = False
            continue
        text = line.strip()
        if text.startswith(_TERMINATORS) or text == "ret":
            targets[block] += _TARGET.findall(text)
            ends = True
        if spmd and (s := _STEP.search(text)):
            step = int(s.group(2)) if s.group(1) == "claim" else None
            continue
        if "@llvm.assume" in text:  # states a size, accesses nothing
            continue
        m = _DEF.match(text)
        used = _NAME.findall(text[m.end():] if m else text)
        temps: set[int] = set()
        for name in used:
            if name in derived:
                temps |= derived[name]
            elif t := _TEMP.match(name):
                temps.add(int(t.group(1)))
        if not temps:
            continue
        if _escapes(text, derived):
            u.pinned |= temps
        for t in temps:
            u.blocks.setdefault(t, set()).add(block)
            if spmd:
                if step is None:
                    u.pinned.add(t)
                else:
                    u.steps.setdefault(t, set()).add(step)
    u.nblocks = len(targets)
    u.succ = [[labels[n[1:]] for n in ts if n[1:] in labels] for ts in targets]
    return u


def _yields_pointer(opcode: str, line: str) -> bool:
    if opcode == "getelementptr":
        return True
    if opcode == "phi":
        return " phi ptr " in line
    if opcode == "select":
        return ", ptr " in line
    return line.rstrip().endswith(" to ptr")


def _escapes(text: str, derived: dict[str, set[int]]) -> bool:
    """Whether the instruction lets a temporary's address out as a value."""
    if "ptrtoint" in text:
        return True
    if text.startswith("store ptr "):
        value = text[len("store ptr "):].split(",", 1)[0].strip()
        return value in derived or _TEMP.match(value) is not None
    return False


@dataclass
class Plan:
    """Which temporaries share each slot."""

    #: Slot index -> its members (temporary indices, in order); slots in the
    #: order of their first member (the order of the parameters).
    members: list[list[int]]

    @property
    def shares(self) -> bool:
        return any(len(m) > 1 for m in self.members)


def plan(temps: Sequence[tuple], functions: Sequence[Uses]) -> Plan:
    """Slots for ``temps`` ((shape, dtype) each) given where each function of
    the kernel accesses them (see the module docstring)."""
    n = len(temps)
    nbytes = [shape_numel(s) * dt.itemsize if all(isinstance(d, int) for d in s) else None
              for s, dt in temps]
    pinned = set().union(*(f.pinned for f in functions)) if functions else set()
    lives = [f.live() for f in functions]
    steps = [{t: (min(s), max(s)) for t, s in f.steps.items()} for f in functions]

    def conflict(a: int, b: int) -> bool:
        for live in lives:
            if live.get(a, 0) & live.get(b, 0):
                return True
        for st in steps:
            if a in st and b in st and st[a][0] <= st[b][1] and st[b][0] <= st[a][1]:
                return True
        return False

    sharing = [t for t in range(n) if nbytes[t] and t not in pinned]
    sharing.sort(key=lambda t: (-nbytes[t], t))  # type: ignore[operator]
    slots: list[list[int]] = []
    for t in sharing:
        for members in slots:
            if not any(conflict(t, o) for o in members):
                members.append(t)
                break
        else:
            slots.append([t])
    alone = set(range(n)).difference(*slots)
    slots += [[t] for t in alone]
    return Plan(sorted(sorted(members) for members in slots))


def slot_spec(plan_: Plan, slot: int, temps: Sequence[tuple]) -> tuple:
    """(shape, dtype) of a slot's buffer: its temporary's, or raw bytes enough
    for the largest of several."""
    members = plan_.members[slot]
    if len(members) == 1:
        return temps[members[0]]
    size = max(shape_numel(temps[t][0]) * temps[t][1].itemsize for t in members)
    return ((size,), DType.u8)
