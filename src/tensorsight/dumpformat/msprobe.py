"""Read msprobe dump folders as they are, without msprobe installed.

msprobe (Ascend/msprobe, ``PrecisionDebugger``) writes::

    DUMP/step<S>/<rank<R> | rank | proc<PID>>/
      dump.json          {"task", "level", "framework", "dump_data_dir", "data": {name: entry}}
      construct.json     name -> parent module name (levels L1/mix), optional
      stack.json         call stacks, optional
      dump_tensor_data/  <row name>.pt or .npy (task "tensor")

``data`` keeps execution order. An entry holds ``input_args`` / ``input_kwargs`` /
``output`` (forward), ``input`` / ``output`` (backward), ``parameters`` (module forward,
mix/L0) or, for ``Module.<path>.<Class>.parameters_grad.<n>``, one list per parameter.
Each tensor is ``{"type": "torch.Tensor", "dtype", "shape", "Max", "Min", "Mean", "Norm",
"requires_grad"}`` plus ``"md5"`` (task statistics with summary_mode md5: a CRC-32, 8 hex
digits) or ``"data_name"`` (task tensor). Row names stay msprobe's:
``Functional.linear.0.forward.output.0``. msprobe counts no NaN/Inf: the reader sets each
count to 1 when min/max/mean shows one (a flag, not a count).

msprobe's MindSpore dumps (``"framework": "mindspore"``) have the same layout; their cells
are ``Cell.<path>.<Class>.forward.<n>`` (``Cell.fc1.Dense.forward.0``: module path ``fc1``,
like PyTorch's ``Module.``) and their dtypes MindSpore's names (``Float32``, ``BFloat16``,
``Int64``, ``Bool``), read as tensorsight's (``float32``, ``bfloat16``, ``int64``,
``bool``).
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import numpy as np

from tensorsight._lazy import lazy_import
from tensorsight.dumpformat import _check, _fs
from tensorsight.dumpformat._ptfile import read_pt
from tensorsight.dumpformat.reader import RawTensor
from tensorsight.dumpformat.schema import TensorRecord, TensorStats
from tensorsight.errors import DumpFormatError

__all__ = ["MsprobeStep", "dtype_name", "module_path_of", "msprobe_layout"]

_STEP = re.compile(r"step(\d+)")
_RANK = re.compile(r"rank(\d*)|proc(\d+)")
_SAFE_FILE = re.compile(r"[A-Za-z0-9_.\-]+\.(pt|npy)")
_MODULE = re.compile(r"(?:Module|Cell)\.(.+)\.[^.]+\.(forward|backward|parameters_grad)(\.\d+)?")


def _rank_dirs(step_dir: Path) -> dict[int, Path]:
    found: list[tuple[str, Path, re.Match[str]]] = []
    for name in _fs.list_dir(step_dir):
        m = _RANK.fullmatch(name)
        if m and _fs.exists(step_dir / name / "dump.json"):
            found.append((name, step_dir / name, m))
    out: dict[int, Path] = {}
    procs = sorted((int(m.group(2)), p) for _, p, m in found if m.group(2))
    for i, (_, p) in enumerate(procs):
        out[i] = p
    for _, p, m in found:
        if m.group(2) is None:
            out[int(m.group(1) or 0)] = p
    return out


def msprobe_layout(root: Path) -> dict[int, dict[int, Path]]:
    """``rank -> step -> folder holding dump.json``; empty when ``root`` is not msprobe's."""
    if _fs.exists(root / "dump.json"):
        return {0: {0: root}}
    layout: dict[int, dict[int, Path]] = {}
    steps = {int(m.group(1)): root / n for n in _fs.list_dir(root) if (m := _STEP.fullmatch(n))}
    if not steps and _rank_dirs(root):  # a step folder itself
        steps = {0: root}
    for s, step_dir in steps.items():
        if _fs.is_dir(step_dir):
            for r, folder in _rank_dirs(step_dir).items():
                layout.setdefault(r, {})[s] = folder
    return layout


def module_path_of(name: str | None) -> str:
    """``Module.layers.0.Linear.forward.0`` (MindSpore: ``Cell.layers.0.Dense.forward.0``)
    -> ``layers.0``; other names -> ``""``."""
    if not name:
        return ""
    m = _MODULE.fullmatch(name)
    return m.group(1) if m else ""


def dtype_name(dtype: str) -> str:
    """An msprobe dtype as tensorsight names it: ``torch.float32``, MindSpore's ``Float32``
    and ``mindspore.float32`` -> ``float32``; ``BFloat16`` -> ``bfloat16``.

    Example:
        >>> [dtype_name(d) for d in ("torch.bfloat16", "Float32", "BFloat16", "Int64", "Bool")]
        ['bfloat16', 'float32', 'bfloat16', 'int64', 'bool']
    """
    name = dtype.removeprefix("torch.").removeprefix("mindspore.")
    return name.lower() if name[:1].isupper() else name


def _direction(name: str) -> str:
    return "backward" if ".backward" in name or ".parameters_grad" in name else "forward"


def _is_tensor(item: Any) -> bool:
    return isinstance(item, dict) and "dtype" in item and "shape" in item


_MAX_NESTING = 32  # lists of lists of tensors in one argument (msprobe nests tuples)


class _Entry:
    """One ``data`` entry checked against msprobe's schema while it is walked."""

    def __init__(self, source: str, name: str) -> None:
        self.source = source
        self.where = f"data{_check.key(name)}"
        self.out: list[tuple[str, dict[str, Any], str]] = []  # (tensor name, tensor, place)

    def walk(self, prefix: str, value: Any, where: str, depth: int = 0) -> None:
        if _is_tensor(value):
            self.out.append((prefix, value, where))
        elif isinstance(value, list):
            if depth >= _MAX_NESTING:
                msg = (
                    f"{self.source}: {where} nests lists more than {_MAX_NESTING} deep. "
                    "Expected msprobe's argument lists."
                )
                raise DumpFormatError(msg)
            for i, v in enumerate(value):
                self.walk(f"{prefix}.{i}", v, f"{where}[{i}]", depth + 1)
        # anything else is a non-tensor argument (an int, a string, msprobe's {"type": ..})

    def field(self, entry: dict[str, Any], key: str, kinds: tuple[type, ...]) -> Any:
        value = entry.get(key)
        if value is not None and not isinstance(value, kinds):
            what = " or ".join("a list" if k is list else "an object" for k in kinds)
            _check.fail(self.source, f"{self.where}.{key}", value, f"{what} or null")
        return value


def _named(entry: dict[str, Any], name: str, source: str) -> list[tuple[str, dict[str, Any], str]]:
    e = _Entry(source, name)
    if ".parameters_grad" in name:
        for pname, value in entry.items():
            where = f"{e.where}{_check.key(pname)}"
            if value is not None and not isinstance(value, (list, dict)):
                _check.fail(source, where, value, "a list of tensors or a tensor")
            items = value if isinstance(value, list) else [value]
            for i, v in enumerate(items):
                if _is_tensor(v):
                    e.out.append((pname, v, f"{where}[{i}]"))
        return e.out
    for key, prefix in (("input_args", "input"), ("input", "input")):
        for i, v in enumerate(e.field(entry, key, (list,)) or []):
            e.walk(f"{prefix}.{i}", v, f"{e.where}.{key}[{i}]")
    for k, v in (e.field(entry, "input_kwargs", (dict,)) or {}).items():
        e.walk(f"input.{k}", v, f"{e.where}.input_kwargs{_check.key(k)}")
    output = e.field(entry, "output", (list, dict))
    if isinstance(output, dict):
        output = [output]
    for i, v in enumerate(output or []):
        e.walk(f"output.{i}", v, f"{e.where}.output[{i}]")
    for pname, v in (e.field(entry, "parameters", (dict,)) or {}).items():
        e.walk(f"parameters.{pname}", v, f"{e.where}.parameters{_check.key(pname)}")
    return e.out


def _stats(t: dict[str, Any], source: str, where: str) -> TensorStats | None:
    mn, mx, mean, norm = (
        _check.number(source, f"{where}.{k}", t.get(k), strings=True)
        for k in ("Min", "Max", "Mean", "Norm")
    )
    if mn is None and mx is None and mean is None:
        return None
    vals = [v for v in (mn, mx, mean) if v is not None]
    return TensorStats(
        min=mn,
        max=mx,
        mean=mean,
        norm=norm,
        nan_count=int(any(math.isnan(v) for v in vals)),
        posinf_count=int(any(v == math.inf for v in vals)),
        neginf_count=int(any(v == -math.inf for v in vals)),
    )


def _source(path: Path) -> str:
    return f"msprobe file {str(path)!r}"


def _read_json(path: Path) -> Any:
    return _check.read_json_file(path, _source(path), "msprobe's output")


def _row(
    index: int, name: str, path: str, tname: str, t: dict[str, Any], source: str, where: str
) -> TensorRecord:
    """One tensor of an entry as a row, every field checked against msprobe's schema."""
    dtype = dtype_name(_check.req_str(source, f"{where}.dtype", t["dtype"]))
    device = _check.opt_str(source, f"{where}.device", t.get("device"))
    return TensorRecord(
        index=index,
        op=name,
        direction=_direction(name),
        module_path=path,
        tensor=tname,
        shape=_check.shape(source, f"{where}.shape", t["shape"]),
        dtype=dtype,
        device=device or "",
        stats=_stats(t, source, where),
        fingerprint=_check.opt_str(source, f"{where}.md5", t.get("md5")),
        data=_check.opt_str(source, f"{where}.data_name", t.get("data_name")),
    )


class MsprobeStep:
    """One msprobe ``dump.json`` folder as rows (see the module docstring).

    Every value used is checked against msprobe's schema as it is read: a wrong type, a
    shape that is not a list of non-negative integers, nesting deeper than msprobe writes
    raise one :class:`~tensorsight.errors.DumpFormatError` naming the file and the place.
    """

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._data = folder / "dump_tensor_data"
        self.meta: dict[str, Any] = {}

    def rows(self) -> list[TensorRecord]:
        file = self.folder / "dump.json"
        source = _source(file)
        raw = _read_json(file)
        if not isinstance(raw, dict):
            _check.fail(source, "", raw, "msprobe's dump.json, an object with a 'data' object")
        if "data" not in raw:
            msg = f"{source}: no 'data' object. Expected msprobe's dump.json."
            raise DumpFormatError(msg)
        if not isinstance(raw["data"], dict):
            _check.fail(source, "'data'", raw.get("data"), "an object of named entries")
        self.meta = {k: v for k, v in raw.items() if k != "data"}
        construct = self._construct()
        rows: list[TensorRecord] = []
        for index, (name, entry) in enumerate(raw["data"].items()):
            if entry is None:
                continue
            if not isinstance(entry, dict):
                _check.fail(source, f"data{_check.key(name)}", entry, "an object or null")
            own = module_path_of(name)
            path = own or module_path_of(construct.get(name))
            for tname, t, where in _named(entry, name, source):
                rows.append(_row(index, name, path, tname, t, source, where))
        return rows

    def _construct(self) -> dict[str, str | None]:
        """``construct.json`` (name -> parent module name), checked; empty when absent."""
        file = self.folder / "construct.json"
        if not _fs.exists(file):
            return {}
        loaded = _read_json(file)
        if not isinstance(loaded, dict):
            _check.fail(_source(file), "", loaded, "an object of name -> parent name")
        for name, parent in loaded.items():
            _check.opt_str(_source(file), _check.key(name), parent)
        return loaded

    def load_raw(self, row: TensorRecord) -> RawTensor:
        name = row.data or ""
        if not _SAFE_FILE.fullmatch(name) or name.startswith("."):
            msg = (
                f"Tensor {row.name!r}: data_name {name!r} is not a plain .pt/.npy file name. "
                "Expected a file inside dump_tensor_data/."
            )
            raise DumpFormatError(msg)
        path = self._data / name
        if name.endswith(".pt"):
            mapped = read_pt(path)  # the plain case, memory-mapped, without torch
            if mapped is not None:
                return RawTensor(*mapped)
        if not _fs.exists(path):
            msg = (
                f"Tensor {row.name!r}: file {str(path)!r} is missing. "
                "Expected msprobe's tensor file."
            )
            raise DumpFormatError(msg)
        if name.endswith(".npy"):
            try:
                arr = np.load(path, mmap_mode="r", allow_pickle=False)
            except Exception as exc:  # numpy raises many types for a damaged header
                msg = (
                    f"Tensor file {str(path)!r}: unreadable .npy ({_check.reason(exc)}). "
                    "Expected a .npy file of numbers."
                )
                raise DumpFormatError(msg) from None
            if not isinstance(arr, np.ndarray) or arr.dtype.kind not in "biufc":
                got = type(arr).__name__ if not isinstance(arr, np.ndarray) else str(arr.dtype)
                msg = f"Tensor file {str(path)!r}: holds {got}. Expected an array of numbers."
                raise DumpFormatError(msg)
            return RawTensor(arr, str(arr.dtype))
        return _torch_load(path)

    def close(self) -> None:
        return None


def _torch_load(path: Path) -> RawTensor:
    """Every ``.pt`` file :func:`read_pt` leaves alone, through ``torch.load``."""
    torch = lazy_import("torch", extra="torch", needed_by="reading msprobe .pt files")
    try:
        t = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # torch raises many types for corrupt or unsafe files
        msg = (
            f"Tensor file {str(path)!r}: not loadable with weights_only=True "
            f"({_check.reason(exc)}). Expected a plain tensor file."
        )
        raise DumpFormatError(msg) from None
    if not isinstance(t, torch.Tensor):
        msg = f"Tensor file {str(path)!r}: holds {type(t).__name__}. Expected a tensor."
        raise DumpFormatError(msg)
    dtype = str(t.dtype).removeprefix("torch.")
    t = t.detach().contiguous()
    if dtype == "bfloat16":
        return RawTensor(t.view(torch.int16).numpy().view(np.uint16), dtype)
    if dtype.startswith("float8"):
        return RawTensor(t.view(torch.uint8).numpy(), dtype)
    return RawTensor(t.numpy(), dtype)
