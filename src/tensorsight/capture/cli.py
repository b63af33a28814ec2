"""Command line of the dump part: ``tensorsight dump-onnx``.

``inspect`` is wired by the top-level CLI, which dispatches between logdirs and dumps
(:func:`tensorsight.capture.inspect_dump` and :func:`tensorsight.capture.format_inspection`).
Importing this module loads nothing heavy.
"""

from __future__ import annotations

import argparse
from typing import Any

from tensorsight._progress import ProgressBar
from tensorsight.errors import InputFileError, UsageError

__all__ = ["register", "run_dump_onnx"]

EPILOG = """\
examples:
  tensorsight dump-onnx model.onnx --input x=x.npy -o dumps/onnx
  tensorsight dump-onnx model.onnx --input x=x.npy -o dumps/ref --runtime reference
  tensorsight dump-onnx model.onnx --input x=x.npy -o dumps/noopt --graph-opt disable \
      --mode statistics
"""


def register(subparsers: Any) -> None:
    """Add ``dump-onnx`` to the ``tensorsight`` command."""
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
