"""Text: TensorBoard's ``text`` plugin, a DT_STRING tensor of shape [1]."""

from __future__ import annotations

from typing import Any

from tensorsight.errors import UsageError
from tensorsight.summary._proto import tb
from tensorsight.summary.kinds._convert import plugin_metadata

__all__ = ["KIND", "PLUGIN_NAME", "SCHEMA_VERSION", "TAG_SUFFIX", "encode"]

KIND = "text"
PLUGIN_NAME = "text"
SCHEMA_VERSION = 0
TAG_SUFFIX = "/text_summary"  # torch's writer appends it; TensorBoard shows the full tag

_CONTENT = tb.TextPluginData(version=SCHEMA_VERSION).SerializeToString()


def encode(tag: str, text_string: object) -> Any:
    """A ``Summary.Value`` holding ``text_string`` (Markdown), under ``<tag>/text_summary``."""
    if not isinstance(text_string, str):
        msg = f"Text {tag!r}: got {type(text_string).__name__}. Expected a str."
        raise UsageError(msg)
    tensor = tb.TensorProto(
        dtype=tb.DataType["DT_STRING"],
        string_val=[text_string.encode("utf-8")],
        tensor_shape=tb.TensorShapeProto(dim=[tb.TensorShapeProto.Dim(size=1)]),
    )
    return tb.Summary.Value(
        tag=tag + TAG_SUFFIX, tensor=tensor, metadata=plugin_metadata(PLUGIN_NAME, _CONTENT)
    )
