"""Read TensorFlow debugger v2 dumps as they are, without TensorFlow installed.

``tf.debugging.experimental.enable_dump_debug_info(DIR, tensor_debug_mode="FULL_TENSOR",
circular_buffer_size=-1)`` (or :func:`tensorsight.tensorflow.dump`) writes into ``DIR``::

    tfdbg_events.<time>.<host>.metadata                DebugMetadata (TF version, run id)
    tfdbg_events.<time>.<host>.graphs                  DebuggedGraph, GraphOpCreation
    tfdbg_events.<time>.<host>.execution               Execution (eager ops, function calls)
    tfdbg_events.<time>.<host>.graph_execution_traces  GraphExecutionTrace (graph op outputs)
    tfdbg_events.<time>.<host>.source_files, .stack_frames   (not read)

Each file is TFRecord-framed (``uint64`` length, masked CRC-32C of it, the payload, its
masked CRC-32C); every payload is one ``DebugEvent`` protobuf (``_proto/tfdbg.proto``: the
fields read, TensorFlow's numbers), decoded in a private descriptor pool; tensor values are
``TensorProto``\\ s.

Read into the dump model (see :mod:`~tensorsight.dumpformat.schema`), one rank and one step
(the debugger was on for one step):

- one op per executed graph op (the consecutive traces of one op name in one graph, its
  output slots ``output.<slot>``) and per eager op (an ``Execution`` without a graph, its
  ``tensor_protos`` the outputs); a function's own ``Execution`` is left out (its graph's
  ops are the ops), and so is a graph op without traced outputs (``AssignSubVariableOp``);
  graph ops and eager ops in the order of their events' wall times;
- ``op`` is the graph op's full name (``MLP_1/fc1_1/MatMul``), an eager op's type; the type
  is in ``args`` (``{"type": "MatMul"}``);
- inputs: the graph op's ``input_names`` (``producer:slot``) whose producer's output was
  traced, and an eager op's ``input_tensor_ids`` made by an earlier eager op, as
  ``input.<k>`` rows holding the producer's tensor (the same data reference and
  statistics); a function's arguments (``Placeholder``) are never traced;
- ``direction`` is ``backward`` under ``gradient_tape/`` (``tf.GradientTape``'s scope);
  ``module_path`` is the name scope with Keras's uniquifying suffix dropped from each part
  (``MLP_1/fc1_1/MatMul`` -> ``MLP.fc1``: the model's name first, as tensorsight names a
  torch model's root by its class); ``""`` for ops outside any scope and for eager ops,
  which have no names;
- dtype from the ``TensorProto`` (``DT_FLOAT`` -> ``float32``; bfloat16 kept as its
  ``uint16`` bits), device from the trace (``.../device:CPU:0`` -> ``cpu``), statistics
  computed as the step is opened (each tensor is decoded once then); tensors that hold no
  numbers (resource handles, strings, variants) are left out.

A tensor's data reference is ``<file kind>@<record offset>[#<slot>]``; loading one decodes
that record again. Every size is checked before anything is allocated: a record's length
against the file (and ``TENSORSIGHT_MAX_RECORD_MIB``), both CRCs, a tensor's shape and
element count against its bytes (a value list shorter than the shape is filled, up to
``TENSORSIGHT_MAX_TENSOR_MIB``). A truncated, corrupt or foreign file is one
:class:`~tensorsight.errors.DumpFormatError` naming the file and the byte offset.
"""

from __future__ import annotations

import json
import math
import os
import re
import struct
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import google_crc32c
import numpy as np

from tensorsight.dumpformat import _check, _fs, _np_stats
from tensorsight.dumpformat.reader import RawTensor
from tensorsight.dumpformat.schema import TensorRecord, TensorStats
from tensorsight.errors import DumpFormatError

__all__ = ["KINDS", "TfdbgStep", "decode_tensor", "read_records", "scope_of", "tfdbg_layout"]

PREFIX = "tfdbg_events."
#: the file kinds the debugger writes (the reader reads the first four)
KINDS = (
    "metadata",
    "graphs",
    "execution",
    "graph_execution_traces",
    "source_files",
    "stack_frames",
)
_HEADER = struct.Struct("<QI")
_CRC = struct.Struct("<I")
_MASK_DELTA = 0xA282EAD8
_MIB = 1 << 20
_KERAS_SUFFIX = re.compile(r"_\d+$")
_DEVICE = re.compile(r"device:([A-Za-z_]+):(\d+)$")

# TensorFlow DataType number -> (numpy dtype of the bits, dtype name, the value-list field)
_DTYPES: dict[int, tuple[str, str, str]] = {
    1: ("float32", "float32", "float_val"),
    2: ("float64", "float64", "double_val"),
    3: ("int32", "int32", "int_val"),
    4: ("uint8", "uint8", "int_val"),
    5: ("int16", "int16", "int_val"),
    6: ("int8", "int8", "int_val"),
    8: ("complex64", "complex64", "scomplex_val"),
    9: ("int64", "int64", "int64_val"),
    10: ("bool", "bool", "bool_val"),
    14: ("uint16", "bfloat16", "half_val"),  # numpy has no bfloat16: its bits
    17: ("uint16", "uint16", "int_val"),
    18: ("complex128", "complex128", "dcomplex_val"),
    19: ("float16", "float16", "half_val"),
    22: ("uint32", "uint32", "uint32_val"),
    23: ("uint64", "uint64", "uint64_val"),
}
_BIT_LISTS = frozenset({"half_val"})  # 16-bit values stored as int32 bit patterns


def _mib(name: str, default: int) -> int:
    raw = os.environ.get(name, "")
    try:
        value = int(raw) if raw else default
    except ValueError:
        value = default
    return max(1, value) * _MIB


def _max_record() -> int:
    return _mib("TENSORSIGHT_MAX_RECORD_MIB", 2048)


def _max_filled() -> int:
    return _mib("TENSORSIGHT_MAX_TENSOR_MIB", 256)


def _masked_crc(data: bytes | memoryview) -> int:
    crc: int = google_crc32c.value(bytes(data))
    return (((crc >> 15) | (crc << 17)) + _MASK_DELTA) & 0xFFFFFFFF


def _messages() -> Any:
    from tensorsight.dumpformat._proto import tfdbg

    return tfdbg


def _files(folder: Path) -> dict[str, Path]:
    """``kind -> file`` of the dump in ``folder`` (the newest of each kind)."""
    out: dict[str, Path] = {}
    for name in sorted(_fs.list_dir(folder)):
        if not name.startswith(PREFIX):
            continue
        kind = name.rpartition(".")[2]
        if kind in KINDS and not _fs.is_dir(folder / name):
            out[kind] = folder / name
    return out


def tfdbg_layout(root: Path) -> dict[int, dict[int, Path]]:
    """``{0: {0: root}}`` when ``root`` holds a debugger dump (its ``.metadata`` file),
    else empty."""
    return {0: {0: root}} if "metadata" in _files(root) else {}


def _map(path: Path) -> memoryview:
    try:
        return _fs.map_file(path)
    except OSError as exc:
        msg = f"TensorFlow debugger file {str(path)!r}: cannot be read ({_check.reason(exc)})."
        raise DumpFormatError(msg) from None


def _record(buf: memoryview, pos: int, source: str) -> tuple[Any, int]:
    """The ``DebugEvent`` of the record at ``pos`` and where the next record starts."""
    size, limit = len(buf), _max_record()
    if size - pos < _HEADER.size:
        msg = f"{source}: cut off at byte {pos} (a record header needs 12 bytes)."
        raise DumpFormatError(msg)
    length, length_crc = _HEADER.unpack_from(buf, pos)
    if _masked_crc(buf[pos : pos + 8]) != length_crc:
        msg = f"{source}: corrupt record header at byte {pos} (length CRC mismatch)."
        raise DumpFormatError(msg)
    end = pos + _HEADER.size + length
    if length > limit or end + _CRC.size > size:
        msg = (
            f"{source}: record at byte {pos} claims {length} bytes, past the end of the "
            f"file ({size} bytes) or the limit of {limit >> 20} MiB "
            "(TENSORSIGHT_MAX_RECORD_MIB). Expected a complete debugger file."
        )
        raise DumpFormatError(msg)
    payload = buf[pos + _HEADER.size : end]
    if _masked_crc(payload) != _CRC.unpack_from(buf, end)[0]:
        msg = f"{source}: corrupt record at byte {pos} (payload CRC mismatch)."
        raise DumpFormatError(msg)
    try:
        event = _messages().DebugEvent.FromString(bytes(payload))
    except Exception as exc:  # protobuf's DecodeError, or a runtime's own error
        msg = f"{source}: record at byte {pos} is not a DebugEvent ({_check.reason(exc)})."
        raise DumpFormatError(msg) from None
    return event, end + _CRC.size


def read_records(path: Path) -> Iterator[tuple[int, Any]]:
    """``(offset, DebugEvent)`` of each record of one file, checked (module docstring)."""
    source = f"TensorFlow debugger file {str(path)!r}"
    buf = _map(path)
    pos = 0
    while pos < len(buf):
        event, nxt = _record(buf, pos, source)
        yield pos, event
        pos = nxt


def decode_tensor(proto: Any, source: str) -> RawTensor | None:
    """A ``TensorProto``'s values (``None`` for a dtype without numbers: resource, string,
    variant), sizes checked before allocating.

    Example:
        >>> from tensorsight.dumpformat._proto import tfdbg
        >>> t = tfdbg.TensorProto(dtype=1, float_val=[2.5])
        >>> t.tensor_shape.dim.add().size = 3
        >>> decode_tensor(t, "test").bits.tolist()
        [2.5, 2.5, 2.5]
    """
    spec = _DTYPES.get(int(proto.dtype))
    if spec is None:
        return None
    bits_name, dtype, list_field = spec
    np_dtype = np.dtype(bits_name).newbyteorder("<")
    if proto.tensor_shape.unknown_rank:
        msg = f"{source}: a tensor of unknown rank. Expected a traced tensor's full shape."
        raise DumpFormatError(msg)
    shape = tuple(int(d.size) for d in proto.tensor_shape.dim)
    if len(shape) > _check.MAX_DIMS or any(d < 0 for d in shape):
        msg = f"{source}: tensor shape {list(shape)[:8]} is not a shape."
        raise DumpFormatError(msg)
    numel = math.prod(shape)
    width = np_dtype.itemsize
    content = proto.tensor_content
    if content:
        if len(content) != numel * width:
            msg = (
                f"{source}: tensor of shape {list(shape)} and dtype {dtype} holds "
                f"{len(content)} bytes. Expected {numel * width}."
            )
            raise DumpFormatError(msg)
        arr = np.frombuffer(content, np_dtype).reshape(shape)
        return RawTensor(arr.astype(np_dtype.newbyteorder("="), copy=False), dtype)
    values = list(getattr(proto, list_field))
    per = 2 if list_field in ("scomplex_val", "dcomplex_val") else 1
    count = len(values) // per
    if count > numel or len(values) % per:
        msg = (
            f"{source}: tensor of shape {list(shape)} holds {count} values. Expected at "
            f"most {numel}."
        )
        raise DumpFormatError(msg)
    if count < numel and numel * width > _max_filled():
        msg = (
            f"{source}: tensor of shape {list(shape)} would fill {numel * width} bytes from "
            f"{count} values, over TENSORSIGHT_MAX_TENSOR_MIB ({_max_filled() >> 20} MiB)."
        )
        raise DumpFormatError(msg)
    if list_field in _BIT_LISTS:
        given = np.asarray(values, dtype=np.int64).astype(np.uint16).view(np_dtype)
    elif per == 2:
        pairs = np.asarray(values, dtype=np.float64).reshape(-1, 2)
        given = (pairs[:, 0] + 1j * pairs[:, 1]).astype(np_dtype)
    else:
        given = np.asarray(values).astype(np_dtype)
    out = np.zeros(numel, np_dtype.newbyteorder("="))
    if count:
        out[:count] = given
        out[count:] = given[-1]  # TensorFlow's rule: the last value repeats
    return RawTensor(out.reshape(shape), dtype)


def scope_of(op_name: str) -> tuple[str, str]:
    """``(direction, module path)`` of a graph op's full name (module docstring).

    >>> scope_of("gradient_tape/MLP_1/fc2_1/MatMul/MatMul_1")
    ('backward', 'MLP.fc2.MatMul')
    >>> scope_of("MLP_1/ln_1/moments/mean")
    ('forward', 'MLP.ln.moments')
    >>> scope_of("AddN")
    ('forward', '')
    """
    parts = op_name.split("/")
    direction = "forward"
    if parts[0] == "gradient_tape":
        direction, parts = "backward", parts[1:]
    return direction, ".".join(_KERAS_SUFFIX.sub("", p) for p in parts[:-1])


def _device(name: str) -> str:
    m = _DEVICE.search(name)
    if m is None:
        return "cpu"
    kind, index = m.group(1).lower(), m.group(2)
    return "cpu" if kind == "cpu" else f"{kind}:{index}"


@dataclass
class _Tensor:
    """A decoded tensor as the rows hold it (values dropped after statistics)."""

    data: str
    shape: tuple[int, ...]
    dtype: str
    stats: TensorStats | None


@dataclass
class _Op:
    wall: float
    order: int
    op: str
    op_type: str
    direction: str
    module_path: str
    device: str
    outputs: dict[int, _Tensor] = field(default_factory=dict)
    inputs: list[_Tensor] = field(default_factory=list)


def _stats(raw: RawTensor) -> TensorStats | None:
    arr = raw.bits
    if raw.dtype == "bfloat16":
        arr = (arr.astype(np.uint32) << 16).view(np.float32)
    values = _np_stats.array_stats(np.ascontiguousarray(arr), native=False)
    return None if values is None else _np_stats.stats_from_values(values)


class TfdbgStep:
    """The one step of a debugger dump folder (module docstring)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._paths = _files(folder)
        self._maps: dict[str, memoryview] = {}

    def rows(self) -> list[TensorRecord]:
        graphs: dict[tuple[str, str], Any] = {}  # (graph id, op name) -> GraphOpCreation
        if "graphs" in self._paths:
            for _, ev in read_records(self._paths["graphs"]):
                if ev.WhichOneof("what") == "graph_op_creation":
                    c = ev.graph_op_creation
                    graphs[(c.graph_id, c.op_name)] = c
        ops: list[_Op] = []
        ops.extend(self._graph_ops(graphs))
        ops.extend(self._eager_ops())
        ops.sort(key=lambda o: (o.wall, o.order))
        rows: list[TensorRecord] = []
        for index, o in enumerate(ops):
            args = json.dumps({"type": o.op_type}, separators=(",", ":"))
            named = [(f"input.{k}", t) for k, t in enumerate(o.inputs)]
            named += [(f"output.{s}", t) for s, t in sorted(o.outputs.items())]
            for tensor, t in named:
                rows.append(
                    TensorRecord(
                        index=index,
                        op=o.op,
                        direction=o.direction,
                        module_path=o.module_path,
                        tensor=tensor,
                        shape=t.shape,
                        dtype=t.dtype,
                        device=o.device,
                        stats=t.stats,
                        data=t.data,
                        args=args,
                    )
                )
        return rows

    def _tensor(self, kind: str, offset: int, slot: int | None, proto: Any) -> _Tensor | None:
        where = f"{kind} record at byte {offset}" + ("" if slot is None else f", tensor {slot}")
        source = f"TensorFlow debugger file {str(self._paths[kind])!r}: {where}"
        raw = decode_tensor(proto, source)
        if raw is None:
            return None
        data = f"{kind}@{offset}" + ("" if slot is None else f"#{slot}")
        return _Tensor(data, tuple(raw.bits.shape), raw.dtype, _stats(raw))

    def _graph_ops(self, graphs: dict[tuple[str, str], Any]) -> list[_Op]:
        kind = "graph_execution_traces"
        if kind not in self._paths:
            return []
        out: list[_Op] = []
        made: dict[tuple[str, str], _Tensor] = {}  # (graph id, "op:slot") -> tensor
        last: tuple[str, str] | None = None
        for offset, ev in read_records(self._paths[kind]):
            if ev.WhichOneof("what") != "graph_execution_trace":
                continue
            tr = ev.graph_execution_trace
            if not tr.HasField("tensor_proto"):
                continue  # another debug mode than FULL_TENSOR: no values
            t = self._tensor(kind, offset, None, tr.tensor_proto)
            key = (tr.tfdbg_context_id, tr.op_name)
            if key != last:
                creation = graphs.get(key)
                direction, path = scope_of(tr.op_name)
                op_type = creation.op_type if creation is not None else ""
                o = _Op(ev.wall_time, len(out), tr.op_name, op_type, direction, path,
                        _device(tr.device_name))  # fmt: skip
                if creation is not None:
                    for name in creation.input_names:
                        src = name if ":" in name else f"{name}:0"
                        hit = made.get((tr.tfdbg_context_id, src))
                        if hit is not None:
                            o.inputs.append(hit)
                out.append(o)
                last = key
            if t is not None:
                out[-1].outputs[int(tr.output_slot)] = t
                made[(tr.tfdbg_context_id, f"{tr.op_name}:{tr.output_slot}")] = t
        return [o for o in out if o.outputs]

    def _eager_ops(self) -> list[_Op]:
        kind = "execution"
        if kind not in self._paths:
            return []
        out: list[_Op] = []
        made: dict[int, _Tensor] = {}  # eager tensor id -> tensor
        for offset, ev in read_records(self._paths[kind]):
            if ev.WhichOneof("what") != "execution":
                continue
            ex = ev.execution
            if ex.graph_id:
                continue  # a function call: its graph's ops are recorded
            o = _Op(ev.wall_time, 1 << 40, ex.op_type, ex.op_type, "forward", "", "cpu")
            o.order += len(out)
            for tid in ex.input_tensor_ids:
                hit = made.get(int(tid))
                if hit is not None:
                    o.inputs.append(hit)
            for slot, proto in enumerate(ex.tensor_protos):
                t = self._tensor(kind, offset, slot, proto)
                if t is None:
                    continue
                o.outputs[slot] = t
                if slot < len(ex.output_tensor_ids):
                    made[int(ex.output_tensor_ids[slot])] = t
            if o.outputs:
                out.append(o)
        return out

    def load_raw(self, row: TensorRecord) -> RawTensor:
        ref = row.data or ""
        kind, _, rest = ref.partition("@")
        offset_text, _, slot_text = rest.partition("#")
        if (
            kind not in self._paths
            or not offset_text.isdigit()
            or not (slot_text == "" or slot_text.isdigit())
        ):
            msg = (
                f"Tensor {row.name!r}: data reference {ref[:120]!r} is not a record of this "
                "dump. Expected '<file kind>@<offset>[#<slot>]' from this step's rows."
            )
            raise DumpFormatError(msg)
        path, offset = self._paths[kind], int(offset_text)
        source = f"TensorFlow debugger file {str(path)!r}"
        buf = self._maps.get(kind)
        if buf is None:
            buf = self._maps[kind] = _map(path)
        proto = None
        if offset < len(buf):
            ev, _ = _record(buf, offset, source)
            what = ev.WhichOneof("what")
            if what == "execution" and slot_text:
                protos = ev.execution.tensor_protos
                proto = protos[int(slot_text)] if int(slot_text) < len(protos) else None
            elif what == "graph_execution_trace" and not slot_text:
                proto = ev.graph_execution_trace.tensor_proto
        raw = None if proto is None else decode_tensor(proto, f"{source}: byte {offset}")
        if raw is None or tuple(raw.bits.shape) != tuple(row.shape):
            msg = (
                f"Tensor {row.name!r}: record {ref[:120]!r} of {str(path)!r} does not hold "
                "it (the file changed since the step was opened)."
            )
            raise DumpFormatError(msg)
        return raw

    def close(self) -> None:
        self._maps.clear()
