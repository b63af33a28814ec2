"""Audio: 16-bit PCM WAV clips in ``Summary.Audio``, as torch's writer encodes them."""

from __future__ import annotations

import io
import wave
from dataclasses import dataclass
from typing import Any

import numpy as np

from tensorsight.errors import UsageError
from tensorsight.summary._proto import tb
from tensorsight.summary.kinds._convert import to_numpy
from tensorsight.summary.kinds._kind import Kind, Raw
from tensorsight.summary.kinds.tensor_decode import decode_tensor

__all__ = [
    "KIND",
    "PLUGIN_NAME",
    "SCHEMA_VERSION",
    "SPEC",
    "AudioRecord",
    "decode",
    "encode",
]

KIND = "audio"
PLUGIN_NAME = "audio"  # TF2 tensor summaries; legacy values carry no plugin
SCHEMA_VERSION = 0


def encode(tag: str, snd_tensor: object, sample_rate: int = 44100) -> Any:
    """A ``Summary.Value`` holding a mono WAV clip.

    Args:
        tag: Series name.
        snd_tensor: Samples in [-1, 1], shape ``(L,)`` or ``(1, L)``; values outside are
            clipped, NaN becomes 0.
        sample_rate: Samples per second.

    Raises:
        UsageError: More than one channel, or no samples.
    """
    samples = to_numpy(snd_tensor, what=f"Audio {tag!r}").squeeze()
    if samples.dtype.kind != "f":  # floats keep their precision, as torch's writer does
        samples = samples.astype(np.float64)
    if samples.ndim != 1 or samples.size == 0:
        msg = (
            f"Audio {tag!r}: got shape {tuple(np.shape(samples))} after squeezing. Expected "
            "one non-empty channel, shape (L,) or (1, L)."
        )
        raise UsageError(msg)
    clipped = np.nan_to_num(samples, nan=0.0).clip(-1, 1)
    pcm = (clipped * np.iinfo(np.int16).max).astype("<i2")
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as wav:
        wav.setnchannels(1)
        wav.setsampwidth(2)
        wav.setframerate(int(sample_rate))
        wav.writeframes(pcm.tobytes())
    return tb.Summary.Value(
        tag=tag,
        audio=tb.Summary.Audio(
            sample_rate=float(sample_rate),
            num_channels=1,
            length_frames=int(pcm.size),
            encoded_audio_string=buffer.getvalue(),
            content_type="audio/wav",
        ),
    )


# ------------------------------------------------------------ read side
@dataclass(frozen=True, eq=False)
class AudioRecord:
    """One encoded audio clip (usually WAV) with its sample rate (0.0 when unknown)."""

    step: int
    wall_time: float
    encoded: bytes
    sample_rate: float
    content_type: str
    index: int = 0
    label: str = ""


def _utf8(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


def decode(raw: Raw) -> list[AudioRecord]:
    """A TF2 ``audio`` plugin tensor: ``(k, 2)`` rows of (encoded clip, label)."""
    _, _, arr = decode_tensor(raw.tensor)
    rows = arr.reshape(-1, 2) if arr.size else arr.reshape(0, 2)
    return [
        AudioRecord(raw.step, raw.wall_time, bytes(r[0]), 0.0, "audio/wav", i, _utf8(r[1]))
        for i, r in enumerate(rows)
    ]


SPEC = Kind(KIND, AudioRecord, PLUGIN_NAME, decode)
