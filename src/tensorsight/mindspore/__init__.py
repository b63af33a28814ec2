"""``tensorsight.mindspore.dump``: record chosen steps of a MindSpore run with MindSpore's Dump.

MindSpore's own Dump (graph mode) writes every kernel of the compiled graphs, forward,
backward and the optimizer, and ``tensorsight compare`` reads it as it is (against another
MindSpore Dump, or against a PyTorch dump by value). Setting it up by hand takes a JSON
config, an environment variable set before the first graph compiles, a path with no dots in
it, and read-only files to clean up afterwards; this does all of it::

    import tensorsight.mindspore

    with tensorsight.mindspore.dump("msdump", steps=[0]):
        for x, y in data:
            train_step(x, y)            # a jitted step: nn.TrainOneStepCell, ms.jit, Model.train

    # then: tensorsight compare torch_dump msdump

Enter it before the process's first jitted step: MindSpore reads the Dump configuration
when it compiles its first graph, and ignores it afterwards (so a dump that recorded nothing
is an error naming that cause). Steps are the graphs' iterations, counted from 0. Tensors
are saved whole (``saved_data: tensor``: MindSpore refuses statistics on the CPU). This
module imports MindSpore only when ``dump`` is called; tensorsight's readers need none.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from tensorsight.errors import InputFileError, UsageError

__all__ = ["CONFIG_ENV", "dump"]

#: The environment variable through which MindSpore finds its Dump configuration.
CONFIG_ENV = "MINDSPORE_DUMP_CONFIG"
_SAFE_PATH = re.compile(r"[A-Za-z0-9_/-]+")  # what MindSpore's Dump accepts as its "path"
_NET_NAME = re.compile(r"[A-Za-z0-9_]+")


@contextmanager
def dump(
    path: str | os.PathLike[str],
    *,
    steps: Iterable[int] | None = (0,),
    kernels: Iterable[str] = (),
    net_name: str = "Net",
    keep_graphs: bool = False,
    force: bool = False,
) -> Iterator[Path]:
    """Record the steps ``steps`` of the MindSpore graphs run inside the block into ``path``.

    Args:
        path: The Dump folder to write (``rank_<R>/...``, MindSpore's layout). Any path
            works: MindSpore's Dump refuses paths with characters other than letters,
            digits, ``-``, ``_`` and ``/``, so such paths are written through a temporary
            folder and moved.
        steps: The iterations to record (from 0), or None for every one.
        kernels: Record only kernels whose full names contain one of these (all if empty).
        net_name: The folder name MindSpore gives the network (letters, digits, ``_``).
        keep_graphs: Keep MindSpore's IR and protobuf graphs (``rank_<R>/graphs``, about
            220 KB a run; the readers do not use them).
        force: Replace ``path`` when it already holds files.

    Yields:
        The folder the Dump ends up in (``path``, absolute).

    Raises:
        UsageError: A bad option, a ``path`` that holds files (without ``force``), or a
            Dump configuration that is already set for this process.
        InputFileError: The block ran but MindSpore wrote nothing (a graph compiled before
            the block, a PyNative step, or no step of ``steps`` ran).
    """
    chosen = _iterations(steps)
    if not _NET_NAME.fullmatch(net_name):
        msg = f"tensorsight.mindspore.dump: net_name {net_name!r} must be letters, digits, '_'."
        raise UsageError(msg)
    kernel_list = [str(k) for k in kernels]
    out = Path(path).absolute()
    if out.exists() and (not out.is_dir() or any(out.iterdir())) and not force:
        msg = (
            f"tensorsight.mindspore.dump: {str(out)!r} already holds files; choose a new "
            "folder or pass force=True to replace it."
        )
        raise UsageError(msg)
    if os.environ.get(CONFIG_ENV):
        msg = (
            f"tensorsight.mindspore.dump: {CONFIG_ENV} is already set "
            f"({os.environ[CONFIG_ENV]!r}); MindSpore reads one Dump configuration per process."
        )
        raise UsageError(msg)
    import mindspore  # noqa: F401  (fails here, before any work, when MindSpore is missing)

    work = Path(tempfile.mkdtemp(prefix="tsmsdump_", dir=_safe_temp_root()))
    target = work / "dump"
    config = {
        "common_dump_settings": {
            "op_debug_mode": 0,
            "dump_mode": 1 if kernel_list else 0,
            "path": str(target),
            "net_name": net_name,
            "iteration": chosen,
            "saved_data": "tensor",
            "input_output": 0,
            "kernels": kernel_list,
            "support_device": [0, 1, 2, 3, 4, 5, 6, 7],
        },
        "e2e_dump_settings": {"enable": True, "trans_flag": True},
    }
    config_file = work / "config.json"
    config_file.write_text(json.dumps(config), encoding="utf-8")
    os.environ[CONFIG_ENV] = str(config_file)
    try:
        yield out
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)  # the block failed: nothing to keep
        raise
    finally:
        os.environ.pop(CONFIG_ENV, None)
    try:
        written = sorted(target.glob("rank_*"))
        if not written or not any(target.rglob("*.npy")):
            msg = (
                f"tensorsight.mindspore.dump: MindSpore wrote no tensors for {str(out)!r}. "
                "Enter the block before the process's first jitted step (MindSpore reads the "
                "Dump configuration when its first graph compiles), run the steps in graph "
                f"mode, and check that steps {chosen!r} ran."
            )
            raise InputFileError(msg)
        for rank in written:
            if not keep_graphs:
                shutil.rmtree(rank / "graphs", ignore_errors=True)
        _writable(target)
        if out.exists():
            shutil.rmtree(out) if out.is_dir() else out.unlink()
        out.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(str(target), str(out))
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _iterations(steps: Iterable[int] | None) -> str:
    """MindSpore's ``iteration`` field: ``"all"`` or ``"0|2|5"``."""
    if steps is None:
        return "all"
    # a single int or a list mixing types is the same named error (not sorted's TypeError)
    given: object = steps  # the annotation says Iterable[int]; a user may pass anything
    chosen = list(given) if isinstance(given, Iterable) and not isinstance(given, str) else []
    if not chosen or any(type(s) is not int or s < 0 for s in chosen):
        msg = (
            f"tensorsight.mindspore.dump: steps must be iterations >= 0 (or None for all), "
            f"got {steps!r}."
        )
        raise UsageError(msg)
    return "|".join(str(s) for s in sorted(set(chosen)))


def _safe_temp_root() -> str | None:
    """The system's temporary folder if MindSpore accepts it as a path, else ``/tmp``."""
    root = tempfile.gettempdir()
    if _SAFE_PATH.fullmatch(root):
        return root
    return "/tmp" if _SAFE_PATH.fullmatch("/tmp") and os.path.isdir("/tmp") else None


def _writable(root: Path) -> None:
    """MindSpore writes its files read-only; make them removable by their owner."""
    for p in [root, *root.rglob("*")]:
        try:
            p.chmod(0o755 if p.is_dir() else 0o644)
        except OSError:
            continue
