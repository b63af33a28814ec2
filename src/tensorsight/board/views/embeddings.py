"""The embeddings view: TensorBoard's projector, PCA on the server, drawn in 2-D or 3-D.

Serves ``add_embedding`` output of torch's writer, tensorboardX and ours (the files that
``projector_config.pbtxt`` names). ``GET /embeddings`` lists one tag's embeddings of a run
(one per step); ``GET /projection`` answers a PCA to 2 or 3 components (the matrix centred,
the principal axes of at most :data:`MAX_FIT_POINTS` sampled points, explained variance per
component)
of at most ``max_points`` points, sampled evenly at random with a fixed seed when there are
more (the answer says so), with their metadata; ``GET /neighbors`` the ``k`` nearest points
of one point over the whole matrix (cosine or euclidean); ``GET /sprite`` the thumbnail
image (PNG or JPEG only, size-capped). See ``docs/http_api/embeddings.md``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from tensorsight.board.errors import InvalidArgument, NotFound, PublicError
from tensorsight.board.views.base import (
    View,
    int_param,
    lookup,
    offload,
    offload_json,
    require_param,
)

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import BaseRoute

    from tensorsight.data import DataProvider, EmbeddingData

__all__ = [
    "DEFAULT_POINTS",
    "MAX_DIMS",
    "MAX_FIT_POINTS",
    "MAX_NEIGHBORS",
    "MAX_POINTS",
    "MAX_SPRITE_BYTES",
    "EmbeddingsView",
    "embeddings_impl",
    "neighbors_impl",
    "pca",
    "projection_impl",
    "sprite_impl",
]

DEFAULT_POINTS = 10_000  # points drawn unless the client asks for fewer or more
MAX_POINTS = 50_000  # the most points one projection returns
MAX_FIT_POINTS = 10_000  # points the axes are fitted on (sampled); all drawn points are projected
MAX_NEIGHBORS = 100
MAX_DIMS = 50  # components one projection returns: 2-3 to draw, 50 as t-SNE's input
MAX_SPRITE_BYTES = 16 * 1024 * 1024
METRICS = ("cosine", "euclidean")
SPRITE_TYPES = frozenset({"image/png", "image/jpeg"})
_SEED = 0


class UnreadableEmbedding(PublicError):
    """The embedding's files cannot be read (HTTP 422); the message names file and line."""

    http_status = 422
    code = "unreadable"


class SpriteTooLarge(PublicError):
    """A sprite over the size the route sends (HTTP 413)."""

    http_status = 413
    code = "too_large"


def _load(provider: DataProvider, run: str, tag: str, step: int) -> EmbeddingData:
    lookup(provider, "embeddings", run, tag)
    try:
        return provider.load_embedding(run, tag, step)
    except KeyError:
        msg = f"Embedding tag {tag[:200]!r} of run {run[:200]!r} has nothing at step {step}."
        raise NotFound(msg) from None
    except ValueError as exc:
        raise UnreadableEmbedding(str(exc)[:2000]) from None


def embeddings_impl(provider: DataProvider, run: str, tag: str) -> dict[str, Any]:
    """The embeddings of ``tag`` in ``run``, one per step.

    Returns:
        ``{"run", "tag", "embeddings": [{step, tensor_name, has_metadata, has_sprite,
        sprite_dim}]}`` in step order (``sprite_dim`` is ``[width, height]`` or null).
    """
    lookup(provider, "embeddings", run, tag)
    try:
        entries = provider.read_records(run, "embeddings", tag)
    except KeyError:
        entries = []
    return {
        "run": run,
        "tag": tag,
        "embeddings": [
            {
                "step": e.step,
                "tensor_name": e.tensor_name,
                "has_metadata": e.has_metadata,
                "has_sprite": e.sprite_dim is not None,
                "sprite_dim": list(e.sprite_dim) if e.sprite_dim else None,
            }
            for e in entries
        ],
    }


def _sample(n: int, cap: int) -> NDArray[np.int64]:
    """Sorted indices of ``min(n, cap)`` points: all of them, or a seeded random sample."""
    if n <= cap:
        return np.arange(n, dtype=np.int64)
    rng = np.random.default_rng(_SEED)
    return np.sort(rng.choice(n, size=cap, replace=False)).astype(np.int64)


def pca(
    matrix: NDArray[np.floating[Any]], components: int, fit: NDArray[np.int64] | None = None
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """Principal components of ``matrix`` (rows = points), fitted on the rows ``fit``.

    The rows are centred on the fitted rows' mean; each component's sign is fixed so that its
    largest loading is positive (an SVD's signs are otherwise arbitrary). Components beyond
    the data's rank or dimensions are zeros.

    Returns:
        ``(mean, axes, explained)``: the ``(dims,)`` mean, ``(components, dims)`` unit axes,
        and each component's share of the fitted rows' total variance.
    """
    x = np.asarray(matrix, dtype=np.float64)
    sample = x if fit is None else x[fit]
    mean = sample.mean(axis=0) if sample.shape[0] else np.zeros(x.shape[1])
    centred = sample - mean
    total = float(np.square(centred).sum())
    axes = np.zeros((components, x.shape[1]))
    explained = np.zeros(components)
    if centred.shape[0] >= 1 and x.shape[1] >= 1 and total > 0:
        if centred.shape[0] > centred.shape[1]:
            # more points than dims: the eigenvectors of the dims x dims scatter matrix are
            # the SVD's axes, cheaper when the points far outnumber the dims
            w, v = np.linalg.eigh(centred.T @ centred)
            order = np.argsort(w)[::-1]
            s2, vt = np.clip(w[order], 0.0, None), v[:, order].T
        else:
            _, s, vt = np.linalg.svd(centred, full_matrices=False)
            s2 = np.square(s)
        # directions without spread are arbitrary (BLAS-dependent): drawn as zeros instead
        k = min(components, int((s2 > s2[0] * 1e-12).sum()))
        axes[:k] = vt[:k]
        explained[:k] = s2[:k] / total
        for row in axes[:k]:
            if row[np.argmax(np.abs(row))] < 0:
                row *= -1
    return mean, axes, explained


def projection_impl(
    provider: DataProvider,
    run: str,
    tag: str,
    step: int,
    dims: int = 2,
    max_points: int = DEFAULT_POINTS,
) -> dict[str, Any]:
    """A PCA projection of the embedding of ``tag`` at ``step`` to ``dims`` components.

    Returns:
        ``{run, tag, step, tensor_name, points, features, shown, sampled, indices, coords,
        explained_variance, columns, metadata, sprite_dim, problems}``: ``indices`` are the
        shown points' rows in the matrix (all of them unless ``sampled``), ``coords`` one
        ``[x, y(, z)]`` per shown point, ``metadata`` one row of strings per shown point
        (``columns`` names them; both empty without labels), ``explained_variance`` each
        component's share of the variance of the points the axes were fitted on (at most
        :data:`MAX_FIT_POINTS`, ``fit_points`` says how many).
    """
    data = _load(provider, run, tag, step)
    matrix = data.matrix
    n, features = int(matrix.shape[0]), int(matrix.shape[1])
    problems = list(data.problems)
    shown = _sample(n, max_points)
    fit = shown if shown.size <= MAX_FIT_POINTS else shown[_sample(shown.size, MAX_FIT_POINTS)]
    values = matrix[shown].astype(np.float64)
    bad = ~np.isfinite(values)
    if bad.any():
        rows = int(bad.any(axis=1).sum())
        problems.append(
            f"{rows} of the shown points hold NaN or Inf values; they are drawn as if those "
            "values were 0."
        )
        values[bad] = 0.0
    positions = np.searchsorted(shown, fit)
    mean, axes, explained = pca(values, dims, positions)
    coords = (values - mean) @ axes.T
    rows_out: list[list[str]] = []
    if data.rows:
        rows_out = [list(data.rows[i]) for i in shown.tolist()]
    return {
        "run": run,
        "tag": tag,
        "step": data.step,
        "tensor_name": data.tensor_name,
        "points": n,
        "features": features,
        "shown": int(shown.size),
        "sampled": bool(shown.size < n),
        "fit_points": int(fit.size),
        "indices": shown.tolist(),
        "coords": np.round(coords, 5).tolist(),
        "explained_variance": explained.tolist(),
        "columns": list(data.columns),
        "metadata": rows_out,
        "sprite_dim": list(data.sprite_dim) if data.sprite_dim else None,
        "problems": problems,
    }


def neighbors_impl(
    provider: DataProvider,
    run: str,
    tag: str,
    step: int,
    index: int,
    k: int = 10,
    metric: str = "cosine",
) -> dict[str, Any]:
    """The ``k`` points nearest to point ``index`` over the whole matrix (itself left out).

    ``metric`` ``cosine`` ranks by ``1 - cos`` (a zero vector is at distance 1 from every
    point), ``euclidean`` by the L2 distance; ties go to the lower index.

    Returns:
        ``{run, tag, step, index, metric, neighbors: [{index, distance, metadata}]}``
        nearest first (``metadata`` is the point's row of labels, empty without labels).
    """
    if metric not in METRICS:
        msg = (
            f"Query parameter 'metric': expected one of {', '.join(METRICS)}, got {metric[:40]!r}."
        )
        raise InvalidArgument(msg)
    data = _load(provider, run, tag, step)
    matrix = data.matrix
    n = int(matrix.shape[0])
    if not 0 <= index < n:
        msg = f"Point {index}: the embedding has {n} points (0 to {n - 1})."
        raise NotFound(msg)
    x = np.nan_to_num(np.asarray(matrix, dtype=np.float64), nan=0.0, posinf=0.0, neginf=0.0)
    query = x[index]
    if metric == "cosine":
        norms = np.linalg.norm(x, axis=1)
        qn = float(norms[index])
        with np.errstate(invalid="ignore", divide="ignore"):
            cos = (x @ query) / (norms * qn)
        distance = 1.0 - np.where(np.isfinite(cos), cos, 0.0)
    else:
        distance = np.sqrt(np.square(x - query).sum(axis=1))
    distance[index] = np.inf
    k = min(k, n - 1)
    order = np.lexsort((np.arange(n), distance))[:k] if k > 0 else np.empty(0, np.int64)
    return {
        "run": run,
        "tag": tag,
        "step": data.step,
        "index": index,
        "metric": metric,
        "neighbors": [
            {
                "index": int(i),
                "distance": float(distance[i]),
                "metadata": list(data.rows[i]) if data.rows else [],
            }
            for i in order.tolist()
        ],
    }


def sprite_impl(provider: DataProvider, run: str, tag: str, step: int) -> tuple[bytes, str]:
    """The sprite image's bytes and media type (``image/png`` or ``image/jpeg``)."""
    lookup(provider, "embeddings", run, tag)
    try:
        data, media = provider.read_embedding_sprite(run, tag, step)
    except KeyError:
        msg = f"Embedding tag {tag[:200]!r} of run {run[:200]!r} has no sprite at step {step}."
        raise NotFound(msg) from None
    except ValueError as exc:
        raise UnreadableEmbedding(str(exc)[:2000]) from None
    if media not in SPRITE_TYPES:
        msg = f"The sprite of tag {tag[:200]!r} is {media[:40]!r}; the board sends PNG or JPEG."
        raise UnreadableEmbedding(msg)
    if len(data) > MAX_SPRITE_BYTES:
        msg = (
            f"The sprite of tag {tag[:200]!r} has {len(data)} bytes; the board sends at most "
            f"{MAX_SPRITE_BYTES}."
        )
        raise SpriteTooLarge(msg)
    return data, media


def _step(request: Request) -> int:
    require_param(request, "step")
    return int_param(request, "step", 0, 0, 2**62)


class EmbeddingsView(View):
    """The projector: PCA scatter in 2-D/3-D, colour by metadata, search, nearest neighbours."""

    name = "embeddings"
    title = "Embeddings"
    kind = "embeddings"

    def routes(self) -> Sequence[BaseRoute]:
        from starlette.routing import Route

        return [
            Route("/tags", self._tags),
            Route("/embeddings", self._embeddings),
            Route("/projection", self._projection),
            Route("/neighbors", self._neighbors),
            Route("/sprite", self._sprite),
        ]

    async def _embeddings(self, request: Request) -> Response:
        run, tag = require_param(request, "run"), require_param(request, "tag")
        return await offload_json(request, embeddings_impl, self.provider, run, tag)

    async def _projection(self, request: Request) -> Response:
        run, tag = require_param(request, "run"), require_param(request, "tag")
        step = _step(request)
        dims = int_param(request, "dims", 2, 2, MAX_DIMS)
        max_points = int_param(request, "max_points", DEFAULT_POINTS, 1, MAX_POINTS)
        return await offload_json(
            request, projection_impl, self.provider, run, tag, step, dims, max_points
        )

    async def _neighbors(self, request: Request) -> Response:
        run, tag = require_param(request, "run"), require_param(request, "tag")
        step = _step(request)
        require_param(request, "i")
        index = int_param(request, "i", 0, 0, 2**62)
        k = int_param(request, "k", 10, 1, MAX_NEIGHBORS)
        metric = request.query_params.get("metric") or "cosine"
        return await offload_json(
            request, neighbors_impl, self.provider, run, tag, step, index, k, metric
        )

    async def _sprite(self, request: Request) -> Response:
        from starlette.responses import Response

        run, tag = require_param(request, "run"), require_param(request, "tag")
        step = _step(request)
        data, media = await offload(request, sprite_impl, self.provider, run, tag, step)
        return Response(data, media_type=media, headers={"Cache-Control": "max-age=3600"})
