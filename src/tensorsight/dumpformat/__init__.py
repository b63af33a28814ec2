"""The dump format: what a dump folder holds, and reading and writing it.

Below :mod:`tensorsight.capture` (which records runs) and above nothing of ours but the
helpers: ``compare`` and the board's data layer read dumps through this package alone.
Reading order for newcomers: ``schema.py`` (the format: manifest, op table, tensor records),
``writer.py`` (how a step reaches disk: ``_table.py``/``_parquet.py`` for the op table,
``_safetensors.py`` for tensor shards, ``_fs.py`` for file access), ``reader.py`` (reading
our folders; ``msprobe.py`` and ``_ptfile.py`` for msprobe's, ``mindspore.py`` for MindSpore's
own Dump), ``_check.py`` (validation:
one-line errors for malformed files), ``_np_stats.py``/``_stats_native.py`` (statistics of a
buffer, the C kernel ``_stats_kernel.c``) and ``inspect.py`` (``tensorsight inspect`` on a
dump). A new foreign dump format is one reader module here. Importing this package is cheap:
pyarrow loads on first use.
"""

from __future__ import annotations

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

__all__ = [
    "LEVELS",
    "MODES",
    "SCHEMA_VERSION",
    "Dump",
    "DumpManifest",
    "DumpStep",
    "OpRecord",
    "RawTensor",
    "StepInfo",
    "TensorRecord",
    "TensorStats",
    "read_dump",
]
