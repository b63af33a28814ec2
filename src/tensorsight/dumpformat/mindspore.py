"""Read MindSpore's own Dump folders as they are, without MindSpore installed.

MindSpore's Dump (``MINDSPORE_DUMP_CONFIG`` pointing at a JSON config, ``saved_data:
"tensor"``; graph mode, where every kernel of the compiled graph is dumped) writes::

    DUMP/                                     the config's "path"
      rank_<R>/
        .dump_metadata/config.json            {"device_target": "CPU", "ms_version": "2.10.0"}
        .dump_metadata/data_dump.json         the Dump config itself (not read)
        execution_order/
          ms_execution_order_graph_<G>.csv    "NodeExecutionOrder-FullNameWithScope", then
                                              one kernel's full name per line, in order
          ms_global_execution_order_graph_<G>.csv  the iterations run (not read)
        graphs/                               IR and protobuf graphs (not read)
        <net_name>/<G>/<iteration>/
          <type>.<name>.<task>.<stream>.<timestamp>.<input|output>.<slot>.<format>.<dtype>.npy

A kernel's full name is its scope path: ``Default/network-WithLossCell/_backbone-MLP/fc1-Dense/
MatMul-op0`` (forward), ``Gradients/Default/.../norm-LayerNorm/Grad_LayerNorm/LayerNormGrad-op0``
(backward), ``Default/optimizer-SGD/SGD-op0``, ``Expand/_Muls/Mul-op0`` (kernels MindSpore
expanded from a composite op, without a Cell scope). Each Cell level is ``<attribute>-<Class>``.
File names hold the full name with every ``/`` replaced by ``_`` (ambiguous, since names hold
``_`` too), so the execution-order file is what names the kernels: its names are matched to the
files' by that replacement. Names that differ only in their ``-op<N>`` counters (MindSpore 2.10
numbers one backward ``AddN`` ``op1`` in the order file and ``op0`` in the file names, and four
``Cast`` kernels ``op4``-``op7`` and ``op0``-``op3``) are matched when as many names of one
stem are left over on both sides, in order (order file; first timestamp of the files); the
op keeps the file's counter. ``Parameter.<name>.*.output.0`` files hold the parameters,
inputs and optimizer states after the step (``fc1_weight``: dots become ``_``).

Read into the dump model (see :mod:`~tensorsight.dumpformat.schema`):

- one op per kernel execution, in the execution order of the graph (graphs by id), then every
  kernel with files but no line in the order file (by timestamp, named as in the file), then
  the parameters (``Parameter.<name>``); an iteration is a step;
- ``op`` is the full name; ``direction`` is ``backward`` under ``Gradients/``; ``module_path``
  is the Cell scope as attribute names, with MindSpore's training wrappers
  (``TrainOneStepCell``, ``WithLossCell``, ... in :data:`WRAPPERS`) left out and the Cell
  they wrap named by its class, as tensorsight names a torch model's root:
  ``.../network-WithLossCell/_backbone-MLP/fc1-Dense/...`` -> ``MLP.fc1``; without a
  wrapper the path is the attribute names (``Default/fc1-Dense/..`` -> ``fc1``); ``""``
  outside any Cell;
- tensors ``input.<slot>`` then ``output.<slot>``, shape from the ``.npy`` header, dtype from
  the file name (``Float32`` -> ``float32``, ``BFloat16`` -> ``bfloat16``; the header's when the
  file name has none), device from ``device_target``; no statistics are stored, so a
  comparison reads the tensors (memory-mapped). bfloat16 files carry the descr ``<E2``
  (numpy has no bfloat16): they are read as ``uint16`` bits, which ``DumpStep.load`` turns
  into float32 exactly.

Every file is checked as it is read: the order file must exist for every graph with tensors,
``.npy`` headers (versions 1 to 3, at most 1 MiB) must describe a plain array of numbers whose
bytes the file holds exactly; anything else is one :class:`~tensorsight.errors.DumpFormatError`
naming the file.
Headers are parsed as Python literals (:func:`ast.literal_eval`, nothing unpickled) and sizes
are checked against the file before anything is mapped.
"""

from __future__ import annotations

import ast
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from tensorsight.dumpformat import _check, _fs
from tensorsight.dumpformat.reader import RawTensor
from tensorsight.dumpformat.schema import TensorRecord
from tensorsight.errors import DumpFormatError

__all__ = ["WRAPPERS", "MindSporeStep", "mindspore_layout", "scope_of"]

_RANK = re.compile(r"rank_(\d+)")
_DIGITS = re.compile(r"\d+")
_ORDER_DIR = "execution_order"
_META_DIR = ".dump_metadata"
_NOT_NETS = frozenset({_ORDER_DIR, _META_DIR, "graphs"})
_ORDER_HEADER = "NodeExecutionOrder"
_CELL = re.compile(r"([A-Za-z0-9_]+)-([A-Za-z_][A-Za-z0-9_]*)")
_COUNTER = re.compile(r"-op\d+$")
_UNSAFE = re.compile(r"[^A-Za-z0-9_\-]")
_MAX_NAME = 4096  # characters of one kernel name in the order file
_NPY_MAGIC = b"\x93NUMPY"
_MAX_NPY_HEADER = 1 << 20  # bytes of a .npy header (MindSpore writes 128)
# descrs numpy lacks: MindSpore writes bfloat16 as "<E2" (ml_dtypes' type code), read as bits
_RAW_DESCRS = {"<E2": "bfloat16"}

# MindSpore's cells that wrap the user's network for training; left out of module paths
WRAPPERS = frozenset(
    {
        "TrainOneStepCell",
        "TrainOneStepWithLossScaleCell",
        "WithLossCell",
        "WithGradCell",
        "WithEvalCell",
        "ForwardValueAndGrad",
        "GradAccumulationCell",
        "PipelineCell",
        "MicroBatchInterleaved",
        "_VirtualDatasetCell",
        "_TrainGradAccuStepCell",
        "_MicroBatch",
    }
)

# dtype names in file names, lower-cased, that the dump model knows (others: the header's)
_DTYPES = frozenset(
    {
        "bool",
        "int8",
        "int16",
        "int32",
        "int64",
        "uint8",
        "uint16",
        "uint32",
        "uint64",
        "float16",
        "bfloat16",
        "float32",
        "float64",
        "complex64",
        "complex128",
    }
)


def _is_rank(path: Path) -> bool:
    return _fs.is_dir(path / _ORDER_DIR) or _fs.is_dir(path / _META_DIR)


def _iteration_dirs(rank_dir: Path) -> Iterator[tuple[str, int, int, Path]]:
    """``(net, graph, iteration, folder)`` of every ``<net>/<graph>/<iteration>/`` folder."""
    for net in sorted(_fs.list_dir(rank_dir)):
        net_dir = rank_dir / net
        if net in _NOT_NETS or net.startswith(".") or not _fs.is_dir(net_dir):
            continue
        for graph in _fs.list_dir(net_dir):
            if not _DIGITS.fullmatch(graph) or not _fs.is_dir(net_dir / graph):
                continue
            for it in _fs.list_dir(net_dir / graph):
                if _DIGITS.fullmatch(it) and _fs.is_dir(net_dir / graph / it):
                    yield net, int(graph), int(it), net_dir / graph / it


def mindspore_layout(root: Path) -> dict[int, dict[int, Path]]:
    """``rank -> iteration -> rank folder``; empty when ``root`` is not a MindSpore Dump."""
    ranks: dict[int, Path] = {}
    for name in _fs.list_dir(root):
        m = _RANK.fullmatch(name)
        if m and _fs.is_dir(root / name) and _is_rank(root / name):
            ranks[int(m.group(1))] = root / name
    if not ranks and _is_rank(root):  # one rank's folder
        m = _RANK.fullmatch(root.name)
        ranks = {int(m.group(1)) if m else 0: root}
    return {r: {it: p for _, _, it, _ in _iteration_dirs(p)} for r, p in ranks.items()}


def scope_of(full_name: str) -> tuple[str, str]:
    """``(direction, module path)`` of a kernel's full name (see the module docstring).

    >>> scope_of("Gradients/Default/network-WithLossCell/_backbone-MLP/norm-LayerNorm/"
    ...          "Grad_LayerNorm/LayerNormGrad-op0")
    ('backward', 'MLP.norm')
    >>> scope_of("Default/optimizer-SGD/SGD-op0")
    ('forward', 'optimizer')
    """
    parts = full_name.split("/")
    direction = "forward"
    if parts[0] == "Gradients":
        direction, parts = "backward", parts[1:]
    cells: list[tuple[str, str]] = []
    if parts and parts[0] == "Default":
        for seg in parts[1:-1]:
            m = _CELL.fullmatch(seg)
            if m is None:
                break
            cells.append((m.group(1), m.group(2)))
    wrapped = False
    while cells and cells[0][1] in WRAPPERS:
        cells.pop(0)
        wrapped = True
    if not cells:
        return direction, ""
    names = [a for a, _ in cells]
    if wrapped:
        names[0] = cells[0][1]
    return direction, ".".join(names)


@dataclass(frozen=True)
class _File:
    """One tensor file: which kernel, which tensor, and what its ``.npy`` header says."""

    path: Path
    kind: str  # the kernel type, "Parameter" for parameters
    name: str  # the full name as in the file name ("/" written as "_")
    timestamp: int
    io: str  # "input" or "output"
    slot: int
    dtype: str  # the tensor's dtype name (the file name's, else the header's)
    shape: tuple[int, ...]


def _parse_name(file: str) -> tuple[str, str, int, str, int, str | None] | None:
    """``(type, name, timestamp, io, slot, dtype or None)`` of a tensor file name."""
    parts = file[: -len(".npy")].split(".")
    for at, has_dtype in ((len(parts) - 4, True), (len(parts) - 3, False)):
        if at >= 4 and parts[at] in ("input", "output") and _DIGITS.fullmatch(parts[at + 1]):
            task, stream, ts = parts[at - 3 : at]
            if all(_DIGITS.fullmatch(p) for p in (task, stream, ts)):
                dtype = parts[-1].lower() if has_dtype else None
                name = ".".join(parts[1 : at - 3])
                return parts[0], name, int(ts), parts[at], int(parts[at + 1]), dtype
    return None


@dataclass(frozen=True)
class _Header:
    """What a ``.npy`` header says: the numpy dtype of the bits, the dtype's name, the shape."""

    bits: np.dtype[Any]  # uint16 for bfloat16
    dtype: str
    shape: tuple[int, ...]
    fortran: bool
    offset: int


def _npy_header(path: Path) -> _Header:
    """A ``.npy`` file's header, checked against the file's size."""
    source = f"MindSpore tensor file {str(path)!r}"
    try:
        size = path.stat().st_size
        with _fs.open_read(path) as f:
            head = f.read(12)
            if len(head) < 10 or head[:6] != _NPY_MAGIC:
                msg = f"{source}: not a .npy file (no NUMPY magic). Expected a .npy tensor."
                raise DumpFormatError(msg)
            major = head[6]
            if major == 1:
                length, start = int.from_bytes(head[8:10], "little"), 10
            elif major in (2, 3):
                length, start = int.from_bytes(head[8:12], "little"), 12
            else:
                msg = f"{source}: .npy version {major}. Expected version 1, 2 or 3."
                raise DumpFormatError(msg)
            if length > _MAX_NPY_HEADER or start + length > size:
                msg = (
                    f"{source}: a header of {length} bytes in a file of {size}. Expected a "
                    f".npy header of at most {_MAX_NPY_HEADER} bytes inside the file."
                )
                raise DumpFormatError(msg)
            f.seek(0)
            text = f.read(start + length)
    except OSError as exc:
        msg = f"{source}: cannot be read ({_check.reason(exc)}). Expected a readable .npy file."
        raise DumpFormatError(msg) from None
    header = _literal(text[start:], source, major)
    if not isinstance(header, dict) or set(header) != {"descr", "fortran_order", "shape"}:
        _check.fail(source, "the header", header, "{'descr', 'fortran_order', 'shape'}")
    name = _RAW_DESCRS.get(header["descr"]) if isinstance(header["descr"], str) else None
    try:
        dtype = np.dtype(np.uint16 if name else np.lib.format.descr_to_dtype(header["descr"]))
    except Exception as exc:  # numpy raises several types for a bad descr
        descr = str(header["descr"])[:60]
        msg = f"{source}: dtype {descr!r} ({_check.reason(exc)}). Expected a numeric dtype."
        raise DumpFormatError(msg) from None
    if dtype.kind not in "biufc" or dtype.fields is not None or dtype.subdtype is not None:
        msg = f"{source}: holds {dtype}. Expected an array of numbers."
        raise DumpFormatError(msg)
    shape_value = header["shape"]
    if not isinstance(shape_value, tuple):
        _check.fail(source, "the header's shape", shape_value, "a tuple of non-negative integers")
    shape = _check.shape(source, "the header's shape", list(shape_value))
    fortran = header["fortran_order"]
    if not isinstance(fortran, bool):
        _check.fail(source, "the header's fortran_order", fortran, "a boolean")
    offset = start + length
    need = offset + math.prod(shape) * dtype.itemsize
    if size != need:
        what = "cut off" if size < need else "longer than its header says"
        msg = (
            f"{source}: {size} bytes, {what} (shape {list(shape)} of {dtype} needs {need}). "
            "Expected the whole tensor."
        )
        raise DumpFormatError(msg)
    return _Header(dtype, name or dtype.name, shape, fortran, offset)


def _literal(blob: bytes, source: str, major: int) -> Any:
    """The header's Python literal, through :func:`ast.literal_eval` (no code runs)."""
    try:
        text = blob.decode("utf-8" if major == 3 else "latin1")
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError) as exc:
        msg = f"{source}: an unreadable .npy header ({_check.reason(exc)}). Expected a .npy file."
        raise DumpFormatError(msg) from None


def _read_order(rank_dir: Path, graph: int) -> list[str]:
    file = rank_dir / _ORDER_DIR / f"ms_execution_order_graph_{graph}.csv"
    source = f"MindSpore execution order {str(file)!r}"
    if not _fs.exists(file):
        msg = (
            f"{source}: missing. Expected the execution-order file MindSpore writes with every "
            f"Dump of graph {graph}; copy the whole rank_<R> folder."
        )
        raise DumpFormatError(msg)
    raw = _check.read_limited(file, source, "MindSpore's execution-order CSV")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        msg = f"{source}: not UTF-8 text. Expected one kernel name per line."
        raise DumpFormatError(msg) from None
    names = []
    for i, line in enumerate(text.splitlines()):
        line = line.strip()
        if not line or (i == 0 and line.startswith(_ORDER_HEADER)):
            continue
        if len(line) > _MAX_NAME or not line.isprintable():
            what = "" if line.isprintable() else " with control characters"
            msg = (
                f"{source}: line {i + 1} is {len(line)} characters{what}. "
                f"Expected a kernel's full name (at most {_MAX_NAME} printable characters)."
            )
            raise DumpFormatError(msg)
        names.append(line)
    return names


def _device(rank_dir: Path) -> str:
    file = rank_dir / _META_DIR / "config.json"
    if not _fs.exists(file):
        return ""
    source = f"MindSpore file {str(file)!r}"
    meta = _check.read_json_file(file, source, "MindSpore's Dump metadata")
    if not isinstance(meta, dict):
        _check.fail(source, "", meta, "an object with 'device_target'")
    target = _check.opt_str(source, "device_target", meta.get("device_target"))
    return (target or "").lower()


class MindSporeStep:
    """One iteration of one rank of a MindSpore Dump as rows (see the module docstring)."""

    def __init__(self, rank_dir: Path, iteration: int) -> None:
        self.rank_dir = rank_dir
        self.iteration = iteration
        self._files: dict[str, _File] = {}  # a row's ``data`` -> its file

    def rows(self) -> list[TensorRecord]:
        device = _device(self.rank_dir)
        self._files.clear()
        ops: list[tuple[str, list[_File]]] = []  # (op name, its files), in order
        params: list[tuple[str, list[_File]]] = []
        for _, graph, it, folder in sorted(_iteration_dirs(self.rank_dir), key=lambda g: g[1]):
            if it != self.iteration:
                continue
            kernels, found = self._scan(folder)
            for name, files in found:
                params.append((f"Parameter.{name}", files))
            if kernels:
                ops.extend(self._ordered(kernels, _read_order(self.rank_dir, graph)))
        rows: list[TensorRecord] = []
        index = 0
        for name, files in [*ops, *params]:
            for run in _executions(files):
                direction, path = scope_of(name) if "/" in name else _flat_scope(name)
                for f in run:
                    key = f.path.relative_to(self.rank_dir).as_posix()  # <net>/<G>/<it>/<file>
                    self._files[key] = f
                    rows.append(
                        TensorRecord(
                            index=index,
                            op=name,
                            direction=direction,
                            module_path=path,
                            tensor=f"{f.io}.{f.slot}",
                            shape=f.shape,
                            dtype=f.dtype,
                            device=device,
                            data=key,
                        )
                    )
                index += 1
        return rows

    def _scan(self, folder: Path) -> tuple[dict[str, list[_File]], list[tuple[str, list[_File]]]]:
        """The kernels' files by file-name name, and the parameters' files, of one folder."""
        kernels: dict[str, list[_File]] = {}
        params: dict[str, list[_File]] = {}
        for file in sorted(_fs.list_dir(folder)):
            if not file.endswith(".npy"):
                continue
            parsed = _parse_name(file)
            if parsed is None:
                msg = (
                    f"MindSpore Dump folder {str(folder)!r}: file name {file[:120]!r} is not "
                    "MindSpore's. Expected <type>.<name>.<task>.<stream>.<timestamp>."
                    "<input|output>.<slot>.<format>.<dtype>.npy."
                )
                raise DumpFormatError(msg)
            kind, name, ts, io, slot, dtype = parsed
            header = _npy_header(folder / file)
            dtype = dtype if dtype in _DTYPES else header.dtype
            f = _File(folder / file, kind, name, ts, io, slot, dtype, header.shape)
            (params if kind == "Parameter" else kernels).setdefault(name, []).append(f)
        return kernels, sorted(params.items(), key=lambda kv: min(f.timestamp for f in kv[1]))

    @staticmethod
    def _ordered(
        kernels: dict[str, list[_File]], order: list[str]
    ) -> list[tuple[str, list[_File]]]:
        """Kernels in execution order, named by the order file (see the module docstring)."""
        left = dict(kernels)
        placed: list[tuple[str, list[_File]] | str] = []  # a str: not found yet
        missing: dict[str, list[str]] = {}  # stem -> names of the order file without files
        for full in order:
            files = left.pop(_UNSAFE.sub("_", full), None)
            placed.append((full, files) if files is not None else full)
            if files is None:
                missing.setdefault(_COUNTER.sub("", _UNSAFE.sub("_", full)), []).append(full)
        leftover: dict[str, list[str]] = {}  # stem -> file-name names, by first timestamp
        for flat in sorted(left, key=lambda k: min(f.timestamp for f in left[k])):
            leftover.setdefault(_COUNTER.sub("", flat), []).append(flat)
        renamed: dict[str, str] = {}  # order-file name -> file-name name of the same kernel
        for stem, names in missing.items():
            flats = leftover.get(stem, [])
            if len(flats) == len(names):  # renumbered kernels: paired in order
                renamed.update(zip(names, flats, strict=True))
        out: list[tuple[str, list[_File]]] = []
        for item in placed:
            if isinstance(item, tuple):
                out.append(item)
                continue
            flat = renamed.get(item, "")
            if flat not in left:  # a kernel of the order file without files (none dumped)
                continue
            scope = item.rpartition("/")[0]
            suffix = flat[len(_UNSAFE.sub("_", scope)) + 1 :] if scope else flat
            out.append((f"{scope}/{suffix}" if scope else suffix, left.pop(flat)))
        rest = sorted(left.items(), key=lambda kv: min(f.timestamp for f in kv[1]))
        return out + rest

    def load_raw(self, row: TensorRecord) -> RawTensor:
        f = self._files.get(row.data or "")
        if f is None:
            msg = (
                f"Tensor {row.name!r}: data reference {str(row.data)[:120]!r} is not a file of "
                "this step. Expected a row read from this step."
            )
            raise DumpFormatError(msg)
        header = _npy_header(f.path)  # the file may have changed since rows()
        dtype, shape, offset = header.bits, header.shape, header.offset
        if shape != f.shape:
            msg = (
                f"MindSpore tensor file {str(f.path)!r}: shape {list(shape)} now, "
                f"{list(f.shape)} when the step was opened. Expected an unchanged dump."
            )
            raise DumpFormatError(msg)
        count = math.prod(shape)
        if count == 0:
            arr = np.empty(shape, dtype)
        else:
            try:
                buf = _fs.map_file(f.path)
            except OSError as exc:
                why = _check.reason(exc)
                msg = f"MindSpore tensor file {str(f.path)!r}: cannot be mapped ({why})."
                raise DumpFormatError(msg) from None
            if len(buf) < offset + count * dtype.itemsize:
                msg = f"MindSpore tensor file {str(f.path)!r}: cut off since the step was opened."
                raise DumpFormatError(msg)
            arr = np.frombuffer(buf, dtype, count=count, offset=offset)
            arr = arr.reshape(shape, order="F" if header.fortran else "C")
        if not arr.dtype.isnative:
            arr = arr.astype(arr.dtype.newbyteorder("="))
        return RawTensor(arr, header.dtype)

    def close(self) -> None:
        self._files.clear()


def _flat_scope(name: str) -> tuple[str, str]:
    """A kernel known only by its file name: the direction is sure, the module path is not."""
    return ("backward" if name.startswith("Gradients_") else "forward"), ""


def _executions(files: list[_File]) -> list[list[_File]]:
    """One kernel's files split into its executions: the k-th file of each tensor, inputs first."""
    runs: list[dict[tuple[str, int], _File]] = []
    for f in sorted(files, key=lambda f: f.timestamp):
        tensor = (f.io, f.slot)
        for run in runs:
            if tensor not in run:
                run[tensor] = f
                break
        else:
            runs.append({tensor: f})
    order = {"input": 0, "output": 1}
    return [sorted(run.values(), key=lambda f: (order[f.io], f.slot)) for run in runs]
