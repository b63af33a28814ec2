"""Trace mode: run a script on the CPU under a ``TorchDispatchMode``, list the ATen ops it
really uses, and check them against versioned support data for the target.

Support data, by target:

- ``mps``: the ``native_functions.yaml`` that ships inside the installed torch wheel
  (``torchgen/packaged``): an op is supported when it has an ``MPS`` kernel, a composite
  (decomposing) implementation, or a structured delegate that is supported.
- ``npu``: the op-plugin YAML files that ship inside the installed ``torch_npu`` wheel, when
  it is installed.
- ``accelerator``: no constraint; the ops are listed as an inventory (status ``kept``).

The script runs in a child process (``CUDA_VISIBLE_DEVICES`` empty, so on the CPU); pass
arguments that stop it after one step, e.g. ``--trace "train.py --steps 1"``.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from tensorsight._lazy import lazy_import
from tensorsight.errors import MigrationError, UsageError
from tensorsight.migrate.model import Site, Status

__all__ = ["SupportData", "load_support", "record_ops", "trace_sites"]

RULE_ID = "trace/op-support"
DOC_URL = "https://github.com/tensorsight/tensorsight/blob/main/docs/migrate.md#traceop-support"
_COMPOSITE = {
    "CompositeImplicitAutograd",
    "CompositeExplicitAutograd",
    "CompositeExplicitAutogradNonFunctional",
}

_BOOTSTRAP = """\
import json, os, runpy, sys
from collections import Counter
from torch.utils._python_dispatch import TorchDispatchMode

counts = Counter()

class _RecordOps(TorchDispatchMode):
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        counts[str(func)] += 1
        return func(*args, **(kwargs or {}))

out, script = sys.argv[1], sys.argv[2]
sys.argv = sys.argv[2:]
sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
try:
    with _RecordOps():
        runpy.run_path(script, run_name="__main__")
finally:
    with open(out, "w") as f:
        json.dump(dict(counts), f)
"""


@dataclass(frozen=True)
class SupportData:
    """Which ATen ops a target supports, and where that knowledge comes from.

    Attributes:
        target: The migration target.
        source: The file the data was read from, with its package version.
        supported: Op names (``aten.addmm.default``) with a kernel on the target.
        known: Every op name the data describes (an op outside it is "unknown").
    """

    target: str
    source: str
    supported: frozenset[str]
    known: frozenset[str]


def record_ops(command: str, cwd: Path, *, timeout_s: float = 600) -> dict[str, int]:
    """Run ``command`` (``SCRIPT [ARGS]``) under the op recorder; ATen op -> call count.

    Raises:
        UsageError: ``command`` does not start with a ``.py`` script.
        MigrationError: The script failed before running any op.
    """
    argv = shlex.split(command)
    if not argv or not argv[0].endswith(".py"):
        msg = f"Trace command {command!r}: expected 'SCRIPT.py [ARGS]'."
        raise UsageError(msg)
    with tempfile.TemporaryDirectory(prefix="tensorsight-trace-") as tmp:
        out = Path(tmp) / "ops.json"
        env = {**os.environ, "CUDA_VISIBLE_DEVICES": ""}
        proc = subprocess.run(
            [sys.executable, "-c", _BOOTSTRAP, str(out), *argv],
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=False,
        )
        if not out.exists():
            tail = (proc.stdout + proc.stderr).strip().splitlines()[-1:] or ["no output"]
            msg = f"Trace command {command!r} failed before recording ops: {tail[0]}"
            raise MigrationError(msg)
        counts: dict[str, int] = json.loads(out.read_text(encoding="utf-8"))
    if proc.returncode != 0 and not counts:
        tail = (proc.stdout + proc.stderr).strip().splitlines()[-1:] or ["no output"]
        msg = f"Trace command {command!r} exited with code {proc.returncode}: {tail[0]}"
        raise MigrationError(msg)
    return counts


def _op_names(entries: list[dict[str, object]]) -> dict[str, dict[str, object]]:
    out = {}
    for entry in entries:
        func = str(entry.get("func", ""))
        name = func.split("(", 1)[0].strip()
        if not name:
            continue
        base, _, overload = name.partition(".")
        out[f"aten.{base}.{overload or 'default'}"] = entry
    return out


def _mps_support() -> SupportData:
    torch = lazy_import("torch", extra="torch", needed_by="migrate trace mode")
    yaml = lazy_import("yaml", extra="migrate", needed_by="migrate trace mode")
    path = (
        Path(str(torch.__file__)).parent.parent
        / "torchgen/packaged/ATen/native/native_functions.yaml"
    )
    if not path.is_file():
        msg = f"Trace support data for 'mps' is missing: {path} is not in this torch install."
        raise MigrationError(msg)
    entries = _op_names(yaml.load(path.read_text(encoding="utf-8"), Loader=yaml.CSafeLoader))

    def supported(name: str, seen: frozenset[str] = frozenset()) -> bool:
        entry = entries.get(name)
        if entry is None or name in seen:
            return False
        dispatch = entry.get("dispatch")
        delegate = entry.get("structured_delegate")
        if isinstance(dispatch, dict):
            keys = {k.strip() for key in dispatch for k in str(key).split(",")}
            if "MPS" in keys or keys & _COMPOSITE:
                return True
        elif delegate is None:
            return True  # no dispatch section: a composite implicit op
        if isinstance(delegate, str):
            base, _, overload = delegate.partition(".")
            return supported(f"aten.{base}.{overload or 'default'}", seen | {name})
        return False

    ok = frozenset(n for n in entries if supported(n))
    source = f"{path.name} of torch {torch.__version__}"
    return SupportData("mps", source, ok, frozenset(entries))


def _npu_support() -> SupportData:
    try:
        import importlib.util

        spec = importlib.util.find_spec("torch_npu")
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.submodule_search_locations:
        msg = (
            "Trace support data for 'npu' comes from the torch_npu wheel, which is not "
            "installed. Install torch-npu, or trace with --target mps or accelerator."
        )
        raise MigrationError(msg)
    yaml = lazy_import("yaml", extra="migrate", needed_by="migrate trace mode")
    root = Path(next(iter(spec.submodule_search_locations)))
    entries: dict[str, dict[str, object]] = {}
    files = sorted(root.rglob("*functions*.yaml"))
    for path in files:
        data = yaml.load(path.read_text(encoding="utf-8"), Loader=yaml.CSafeLoader)
        lists = data.values() if isinstance(data, dict) else [data]
        for value in lists:
            if isinstance(value, list):
                entries.update(_op_names([e for e in value if isinstance(e, dict)]))
    if not entries:
        msg = f"Trace support data for 'npu': no operator list found under {root}."
        raise MigrationError(msg)
    names = frozenset(entries)
    return SupportData("npu", f"{len(files)} op-plugin YAML file(s) in {root}", names, names)


def load_support(target: str) -> SupportData | None:
    """Support data for ``target``; ``None`` for ``accelerator`` (no constraint)."""
    if target == "mps":
        return _mps_support()
    if target == "npu":
        return _npu_support()
    if target == "accelerator":
        return None
    msg = f"Trace mode has no support data for target {target!r}. Choices: accelerator, mps, npu."
    raise UsageError(msg)


def trace_sites(ops: dict[str, int], support: SupportData | None, script: str) -> tuple[Site, ...]:
    """One report row per distinct op: ``kept`` when supported, else with the reason."""
    rows = []
    status: Status
    for op, count in sorted(ops.items()):
        if op.startswith("profiler."):
            continue  # record_function markers, not computation
        if support is None:
            status, message = (
                "kept",
                f"Called {count} time(s); no support constraint for this target.",
            )
        elif op in support.supported:
            status, message = "kept", f"Called {count} time(s); supported ({support.source})."
        elif op in support.known:
            status = "unsupported"
            message = (
                f"Called {count} time(s); no {support.target} kernel in {support.source}: it "
                "falls back to the CPU or fails. Avoid the op or check a newer release."
            )
        else:
            status = "manual"
            message = f"Called {count} time(s); not described by {support.source}: check it."
        rows.append(Site(script, 0, 0, op, RULE_ID, status, "none", message, DOC_URL))
    return tuple(rows)
