"""The demo's data: noisy 16x16 shapes, and the picture of a batch with its predictions.

:func:`make_shapes` draws one of four shapes (:data:`CLASSES`) per image at a random position
and size, then adds Gaussian noise: hard enough that a small CNN needs a few hundred steps to
reach ~90 % accuracy, easy enough to learn on the CPU in seconds. :func:`prediction_grid`
lays a batch out as one RGB picture whose tiles say at a glance what the model got right.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

__all__ = ["CLASSES", "SIZE", "make_shapes", "prediction_grid"]

CLASSES = ("circle", "square", "triangle", "cross")
SIZE = 16  # image side in pixels

_SCALE = 4  # each input pixel drawn as 4x4 in the grid
_ICON = 13  # icon side in pixels
_BORDER = 3
_STRIP = _ICON + 4  # the label strip under each tile
_GAP = 6
_GREEN = np.array([46, 160, 67], dtype=np.uint8)
_RED = np.array([215, 58, 73], dtype=np.uint8)
_WHITE = np.array([235, 235, 235], dtype=np.uint8)
_STRIP_BG = np.array([40, 44, 52], dtype=np.uint8)
_PAGE_BG = np.array([255, 255, 255], dtype=np.uint8)


def _masks(dx: Any, dy: Any, r: Any) -> list[Any]:
    """Boolean masks of the four shapes, centred where ``dx = dy = 0``, half-size ``r``."""
    width = (r / 3).clamp(min=0.8) if hasattr(r, "clamp") else np.maximum(r / 3, 0.8)
    return [
        dx**2 + dy**2 <= r**2,
        (abs(dx) <= 0.85 * r) & (abs(dy) <= 0.85 * r),
        (dy <= r) & (dy >= -r) & (abs(dx) <= (dy + r) / 2),
        ((abs(dx) <= width) & (abs(dy) <= r)) | ((abs(dy) <= width) & (abs(dx) <= r)),
    ]


def make_shapes(torch: Any, n: int, *, seed: int, noise: float = 0.35) -> tuple[Any, Any]:
    """``n`` noisy shapes: float32 images ``(n, 1, 16, 16)`` and int64 labels ``(n,)``.

    Each image holds one shape of :data:`CLASSES` (value 1 on a 0 background), half-size
    2.5 to 5.5 pixels, placed so that it fits, plus ``noise`` x standard Gaussian noise.
    The same ``seed`` gives the same images on every machine.
    """
    g = torch.Generator().manual_seed(seed)
    labels = torch.randint(0, len(CLASSES), (n,), generator=g)
    r = 2.5 + 3.0 * torch.rand(n, generator=g)
    cx = r + 1 + (SIZE - 3 - 2 * r) * torch.rand(n, generator=g)
    cy = r + 1 + (SIZE - 3 - 2 * r) * torch.rand(n, generator=g)
    yy, xx = torch.meshgrid(torch.arange(float(SIZE)), torch.arange(float(SIZE)), indexing="ij")
    dx = xx - cx[:, None, None]
    dy = yy - cy[:, None, None]
    masks = torch.stack(_masks(dx, dy, r[:, None, None]), dim=1).float()
    images = masks[torch.arange(n), labels]
    images = images + noise * torch.randn(n, SIZE, SIZE, generator=g)
    return images.unsqueeze(1), labels


def _icons() -> NDArray[np.bool_]:
    """``(4, 11, 11)`` boolean icons of the classes, in :data:`CLASSES` order."""
    c = (_ICON - 1) / 2
    yy, xx = np.mgrid[0:_ICON, 0:_ICON].astype(np.float64)
    return np.stack(_masks(xx - c, yy - c, np.float64(c)))


def prediction_grid(
    images: NDArray[np.float32], labels: NDArray[np.int64], predicted: NDArray[np.int64]
) -> NDArray[np.uint8]:
    """One RGB ``(H, W, 3)`` uint8 picture of a batch, 6 tiles a row.

    Each tile is the input image (3x, grey) framed green when the prediction is right and red
    when it is wrong; the strip under it shows the true shape (white icon, left) and the
    predicted one (green or red icon, right).
    """
    n = len(images)
    cols = min(6, n)
    rows = -(-n // cols)
    tile_w = SIZE * _SCALE + 2 * _BORDER
    tile_h = tile_w + _STRIP
    out = np.empty((_GAP + rows * (tile_h + _GAP), _GAP + cols * (tile_w + _GAP), 3), np.uint8)
    out[:] = _PAGE_BG
    icons = _icons()
    grey = np.clip((np.asarray(images, np.float32).reshape(n, SIZE, SIZE) + 0.4) / 1.8, 0, 1)
    pixels = np.kron(grey, np.ones((_SCALE, _SCALE), np.float32))
    for i in range(n):
        top = _GAP + (i // cols) * (tile_h + _GAP)
        left = _GAP + (i % cols) * (tile_w + _GAP)
        right = int(labels[i]) == int(predicted[i])
        colour = _GREEN if right else _RED
        out[top : top + tile_w, left : left + tile_w] = colour
        inner = slice(top + _BORDER, top + _BORDER + SIZE * _SCALE)
        cols_in = slice(left + _BORDER, left + _BORDER + SIZE * _SCALE)
        out[inner, cols_in] = (pixels[i, :, :, None] * 255).astype(np.uint8)
        strip_top = top + tile_w
        out[strip_top : strip_top + _STRIP, left : left + tile_w] = _STRIP_BG
        icon_top = strip_top + 2
        for icon, where, paint in (
            (icons[int(labels[i])], left + tile_w // 4 - _ICON // 2, _WHITE),
            (icons[int(predicted[i])], left + 3 * tile_w // 4 - _ICON // 2, colour),
        ):
            region = out[icon_top : icon_top + _ICON, where : where + _ICON]
            region[icon] = paint
    return out
