""":func:`compute` and its result :class:`Landscape` (SCHEMA_VERSION 1)."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from tensorsight._lazy import lazy_import
from tensorsight.errors import UsageError

__all__ = ["DEFAULT_GRID", "DEFAULT_SPAN", "MAX_GRID", "Landscape", "compute"]

DEFAULT_GRID = 21
DEFAULT_SPAN = 1.0
MAX_GRID = 401
_DIRECTIONS = ("random", "pca")

Progress = Callable[[int, int], None]


@dataclass(frozen=True, eq=False)
class Landscape:
    """A loss landscape: ``values[i, j]`` is the loss at ``(x[j], y[i])``.

    Attributes:
        x: float64 coordinates along the first direction (columns), ``grid`` of them.
        y: float64 coordinates along the second direction (rows).
        values: float64 ``(len(y), len(x))`` losses; a non-finite loss is NaN.
        path: float64 ``(n, 3)`` training path ``(x, y, loss)``, one point per checkpoint
            projected onto the plane (the loss is evaluated at the projected point, so the
            path lies on the surface), or ``None`` without checkpoints.
        metadata: How it was made: ``directions``, ``seed``, ``grid``, ``span``,
            ``filter_normalized``, ``parameters`` (count), ``batches`` and, for PCA,
            ``explained_variance`` (ratio of the two components).
    """

    x: NDArray[np.float64]
    y: NDArray[np.float64]
    values: NDArray[np.float64]
    path: NDArray[np.float64] | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)

    SCHEMA_VERSION = 1

    def write(self, writer: Any, tag: str, step: int | None = None) -> None:
        """Log this landscape with ``writer.add_landscape`` (a :class:`tensorsight.SummaryWriter`).

        Example:
            >>> import numpy as np, tempfile
            >>> from tensorsight import SummaryWriter
            >>> x = np.linspace(-1, 1, 3)
            >>> ls = Landscape(x, x, np.add.outer(x**2, x**2))
            >>> with SummaryWriter(tempfile.mkdtemp()) as w:
            ...     ls.write(w, "landscape/loss", step=10)
        """
        writer.add_landscape(
            tag,
            self.values,
            self.x,
            self.y,
            path=self.path,
            global_step=step,
            metadata=dict(self.metadata),
        )


def _check(grid: int | None, span: float | None, directions: str) -> tuple[int, float | None]:
    if directions not in _DIRECTIONS:
        msg = (
            f"Landscape directions {directions!r}: unknown. Expected one of {list(_DIRECTIONS)}. "
            "Pass directions='random' or directions='pca' (with checkpoints)."
        )
        raise UsageError(msg)
    n: object = DEFAULT_GRID if grid is None else grid  # users may pass anything
    if isinstance(n, bool) or not isinstance(n, int) or not 2 <= n <= MAX_GRID:
        msg = (
            f"Landscape grid {grid!r}: not a usable size. Expected an int in 2..{MAX_GRID} "
            "(odd, so the centre is on the grid). Pass e.g. grid=21."
        )
        raise UsageError(msg)
    s: object = span
    if s is not None and not (isinstance(s, (int, float)) and math.isfinite(s) and s > 0):
        msg = f"Landscape span {span!r}: not a positive finite number. Expected e.g. span=1.0."
        raise UsageError(msg)
    return n, None if span is None else float(span)


def _loss(model: Any, loss_fn: Callable[..., Any], batches: Sequence[Any]) -> float:
    total = 0.0
    for batch in batches:
        inputs, targets = batch
        out = model(*inputs) if isinstance(inputs, (tuple, list)) else model(inputs)
        total += float(loss_fn(out, targets))
    value = total / len(batches)
    return value if math.isfinite(value) else math.nan


def _random_directions(torch: Any, params: list[Any], seed: int) -> list[list[Any]]:
    gen = torch.Generator().manual_seed(seed)
    pair = []
    for _ in range(2):
        dirs = []
        for p in params:
            d = torch.randn(p.shape, generator=gen, dtype=torch.float64)
            if p.dim() <= 1:
                d.zero_()  # biases and normalisation weights stay put (Li et al.)
            else:
                w = p.detach().to(torch.float64).reshape(p.shape[0], -1)
                flat = d.reshape(d.shape[0], -1)
                scale = w.norm(dim=1) / (flat.norm(dim=1) + 1e-10)
                d = (flat * scale[:, None]).reshape(p.shape)
            dirs.append(d)
        pair.append(dirs)
    return pair


def _flat_deltas(
    torch: Any, names: list[str], params: list[Any], checkpoints: Sequence[Mapping[str, Any]]
) -> Any:
    centre = torch.cat([p.detach().to(torch.float64).reshape(-1) for p in params])
    rows = []
    for i, ckpt in enumerate(checkpoints):
        missing = [n for n in names if n not in ckpt]
        if missing:
            msg = (
                f"Landscape checkpoint {i}: has no parameter {missing[0]!r}. Expected a "
                "state_dict of this model (model.state_dict() saved during training)."
            )
            raise UsageError(msg)
        parts = []
        for n, p in zip(names, params, strict=True):
            t = torch.as_tensor(ckpt[n])
            if tuple(t.shape) != tuple(p.shape):
                msg = (
                    f"Landscape checkpoint {i}: parameter {n!r} has shape {tuple(t.shape)}. "
                    f"Expected {tuple(p.shape)}, as in the model."
                )
                raise UsageError(msg)
            parts.append(t.detach().to("cpu", torch.float64).reshape(-1))
        rows.append(torch.cat(parts) - centre.cpu())
    return torch.stack(rows)


def _unflatten(torch: Any, vec: Any, params: list[Any]) -> list[Any]:
    out, at = [], 0
    for p in params:
        out.append(vec[at : at + p.numel()].reshape(p.shape))
        at += p.numel()
    return out


def compute(
    model: Any,
    loss_fn: Callable[..., Any],
    batches: Iterable[Any],
    directions: str = "random",
    grid: int | None = None,
    span: float | None = None,
    checkpoints: Sequence[Mapping[str, Any]] | None = None,
    progress: Progress | None = None,
    seed: int | None = None,
) -> Landscape:
    """The loss of ``model`` on a 2-D plane through its current weights.

    The model is evaluated in eval mode under ``torch.no_grad()`` (dropout off, batch-norm
    statistics untouched); its weights, mode and gradients are restored exactly afterwards,
    also when ``loss_fn`` raises.

    Args:
        model: A ``torch.nn.Module``; the centre of the plane is its current weights.
        loss_fn: ``loss_fn(model(inputs), targets)`` -> scalar tensor.
        batches: ``(inputs, targets)`` pairs (inputs may be a tuple of positional
            arguments); read once and reused for every grid point, so keep it small.
            The loss at a point is the mean over the batches.
        directions: ``"random"`` (filter-normalised, Li et al. 2018) or ``"pca"`` (the
            first two principal components of ``checkpoints`` around the current weights).
        grid: Points per axis (default 21; odd puts the centre on the grid).
        span: Coordinates run from ``-span`` to ``span`` (default 1.0 for random
            directions; for PCA 1.25 x the largest path coordinate, so the path fits).
        checkpoints: ``state_dict``s along training (oldest first), drawn as the training
            path; required for ``"pca"``. Random directions project them by least squares.
        progress: Called as ``progress(done, total)`` after each loss evaluation.
        seed: Seed of the random directions (default 0); same seed, same landscape.

    Returns:
        The :class:`Landscape`.

    Raises:
        UsageError: Unknown directions, a bad grid/span, no batches, PCA without two
            distinct checkpoints, or a checkpoint that does not fit the model.

    Example:
        >>> import torch
        >>> model = torch.nn.Sequential(
        ...     torch.nn.Linear(2, 4), torch.nn.Tanh(), torch.nn.Linear(4, 1)
        ... )
        >>> data = [(torch.randn(16, 2), torch.randn(16, 1))]
        >>> ls = compute(model, torch.nn.functional.mse_loss, data, grid=3, span=0.5)
        >>> ls.x.tolist()
        [-0.5, 0.0, 0.5]
    """
    torch: Any = lazy_import("torch", extra="torch", needed_by="tensorsight.landscape")
    n, span_arg = _check(grid, span, directions)
    seed = 0 if seed is None else int(seed)
    data = list(batches)
    if not data:
        msg = "Landscape batches: empty. Expected at least one (inputs, targets) pair."
        raise UsageError(msg)
    if directions == "pca" and (checkpoints is None or len(checkpoints) < 2):
        got = 0 if checkpoints is None else len(checkpoints)
        msg = (
            f"Landscape directions 'pca': needs a checkpoint trajectory, got {got} checkpoints. "
            "Expected at least 2 state_dicts in checkpoints=[...]."
        )
        raise UsageError(msg)
    named = [(k, p) for k, p in model.named_parameters()]
    if not named:
        msg = "Landscape model: has no parameters. Expected a torch.nn.Module with weights."
        raise UsageError(msg)
    names = [k for k, _ in named]
    params = [p for _, p in named]
    meta: dict[str, Any] = {
        "directions": directions,
        "seed": seed,
        "grid": n,
        "filter_normalized": directions == "random",
        "parameters": int(sum(p.numel() for p in params)),
        "batches": len(data),
    }
    deltas = None if not checkpoints else _flat_deltas(torch, names, params, checkpoints)
    coords = None
    if directions == "pca":
        _, s, vh = torch.linalg.svd(deltas, full_matrices=False)
        if s.numel() < 2 or float(s[1]) <= 0.0:
            msg = (
                "Landscape checkpoints: they span fewer than two directions around the current "
                "weights. Expected checkpoints from different training steps."
            )
            raise UsageError(msg)
        energy = s**2
        meta["explained_variance"] = [float(v) for v in (energy[:2] / energy.sum()).tolist()]
        d1, d2 = vh[0], vh[1]
        coords = deltas @ torch.stack([d1, d2], dim=1)  # orthonormal: projection
        dirs = [_unflatten(torch, d1, params), _unflatten(torch, d2, params)]
    else:
        dirs = _random_directions(torch, params, seed)
        if deltas is not None:
            basis = torch.stack(
                [torch.cat([d.reshape(-1) for d in dirs[k]]) for k in range(2)], dim=1
            )
            coords = torch.linalg.lstsq(basis, deltas.T).solution.T
    if span_arg is None:
        span_arg = DEFAULT_SPAN
        if directions == "pca" and coords is not None:
            span_arg = max(1.25 * float(coords.abs().max()), 1e-12)
    meta["span"] = span_arg
    axis = np.linspace(-span_arg, span_arg, n)
    return _evaluate(torch, model, loss_fn, data, params, dirs, axis, coords, meta, progress)


def _evaluate(
    torch: Any,
    model: Any,
    loss_fn: Callable[..., Any],
    data: list[Any],
    params: list[Any],
    dirs: list[list[Any]],
    axis: NDArray[np.float64],
    coords: Any,
    meta: dict[str, Any],
    progress: Progress | None,
) -> Landscape:
    path_xy = [] if coords is None else [(float(a), float(b)) for a, b in coords.tolist()]
    total = axis.size * axis.size + len(path_xy)
    saved = [p.detach().clone() for p in params]
    d1 = [d.to(p.device, p.dtype) for d, p in zip(dirs[0], params, strict=True)]
    d2 = [d.to(p.device, p.dtype) for d, p in zip(dirs[1], params, strict=True)]
    was_training = bool(model.training)

    def at(a: float, b: float) -> float:
        for p, w, u, v in zip(params, saved, d1, d2, strict=True):
            p.copy_(w)
            if a:
                p.add_(u, alpha=a)
            if b:
                p.add_(v, alpha=b)
        # under torch.autocast the casts of the weights are cached until the context exits:
        # without this every point would reuse the first point's reduced-precision weights
        torch.clear_autocast_cache()
        return _loss(model, loss_fn, data)

    values = np.empty((axis.size, axis.size), dtype=np.float64)
    path = None
    done = 0
    model.eval()
    try:
        with torch.no_grad():
            for i, b in enumerate(axis.tolist()):
                for j, a in enumerate(axis.tolist()):
                    values[i, j] = at(a, b)
                    done += 1
                    if progress is not None:
                        progress(done, total)
            if path_xy:
                rows = []
                for a, b in path_xy:
                    rows.append((a, b, at(a, b)))
                    done += 1
                    if progress is not None:
                        progress(done, total)
                path = np.asarray(rows, dtype=np.float64)
    finally:
        with torch.no_grad():
            for p, w in zip(params, saved, strict=True):
                p.copy_(w)
        model.train(was_training)
    for arr in (axis, values) + (() if path is None else (path,)):
        arr.setflags(write=False)
    return Landscape(axis, axis, values, path, meta)
