"""Dumps: record every op of a PyTorch step or an ONNX run, and read dumps back.

Reading order for newcomers: ``schema.py`` (the format), ``session.py`` (``dump``),
``_recorder.py`` and ``backends/`` (what is recorded), ``writer.py`` (how it reaches disk),
``reader.py`` and ``msprobe.py`` (reading), ``inspect.py``, ``cli.py``.
Importing this package is cheap: torch and pyarrow load on first use.
"""

from __future__ import annotations

from tensorsight.capture.inspect import DumpInspection, format_inspection, inspect_dump
from tensorsight.capture.reader import Dump, DumpStep, RawTensor, read_dump
from tensorsight.capture.schema import (
    LEVELS,
    MODES,
    SCHEMA_VERSION,
    DumpManifest,
    OpRecord,
    StepInfo,
    TensorRecord,
    TensorStats,
)
from tensorsight.capture.session import DumpSession, ObserverCheck, dump

__all__ = [
    "LEVELS",
    "MODES",
    "SCHEMA_VERSION",
    "Dump",
    "DumpInspection",
    "DumpManifest",
    "DumpSession",
    "DumpStep",
    "ObserverCheck",
    "OpRecord",
    "RawTensor",
    "StepInfo",
    "TensorRecord",
    "TensorStats",
    "dump",
    "format_inspection",
    "inspect_dump",
    "read_dump",
]
