"""tensorsight.migrate(): validation, -o, --write with git, --verify."""

import subprocess
import sys
from pathlib import Path

import pytest

import tensorsight
from tensorsight.errors import InputFileError, MigrationError, UsageError
from tensorsight.migrate import MigrationReport, migrate

CUDA = "import torch\nx = torch.zeros(1, device='cuda')\n"


@pytest.fixture
def project(tmp_path) -> Path:
    root = tmp_path / "proj"
    (root / "pkg").mkdir(parents=True)
    (root / "train.py").write_text(CUDA)
    (root / "pkg" / "util.py").write_text("import torch\nok = torch.cuda.is_available()\n")
    (root / "README.txt").write_text("data files are copied too\n")
    return root


def _git(root: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.email=t@t", "-c", "user.name=t", *args],
        cwd=root,
        check=True,
        capture_output=True,
    )


def test_public_name_and_dry_run_writes_nothing(project):
    report = tensorsight.migrate(project)  # the package is callable too (PRODUCT.md)
    assert isinstance(report, MigrationReport)
    assert report.mode == "dry-run"
    assert (project / "train.py").read_text() == CUDA
    assert "+x = torch.zeros(1, device=_device.type)" in report.diff()
    assert report.counts()["files_changed"] == 2
    assert report.tool_version == tensorsight.__version__
    assert report.ruleset_version == "4"


def test_output_copy_and_report(project, tmp_path):
    out = tmp_path / "out"
    report = migrate(project, output=out)
    assert report.output_dir == str(out.resolve())
    assert "_device" in (out / "train.py").read_text()
    assert (out / "README.txt").read_text() == "data files are copied too\n"
    assert (out / "tensorsight-migration-report.md").is_file()
    assert (out / "tensorsight-migration-report.json").is_file()
    assert (project / "train.py").read_text() == CUDA


def test_bad_inputs_raise_one_sentence_errors(project, tmp_path):
    with pytest.raises(InputFileError, match="does not exist"):
        migrate(tmp_path / "nope")
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    with pytest.raises(InputFileError, match="symlink loop"):
        migrate(loop)
    with pytest.raises(
        UsageError, match=r"Unknown migration target 'cuda'.*accelerator, npu, xpu, mps"
    ):
        migrate(project, target="cuda")
    with pytest.raises(UsageError, match="inside the input folder"):
        migrate(project, output=project / "migrated")
    with pytest.raises(UsageError, match="exclude each other"):
        migrate(project, output=tmp_path / "o", write=True)
    (tmp_path / "notes.txt").write_text("x")
    with pytest.raises(UsageError, match=r"not a \.py file"):
        migrate(tmp_path / "notes.txt")


def test_existing_non_empty_output_is_refused_and_untouched(project, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    with pytest.raises(UsageError, match="not empty; nothing was written"):
        migrate(project, output=out)
    assert [p.name for p in out.iterdir()] == ["keep.txt"]
    assert (out / "keep.txt").read_text() == "mine"


def test_write_refuses_untracked_and_dirty_trees(project):
    with pytest.raises(MigrationError, match="not in a git work tree"):
        migrate(project, write=True)
    _git(project, "init", "-q")
    _git(project, "add", ".")
    _git(project, "commit", "-qm", "init")
    (project / "train.py").write_text(CUDA + "# local edit\n")
    with pytest.raises(MigrationError, match="uncommitted changes"):
        migrate(project, write=True)
    assert (project / "train.py").read_text() == CUDA + "# local edit\n"
    report = migrate(project, write=True, force=True)
    assert report.mode == "write"
    assert "_device" in (project / "train.py").read_text()


def test_write_on_a_clean_tree(project):
    _git(project, "init", "-q")
    _git(project, "add", ".")
    _git(project, "commit", "-qm", "init")
    migrate(project / "pkg" / "util.py", write=True)
    assert "torch.accelerator.is_available()" in (project / "pkg" / "util.py").read_text()
    assert (project / "train.py").read_text() == CUDA


def test_verify_runs_in_a_copy_for_a_dry_run(project):
    check = "import pathlib; assert '_device' in pathlib.Path('train.py').read_text()"
    cmd = f'{sys.executable} -c "{check}"'
    report = migrate(project, verify=cmd)
    assert report.verify is not None
    assert report.verify.ok, report.verify.output_tail
    failing = migrate(project, verify=f"{sys.executable} -c 'raise SystemExit(3)'")
    assert failing.verify is not None
    assert failing.verify.returncode == 3


def test_tensorsight_migrate_is_callable_in_a_fresh_interpreter(project):
    code = (
        "import sys, tensorsight, tensorsight.migrate.cli; "
        "r = tensorsight.migrate(sys.argv[1]); print(r.counts()['files_changed'])"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(project)], capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "2"
