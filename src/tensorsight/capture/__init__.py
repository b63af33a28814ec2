"""Dumps: record every op of a PyTorch step or an ONNX run.

Reading order for newcomers: ``session.py`` (``dump``), ``_recorder.py`` and ``backends/``
(what is recorded), ``_torch_stats.py`` (statistics of torch tensors), ``cli.py``. The format
itself (schema, writer, readers, msprobe, inspect) is :mod:`tensorsight.dumpformat`; its
reading names are re-exported here. Importing this package is cheap: torch and pyarrow load
on first use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from tensorsight.dumpformat.reader import Dump, DumpStep, RawTensor, read_dump
from tensorsight.dumpformat.schema import (
    LEVELS,
    MODES,
    SCHEMA_VERSION,
    DumpManifest,
    OpRecord,
    StepInfo,
    TensorRecord,
    TensorStats,
)

if TYPE_CHECKING:  # pragma: no cover - static typing only
    from tensorsight.capture.session import DumpSession, ObserverCheck, dump
    from tensorsight.dumpformat.inspect import DumpInspection, format_inspection, inspect_dump

# The recording and inspection parts load on first use: a comparison reads dumps and needs
# neither (they were a tenth of the compare command's own imports).
_LAZY = {
    "DumpInspection": "tensorsight.dumpformat.inspect",
    "format_inspection": "tensorsight.dumpformat.inspect",
    "inspect_dump": "tensorsight.dumpformat.inspect",
    "DumpSession": "tensorsight.capture.session",
    "ObserverCheck": "tensorsight.capture.session",
    "dump": "tensorsight.capture.session",
}

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


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        msg = f"module 'tensorsight.capture' has no attribute {name!r}"
        raise AttributeError(msg)
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip __getattr__
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
