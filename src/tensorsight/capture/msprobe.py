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
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import numpy as np

from tensorsight._lazy import lazy_import
from tensorsight.capture import _fs
from tensorsight.capture._ptfile import read_pt
from tensorsight.capture.reader import RawTensor
from tensorsight.capture.schema import TensorRecord, TensorStats
from tensorsight.errors import DumpFormatError

__all__ = ["MsprobeStep", "module_path_of", "msprobe_layout"]

_STEP = re.compile(r"step(\d+)")
_RANK = re.compile(r"rank(\d*)|proc(\d+)")
_SAFE_FILE = re.compile(r"[A-Za-z0-9_.\-]+\.(pt|npy)")
_MODULE = re.compile(r"Module\.(.+)\.[^.]+\.(forward|backward|parameters_grad)(\.\d+)?")


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
    """``Module.layers.0.Linear.forward.0`` -> ``layers.0``; other names -> ``""``."""
    if not name:
        return ""
    m = _MODULE.fullmatch(name)
    return m.group(1) if m else ""


def _direction(name: str) -> str:
    return "backward" if ".backward" in name or ".parameters_grad" in name else "forward"


def _is_tensor(item: Any) -> bool:
    return isinstance(item, dict) and "dtype" in item and "shape" in item


def _named(entry: dict[str, Any], name: str) -> list[tuple[str, dict[str, Any]]]:
    out: list[tuple[str, dict[str, Any]]] = []

    def walk(prefix: str, value: Any) -> None:
        if _is_tensor(value):
            out.append((prefix, value))
        elif isinstance(value, list):
            for i, v in enumerate(value):
                walk(f"{prefix}.{i}", v)

    if ".parameters_grad" in name:
        for pname, value in entry.items():
            items = value if isinstance(value, list) else [value]
            for v in items:
                if _is_tensor(v):
                    out.append((pname, v))
        return out
    for key, prefix in (("input_args", "input"), ("input", "input")):
        for i, v in enumerate(entry.get(key) or []):
            walk(f"{prefix}.{i}", v)
    for k, v in (entry.get("input_kwargs") or {}).items():
        walk(f"input.{k}", v)
    output = entry.get("output")
    if isinstance(output, dict):
        output = [output]
    for i, v in enumerate(output or []):
        walk(f"output.{i}", v)
    for pname, v in (entry.get("parameters") or {}).items():
        walk(f"parameters.{pname}", v)
    return out


def _float(v: Any) -> float | None:
    if v is None or isinstance(v, bool):
        return None
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


def _stats(t: dict[str, Any]) -> TensorStats | None:
    mn, mx, mean, norm = (_float(t.get(k)) for k in ("Min", "Max", "Mean", "Norm"))
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


def _read_json(path: Path) -> Any:
    try:
        return json.loads(_fs.read_text(path))
    except (ValueError, UnicodeDecodeError) as exc:
        msg = f"msprobe file {str(path)!r}: not valid JSON ({exc}). Expected msprobe's output."
        raise DumpFormatError(msg) from exc


class MsprobeStep:
    """One msprobe ``dump.json`` folder as rows (see the module docstring)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._data = folder / "dump_tensor_data"
        self.meta: dict[str, Any] = {}

    def rows(self) -> list[TensorRecord]:
        raw = _read_json(self.folder / "dump.json")
        if not isinstance(raw, dict) or not isinstance(raw.get("data"), dict):
            msg = (
                f"msprobe file {str(self.folder / 'dump.json')!r}: no 'data' object. "
                "Expected msprobe's dump.json."
            )
            raise DumpFormatError(msg)
        self.meta = {k: v for k, v in raw.items() if k != "data"}
        construct: dict[str, Any] = {}
        if _fs.exists(self.folder / "construct.json"):
            loaded = _read_json(self.folder / "construct.json")
            construct = loaded if isinstance(loaded, dict) else {}
        rows: list[TensorRecord] = []
        for index, (name, entry) in enumerate(raw["data"].items()):
            if not isinstance(entry, dict):
                continue
            own = module_path_of(name)
            path = own or module_path_of(construct.get(name))
            for tname, t in _named(entry, name):
                dtype = str(t["dtype"]).removeprefix("torch.")
                shape = tuple(int(d) for d in t["shape"] or ())
                rows.append(
                    TensorRecord(
                        index=index,
                        op=name,
                        direction=_direction(name),
                        module_path=path,
                        tensor=tname,
                        shape=shape,
                        dtype=dtype,
                        device=str(t.get("device", "")),
                        stats=_stats(t),
                        fingerprint=t.get("md5"),
                        data=t.get("data_name"),
                    )
                )
        return rows

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
            except (ValueError, OSError) as exc:
                msg = f"Tensor file {str(path)!r}: unreadable .npy ({exc})."
                raise DumpFormatError(msg) from exc
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
            f"({type(exc).__name__}: {exc}). Expected a plain tensor file."
        )
        raise DumpFormatError(msg) from exc
    if not isinstance(t, torch.Tensor):
        msg = f"Tensor file {str(path)!r}: holds {type(t).__name__}. Expected a tensor."
        raise DumpFormatError(msg)
    from tensorsight.capture._torch_stats import dtype_name

    dtype = dtype_name(t.dtype)
    t = t.detach().contiguous()
    if dtype == "bfloat16":
        return RawTensor(t.view(torch.int16).numpy().view(np.uint16), dtype)
    if dtype.startswith("float8"):
        return RawTensor(t.view(torch.uint8).numpy(), dtype)
    return RawTensor(t.numpy(), dtype)
