"""The mesh view: point clouds and triangle meshes of ``add_mesh``, one 3-D card per run.

``add_mesh`` (torch's writer, tensorboardX's and ours) stores a mesh as up to three tags of
kind ``mesh``: ``<name>_VERTEX``, ``<name>_FACE`` and ``<name>_COLOR`` (tensorboardX:
``<name>_1``, ``_2``, ``_3``). ``GET /meshes`` lists
the meshes by name (a mesh is a ``_VERTEX`` tag); ``GET /mesh`` answers one run's mesh at a
step with its parts as flat arrays. See ``docs/http_api/mesh.md``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from tensorsight.board.errors import InvalidArgument, NotFound
from tensorsight.board.views.base import (
    View,
    int_param,
    lookup,
    offload_json,
    read_records,
    require_param,
    require_runs,
)

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import BaseRoute

    from tensorsight.data import DataProvider

__all__ = ["MAX_FACES", "MAX_VERTICES", "MeshView", "mesh_impl", "meshes_impl"]

MAX_RUNS = 500  # runs per /meshes request (the page names every selected run)
MAX_VERTICES = 200_000  # a point cloud past this is thinned evenly; a mesh sends its used ones
MAX_FACES = 200_000  # a mesh past this is refused with a sentence (thinning would tear it)
PARTS = ("VERTEX", "FACE", "COLOR")
WHAT = "Mesh"


#: Part -> the tag suffixes it is stored under: torch's writer and ours name the part,
#: tensorboardX numbers it (``MeshPluginData.ContentType``).
SUFFIXES = {"VERTEX": ("_VERTEX", "_1"), "FACE": ("_FACE", "_2"), "COLOR": ("_COLOR", "_3")}


def _name(tag: str) -> str | None:
    for suffix in SUFFIXES["VERTEX"]:
        if tag.endswith(suffix) and len(tag) > len(suffix):
            return tag[: -len(suffix)]
    return None


def _tag(tags: Sequence[str], name: str, part: str) -> str | None:
    """The tag ``part`` of mesh ``name`` is stored under in a run with ``tags``."""
    return next((name + s for s in SUFFIXES[part] if name + s in tags), None)


def meshes_impl(provider: DataProvider, runs: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """The meshes of the given runs (all when ``None``): ``[{name, runs}]`` by name."""
    by_name: dict[str, set[str]] = {}
    wanted = None if runs is None else set(runs)
    for info in provider.list_runs():
        if wanted is not None and info.name not in wanted:
            continue
        for tag in info.tags.get("mesh", ()):
            name = _name(tag)
            if name is not None:
                by_name.setdefault(name, set()).add(info.name)
    return [{"name": n, "runs": sorted(by_name[n])} for n in sorted(by_name)]


def _rgb(colors: np.ndarray) -> list[int]:
    """Colours as flat 0-255 integers (NaN as 0, out-of-range values clipped)."""
    return np.clip(np.nan_to_num(colors), 0, 255).round().astype(np.int64).reshape(-1).tolist()  # type: ignore[no-any-return]


def _at(records: Sequence[Any], step: int) -> Any | None:
    found = [r for r in records if r.step == step]
    return found[-1] if found else None


def mesh_impl(
    provider: DataProvider, run: str, name: str, step: int | None = None, sample: int = 0
) -> dict[str, Any]:
    """``run``'s mesh ``name`` at ``step`` (``None``: the newest), batch entry ``sample``.

    Returns:
        ``{run, name, step, wall_time, steps, batch, sample, vertex_count, vertices,
        faces, colors, config, downsampled}``: ``vertices`` flat ``x, y, z, ...``; ``faces``
        flat vertex indices, three per triangle (``None`` for a point cloud); ``colors``
        flat ``r, g, b`` 0-255 per vertex (``None`` when not written); ``config`` the
        writer's ``config_dict`` JSON text.

    Raises:
        NotFound: No such mesh, step or batch entry.
        InvalidArgument: The mesh has more than :data:`MAX_FACES` faces.
    """
    try:
        tags = provider.run_info(run).tags.get("mesh", ())
    except KeyError:
        tags = ()
    tag = _tag(tags, name, "VERTEX") or f"{name}_VERTEX"
    lookup(provider, "mesh", run, tag)
    vertices = read_records(provider, "mesh", run, tag, what=WHAT)
    steps = sorted({int(r.step) for r in vertices})
    if step is None:
        step = steps[-1]
    vertex = _at(vertices, step)
    if vertex is None:
        msg = f"Mesh {name[:200]!r} of run {run[:200]!r} has no record at step {step}."
        raise NotFound(msg)
    batch = int(vertex.data.shape[0])
    if not 0 <= sample < batch:
        msg = f"Mesh {name[:200]!r} at step {step} has {batch} batch entries; got sample {sample}."
        raise NotFound(msg)
    others: dict[str, Any] = {}
    for part in PARTS[1:]:
        part_tag = _tag(tags, name, part)
        if part_tag is not None:
            rec = _at(provider.read_records(run, "mesh", part_tag), step)
            if rec is not None and int(rec.data.shape[0]) > sample:
                others[part] = np.asarray(rec.data[sample])
    points = np.asarray(vertex.data[sample], dtype=np.float64)
    n = int(points.shape[0])
    faces = others.get("FACE")
    colors = others.get("COLOR")
    if colors is not None and colors.shape[0] != n:
        colors = None  # colours for another vertex count cannot be matched up
    downsampled = False
    if faces is not None:
        if faces.shape[0] > MAX_FACES:
            msg = (
                f"Mesh {name[:200]!r} at step {step} has {faces.shape[0]:,} faces. Expected at "
                f"most {MAX_FACES:,} for the board; log a simplified mesh."
            )
            raise InvalidArgument(msg)
        idx = faces.astype(np.int64)
        idx = idx[((idx >= 0) & (idx < n)).all(axis=1)]  # a face naming no vertex is left out
        if n > MAX_VERTICES:  # only the vertices the faces name are sent: 3 per face at most
            used, inverse = np.unique(idx, return_inverse=True)
            points = points[used]
            colors = None if colors is None else colors[used]
            idx = inverse.reshape(idx.shape)
        faces = idx
    elif n > MAX_VERTICES:
        keep = np.linspace(0, n - 1, MAX_VERTICES).astype(np.int64)
        points = points[keep]
        colors = None if colors is None else colors[keep]
        downsampled = True
    finite = np.isfinite(points).all(axis=1)
    if not finite.all() and faces is None:
        points = points[finite]
        colors = None if colors is None else colors[finite]
    elif not finite.all():
        points = np.where(np.isfinite(points), points, 0.0)
    return {
        "run": run,
        "name": name,
        "step": int(step),
        "wall_time": float(vertex.wall_time),
        "steps": steps,
        "batch": batch,
        "sample": sample,
        "vertex_count": n,
        "vertices": np.round(points, 6).reshape(-1).tolist(),
        "faces": None if faces is None else faces.reshape(-1).tolist(),
        "colors": None if colors is None else _rgb(colors),
        "config": vertex.json_config,
        "downsampled": downsampled,
    }


class MeshView(View):
    """A 3-D viewer per run and mesh: orbit camera, step slider, batch entry, axis labels."""

    name = "mesh"
    title = "Mesh"
    kind = "mesh"

    def routes(self) -> Sequence[BaseRoute]:
        from starlette.routing import Route

        return [Route("/meshes", self._meshes), Route("/mesh", self._mesh)]

    async def _meshes(self, request: Request) -> Response:
        from starlette.responses import JSONResponse

        runs = request.query_params.getlist("run") or None
        if runs is not None:
            runs = require_runs(request, MAX_RUNS)
        return JSONResponse({"meshes": meshes_impl(self.provider, runs)})

    async def _mesh(self, request: Request) -> Response:
        run = require_param(request, "run")
        name = require_param(request, "name")
        raw = request.query_params.get("step")
        step = None if raw in (None, "") else int_param(request, "step", 0, -(2**62), 2**62)
        sample = int_param(request, "sample", 0, 0, 2**31)
        return await offload_json(request, mesh_impl, self.provider, run, name, step, sample)
