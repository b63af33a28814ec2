"""Images: PNG-encoded ``Summary.Image`` values, laid out and scaled as torch's writer does.

PNG encoding is done here with :mod:`zlib` (8-bit RGB or RGBA, no filter), so writing images
needs neither Pillow nor torch.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

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
    "ImageRecord",
    "decode",
    "encode",
    "encode_png",
    "image_format",
    "make_grid",
    "to_hwc",
]

KIND = "images"
PLUGIN_NAME = "images"  # TF2 tensor summaries; legacy values carry no plugin
SCHEMA_VERSION = 0
GRID_COLUMNS = 8


def encode(tag: str, img_tensor: object, dataformats: str = "CHW") -> Any:
    """A ``Summary.Value`` holding one PNG image.

    Args:
        tag: Series name.
        img_tensor: Image data: uint8 in [0, 255], or float in [0, 1] (scaled by 255 and
            clipped). 4-D batches are tiled into a grid of 8 columns.
        dataformats: Axis letters of ``img_tensor``: ``CHW``, ``HWC``, ``HW``, ``WH``,
            ``NCHW``, ``NHWC``, ... Channels must be 1 (grey), 3 (RGB) or 4 (RGBA).

    Raises:
        UsageError: Shape and ``dataformats`` disagree, or the channel count is not 1, 3 or 4.
    """
    array = to_numpy(img_tensor, what=f"Image {tag!r}")
    hwc = to_hwc(array, dataformats, tag=tag)
    scale = 1.0 if hwc.dtype == np.uint8 else 255.0
    pixels = np.nan_to_num(hwc.astype(np.float32) * scale, nan=0.0)
    pixels = pixels.clip(0, 255).astype(np.uint8)
    height, width, channels = pixels.shape
    return tb.Summary.Value(
        tag=tag,
        image=tb.Summary.Image(
            height=height,
            width=width,
            colorspace=channels,
            encoded_image_string=encode_png(pixels),
        ),
    )


def to_hwc(array: NDArray[Any], dataformats: str, *, tag: str) -> NDArray[Any]:
    """Reorder ``array`` to height x width x channels (1 channel becomes 3, like torch)."""
    fmt = dataformats.upper()
    if len(set(fmt)) != len(fmt) or not set(fmt) <= set("NCHW") or not {"H", "W"} <= set(fmt):
        msg = (
            f"Image {tag!r}: dataformats {dataformats!r} is not valid. Expected the letters of "
            "NCHW in any order, each at most once, with H and W, e.g. 'CHW', 'HWC', 'NCHW'."
        )
        raise UsageError(msg)
    if array.ndim != len(fmt):
        msg = (
            f"Image {tag!r}: got shape {tuple(array.shape)} for dataformats {dataformats!r}. "
            f"Expected {len(fmt)} dimensions. Pass the dataformats that describe the array."
        )
        raise UsageError(msg)
    if "N" in fmt:
        if "C" not in fmt:  # e.g. NHW: grey images
            array, fmt = array[..., np.newaxis], fmt + "C"
        nchw = array.transpose([fmt.index(c) for c in "NCHW"])
        return make_grid(nchw, tag=tag).transpose(1, 2, 0)
    if "C" in fmt:
        hwc = array.transpose([fmt.index(c) for c in "HWC"])
        channels = hwc.shape[2]
        if channels == 1:
            return np.concatenate([hwc, hwc, hwc], axis=2)
        if channels not in (3, 4):
            msg = (
                f"Image {tag!r}: got {channels} channels. Expected 1, 3 or 4. Check "
                f"dataformats {dataformats!r} against shape {tuple(array.shape)}."
            )
            raise UsageError(msg)
        return hwc
    hw = array.transpose([fmt.index(c) for c in "HW"])
    return np.stack([hw, hw, hw], axis=2)


def make_grid(nchw: NDArray[Any], *, tag: str, columns: int = GRID_COLUMNS) -> NDArray[Any]:
    """Tile a batch (N x C x H x W, C = 1 or 3) into one C x H' x W' image, row by row."""
    if nchw.shape[1] == 1:
        nchw = np.concatenate([nchw, nchw, nchw], axis=1)
    count, channels, height, width = nchw.shape
    if channels != 3:
        msg = f"Image batch {tag!r}: got {channels} channels. Expected 1 or 3."
        raise UsageError(msg)
    if count == 0:
        msg = f"Image batch {tag!r}: got an empty batch. Expected at least one image."
        raise UsageError(msg)
    cols = min(count, columns)
    rows = -(-count // cols)
    canvas = np.zeros((3, height * rows, width * cols), dtype=nchw.dtype)
    for i in range(count):
        r, c = divmod(i, cols)
        canvas[:, r * height : (r + 1) * height, c * width : (c + 1) * width] = nchw[i]
    return canvas


def _chunk(kind: bytes, data: bytes) -> bytes:
    body = kind + data
    return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF)


def encode_png(pixels: NDArray[np.uint8], *, level: int = 6) -> bytes:
    """PNG bytes of an H x W x 3 (RGB) or H x W x 4 (RGBA) uint8 array."""
    height, width, channels = pixels.shape
    color_type = {3: 2, 4: 6}[channels]
    rows = np.ascontiguousarray(pixels).reshape(height, width * channels)
    raw = np.zeros((height, width * channels + 1), dtype=np.uint8)  # filter byte 0 per row
    raw[:, 1:] = rows
    header = struct.pack(">IIBBBBB", width, height, 8, color_type, 0, 0, 0)
    return b"".join(
        [
            b"\x89PNG\r\n\x1a\n",
            _chunk(b"IHDR", header),
            _chunk(b"IDAT", zlib.compress(raw.tobytes(), level)),
            _chunk(b"IEND", b""),
        ]
    )


# ------------------------------------------------------------ read side
@dataclass(frozen=True, eq=False)
class ImageRecord:
    """One encoded image; ``index`` numbers the images logged at the same step (0, 1, ...).

    ``format`` is ``"png"``, ``"jpeg"``, ``"gif"``, ``"webp"``, ``"bmp"`` or ``"unknown"``
    (from the image's magic bytes). ``width``/``height`` are 0 when the source omits them.
    """

    step: int
    wall_time: float
    encoded: bytes
    width: int
    height: int
    format: str
    index: int = 0


_MAGIC = (
    (b"\x89PNG", "png"),
    (b"\xff\xd8", "jpeg"),
    (b"GIF8", "gif"),
    (b"BM", "bmp"),
)


def image_format(data: bytes) -> str:
    """The image format from its first bytes."""
    for magic, name in _MAGIC:
        if data.startswith(magic):
            return name
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "webp"
    return "unknown"


def decode(raw: Raw) -> list[ImageRecord]:
    """A TF2 ``images`` plugin tensor: width, height, then one encoded image per element."""
    _, _, arr = decode_tensor(raw.tensor)
    flat = arr.reshape(-1)
    width, height = (int(flat[i]) if flat.size > i else 0 for i in (0, 1))
    return [
        ImageRecord(raw.step, raw.wall_time, bytes(img), width, height, image_format(img), i)
        for i, img in enumerate(flat[2:])
    ]


SPEC = Kind(KIND, ImageRecord, PLUGIN_NAME, decode)
