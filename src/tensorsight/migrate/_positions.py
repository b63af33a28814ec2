"""Start positions of a few nodes of a LibCST module, at the cost of one code generation.

LibCST's ``PositionProvider`` computes the range of *every* node: it splits each emitted
token on newlines and records a position per node, which costs more than parsing the
statement did. A report needs the start (line, column) of the few nodes that have a
finding. :func:`starts` generates the code once with a codegen state that only notes,
for those nodes, how many tokens came before them (at the same moments
``PositionProvider`` takes its positions: the syntactic start where the node records
one, else where its code begins), and turns those counts into lines and columns on the
finished text. The results equal ``PositionProvider``'s starts
(``tests/migrate/test_positions.py``).
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import libcst as cst
from libcst._nodes.internal import CodegenState  # the state PositionProvider subclasses too

__all__ = ["starts"]

_NEWLINE = re.compile(r"\r\n?|\n")  # what LibCST counts as a line break


@dataclass
class _StartState(CodegenState):
    wanted: set[int] = field(default_factory=set)
    begin: dict[int, int] = field(default_factory=dict)  # id -> tokens before the node
    syntactic: dict[int, int] = field(default_factory=dict)
    same_as: dict[int, int] = field(default_factory=dict)  # id -> id of its start node

    def before_codegen(self, node: cst.CSTNode) -> None:
        if id(node) in self.wanted:
            self.begin.setdefault(id(node), len(self.tokens))

    @contextmanager
    def record_syntactic_position(
        self,
        node: cst.CSTNode,
        *,
        start_node: cst.CSTNode | None = None,
        end_node: cst.CSTNode | None = None,
    ) -> Iterator[None]:
        if id(node) in self.wanted and id(node) not in self.syntactic:
            if start_node is not None:  # starts where that child starts (IndentedBlock)
                self.same_as[id(node)] = id(start_node)
                self.wanted.add(id(start_node))
            self.syntactic[id(node)] = len(self.tokens)
        yield


def starts(module: cst.Module, nodes: Iterable[cst.CSTNode]) -> dict[int, tuple[int, int]]:
    """``id(node) -> (line, column)`` (1-based line, 0-based column, as LibCST's
    ``PositionProvider`` gives them) for each of ``nodes`` that is part of ``module``.

    Example:
        >>> m = cst.parse_module("x = 1\\ny = f(x)\\n")
        >>> call = m.body[1].body[0].value
        >>> starts(m, [call]) == {id(call): (2, 4)}
        True
    """
    asked = {id(n) for n in nodes}
    state = _StartState(
        default_indent=module.default_indent,
        default_newline=module.default_newline,
        wanted=set(asked),
    )
    module._codegen(state)
    marks = {**state.begin, **state.syntactic}
    for key in state.same_as.keys() & asked:
        start = key
        while start in state.same_as:
            start = state.same_as[start]
        marks[key] = marks[start]
    if not marks:
        return {}
    # Character offset of each marked token count, then line and column from the text.
    counts = sorted(set(marks.values()))
    offset_at: dict[int, int] = {}
    offset, i = 0, 0
    for count in counts:
        while i < count:
            offset += len(state.tokens[i])
            i += 1
        offset_at[count] = offset
    text = "".join(state.tokens)
    breaks = [m.end() for m in _NEWLINE.finditer(text)]
    out: dict[int, tuple[int, int]] = {}
    for key, count in marks.items():
        if key not in asked:
            continue
        at = offset_at[count]
        line = bisect.bisect_right(breaks, at)
        out[key] = (line + 1, at - (breaks[line - 1] if line else 0))
    return out
