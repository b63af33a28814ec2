"""Describe an input pipeline (torch DataLoader / Dataset) as a data graph.

``describe_pipeline(obj)`` returns the dict that ``kinds/data_graph.py`` encodes:
``{"nodes": [{"id", "type", "label", "params"}], "edges": [[src, dst], ...]}``. Edges point
the way data flows: each source dataset -> its transforms -> wrappers (``Subset``,
``ConcatDataset``, ...) -> ``DataLoader``; the sampler -> ``DataLoader``; ``DataLoader`` ->
``collate_fn``. Everything is duck-typed (no torch or torchvision import): a transform
pipeline is any object with a ``transforms`` list (torchvision's ``Compose``), a dataset
wrapper any object with ``dataset`` or ``datasets``, a loader any object with ``dataset``,
``batch_size`` and ``collate_fn``.
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping
from typing import Any

from tensorsight.errors import UsageError

__all__ = ["describe_pipeline", "simple_params"]

_MAX_DEPTH = 32
_MAX_REPR = 200
_MAX_LIST = 16
_SKIPPED_ATTRS = frozenset({"transforms", "training"})
_LINK_ATTRS = frozenset({"data_source", "dataset", "datasets"})  # shown as edges instead
_LOADER_FIELDS = (
    "batch_size",
    "num_workers",
    "drop_last",
    "pin_memory",
    "prefetch_factor",
    "persistent_workers",
    "timeout",
)


def _simple(value: object) -> object:
    """A JSON-friendly form of ``value``: numbers, str, bool, None, short lists, else repr."""
    if value is None or isinstance(value, bool | str):
        return value if not isinstance(value, str) else value[:_MAX_REPR]
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        number = float(value)
        return number if number == number and abs(number) != float("inf") else repr(number)
    shape = getattr(value, "shape", None)
    if shape is not None and hasattr(value, "dtype"):
        return f"{type(value).__name__}(shape={list(shape)}, dtype={value.dtype})"
    if isinstance(value, list | tuple) and len(value) <= _MAX_LIST:
        items = [_simple(v) for v in value]
        if all(not isinstance(i, str) or len(i) <= 80 for i in items):
            return items
    return repr(value)[:_MAX_REPR]


def simple_params(obj: object) -> dict[str, object]:
    """Public, non-callable instance attributes of ``obj`` as JSON-friendly values."""
    try:
        attrs = vars(obj)
    except TypeError:
        return {}
    return {
        k: _simple(v)
        for k, v in attrs.items()
        if not k.startswith("_")
        and not callable(v)
        and k not in _SKIPPED_ATTRS
        and not (k in _LINK_ATTRS and (_is_dataset(v) or isinstance(v, list | tuple)))
    }


def _length(obj: object) -> int | None:
    try:
        return len(obj)  # type: ignore[arg-type]
    except Exception:  # len() of user datasets may raise anything
        return None


class _Builder:
    def __init__(self) -> None:
        self.nodes: list[dict[str, Any]] = []
        self.edges: list[list[str]] = []
        self.ids: set[str] = set()

    def add(self, base: str, obj: object, params: dict[str, object], label: str = "") -> str:
        node_id, n = base, 1
        while node_id in self.ids:
            n += 1
            node_id = f"{base}_{n}"
        self.ids.add(node_id)
        kind = type(obj).__name__
        self.nodes.append({"id": node_id, "type": kind, "label": label or kind, "params": params})
        return node_id

    def transforms(self, owner: str, source: str, obj: object, depth: int) -> str:
        """Add the transform chain ``obj`` after ``source``; returns the last node id."""
        inner = getattr(obj, "transforms", None)
        if isinstance(inner, list | tuple):
            node = self.add(
                f"{owner}.compose",
                obj,
                {"count": len(inner)},
                f"{type(obj).__name__} ({len(inner)})",
            )
            self.edges.append([source, node])
            last = node
            for k, step in enumerate(inner):
                if depth < _MAX_DEPTH and isinstance(
                    getattr(step, "transforms", None), list | tuple
                ):
                    last = self.transforms(f"{owner}.{k}", last, step, depth + 1)
                else:
                    step_id = self.add(f"{owner}.transform.{k}", step, simple_params(step))
                    self.edges.append([last, step_id])
                    last = step_id
            return last
        node = self.add(f"{owner}.transform", obj, simple_params(obj))
        self.edges.append([source, node])
        return node

    def dataset(self, obj: object, base: str, depth: int, seen: set[int]) -> str:
        if depth > _MAX_DEPTH or id(obj) in seen:
            return self.add(base, obj, {"truncated": True})
        seen = seen | {id(obj)}
        params: dict[str, object] = {}
        length = _length(obj)
        if length is not None:
            params["len"] = length
        children: list[object] = []
        datasets = getattr(obj, "datasets", None)
        if isinstance(datasets, list | tuple):
            children = [d for d in datasets if _is_dataset(d)]
        elif _is_dataset(getattr(obj, "dataset", None)):
            children = [obj.dataset]  # type: ignore[attr-defined]
        indices = getattr(obj, "indices", None)
        if indices is not None and children:
            params["indices"] = _length(indices)
        for key, value in simple_params(obj).items():
            if key not in {
                "indices",
                "cumulative_sizes",
                "transform",
                "target_transform",
            }:
                params.setdefault(key, value)
        node = self.add(base, obj, params)
        for k, child in enumerate(children):
            child_base = f"{base}.{k}" if len(children) > 1 else f"{base}.dataset"
            end = self.dataset(child, child_base, depth + 1, seen)
            self.edges.append([end, node])
        last = node
        for attr in ("transform", "transforms", "target_transform"):
            value = getattr(obj, attr, None)
            if value is not None and (callable(value) or hasattr(value, "transforms")):
                last = self.transforms(f"{base}.{attr}", last, value, depth + 1)
        return last


def _is_dataset(obj: object) -> bool:
    """Dataset-like: indexable or iterable, and not a plain value (str, bytes, dict, array)."""
    if obj is None or isinstance(obj, str | bytes | Mapping | numbers.Number):
        return False
    if hasattr(obj, "shape") and hasattr(obj, "dtype"):
        return False
    return hasattr(obj, "__getitem__") or hasattr(obj, "__iter__")


def _is_loader(obj: object) -> bool:
    return all(hasattr(obj, a) for a in ("dataset", "batch_size", "collate_fn"))


def describe_pipeline(pipeline: object) -> dict[str, Any]:
    """The data graph of a DataLoader, a Dataset, or a dict already in the graph shape.

    Raises:
        UsageError: ``pipeline`` is none of these.
    """
    if isinstance(pipeline, Mapping):
        return dict(pipeline)
    builder = _Builder()
    if _is_loader(pipeline):
        loader: Any = pipeline
        params = {f: _simple(getattr(loader, f, None)) for f in _LOADER_FIELDS}
        params["len"] = _length(loader)
        end = builder.dataset(loader.dataset, "dataset", 0, set())
        node = builder.add("loader", loader, params)
        builder.edges.append([end, node])
        sampler = getattr(loader, "sampler", None)
        if sampler is not None:
            sid = builder.add(
                "sampler", sampler, {"len": _length(sampler), **simple_params(sampler)}
            )
            builder.edges.append([sid, node])
        batch_sampler = getattr(loader, "batch_sampler", None)
        if batch_sampler is not None and type(batch_sampler).__name__ != "BatchSampler":
            bid = builder.add("batch_sampler", batch_sampler, simple_params(batch_sampler))
            builder.edges.append([bid, node])
        collate = getattr(loader, "collate_fn", None)
        if collate is not None:
            name = getattr(collate, "__qualname__", type(collate).__name__)
            cid = builder.add("collate_fn", collate, {"name": name}, name)
            builder.edges.append([node, cid])
    elif hasattr(pipeline, "__getitem__") and not isinstance(pipeline, str | bytes):
        builder.dataset(pipeline, "dataset", 0, set())
    else:
        msg = (
            f"Data pipeline: got {type(pipeline).__name__}. Expected a torch DataLoader, a "
            "Dataset, or a dict with 'nodes' and 'edges'."
        )
        raise UsageError(msg)
    return {"nodes": builder.nodes, "edges": builder.edges}
