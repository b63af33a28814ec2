"""Training summaries: write TensorBoard event files, read TensorBoard and MindSpore logs.

Reading order for newcomers: ``_record.py`` (byte layout), ``_proto/`` (message specs),
``writer.py`` (SummaryWriter), ``reader.py`` (event-file reader), ``logdir.py``
(read_logdir and the Logdir API of PRODUCT.md).
"""

from __future__ import annotations

from tensorsight.summary.logdir import Logdir, ReloadResult, RunInfo, read_logdir
from tensorsight.summary.reader import CorruptRecordWarning, EventFileReader
from tensorsight.summary.writer import SummaryWriter

__all__: list[str] = [
    "CorruptRecordWarning",
    "EventFileReader",
    "Logdir",
    "ReloadResult",
    "RunInfo",
    "SummaryWriter",
    "read_logdir",
]
