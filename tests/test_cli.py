from __future__ import annotations

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


def test_debug_flag_shows_the_traceback(monkeypatch):
    _install_failing_subcommand(monkeypatch)
    with pytest.raises(UsageError, match="expected a number"):
        cli.main(["--debug", "boom"])


def test_python_dash_m_works_like_the_script():
    result = run_cli("--version")
    assert __version__ in result.stdout
