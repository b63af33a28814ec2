"""Embedding projector result types (``read_records(run, "embeddings", tag)`` / ``load_embedding``).

The listing (:class:`EmbeddingEntry`) carries no paths: views never see files. The loaded
matrix (:class:`EmbeddingData`) is read on demand, since one can take hundreds of MB.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

__all__ = ["EmbeddingData", "EmbeddingEntry"]


@dataclass(frozen=True)
class EmbeddingEntry:
    """One embedding of a tag at one step, as listed (``add_embedding`` writes one per call).

    ``sprite_dim`` is the (width, height) of one thumbnail, ``None`` without a sprite.
    """

    step: int
    tensor_name: str
    has_metadata: bool
    sprite_dim: tuple[int, int] | None

    SCHEMA_VERSION = 1


@dataclass(frozen=True, eq=False)
class EmbeddingData:
    """One embedding's points and labels.

    Attributes:
        matrix: ``(points, dims)`` float32, read-only.
        columns: Metadata column names (one column without a header is ``"label"``); empty
            without metadata.
        rows: One tuple of strings per point (``len(columns)`` each); empty without metadata.
        sprite_dim: (width, height) of one thumbnail in the sprite, ``None`` without one.
        problems: Sentences about what could not be read (labels left out, for example).
    """

    step: int
    tensor_name: str
    matrix: NDArray[np.float32]
    columns: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    sprite_dim: tuple[int, int] | None
    problems: tuple[str, ...] = ()

    SCHEMA_VERSION = 1

    @property
    def points(self) -> int:
        """Number of points (rows of the matrix)."""
        return int(self.matrix.shape[0])
