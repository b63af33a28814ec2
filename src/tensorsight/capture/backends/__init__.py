"""Capture backends: name -> ``"module:Class"``, imported on first use; the levels they record.

A backend's name is its level (``op``) or ``<level>/<variant>`` (``op/native``). The levels
:func:`tensorsight.dump` accepts are those of the registered backends (:func:`levels`), in
registration order. A level may have several backends, its **candidates** (:func:`candidates`):
its variants, in registration order, then the backend named after the level itself, the
fallback that records every dump of its level. A dump takes the first candidate whose
:meth:`CaptureBackend.unavailable` has no objection to its options (:func:`select`); level
``op`` tries the native op capture before the dispatch mode.

Third parties register more through the entry-point group ``tensorsight.capture_backends``
(a new level, or a variant ``<level>/<name>`` of one, tried after the built-in variants).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tensorsight._registry import Registry
from tensorsight.capture.backends.base import CaptureBackend
from tensorsight.errors import CaptureError, RegistryError

__all__ = ["CAPTURE_BACKENDS", "CaptureBackend", "candidates", "levels", "select"]

CAPTURE_BACKENDS: Registry[type[CaptureBackend]] = Registry(
    "capture backend", entry_point_group="tensorsight.capture_backends"
)
CAPTURE_BACKENDS.add("op", "tensorsight.capture.backends.torch_ops:TorchOpCapture")
CAPTURE_BACKENDS.add("module", "tensorsight.capture.backends.torch_modules:TorchModuleCapture")
CAPTURE_BACKENDS.add("api", "tensorsight.capture.backends.torch_api:TorchApiCapture")
CAPTURE_BACKENDS.add("op/native", "tensorsight.capture._native_capture:NativeOpCapture")


def _level(name: str) -> str:
    return name.partition("/")[0]


def levels() -> tuple[str, ...]:
    """Every level a registered backend records, in registration order (built-ins first)."""
    return tuple(dict.fromkeys(_level(n) for n in CAPTURE_BACKENDS.names()))


def candidates(level: str) -> tuple[str, ...]:
    """The backends of ``level``, in the order :func:`select` tries them (see the module)."""
    names = CAPTURE_BACKENDS.names()
    variants = tuple(n for n in names if n != level and _level(n) == level)
    return (*variants, level) if level in names else variants


def select(options: Mapping[str, Any]) -> type[CaptureBackend]:
    """The first candidate of ``options["level"]`` that can record a dump with ``options``.

    A candidate that fails to import counts as unable (its reason is kept for the message).

    Raises:
        CaptureError: No candidate can; the message gives each one's reason.
    """
    level = str(options["level"])
    reasons = []
    for name in candidates(level):
        try:
            cls = CAPTURE_BACKENDS.get(name)
            why = cls.unavailable(options)
        except RegistryError as exc:  # a broken extension must not stop the others
            why = str(exc)
        if why is None:
            return cls
        reasons.append(f"{name}: {why}")
    known = ", ".join(levels())
    msg = (
        f"Dump level {level!r}: no capture backend can record it "
        f"({'; '.join(reasons) or 'none registered'}). Registered levels: {known}."
    )
    raise CaptureError(msg)
