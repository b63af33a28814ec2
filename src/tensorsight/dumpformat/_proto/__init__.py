"""Protocol-buffer messages of the foreign dump formats the dump-format layer reads.

``tfdbg.proto`` is the spec of TensorFlow's debugger v2 event files (the fields read, with
TensorFlow's numbers); ``make proto`` compiles it into ``tfdbg.binpb`` (committed). The set
is loaded into a *private* descriptor pool: no generated code, no clash with TensorFlow's own
descriptors in the same process, any protobuf runtime >= 4.22. The loader is
:mod:`tensorsight._protopool`, shared with ``tensorsight.summary._proto``.

Example:
    >>> from tensorsight.dumpformat._proto import tfdbg
    >>> event = tfdbg.DebugEvent(step=2)
    >>> tfdbg.DebugEvent.FromString(event.SerializeToString()).step
    2
"""

from __future__ import annotations

from tensorsight._protopool import Messages

__all__ = ["Messages", "tfdbg"]

tfdbg = Messages("tfdbg.binpb", "tensorsight.tfdbg", __name__)
