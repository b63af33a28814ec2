"""A page on another origin cannot make the board work (issue 20), in Debian's chromium.

The board serves 127.0.0.1:PORT; the "evil" page comes from a second local server on
127.0.0.2 (another site to the browser, still this machine). Its ``<img>`` pointing at the
board's image route must fail to load, while the same ``<img>`` on the board's own origin
loads the PNG.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tensorsight.data import ImageRecord, InMemoryProvider
from tests.board.conftest import png_bytes
from tests.e2e.conftest import board_server

pytestmark = pytest.mark.browser

IMG_JS = """(src) => new Promise((resolve) => {
  const img = document.createElement("img");
  img.onload = () => resolve(`loaded ${img.naturalWidth}x${img.naturalHeight}`);
  img.onerror = () => resolve("error");
  img.src = src;
  document.body.append(img);
})"""

FETCH_JS = """(url) => fetch(url).then((r) => `status ${r.status}`, (e) => `failed ${e.name}`)"""


class _Requests:
    """The paths the evil site served."""

    def __init__(self) -> None:
        self.paths: list[str] = []


@contextmanager
def evil_site(seen: _Requests) -> Iterator[str]:
    """A plain page served from 127.0.0.2 on a free port."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.paths.append(self.path)
            body = b"<!doctype html><title>evil</title><p>hello"
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.2", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.2:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def image_provider() -> InMemoryProvider:
    p = InMemoryProvider()
    p.add_image(
        "train", "samples", ImageRecord(0, 1000.0, 0, 4, 3, png_bytes(4, 3, 90), "image/png")
    )
    return p


def test_page_on_another_origin_cannot_use_the_api(page):
    seen = _Requests()
    with board_server(image_provider()) as board, evil_site(seen) as evil:
        image = f"{board}/api/views/images/image?run=train&tag=samples&i=0"
        # control: on the board's own origin the image loads
        page.goto(f"{board}/api/runs")
        assert page.evaluate(IMG_JS, image) == "loaded 4x3"
        assert page.evaluate(FETCH_JS, f"{board}/api/runs") == "status 200"
        # the evil page: the same <img> fails, and a no-cors fetch gets nothing
        page.goto(f"{evil}/")
        assert page.title() == "evil"
        assert page.evaluate(IMG_JS, image) == "error"
        with page.expect_response(f"{board}/api/runs") as answer:
            page.evaluate(
                "(url) => fetch(url, {mode: 'no-cors'}).then(() => 'done', () => 'failed')",
                f"{board}/api/runs",
            )
        assert answer.value.status == 403
        assert seen.paths[0] == "/"  # the evil page was really served by the second site
