"""Embeddings for TensorBoard's projector: file contents only (the writer writes the files).

``add_embedding`` stores, under ``<log_dir>/<step as 5 digits>/<escaped tag>/``,
``tensors.tsv`` (one row per point), optionally ``metadata.tsv`` (labels) and ``sprite.png``
(thumbnails in a square grid), and rewrites ``<log_dir>/projector_config.pbtxt`` listing every
embedding of the writer, as torch's writer does.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from tensorsight.errors import UsageError
from tensorsight.summary.kinds._convert import to_numpy
from tensorsight.summary.kinds._kind import Kind
from tensorsight.summary.kinds.image import encode_png, make_grid

__all__ = [
    "KIND",
    "SCHEMA_VERSION",
    "SPEC",
    "EmbeddingInfo",
    "EmbeddingRecord",
    "config_pbtxt",
    "metadata_tsv",
    "sprite_png",
    "subdir",
    "tensors_tsv",
]

KIND = "embeddings"
SCHEMA_VERSION = 0


@dataclass(frozen=True)
class EmbeddingInfo:
    """One ``embeddings`` entry of ``projector_config.pbtxt`` (paths relative to the log dir)."""

    tensor_name: str
    tensor_path: str
    metadata_path: str | None = None
    sprite_path: str | None = None
    sprite_dim: tuple[int, int] | None = None  # (width, height) of one thumbnail


def subdir(global_step: int, tag: str) -> str:
    """``"00003/my%2ftag"``: the step padded to 5 digits, then the tag with % / \\ escaped."""
    escaped = tag.replace("%", "%25").replace("/", "%2f").replace("\\", "%5c")
    return f"{str(global_step).zfill(5)}/{escaped}"


def tensors_tsv(mat: object) -> bytes:
    """One line per row of the 2-D ``mat``, values separated by tabs."""
    array = to_numpy(mat, what="Embedding mat")
    if array.ndim != 2:
        msg = f"Embedding mat: got shape {tuple(array.shape)}. Expected (points, features)."
        raise UsageError(msg)
    return "".join("\t".join(str(v) for v in row) + "\n" for row in array.tolist()).encode()


def metadata_tsv(
    metadata: Sequence[object], points: int, metadata_header: Sequence[object] | None = None
) -> bytes:
    """Labels, one line per point; with ``metadata_header``, a header row and tab-separated rows."""
    if len(metadata) != points:
        msg = f"Embedding metadata: {len(metadata)} labels for {points} points. Expected equal."
        raise UsageError(msg)
    if not metadata_header:
        lines = [str(x) for x in metadata]
    else:
        rows = [list(metadata_header), *(list(r) for r in metadata)]  # type: ignore[call-overload]
        if any(len(r) != len(rows[0]) for r in rows):
            msg = (
                f"Embedding metadata: rows must have {len(rows[0])} columns like "
                "metadata_header. Expected one value per header."
            )
            raise UsageError(msg)
        lines = ["\t".join(str(v) for v in r) for r in rows]
    return ("\n".join(lines) + "\n").encode()


def sprite_png(label_img: object, points: int) -> tuple[bytes, tuple[int, int]]:
    """The thumbnails (N x C x H x W in [0, 1]) tiled into a square PNG; also (W, H) of one."""
    images = to_numpy(label_img, what="Embedding label_img")
    if images.ndim != 4 or images.shape[0] != points:
        msg = f"Embedding label_img: got shape {tuple(images.shape)}. Expected ({points}, C, H, W)."
        raise UsageError(msg)
    columns = math.ceil(points**0.5)
    grid = make_grid(images, tag="label_img", columns=columns).transpose(1, 2, 0)
    side = grid.shape[1]
    square = np.zeros((side, side, 3))
    square[: grid.shape[0]] = grid
    pixels = (square * 255).clip(0, 255).astype(np.uint8)
    return encode_png(pixels), (int(images.shape[3]), int(images.shape[2]))


def _quote(text: str) -> str:
    """A protobuf text-format string literal, escaped as protobuf's ``text_format`` does."""
    out = []
    for char in text:
        code = ord(char)
        if char in "\"'\\":
            out.append("\\" + char)
        elif char in _NAMED_ESCAPES:
            out.append(_NAMED_ESCAPES[char])
        elif code < 0x20 or code == 0x7F:
            out.append(f"\\{code:03o}")
        else:  # printable ASCII and any non-ASCII character stay as they are
            out.append(char)
    return '"' + "".join(out) + '"'


_NAMED_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def config_pbtxt(embeddings: Sequence[EmbeddingInfo]) -> bytes:
    """``projector_config.pbtxt`` listing ``embeddings`` (a ProjectorConfig in text format)."""
    lines = []
    for info in embeddings:
        lines.append("embeddings {")
        lines.append(f"  tensor_name: {_quote(info.tensor_name)}")
        if info.metadata_path is not None:
            lines.append(f"  metadata_path: {_quote(info.metadata_path)}")
        if info.sprite_path is not None and info.sprite_dim is not None:
            lines.append("  sprite {")
            lines.append(f"    image_path: {_quote(info.sprite_path)}")
            lines.extend(f"    single_image_dim: {d}" for d in info.sprite_dim)
            lines.append("  }")
        lines.append(f"  tensor_path: {_quote(info.tensor_path)}")
        lines.append("}")
    return ("\n".join(lines) + "\n").encode() if lines else b""


# ------------------------------------------------------------ read side
@dataclass(frozen=True)
class EmbeddingRecord:
    """One embedding of the projector (``add_embedding``), listed from ``projector_config.pbtxt``.

    Only paths and names: the matrix, labels and sprite are read on demand with
    :func:`tensorsight.summary.projector.load_embedding` (a matrix can take hundreds of MB).
    Paths are absolute; ``metadata_path``/``sprite_path`` are ``None`` when the entry has none.
    ``wall_time`` is 0.0: the files carry no training time. ``sprite_dim`` is the (width,
    height) of one thumbnail.
    """

    step: int
    wall_time: float
    tensor_name: str
    tensor_path: str
    metadata_path: str | None = None
    sprite_path: str | None = None
    sprite_dim: tuple[int, int] | None = None


# read from projector_config.pbtxt (summary/projector.py), not from event values
SPEC = Kind(KIND, EmbeddingRecord)
