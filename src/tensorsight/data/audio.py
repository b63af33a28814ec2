"""``AudioClip``: one encoded audio clip at one step (``read_records(run, "audio", tag)``)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["AudioClip"]


@dataclass(frozen=True, eq=False)
class AudioClip:
    """Encoded audio (usually WAV) as written; ``index`` orders several clips of one step.

    ``sample_rate`` is 0.0 when the source does not say (TF2 audio summaries).
    """

    step: int
    wall_time: float
    index: int
    data: bytes
    sample_rate: float
    mime_type: str
    label: str = ""

    SCHEMA_VERSION = 1
