"""The result of a comparison: :class:`Comparison`, :class:`OpComparison`, :class:`Verdict`
(and :class:`ReplayResult`, what :func:`~tensorsight.compare.replay.replay` returns).

This docstring is the spec of the JSON export (``Comparison.to_json``), schema version 1::

    {
      "schema_version": 1,
      "format": "tensorsight-comparison",
      "bench": "<path>", "target": "<path>",
      "profile": "budget" | "classic",
      "metrics": ["cosine", ...],            # metric keys computed for tensor rows
      "ranks": [0, ...], "step": 0 | null,
      "first_divergence": <row position> | null,
      "first_divergence_rank": <rank> | null,
      "incomplete": "<why>" | null,         # a dump was cut off (compare --allow-incomplete)
      "not_comparable": "<why>" | null,     # too few tensors found a counterpart
      "missing": [{"rank": <rank>, "reason": "<why>"}, ...],  # rank pairs not compared
      "advice": [{"mechanism": ..., "evidence": ..., "row": <row position> | null}, ...],
      "rows": [{<column>: <value>, ...}, ...]   # keys = COLUMNS, in that order
    }

Row values: numbers, strings, ``null`` for "not computed" (e.g. metrics of an unmatched or
statistics-only row), and the strings ``"nan"``, ``"inf"``, ``"-inf"`` for non-finite
numbers (JSON has none). Shapes are lists of ints. Columns (CSV/XLSX/JSON, in order):
the identity columns, the metric keys of PRODUCT.md (``within_1e-3`` and ``within_5e-3``
keep their hyphen; their attributes are ``within_1e_3`` / ``within_5e_3``), ``verdict``,
``reason``, then :data:`EXTRA_COLUMNS`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterator, Mapping
from dataclasses import MISSING, asdict, dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, cast

from tensorsight.compare import report
from tensorsight.compare.metrics.kernel import KERNEL_KEYS
from tensorsight.compare.metrics.stats import STATS_KEYS
from tensorsight.errors import InputFileError, SchemaVersionError, UsageError

__all__ = [
    "COLUMNS",
    "EXTRA_COLUMNS",
    "FORMAT_NAME",
    "IDENTITY_COLUMNS",
    "METRIC_COLUMNS",
    "MIN_MATCHED_FRACTION",
    "ONE_SIDED_OPS",
    "SCHEMA_VERSION",
    "VERDICTS",
    "Advice",
    "Comparison",
    "MissingPair",
    "OpComparison",
    "ReplayResult",
    "Verdict",
    "attr_name",
]

SCHEMA_VERSION = 1
# below this share of bench tensors paired with a target tensor, the verdict is "not comparable"
MIN_MATCHED_FRACTION = 0.5
FORMAT_NAME = "tensorsight-comparison"
VERDICTS = ("pass", "warning", "error")

IDENTITY_COLUMNS = (
    "index",
    "op",
    "module_path",
    "direction",
    "tensor",
    "shape_bench",
    "shape_target",
    "dtype_bench",
    "dtype_target",
)
METRIC_COLUMNS = KERNEL_KEYS  # PRODUCT.md "Comparison rows" metric keys, in order
EXTRA_COLUMNS = (
    "rank",
    "op_target",
    "index_target",
    "match",
    "mode",
    "budget",
    "error",
    "input_error",
    "error_gain",
    "mechanism",
    *STATS_KEYS,
    "fingerprint_equal",
)
COLUMNS = (*IDENTITY_COLUMNS, *METRIC_COLUMNS, "verdict", "reason", *EXTRA_COLUMNS)


# op-name fragments of ops that run on one side only by design (aten and msprobe names):
# autocast's casts, detach/alias, and allocations whose memory the op does not write
ONE_SIDED_OPS = (
    "_to_copy", "aten.to.", "_autocast_to_", "convert_element_type", "type_as", "Tensor.to.",
    "Tensor.float.", "Tensor.half.", "Tensor.bfloat16.", "Tensor.double.", "Tensor.type.",
    "aten.detach", "aten.alias", "aten.lift_fresh", "Tensor.detach.", "aten.empty",
    "aten.new_empty", "npu_format_cast",
)  # fmt: skip


def attr_name(column: str) -> str:
    """Attribute name of a column (``within_1e-3`` -> ``within_1e_3``)."""
    return column.replace("-", "_")


@dataclass(frozen=True)
class Verdict:
    """A judgement of one row.

    Attributes:
        verdict: ``pass``, ``warning`` or ``error``.
        reason: One sentence naming the evidence.
        budget: Error this op may show given its dtypes (``None`` when not applicable).
        error: The error measure compared with ``budget`` (relative, see docs/metrics.md).
    """

    verdict: str
    reason: str
    budget: float | None = None
    error: float | None = None

    def __post_init__(self) -> None:
        if self.verdict not in VERDICTS:
            msg = f"Verdict {self.verdict!r}: unknown. Expected one of {', '.join(VERDICTS)}."
            raise UsageError(msg)


@dataclass(frozen=True, init=False)
class OpComparison:
    """One comparison row: one tensor of one op, bench against target.

    Attribute names are the column names of PRODUCT.md ("Comparison rows"), except
    ``within_1e_3``/``within_5e_3`` for the columns ``within_1e-3``/``within_5e-3``; use
    :meth:`get` or :meth:`to_dict` for column keys. The built-in metrics' values are one
    mapping, ``metrics``, keyed by the kernel's key table (:data:`METRIC_COLUMNS`, i.e.
    ``KERNEL_KEYS``); each key is also an attribute (``row.cosine`` is
    ``row.metrics.get("cosine")``), made from that table, so a new kernel key needs no
    field here. A metric is ``None`` (absent from ``metrics``) when not computed (unmatched
    op, statistics or md5 dump, shape mismatch) and ``nan`` when undefined. ``custom``
    holds metrics registered by users (key -> value).

    The constructor takes the fields, plus any metric by its attribute name
    (``OpComparison(..., cosine=0.5)`` puts ``0.5`` under ``metrics["cosine"]``).

    Example:
        >>> row = OpComparison(0, "aten.mm.default", "fc", "forward", "output.0", cosine=0.5)
        >>> row.metrics, row.cosine, row.get("within_1e-3")
        ({'cosine': 0.5}, 0.5, None)
    """

    index: int | None
    op: str
    module_path: str
    direction: str
    tensor: str
    shape_bench: tuple[int, ...] | None = None
    shape_target: tuple[int, ...] | None = None
    dtype_bench: str | None = None
    dtype_target: str | None = None
    metrics: Mapping[str, float] = field(default_factory=dict)
    verdict: str = "pass"
    reason: str = ""
    rank: int = 0
    op_target: str | None = None
    index_target: int | None = None
    match: str = "name"
    mode: str = "tensor"
    budget: float | None = None
    error: float | None = None
    input_error: float | None = None
    error_gain: float | None = None
    mechanism: str | None = None
    min_bench: float | None = None
    min_target: float | None = None
    max_bench: float | None = None
    max_target: float | None = None
    norm_bench: float | None = None
    norm_target: float | None = None
    nonfinite_bench: float | None = None
    nonfinite_target: float | None = None
    stat_abs_diff: float | None = None
    norm_rel_diff: float | None = None
    fingerprint_equal: bool | None = None
    custom: Mapping[str, float] = field(default_factory=dict)

    if TYPE_CHECKING:  # for the type checker: the attributes are made from METRIC_COLUMNS
        cosine: ClassVar[float | None]
        max_abs_err: ClassVar[float | None]
        acc_rel_err: ClassVar[float | None]
        rel_euclidean: ClassVar[float | None]
        kl_div: ClassVar[float | None]
        mean_bench: ClassVar[float | None]
        std_bench: ClassVar[float | None]
        mean_target: ClassVar[float | None]
        std_target: ClassVar[float | None]
        mae: ClassVar[float | None]
        rmse: ClassVar[float | None]
        max_rel_err: ClassVar[float | None]
        mean_rel_err: ClassVar[float | None]
        within_1e_3: ClassVar[float | None]
        within_5e_3: ClassVar[float | None]
        max_ulp: ClassVar[float | None]

    def __init__(
        self,
        index: int | None,
        op: str,
        module_path: str,
        direction: str,
        tensor: str,
        shape_bench: tuple[int, ...] | None = None,
        shape_target: tuple[int, ...] | None = None,
        dtype_bench: str | None = None,
        dtype_target: str | None = None,
        **values: Any,
    ) -> None:
        _fill(self.__dict__, {
            "index": index, "op": op, "module_path": module_path, "direction": direction,
            "tensor": tensor, "shape_bench": shape_bench, "shape_target": shape_target,
            "dtype_bench": dtype_bench, "dtype_target": dtype_target, **values,
        })  # fmt: skip

    @property
    def one_sided(self) -> bool:
        """Present on one side only by design: an unmatched dtype cast (autocast), detach or
        allocation (``empty*``), which carries no evidence either way (:data:`ONE_SIDED_OPS`)."""
        if self.match != "unmatched" or (self.shape_bench is None) == (self.shape_target is None):
            return False
        return any(p in self.op for p in ONE_SIDED_OPS)

    @property
    def key(self) -> str:
        """Readable row id: ``<op>.<direction>.<tensor>`` (bench side)."""
        return f"{self.op}.{self.direction}.{self.tensor}"

    def get(self, column: str) -> Any:
        """Value of a column by its exported name (``"within_1e-3"`` works)."""
        if column in self.custom:
            return self.custom[column]
        return getattr(self, attr_name(column))

    def to_dict(self) -> dict[str, Any]:
        """Column name -> value, in :data:`COLUMNS` order, then custom metrics."""
        out = {c: self.get(c) for c in COLUMNS}
        out.update(self.custom)
        return out

    def with_verdict(self, v: Verdict) -> OpComparison:
        """A copy carrying ``v``'s verdict, reason, budget and error."""
        return self.evolve(verdict=v.verdict, reason=v.reason, budget=v.budget, error=v.error)

    def evolve(self, **changes: Any) -> OpComparison:
        """``dataclasses.replace(self, **changes)``, a tenth of its cost.

        The class has no ``__post_init__`` and its ``__init__`` only stores the fields, so
        copying the fields and updating them is the same result; ``replace`` builds all 49
        arguments again (12 us a row, several times per row of a comparison).
        """
        _check_names(changes)
        new = object.__new__(OpComparison)
        state = new.__dict__
        state.update(self.__dict__)
        if changes.keys() & _METRIC_ATTRS:
            changes = _gather_metrics(changes, self.metrics)
        state.update(changes)
        return new

    @classmethod
    def from_dict(cls, row: Mapping[str, Any]) -> OpComparison:
        """Inverse of :meth:`to_dict` (JSON values decoded)."""
        kwargs: dict[str, Any] = {}
        metrics: dict[str, float] = {}
        custom: dict[str, float] = {}
        for key, value in row.items():
            if key in _METRIC_KEYS:
                if value is not None:
                    metrics[key] = _decode(value)
            elif key in _PLAIN_FIELDS:
                kwargs[key] = _decode(value)
            else:
                custom[key] = _decode(value)
        for shape in ("shape_bench", "shape_target"):
            if kwargs.get(shape) is not None:
                kwargs[shape] = tuple(int(d) for d in kwargs[shape])
        return new_row(custom=custom, metrics=metrics, **kwargs)


class _MetricValue:
    """``row.<attr>`` of a built-in metric: ``row.metrics.get(key)`` (read-only)."""

    __slots__ = ("key",)

    def __init__(self, key: str) -> None:
        self.key = key

    def __get__(self, row: OpComparison | None, owner: type | None = None) -> Any:
        if row is None:
            return self
        return row.metrics.get(self.key)


for _key in METRIC_COLUMNS:
    setattr(OpComparison, attr_name(_key), _MetricValue(_key))

_FIELD_NAMES = frozenset(f.name for f in fields(OpComparison))
#: attribute name -> metric key (``within_1e_3`` -> ``within_1e-3``)
_METRIC_ATTRS = {attr_name(k): k for k in METRIC_COLUMNS}
_METRIC_KEYS = frozenset(METRIC_COLUMNS)
_PLAIN_FIELDS = _FIELD_NAMES - {"metrics", "custom"}
_NAMES = _FIELD_NAMES | _METRIC_ATTRS.keys()
# the fields without default, then every field with a plain one (in field order; the
# fields ``metrics`` and ``custom`` have a factory and are made per row)
_REQUIRED = tuple(
    f.name for f in fields(OpComparison) if f.default is MISSING and f.default_factory is MISSING
)
_DEFAULTS: dict[str, Any] = {
    f.name: f.default for f in fields(OpComparison) if f.name not in _REQUIRED
}


def _check_names(values: Mapping[str, Any]) -> None:
    if not values.keys() <= _NAMES:
        unknown = sorted(values.keys() - _NAMES)
        msg = f"OpComparison: no field {unknown[0]!r}."
        raise TypeError(msg)


def _gather_metrics(values: Mapping[str, Any], base: Mapping[str, float]) -> dict[str, Any]:
    """``values`` with metrics given by attribute name moved into its ``metrics`` (over
    ``values["metrics"]``, else ``base``); ``None`` means not computed: no key."""
    out = dict(values)
    metrics = dict(out.get("metrics", base))
    for attr in out.keys() & _METRIC_ATTRS:
        v = out.pop(attr)
        if v is None:
            metrics.pop(_METRIC_ATTRS[attr], None)
        else:
            metrics[_METRIC_ATTRS[attr]] = v
    out["metrics"] = metrics
    return out


def _fill(state: dict[str, Any], values: Mapping[str, Any]) -> None:
    """Store ``values`` (fields, or metrics by attribute name) in a new row's ``state``."""
    _check_names(values)
    try:
        for name in _REQUIRED:
            state[name] = values[name]
    except KeyError as exc:
        msg = f"OpComparison: no value for the required field {exc.args[0]!r}."
        raise TypeError(msg) from None
    state.update(_DEFAULTS)
    state["metrics"] = {}
    state["custom"] = {}
    if values.keys() & _METRIC_ATTRS:
        values = _gather_metrics(values, {})
    state.update(values)
    metrics = state["metrics"]
    if None in metrics.values():  # not computed: no key, so equal rows compare equal
        state["metrics"] = {k: v for k, v in metrics.items() if v is not None}


def new_row(**values: Any) -> OpComparison:
    """``OpComparison(**values)`` at a fraction of its cost (a comparison makes one per
    tensor pair): the frozen ``__init__`` would store each field through
    ``object.__setattr__``; the class has no ``__post_init__``, so filling a new instance's
    fields with the defaults and ``values`` is the same row (as :meth:`OpComparison.evolve`
    does). Metrics go in ``metrics`` (key -> value) or by attribute name.

    Raises:
        TypeError: An unknown field, or a field without default missing.
    """
    row = object.__new__(OpComparison)
    _fill(row.__dict__, values)
    return row


@dataclass(frozen=True)
class Advice:
    """One named mechanism with its evidence (see :mod:`tensorsight.compare.advisor`).

    Attributes:
        mechanism: Short id, e.g. ``bf16-overflow``, ``scale-error``, ``first-nan``.
        evidence: One or two sentences with the numbers that point to it.
        row: Position in ``Comparison.rows`` of the row it is about, if any.
    """

    mechanism: str
    evidence: str
    row: int | None = None

    SCHEMA_VERSION = SCHEMA_VERSION  # the board serves it as it is (data.AdviceInfo)


@dataclass(frozen=True)
class ReplayResult:
    """Relative errors (``||a - b|| / ||b||``) between the tensors of one replayed output.

    Attributes:
        op: The op replayed.
        tensor: The output compared (``output.0``).
        dtype: The target dtype the op was replayed in.
        replay_vs_float64: The op's own error in ``dtype`` on the bench inputs.
        target_vs_float64: The recorded target output against the float64 replay.
        bench_vs_float64: The recorded bench output against the float64 replay.
        target_vs_replay: The recorded target output against the replay in ``dtype``.
        op_explains_error: The replay in ``dtype`` reproduces the target output (within a
            quarter of the target's own error against float64).

    The board serves it as it is (``tensorsight.data.ReplayInfo`` is this class).
    """

    op: str
    tensor: str
    dtype: str
    replay_vs_float64: float
    target_vs_float64: float
    bench_vs_float64: float
    target_vs_replay: float
    op_explains_error: bool

    SCHEMA_VERSION = SCHEMA_VERSION


@dataclass(frozen=True)
class MissingPair:
    """A rank pair a comparison could not compare.

    Attributes:
        rank: The rank.
        reason: One sentence: the rank is in one dump only, or its task failed (and why).
    """

    rank: int
    reason: str


@dataclass(frozen=True)
class Comparison:
    """Everything a comparison found; returned by :func:`tensorsight.compare`.

    Attributes:
        bench: Path (or label) of the reference dump.
        target: Path (or label) of the dump under test.
        rows: One :class:`OpComparison` per tensor, in bench execution order per rank
            (forward, then backward); unmatched target tensors follow with a reason.
        first_divergence_row: Position in ``rows`` of the first divergence, or ``None``.
        profile: Verdict profile used (``budget`` or ``classic``).
        metrics: Metric keys computed for tensor rows.
        ranks: Ranks compared.
        step: Step compared (``None``: the first step of each dump).
        advice: Mechanisms the advisor found.
        incomplete: Why an input dump is incomplete (a run cut off, a step without ops),
            when it was compared anyway (``allow_incomplete=True``); ``None`` otherwise.
        not_comparable: Why the runs cannot be said to agree (fewer than
            :data:`MIN_MATCHED_FRACTION` of the bench tensors found a counterpart);
            ``None`` otherwise.
        missing: Rank pairs not compared (a rank in one dump only, a task that failed);
            the result then never "agrees" and its first divergence may lie elsewhere.
        schema_version: :data:`SCHEMA_VERSION`.
    """

    bench: str
    target: str
    rows: tuple[OpComparison, ...]
    first_divergence_row: int | None = None
    profile: str = "budget"
    metrics: tuple[str, ...] = ()
    ranks: tuple[int, ...] = (0,)
    step: int | None = None
    advice: tuple[Advice, ...] = ()
    incomplete: str | None = None
    not_comparable: str | None = None
    missing: tuple[MissingPair, ...] = ()
    schema_version: int = SCHEMA_VERSION

    # ------------------------------------------------------------------ queries
    @property
    def first_divergence(self) -> OpComparison | None:
        """The first row, in execution order, whose added error exceeds its budget."""
        if self.first_divergence_row is None:
            return None
        return self.rows[self.first_divergence_row]

    @property
    def first_divergence_rank(self) -> int | None:
        """Rank of :attr:`first_divergence` (multi-rank comparisons)."""
        row = self.first_divergence
        return None if row is None else row.rank

    @property
    def counts(self) -> dict[str, int]:
        """Rows per verdict, ``one_sided`` (rows on one side by design, counted apart from
        the verdicts) and ``unmatched`` (the other rows without a counterpart)."""
        out = dict.fromkeys(VERDICTS, 0)
        one_sided = unmatched = 0
        for r in self.rows:
            if r.one_sided:
                one_sided += 1
                continue
            out[r.verdict] += 1
            unmatched += r.match == "unmatched"
        out["one_sided"] = one_sided
        out["unmatched"] = unmatched
        return out

    @property
    def agrees(self) -> bool:
        """True when no row is an ``error`` and the input was complete and comparable."""
        return self.status == "agree"

    @property
    def status(self) -> str:
        """``diverged`` (an error row), ``not comparable`` (incomplete input, a rank pair
        missing, or too few tensors paired) or ``agree``."""
        if any(r.verdict == "error" for r in self.rows):
            return "diverged"
        if self.incomplete is not None or self.not_comparable is not None or self.missing:
            return "not comparable"
        return "agree"

    @property
    def header_note(self) -> str | None:
        """The line every report puts first when the result cannot be trusted as "agree"."""
        if self.incomplete is not None:
            return f"INCOMPLETE: {self.incomplete}"
        if self.missing:
            return f"INCOMPLETE: {self.missing_line}"
        if self.not_comparable is not None:
            return f"NOT COMPARABLE: {self.not_comparable}"
        return None

    @property
    def missing_line(self) -> str | None:
        """One line naming the rank pairs not compared (``None`` when none is missing)."""
        if not self.missing:
            return None
        first = self.missing[0]
        more = f" (and {len(self.missing) - 1} more)" if len(self.missing) > 1 else ""
        n = len(self.ranks) + len(self.missing)
        return (
            f"rank {first.rank} not compared: {first.reason.rstrip('.')}{more}; "
            f"{len(self.ranks)} of {n} rank pairs compared"
        )

    def __iter__(self) -> Iterator[OpComparison]:
        return iter(self.rows)

    def __len__(self) -> int:
        return len(self.rows)

    # ------------------------------------------------------------------ exports
    def to_dict(self, *, rows: bool = True) -> dict[str, Any]:
        """The JSON document of the module docstring, as Python objects (without its
        ``rows`` when ``rows`` is false)."""
        doc = {
            "schema_version": self.schema_version,
            "format": FORMAT_NAME,
            "bench": self.bench,
            "target": self.target,
            "profile": self.profile,
            "metrics": list(self.metrics),
            "ranks": list(self.ranks),
            "step": self.step,
            "first_divergence": self.first_divergence_row,
            "first_divergence_rank": self.first_divergence_rank,
            "incomplete": self.incomplete,
            "not_comparable": self.not_comparable,
            "missing": [asdict(m) for m in self.missing],
            "advice": [asdict(a) for a in self.advice],
        }
        if rows:
            doc["rows"] = [_row_json(r) for r in self.rows]
        return doc

    def to_json(self, path: str | Path | None = None, *, indent: int | None = 1) -> str:
        """Serialize to JSON (module docstring); also write it to ``path`` when given.

        Example:
            >>> c = Comparison("a", "b", rows=())
            >>> Comparison.from_json(c.to_json()) == c
            True
        """
        doc = self.to_dict(rows=False)
        # one row per line: json's C encoder runs only without indent, and the Python one
        # took ~60 us a row (0.17 s of a 0.9 s compare of 2,800 tensors)
        enc = json.JSONEncoder(allow_nan=False, ensure_ascii=False).encode
        rows = [_row_text(r, enc) for r in self.rows]
        if indent is None:
            head = json.dumps(doc, allow_nan=False, ensure_ascii=False)
            text = f'{head[:-1]}, "rows": [{", ".join(rows)}]}}'
        else:
            head = json.dumps(doc, indent=indent, allow_nan=False, ensure_ascii=False)
            pad = " " * indent
            body = f",\n{pad}{pad}".join(rows)
            body = f"[\n{pad}{pad}{body}\n{pad}]" if rows else "[]"
            text = f'{head[:-2]},\n{pad}"rows": {body}\n}}'
        if path is not None:
            Path(path).write_text(text + "\n", encoding="utf-8")
        return text

    @classmethod
    def from_json(cls, source: str | Path) -> Comparison:
        """Read a JSON export (a path or the JSON text itself).

        Raises:
            InputFileError: The file cannot be read or is not a comparison export.
            SchemaVersionError: It was written by a newer schema version.
        """
        text = str(source)
        label = "<text>"
        if not text.lstrip().startswith("{"):
            label = text
            try:
                text = Path(source).read_text(encoding="utf-8")
            except OSError as exc:
                msg = f"Comparison file {label!r}: cannot be read ({exc}). Check the path."
                raise InputFileError(msg) from exc
        try:
            raw = json.loads(text)
        except ValueError as exc:
            msg = f"Comparison file {label!r}: not valid JSON ({exc}). Expected a to_json export."
            raise InputFileError(msg) from exc
        if not isinstance(raw, dict) or raw.get("format") != FORMAT_NAME:
            msg = (
                f"Comparison file {label!r}: not a comparison export. "
                f"Expected format {FORMAT_NAME!r}. Write it with Comparison.to_json()."
            )
            raise InputFileError(msg)
        version = raw.get("schema_version")
        if not isinstance(version, int) or version > SCHEMA_VERSION:
            msg = (
                f"Comparison file {label!r}: schema version {version!r} is newer than this "
                f"tensorsight knows. Expected <= {SCHEMA_VERSION}. Upgrade tensorsight."
            )
            raise SchemaVersionError(msg)
        try:
            return cls(
                bench=str(raw["bench"]),
                target=str(raw["target"]),
                rows=tuple(OpComparison.from_dict(r) for r in raw["rows"]),
                first_divergence_row=raw.get("first_divergence"),
                profile=str(raw.get("profile", "budget")),
                metrics=tuple(raw.get("metrics", ())),
                ranks=tuple(int(r) for r in raw.get("ranks", (0,))),
                step=raw.get("step"),
                advice=tuple(Advice(**a) for a in raw.get("advice", ())),
                incomplete=raw.get("incomplete"),
                not_comparable=raw.get("not_comparable"),
                missing=tuple(
                    MissingPair(int(m["rank"]), str(m["reason"])) for m in raw.get("missing", ())
                ),
                schema_version=version,
            )
        except (KeyError, TypeError, ValueError) as exc:
            msg = f"Comparison file {label!r}: malformed ({exc}). Expected a to_json export."
            raise InputFileError(msg) from exc

    # Renderers other than the JSON codec live in compare/report/ and are looked up in its
    # registry (REPORT_FORMATS): this module imports no renderer, so no import circle.
    def to_csv(self, path: str | Path | None = None) -> str:
        """CSV with one row per tensor and :data:`COLUMNS` as header; written to ``path``."""
        return cast(str, report.render(self, "csv", path))

    def to_excel(self, path: str | Path) -> Path:
        """XLSX workbook (needs openpyxl: ``pip install 'tensorsight[compare]'``)."""
        return cast(Path, report.render(self, "xlsx", path))

    def to_html(self, path: str | Path | None = None) -> str:
        """Standalone HTML report (no network access needed to view it)."""
        return cast(str, report.render(self, "html", path))

    def to_node_data(self, path: str | Path | None = None) -> str:
        """Model Explorer node-data JSON (per-module worst error), written to ``path``."""
        return cast(str, report.render(self, "node_data", path))

    def to_report(self, fmt: str, path: str | Path | None = None) -> Any:
        """Render in any registered report format, third-party ones included; written to
        ``path`` when given (:data:`tensorsight.compare.report.REPORT_FORMATS`).

        Returns:
            The report's text, or the path written for a binary format (``xlsx``).

        Raises:
            UsageError: ``fmt`` is not registered (the message lists the formats).
        """
        return report.render(self, fmt, path)

    def summary(self, *, top: int = 5) -> str:
        """Plain-text summary: first divergence, top offenders, counts, advice."""
        return cast(str, report.render(self, "summary", top=top))


# a row's columns in three runs: fields before the metrics, the metrics, fields after
_HEAD = IDENTITY_COLUMNS
_TAIL = tuple(attr_name(c) for c in COLUMNS[len(IDENTITY_COLUMNS) + len(METRIC_COLUMNS) :])
assert (*_HEAD, *METRIC_COLUMNS, *_TAIL) == COLUMNS
_NO_METRICS = dict.fromkeys(METRIC_COLUMNS)


def _row_values(row: OpComparison) -> dict[str, Any]:
    """Column -> value in :data:`COLUMNS` order (without custom metrics), read off the
    row's fields and its ``metrics`` mapping."""
    state = vars(row)
    get = state.__getitem__
    out = dict(zip(_HEAD, map(get, _HEAD), strict=True))
    metrics = state["metrics"]
    if metrics:
        out.update(zip(METRIC_COLUMNS, map(metrics.get, METRIC_COLUMNS), strict=True))
    else:
        out.update(_NO_METRICS)
    out.update(zip(_TAIL, map(get, _TAIL), strict=True))
    return out


def _row_json(row: OpComparison) -> dict[str, Any]:
    """``{k: _encode(v) for k, v in row.to_dict().items()}``, read off the row's fields."""
    out = _row_values(row)
    for c, v in out.items():
        if type(v) is float:
            if v - v != 0:  # inf or nan
                out[c] = "nan" if v != v else ("inf" if v > 0 else "-inf")
        elif type(v) is tuple:
            out[c] = list(v)
    if row.custom:
        out.update((k, _encode(v)) for k, v in row.custom.items())
    return out


def _row_text(row: OpComparison, enc: Callable[[Any], str]) -> str:
    """``enc(_row_json(row))``; a row of finite numbers without custom metrics (nearly all)
    skips the per-value checks: the encoder refuses NaN and infinities itself."""
    if not row.custom:
        out = _row_values(row)
        for c in ("shape_bench", "shape_target"):
            if out[c] is not None:
                out[c] = list(out[c])
        try:
            return enc(out)
        except ValueError:  # a non-finite number: spelled as a string below
            pass
    return enc(_row_json(row))


def _encode(v: Any) -> Any:
    if isinstance(v, float) and not math.isfinite(v):
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")
    if isinstance(v, tuple):
        return list(v)
    return v


def _decode(v: Any) -> Any:
    if v in ("nan", "inf", "-inf"):
        return float(v)
    return v
