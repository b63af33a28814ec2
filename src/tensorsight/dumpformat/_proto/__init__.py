"""Protocol-buffer messages of the foreign dump formats the dump-format layer reads.

``tfdbg.proto`` is the spec of TensorFlow's debugger v2 event files (the fields read, with
TensorFlow's numbers); ``make proto`` compiles it into ``tfdbg.binpb`` (committed). As in
``tensorsight.summary._proto`` (a layer above, which this one may not import), the set is
loaded into a *private* descriptor pool: no generated code, no clash with TensorFlow's own
descriptors in the same process, any protobuf runtime >= 4.22.

Example:
    >>> from tensorsight.dumpformat._proto import tfdbg
    >>> event = tfdbg.DebugEvent(step=2)
    >>> tfdbg.DebugEvent.FromString(event.SerializeToString()).step
    2
"""

from __future__ import annotations

from importlib import resources
from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

__all__ = ["Messages", "tfdbg"]

_POOL = descriptor_pool.DescriptorPool()
_LOADED: set[str] = set()


def _load(filename: str) -> None:
    if filename in _LOADED:
        return
    data = resources.files(__package__).joinpath(filename).read_bytes()
    for file_proto in descriptor_pb2.FileDescriptorSet.FromString(data).file:
        _POOL.Add(file_proto)
    _LOADED.add(filename)


class Messages:
    """Attribute access to one package's message classes (``tfdbg.DebugEvent``); an enum
    comes back as its ``name -> number`` mapping."""

    def __init__(self, filename: str, package: str) -> None:
        self._filename = filename
        self._package = package
        self._cache: dict[str, Any] = {}

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        cls = self._cache.get(name)
        if cls is None:
            _load(self._filename)
            full = f"{self._package}.{name}"
            try:
                descriptor = _POOL.FindMessageTypeByName(full)
            except KeyError:
                enum = _POOL.FindEnumTypeByName(full)
                cls = {v.name: v.number for v in enum.values}
            else:
                cls = message_factory.GetMessageClass(descriptor)
            self._cache[name] = cls
        return cls


tfdbg = Messages("tfdbg.binpb", "tensorsight.tfdbg")
