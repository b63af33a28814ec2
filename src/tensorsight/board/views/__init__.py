"""Board views: the built-ins in tab order, plus third parties from ``tensorsight.views``.

Each entry is a lazy ``"module:Class"`` string; a view that fails to import is listed by
``GET /api/views`` as disabled with the reason and never crashes the board. This list is the
one source of truth for the tabs: the shell draws them from ``GET /api/views``;
``web/src/views/registry.ts`` only maps a built-in name to its bundled code (a test keeps
the two name sets equal), and a third-party view brings its own ES module through
:meth:`View.frontend`.
"""

from __future__ import annotations

from tensorsight._registry import Registry
from tensorsight.board.views.base import FrontendMeta, View, ViewInfo

__all__ = ["BUILTIN_VIEWS", "FrontendMeta", "View", "ViewInfo", "view_registry"]

# name -> "module:Class"; order = tab order.
BUILTIN_VIEWS: dict[str, str] = {
    "scalars": "tensorsight.board.views.scalars:ScalarsView",
    "histograms": "tensorsight.board.views.histograms:HistogramsView",
    "images": "tensorsight.board.views.images:ImagesView",
    "text": "tensorsight.board.views.text:TextView",
    "graphs": "tensorsight.board.views.graphs:GraphsView",
    "precision": "tensorsight.board.views.precision:PrecisionView",
    "tensors": "tensorsight.board.views.tensors:TensorsView",
    "data_graphs": "tensorsight.board.views.data_graphs:DataGraphsView",
    "landscapes": "tensorsight.board.views.landscapes:LandscapesView",
    "comparison": "tensorsight.board.views.comparison:ComparisonView",
    "hparams": "tensorsight.board.views.hparams:HParamsView",
    "pr_curves": "tensorsight.board.views.pr_curves:PrCurvesView",
    "audio": "tensorsight.board.views.audio:AudioView",
    "embeddings": "tensorsight.board.views.embeddings:EmbeddingsView",
    "custom_scalars": "tensorsight.board.views.custom_scalars:CustomScalarsView",
    "mesh": "tensorsight.board.views.mesh:MeshView",
    "monitor": "tensorsight.board.views.monitor:MonitorView",
}


def view_registry() -> Registry[type[View]]:
    """A fresh registry holding the built-in views and the entry-point group."""
    registry: Registry[type[View]] = Registry("view", entry_point_group="tensorsight.views")
    for name, spec in BUILTIN_VIEWS.items():
        registry.add(name, spec)
    return registry
