"""Report formats come from one registry: built-ins, a third-party format, the CLI over both."""

from __future__ import annotations

import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest

from tensorsight import cli
from tensorsight.compare import report
from tensorsight.compare.report import REPORT_FORMATS, ReportFormat
from tensorsight.compare.result import Comparison, OpComparison
from tensorsight.errors import UsageError

GROUP = "tensorsight.report_formats"


def render_markdown(comparison, path=None):
    """A third party's renderer: one Markdown table row per error row."""
    lines = ["| op | tensor | verdict |", "| --- | --- | --- |"]
    flagged = [r for r in comparison.rows if r.verdict != "pass"]
    lines += [f"| {r.op} | {r.tensor} | {r.verdict} |" for r in flagged]
    first = comparison.first_divergence
    lines.append(f"first divergence: {first.op if first else 'none'}")
    text = "\n".join(lines) + "\n"
    if path is not None:
        Path(path).write_text(text, encoding="utf-8")
    return text


MARKDOWN = ReportFormat("markdown", ".md", render_markdown, "Markdown table of flagged rows")


@pytest.fixture
def installed(monkeypatch):
    """REPORT_FORMATS as seen in an environment where a package declares, in the group
    ``tensorsight.report_formats``, ``markdown`` (this module's MARKDOWN) and ``broken``
    (a module that does not exist); restored afterwards."""
    eps = [
        metadata.EntryPoint(name="markdown", value=f"{__name__}:MARKDOWN", group=GROUP),
        metadata.EntryPoint(name="broken", value="no_such_package_xyz.fmt:FORMAT", group=GROUP),
        metadata.EntryPoint(name="csv", value=f"{__name__}:MARKDOWN", group=GROUP),  # shadowing
    ]
    real = metadata.entry_points

    def entry_points(**kwargs):
        return eps if kwargs.get("group") == GROUP else real(**kwargs)

    monkeypatch.setattr(metadata, "entry_points", entry_points)
    monkeypatch.setattr(REPORT_FORMATS, "_entries", dict(REPORT_FORMATS._entries))
    monkeypatch.setattr(REPORT_FORMATS, "_loaded", dict(REPORT_FORMATS._loaded))
    monkeypatch.setattr(REPORT_FORMATS, "_errors", dict(REPORT_FORMATS._errors))
    monkeypatch.setattr(REPORT_FORMATS, "_scanned", False)


def _comparison() -> Comparison:
    rows = (
        OpComparison(0, "aten.mm.default", "M.fc", "forward", "output.0", verdict="pass"),
        OpComparison(1, "aten.relu.default", "M.act", "forward", "output.0", verdict="error"),
    )
    return Comparison("bench", "target", rows, first_divergence_row=1)


@pytest.fixture(scope="module")
def dumps(tmp_path_factory):
    """Two dumps of a small model, the target with a planted bug in ``3.0`` (see there)."""
    from tests.data.test_comparisons import make_comparison_logdir

    logdir = tmp_path_factory.mktemp("logs")
    make_comparison_logdir(logdir)
    return str(logdir / "dumps" / "bench"), str(logdir / "dumps" / "target")


def test_built_in_formats_are_registered_with_their_file_names():
    assert REPORT_FORMATS.names()[:6] == ["csv", "xlsx", "json", "html", "node_data", "summary"]
    suffixes = {n: report.get_format(n).suffix for n in REPORT_FORMATS.names()[:6]}
    assert suffixes == {
        "csv": ".csv",
        "xlsx": ".xlsx",
        "json": ".json",
        "html": ".html",
        "node_data": ".node_data.json",
        "summary": ".txt",
    }
    for name in suffixes:
        assert report.get_format(name).name == name


def test_to_methods_go_through_the_registry(tmp_path):
    c = _comparison()
    assert c.to_csv() == report.render(c, "csv")
    assert c.to_report("json") == c.to_json()
    assert Comparison.from_json(c.to_report("json")) == c
    assert c.summary(top=1) == report.render(c, "summary", top=1)
    assert "first divergence: aten.relu.default" in c.summary()
    path = report.write(c, "summary", tmp_path)
    assert path == tmp_path / "comparison.txt"
    assert path.read_text(encoding="utf-8") == c.summary() + "\n"
    with pytest.raises(UsageError, match="binary, needs a file path"):
        report.render(c, "xlsx")
    with pytest.raises(UsageError, match=r"Unknown report format 'cvs'\. Did you mean 'csv'\?"):
        c.to_report("cvs")


def test_the_registry_and_the_result_do_not_import_each_other():
    code = (
        "import sys\n"
        "import tensorsight.compare.report\n"
        "assert 'tensorsight.compare.result' not in sys.modules\n"
        "import tensorsight.compare.result\n"
        "print(sorted(m for m in sys.modules if m.startswith('tensorsight.compare.report.')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"  # renderers load when a format is first used


def test_third_party_format_from_the_api(installed, tmp_path):
    c = _comparison()
    assert REPORT_FORMATS.names()[6:] == ["markdown", "broken"]
    text = c.to_report("markdown", tmp_path / "r.md")
    assert text.splitlines()[2:] == [
        "| aten.relu.default | output.0 | error |",
        "first divergence: aten.relu.default",
    ]
    assert (tmp_path / "r.md").read_text(encoding="utf-8") == text
    assert report.get_format("csv").suffix == ".csv"  # built-ins win over an entry point
    with pytest.raises(UsageError, match="'broken' is unavailable: ModuleNotFoundError"):
        c.to_report("broken")
    status = {s.name: s.available for s in REPORT_FORMATS.status()}
    assert status["markdown"]
    assert not status["broken"]


def test_third_party_format_from_the_cli(installed, dumps, tmp_path, capsys):
    with pytest.raises(SystemExit) as info:
        cli.main(["compare", "--help"])
    assert info.value.code == 0
    help_text = " ".join(capsys.readouterr().out.split())
    assert "csv, xlsx, json, html, node_data, summary, markdown, broken (default: csv,json)" in (
        help_text
    )

    bench, target = dumps
    out = tmp_path / "report"
    code = cli.main(["compare", bench, target, "-o", str(out), "--format", "markdown,csv", "-q"])
    assert code == 1  # the planted bug
    md = (out / "comparison.md").read_text(encoding="utf-8")
    assert md.splitlines()[-1].startswith("first divergence: aten.")
    assert "| error |" in md
    assert (out / "comparison.csv").is_file()
    assert sorted(p.name for p in out.iterdir()) == ["comparison.csv", "comparison.md"]


def test_cli_format_errors_list_the_registered_formats(installed, tmp_path, capsys):
    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    assert cli.main(["compare", a, b, "--format", "csv,pdf"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (
        "error: Option --format 'csv,pdf': unknown format 'pdf'. Expected a comma-separated "
        "list of csv, xlsx, json, html, node_data, summary, markdown, broken."
    )
    # a format that cannot be imported is refused before any dump is read
    assert cli.main(["compare", a, b, "--format", "broken"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: Report format 'broken' is unavailable: ModuleNotFoundError")


def test_healthy_runs_read_healthy_in_a_third_party_format(installed, dumps, tmp_path):
    bench, _ = dumps
    out = tmp_path / "same"
    assert cli.main(["compare", bench, bench, "-o", str(out), "--format", "markdown", "-q"]) == 0
    md = (out / "comparison.md").read_text(encoding="utf-8").splitlines()
    assert md[-1] == "first divergence: none"
    assert not any("| error |" in line for line in md)


def test_write_all_writes_each_format_as_write_does(tmp_path, monkeypatch):
    c = _comparison()
    forks: list[int] = []
    real_fork = report.os.fork

    def fork() -> int:
        pid = real_fork()
        if pid:  # in the parent: count the children made
            forks.append(pid)
        return pid

    monkeypatch.setattr(report.os, "fork", fork)
    names = ["csv", "json", "summary", "html"]
    (tmp_path / "all").mkdir()
    paths = report.write_all(c, names, tmp_path / "all")
    assert paths == [
        tmp_path / "all" / f"comparison{s}" for s in (".csv", ".json", ".txt", ".html")
    ]
    alone = tmp_path / "one"
    alone.mkdir()
    for name, path in zip(names, paths, strict=True):
        assert path.read_bytes() == report.write(c, name, alone).read_bytes()
    assert len(forks) == (1 if sys.platform == "linux" else 0)  # json and html in the child


def test_a_failed_writer_process_leaves_its_formats_to_the_caller(tmp_path, monkeypatch):
    c = _comparison()
    if sys.platform != "linux":
        pytest.skip("the formats are written in one process here")

    def failing_child(comparison, fmts, paths):  # a child that dies before writing
        pid = report.os.fork()
        if pid == 0:
            report.os._exit(1)
        return pid

    monkeypatch.setattr(report, "_fork_writer", failing_child)
    (tmp_path / "r").mkdir()
    paths = report.write_all(c, ["csv", "json"], tmp_path / "r")
    assert Comparison.from_json(paths[1]) == c  # written here after the child failed
    assert paths[0].read_text(encoding="utf-8") == c.to_csv()


def test_a_hung_writer_process_is_stopped_and_its_formats_written_here(tmp_path, monkeypatch):
    c = _comparison()
    if sys.platform != "linux":
        pytest.skip("the formats are written in one process here")

    def hung_child(comparison, fmts, paths):  # a child stuck forever (a lock held at fork)
        pid = report.os.fork()
        if pid == 0:
            try:
                report.time.sleep(3600)
            finally:
                report.os._exit(0)
        children.append(pid)
        return pid

    children: list[int] = []
    monkeypatch.setattr(report, "_fork_writer", hung_child)
    monkeypatch.setattr(report, "CHILD_GRACE_S", 0.2)
    (tmp_path / "r").mkdir()
    paths = report.write_all(c, ["csv", "json"], tmp_path / "r")
    assert Comparison.from_json(paths[1]) == c  # written here after the child was stopped
    with pytest.raises(ChildProcessError):  # killed and reaped, not left behind
        report.os.waitpid(children[0], report.os.WNOHANG)
