"""Decode a custom-scalars ``Layout`` (the ``custom_scalars__config__`` tensor) into plain data.

The read side keeps the layout as the string tensor it was written as (any writer: torch,
tensorboardX, TensorBoard, ours); the board's data layer calls :func:`decode_layout` on its
bytes.
"""

from __future__ import annotations

__all__ = ["CONFIG_TAG", "decode_layout"]

CONFIG_TAG = "custom_scalars__config__"

#: One category: ``(title, closed, charts)``; a chart is ``(title, "multiline", tag regexes)``
#: or ``(title, "margin", ((value, lower, upper), ...))``.
Category = tuple[str, bool, tuple[tuple[str, str, tuple[object, ...]], ...]]


def decode_layout(payload: bytes) -> tuple[Category, ...]:
    """The categories of a serialized ``Layout`` message, in file order.

    Raises:
        ValueError: ``payload`` is not a ``Layout`` message.
    """
    from tensorsight.summary._proto import tb  # protobuf only when a layout is read

    try:
        layout = tb.Layout.FromString(payload)
    except Exception as exc:  # protobuf's DecodeError: keep our own type at the seam
        msg = f"custom scalars layout: not a Layout message ({exc})"
        raise ValueError(msg) from None
    out: list[Category] = []
    for cat in layout.category:
        charts: list[tuple[str, str, tuple[object, ...]]] = []
        for chart in cat.chart:
            which = chart.WhichOneof("content")
            if which == "margin":
                series = tuple((s.value, s.lower, s.upper) for s in chart.margin.series)
                charts.append((chart.title, "margin", series))
            elif which == "multiline":
                charts.append((chart.title, "multiline", tuple(chart.multiline.tag)))
        out.append((cat.title, bool(cat.closed), tuple(charts)))
    return tuple(out)
