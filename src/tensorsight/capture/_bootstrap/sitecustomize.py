"""Start-up hook of ``tensorsight dump``, imported by Python as ``sitecustomize``.

``tensorsight dump`` puts this folder first on ``PYTHONPATH`` and the run's settings in
``TENSORSIGHT_DUMP_CONFIG`` (JSON; :mod:`tensorsight.capture._hook`). Every Python process that
inherits the environment imports this module at start-up, before its script runs. Only a
process running the target (the same script file, or ``-m`` the same module) records: it
imports tensorsight, starts the dump and removes both settings from its own environment, so
what it launches in turn records nothing. Any other process (torchrun's agent, DataLoader
workers, compile workers) imports nothing but ``os``, ``sys`` and ``json`` here.

Whatever ``sitecustomize`` this one shadows (a distribution's or a virtual environment's) is
run afterwards, as Python would have run it.
"""

from __future__ import annotations

import json
import os
import sys

ENV_CONFIG = "TENSORSIGHT_DUMP_CONFIG"
HERE = os.path.dirname(os.path.abspath(__file__))


def _module_of(argv: list[str]) -> str | None:
    """The module of ``python [options] -m MODULE ...`` (``sys.orig_argv``), else ``None``."""
    words = iter(argv[1:])
    for word in words:
        if word == "-m":
            return next(words, None)
        if word in ("-X", "-W", "--check-hash-based-pycs"):
            next(words, None)
        elif not word.startswith("-") or word == "-c":
            return None
    return None


def is_target(target: dict[str, str]) -> bool:
    """Whether this process runs the script or module that ``tensorsight dump`` records."""
    argv = sys.argv
    if not argv:
        return False
    if target["kind"] == "module":
        orig = list(getattr(sys, "orig_argv", []))
        return argv[0] == "-m" and _module_of(orig) == target["name"]
    if argv[0] in ("", "-", "-c", "-m"):
        return False
    return os.path.realpath(argv[0]) == target["name"]


def _forget() -> None:
    """Remove the hook's settings from this process's environment (its children inherit it)."""
    os.environ.pop(ENV_CONFIG, None)
    parts = os.environ.get("PYTHONPATH", "").split(os.pathsep)
    kept = [p for p in parts if p and os.path.realpath(p) != os.path.realpath(HERE)]
    if kept:
        os.environ["PYTHONPATH"] = os.pathsep.join(kept)
    else:
        os.environ.pop("PYTHONPATH", None)


def _start(text: str) -> None:
    config = json.loads(text)
    if not is_target(config["target"]):
        return
    _forget()
    try:
        from tensorsight.capture import _hook
    except ImportError:  # an interpreter without tensorsight installed: use this copy
        sys.path.append(os.path.dirname(os.path.dirname(os.path.dirname(HERE))))
        from tensorsight.capture import _hook
    try:
        _hook.install(config)
    except Exception as exc:  # Python would print one line and run the script unrecorded
        print(f"tensorsight dump: error: the start-up hook failed: {exc!r}", file=sys.stderr)
        os._exit(2)


def _chain() -> None:
    """Run the ``sitecustomize`` that this module shadows, if there is one."""
    import importlib.machinery
    import importlib.util

    here = os.path.realpath(HERE)
    path = [p for p in sys.path if os.path.realpath(p or ".") != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", path)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)


_config = os.environ.get(ENV_CONFIG)
if _config:
    _start(_config)
_chain()
