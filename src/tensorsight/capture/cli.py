"""Command line of the dump part: ``tensorsight dump`` and ``tensorsight dump-onnx``.

``inspect`` is wired by the top-level CLI, which dispatches between logdirs and dumps
(:func:`tensorsight.capture.inspect_dump` and :func:`tensorsight.capture.format_inspection`).
Importing this module loads nothing heavy.
"""

from __future__ import annotations

import argparse
from typing import Any

from tensorsight._progress import ProgressBar
from tensorsight.errors import InputFileError, UsageError

__all__ = ["register", "run_dump", "run_dump_onnx"]

DUMP_EPILOG = """\
examples:
  tensorsight dump -o dumps/fp32 -- python train.py --epochs 1
  tensorsight dump -o dumps/bf16 --steps 0-2 -- train.py --amp bf16
  tensorsight dump -o dumps/run --mode tensor --steps 3 -m mypkg.train --lr 0.1
  tensorsight dump -o dumps/ddp --ranks 0 -- torchrun --nproc_per_node=2 train.py

Everything after -- is the command, run unchanged; each optimizer.step() ends a step. The
exit code is the command's own (2 for an error of tensorsight dump itself).
"""

EPILOG = """\
examples:
  tensorsight dump-onnx model.onnx --input x=x.npy -o dumps/onnx
  tensorsight dump-onnx model.onnx --input x=x.npy -o dumps/ref --runtime reference
  tensorsight dump-onnx model.onnx --input x=x.npy -o dumps/noopt --graph-opt disable \
      --mode statistics
"""


def register(subparsers: Any) -> None:
    """Add ``dump`` and ``dump-onnx`` to the ``tensorsight`` command."""
    _register_dump(subparsers)
    p = subparsers.add_parser(
        "dump-onnx",
        help="record every intermediate tensor of one ONNX run",
        description=(
            "Run an ONNX model once and record every node's inputs and outputs in the "
            "tensorsight dump format. With onnxruntime, the fusions that recording disables "
            "are listed."
        ),
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("model", help="the .onnx file")
    p.add_argument(
        "--input",
        action="append",
        default=[],
        metavar="NAME=FILE.npy",
        help="value of one graph input (repeat for each input)",
    )
    p.add_argument("-o", "--output", required=True, metavar="DIR", help="dump folder to write")
    p.add_argument("--runtime", choices=("onnxruntime", "reference"), default="onnxruntime")
    p.add_argument(
        "--graph-opt",
        choices=("disable", "basic", "extended", "all"),
        default="all",
        help="onnxruntime graph optimization level (default: all)",
    )
    p.add_argument("--mode", choices=("statistics", "tensor", "md5"), default="tensor")
    p.add_argument("--overwrite", action="store_true", help="replace a non-empty output folder")
    p.add_argument("--quiet", action="store_true", help="no progress bar and no summary")
    p.set_defaults(func=run_dump_onnx)


def _load_inputs(specs: list[str]) -> dict[str, Any]:
    import numpy as np

    inputs: dict[str, Any] = {}
    for spec in specs:
        name, sep, file = spec.partition("=")
        if not sep or not name or not file:
            msg = f"Option --input {spec!r}: malformed. Expected NAME=FILE.npy."
            raise UsageError(msg)
        try:
            inputs[name] = np.load(file, allow_pickle=False)
        except FileNotFoundError as exc:
            msg = f"Input file {file!r}: does not exist. Expected a .npy file for input {name!r}."
            raise InputFileError(msg) from exc
        except (ValueError, OSError) as exc:
            msg = (
                f"Input file {file!r}: not a readable .npy array ({exc}). Save it with numpy.save."
            )
            raise InputFileError(msg) from exc
    return inputs


def run_dump_onnx(args: argparse.Namespace) -> int:
    """Run ``dump-onnx``; returns the exit code."""
    from tensorsight.capture.backends.onnx import DumpFromOnnxModel

    job = DumpFromOnnxModel(
        args.model,
        _load_inputs(args.input),
        args.output,
        runtime=args.runtime,
        graph_opt=args.graph_opt,
        mode=args.mode,
        overwrite=args.overwrite,
    )
    with ProgressBar(None, label="nodes", enabled=False if args.quiet else None) as bar:
        result = job.run(progress=bar.advance)
    if not args.quiet:
        print(f"wrote {result.path}: {result.op_count} nodes, {result.tensor_count} tensors")
        if result.lost_fusions:
            lost = ", ".join(f"{k} x{v}" for k, v in result.lost_fusions.items())
            print(f"not measured (fusions disabled by recording intermediates): {lost}")
    return 0


def _register_dump(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "dump",
        help="record every op of a PyTorch run without changing its code",
        description=(
            "Run a training script (python, -m MODULE or torchrun) in a child process that "
            "records every op of each step, forward and backward, as tensorsight.dump(...) "
            "would; a step ends when optimizer.step() returns. The dump is marked complete "
            "when the script ends normally, incomplete (with the reason) when it raises, "
            "exits non-zero or is killed by SIGINT/SIGTERM (forwarded to the child)."
        ),
        epilog=DUMP_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        usage="%(prog)s -o DIR [options] -- python train.py ARGS  (or -m MODULE ARGS)",
    )
    p.add_argument("-o", "--output", required=True, metavar="DIR", help="dump folder to write")
    p.add_argument(
        "--mode",
        choices=("statistics", "tensor", "md5"),
        default=None,
        help="statistics (default), tensor (full tensors too) or md5 (fingerprints too)",
    )
    p.add_argument(
        "--level",
        metavar="LEVEL",
        default=None,
        help="op (default: every ATen op), module (nn.Module hooks), api (torch functions) "
        "or the level of a registered capture backend",
    )
    p.add_argument("--steps", metavar="LIST", help="steps to record, e.g. 0,2-4 (default: all)")
    p.add_argument("--ranks", metavar="LIST", help="ranks that record, e.g. 0-1 (default: all)")
    p.add_argument(
        "--include",
        action="append",
        metavar="GLOB",
        help="keep only ops whose name or module path matches (repeatable)",
    )
    p.add_argument(
        "--exclude",
        action="append",
        metavar="GLOB",
        help="drop ops whose name or module path matches (repeatable)",
    )
    p.add_argument("--stack", action="store_true", help="record each op's call stack (slower)")
    p.add_argument(
        "--max-queue-bytes",
        metavar="SIZE",
        help="tensor bytes queued for the writer before training waits (default 1G)",
    )
    p.add_argument(
        "--shard-bytes", metavar="SIZE", help="target size of a tensor shard (default 256M)"
    )
    p.add_argument("--overwrite", action="store_true", help="replace the dump in a non-empty DIR")
    p.add_argument("--quiet", action="store_true", help="no summary on stderr at the end")
    p.add_argument(
        "-m",
        dest="module",
        nargs=argparse.REMAINDER,
        metavar="MODULE ARGS",
        help="run a module, as python -m does (ends the options, like --)",
    )
    p.add_argument("command", nargs=argparse.REMAINDER, help="-- then the command to record")
    p.set_defaults(func=run_dump)


def _dump_options(args: argparse.Namespace) -> dict[str, Any]:
    from tensorsight.capture._launch import parse_int_list, parse_size

    def sized(option: str, text: str | None) -> int | None:
        return None if text is None else parse_size(option, text)

    return {
        "mode": args.mode,
        "level": args.level,
        "include": args.include,
        "exclude": args.exclude,
        "steps": None if args.steps is None else parse_int_list("--steps", args.steps),
        "ranks": None if args.ranks is None else parse_int_list("--ranks", args.ranks),
        "stack": args.stack,
        "overwrite": args.overwrite,
        "max_queue_bytes": sized("--max-queue-bytes", args.max_queue_bytes),
        "shard_bytes": sized("--shard-bytes", args.shard_bytes),
    }


def _command_words(args: argparse.Namespace) -> list[str]:
    if args.module is not None:
        return ["-m", *args.module]
    words = list(args.command)
    if words and words[0] == "--":
        return words[1:]
    if words:
        msg = (
            f"Command {' '.join(words)!r}: missing '--' before it. Expected "
            f"tensorsight dump -o DIR [options] -- {' '.join(words)}."
        )
        raise UsageError(msg)
    msg = "Command: missing. Expected tensorsight dump -o DIR [options] -- python train.py ARGS."
    raise UsageError(msg)


def _span(steps: tuple[int, ...]) -> str:
    if not steps:
        return "no steps"
    if list(steps) == list(range(steps[0], steps[-1] + 1)) and len(steps) > 1:
        return f"steps {steps[0]}-{steps[-1]}"
    return ("step " if len(steps) == 1 else "steps ") + ",".join(map(str, steps))


def run_dump(args: argparse.Namespace) -> int:
    """Run ``dump``; returns the command's exit code (2 for a usage error of our own)."""
    import sys

    from tensorsight.capture._launch import run_dump_command

    words = _command_words(args)
    result = run_dump_command(args.output, _dump_options(args), words)
    if not args.quiet:

        def say(line: str) -> None:
            print(f"tensorsight dump: {line}", file=sys.stderr)

        if not result.ranks:
            say(
                f"warning: nothing recorded in {str(result.path)!r}: no process ran the "
                "script with the start-up hook (a python run with -I or -E ignores it) "
                "or --ranks matched none"
            )
        for r in result.ranks:
            state = "complete" if r.complete else f"incomplete ({r.reason or 'no reason'})"
            say(f"wrote {result.path}/rank{r.rank}: {_span(r.steps)}, {state}")
    return result.exit_code
