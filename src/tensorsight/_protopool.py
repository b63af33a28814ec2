"""The private protobuf descriptor pool that tensorsight's message classes come from.

Descriptor sets (``*.binpb``, compiled by ``make proto`` from the ``.proto`` specs of
``tensorsight.summary._proto`` and ``tensorsight.dumpformat._proto``) are loaded into one
*private* pool, so neither generated-code version checks nor name clashes with
tensorboard's, tensorboardX's or TensorFlow's own descriptors can break a user's process,
and any protobuf runtime >= 4.22 works.
"""

from __future__ import annotations

from importlib import resources
from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.internal import enum_type_wrapper

__all__ = ["Messages"]

_POOL = descriptor_pool.DescriptorPool()
_LOADED: set[str] = set()  # names of the .proto files in the pool


def _load(source: str, filename: str) -> None:
    """Add the descriptor set ``filename`` of the package ``source`` to the private pool."""
    data = resources.files(source).joinpath(filename).read_bytes()
    for file_proto in descriptor_pb2.FileDescriptorSet.FromString(data).file:
        if file_proto.name not in _LOADED:
            _POOL.Add(file_proto)
            _LOADED.add(file_proto.name)


class Messages:
    """Attribute access to one proto package's message classes (``tfdbg.DebugEvent``);
    nested messages are reached as usual (``.Summary.Value``) and an enum comes back as its
    ``name -> number`` mapping. ``source`` is the package holding ``filename``.
    """

    def __init__(self, filename: str, package: str, source: str) -> None:
        self._filename = filename
        self._package = package
        self._source = source
        self._cache: dict[str, Any] = {}

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        cls = self._cache.get(name)
        if cls is None:
            _load(self._source, self._filename)
            full = f"{self._package}.{name}"
            try:
                descriptor = _POOL.FindMessageTypeByName(full)
            except KeyError:
                enum = _POOL.FindEnumTypeByName(full)
                cls = {v.name: v.number for v in enum.values}
            else:
                cls = _message_class(descriptor)
            self._cache[name] = cls
        return cls


def _message_class(descriptor: Any) -> Any:
    """The class of ``descriptor``, its nested messages and enums reachable as attributes.

    protobuf's upb runtime attaches them itself; the pure-Python runtime (chosen with
    ``PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION=python``, which importing MindSpore sets) does
    so only for generated code, so without this ``tb.Summary.Value`` would not exist there.
    """
    cls = message_factory.GetMessageClass(descriptor)
    for nested in descriptor.nested_types:
        if not hasattr(cls, nested.name):
            setattr(cls, nested.name, _message_class(nested))
    for enum in descriptor.enum_types:
        if not hasattr(cls, enum.name):
            setattr(cls, enum.name, enum_type_wrapper.EnumTypeWrapper(enum))
        for value in enum.values:
            if not hasattr(cls, value.name):
                setattr(cls, value.name, value.number)
    return cls
