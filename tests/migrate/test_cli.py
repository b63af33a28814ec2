"""`tensorsight migrate` as a user runs it (child processes)."""

import json

from tests.conftest import run_cli

CUDA = "import torch\nx = torch.zeros(1, device='cuda')\ny = batch.cuda()\n"


def test_help_has_examples_and_exit_codes():
    out = run_cli("migrate", "--help")
    assert out.returncode == 0
    assert "examples:" in out.stdout
    assert "--unsafe-fixes" in out.stdout
    assert "exit codes:" in out.stdout


def test_dry_run_prints_diff_then_summary_and_strict_fails(tmp_path):
    src = tmp_path / "t.py"
    src.write_text(CUDA)
    out = run_cli("migrate", str(src))
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("--- a/t.py\n+++ b/t.py\n")
    assert "+x = torch.zeros(1, device=_device.type)" in out.stdout
    assert "1 rewritten, 1 manual" in out.stderr
    assert "unsafe fix(es) not applied" in out.stderr
    assert src.read_text() == CUDA
    strict = run_cli("migrate", str(src), "--strict", "--quiet")
    assert strict.returncode == 1
    assert strict.stdout == ""
    assert strict.stderr == ""


def test_output_dir_report_formats_and_unsafe_fixes(tmp_path):
    (tmp_path / "p").mkdir()
    (tmp_path / "p" / "t.py").write_text(CUDA)
    report = tmp_path / "r.json"
    out = run_cli(
        "migrate",
        str(tmp_path / "p"),
        "-o",
        str(tmp_path / "out"),
        "--unsafe-fixes",
        "--report",
        str(report),
        "--strict",
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout == ""
    data = json.loads(report.read_text())
    assert data["summary"]["manual"] == 0
    assert "y = batch.to(_device)" in (tmp_path / "out" / "t.py").read_text()


def test_usage_errors_exit_2_with_one_line(tmp_path):
    src = tmp_path / "t.py"
    src.write_text(CUDA)
    cases = [
        (["migrate", str(tmp_path / "missing")], "does not exist"),
        (["migrate", str(src), "--target", "npux"], "Did you mean 'npu'?"),
        (["migrate", str(src), "--report", "r.x", "--format", "pdf"], "Report format 'pdf'"),
        (["migrate", str(src), "-o", str(tmp_path / "o"), "--write"], "not allowed with"),
    ]
    for args, needle in cases:
        out = run_cli(*args)
        assert out.returncode == 2, (args, out.stderr)
        assert needle in out.stderr
        assert out.stderr.startswith("error: ")
        assert len(out.stderr.strip().splitlines()) == 1


def test_failed_file_exits_1(tmp_path):
    (tmp_path / "bad.py").write_text("import torch\ntorch.cuda.synchronize(\n")
    out = run_cli("migrate", str(tmp_path), "-q")
    assert out.returncode == 1
