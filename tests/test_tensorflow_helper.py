"""``tensorsight.tensorflow``: importing it never imports TensorFlow; dumping needs it.

The dump itself runs where TensorFlow is installed: ``tests/dumpformat/data/
make_tensorflow_dump.py`` writes the stored fixtures through it, and
``tests/compare/test_tensorflow_cross.py`` has a live test.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

from tensorsight.errors import MissingDependencyError


def test_import_does_not_import_tensorflow() -> None:
    code = "import sys, tensorsight.tensorflow; print('tensorflow' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


@pytest.mark.skipif(importlib.util.find_spec("tensorflow") is not None, reason="has tensorflow")
def test_dump_without_tensorflow_names_the_extra(tmp_path: Path) -> None:
    import tensorsight.tensorflow

    with pytest.raises(MissingDependencyError, match=r"tensorsight\[tensorflow\]"):
        tensorsight.tensorflow.dump(lambda: None, tmp_path / "d")
    assert not (tmp_path / "d").exists()
