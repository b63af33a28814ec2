"""What users install: built packages ship the board, and no extra brings torch or CUDA."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.slow

STATIC = "src/tensorsight/board/static"


def _clean_copy(dest: Path) -> Path:
    """The checkout's tracked and unignored files, as a fresh clone would have them."""
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    listed = subprocess.run(
        ["git", "-C", str(ROOT), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        capture_output=True, check=True,
    ).stdout.decode().split("\0")  # fmt: skip
    for name in filter(None, listed):
        src = ROOT / name
        if src.is_file() and not name.startswith(STATIC):  # deleted but not yet committed
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name)
    assert not (dest / STATIC).exists()
    assert not (dest / "web" / "node_modules").exists()
    return dest


def _build(tree: Path, *args: str, path: str | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    if path is not None:
        env["PATH"] = path
    return subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(tree / "dist"), *args],
        cwd=tree, capture_output=True, text=True, env=env, timeout=600, check=False,
    )  # fmt: skip


def _assert_wheel_ships_the_board(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        index = zf.read("tensorsight/board/static/index.html").decode()
    # every script and style sheet index.html loads is in the wheel too
    assets = [part.split('"')[0] for part in index.split('"./')[1:]]
    assert assets, index
    for asset in assets:
        assert f"tensorsight/board/static/{asset}" in names, asset
    assert not any("node_modules" in n for n in names)


@pytest.mark.skipif(shutil.which("npm") is None, reason="needs node and npm")
def test_a_wheel_built_from_a_clean_checkout_ships_the_board(tmp_path):
    tree = _clean_copy(tmp_path / "src")
    done = _build(tree, "--wheel")
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    (wheel,) = (tree / "dist").glob("*.whl")
    _assert_wheel_ships_the_board(wheel)


@pytest.mark.skipif(shutil.which("npm") is None, reason="needs node and npm")
def test_the_sdist_carries_the_sources_and_the_build_and_its_wheel_ships_the_board(tmp_path):
    tree = _clean_copy(tmp_path / "src")
    done = _build(tree)  # the sdist, then a wheel built from the unpacked sdist
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    (sdist,) = (tree / "dist").glob("*.tar.gz")
    with tarfile.open(sdist) as tf:
        names = {n.split("/", 1)[1] for n in tf.getnames() if "/" in n}
    assert {"hatch_build.py", "web/package.json", "web/package-lock.json"} <= names
    assert f"{STATIC}/index.html" in names
    assert not any("node_modules" in n for n in names)
    (wheel,) = (tree / "dist").glob("*.whl")
    _assert_wheel_ships_the_board(wheel)


def test_without_node_and_without_a_build_the_package_build_says_what_to_install(tmp_path):
    tree = _clean_copy(tmp_path / "src")
    empty = tmp_path / "bin"  # a PATH with no node, npm or npx
    empty.mkdir()
    done = _build(tree, "--wheel", path=str(empty))
    assert done.returncode != 0
    assert "node and npm are not installed" in done.stdout + done.stderr
    assert "Install node 20+ and npm" in done.stdout + done.stderr
    assert not (tree / "dist").exists() or not list((tree / "dist").glob("*.whl"))


def _pip_report(*args: str) -> list[dict[str, object]]:
    done = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--dry-run", "--quiet", "--report", "-",
         "--disable-pip-version-check", *args],
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    if done.returncode != 0 and "Could not find a version" in done.stderr:
        pytest.skip(f"the package index cannot be reached: {done.stderr.strip()[-300:]}")
    assert done.returncode == 0, done.stderr[-2000:]
    installs: list[dict[str, object]] = json.loads(done.stdout)["install"]
    return installs


@pytest.mark.parametrize("extra", ["all", "torch", "lightning", "transformers", "accelerate"])
def test_installing_an_extra_next_to_a_cpu_torch_adds_no_cuda_and_no_other_torch(extra):
    torch = pytest.importorskip("torch")
    assert torch.__version__.startswith("2.13.0"), torch.__version__  # the dev pin
    installs = _pip_report(f"{ROOT}[{extra}]")
    names = sorted(str(i["metadata"]["name"]).lower() for i in installs)  # type: ignore[index]
    assert "tensorsight" in names  # the report is real
    assert [n for n in names if n.startswith("nvidia-") or n in ("torch", "triton")] == []


def test_all_resolved_as_in_a_fresh_venv_brings_no_torch_and_no_cuda():
    # --ignore-installed: what `pip install 'tensorsight[all]'` picks in an empty venv
    installs = _pip_report("--ignore-installed", f"{ROOT}[all]")
    names = sorted(str(i["metadata"]["name"]).lower() for i in installs)  # type: ignore[index]
    assert {"tensorsight", "starlette", "libcst", "pyarrow", "onnx"} <= set(names)
    assert [n for n in names if n.startswith("nvidia-") or n in ("torch", "triton")] == []
