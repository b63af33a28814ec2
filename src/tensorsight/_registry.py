"""A small registry for extension points (views, capture backends, metrics, rule sets).

Entries are either objects or ``"package.module:attribute"`` strings that are imported on
first :meth:`Registry.get`, so registering costs nothing at import time. Third parties add
entries through a Python entry-point group. An entry that fails to import is reported as
``unavailable: <reason>`` by :meth:`Registry.status` instead of crashing the host.
"""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Generic, TypeVar, cast

from tensorsight.errors import RegistryError

__all__ = ["EntryStatus", "Registry", "load_object"]

T = TypeVar("T")


def load_object(spec: str) -> object:
    """Import ``"package.module:attribute"`` (attribute may be dotted) and return it."""
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        msg = f"Object spec {spec!r}: expected 'package.module:attribute'."
        raise RegistryError(msg)
    obj: object = importlib.import_module(module_name)
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj


@dataclass(frozen=True)
class EntryStatus:
    """Whether one registry entry can be used, and why not when it cannot."""

    name: str
    available: bool
    reason: str = ""


class Registry(Generic[T]):
    """Name -> implementation map with lazy loading and helpful lookup errors.

    Args:
        kind: What the entries are, for messages ("capture backend", "metric", ...).
        entry_point_group: Optional entry-point group scanned once for third-party entries.

    Example:
        >>> metrics: Registry[object] = Registry("metric")
        >>> @metrics.register("answer")
        ... def answer() -> int:
        ...     return 42
        >>> metrics.get("answer")()
        42
    """

    def __init__(self, kind: str, *, entry_point_group: str | None = None) -> None:
        self.kind = kind
        self._group = entry_point_group
        self._entries: dict[str, T | str] = {}
        self._loaded: dict[str, T] = {}
        self._errors: dict[str, str] = {}
        self._scanned = entry_point_group is None

    def add(self, name: str, value: T | str) -> None:
        """Register ``value`` (an object or a lazy ``"module:attr"`` string) under ``name``."""
        if name in self._entries:
            msg = f"{self.kind.capitalize()} {name!r} is registered twice."
            raise RegistryError(msg)
        self._entries[name] = value

    def register(self, name: str) -> Callable[[T], T]:
        """Decorator form of :meth:`add`; returns the decorated object unchanged."""

        def decorator(obj: T) -> T:
            self.add(name, obj)
            return obj

        return decorator

    def names(self) -> list[str]:
        """All registered names, in registration order (built-ins first)."""
        self._scan_entry_points()
        return list(self._entries)

    def __contains__(self, name: object) -> bool:
        if name in self._entries:  # as get(): built-ins need no entry-point scan
            return True
        self._scan_entry_points()
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self.names())

    def get(self, name: str) -> T:
        """Return the entry called ``name``, importing it if needed.

        Raises:
            RegistryError: ``name`` is unknown (the message suggests close names and lists
                the choices) or its import failed (the message carries the reason).
        """
        if name in self._loaded:
            return self._loaded[name]
        if name not in self._entries:  # built-ins win over entry points: scan only for others
            self._scan_entry_points()
        if name not in self._entries:
            choices = ", ".join(self._entries) or "none"
            close = difflib.get_close_matches(name, self._entries, n=1)
            hint = f" Did you mean {close[0]!r}?" if close else ""
            msg = f"Unknown {self.kind} {name!r}.{hint} Choices: {choices}."
            raise RegistryError(msg)
        value = self._entries[name]
        if isinstance(value, str):
            try:
                value = cast(T, load_object(value))
            except Exception as exc:  # a broken extension must not crash the host
                reason = f"{type(exc).__name__}: {exc}"
                self._errors[name] = reason
                msg = f"{self.kind.capitalize()} {name!r} is unavailable: {reason}"
                raise RegistryError(msg) from exc
        self._loaded[name] = value
        return value

    def status(self) -> list[EntryStatus]:
        """Try to load every entry; report which are usable and why the others are not."""
        result = []
        for name in self.names():
            try:
                self.get(name)
            except RegistryError:
                result.append(EntryStatus(name, False, self._errors.get(name, "unknown")))
            else:
                result.append(EntryStatus(name, True))
        return result

    def _scan_entry_points(self) -> None:
        if self._scanned:
            return
        self._scanned = True
        assert self._group is not None
        from importlib import metadata  # ~25 ms to import: only when a scan is needed

        for ep in metadata.entry_points(group=self._group):
            if ep.name not in self._entries:  # built-ins win over third parties
                self._entries[ep.name] = ep.value
