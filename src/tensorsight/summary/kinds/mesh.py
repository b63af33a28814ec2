"""Meshes and point clouds: TensorBoard's ``mesh`` plugin tensors, as torch's writer writes.

One ``add_mesh`` call writes one ``Summary`` with up to three float tensors of shape
``(B, N, 3)``, tagged ``<tag>_VERTEX``, ``<tag>_FACE`` and ``<tag>_COLOR``; each carries the
plugin's ``MeshPluginData`` (name, content type, components bitmask, shape, three.js JSON
config) as its metadata content. The message is encoded and decoded here in protobuf wire
format (six scalar fields), so neither tensorboard nor its descriptors are needed.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from tensorsight.errors import UsageError
from tensorsight.summary._proto import tb
from tensorsight.summary.kinds._convert import plugin_metadata, to_numpy
from tensorsight.summary.kinds._kind import Kind, Raw
from tensorsight.summary.kinds.tensor_decode import decode_tensor

__all__ = [
    "CONTENT_TYPES",
    "KIND",
    "PLUGIN_NAME",
    "SCHEMA_VERSION",
    "SPEC",
    "MeshMeta",
    "MeshRecord",
    "decode",
    "decode_meta",
    "encode",
    "encode_meta",
    "mesh_name",
    "part_of",
]

KIND = "mesh"  # the kind name PRODUCT.md fixes
PLUGIN_NAME = "mesh"
SCHEMA_VERSION = 0  # MeshPluginData.version, as TensorBoard writes it
CONTENT_TYPES = {"VERTEX": 1, "FACE": 2, "COLOR": 3}
_NAMES = {v: k for k, v in CONTENT_TYPES.items()}


@dataclass(frozen=True)
class MeshMeta:
    """The fields of ``MeshPluginData``; ``content_type`` is VERTEX, FACE or COLOR."""

    name: str
    content_type: str
    components: int
    shape: tuple[int, ...]
    json_config: str = ""
    version: int = 0


def _varint(n: int) -> bytes:
    out = bytearray()
    n &= (1 << 64) - 1  # negative int32 values go out as 10-byte varints, as protobuf does
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def encode_meta(meta: MeshMeta) -> bytes:
    """``MeshPluginData`` bytes (proto3: fields at their default are left out)."""
    parts = []
    if meta.version:
        parts.append(b"\x08" + _varint(meta.version))
    if meta.name:
        raw = meta.name.encode()
        parts.append(b"\x12" + _varint(len(raw)) + raw)
    parts.append(b"\x18" + _varint(CONTENT_TYPES[meta.content_type]))
    if meta.json_config:
        raw = meta.json_config.encode()
        parts.append(b"\x2a" + _varint(len(raw)) + raw)
    if meta.shape:
        packed = b"".join(_varint(d) for d in meta.shape)
        parts.append(b"\x32" + _varint(len(packed)) + packed)
    if meta.components:
        parts.append(b"\x38" + _varint(meta.components))
    return b"".join(parts)


def _read_varint(data: bytes, pos: int) -> tuple[int, int]:
    n = shift = 0
    while True:
        if pos >= len(data) or shift > 63:
            msg = "truncated varint in MeshPluginData"
            raise ValueError(msg)
        byte = data[pos]
        pos += 1
        n |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return n, pos


def decode_meta(data: bytes) -> MeshMeta:
    """Parse ``MeshPluginData`` bytes; unknown fields are skipped.

    Raises:
        ValueError: The bytes are not a valid message or name no known content type.
    """
    fields: dict[int, Any] = {}
    shape: list[int] = []
    pos = 0
    while pos < len(data):
        key, pos = _read_varint(data, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _read_varint(data, pos)
            if number == 6:
                shape.append(value)
            else:
                fields[number] = value
        elif wire == 2:
            size, pos = _read_varint(data, pos)
            chunk = data[pos : pos + size]
            if len(chunk) != size:
                msg = "truncated field in MeshPluginData"
                raise ValueError(msg)
            pos += size
            if number == 6:
                at = 0
                while at < len(chunk):
                    d, at = _read_varint(chunk, at)
                    shape.append(d)
            else:
                fields[number] = chunk
        elif wire == 5:
            pos += 4
        elif wire == 1:
            pos += 8
        else:
            msg = f"wire type {wire} in MeshPluginData"
            raise ValueError(msg)
    ctype = _NAMES.get(int(fields.get(3, 0)))
    if ctype is None:
        msg = f"MeshPluginData content type {fields.get(3, 0)} is not VERTEX, FACE or COLOR"
        raise ValueError(msg)
    return MeshMeta(
        name=bytes(fields.get(2, b"")).decode(errors="replace"),
        content_type=ctype,
        components=int(fields.get(7, 0)),
        shape=tuple(shape),
        json_config=bytes(fields.get(5, b"")).decode(errors="replace"),
        version=int(fields.get(1, 0)),
    )


def _component(tag: str, part: str, value: object) -> np.ndarray:
    array = to_numpy(value, what=f"Mesh {tag!r} {part.lower()}")
    if array.ndim != 3 or array.shape[2] != 3:
        msg = (
            f"Mesh {tag!r}: {part.lower()} have shape {tuple(array.shape)}. Expected (B, N, 3); "
            "add a batch dimension with .unsqueeze(0) or [None]."
        )
        raise UsageError(msg)
    return np.ascontiguousarray(array, dtype="<f4")


def encode(
    tag: str,
    vertices: object,
    colors: object = None,
    faces: object = None,
    config_dict: Mapping[str, Any] | None = None,
) -> list[Any]:
    """The ``Summary.Value`` list of one mesh: vertices, then faces, then colors if given.

    Raises:
        UsageError: A part is not ``(B, N, 3)``, or ``config_dict`` is not JSON.
    """
    parts = [("VERTEX", vertices), ("FACE", faces), ("COLOR", colors)]
    arrays = [(p, _component(tag, p, v)) for p, v in parts if v is not None]
    components = 0
    for p, _ in arrays:
        components |= 1 << CONTENT_TYPES[p]
    try:
        config = "{}" if config_dict is None else json.dumps(config_dict, sort_keys=True)
    except (TypeError, ValueError) as exc:
        msg = f"Mesh {tag!r}: config_dict is not JSON-serialisable ({exc})."
        raise UsageError(msg) from exc
    values = []
    for part, array in arrays:
        meta = MeshMeta(tag, part, components, tuple(int(d) for d in array.shape), config)
        proto = tb.TensorProto(
            dtype=tb.DataType["DT_FLOAT"],
            tensor_shape=tb.TensorShapeProto(
                dim=[tb.TensorShapeProto.Dim(size=int(n)) for n in array.shape]
            ),
            tensor_content=array.tobytes(),
        )
        values.append(
            tb.Summary.Value(
                tag=f"{tag}_{part}",
                tensor=proto,
                metadata=plugin_metadata(PLUGIN_NAME, encode_meta(meta)),
            )
        )
    return values


@dataclass(frozen=True)
class MeshRecord:
    """One part of one mesh at one step: what ``Logdir.records(run, "mesh", tag)`` returns.

    Attributes:
        step: The writer's global step.
        wall_time: Seconds since the epoch.
        name: The mesh's tag as the user gave it (``"cloud"`` for ``cloud_VERTEX``).
        content_type: ``"VERTEX"``, ``"FACE"`` or ``"COLOR"``.
        data: ``(B, N, 3)`` float32, read-only: vertex coordinates, vertex indices of each
            triangle (whole numbers stored as floats, as torch writes them) or RGB colours
            0-255 per vertex.
        components: Bitmask of the parts written with it (``1 << CONTENT_TYPES[part]``).
        json_config: The writer's ``config_dict`` as JSON (three.js camera, material, lights).
    """

    step: int
    wall_time: float
    name: str
    content_type: str
    data: NDArray[np.float32]
    components: int = 0
    json_config: str = ""

    SCHEMA_VERSION = 1  # of the record (the payload's is the module's SCHEMA_VERSION)


def part_of(tag: str) -> tuple[str, str] | None:
    """``(mesh name, part)`` of a part's tag, else ``None``.

    torch's writer names the parts ``<name>_VERTEX``, ``<name>_FACE``, ``<name>_COLOR``;
    tensorboardX's ``<name>_1``, ``<name>_2``, ``<name>_3`` (the content type's number).
    """
    base, _, suffix = tag.rpartition("_")
    if not base:
        return None
    if suffix in CONTENT_TYPES:
        return base, suffix
    if suffix.isdigit() and int(suffix) in _NAMES:
        return base, _NAMES[int(suffix)]
    return None


def mesh_name(tag: str) -> str | None:
    """The mesh a part's tag belongs to (``"cloud_VERTEX"``, ``"cloud_1"`` -> ``"cloud"``)."""
    found = part_of(tag)
    return None if found is None else found[0]


def decode(raw: Raw) -> list[MeshRecord]:
    """A ``mesh`` plugin tensor: one part (its metadata says which) of shape ``(B, N, 3)``.

    Raises:
        ValueError: The metadata is not ``MeshPluginData`` or the tensor is not 3 columns.
    """
    meta = decode_meta(raw.content) if raw.content else None
    _, shape, arr = decode_tensor(raw.tensor)
    data = np.asarray(arr, dtype=np.float32)
    if data.size % 3 or (len(shape) > 1 and shape[-1] != 3):  # (B, N, 6) is not 2 batches
        msg = f"mesh tensor {raw.tag!r} of shape {tuple(shape)}: expected (B, N, 3)"
        raise ValueError(msg)
    data = data.reshape(-1, 3) if len(shape) < 3 else data.reshape(-1, shape[-2], 3)
    if data.ndim == 2:
        data = data[None]
    data.flags.writeable = False
    found = part_of(raw.tag)
    name = meta.name if meta and meta.name else (found[0] if found else raw.tag)
    part = meta.content_type if meta else (found[1] if found else "")
    if part not in CONTENT_TYPES:
        msg = f"mesh tensor {raw.tag!r}: no content type in its metadata or tag"
        raise ValueError(msg)
    components = meta.components if meta else 0
    config = meta.json_config if meta and meta.json_config != "null" else ""
    return [MeshRecord(raw.step, raw.wall_time, name, part, data, components, config)]


SPEC = Kind(KIND, MeshRecord, PLUGIN_NAME, decode)
