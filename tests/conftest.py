"""Shared fixtures and markers for the whole suite."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SHARED_DATA = ROOT.parent / "shared" / "data"
EXAMPLE_VIEW = ROOT / "examples" / "tensorsight-example-view"


def run_cli(
    *args: str, cwd: Path | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """Run ``python -m tensorsight ARGS`` in a child process, as a user would."""
    return subprocess.run(
        [sys.executable, "-m", "tensorsight", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=timeout,
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
        check=False,
    )


@pytest.fixture
def shared_data() -> Path:
    """Real third-party files from ../shared/data (skips when the folder is absent)."""
    if not SHARED_DATA.is_dir():
        pytest.skip("../shared/data is not present in this checkout")
    return SHARED_DATA


@pytest.fixture(scope="session")
def example_view_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """examples/tensorsight-example-view, pip-installed (no deps, offline) into a tmp folder.

    The folder is not on ``sys.path``: wrap the code that should see the view's entry point
    in :func:`on_sys_path`.
    """
    site = tmp_path_factory.mktemp("example-view-site")
    offline = ["--quiet", "--no-deps", "--no-index", "--no-build-isolation"]
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            *offline,
            "--target",
            str(site),
            str(EXAMPLE_VIEW),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return site


@contextmanager
def on_sys_path(site: Path) -> Iterator[None]:
    """``site`` first on ``sys.path`` (so its entry points are found) for the block."""
    sys.path.insert(0, str(site))
    try:
        yield
    finally:
        sys.path.remove(str(site))
