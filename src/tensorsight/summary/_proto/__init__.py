"""Protocol-buffer message classes for the file formats tensorsight reads and writes.

The ``.proto`` files here are the spec; ``make proto`` compiles each into a descriptor set
(``*.binpb``, committed). At run time the descriptor sets are loaded into a *private*
descriptor pool, so neither generated-code version checks nor name clashes with
tensorboard's or tensorboardX's own descriptors can break a user's process, and any
protobuf runtime >= 4.22 works.

Example:
    >>> from tensorsight.summary._proto import tb
    >>> event = tb.Event(step=3, wall_time=1.5)
    >>> tb.Event.FromString(event.SerializeToString()).step
    3
"""

from __future__ import annotations

from tensorsight._protopool import Messages as _Messages

__all__ = ["Messages", "tb"]


class Messages(_Messages):
    """Attribute access to the message classes of one proto package of this folder.

    ``Messages("tb.binpb", "tensorsight.tb").Event`` is the ``Event`` class; nested
    messages are reached as usual (``.Summary.Value``). The loader and its private pool are
    :mod:`tensorsight._protopool`'s.
    """

    def __init__(self, filename: str, package: str) -> None:
        super().__init__(filename, package, source=__name__)


tb = Messages("tb.binpb", "tensorsight.tb")
