"""Figures: matplotlib figures rendered to RGB and logged as images, as torch's writer does.

matplotlib is optional (the ``media`` extra); without it ``encode`` raises one line naming
the extra. The figure is drawn with the Agg canvas, so no display or GUI backend is needed.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from tensorsight.errors import UsageError
from tensorsight.summary.kinds import image

__all__ = ["KIND", "SCHEMA_VERSION", "encode", "render"]

KIND = "images"
SCHEMA_VERSION = 0


def _agg() -> Any:
    from tensorsight._lazy import lazy_import

    return lazy_import("matplotlib.backends.backend_agg", extra="media", needed_by="add_figure")


def render(figure: Any, *, close: bool, tag: str) -> NDArray[np.uint8]:
    """The figure's pixels as a 3 x H x W uint8 array (alpha dropped)."""
    agg = _agg()
    if not hasattr(figure, "get_size_inches"):
        msg = (
            f"Figure {tag!r}: got {type(figure).__name__}. Expected a matplotlib Figure or a "
            "list of them (plt.figure(), plt.subplots()[0])."
        )
        raise UsageError(msg)
    canvas = agg.FigureCanvasAgg(figure)
    canvas.draw()
    rgba = np.asarray(canvas.buffer_rgba(), dtype=np.uint8)
    chw = np.ascontiguousarray(rgba[:, :, :3].transpose(2, 0, 1))
    if close:
        import matplotlib.pyplot as plt

        plt.close(figure)
    return chw


def encode(tag: str, figure: object, close: bool = True) -> Any:
    """A ``Summary.Value`` with the figure (or a list of figures as one grid) as a PNG.

    Raises:
        MissingDependencyError: matplotlib is not installed.
        UsageError: ``figure`` is not a matplotlib figure or is an empty list.
    """
    if isinstance(figure, list | tuple):
        if not figure:
            msg = f"Figure {tag!r}: got an empty list. Expected at least one figure."
            raise UsageError(msg)
        frames = [render(f, close=close, tag=tag) for f in figure]
        if len({f.shape for f in frames}) > 1:
            msg = (
                f"Figure {tag!r}: the figures have different sizes "
                f"{sorted({f.shape[1:] for f in frames})}. Expected one size for a list."
            )
            raise UsageError(msg)
        return image.encode(tag, np.stack(frames), "NCHW")
    return image.encode(tag, render(figure, close=close, tag=tag), "CHW")
