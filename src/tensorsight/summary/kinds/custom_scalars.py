"""Custom scalar layouts: TensorBoard's ``custom_scalars`` plugin (charts combining tags)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tensorsight.errors import UsageError
from tensorsight.summary._proto import tb
from tensorsight.summary.kinds._convert import plugin_metadata

__all__ = ["CONFIG_TAG", "KIND", "PLUGIN_NAME", "SCHEMA_VERSION", "encode"]

KIND = "custom_scalars"
PLUGIN_NAME = "custom_scalars"
SCHEMA_VERSION = 0
CONFIG_TAG = "custom_scalars__config__"


def _chart(category: str, title: str, spec: object) -> Any:
    where = f"Custom scalars chart {category!r}/{title!r}"
    if not isinstance(spec, Sequence) or isinstance(spec, str) or len(spec) != 2:
        msg = f"{where}: got {spec!r:.80}. Expected ['Multiline' or 'Margin', [tags...]]."
        raise UsageError(msg)
    kind, tags = spec
    if isinstance(tags, str) or not all(isinstance(t, str) for t in tags):
        msg = f"{where}: tags are {tags!r:.80}. Expected a list of tag strings."
        raise UsageError(msg)
    if kind == "Margin":
        if len(tags) != 3:
            msg = f"{where}: a Margin chart got {len(tags)} tags. Expected 3 (value, lower, upper)."
            raise UsageError(msg)
        series = tb.MarginChartContent.Series(value=tags[0], lower=tags[1], upper=tags[2])
        return tb.Chart(title=title, margin=tb.MarginChartContent(series=[series]))
    if kind != "Multiline":
        msg = f"{where}: chart type {kind!r} is unknown. Expected 'Multiline' or 'Margin'."
        raise UsageError(msg)
    return tb.Chart(title=title, multiline=tb.MultilineChartContent(tag=list(tags)))


def encode(layout: Mapping[str, Mapping[str, object]] | object) -> Any:
    """A ``Summary.Value`` holding a layout ``{category: {chart title: [type, tags]}}``.

    ``type`` is ``"Multiline"`` (any number of tags on one chart) or ``"Margin"`` (three tags:
    value, lower and upper bound).

    Raises:
        UsageError: The layout does not have that shape.
    """
    if not isinstance(layout, Mapping):
        msg = f"Custom scalars layout: got {type(layout).__name__}. Expected a dict of dicts."
        raise UsageError(msg)
    categories = []
    for category, charts in layout.items():
        if not isinstance(charts, Mapping):
            msg = f"Custom scalars category {category!r}: expected a dict of charts."
            raise UsageError(msg)
        chart_list = [_chart(str(category), str(t), spec) for t, spec in charts.items()]
        categories.append(tb.Category(title=str(category), chart=chart_list))
    tensor = tb.TensorProto(
        dtype=tb.DataType["DT_STRING"],
        string_val=[tb.Layout(category=categories).SerializeToString()],
        tensor_shape=tb.TensorShapeProto(),
    )
    return tb.Summary.Value(tag=CONFIG_TAG, tensor=tensor, metadata=plugin_metadata(PLUGIN_NAME))
