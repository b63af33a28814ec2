"""Pins the public surface: adding or removing a public name must be a deliberate change."""

from __future__ import annotations

import subprocess
import sys

import pytest

import tensorsight


def test_top_level_public_names():
    assert tensorsight.__all__ == ["__version__", *sorted(tensorsight._LAZY)]


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
