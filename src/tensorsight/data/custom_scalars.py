"""Custom-scalar layouts (``add_custom_scalars``): the user's categories of charts.

A *multiline* chart plots every scalar tag that matches one of its regular expressions
(TensorBoard's rule: ``re.search`` on the tag); a *margin* chart plots a value tag with the
band between a lower and an upper tag. Each run may hold a layout; the board shows their
union: categories merged by title, charts by title within a category (first one wins).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["LayoutCategory", "LayoutChart", "MarginSeries", "ScalarLayout", "merge_layouts"]


@dataclass(frozen=True)
class MarginSeries:
    """The three scalar tags of a margin chart's series."""

    value: str
    lower: str
    upper: str


@dataclass(frozen=True)
class LayoutChart:
    """One chart: ``kind`` ``"multiline"`` (``tags`` are regexes) or ``"margin"`` (``margins``)."""

    title: str
    kind: str
    tags: tuple[str, ...] = ()
    margins: tuple[MarginSeries, ...] = ()


@dataclass(frozen=True)
class LayoutCategory:
    """A titled group of charts; ``closed`` asks the board to show it folded."""

    title: str
    charts: tuple[LayoutChart, ...]
    closed: bool = False


@dataclass(frozen=True)
class ScalarLayout:
    """A run's custom-scalar layout (or the union of several)."""

    categories: tuple[LayoutCategory, ...]

    SCHEMA_VERSION = 1

    @classmethod
    def from_decoded(
        cls, decoded: Iterable[tuple[str, bool, Iterable[tuple[str, str, Iterable[object]]]]]
    ) -> ScalarLayout:
        """From :func:`tensorsight.summary.kinds.custom_scalars_decode.decode_layout`'s tuples."""
        cats = []
        for title, closed, charts in decoded:
            out = []
            for ctitle, kind, content in charts:
                if kind == "margin":
                    margins = tuple(MarginSeries(*(str(t) for t in s)) for s in content)  # type: ignore[attr-defined]
                    out.append(LayoutChart(ctitle, "margin", margins=margins))
                else:
                    out.append(
                        LayoutChart(ctitle, "multiline", tags=tuple(str(t) for t in content))
                    )
            cats.append(LayoutCategory(title, tuple(out), closed))
        return cls(tuple(cats))


def merge_layouts(layouts: Iterable[ScalarLayout]) -> ScalarLayout:
    """The union of ``layouts``: categories by title in first-seen order, charts likewise."""
    order: list[str] = []
    charts: dict[str, dict[str, LayoutChart]] = {}
    closed: dict[str, bool] = {}
    for layout in layouts:
        for cat in layout.categories:
            if cat.title not in charts:
                order.append(cat.title)
                charts[cat.title] = {}
                closed[cat.title] = cat.closed
            for chart in cat.charts:
                charts[cat.title].setdefault(chart.title, chart)
    return ScalarLayout(
        tuple(LayoutCategory(t, tuple(charts[t].values()), closed[t]) for t in order)
    )
