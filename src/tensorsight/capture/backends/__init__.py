"""Capture backends: level name -> ``"module:Class"``, imported on first use.

Third parties register more through the entry-point group ``tensorsight.capture_backends``.
"""

from __future__ import annotations

from tensorsight._registry import Registry
from tensorsight.capture.backends.base import CaptureBackend

__all__ = ["CAPTURE_BACKENDS", "CaptureBackend"]

CAPTURE_BACKENDS: Registry[type[CaptureBackend]] = Registry(
    "capture backend", entry_point_group="tensorsight.capture_backends"
)
CAPTURE_BACKENDS.add("op", "tensorsight.capture.backends.torch_ops:TorchOpCapture")
CAPTURE_BACKENDS.add("module", "tensorsight.capture.backends.torch_modules:TorchModuleCapture")
CAPTURE_BACKENDS.add("api", "tensorsight.capture.backends.torch_api:TorchApiCapture")
