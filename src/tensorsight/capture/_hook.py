"""The child side of ``tensorsight dump``: record one process without changing its code.

The start-up hook (``_bootstrap/sitecustomize.py``) calls :func:`install` in the process that
runs the target script, before the script's first line. :func:`install` starts
:func:`tensorsight.dump` with the options of ``TENSORSIGHT_DUMP_CONFIG``, a JSON object::

    {"path": "/abs/dump", "options": {"mode": "statistics", "steps": [0, 2], ...},
     "target": {"kind": "script", "name": "/abs/train.py"}}

where ``options`` holds keyword arguments of :func:`tensorsight.dump` and ``target`` says
which process records (``kind`` ``script`` with the file's real path, or ``module`` with the
module name of ``-m``). Then:

- **Steps** end when ``Optimizer.step()`` returns (torch's global optimizer step post hook):
  the first optimizer that steps sets the pace, so a run with two optimizers (a GAN) counts
  one step per step of the first. Step 0 also holds what the script ran before (building the
  model, loading data). Once the last step listed in ``steps`` has ended the dump is closed,
  complete, and the script runs on without capture.
- **Exit**: at interpreter exit the dump is closed complete, unless the script raised
  (``sys.excepthook`` saw it: the reason is ``"<Type>: <message>"``, ``KeyboardInterrupt``
  included), called ``sys.exit`` with a non-zero status (``"the script exited with status
  N"``) or was stopped by SIGTERM (``"killed by signal SIGTERM"``: the dump is closed, then the
  signal kills the process as it would have). ``os._exit`` and SIGKILL leave the dump as the
  writer last wrote it, incomplete without a reason.
"""

from __future__ import annotations

import atexit
import builtins
import contextlib
import os
import signal
import sys
import weakref
from collections.abc import Callable
from types import FrameType, TracebackType
from typing import Any

from tensorsight.errors import TensorsightError

__all__ = ["DumpHook", "install"]


def _reason(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class DumpHook:
    """One process's running dump: steps it at optimizer steps and closes it at exit.

    Attributes:
        session: The :class:`~tensorsight.capture.session.DumpSession`.
        last_step: The last step to record (``None``: record until exit).
        reason: Why the dump will be marked incomplete (``None``: it ends complete).
        exit_status: The status given to ``sys.exit``, if it was called.
    """

    def __init__(self, session: Any, last_step: int | None) -> None:
        self.session = session
        self.last_step = last_step
        self.reason: str | None = None
        self.exit_status: int | None = None
        self.closed = False
        self._pacer: weakref.ref[Any] | None = None
        self._handle: Any = None

    def attach(self) -> None:
        """Register the optimizer step post hook (every optimizer of this process)."""
        from torch.optim.optimizer import register_optimizer_step_post_hook

        self._handle = register_optimizer_step_post_hook(self.on_step)

    def on_step(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        """Torch's post hook: the pacing optimizer's step ends the current dump step."""
        if self.closed:
            return
        pacer = self._pacer() if self._pacer is not None else None
        if pacer is None:  # the first optimizer to step (or the last one is gone)
            self._pacer = weakref.ref(optimizer)
        elif pacer is not optimizer:
            return
        self.session.step()
        if self.last_step is not None and self.session.current_step > self.last_step:
            self.close()

    def close(self) -> None:
        """Close the dump: complete unless a reason was recorded (idempotent)."""
        if self.closed:
            return
        self.closed = True
        if self._handle is not None:
            self._handle.remove()
        reason = self.reason
        if reason is None and self.exit_status not in (None, 0):
            reason = f"the script exited with status {self.exit_status}"
        self.session.close(complete=reason is None, reason=reason)

    def close_at_exit(self) -> None:
        """The ``atexit`` handler: close, saying in one line why closing failed, if it did."""
        try:
            self.close()
        except Exception as exc:  # the script's own exit code stays; say what was lost
            print(f"tensorsight dump: error: closing the dump failed: {exc}", file=sys.stderr)

    # ------------------------------------------------------------- what ends the process
    def wrap_excepthook(self, previous: Callable[..., Any]) -> Callable[..., Any]:
        """A ``sys.excepthook`` that records the uncaught exception, then calls ``previous``."""

        def excepthook(
            kind: type[BaseException], exc: BaseException, tb: TracebackType | None
        ) -> None:
            if self.reason is None:
                self.reason = _reason(exc)
            previous(kind, exc, tb)

        return excepthook

    def wrap_exit(self, previous: Callable[..., Any]) -> Callable[..., Any]:
        """A ``sys.exit`` that records the status (``argparse`` errors go through it too)."""

        def exit(status: object = None) -> Any:
            if status is None or isinstance(status, int):
                self.exit_status = int(status or 0)
            else:  # a message: Python prints it and exits 1
                self.exit_status = 1
            return previous(status)

        return exit

    def on_signal(self, signum: int, frame: FrameType | None) -> None:
        """SIGTERM: close the dump incomplete, then die of the signal as without the hook."""
        self.reason = f"killed by signal {signal.Signals(signum).name}"
        with contextlib.suppress(Exception):  # dying is what the sender asked for
            self.close()
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)


def install(config: dict[str, Any]) -> DumpHook:
    """Start the dump of ``config`` in this process and hook its end (see the module doc).

    A dump that cannot start (a :class:`~tensorsight.errors.TensorsightError`) ends the
    process with one ``tensorsight dump: error: ...`` line and exit status 2, before the
    script runs.
    """
    from tensorsight._notices import show_on_stderr
    from tensorsight.capture.session import dump

    show_on_stderr()  # the command's side: a kernel build's notice reaches the user
    options = dict(config["options"])
    steps = options.get("steps")
    try:
        session = dump(config["path"], **options).start()
    except TensorsightError as exc:
        print(f"tensorsight dump: error: {exc}", file=sys.stderr, flush=True)
        os._exit(2)
    hook = DumpHook(session, max(steps) if steps else None)
    hook.attach()
    sys.excepthook = hook.wrap_excepthook(sys.excepthook)
    setattr(sys, "exit", hook.wrap_exit(sys.exit))  # noqa: B010 - mypy: sys.exit is final
    for name in ("exit", "quit"):  # the builtins site adds: exit(3) in a script
        quitter = getattr(builtins, name, None)
        if callable(quitter):
            setattr(builtins, name, hook.wrap_exit(quitter))
    atexit.register(hook.close_at_exit)  # registered first, so it runs after the script's own
    if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
        signal.signal(signal.SIGTERM, hook.on_signal)
    return hook
