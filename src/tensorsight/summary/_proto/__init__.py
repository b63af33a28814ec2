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

from importlib import resources
from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.internal import enum_type_wrapper

__all__ = ["Messages", "tb"]

_POOL = descriptor_pool.DescriptorPool()
_LOADED: set[str] = set()


def _load_descriptor_set(filename: str) -> None:
    data = resources.files(__package__).joinpath(filename).read_bytes()
    fds = descriptor_pb2.FileDescriptorSet.FromString(data)
    for file_proto in fds.file:
        if file_proto.name not in _LOADED:
            _POOL.Add(file_proto)
            _LOADED.add(file_proto.name)


class Messages:
    """Attribute access to the message classes of one proto package.

    ``Messages("tb.binpb", "tensorsight.tb").Event`` is the ``Event`` class; nested
    messages are reached as usual (``.Summary.Value``).
    """

    def __init__(self, filename: str, package: str) -> None:
        self._filename = filename
        self._package = package
        self._cache: dict[str, Any] = {}

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        cls = self._cache.get(name)
        if cls is None:
            _load_descriptor_set(self._filename)
            full = f"{self._package}.{name}"
            try:
                descriptor = _POOL.FindMessageTypeByName(full)
            except KeyError:
                enum = _POOL.FindEnumTypeByName(full)  # enums: name -> number mapping
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


tb = Messages("tb.binpb", "tensorsight.tb")
