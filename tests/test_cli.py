from __future__ import annotations

import subprocess
import sys

import pytest

from tensorsight import __version__, cli
from tensorsight.errors import UsageError
from tests.conftest import run_cli


def test_version_flag_prints_version():
    result = run_cli("--version")
    assert result.returncode == 0
    assert result.stdout.strip() == f"tensorsight {__version__}"


def test_help_lists_examples():
    result = run_cli("--help")
    assert result.returncode == 0
    assert "usage: tensorsight" in result.stdout
    assert "examples:" in result.stdout


def test_unknown_option_is_one_line_error_with_exit_2():
    result = run_cli("--no-such-option")
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("error: ")
    assert "--no-such-option" in lines[0]


def test_every_subcommand_is_listed_in_help_with_an_example():
    parser = cli.build_parser()
    listed = parser.format_help()
    subparsers = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    assert {"board", "compare", "dump-onnx", "export", "inspect", "migrate"} <= set(
        subparsers.choices
    )
    for name, sub in subparsers.choices.items():
        assert name in listed
        assert "example" in sub.format_help().lower(), f"{name} --help has no example"


def test_command_specs_name_the_entry_that_registers_each_command():
    for command, spec in cli.COMMAND_SPECS.items():
        assert spec in cli.SUBCOMMANDS, command
        parser = cli.build_parser(command)
        subparsers = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
        assert command in subparsers.choices, command
    full = cli.build_parser("no-such-command")  # unknown words register everything
    subparsers = next(a for a in full._actions if a.__class__.__name__ == "_SubParsersAction")
    assert set(cli.COMMAND_SPECS) <= set(subparsers.choices)


def test_a_command_imports_only_its_own_part(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    code = (
        "import sys\n"
        "from tensorsight import cli\n"
        f"code = cli.main(['--debug', 'compare', {str(a)!r}, {str(b)!r}])\n"
        "parts = ('summary', 'migrate', 'board', 'landscape')\n"
        "print(code, sorted(p for p in parts if 'tensorsight.' + p in sys.modules))\n"
    )
    a.mkdir()
    b.mkdir()
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert "DumpFormatError" in out.stderr  # --debug: the real error, raised
    assert "tensorsight.summary" not in out.stderr
    code = code.replace("'--debug', ", "")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split("\n")[0] == "2 []"


def test_no_command_prints_help_and_exits_2(capsys):
    assert cli.main([]) == cli.EXIT_USAGE
    assert "usage: tensorsight" in capsys.readouterr().err


def _failing(args):
    raise UsageError("Option '--x' 'bad': expected a number, got 'bad'.")


def _register_boom(subparsers):
    p = subparsers.add_parser("boom")
    p.set_defaults(func=_failing)


def _install_failing_subcommand(monkeypatch):
    monkeypatch.setattr(cli, "SUBCOMMANDS", (*cli.SUBCOMMANDS, "tests.test_cli:_register_boom"))


def test_user_error_is_one_line_without_traceback(monkeypatch, capsys):
    _install_failing_subcommand(monkeypatch)
    assert cli.main(["boom"]) == cli.EXIT_USAGE
    err = capsys.readouterr().err
    assert err == "error: Option '--x' 'bad': expected a number, got 'bad'.\n"


def _noting(args):
    import logging

    logging.getLogger("tensorsight.notice").info("tensorsight: building a kernel (once)")
    logging.getLogger("tensorsight.notice").debug("not shown")
    return 0


def _register_note(subparsers):
    subparsers.add_parser("note").set_defaults(func=_noting)


def test_a_command_prints_the_librarys_notices_as_bare_lines(monkeypatch, capsys):
    """Library code logs its one-time progress lines; only the command line prints them."""
    import logging

    monkeypatch.setattr(cli, "SUBCOMMANDS", (*cli.SUBCOMMANDS, "tests.test_cli:_register_note"))
    notices = logging.getLogger("tensorsight.notice")
    monkeypatch.setattr(notices, "handlers", [])
    monkeypatch.setattr(notices, "propagate", True)
    for _ in range(2):  # one handler, however many commands a process runs
        assert cli.main(["note"]) == 0
        assert capsys.readouterr().err == "tensorsight: building a kernel (once)\n"
    assert len(notices.handlers) == 1
    assert notices.propagate is False


def test_show_on_stderr_writes_notices_to_the_current_stderr(monkeypatch, capsys):
    """``tensorsight dump`` builds the native capture in the recorded process: its side of
    the command (capture/_hook.py) shows the same notices."""
    import logging

    from tensorsight._notices import notice, show_on_stderr

    notices = logging.getLogger("tensorsight.notice")
    monkeypatch.setattr(notices, "handlers", [])
    monkeypatch.setattr(notices, "propagate", True)
    show_on_stderr()
    notice("tensorsight: building the native op capture")
    assert capsys.readouterr().err == "tensorsight: building the native op capture\n"


def test_debug_flag_shows_the_traceback(monkeypatch):
    _install_failing_subcommand(monkeypatch)
    with pytest.raises(UsageError, match="expected a number"):
        cli.main(["--debug", "boom"])


def test_python_dash_m_works_like_the_script():
    result = run_cli("--version")
    assert __version__ in result.stdout


def test_help_without_parts_matches_the_full_help():
    # `tensorsight --help` lists the commands from COMMAND_HELP; each part's register() is the
    # truth, so the two texts must be the same, word for word and in the same order.
    assert cli._help_parser().format_help() == cli.build_parser().format_help()


PARTS = ("summary", "compare", "capture", "migrate", "board", "data", "demo", "landscape")


@pytest.mark.parametrize("flag", ["--help", "--version"])
def test_help_and_version_import_no_numpy_and_no_part(flag):
    # -X importtime lists every module the real process imported, on stderr
    out = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "tensorsight", flag],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    imported = {
        line.rsplit("|", 1)[1].strip()
        for line in out.stderr.splitlines()
        if line.startswith("import time:") and "|" in line
    }
    assert "tensorsight.cli" in imported  # the listing is real
    heavy = sorted(
        m
        for m in imported
        if m.split(".")[0] == "numpy" or any(m.startswith(f"tensorsight.{p}") for p in PARTS)
    )
    assert heavy == []
    assert out.stdout.startswith("usage: tensorsight" if flag == "--help" else "tensorsight ")


def test_demo_without_the_front_end_stops_before_training(tmp_path, monkeypatch, capsys):
    from tensorsight.board import app

    monkeypatch.setattr(app, "DEFAULT_STATIC_DIR", tmp_path / "no-static")
    logdir = tmp_path / "demo"
    assert cli.main(["demo", "--logdir", str(logdir)]) == cli.EXIT_USAGE
    assert capsys.readouterr().err.startswith("error: Board front end ")
    assert not logdir.exists()  # nothing trained or written
