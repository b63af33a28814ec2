"""Browser fixtures: Debian's chromium driven by Playwright, and a real board server.

The server runs uvicorn in a thread on a free 127.0.0.1 port. Screenshots go to
``test-artifacts/`` (gitignored). Never run ``playwright install``: the tests use
``/usr/bin/chromium`` (``make test`` installs it with apt when missing and run as root).
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT

CHROMIUM = Path("/usr/bin/chromium")
ARTIFACTS = ROOT / "test-artifacts"
STATIC = ROOT / "src" / "tensorsight" / "board" / "static"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def board_server(
    provider: Any, *, reload_interval_secs: float = 0.0, **app_kwargs: Any
) -> Iterator[str]:
    """Serve ``provider`` with the real app under uvicorn; yields the base URL.

    ``app_kwargs`` go to :func:`tensorsight.board.app.create_app`.
    """
    import uvicorn

    from tensorsight.board.app import create_app
    from tensorsight.board.server import Reloader

    port = free_port()
    config = uvicorn.Config(
        create_app(provider, **app_kwargs),
        host="127.0.0.1",
        port=port,
        log_level="error",
        lifespan="off",
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    reloader = Reloader(provider, reload_interval_secs).start()
    deadline = time.monotonic() + 10
    while not server.started:
        if time.monotonic() > deadline:
            raise RuntimeError("the board server did not start within 10 s")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        reloader.stop()
        server.should_exit = True
        thread.join(timeout=10)


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    if not CHROMIUM.exists():
        pytest.skip("Debian chromium is not installed: apt-get install -y chromium")
    if not (STATIC / "index.html").is_file():
        pytest.fail("the front end is not built: run `make web`")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(
            executable_path=str(CHROMIUM),
            args=["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"],
        )
        try:
            yield b
        finally:
            b.close()


def _checked_page(browser: Any, width: int, height: int) -> Iterator[Any]:
    """A page at ``width`` x ``height``; the test fails on any page error or dialog."""
    viewport = {"width": width, "height": height}
    context = browser.new_context(viewport=viewport, accept_downloads=True)
    pg = context.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda exc: errors.append(str(exc)))
    pg.on("dialog", lambda d: (errors.append(f"dialog: {d.message}"), d.dismiss()))
    try:
        yield pg
    finally:
        context.close()
    assert not errors, errors


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    yield from _checked_page(browser, 1400, 900)


@pytest.fixture
def page1280(browser: Any) -> Iterator[Any]:
    """The smallest layout the board supports (issue 22: 1280x800)."""
    yield from _checked_page(browser, 1280, 800)


def shot(page: Any, name: str) -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=False)
    return path
