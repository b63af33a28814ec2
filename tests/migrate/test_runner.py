"""Files: discovery, bad input per file (never raises), encodings, parallel runs."""

import os
from pathlib import Path

from tensorsight.migrate.model import Changed, Failed, Skipped, Unchanged
from tensorsight.migrate.runner import Job, discover, migrate_file, run_jobs

CUDA = "import torch\nx = torch.zeros(1).cuda()\n"


def _job(path: Path) -> Job:
    return Job(str(path), path.name)


def test_syntax_error_is_a_failed_result_naming_line(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("import torch\nx = torch.cuda.is_available(\n")
    result = migrate_file(_job(bad), "accelerator", False)
    assert isinstance(result, Failed)
    assert result.error.startswith("has a syntax error at line")


def test_non_utf8_file_is_a_failed_result(tmp_path):
    bad = tmp_path / "latin.py"
    bad.write_bytes(b"# caf\xe9\nimport torch\nx = torch.cuda.is_available()\n")
    result = migrate_file(_job(bad), "accelerator", False)
    assert isinstance(result, Failed)
    assert "not valid UTF-8" in result.error
    assert "at byte 5" in result.error


def test_declared_encoding_is_kept(tmp_path):
    src = tmp_path / "latin.py"
    src.write_bytes(
        b"# -*- coding: latin-1 -*-\n# caf\xe9\nimport torch\nok = torch.cuda.is_available()\n"
    )
    result = migrate_file(_job(src), "accelerator", False)
    assert isinstance(result, Changed)
    assert result.encoding == "iso-8859-1"
    assert "café" in result.new_code


def test_empty_and_unrelated_files_are_unchanged(tmp_path):
    (tmp_path / "empty.py").write_text("")
    (tmp_path / "plain.py").write_text("print('hello')\n")
    for name in ("empty.py", "plain.py"):
        result = migrate_file(_job(tmp_path / name), "accelerator", False)
        assert result == Unchanged(name)


def test_windows_line_endings_survive(tmp_path):
    src = tmp_path / "crlf.py"
    src.write_bytes(b"import torch\r\nok = torch.cuda.is_available()\r\n")
    result = migrate_file(_job(src), "accelerator", False)
    assert isinstance(result, Changed)
    assert result.new_code == "import torch\r\nok = torch.accelerator.is_available()\r\n"


def test_discover_skips_hidden_venv_and_lists_native_sources(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "a.py").write_text(CUDA)
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "hook.py").write_text(CUDA)
    (tmp_path / "env").mkdir()
    (tmp_path / "env" / "pyvenv.cfg").write_text("")
    (tmp_path / "env" / "lib.py").write_text(CUDA)
    (tmp_path / "kernels").mkdir()
    (tmp_path / "kernels" / "add.cu").write_text("__global__ void add() {}\n")
    jobs, listed = discover(tmp_path)
    assert [j.rel for j in jobs] == ["pkg/a.py"]
    assert listed == [
        Skipped("kernels/add.cu", "CUDA C++ source: listed for review, not rewritten.")
    ]


def test_symlink_loops_do_not_hang_or_raise(tmp_path):
    (tmp_path / "a.py").write_text(CUDA)
    os.symlink(tmp_path, tmp_path / "loop")  # a folder that contains itself
    os.symlink(tmp_path / "self.py", tmp_path / "self.py")  # a file link to itself
    jobs, _ = discover(tmp_path)
    results = {j.rel: migrate_file(j, "accelerator", False) for j in jobs}
    assert set(results) == {"a.py", "self.py"}
    assert isinstance(results["a.py"], Changed)
    failed = results["self.py"]
    assert isinstance(failed, Failed)
    assert failed.error.startswith("cannot be read")


def test_parallel_run_matches_serial_run(tmp_path):
    for i in range(20):
        (tmp_path / f"m{i:02}.py").write_text(CUDA if i % 2 else "x = 1\n")
    jobs, _ = discover(tmp_path)
    seen: list[int] = []
    parallel = run_jobs(jobs, "accelerator", workers=2, progress=seen.append)
    serial = run_jobs(jobs, "accelerator", workers=1)
    assert parallel == serial
    assert sum(seen) == 20
    assert sum(isinstance(r, Changed) for r in parallel) == 10
