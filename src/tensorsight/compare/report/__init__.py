"""Report formats of a comparison: one registry, one module per format.

A format is a :class:`ReportFormat`: its name (what ``tensorsight compare --format`` takes),
the suffix of its file (``comparison<suffix>`` in the output folder) and a render function.
:data:`REPORT_FORMATS` maps each name to ``"tensorsight.compare.report.<module>:FORMAT"``,
imported on first use; the command line lists and writes whatever is registered, and the
``Comparison.to_*`` methods look their format up here. Built in: ``csv``, ``xlsx``
(openpyxl), ``json`` (``Comparison.to_json``, the result's own codec), ``html`` (standalone
page), ``node_data`` (Model Explorer node data) and ``summary`` (the console text,
:mod:`~tensorsight.compare.report.console`).

Third parties add formats through the entry-point group ``tensorsight.report_formats``
(name = format name, value = ``"package.module:FORMAT"``); built-in names win. A format
whose module fails to import is listed unavailable and never breaks the others.

This module imports no renderer and nothing of ``compare.result`` (``result`` imports this
module for its ``to_*`` methods; the renderers import ``result``), so the two never form an
import circle: a comparison is typed ``Any`` here.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tensorsight._registry import Registry
from tensorsight.errors import RegistryError, UsageError

__all__ = ["REPORT_FORMATS", "ReportFormat", "cell", "get_format", "render", "write"]

#: ``render(comparison, path=None, **options)``: the report's text, also written to ``path``
#: when given; a binary format returns the path it wrote (and needs one).
Renderer = Callable[..., Any]


@dataclass(frozen=True)
class ReportFormat:
    """One report format.

    Attributes:
        name: Registry key and ``--format`` value (lowercase, e.g. ``csv``).
        suffix: Appended to ``comparison`` for the file name (``.csv``, ``.node_data.json``).
        render: ``render(comparison, path=None, **options)`` returning the text (and writing
            it to ``path`` when given), or, for a binary format, writing ``path`` and returning
            it. Options are the format's own keywords (``summary``: ``top``).
        description: One line for ``--help`` and docs.
        binary: The format has no text form: ``render`` needs ``path``.
    """

    name: str
    suffix: str
    render: Renderer
    description: str = ""
    binary: bool = False


REPORT_FORMATS: Registry[ReportFormat] = Registry(
    "report format", entry_point_group="tensorsight.report_formats"
)
REPORT_FORMATS.add("csv", "tensorsight.compare.report.csv:FORMAT")
REPORT_FORMATS.add("xlsx", "tensorsight.compare.report.xlsx:FORMAT")
REPORT_FORMATS.add("json", "tensorsight.compare.report.json:FORMAT")
REPORT_FORMATS.add("html", "tensorsight.compare.report.html:FORMAT")
REPORT_FORMATS.add("node_data", "tensorsight.compare.report.node_data:FORMAT")
REPORT_FORMATS.add("summary", "tensorsight.compare.report.console:FORMAT")


def get_format(name: str) -> ReportFormat:
    """The registered format ``name``.

    Raises:
        UsageError: ``name`` is not registered (the message lists the formats), its module
            cannot be imported, or it is not a :class:`ReportFormat`.
    """
    try:
        fmt: object = REPORT_FORMATS.get(name)  # an entry point may hold anything
    except RegistryError as exc:
        raise UsageError(str(exc)) from exc
    if not isinstance(fmt, ReportFormat):
        msg = (
            f"Report format {name!r}: registered as {type(fmt).__name__}. "
            "Expected a tensorsight.compare.report.ReportFormat."
        )
        raise UsageError(msg)
    return fmt


def render(comparison: Any, name: str, path: str | Path | None = None, **options: Any) -> Any:
    """Render ``comparison`` in format ``name``; also write it to ``path`` when given.

    Returns what the format's render function returns: the text, or the path of a binary
    file. ``options`` go to the render function (``summary``: ``top``).

    Raises:
        UsageError: An unknown format, or no ``path`` for a binary format.
    """
    fmt = get_format(name)
    if fmt.binary and path is None:
        msg = f"Report format {name!r}: binary, needs a file path. Pass path='report{fmt.suffix}'."
        raise UsageError(msg)
    return fmt.render(comparison, None if path is None else Path(path), **options)


def write(comparison: Any, name: str, folder: str | Path) -> Path:
    """Write ``folder/comparison<suffix>`` in format ``name`` and return its path."""
    fmt = get_format(name)
    path = Path(folder) / f"comparison{fmt.suffix}"
    fmt.render(comparison, path)
    return path


def cell(value: Any) -> Any:
    """One value as a report cell: shapes joined, ``None`` empty, floats kept."""
    if value is None:
        return ""
    if isinstance(value, tuple):
        return "[" + ",".join(str(v) for v in value) + "]"
    if isinstance(value, float) and math.isnan(value):
        return "nan"
    return value
