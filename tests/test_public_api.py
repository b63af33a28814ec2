"""Pins the public surface: adding or removing a public name must be a deliberate change."""

from __future__ import annotations

import subprocess
import sys

import pytest

import tensorsight


def test_top_level_public_names():
    # literal on purpose: adding or removing a name must change this line (PRODUCT.md)
    assert tensorsight.__all__ == [
        "__version__",
        "Comparison",
        "Logdir",
        "MigrationReport",
        "OpComparison",
        "SummaryWriter",
        "compare",
        "dump",
        "migrate",
        "read_dump",
        "read_logdir",
        "watch",
    ]
    assert sorted(tensorsight._LAZY) == tensorsight.__all__[1:]


# Each part's public names, written out. The extension registries that are being reshaped
# (capture.backends, compare.metrics, compare.report) are not pinned here yet.
PART_NAMES = {
    "tensorsight.summary": [
        "CorruptRecordWarning",
        "EventFileReader",
        "Logdir",
        "ReloadResult",
        "RunInfo",
        "SummaryWriter",
        "read_logdir",
    ],
    "tensorsight.capture": [
        "LEVELS",
        "MODES",
        "SCHEMA_VERSION",
        "Dump",
        "DumpInspection",
        "DumpManifest",
        "DumpSession",
        "DumpStep",
        "ObserverCheck",
        "OpRecord",
        "RawTensor",
        "StepInfo",
        "TensorRecord",
        "TensorStats",
        "dump",
        "format_inspection",
        "inspect_dump",
        "read_dump",
    ],
    "tensorsight.compare": ["Comparison", "OpComparison", "Verdict", "compare", "register_metric"],
    "tensorsight.migrate": [
        "RULESETS",
        "Changed",
        "Failed",
        "FileResult",
        "MigrationReport",
        "MigrationRule",
        "RuleSet",
        "Site",
        "Skipped",
        "Unchanged",
        "VerifyResult",
        "migrate",
    ],
    "tensorsight.data": [
        "KINDS",
        "SCHEMA_VERSION",
        "VERDICTS",
        "AdviceInfo",
        "AudioClip",
        "ComparisonInfo",
        "ComparisonStore",
        "DataGraph",
        "DataProvider",
        "EmbeddingData",
        "EmbeddingEntry",
        "GraphNodeData",
        "HistogramArrays",
        "HistogramRecord",
        "ImageRecord",
        "InMemoryProvider",
        "LandscapeData",
        "LayoutCategory",
        "LayoutChart",
        "Limits",
        "LogdirProvider",
        "MarginSeries",
        "ModelGraph",
        "PrCurveData",
        "ReplayInfo",
        "RunHParams",
        "RunInfo",
        "ScalarLayout",
        "ScalarSeries",
        "TensorValue",
        "TextRecord",
        "downsample_indices",
        "merge_layouts",
    ],
    "tensorsight.board": ["create_app", "serve"],
    "tensorsight.board.views": [
        "BUILTIN_VIEWS",
        "FrontendMeta",
        "View",
        "ViewInfo",
        "view_registry",
    ],
    "tensorsight.monitor": ["KINDS", "ON_ANOMALY", "Anomaly", "AnomalyWarning", "Watch", "watch"],
    "tensorsight.landscape": ["Landscape", "compute"],
    "tensorsight.tensorflow": ["MANIFEST", "dump"],
    "tensorsight.errors": [
        "AnomalyError",
        "CaptureError",
        "CompareError",
        "DumpFormatError",
        "EventFileError",
        "InputFileError",
        "InternalError",
        "MigrationError",
        "MissingDependencyError",
        "RegistryError",
        "SchemaVersionError",
        "TensorsightError",
        "UsageError",
    ],
}


@pytest.mark.parametrize("part", sorted(PART_NAMES))
def test_each_part_exports_exactly_its_pinned_names(part):
    import importlib

    importlib.import_module(part)
    module = sys.modules[part]  # tensorsight.compare the package, not the function
    assert module.__all__ == PART_NAMES[part]
    missing = [name for name in module.__all__ if getattr(module, name, None) is None]
    assert missing == []


def test_every_lazy_name_resolves():
    for name in tensorsight._LAZY:
        assert getattr(tensorsight, name) is not None


def test_unknown_attribute_raises_attribute_error():
    with pytest.raises(AttributeError, match="no_such_name"):
        tensorsight.no_such_name  # noqa: B018


def test_import_is_cheap():
    """``import tensorsight`` must not load torch, onnx(runtime), libcst or starlette."""
    code = (
        "import sys, tensorsight, tensorsight.cli, tensorsight.errors; "
        "heavy = {'torch', 'onnx', 'onnxruntime', 'libcst', 'starlette', 'uvicorn', 'pyarrow'}; "
        "print(sorted(heavy & {m.split('.')[0] for m in sys.modules}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


_IMPORT_ALL_THEN_CALL = r"""
import importlib, pkgutil, sys, types
import tensorsight
skipped = []
for info in pkgutil.walk_packages(tensorsight.__path__, "tensorsight."):
    if info.name.endswith("__main__"):  # running it is the CLI, not an import
        continue
    try:
        importlib.import_module(info.name)
    except ImportError as exc:  # an optional dependency of that part is missing
        skipped.append(f"{info.name}: {exc}")
import tensorsight.compare.replay as replay_module
assert tensorsight.compare.replay is replay_module
for name in ("compare", "dump", "migrate"):
    assert isinstance(getattr(tensorsight, name), types.FunctionType), name
import torch
from pathlib import Path
root = Path(sys.argv[1])
x = torch.ones(4, 3)
for side in ("bench", "target"):
    torch.manual_seed(0)
    model = torch.nn.Linear(3, 2)
    with tensorsight.dump(root / side, mode="tensor", steps=[0]) as d:
        model(x).sum().backward()
        d.step()
result = tensorsight.compare(root / "bench", root / "target")
assert result.first_divergence is None and len(result.rows) > 0, result.summary()
(root / "train.py").write_text("import torch\nx = torch.zeros(2).cuda()\n")
report = tensorsight.migrate(root / "train.py")
assert report.files, report
print("ok", len(skipped))
"""


def test_public_functions_stay_callable_after_every_submodule_import(tmp_path):
    """Importing any submodule (``tensorsight.compare.replay``) must not hide a function."""
    out = subprocess.run(
        [sys.executable, "-c", _IMPORT_ALL_THEN_CALL, str(tmp_path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.startswith("ok"), out.stdout


def test_package_module_forwards_calls_to_its_function():
    """``sys.modules['tensorsight.migrate']`` itself stays callable (older code held it)."""
    code = (
        "import sys, tensorsight, tensorsight.migrate.api; "
        "m = sys.modules['tensorsight.migrate']; "
        "print(callable(m), m.__call__.__func__ is not None, tensorsight.migrate.api.__name__)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["True", "True", "tensorsight.migrate.api"]


def test_watch_is_the_monitor_function_and_its_package_is_pinned():
    import tensorsight.monitor

    assert tensorsight.watch is tensorsight.monitor.watch
    assert tensorsight.monitor.__all__ == [
        "KINDS",
        "ON_ANOMALY",
        "Anomaly",
        "AnomalyWarning",
        "Watch",
        "watch",
    ]
