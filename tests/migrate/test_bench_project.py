"""The real-project benchmark skips cleanly without a project and runs on a small one."""

from __future__ import annotations

from benchmarks.harness import Harness

from benchmarks import bench_migrate_project
from tests.conftest import ROOT


def test_skips_with_how_to_fetch_when_the_project_is_absent(monkeypatch, tmp_path):
    monkeypatch.setenv(bench_migrate_project.ENV, str(tmp_path / "missing"))
    h = Harness("migrate_project", repeat=1, quick=True)
    bench_migrate_project.run(h)
    assert h.results == {}
    assert len(h.lines) == 1
    assert h.lines[0].startswith(
        f"skipped: no project at {tmp_path / 'missing'}; fetch it: git clone"
    )


def test_reports_files_parsed_lines_per_second_and_agreement(monkeypatch):
    project = ROOT / "tests" / "migrate" / "sample_project"
    monkeypatch.setenv(bench_migrate_project.ENV, str(project))
    h = Harness("migrate_project", repeat=1, quick=True)
    bench_migrate_project.run(h)
    assert h.anchor == bench_migrate_project.ANCHOR
    assert set(h.results) == {
        bench_migrate_project.ANCHOR,
        bench_migrate_project.MIGRATE,
        bench_migrate_project.SCAN,
    }
    text = "\n".join(h.lines)
    assert "(4 files, " in text
    assert "parsed with the pre-scan: 4 of 4 files" in text
    assert "lines per CPU-second" in text
    assert text.endswith("with and without the pre-scan: yes")
