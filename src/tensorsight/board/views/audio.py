"""The audio view: audio clips per tag and run, a player per run at a chosen step.

Serves ``add_audio`` clips of torch's writer, tensorboardX and ours (WAV), and TensorBoard's
``audio`` plugin tensors. ``GET /clips`` lists one tag's clips for several runs at once (step,
sample rate, duration, label, size); ``GET /audio?run&tag&i`` returns one clip's bytes with
an audio media type, answering ``Range`` requests so a player can seek. The bytes come from
the provider by position, never from a path the client names. See ``docs/http_api/audio.md``.
"""

from __future__ import annotations

import io
import re
import wave
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from tensorsight.board.errors import NotFound, PublicError
from tensorsight.board.views.base import (
    View,
    int_param,
    lookup,
    offload,
    require_param,
    require_runs,
)

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import BaseRoute

    from tensorsight.data import AudioClip, DataProvider

__all__ = [
    "MAX_CLIPS",
    "MAX_CLIP_BYTES",
    "MAX_RUNS",
    "SAFE_TYPES",
    "AudioView",
    "audio_impl",
    "clips_impl",
    "wav_info",
]

MAX_RUNS = 64  # runs per /clips request
MAX_CLIPS = 10_000  # clips listed per run (the newest)
MAX_CLIP_BYTES = 64 * 1024 * 1024  # the largest clip /audio sends
SAFE_TYPES = frozenset(
    {"audio/wav", "audio/x-wav", "audio/wave", "audio/mpeg", "audio/ogg", "audio/flac"}
)
_RANGE = re.compile(r"bytes=(\d*)-(\d*)")


class RangeNotSatisfiable(PublicError):
    """A ``Range`` header outside the clip (HTTP 416)."""

    http_status = 416
    code = "range_not_satisfiable"


class ClipTooLarge(PublicError):
    """A clip over the size the route sends (HTTP 413)."""

    http_status = 413
    code = "too_large"


def wav_info(data: bytes, sample_rate: float) -> tuple[float, float | None, int]:
    """``(sample_rate, duration_seconds, channels)`` of a clip; WAV headers fill the gaps.

    ``sample_rate`` is the recorded one (0.0 when the source did not say); a PCM WAV header
    gives the rate, frame count and channels. Other encodings: the recorded rate, no
    duration, 0 channels.
    """
    try:
        with wave.open(io.BytesIO(data), "rb") as w:
            rate = float(w.getframerate())
            frames = w.getnframes()
            channels = w.getnchannels()
    except (wave.Error, EOFError, ValueError):
        return sample_rate, None, 0
    rate = rate or sample_rate
    return (sample_rate or rate), (frames / rate if rate else None), channels


def _entry(i: int, clip: AudioClip) -> dict[str, Any]:
    rate, duration, channels = wav_info(clip.data, clip.sample_rate)
    return {
        "i": i,
        "step": clip.step,
        "wall_time": clip.wall_time,
        "index": clip.index,
        "sample_rate": rate,
        "duration": duration,
        "channels": channels,
        "mime_type": clip.mime_type,
        "label": clip.label,
        "bytes": len(clip.data),
    }


def _read(provider: DataProvider, run: str, tag: str) -> list[AudioClip]:
    lookup(provider, "audio", run, tag)
    try:
        return provider.read_records(run, "audio", tag)
    except KeyError:
        msg = f"Run {run[:200]!r} has no audio tag {tag[:200]!r}."
        raise NotFound(msg) from None


def clips_impl(provider: DataProvider, tag: str, runs: Sequence[str]) -> dict[str, Any]:
    """The clips of ``tag`` in each of ``runs``; runs without the tag are listed as missing.

    Returns:
        ``{"tag", "runs": [{"run", "steps", "clips": [clip]}], "missing": [run]}``; a clip
        is ``{i, step, wall_time, index, sample_rate, duration, channels, mime_type, label,
        bytes}`` with ``i`` its position for ``/audio``; ``duration`` is null when the
        encoding is not PCM WAV.
    """
    out = []
    missing = []
    for run in runs:
        try:
            clips = _read(provider, run, tag)
        except NotFound:
            clips = []
        if not clips:
            missing.append(run)
            continue
        first = max(0, len(clips) - MAX_CLIPS)
        entries = [_entry(i, c) for i, c in enumerate(clips) if i >= first]
        out.append({"run": run, "steps": sorted({e["step"] for e in entries}), "clips": entries})
    return {"tag": tag, "runs": out, "missing": missing}


def audio_impl(provider: DataProvider, run: str, tag: str, i: int) -> tuple[bytes, str]:
    """The encoded bytes of clip ``i`` and the media type to send them with."""
    clips = _read(provider, run, tag)
    if not 0 <= i < len(clips):
        msg = f"Audio tag {tag[:200]!r} has {len(clips)} clips; there is no clip {i}."
        raise NotFound(msg)
    clip = clips[i]
    if len(clip.data) > MAX_CLIP_BYTES:
        msg = (
            f"Audio clip {i} of tag {tag[:200]!r} has {len(clip.data)} bytes; the board sends "
            f"at most {MAX_CLIP_BYTES}."
        )
        raise ClipTooLarge(msg)
    media = clip.mime_type if clip.mime_type in SAFE_TYPES else "application/octet-stream"
    return clip.data, media


def byte_range(header: str | None, size: int) -> tuple[int, int] | None:
    """``(start, end)`` inclusive of a single ``bytes=`` range, or None for the whole clip.

    Raises:
        RangeNotSatisfiable: The range starts past the end or is malformed.
    """
    if not header:
        return None
    m = _RANGE.fullmatch(header.strip())
    if m is None or (not m.group(1) and not m.group(2)):
        msg = f"Range {header[:40]!r}: expected one 'bytes=START-END' range."
        raise RangeNotSatisfiable(msg)
    if not m.group(1):  # the last N bytes
        start, end = max(0, size - int(m.group(2))), size - 1
    else:
        start = int(m.group(1))
        end = min(int(m.group(2)), size - 1) if m.group(2) else size - 1
    if start >= size or end < start:
        msg = f"Range {header[:40]!r} lies outside the clip of {size} bytes."
        raise RangeNotSatisfiable(msg)
    return start, end


class AudioView(View):
    """Audio clips per tag: a player per run, a step slider, rate/duration/label shown."""

    name = "audio"
    title = "Audio"
    kind = "audio"

    def routes(self) -> Sequence[BaseRoute]:
        from starlette.routing import Route

        return [
            Route("/tags", self._tags),
            Route("/clips", self._clips),
            Route("/audio", self._audio),
        ]

    async def _clips(self, request: Request) -> Response:
        from starlette.responses import JSONResponse

        tag = require_param(request, "tag")
        runs = require_runs(request, MAX_RUNS)
        return JSONResponse(await offload(request, clips_impl, self.provider, tag, runs))

    async def _audio(self, request: Request) -> Response:
        from starlette.responses import Response

        run, tag = require_param(request, "run"), require_param(request, "tag")
        i = int_param(request, "i", 0, 0, 10**9)
        data, media = await offload(request, audio_impl, self.provider, run, tag, i)
        headers = {"Cache-Control": "max-age=3600", "Accept-Ranges": "bytes"}  # nosniff: app-wide
        span = byte_range(request.headers.get("range"), len(data))
        if span is None:
            return Response(data, media_type=media, headers=headers)
        start, end = span
        headers["Content-Range"] = f"bytes {start}-{end}/{len(data)}"
        return Response(data[start : end + 1], status_code=206, media_type=media, headers=headers)
