"""Row groups: consecutive loop nests that work row by row (softmax's max,
``exp(x - max)``, sum and division; layer norm's mean, variance and scaling)
emitted inside one loop over the rows, so that each row is read from cache by
every stage after the first, instead of each stage streaming the whole tensor
from memory. A temporary read only inside its group holds one row
(``Buffer.row_local``)::

    for r in rows:                      # the leading dims P, shared
      m[0]    = max_j x[r, j]
      e[0, j] = exp(x[r, j] - m[0])     # one row, stays in L1/L2
      s[0]    = sum_j e[0, j]
      y[r, j] = e[0, j] / s[0]

A group starts at a reduction over trailing axes (its kept leading dims are
P) and takes the loop nests after it whose shape begins with P and that read
the group's earlier members only at the same row (through elementwise ops
and broadcasts that keep P; any other view ends the group).
"""

from __future__ import annotations

from ..graph import Graph, Node, shape_numel
from .common import Buffer, buffered_reads
from .elementwise import _rows_first
from .emitter import EmitterCore

_ELEMENTWISE = frozenset({"unary", "binary", "compare", "where", "cast", "broadcast"})
_MEMBER_OPS = frozenset({"unary", "binary", "compare", "where", "cast", "reduce", "broadcast",
                         "iota"})


class RowEmitter(EmitterCore):
    """Emission of a row group (see the module docstring)."""

    def materialize_rows(self, group: list[Node], prefix: tuple) -> None:
        p = len(prefix)
        self.memo = {}
        # Rows are independent: a chunk of them per thread (row-local
        # temporaries have one row per thread, see codegen.parallel).
        work = shape_numel(group[0].inputs[0].shape)
        with self.nest(prefix, work=work) as pidx:
            for node in group:
                out = self.buffers.pop(node.id)
                self.label_prefix = f"n{node.id}."
                saved = dict(self.memo)
                try:
                    if node.op == "reduce":
                        self.emit_reduce(node, out, prefix=pidx)
                    else:
                        with self.nest(tuple(node.shape[p:])) as inner:
                            idx = pidx + inner
                            self.store_at(out, idx, node.shape, self.emit(node, idx))
                finally:
                    self.buffers[node.id] = out
                    self.memo = saved
                    self.label_prefix = ""
        self.memo = {}


def _reads(node: Node, p: int, stop: set[int]) -> dict[int, bool]:
    """The materialized nodes (ids in ``stop``) that ``node``'s loop nest
    reads, each with whether every read is at ``node``'s own row (the
    leading ``p`` indices unchanged)."""
    if node.op == "reduce":
        start = [(node.inputs[0], True)]
    else:
        start = [(x, _keeps_rows(node, x, p)) for x in node.inputs]
    return buffered_reads(start, stop, lambda x, y: _keeps_rows(x, y, p))


def _keeps_rows(user: Node, x: Node, p: int) -> bool:
    """Whether ``user`` (an elementwise op) reads ``x`` at its own leading
    ``p`` indices: same rank, same leading sizes (broadcasting keeps them)."""
    return user.op in _ELEMENTWISE and x.rank == user.rank and \
        tuple(x.shape[:p]) == tuple(user.shape[:p])


def _group_prefix(node: Node) -> tuple | None:
    """The rows ``P`` of a reduction over trailing axes (None for others)."""
    if node.op != "reduce" or _rows_first(node) or node.inputs[0].dtype.is_complex:
        return None
    axes = sorted(node.attrs["axes"])
    p = axes[0] if axes else 0
    if p == 0:
        return None
    return tuple(node.inputs[0].shape[:p])


def row_groups(graph: Graph, order: list, must: set[int], no_member: set[int],
               min_row: int = 1) -> tuple[list[tuple[list[Node], tuple]], set[int]]:
    """Row groups among the loop nests of ``order`` (materialized nodes in
    emission order; other entries are never members), and the members whose
    temporaries can be row-local. ``must``: ids of every materialized node
    and buffer; ``no_member``: nodes that must keep a loop nest of their own
    (index checks after them); ``min_row``: the fewest elements a row (of
    the reduction that starts a group) must have when its size is static
    (shorter rows vectorize better as one flat loop per stage)."""
    stop = set(must) | {n.id for n in graph.inputs} | set(graph.constants)
    groups: list[tuple[list[Node], tuple]] = []
    cur: list[Node] = []
    prefix: tuple = ()

    def flush() -> None:
        if len(cur) > 1:
            groups.append((list(cur), prefix))
        cur.clear()

    for n in order:
        if not isinstance(n, Node) or n.op not in _MEMBER_OPS or n.id in no_member or \
                n.dtype.is_complex:
            flush()
            continue
        if cur:
            p = len(prefix)
            members = {m.id for m in cur}
            fits = n.rank >= p and tuple(n.shape[:p]) == prefix and \
                (n.op != "reduce" or _group_prefix(n) is not None and
                 min(n.attrs["axes"]) >= p)
            if fits:
                reads = _reads(n, p, stop)
                fits = all(same for m, same in reads.items() if m in members)
            if fits:
                cur.append(n)
                continue
            flush()
        start = _group_prefix(n)
        if start is not None and not _short_row(n, len(start), min_row):
            prefix = start
            cur.append(n)
    flush()
    # Row-local: read by no loop nest outside its group, not an output.
    readers: dict[int, set[int]] = {}
    for n in order:
        if isinstance(n, Node):
            for m in _reads(n, 0, stop):
                readers.setdefault(m, set()).add(n.id)
    outputs = {o.id for o in graph.outputs}
    local: set[int] = set()
    for group, _ in groups:
        ids = {m.id for m in group}
        for m in group:
            if m.id not in outputs and readers.get(m.id, set()) <= ids:
                local.add(m.id)
    return groups, local


def _short_row(node: Node, p: int, min_row: int) -> bool:
    size = 1
    for d in node.inputs[0].shape[p:]:
        if not isinstance(d, int):
            return False
        size *= d
    return size < min_row


def row_local_buffer(buf: Buffer, p: int) -> Buffer:
    """``buf`` shrunk to one row of its leading ``p`` dims."""
    return Buffer(buf.kind, (1,) * p + tuple(buf.shape[p:]), buf.dtype, buf.param, buf.node,
                  row_local=p)
