"""Run the board under uvicorn, with a background thread that reloads the logdir.

Binds ``127.0.0.1`` by default: the board shows training data, so exposing it on a network
is an explicit choice (``--host 0.0.0.0``). On a loopback address it also answers only
requests that name a loopback host (``Host: 127.0.0.1``, ``localhost``, ``[::1]``), so a web
page elsewhere cannot read it through DNS rebinding; ``allowed_hosts`` adds names (a reverse
proxy's, say).
"""

from __future__ import annotations

import ipaddress
import logging
import threading
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING

from tensorsight._lazy import lazy_import
from tensorsight.board.app import LOOPBACK_HOSTS, create_app, host_name, require_front_end

if TYPE_CHECKING:
    from tensorsight.data import DataProvider

__all__ = [
    "DEFAULT_HOST",
    "DEFAULT_PORT",
    "Reloader",
    "allowed_hosts_for",
    "is_loopback",
    "serve",
]

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 6006
log = logging.getLogger("tensorsight.board")


def is_loopback(bind_host: str) -> bool:
    """True when ``bind_host`` names a loopback interface (127.0.0.0/8, ``::1``, localhost)."""
    name = host_name(bind_host)
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return name == "localhost" or name.endswith(".localhost")


def allowed_hosts_for(bind_host: str, extra: Sequence[str] = ()) -> tuple[str, ...] | None:
    """The ``Host`` names a board bound to ``bind_host`` answers (``None``: any).

    A loopback bind answers the loopback names, the bound name and ``extra``; any other bind
    was an explicit choice to serve a network, so it answers any name unless ``extra`` lists
    the allowed ones.
    """
    if is_loopback(bind_host):
        return (*LOOPBACK_HOSTS, host_name(bind_host), *extra)
    return tuple(extra) or None


class Reloader:
    """Call ``provider.reload()`` every ``interval_secs`` in a daemon thread until stopped."""

    def __init__(self, provider: DataProvider, interval_secs: float) -> None:
        self.provider = provider
        self.interval_secs = interval_secs
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="tensorsight-reload", daemon=True)

    def start(self) -> Reloader:
        """Start the thread (no-op when the interval is 0 or less)."""
        if self.interval_secs > 0:
            self._thread.start()
        return self

    def stop(self) -> None:
        """Ask the thread to finish and wait for it."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_secs):
            try:
                self.provider.reload()
            except Exception:  # keep serving what we have; the log says why
                log.exception("reloading the logdir failed")


def serve(
    provider: DataProvider,
    *,
    host: str | None = None,
    port: int | None = None,
    reload_interval_secs: float | None = None,
    views: Iterable[str] | None = None,
    log_level: str = "warning",
    allowed_hosts: Sequence[str] = (),
    token: str | None = None,
    on_ready: Callable[[], object] | None = None,
) -> None:
    """Serve the board until interrupted (blocks).

    Args:
        provider: The data to show.
        host: Interface to bind (``None``: 127.0.0.1).
        port: TCP port (``None``: 6006; 0 picks a free port).
        reload_interval_secs: Seconds between reloads (``None``: 5; 0 disables).
        views: View names in tab order (``None``: all).
        log_level: uvicorn's log level.
        allowed_hosts: Extra ``Host`` names to answer (see :func:`allowed_hosts_for`).
        token: Require this token on every request (``tensorsight board`` makes one for a
            non-loopback ``host`` unless ``--no-auth``).
        on_ready: Called once the app is made, just before serving starts (``tensorsight
            board`` starts reading the logdir there: a read that shares the GIL with the
            app's set-up made the first answer ~1 s later on a busy machine).

    Raises:
        InputFileError: The front end is not built (see
            :func:`~tensorsight.board.app.require_front_end`).
    """
    uvicorn = lazy_import("uvicorn", extra="board", needed_by="tensorsight board")
    require_front_end()
    bind = DEFAULT_HOST if host is None else host
    app = create_app(
        provider, views, allowed_hosts=allowed_hosts_for(bind, allowed_hosts), token=token
    )
    reloader = Reloader(provider, 5.0 if reload_interval_secs is None else reload_interval_secs)
    reloader.start()
    if on_ready is not None:
        on_ready()
    try:
        uvicorn.run(
            app,
            host=bind,
            port=DEFAULT_PORT if port is None else port,
            log_level=log_level,
        )
    finally:
        reloader.stop()
