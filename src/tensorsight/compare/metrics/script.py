"""User metrics from a Python file: ``tensorsight compare --metric-script path.py:func``.

The function takes the two tensors of a pair as numpy arrays, bench (the reference) first,
and returns one float::

    # my_metrics.py
    import numpy as np

    def max_log_err(bench, target):
        return float(np.abs(np.log1p(np.abs(target)) - np.log1p(np.abs(bench))).max())

:func:`load_metric_script` imports the file once to check that the function is there and
registers it in :data:`~tensorsight.compare.metrics.METRICS` under the function's name, so
the comparison computes it on every tensor pair next to the built-in metrics and every
report shows it as one more column (CSV, XLSX, HTML, JSON). The registered function is a
:class:`ScriptMetric`, which holds only the file's path and the function's name: it pickles,
and a worker process of a ``local:N``, Dask or Ray executor imports the file on its first
call.
"""

from __future__ import annotations

import hashlib
import importlib.util
import threading
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from numpy.typing import NDArray

from tensorsight.compare.metrics.base import METRICS, MetricSpec
from tensorsight.errors import CompareError, UsageError

__all__ = ["ScriptMetric", "load_metric_script"]

_MODULES: dict[str, ModuleType] = {}
_LOCK = threading.Lock()


@dataclass(frozen=True)
class ScriptMetric:
    """A metric function ``func`` of the Python file ``path``, imported on first call.

    Attributes:
        path: Absolute path of the ``.py`` file.
        func: Name of the function in it: ``func(bench, target) -> float``.
    """

    path: str
    func: str

    @property
    def spec(self) -> str:
        """``path:func``, as the option takes it."""
        return f"{self.path}:{self.func}"

    def load(self) -> Any:
        """The user's function (the file is imported once per process).

        Raises:
            UsageError: The file cannot be read or imported, or has no such function.
        """
        with _LOCK:
            module = _MODULES.get(self.path)
            if module is None:
                module = _import_file(self.path)
                _MODULES[self.path] = module
        fn = getattr(module, self.func, None)
        if not callable(fn):
            names = sorted(n for n, v in vars(module).items() if callable(v) and n[:1] != "_")
            msg = (
                f"Metric script {self.spec!r}: has no function {self.func!r}. "
                f"Expected one of: {', '.join(names) or '(no functions)'}."
            )
            raise UsageError(msg)
        return fn

    def __call__(self, bench: NDArray[Any], target: NDArray[Any]) -> float:
        """``func(bench, target)`` as a float.

        Raises:
            CompareError: The function raised or returned something that is not a number.
        """
        fn = self.load()
        try:
            value = fn(bench, target)
        except Exception as exc:
            msg = f"Metric script {self.spec!r}: raised {type(exc).__name__}: {exc}"
            raise CompareError(msg) from exc
        try:
            return float(value)
        except (TypeError, ValueError) as exc:
            msg = (
                f"Metric script {self.spec!r}: returned {type(value).__name__}. "
                "Expected a float (one number per tensor pair)."
            )
            raise CompareError(msg) from exc


def _import_file(path: str) -> ModuleType:
    digest = hashlib.sha1(path.encode(), usedforsecurity=False).hexdigest()[:12]
    name = f"_tensorsight_metric_script_{digest}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        msg = f"Metric script {path!r}: not a Python file. Expected path/to/file.py:function."
        raise UsageError(msg)
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except OSError as exc:
        msg = f"Metric script {path!r}: cannot be read ({exc.strerror or exc})."
        raise UsageError(msg) from exc
    except Exception as exc:
        msg = f"Metric script {path!r}: importing it raised {type(exc).__name__}: {exc}"
        raise UsageError(msg) from exc
    return module


def load_metric_script(spec: str) -> MetricSpec:
    """Register the function of ``spec`` (``"path.py:func"``) as a metric and return it.

    The metric's key is the function's name; its one-line doc is the function's docstring.
    Loading the same ``path:func`` twice returns the registered metric again.

    Args:
        spec: ``path/to/file.py:function_name`` (the path may hold ``:``, e.g. on Windows:
            the last ``:`` separates the function).

    Returns:
        The registered :class:`~tensorsight.compare.metrics.MetricSpec`.

    Raises:
        UsageError: A bad spec, a missing or broken file, no such function, or a key that
            another metric or a report column (``verdict``, ``op``) already has.

    Example:
        >>> import pathlib, tempfile
        >>> import numpy as np
        >>> folder = pathlib.Path(tempfile.mkdtemp())
        >>> _ = (folder / "m.py").write_text("def doc_peak(b, t):\\n    return abs(t).max()\\n")
        >>> metric = load_metric_script(f"{folder / 'm.py'}:doc_peak")
        >>> metric.key, metric.func(np.zeros(2), np.array([1.0, -3.0]))
        ('doc_peak', 3.0)
    """
    file, sep, func = spec.rpartition(":")
    if not sep or not file or not func.isidentifier():
        msg = (
            f"Option --metric-script {spec!r}: expected path/to/file.py:function, "
            "e.g. my_metrics.py:max_log_err."
        )
        raise UsageError(msg)
    from tensorsight.compare.result import COLUMNS, attr_name

    columns = {attr_name(c) for c in COLUMNS}  # within_1e_3 reads back as within_1e-3
    if attr_name(func) in columns and func not in METRICS._entries:  # a report column
        msg = (
            f"Metric script {spec!r}: {func!r} is a report column already. "
            "Rename the function (the metric's key is its name)."
        )
        raise UsageError(msg)
    path = Path(file).expanduser()
    if not path.is_file():
        msg = f"Metric script {file!r}: no such file. Expected path/to/file.py:function."
        raise UsageError(msg)
    metric = ScriptMetric(str(path.resolve()), func)
    fn = metric.load()  # fail now, not on the first tensor pair
    doc = (getattr(fn, "__doc__", None) or "").strip().splitlines()
    registered = METRICS._entries.get(func)  # registered entries only: no entry-point scan
    if registered is not None:
        if isinstance(registered, MetricSpec) and registered.func == metric:
            return registered
        msg = (
            f"Metric script {spec!r}: metric {func!r} already exists. "
            "Rename the function (the metric's key is its name)."
        )
        raise UsageError(msg)
    out = MetricSpec(func, False, metric, doc[0] if doc else "")
    METRICS.add(func, out)
    return out
