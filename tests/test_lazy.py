from __future__ import annotations

import pytest

from tensorsight._lazy import lazy_import
from tensorsight.errors import MissingDependencyError


def test_present_module_is_returned():
    assert lazy_import("json", extra="all").__name__ == "json"


def test_missing_module_names_the_pip_extra():
    with pytest.raises(MissingDependencyError) as info:
        lazy_import("no_such_module_xyz.sub", extra="onnx", needed_by="Capture backend 'onnxrt'")
    message = str(info.value)
    assert message.startswith("Capture backend 'onnxrt' needs no_such_module_xyz:")
    assert "pip install 'tensorsight[onnx]'" in message
    assert isinstance(info.value, ImportError)
