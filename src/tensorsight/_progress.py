"""A dependency-free progress bar for long work, silent when not on a terminal.

Engines accept an optional ``progress`` callback; only ``cli`` modules create a
:class:`ProgressBar`, so library users never see output they did not ask for.
"""

from __future__ import annotations

import sys
import time
from types import TracebackType
from typing import TextIO

__all__ = ["ProgressBar"]


class ProgressBar:
    """Draws ``label [#####.....] 50% 5/10 1.2s`` on stderr, at most 10 times a second.

    Args:
        total: Number of units of work, or ``None`` when unknown (a counter is shown).
        label: Short text before the bar.
        enabled: Force on/off; ``None`` means "on only when the stream is a TTY".
        stream: Where to draw (stderr by default).

    Example:
        >>> with ProgressBar(3, label="files", enabled=False) as bar:
        ...     for _ in range(3):
        ...         bar.advance()
        >>> bar.done
        3
    """

    def __init__(
        self,
        total: int | None,
        *,
        label: str = "",
        enabled: bool | None = None,
        stream: TextIO | None = None,
    ) -> None:
        self.total = total
        self.label = label
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = self.stream.isatty() if enabled is None else enabled
        self.done = 0
        self._start = time.monotonic()
        self._last_draw = 0.0

    def advance(self, n: int = 1) -> None:
        """Record ``n`` more units done and redraw if enough time has passed."""
        self.done += n
        now = time.monotonic()
        if self.enabled and (now - self._last_draw >= 0.1 or self.done == self.total):
            self._last_draw = now
            self._draw(now)

    def _draw(self, now: float) -> None:
        elapsed = now - self._start
        if self.total:
            frac = min(self.done / self.total, 1.0)
            bar = "#" * int(frac * 30)
            text = f"{self.label} [{bar:<30}] {frac:4.0%} {self.done}/{self.total} {elapsed:.1f}s"
        else:
            text = f"{self.label} {self.done} {elapsed:.1f}s"
        self.stream.write("\r" + text)
        self.stream.flush()

    def close(self) -> None:
        """Finish the line (only if something was drawn)."""
        if self.enabled and self._last_draw:
            self.stream.write("\n")
            self.stream.flush()

    def __enter__(self) -> ProgressBar:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
