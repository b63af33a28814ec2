"""Communication ops followed across ranks: where a divergence that arrived by a collective began.

A rank whose first divergence is the *output* of a collective (``all_reduce``,
``all_gather``, ``broadcast``, ``reduce_scatter``, ``all_to_all``), while its own *input* to
that call agreed, did not make the error: it received it. The rank that made it is one
whose input to the same call diverged. :func:`follow` walks from the first divergence that
execution order and rank give (``engine._first_divergence``'s order) through such calls to
the rank whose input diverged, then to that rank's own first divergence, and so on, as
msprobe's multi-rank analyzer does. It matters when ranks run different programs (pipeline
stages, a rank that only receives): there a receiving rank's execution index is not
comparable with the sender's, and the earliest index can belong to the receiver.

Calls are matched across ranks by kind and order: the k-th ``all_reduce`` of rank 0 is the
k-th ``all_reduce`` of rank 2, as the collectives' own semantics require of every rank in
a process group. Point-to-point ``send``/``recv`` are not followed (a call there pairs with
one peer, named in arguments the dumps do not keep). How ops are named in dumps:

==========================  ==========================================================
recorded as                 by
==========================  ==========================================================
``c10d.allreduce_.default`` tensorsight's op-level dump (``torch.distributed``'s c10d
                            ops, waited for before their outputs are recorded); also
                            ``allgather_``, ``_allgather_base_``, ``broadcast_``,
                            ``reduce_scatter_``, ``_reduce_scatter_base_``, ``alltoall_``
``_c10d_functional.*``      functional collectives (``torch.compile``, DTensor):
                            ``all_reduce``, ``all_gather_into_tensor``,
                            ``reduce_scatter_tensor``, ``broadcast``, ``all_to_all_single``
``Distributed.all_reduce``  msprobe dumps (``Distributed.<api>.<n>.forward``)
==========================  ==========================================================
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tensorsight.compare.result import Advice

if TYPE_CHECKING:
    from tensorsight.compare.pairs import PairResult
    from tensorsight.compare.result import OpComparison

__all__ = ["KINDS", "Hop", "advice_for", "collective_kind", "follow"]

#: Collective kinds, as :func:`collective_kind` names them.
KINDS = ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "all_to_all")

_NAMESPACE = re.compile(r"^(?:c10d|_c10d_functional|c10d_functional|distributed)\.", re.I)
_KIND_OF = (  # after the namespace, underscores removed, lower case
    ("allreduce", "all_reduce"),
    ("allgather", "all_gather"),
    ("reducescatter", "reduce_scatter"),
    ("broadcast", "broadcast"),
    ("alltoall", "all_to_all"),
)


def collective_kind(op: str) -> str | None:
    """The collective an op name is (one of :data:`KINDS`), or None.

    Example:
        >>> collective_kind("c10d.allreduce_.default"), collective_kind("aten.add.Tensor")
        ('all_reduce', None)
        >>> collective_kind("_c10d_functional.reduce_scatter_tensor.default")
        'reduce_scatter'
        >>> collective_kind("Distributed.broadcast.0.forward")
        'broadcast'
    """
    m = _NAMESPACE.match(op)
    if m is None:
        return None
    name = op[m.end() :].split(".", 1)[0].replace("_", "").lower()
    for token, kind in _KIND_OF:
        if name.startswith(token):  # "_allgather_base_" too
            return kind
    return None


@dataclass(frozen=True)
class Hop:
    """One step of :func:`follow`: rank ``rank`` received the error by call ``call`` (the
    ``ordinal``-th ``kind`` of every rank), whose input diverged on rank ``source``."""

    rank: int
    kind: str
    ordinal: int
    op: str
    source: int


@dataclass
class _Call:
    op: str
    index: int
    input_error: float | None = None  # the largest relative error of its inputs
    input_flagged: bool = False  # an input row with verdict "error"

    def input_differs(self, threshold: float) -> bool:
        """Whether an input carries more error than ``threshold`` (the receiving rank's
        budget for the output: what rounding explains there) or was judged an error."""
        if self.input_flagged:
            return True
        return self.input_error is not None and self.input_error > threshold


_Key = tuple[str, int]  # (kind, ordinal): the same call on every rank


def _calls(rows: Sequence[OpComparison]) -> tuple[dict[_Key, _Call], dict[int, _Key]]:
    """A rank's collective calls by (kind, ordinal), and the key of each call's index."""
    by_index: dict[int, _Call] = {}
    kinds: dict[int, str] = {}
    for row in rows:
        kind = collective_kind(row.op)
        if kind is None or row.index is None:
            continue
        call = by_index.get(row.index)
        if call is None:
            call = by_index[row.index] = _Call(row.op, row.index)
            kinds[row.index] = kind
        if row.tensor.startswith("input"):
            call.input_flagged |= row.verdict == "error"
            if row.error is not None and math.isfinite(row.error):
                call.input_error = max(call.input_error or 0.0, row.error)
            elif row.error is not None:  # NaN or Inf: it differs
                call.input_flagged = True
    calls: dict[_Key, _Call] = {}
    key_of: dict[int, _Key] = {}
    seen: dict[str, int] = {}
    for index in sorted(by_index):
        kind = kinds[index]
        ordinal = seen.get(kind, 0)
        seen[kind] = ordinal + 1
        calls[(kind, ordinal)] = by_index[index]
        key_of[index] = (kind, ordinal)
    return calls, key_of


def follow(results: Sequence[PairResult], start: int) -> tuple[int, list[Hop]]:
    """From ``results[start]``'s first divergence, the result whose divergence began it all.

    Args:
        results: Each rank pair's result (rows in execution order, ``first_divergence`` set
            where the pair diverged).
        start: Position in ``results`` of the pair holding the first divergence by
            execution index and rank.

    Returns:
        The position in ``results`` of the pair where the divergence began (``start`` when
        it did not arrive by a collective) and the hops that led there, in order.
    """
    tables = [_calls(res.rows) for res in results]
    at = start
    hops: list[Hop] = []
    visited = {at}
    while True:
        res = results[at]
        if res.first_divergence is None:
            break
        row = res.rows[res.first_divergence]
        kind = collective_kind(row.op)
        if kind is None or row.index is None or not row.tensor.startswith("output"):
            break
        calls, key_of = tables[at]
        key = key_of[row.index]
        # an input is "diverged" when its error exceeds what rounding explains at this
        # output (its budget, its inputs agreeing); verdicts alone do not say it, since a
        # sender's input inherits its error and passes
        threshold = row.budget if row.budget is not None else 0.0
        if calls[key].input_differs(threshold):
            break  # its own input diverged: the error is this rank's
        sources = [
            j
            for j, (other, _) in enumerate(tables)
            if j != at and key in other and other[key].input_differs(threshold)
        ]
        if not sources:
            break  # every input agreed: the collective itself differs (its reduction order)

        def _order(j: int) -> tuple[int, int]:
            r = results[j]
            first = r.rows[r.first_divergence] if r.first_divergence is not None else None
            return ((first.index or 0) if first is not None else 1 << 62, r.rank)

        source = min(sources, key=_order)
        if source in visited or results[source].first_divergence is None:
            break
        hops.append(Hop(res.rank, key[0], key[1], calls[key].op, results[source].rank))
        visited.add(source)
        at = source
    return at, hops


def advice_for(hops: Sequence[Hop], row: int, first: OpComparison) -> Advice:
    """The advice naming the chain of hops that led to ``first`` (at position ``row``)."""
    steps = "; ".join(
        f"rank {h.rank}'s first divergence is the output of {h.kind} call {h.ordinal} "
        f"({h.op}), whose input agreed there but diverged on rank {h.source}"
        for h in hops
    )
    where = f" in {first.module_path}" if first.module_path else ""
    evidence = (
        f"{steps[0].upper()}{steps[1:]}. The divergence began on rank {first.rank}: "
        f"{first.op}{where} ({first.direction} {first.tensor})."
    )
    return Advice("collective-input", evidence, row)
