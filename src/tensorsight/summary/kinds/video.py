"""Videos: an animated GIF in ``Summary.Image``, laid out as torch's writer lays it out.

torch's writer needs moviepy (and its ``moviepy.editor``, gone in moviepy 2) to write the
GIF; here Pillow writes it (the ``media`` extra). A batch of clips is tiled into one frame
grid: the batch is padded with black clips to a power of two, ``2 ** ((N.bit_length() - 1)
// 2)`` rows, as torch does, so both writers give the same frame size.
"""

from __future__ import annotations

import io
import math
from typing import Any

import numpy as np
from numpy.typing import NDArray

from tensorsight.errors import UsageError
from tensorsight.summary._proto import tb
from tensorsight.summary.kinds._convert import to_numpy

__all__ = ["KIND", "SCHEMA_VERSION", "encode", "frames"]

KIND = "images"
SCHEMA_VERSION = 0


def frames(vid_tensor: object, *, tag: str) -> NDArray[np.uint8]:
    """``(T, H', W', C)`` uint8 frames of an ``(N, T, C, H, W)`` video batch."""
    array = to_numpy(vid_tensor, what=f"Video {tag!r}")
    if array.ndim != 5:
        msg = (
            f"Video {tag!r}: got shape {tuple(array.shape)}. Expected 5 dimensions "
            "(N, T, C, H, W): batch, frames, channels, height, width."
        )
        raise UsageError(msg)
    n, t, c, h, w = (int(d) for d in array.shape)
    if c not in (1, 3, 4) or not (n and t and h and w):
        msg = (
            f"Video {tag!r}: got shape {tuple(array.shape)}. Expected (N, T, C, H, W) with "
            "C = 1, 3 or 4 and no empty dimension."
        )
        raise UsageError(msg)
    scale = 1.0 if array.dtype == np.uint8 else 255.0
    pixels = np.nan_to_num(array.astype(np.float32) * scale, nan=0.0).clip(0, 255)
    padded = 1 << (n - 1).bit_length()  # the next power of two
    if padded != n:
        pad = np.zeros((padded - n, t, c, h, w), dtype=pixels.dtype)
        pixels = np.concatenate([pixels, pad])
    rows = 2 ** ((n.bit_length() - 1) // 2)
    cols = padded // rows
    grid = pixels.reshape(rows, cols, t, c, h, w).transpose(2, 0, 4, 1, 5, 3)
    out: NDArray[np.uint8] = grid.reshape(t, rows * h, cols * w, c).astype(np.uint8)
    return out


def encode_gif(clip: NDArray[np.uint8], fps: float) -> bytes:
    """An endlessly looping GIF of ``(T, H, W, C)`` frames at ``fps`` frames per second."""
    from tensorsight._lazy import lazy_import

    pil = lazy_import("PIL.Image", extra="media", needed_by="add_video")
    channels = clip.shape[3]
    if channels == 1:
        images = [pil.fromarray(f[:, :, 0], "L") for f in clip]
    else:
        images = [pil.fromarray(np.ascontiguousarray(f[:, :, :3]), "RGB") for f in clip]
    out = io.BytesIO()
    duration = 10 * max(1, round(100 / fps))  # GIF delays are in 10 ms units: the nearest
    images[0].save(
        out, format="GIF", save_all=True, append_images=images[1:], duration=duration, loop=0
    )
    return out.getvalue()


def encode(tag: str, vid_tensor: object, fps: float = 4) -> Any:
    """A ``Summary.Value`` holding the video batch as one animated GIF.

    Args:
        tag: Series name.
        vid_tensor: ``(N, T, C, H, W)``; uint8 in [0, 255] or float in [0, 1].
        fps: Frames per second (positive).

    Raises:
        MissingDependencyError: Pillow is not installed.
        UsageError: Bad shape or ``fps``.
    """
    try:
        rate = float(fps)
    except (TypeError, ValueError):
        rate = math.nan
    if not (math.isfinite(rate) and rate > 0):
        msg = f"Video {tag!r}: fps {fps!r} is not valid. Expected a positive number."
        raise UsageError(msg)
    clip = frames(vid_tensor, tag=tag)
    _, height, width, channels = clip.shape
    return tb.Summary.Value(
        tag=tag,
        image=tb.Summary.Image(
            height=height,
            width=width,
            colorspace=channels,
            encoded_image_string=encode_gif(clip, rate),
        ),
    )
