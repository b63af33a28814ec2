"""One-time progress lines from library code (e.g. "building the native op capture, 10-30 s").

Library code never prints: it logs such a line at INFO on the :data:`NOTICE_LOGGER` logger
(:func:`notice`). A command (``tensorsight.cli``, and ``tensorsight dump``'s side in the
recorded process) calls :func:`show_on_stderr` so its user sees them as bare lines, as
before; a program that embeds tensorsight shows them, or not, with its own logging set-up::

    logging.getLogger("tensorsight.notice").addHandler(logging.StreamHandler())
    logging.getLogger("tensorsight.notice").setLevel(logging.INFO)
"""

from __future__ import annotations

import logging
import sys
from typing import TextIO

__all__ = ["NOTICE_LOGGER", "notice", "show_on_stderr"]

NOTICE_LOGGER = "tensorsight.notice"
_HANDLER_NAME = "tensorsight-command"


def notice(line: str) -> None:
    """Log ``line`` as a one-time progress notice (INFO on :data:`NOTICE_LOGGER`)."""
    logging.getLogger(NOTICE_LOGGER).info("%s", line)


class _CurrentStderr(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes each line to ``sys.stderr`` as it is when the line is logged."""

    @property
    def stream(self) -> TextIO:
        return sys.stderr

    @stream.setter
    def stream(self, _value: TextIO) -> None:  # StreamHandler.__init__ assigns it
        pass


def show_on_stderr() -> None:
    """Print notices to stderr as bare lines, once a process (for commands only).

    The logger then stops propagating, so an application's root handler does not show a
    line twice.
    """
    log = logging.getLogger(NOTICE_LOGGER)
    if not any(h.get_name() == _HANDLER_NAME for h in log.handlers):
        handler = _CurrentStderr()
        handler.set_name(_HANDLER_NAME)
        log.addHandler(handler)
    log.setLevel(logging.INFO)
    log.propagate = False
