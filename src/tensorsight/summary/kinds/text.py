"""Text: TensorBoard's ``text`` plugin, a DT_STRING tensor of shape [1]."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tensorsight.errors import UsageError
from tensorsight.summary._proto import tb
from tensorsight.summary.kinds._convert import plugin_metadata
from tensorsight.summary.kinds._kind import Kind, Raw
from tensorsight.summary.kinds.tensor_decode import decode_tensor

__all__ = [
    "KIND",
    "PLUGIN_NAME",
    "SCHEMA_VERSION",
    "SPEC",
    "TAG_SUFFIX",
    "TextRecord",
    "decode",
    "encode",
]

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


# ------------------------------------------------------------ read side
@dataclass(frozen=True, eq=False)
class TextRecord:
    """Text logged at one step: ``values`` holds every string of the tensor, ``shape`` its shape.

    ``text`` is the single string of a scalar text summary (the elements joined by newlines
    otherwise).
    """

    step: int
    wall_time: float
    values: tuple[str, ...]
    shape: tuple[int, ...] = ()

    @property
    def text(self) -> str:
        return "\n".join(self.values)


def decode(raw: Raw) -> list[TextRecord]:
    """A ``text`` plugin tensor: every string element, decoded as UTF-8 (errors replaced)."""
    _, shape, arr = decode_tensor(raw.tensor)
    values = tuple(s.decode("utf-8", errors="replace") for s in arr.reshape(-1))
    return [TextRecord(raw.step, raw.wall_time, values, shape)]


SPEC = Kind(KIND, TextRecord, PLUGIN_NAME, decode)
