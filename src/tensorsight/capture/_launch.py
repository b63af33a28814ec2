"""The parent side of ``tensorsight dump``: run a command in a child process that records itself.

:func:`run_dump_command` checks the options and the command, clears the folder (``overwrite``),
runs the command with the start-up hook (``_bootstrap/`` first on ``PYTHONPATH``, the settings
in ``TENSORSIGHT_DUMP_CONFIG``, see :mod:`tensorsight.capture._hook`), forwards SIGTERM and
SIGINT to it, waits, and returns a :class:`DumpRun` with the child's exit status and what each
rank wrote. Commands it understands (:func:`resolve_command`):

- ``train.py ARGS`` and ``-m MODULE ARGS``: run by this interpreter (``sys.executable``);
- ``python[X.Y] [OPTIONS] train.py ARGS`` or ``... -m MODULE ARGS``: that interpreter, as typed;
- ``torchrun [OPTIONS] train.py ARGS`` and ``python -m torch.distributed.run ...``: torchrun's
  own options are read with torch's parser, to know the script its workers run.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tensorsight.dumpformat import _fs
from tensorsight.errors import UsageError

__all__ = [
    "BOOTSTRAP_DIR",
    "ENV_CONFIG",
    "ChildCommand",
    "DumpRun",
    "RankResult",
    "child_env",
    "parse_int_list",
    "parse_size",
    "resolve_command",
    "run_dump_command",
]

ENV_CONFIG = "TENSORSIGHT_DUMP_CONFIG"
BOOTSTRAP_DIR = Path(__file__).resolve().parent / "_bootstrap"
_PYTHON = re.compile(r"python[0-9.]*(\.exe)?")
_TORCHRUN_MODULES = ("torch.distributed.run", "torch.distributed.launch")
_RANK_DIR = re.compile(r"rank\d+")
_SIZE = re.compile(r"(\d+)\s*([kmgt]?)i?b?", re.IGNORECASE)


@dataclass(frozen=True)
class ChildCommand:
    """What runs in the child, and which of its processes record.

    Attributes:
        argv: The command line to run.
        target_kind: ``"script"`` or ``"module"``.
        target: The script's real path, or the module name.
        launcher: ``"torchrun"`` when torchrun starts the processes that record, else ``None``.
    """

    argv: tuple[str, ...]
    target_kind: str
    target: str
    launcher: str | None = None


@dataclass(frozen=True)
class RankResult:
    """What one rank wrote (from its manifest).

    Attributes:
        rank: The rank.
        steps: The steps recorded.
        complete: Whether the dump was closed normally.
        reason: Why it is incomplete, when known.
    """

    rank: int
    steps: tuple[int, ...]
    complete: bool
    reason: str | None


@dataclass(frozen=True)
class DumpRun:
    """The outcome of ``tensorsight dump``.

    Attributes:
        path: The dump folder.
        exit_code: The command's own exit status (128 + N when signal N killed it).
        ranks: One :class:`RankResult` per rank that wrote a dump (empty: nothing recorded).
    """

    path: Path
    exit_code: int
    ranks: tuple[RankResult, ...]


def parse_int_list(option: str, text: str) -> tuple[int, ...]:
    """``"0,2-4"`` -> ``(0, 2, 3, 4)``: comma-separated numbers and inclusive ranges."""
    values: set[int] = set()
    for part in text.split(","):
        first, dash, last = part.strip().partition("-")
        if not first.isdigit() or (dash and not last.isdigit()):
            msg = f"Option {option} {text!r}: {part.strip()!r} is not a number or a range. "
            msg += "Expected e.g. 0,2-4."
            raise UsageError(msg)
        lo, hi = int(first), int(last) if dash else int(first)
        if hi < lo:
            msg = f"Option {option} {text!r}: range {part.strip()!r} runs backwards. "
            msg += f"Expected {hi}-{lo}."
            raise UsageError(msg)
        values.update(range(lo, hi + 1))
    return tuple(sorted(values))


def parse_size(option: str, text: str) -> int:
    """``"512M"``, ``"1G"``, ``"4096"`` -> bytes (K, M, G, T are powers of 1024)."""
    match = _SIZE.fullmatch(text.strip())
    if match is None or int(match[1]) == 0:
        msg = f"Option {option} {text!r}: not a size. Expected a positive size, e.g. 512M or 1G."
        raise UsageError(msg)
    power = "kmgt".find(match[2].lower()) + 1 if match[2] else 0
    return int(match[1]) * int(1024**power)


def _script(word: str) -> str:
    path = Path(word)
    if not path.is_file():
        what = "is a folder" if path.is_dir() else "not found"
        msg = f"Script {word!r}: {what}. Expected a Python file (relative to {os.getcwd()!r})."
        raise UsageError(msg)
    return os.path.realpath(path)


def _module(name: str) -> str:
    import importlib.machinery

    top = name.split(".")[0]
    if not name or importlib.machinery.PathFinder.find_spec(top, [os.getcwd(), *sys.path]) is None:
        msg = f"Module {name!r}: not found from {os.getcwd()!r}. Expected an importable module."
        raise UsageError(msg)
    return name


def _python_target(words: list[str], start: int) -> tuple[str, str, int]:
    """(kind, name, index of the script or module) after a python's options at ``start``."""
    i = start
    while i < len(words):
        word = words[i]
        if word == "-m":
            if i + 1 >= len(words):
                break
            return "module", words[i + 1], i + 1
        if word in ("-c", "-"):
            msg = f"Command {' '.join(words)!r}: python {word} cannot be recorded. "
            msg += "Expected a script file or -m MODULE."
            raise UsageError(msg)
        if not word.startswith("-"):
            return "script", word, i
        i += 2 if word in ("-X", "-W", "--check-hash-based-pycs") else 1
    msg = f"Command {' '.join(words)!r}: no script. Expected e.g. -- python train.py ARGS."
    raise UsageError(msg)


def _torchrun_target(words: list[str], start: int) -> tuple[str, str]:
    """(kind, name) of the script torchrun's workers run (``words[start:]``: its arguments)."""
    from torch.distributed.run import get_args_parser

    parser = get_args_parser()
    errors = io.StringIO()
    try:
        with contextlib.redirect_stderr(errors):
            args = parser.parse_args(words[start:])
    except SystemExit as exc:
        last = (errors.getvalue().strip().splitlines() or ["bad arguments"])[-1]
        msg = f"Command {' '.join(words)!r}: torchrun says {last.split('error: ')[-1]!r}. "
        msg += "Expected e.g. -- torchrun --nproc_per_node=2 train.py ARGS."
        raise UsageError(msg) from exc
    if args.no_python:
        msg = f"Command {' '.join(words)!r}: torchrun --no-python runs no Python script. "
        msg += "Expected a script file or -m MODULE."
        raise UsageError(msg)
    if args.module:
        return "module", _module(args.training_script)
    return "script", _script(args.training_script)


def resolve_command(words: list[str]) -> ChildCommand:
    """The child command for the words after ``--`` (see the module doc for the forms).

    Raises:
        UsageError: No command, a script or module that does not exist, a program that is
            neither a Python script, a python nor torchrun.
    """
    if not words:
        msg = "Command: missing. Expected e.g. tensorsight dump -o DIR -- python train.py ARGS."
        raise UsageError(msg)
    first = words[0]
    program = os.path.basename(first)
    if first == "-m":
        kind, name, _ = _python_target(words, 0)
        return ChildCommand((sys.executable, *words), kind, _module(name))
    if program in ("torchrun", "torchrun.exe"):
        if shutil.which(first) is None:
            msg = f"Command {first!r}: not found. Expected torchrun on PATH (it comes with torch)."
            raise UsageError(msg)
        kind, name = _torchrun_target(words, 1)
        return ChildCommand(tuple(words), kind, name, "torchrun")
    if _PYTHON.fullmatch(program):
        if shutil.which(first) is None:
            msg = f"Command {first!r}: not found. Expected a Python interpreter on PATH."
            raise UsageError(msg)
        kind, name, at = _python_target(words, 1)
        if kind == "module" and name in _TORCHRUN_MODULES:
            kind, name = _torchrun_target(words, at + 1)
            return ChildCommand(tuple(words), kind, name, "torchrun")
        name = _module(name) if kind == "module" else _script(name)
        return ChildCommand(tuple(words), kind, name)
    if first.endswith(".py") or Path(first).is_file():
        return ChildCommand((sys.executable, *words), "script", _script(first))
    msg = f"Command {first!r}: not a Python script, python or torchrun. "
    msg += "Expected e.g. -- python train.py ARGS, -- train.py ARGS or -m MODULE ARGS."
    raise UsageError(msg)


def _prepare_folder(path: Path, overwrite: bool) -> None:
    """Refuse a non-empty folder; with ``overwrite``, remove the rank folders it holds."""
    if _fs.exists(path) and not _fs.is_dir(path):
        msg = f"Dump path {str(path)!r}: is a file. Expected a folder (new or empty)."
        raise UsageError(msg)
    if not _fs.exists(path):
        return
    names = sorted(_fs.list_dir(path))
    if names and not overwrite:
        msg = f"Dump path {str(path)!r}: not empty (holds {names[0]!r}). Expected a new or "
        msg += "empty folder. Pass --overwrite to replace the dump in it."
        raise UsageError(msg)
    for name in names:  # only dumps: other files in the folder are the user's
        if _RANK_DIR.fullmatch(name):
            _fs.remove_tree(path / name)


def child_env(path: Path, options: dict[str, Any], command: ChildCommand) -> dict[str, str]:
    """The child's environment: this one, the hook first on ``PYTHONPATH``, the settings."""
    env = dict(os.environ)
    config = {
        "path": str(path),
        "options": options,
        "target": {"kind": command.target_kind, "name": command.target},
    }
    env[ENV_CONFIG] = json.dumps(config)
    rest = env.get("PYTHONPATH")
    env["PYTHONPATH"] = str(BOOTSTRAP_DIR) + (os.pathsep + rest if rest else "")
    return env


def _terminal_sent_sigint() -> bool:
    """Whether a Ctrl-C reached the child already: we share the terminal's foreground group."""
    try:
        fd = os.open("/dev/tty", os.O_RDONLY)
    except OSError:
        return False
    try:
        return os.tcgetpgrp(fd) == os.getpgrp()
    except OSError:
        return False
    finally:
        os.close(fd)


def _run_child(argv: tuple[str, ...], env: dict[str, str]) -> int:
    """Run ``argv``, forwarding SIGTERM and SIGINT; its exit status (128 + N for signal N)."""
    box: list[subprocess.Popen[bytes]] = []

    def forward(signum: int, frame: object) -> None:
        if signum == signal.SIGINT and _terminal_sent_sigint():
            return  # the terminal sent Ctrl-C to the child too: once is enough
        if box:
            with contextlib.suppress(ProcessLookupError):
                box[0].send_signal(signum)

    handled = (signal.SIGINT, signal.SIGTERM)
    main = threading.current_thread() is threading.main_thread()
    previous = {s: signal.signal(s, forward) for s in handled} if main else {}
    try:
        box.append(subprocess.Popen(argv, env=env))
        code = box[0].wait()
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
    return 128 - code if code < 0 else code


def _results(path: Path) -> tuple[RankResult, ...]:
    from tensorsight.dumpformat.reader import read_dump
    from tensorsight.errors import DumpFormatError

    if not _fs.exists(path) or not any(_RANK_DIR.fullmatch(n) for n in _fs.list_dir(path)):
        return ()
    try:
        dump = read_dump(path)
        out = []
        for rank in dump.ranks:
            m = dump.manifest(rank)
            if m is not None:
                steps = tuple(s.step for s in m.steps)
                out.append(RankResult(rank, steps, m.complete, m.incomplete_reason))
    except DumpFormatError:
        return ()
    return tuple(out)


def run_dump_command(
    path: str | os.PathLike[str], options: dict[str, Any], words: list[str]
) -> DumpRun:
    """Record ``words`` (the command after ``--``) into ``path`` with ``options``.

    Args:
        path: The dump folder (made absolute: the child may change its working folder).
        options: Keyword arguments of :func:`tensorsight.dump` (checked here, used there).
        words: The command, e.g. ``["python", "train.py", "--lr", "0.1"]``.

    Raises:
        UsageError: Bad options, a bad command (:func:`resolve_command`), a non-empty folder
            without ``overwrite``. Nothing has run then.
    """
    from tensorsight.capture.session import dump

    folder = _fs.to_path(os.path.abspath(path))
    dump(folder, **options)  # the same checks, and messages, as the Python API
    command = resolve_command(words)
    _prepare_folder(folder, bool(options.get("overwrite")))
    code = _run_child(command.argv, child_env(folder, options, command))
    return DumpRun(folder, code, _results(folder))
