"""Training summaries: write TensorBoard event files, read TensorBoard and MindSpore logs.

Reading order for newcomers: ``_record.py`` (byte layout), ``_proto/`` (message specs),
``writer.py`` (SummaryWriter), ``reader.py`` (event-file reader), ``logdir.py``
(read_logdir and the Logdir API of PRODUCT.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tensorsight.summary.logdir import Logdir, ReloadResult, RunInfo, read_logdir
from tensorsight.summary.reader import CorruptRecordWarning, EventFileReader

if TYPE_CHECKING:
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


def __getattr__(name: str) -> Any:
    # the writer (and its background file writer) loads on first use: a reader such as
    # `tensorsight board` never writes, and its start-up time is the user's wait
    if name == "SummaryWriter":
        from tensorsight.summary.writer import SummaryWriter

        return SummaryWriter
    msg = f"module 'tensorsight.summary' has no attribute {name!r}"
    raise AttributeError(msg)
