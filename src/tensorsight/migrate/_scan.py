"""Which top-level statements a rule set can possibly touch, from their text alone.

LibCST rebuilds every node a transformer visits and computes positions with a full code
generation, which together cost several times the parse. :mod:`.source` therefore parses
and rewrites with LibCST only the top-level statements whose lines contain a trigger word
of the rule set (``cuda``, ``nccl``, ``pin_memory``, ...) or a local alias of a watched API
(``sync`` for ``from torch.cuda import synchronize as sync``); every other line is copied
as it is. A rule whose matches cannot be found this way must list its words in
``TRIGGERS``. Identifiers cannot be spelled with escapes, but strings can (``"\\x63uda"`` is
``"cuda"``): a statement with a character escape in a string (``\\x..``, ``\\u....``,
``\\N{...}``, octal) is always hot, since no word list can see through it.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable, Sequence

__all__ = ["hot_statements"]

#: A character escape that can spell a letter in a string literal (``\\n`` and ``\\t`` cannot).
_ESCAPE = r"\\(?:x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|N\{|[0-7]{1,3})"


def hot_statements(code: str, spans: Sequence[tuple[int, int]], words: Iterable[str]) -> list[bool]:
    """Which line spans (1-based, inclusive) contain at least one of ``words``.

    Example:
        >>> hot_statements("a = 1\\nb = x.cuda()\\n", [(1, 1), (2, 2)], ["cuda"])
        [False, True]
    """
    unique = sorted(set(words), key=len, reverse=True)
    if not unique:
        return [False] * len(spans)
    pattern = re.compile("|".join([*(re.escape(w) for w in unique), _ESCAPE]))
    line_starts = [0] + [m.end() for m in re.finditer("\n", code)]
    hot_lines = sorted(
        {bisect.bisect_right(line_starts, m.start()) for m in pattern.finditer(code)}
    )
    out = []
    for start, end in spans:
        i = bisect.bisect_left(hot_lines, start)
        out.append(i < len(hot_lines) and hot_lines[i] <= end)
    return out
