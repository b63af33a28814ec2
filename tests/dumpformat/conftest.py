"""Fixtures for the dump-format tests: the msprobe dumps under ``data/msprobe``.

The format itself needs no torch, so this folder is not skipped without it (as
``tests/capture`` is); the modules below record their dumps with torch at import and are
left out of the collection where torch is missing.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data"

_NEED_TORCH = ["test_inspect.py", "test_msprobe.py", "test_ptfile.py", "test_reader.py"]

if importlib.util.find_spec("torch") is None:
    collect_ignore = _NEED_TORCH


@pytest.fixture
def msprobe_data() -> Path:
    return DATA / "msprobe"
