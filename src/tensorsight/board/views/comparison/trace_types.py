"""The bench and target op traces of one comparison, side by side, grouped by module.

A comparison's rows hold, per tensor, which bench op and which target op it pairs
(``index``, ``index_target``) and whether it matched. From them this module rebuilds the
two execution orders and merges them into one **trace**, a list of lines:

- a *direction* header per rank and direction (``forward``, ``backward``; ``rank 1 ·
  forward`` when several ranks were compared), depth 0;
- *scope* headers, one per module scope entered (trace form: a module re-entered later in
  execution order gets another header), each one level deeper than its parent;
- *op* lines: one per op (or mapped group of ops), with its bench side, its target side,
  or both. Matched ops sit on one line; an op present on one side only is placed where it
  ran on that side: bench-only ops in bench order, target-only ops before the first
  matched op that ran after them on the target side.

An op's **status** is ``matched`` (every tensor paired), ``bench`` or ``target`` (the op ran
on that side only), or ``partial`` (paired, but some tensor exists on one side only). A
header's status is ``same`` when every op below it is matched, else ``differs``; its side is
``bench`` or ``target`` when every op below ran on that side only (a module missing on the
other side), else ``both``. A matched op whose target index is smaller than an earlier
matched op's is ``moved`` (reordered on the target side).

Which side an op ran on is read from the rows: a row with a bench shape or dtype saw a bench
tensor, likewise for the target; an op with neither is a bench op when it has no
``index_target``.

Lines have a stable ``id`` (their position in the fully expanded trace) so a client can say
which headers it folded; :class:`TraceQuery` picks directions, the default fold and the
toggled headers, and one window of the visible lines. This module holds the wire types (their
docstrings are the spec); :mod:`tensorsight.board.views.comparison.trace` builds and pages
the trace.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = [
    "MAX_DIFFS",
    "MAX_TEXT",
    "SCHEMA_VERSION",
    "SideOp",
    "TraceLine",
    "TracePage",
    "TraceQuery",
    "Upstream",
]

SCHEMA_VERSION = 1
MAX_DIFFS = 5000
MAX_TEXT = 300
STATUSES = ("matched", "bench", "target", "partial")


@dataclass(frozen=True)
class TraceQuery:
    """Which lines of the trace to return.

    Attributes:
        directions: Keep these directions (empty: both).
        fold: ``"clean"``: scope headers whose status is ``same`` start folded; ``"none"``:
            every header starts open.
        toggles: Header ids whose fold state is flipped from the default.
        offset: First visible line returned.
        limit: Visible lines returned.
        at: Row position to show: the headers above its op are unfolded (and added to
            :attr:`TracePage.toggles`), the window is moved so it holds the op's line, and
            :attr:`TracePage.focus` names it. ``None``: no focus.
    """

    directions: tuple[str, ...] = ()
    fold: str = "clean"
    toggles: frozenset[int] = frozenset()
    offset: int = 0
    limit: int = 200
    at: int | None = None

    SCHEMA_VERSION = SCHEMA_VERSION


@dataclass(frozen=True)
class SideOp:
    """One side of an op line.

    Attributes:
        index: The op's index in that side's execution order.
        op: Op name on that side.
        dtype: Dtype of its first output (else of its first tensor) on that side.
        shape: Shape of that tensor.
        tensors: Tensors of the op seen on that side.
    """

    index: int | None
    op: str
    dtype: str | None
    shape: tuple[int, ...] | None
    tensors: int

    SCHEMA_VERSION = SCHEMA_VERSION


@dataclass(frozen=True)
class TraceLine:
    """One visible line.

    Attributes:
        line: Its number among the visible lines.
        id: Its position in the fully expanded trace (stable while the file is unchanged).
        kind: ``direction``, ``scope`` or ``op``.
        depth: Nesting level (direction headers 0).
        label: Direction (``forward``, ``rank 1 · backward``), scope name, or op name.
        path: Module path (``""`` for direction headers and ops outside any module).
        direction: ``forward`` or ``backward``.
        status: Op: ``matched``, ``bench``, ``target``, ``partial``; header: ``same`` or
            ``differs``.
        side: ``both``, ``bench`` or ``target``: where the line's ops ran.
        verdict: Worst verdict of its rows.
        position: Op: the row to open (its worst row, outputs first); header: the row opened
            for its first op of the worst verdict below it.
        rows: Rows of the op, or below the header.
        ops: Op lines below a header (1 for an op).
        counts: Header: op lines below it per status.
        folded: Header: whether its lines are hidden.
        bench: Op: its bench side, or ``None``.
        target: Op: its target side, or ``None``.
        match: Op: how it paired (``name``, ``order``, ``mapping``, ``unmatched``).
        moved: Op: reordered on the target side.
        reason: Op: why it is not (fully) matched, else the opened row's reason (at most
            300 characters).
    """

    line: int
    id: int
    kind: str
    depth: int
    label: str
    path: str
    direction: str
    status: str
    side: str
    verdict: str
    position: int
    rows: int
    ops: int
    counts: Mapping[str, int] = field(default_factory=dict)
    folded: bool = False
    bench: SideOp | None = None
    target: SideOp | None = None
    match: str = ""
    moved: bool = False
    reason: str = ""

    SCHEMA_VERSION = SCHEMA_VERSION


@dataclass(frozen=True)
class TracePage:
    """One window of visible lines.

    Attributes:
        total: Visible lines (under the query's directions and folds).
        offset: Visible line number of the first returned line.
        lines: The window, at most ``limit`` lines.
        focus: Visible line number of the ``at`` row's op, or ``None``.
        toggles: The header ids to send back (the query's, plus those unfolded for ``at``).
        diffs: Visible line numbers of ops that are not matched and of folded headers hiding
            such ops, in order (at most 5000).
        diffs_truncated: More differences exist than ``diffs`` lists.
        counts: Op lines per status over the query's directions, plus ``bench_ops`` and
            ``target_ops`` (ops on each side).
    """

    total: int
    offset: int
    lines: tuple[TraceLine, ...]
    focus: int | None
    toggles: tuple[int, ...]
    diffs: tuple[int, ...]
    diffs_truncated: bool
    counts: Mapping[str, int]

    SCHEMA_VERSION = SCHEMA_VERSION


@dataclass(frozen=True)
class Upstream:
    """Ops that ran on one side only before a given row's op (same rank, execution order).

    Attributes:
        count: How many.
        position: The first one's row (to open it), or ``None`` when ``count`` is 0.
        op: Its op name.
        module_path: Its module path.
        side: ``bench``, ``target`` or ``partial``.
    """

    count: int
    position: int | None = None
    op: str = ""
    module_path: str = ""
    side: str = ""

    SCHEMA_VERSION = SCHEMA_VERSION
