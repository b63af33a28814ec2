"""What a data kind declares: :class:`Kind`, one per kind module, listed in ``KINDS``.

A kind module (``summary/kinds/<kind>.py``) defines its name (``KIND``), the plugin name its
values carry in event files (``PLUGIN_NAME``), its frozen record type, pure ``encode*``
functions for the writer and a ``decode`` function for the reader, and ends with
``SPEC = Kind(...)``. ``tensorsight.summary.kinds.KINDS`` lists the specs; the event decoder
(``summary/_tbdecode.py``) builds its plugin-name table from them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple

__all__ = ["Kind", "Raw"]


class Raw(NamedTuple):
    """One ``Summary.Value`` as a decoder receives it.

    ``content`` is the plugin's metadata content (bytes, possibly empty; the plugin name is
    sent with a tag's first value and remembered, the content may be empty afterwards);
    ``tensor`` is the value's ``TensorProto`` (``None`` for decoders that read the content
    only).
    """

    step: int
    wall_time: float
    tag: str
    content: bytes
    tensor: Any


@dataclass(frozen=True)
class Kind:
    """One data kind, as its module declares it.

    Attributes:
        name: The kind name readers, providers and the board use (``"histograms"``).
        record: The frozen record type ``Logdir.records(run, name, tag)`` returns.
        plugin: The TensorBoard plugin name of its values in event files, ``None`` for a kind
            read from other files (graphs from ``graph_def``, embeddings from the projector
            config).
        decode: ``Raw -> records`` for the values of ``plugin``; ``None`` when the kind has
            no plugin values. May raise ``ValueError`` (the reader turns it into a problem
            sentence).
        reads: ``"tensor"`` when ``decode`` reads the value's tensor, ``"metadata"`` when the
            plugin content alone is the data (hparams).
    """

    name: str
    record: type
    plugin: str | None = None
    decode: Callable[[Raw], list[Any]] | None = None
    reads: Literal["tensor", "metadata"] = "tensor"
