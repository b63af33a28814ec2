"""CaptureBackend: the base class every capture backend fills in.

Public methods check state; subclasses implement ``_start`` and ``_stop`` and report each
op through the recorder they were given (Polygraphy runner style).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from types import TracebackType
from typing import Any, ClassVar

from tensorsight.errors import CaptureError

__all__ = ["CaptureBackend"]


class CaptureBackend(ABC):
    """Records ops of a running framework into a recorder.

    Args:
        recorder: Where ops go (``tensorsight.capture._recorder.Recorder`` for torch).
        tracker: The module tracker (torch backends) or ``None``.
    """

    #: The level it records (its registry name, before any ``/<variant>``).
    level: ClassVar[str] = ""
    #: ``manifest.extra["capture"]`` when its level has more than one candidate: which one
    #: recorded the dump (``python``, ``native``).
    implementation: ClassVar[str] = "python"
    #: The module tracker reports parameter gradients to it (``tensorsight.param_grad`` rows).
    param_grads: ClassVar[bool] = False

    @classmethod
    def unavailable(cls, options: Mapping[str, Any]) -> str | None:
        """Why this backend cannot record a dump with these :func:`tensorsight.dump` options
        (``level``, ``mode``, ``stack``, ...), or ``None`` when it can (the default).

        Asked before the backend is made, so the next candidate of the level can take over
        (see :func:`tensorsight.capture.backends.select`).
        """
        return None

    def __init__(self, recorder: Any, tracker: Any = None) -> None:
        self.recorder = recorder
        self.tracker = tracker
        self.is_active = False

    def start(self) -> None:
        """Begin recording; raises CaptureError when already recording."""
        if self.is_active:
            msg = (
                f"Capture backend {type(self).__name__!r}: "
                "start() called twice. Expected stop() first."
            )
            raise CaptureError(msg)
        self._start()
        self.is_active = True

    def stop(self) -> None:
        """Stop recording (does nothing when not recording)."""
        if not self.is_active:
            return
        self.is_active = False
        self._stop()

    def new_step(self) -> None:  # noqa: B027 - optional hook, empty by default
        """Forget per-step state (called between steps)."""

    def __enter__(self) -> CaptureBackend:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    @abstractmethod
    def _start(self) -> None:
        """Install hooks or modes."""

    @abstractmethod
    def _stop(self) -> None:
        """Remove everything ``_start`` installed."""
