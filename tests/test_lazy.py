from __future__ import annotations

import subprocess
import sys

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


def test_missing_torch_says_to_install_the_build_for_the_device_first(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)  # import torch now raises ImportError
    with pytest.raises(MissingDependencyError) as info:
        lazy_import("torch", extra="torch", needed_by="tensorsight demo")
    message = str(info.value)
    assert message.startswith("tensorsight demo needs torch: install the torch build for your")
    assert "CUDA" in message
    assert "download.pytorch.org/whl/cpu" in message
    assert "\n" not in message


def test_demo_without_torch_is_one_line_naming_the_torch_build(tmp_path):
    # a real process in which torch cannot be imported, running the real command
    code = (
        "import sys\n"
        "sys.modules['torch'] = None\n"
        "from tensorsight import cli\n"
        f"sys.exit(cli.main(['demo', '--logdir', {str(tmp_path / 'demo')!r}, '--no-serve']))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert out.returncode == 2, out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1, out.stderr
    assert lines[0].startswith("error: tensorsight demo needs torch: install the torch build")
