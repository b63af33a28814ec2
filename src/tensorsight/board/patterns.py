"""User-supplied filter patterns, matched by RE2 in time linear in the text.

A pattern typed into the board (the precision view's ``q``, say) comes from whoever can send
the board a request. Python's ``re`` backtracks: ``(.*.*)*Z`` against a 30-character name
runs for minutes and holds whatever thread runs it. RE2 (``google-re2``, the ``board``
extra) has no backtracking, so every pattern it accepts matches in linear time; the syntax
it lacks (backreferences, lookaround) is refused with a one-line 400.
"""

from __future__ import annotations

from typing import Any, Protocol

from tensorsight._lazy import lazy_import
from tensorsight.board.errors import InvalidArgument

__all__ = ["MAX_PATTERN_CHARS", "Pattern", "compile_filter"]

MAX_PATTERN_CHARS = 1000
# RE2 refuses a pattern whose compiled program would need more than this.
_MAX_MEM = 8 << 20


class Pattern(Protocol):
    """What the views use of a compiled pattern."""

    def search(self, text: str) -> Any: ...


def compile_filter(pattern: str, *, param: str = "q", ignore_case: bool = True) -> Pattern:
    """``pattern`` compiled by RE2, or InvalidArgument naming ``param`` and why."""
    if len(pattern) > MAX_PATTERN_CHARS:
        msg = (
            f"Query parameter {param!r}: the pattern has {len(pattern)} characters "
            f"(expected at most {MAX_PATTERN_CHARS})."
        )
        raise InvalidArgument(msg)
    re2 = lazy_import("re2", extra="board", needed_by="the board's filters")
    options = re2.Options()
    options.case_sensitive = not ignore_case
    options.log_errors = False
    options.max_mem = _MAX_MEM
    try:
        return re2.compile(pattern, options)  # type: ignore[no-any-return]
    except re2.error as exc:
        reason = exc.args[0] if exc.args else exc
        if isinstance(reason, bytes):
            reason = reason.decode("utf-8", "replace")
        msg = (
            f"Query parameter {param!r}: {pattern[:80]!r} is not a valid RE2 regular "
            f"expression ({reason}; backreferences and lookaround are not supported)."
        )
        raise InvalidArgument(msg) from None
