"""The dump format: every on-disk shape of a tensorsight dump, version 2.

This docstring is the spec (``docs/formats/dump.md`` explains it with examples).

Layout of a dump folder ``DUMP``::

    DUMP/
      rank0/                       one folder per rank (rank 0 without torch.distributed)
        manifest.json              DumpManifest, rewritten atomically after every step
        step0/                     one folder per recorded step
          ops.parquet              the op table, once the step has ended (compacted)
          ops.jsonl                the append-only op table log of a step running longer
                                   than LOG_SECS; it stays (and is read) only when the run
                                   stopped mid-step
          tensors-00000.safetensors  full tensors (mode "tensor"), one shard per ~256 MiB
        step3/ ...
      rank1/ ...

Op table: one row per recorded tensor (:class:`TensorRecord`); the rows of one op share
``index``, ``op``, ``direction``, ``module_path``, ``grad_fn``, ``stack`` and ``args`` (the op's
arguments as JSON, level op; see ``capture/_args.py``), and the table is in execution order
(forward, then backward, as they ran). The JSONL log holds one JSON object per line with
the :class:`TensorRecord` field names; a line cut off by a crash is ignored. The Parquet
file has the same columns (``shape`` is ``list<int64>``).

Tensor shards are standard safetensors files (8-byte little-endian header length, JSON
header, raw little-endian data), so bf16 and fp8 survive bit for bit and a reader can
memory-map them. A row's ``data`` is ``"<shard file>:<key>"``; several rows may point at
one stored tensor (a weight read by several ops is stored once per version).
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Callable
from dataclasses import MISSING, asdict, dataclass, field, fields, replace
from typing import Any

from tensorsight.dumpformat import _check
from tensorsight.errors import DumpFormatError, SchemaVersionError

__all__ = [
    "DIRECTIONS",
    "FINGERPRINT_HASH",
    "FORMAT_NAME",
    "LEVELS",
    "MODES",
    "SCHEMA_VERSION",
    "DumpManifest",
    "OpRecord",
    "StepInfo",
    "TensorRecord",
    "TensorStats",
    "step_json",
]

SCHEMA_VERSION = 2  # 2: the op table's ``args`` column (version 1 dumps read as before)
FORMAT_NAME = "tensorsight-dump"
MODES = ("statistics", "tensor", "md5")
# the built-in capture levels; a manifest's level may be any registered backend's, and dump()
# checks against the registry (capture.backends.levels()), not this tuple
LEVELS = ("op", "module", "api")
DIRECTIONS = ("forward", "backward")
# mode "md5" stores this fingerprint: CRC-32 (zlib, IEEE 802.3 polynomial) of the tensor's
# contiguous little-endian bytes, as 8 lowercase hex digits (the hash msprobe's md5 mode uses).
FINGERPRINT_HASH = "crc32"


@dataclass(frozen=True)
class TensorStats:
    """Statistics of one tensor, computed on its device with float64 accumulation.

    ``min``/``max`` are exact; ``mean`` and ``norm`` (L2) are accumulated in float64, over
    every element. All four are NaN when the tensor holds a NaN (``mean``/``norm`` are
    infinite or NaN when it holds infinities).
    The three counts say how many elements are NaN, +Inf and -Inf. All values are ``None``
    for an empty tensor (the counts are 0) and for dtypes without an order (complex).
    """

    min: float | None
    max: float | None
    mean: float | None
    norm: float | None
    nan_count: int = 0
    posinf_count: int = 0
    neginf_count: int = 0

    @property
    def has_nonfinite(self) -> bool:
        """Whether the tensor holds a NaN or an infinity."""
        return bool(self.nan_count or self.posinf_count or self.neginf_count)


@dataclass(frozen=True)
class TensorRecord:
    """One row of the op table: one tensor seen by one op.

    Attributes:
        index: Position of the op in execution order within the step (0, 1, ...).
        op: Operator name: ``aten.addmm.default`` (level op), ``Linear`` (level module,
            the class name), ``torch.nn.functional.linear`` (level api); the special op
            ``tensorsight.param_grad`` holds a parameter and its gradient once
            accumulated. msprobe dumps keep msprobe's names (``Functional.linear.0.forward``).
        direction: ``"forward"`` or ``"backward"``.
        module_path: Dotted path of the innermost running ``nn.Module`` (root named by its
            class, e.g. ``MLP.layers.0``); for backward ops, of the forward op they
            differentiate; ``""`` outside any module.
        tensor: Which tensor of the op: ``input.0``, ``input.<kwarg>``, ``output.1``,
            ``param.weight``, ``grad.weight``.
        shape: Tensor shape.
        dtype: Dtype name without the ``torch.`` prefix (``float32``, ``bfloat16``).
        device: Device the tensor lived on (``cpu``, ``cuda:0``).
        stats: Statistics; ``None`` when not computed.
        fingerprint: CRC-32 hex digest (mode ``md5``) or ``None``.
        data: ``"<shard>:<key>"`` of the stored tensor (mode ``tensor``) or ``None``.
        grad_fn: Autograd node running a backward op (``AddmmBackward0``) or ``None``.
        stack: User call stack (``file:line in func`` lines) when ``stack=True``.
        args: The op's arguments as compact JSON (level op, schema version 2 on): schema
            argument name -> value, tensors as ``{"tensor": "<row name>"}`` (the encoding
            is specified in ``capture/_args.py`` and ``docs/formats/dump.md``); ``None``
            when not recorded (other levels, older dumps).
    """

    index: int
    op: str
    direction: str
    module_path: str
    tensor: str
    shape: tuple[int, ...]
    dtype: str
    device: str = "cpu"
    stats: TensorStats | None = None
    fingerprint: str | None = None
    data: str | None = None
    grad_fn: str | None = None
    stack: str | None = None
    args: str | None = None

    @property
    def name(self) -> str:
        """Full row name: ``<op>.<direction>.<tensor>`` (msprobe rows keep their own)."""
        if any(part in self.op for part in (".forward", ".backward", ".parameters_grad")):
            return f"{self.op}.{self.tensor}"
        return f"{self.op}.{self.direction}.{self.tensor}"

    @property
    def numel(self) -> int:
        """Number of elements."""
        n = 1
        for d in self.shape:
            n *= d
        return n

    def to_row(self) -> dict[str, Any]:
        """Flat dict with the op-table column names (stats fields inlined)."""
        row = {
            "index": self.index,
            "op": self.op,
            "direction": self.direction,
            "module_path": self.module_path,
            "tensor": self.tensor,
            "shape": list(self.shape),
            "dtype": self.dtype,
            "device": self.device,
            "fingerprint": self.fingerprint,
            "data": self.data,
            "grad_fn": self.grad_fn,
            "stack": self.stack,
            "args": self.args,
        }
        stats = self.stats
        for key in STAT_COLUMNS:
            row[key] = None if stats is None else getattr(stats, key)
        return row

    @classmethod
    def from_row(cls, row: Any, *, source: str = "Op table", where: str = "a row") -> TensorRecord:
        """Inverse of :meth:`to_row`, every column checked against its type.

        Raises:
            DumpFormatError: ``row`` is not an object of the op table's columns, or a column
                has the wrong type (``source: <where>.<column> is ... Expected ...``).
        """
        if _plain(row):  # the common case, checked in one expression (a few us per row)
            get = row.get
            stats = None
            if get("min") is not None or get("nan_count") is not None:
                stats = TensorStats(
                    min=get("min"),
                    max=get("max"),
                    mean=get("mean"),
                    norm=get("norm"),
                    nan_count=get("nan_count") or 0,
                    posinf_count=get("posinf_count") or 0,
                    neginf_count=get("neginf_count") or 0,
                )
            return cls(
                index=row["index"],
                op=row["op"],
                direction=row["direction"],
                module_path=get("module_path") or "",
                tensor=row["tensor"],
                shape=tuple(row["shape"]),
                dtype=row["dtype"],
                device=get("device") or "cpu",
                stats=stats,
                fingerprint=get("fingerprint"),
                data=get("data"),
                grad_fn=get("grad_fn"),
                stack=get("stack"),
                args=get("args"),
            )
        return cls._from_row_checked(row, source, where)

    @classmethod
    def from_columns(
        cls, columns: dict[str, list[Any]], *, source: str = "Op table"
    ) -> list[TensorRecord]:
        """:meth:`from_row` of every row of a table held column by column (equal-length
        lists, as :func:`~tensorsight.dumpformat._table.read_columns` returns them).

        The checks of :meth:`from_row` run on whole columns; a table with any value they
        refuse goes row by row through :meth:`from_row` instead, which names the first bad
        value (``row <i>.<column>``). The records are the same either way.

        Raises:
            DumpFormatError: As :meth:`from_row`.
        """
        if len({len(v) for v in columns.values()}) > 1:
            msg = f"{source}: its columns differ in length. Expected one value per row in each."
            raise DumpFormatError(msg)
        if not _plain_columns(columns):
            names = list(columns)
            return [
                cls.from_row(dict(zip(names, values, strict=True)), source=source, where=f"row {i}")
                for i, values in enumerate(zip(*columns.values(), strict=True))
            ]
        n = len(columns["index"])
        nothing: list[Any] = [None] * n
        new = object.__new__
        out: list[TensorRecord] = []
        append = out.append
        for (
            index, op, direction, module_path, tensor, shape, dtype, device,
            mn, mx, mean, norm, nan, pinf, ninf, fingerprint, data, grad_fn, stack, args,
        ) in zip(*(columns.get(c, nothing) for c in COLUMNS), strict=True):  # fmt: skip
            stats = None
            if mn is not None or nan is not None:
                stats = new(TensorStats)
                stats.__dict__.update(
                    min=mn, max=mx, mean=mean, norm=norm, nan_count=nan or 0,
                    posinf_count=pinf or 0, neginf_count=ninf or 0,
                )  # fmt: skip
            # the frozen dataclass's __init__ stores the fields one object.__setattr__ at a
            # time (most of a row's cost); it has no __post_init__, so this is the same record
            rec = new(cls)
            rec.__dict__.update(
                index=index, op=op, direction=direction, module_path=module_path or "",
                tensor=tensor, shape=tuple(shape), dtype=dtype, device=device or "cpu",
                stats=stats, fingerprint=fingerprint, data=data, grad_fn=grad_fn,
                stack=stack, args=args,
            )  # fmt: skip
            append(rec)
        return out

    @classmethod
    def _from_row_checked(cls, row: Any, source: str, where: str) -> TensorRecord:
        """:meth:`from_row` value by value, raising the error that names the bad one."""
        if not isinstance(row, dict):
            _check.fail(source, where, row, "an object of the op table's columns")
        get = row.get
        for name in _REQUIRED:
            if name not in row:
                msg = (
                    f"{source}: {where} has no column {name!r}. "
                    "Expected the columns of TensorRecord."
                )
                raise DumpFormatError(msg)

        def text(name: str) -> str | None:
            value = get(name)
            if value is not None and type(value) is not str:
                _check.fail(source, f"{where}.{name}", value, "a string or null")
            return value

        def count(name: str) -> int:
            value = get(name)
            return 0 if value is None else _check.req_int(source, f"{where}.{name}", value)

        def required(name: str) -> str:
            return _check.req_str(source, f"{where}.{name}", row[name])

        direction = required("direction")
        if direction not in DIRECTIONS:
            msg = (
                f"{source}: {where}.direction is {direction[:40]!r}. "
                f"Expected one of {', '.join(DIRECTIONS)}."
            )
            raise DumpFormatError(msg)
        values = [_check.number(source, f"{where}.{k}", get(k)) for k in STAT_COLUMNS[:4]]
        has_stats = values[0] is not None or get("nan_count") is not None
        stats = (
            TensorStats(
                min=values[0],
                max=values[1],
                mean=values[2],
                norm=values[3],
                nan_count=count("nan_count"),
                posinf_count=count("posinf_count"),
                neginf_count=count("neginf_count"),
            )
            if has_stats
            else None
        )
        return cls(
            index=_check.req_int(source, f"{where}.index", row["index"]),
            op=required("op"),
            direction=direction,
            module_path=text("module_path") or "",
            tensor=required("tensor"),
            shape=_check.shape(source, f"{where}.shape", row["shape"]),
            dtype=required("dtype"),
            device=text("device") or "cpu",
            stats=stats,
            fingerprint=text("fingerprint"),
            data=text("data"),
            grad_fn=text("grad_fn"),
            stack=text("stack"),
            args=text("args"),
        )


STAT_COLUMNS = ("min", "max", "mean", "norm", "nan_count", "posinf_count", "neginf_count")
# Column order of the op table (JSONL keys and Parquet columns).
COLUMNS = (
    "index",
    "op",
    "direction",
    "module_path",
    "tensor",
    "shape",
    "dtype",
    "device",
    *STAT_COLUMNS,
    "fingerprint",
    "data",
    "grad_fn",
    "stack",
    "args",
)
_REQUIRED = ("index", "op", "direction", "tensor", "shape", "dtype")
_OPTIONAL_TEXT = ("module_path", "device", "fingerprint", "data", "grad_fn", "stack", "args")
_TEXT_OR_NONE = (str, type(None))
_NUMBER_OR_NONE = (float, type(None))
_INT_OR_NONE = (int, type(None))


def _plain_columns(columns: dict[str, list[Any]]) -> bool:
    """:func:`_plain` of every row of a column-wise table, one column at a time."""
    if any(name not in columns for name in _REQUIRED):
        return False
    index = columns["index"]
    if not set(map(type, index)) <= {int} or (index and min(index) < 0):
        return False
    for name in ("op", "tensor", "dtype"):
        if not set(map(type, columns[name])) <= {str}:
            return False
    direction = columns["direction"]
    if not set(map(type, direction)) <= {str} or not set(direction) <= set(DIRECTIONS):
        return False
    shapes = columns["shape"]
    if not set(map(type, shapes)) <= {list}:
        return False
    for shape in shapes:
        if len(shape) > _check.MAX_DIMS:
            return False
        for d in shape:
            if type(d) is not int or d < 0:
                return False
        if math.prod(shape) > _check.MAX_NUMEL:
            return False
    text, number, count = set(_TEXT_OR_NONE), set(_NUMBER_OR_NONE), set(_INT_OR_NONE)
    for name in _OPTIONAL_TEXT:
        if name in columns and not set(map(type, columns[name])) <= text:
            return False
    for name in STAT_COLUMNS[:4]:
        if name in columns and not set(map(type, columns[name])) <= number:
            return False
    for name in STAT_COLUMNS[4:]:
        values = columns.get(name)
        if values is None:
            continue
        if not set(map(type, values)) <= count:
            return False
        if min((v for v in values if v is not None), default=0) < 0:
            return False
    return True


def _plain(row: Any) -> bool:
    """Whether ``row`` is an op-table row exactly as the writer makes it: every column of
    its type (floats for the statistics, ints for the counts), nothing to convert or report."""
    if type(row) is not dict:
        return False
    get = row.get
    index, shape = get("index"), get("shape")
    if not (
        type(index) is int
        and index >= 0
        and type(get("op")) is str
        and get("direction") in DIRECTIONS
        and type(get("direction")) is str
        and type(get("tensor")) is str
        and type(get("dtype")) is str
        and type(shape) is list
        and len(shape) <= _check.MAX_DIMS
    ):
        return False
    n = 1
    for d in shape:
        if type(d) is not int or d < 0:
            return False
        n *= d
    if n > _check.MAX_NUMEL:
        return False
    for name in _OPTIONAL_TEXT:
        if type(get(name)) not in _TEXT_OR_NONE:
            return False
    for name in STAT_COLUMNS[:4]:
        if type(get(name)) not in _NUMBER_OR_NONE:
            return False
    for name in STAT_COLUMNS[4:]:
        v = get(name)
        if type(v) not in _INT_OR_NONE or (v is not None and v < 0):
            return False
    return True


@dataclass(frozen=True)
class OpRecord:
    """One recorded op: the identity fields shared by its rows, plus the rows.

    Attributes:
        index: Execution order within the step.
        op: Operator name (see :class:`TensorRecord`).
        direction: ``"forward"`` or ``"backward"``.
        module_path: Innermost module (for backward ops, of the forward op).
        tensors: The op's rows, inputs first, then outputs, in argument order.
        grad_fn: Autograd node of a backward op, else ``None``.
        stack: User call stack when recorded.
        args: The op's arguments as JSON (see :class:`TensorRecord`), or ``None``.
    """

    index: int
    op: str
    direction: str
    module_path: str
    tensors: tuple[TensorRecord, ...]
    grad_fn: str | None = None
    stack: str | None = None
    args: str | None = None

    # cached: the comparison asks for them several times per op (a frozen dataclass keeps
    # them in its __dict__, outside the fields, so equality and hashing are unchanged)
    @functools.cached_property
    def inputs(self) -> tuple[TensorRecord, ...]:
        """Rows named ``input.*`` (and ``param.*``)."""
        return tuple(t for t in self.tensors if not t.tensor.startswith(("output", "grad")))

    @functools.cached_property
    def outputs(self) -> tuple[TensorRecord, ...]:
        """Rows named ``output.*`` (and ``grad.*``)."""
        return tuple(t for t in self.tensors if t.tensor.startswith(("output", "grad")))


@dataclass(frozen=True)
class StepInfo:
    """One step of one rank in the manifest.

    Attributes:
        step: The step number (0-based, counted by ``.step()``).
        complete: Whether the step ended normally (its op table is compacted).
        op_count: Ops recorded.
        tensor_count: Rows recorded.
        bytes_written: Bytes of tensor shards.
        outputs_fingerprint: CRC-32 over the outputs given to ``record_outputs``/``run_step``.
        observer_identical: Result of ``check_observer`` (``None`` when not checked).
    """

    step: int
    complete: bool = False
    op_count: int = 0
    tensor_count: int = 0
    bytes_written: int = 0
    outputs_fingerprint: str | None = None
    observer_identical: bool | None = None


def step_json(step: StepInfo) -> str:
    """One step as :meth:`DumpManifest.to_json` writes it in ``steps`` (indented for there)."""
    body = json.dumps(asdict(step), indent=1, sort_keys=True, allow_nan=True)
    return "  " + body.replace("\n", "\n  ")


@dataclass(frozen=True)
class DumpManifest:
    """``rank<N>/manifest.json``: who wrote this rank's dump, how, and whether it finished.

    Attributes:
        schema_version: :data:`SCHEMA_VERSION` of the writer.
        format: Always :data:`FORMAT_NAME`.
        mode: ``statistics``, ``tensor`` or ``md5``.
        level: ``op``, ``module``, ``api``, a registered capture backend's level, or ``onnx``
            (``dump-onnx``).
        framework: ``torch``, ``onnxruntime`` or ``onnx.reference``.
        framework_version: Its version string.
        tensorsight_version: Version of the writer.
        python_version: ``sys.version`` of the writer (first word).
        device: Main device (``cpu``, ``cuda:0``) or the ONNX execution provider.
        rank: This rank.
        world_size: Number of ranks (1 without torch.distributed).
        command_line: ``sys.argv`` of the writing process.
        created: Wall time (seconds since the epoch) the dump started.
        complete: ``True`` only after a normal close; a crash leaves ``False``.
        incomplete_reason: Why the dump is incomplete (an error message), if known.
        fingerprint_hash: :data:`FINGERPRINT_HASH`.
        dtypes: Every dtype recorded, sorted.
        steps: One :class:`StepInfo` per recorded step, in order.
        extra: Backend-specific facts (ONNX: lost fusions, graph optimization level).
    """

    mode: str
    level: str
    framework: str
    framework_version: str
    tensorsight_version: str
    python_version: str
    device: str
    rank: int
    world_size: int
    command_line: tuple[str, ...]
    created: float
    complete: bool = False
    incomplete_reason: str | None = None
    fingerprint_hash: str = FINGERPRINT_HASH
    dtypes: tuple[str, ...] = ()
    steps: tuple[StepInfo, ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)
    schema_version: int = SCHEMA_VERSION
    format: str = FORMAT_NAME

    def to_json(self, step_text: Callable[[StepInfo], str] | None = None) -> str:
        """Serialize as pretty JSON.

        ``step_text`` gives :func:`step_json` of a step, typically from a cache: a writer
        rewrites the manifest every second with every step so far, and encoding 10,000
        steps again each time took ~0.2 s of its GIL time. The text is the same either way.
        """
        if not self.steps:
            return json.dumps(asdict(self), indent=1, sort_keys=True, allow_nan=True)
        rest = json.dumps(asdict(replace(self, steps=())), indent=1, sort_keys=True, allow_nan=True)
        marker = '\n "steps": []'  # the top-level key (JSON strings hold no raw newline)
        at = rest.index(marker)
        items = ",\n".join((step_text or step_json)(s) for s in self.steps)
        return f'{rest[:at]}\n "steps": [\n{items}\n ]{rest[at + len(marker) :]}'

    @classmethod
    def from_json(cls, text: str | bytes, *, source: str = "manifest.json") -> DumpManifest:
        """Parse and validate every field's type; raises DumpFormatError or SchemaVersionError."""
        where = f"Manifest {source!r}"
        raw = _check.load_json(text, where, "a tensorsight manifest")
        if not isinstance(raw, dict) or raw.get("format") != FORMAT_NAME:
            got = raw.get("format") if isinstance(raw, dict) else type(raw).__name__
            msg = (
                f"{where}: not a tensorsight dump manifest. "
                f"Expected format {FORMAT_NAME!r}, got {str(got)[:80]!r}."
            )
            raise DumpFormatError(msg)
        version = raw.get("schema_version")
        if not isinstance(version, int) or isinstance(version, bool) or version > SCHEMA_VERSION:
            msg = (
                f"{where}: schema version {str(version)[:40]!r} is newer than this "
                f"tensorsight knows. Expected <= {SCHEMA_VERSION}. Upgrade tensorsight."
            )
            raise SchemaVersionError(msg)
        values = _fields(where, "", raw, _MANIFEST_TYPES, cls)
        steps = raw.get("steps", [])
        if not isinstance(steps, list):
            _check.fail(where, "steps", steps, "a list of steps")
        values["steps"] = tuple(
            StepInfo(**_fields(where, f"steps[{i}].", s, _STEP_TYPES, StepInfo))
            for i, s in enumerate(steps)
        )
        return cls(**values)


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def _is_strs(v: Any) -> bool:
    return isinstance(v, list) and all(isinstance(x, str) for x in v)


# field -> (check, expected): what the manifest and each of its steps may hold
_Types = dict[str, tuple[Callable[[Any], bool], str]]
_STR: tuple[Callable[[Any], bool], str] = (lambda v: isinstance(v, str), "a string")
_OPT_STR: tuple[Callable[[Any], bool], str] = (
    lambda v: v is None or isinstance(v, str),
    "a string or null",
)
_INT: tuple[Callable[[Any], bool], str] = (_is_int, "a non-negative integer")
_BOOL: tuple[Callable[[Any], bool], str] = (lambda v: isinstance(v, bool), "true or false")
_MANIFEST_TYPES: _Types = {
    **dict.fromkeys(
        ("level", "framework", "framework_version", "tensorsight_version", "python_version"),
        _STR,
    ),
    "mode": (lambda v: v in MODES, f"one of {', '.join(MODES)}"),
    "device": _STR,
    "format": _STR,
    "fingerprint_hash": _STR,
    "rank": _INT,
    "world_size": (lambda v: _is_int(v) and v >= 1, "a positive integer"),
    "schema_version": _INT,
    "command_line": (_is_strs, "a list of strings"),
    "dtypes": (_is_strs, "a list of strings"),
    "created": (
        lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
        "a number (seconds since the epoch)",
    ),
    "complete": _BOOL,
    "incomplete_reason": _OPT_STR,
    "extra": (lambda v: isinstance(v, dict), "an object"),
    "steps": (lambda v: True, "a list of steps"),  # checked one by one
}
_STEP_TYPES: _Types = {
    "step": _INT,
    "complete": _BOOL,
    "op_count": _INT,
    "tensor_count": _INT,
    "bytes_written": _INT,
    "outputs_fingerprint": _OPT_STR,
    "observer_identical": (lambda v: v is None or isinstance(v, bool), "true, false or null"),
}


def _fields(where: str, prefix: str, raw: Any, types: _Types, cls: type) -> dict[str, Any]:
    """``raw``'s fields for ``cls(**...)``, each checked (lists become tuples)."""
    if not isinstance(raw, dict):
        _check.fail(where, prefix.rstrip(".") or "the file", raw, "an object")
    required = {
        f.name for f in fields(cls) if f.default is MISSING and f.default_factory is MISSING
    }
    out: dict[str, Any] = {}
    for name, value in raw.items():
        if name not in types:
            msg = (
                f"{where}: unknown field {prefix}{name[:80]!r}. "
                f"Expected the fields of {cls.__name__}."
            )
            raise DumpFormatError(msg)
        check, expected = types[name]
        if not check(value):
            _check.fail(where, f"{prefix}{name}", value, expected)
        out[name] = tuple(value) if isinstance(value, list) else value
    missing = sorted(required - set(out))
    if missing:
        owner = prefix.rstrip(".") or "the manifest"
        msg = (
            f"{where}: {owner} has no field {missing[0]!r}. Expected the fields of {cls.__name__}."
        )
        raise DumpFormatError(msg)
    return out
