from __future__ import annotations

import io

from tensorsight._progress import ProgressBar


class _Tty(io.StringIO):
    def isatty(self):
        return True


def test_silent_when_not_a_tty():
    stream = io.StringIO()
    with ProgressBar(10, label="files", stream=stream) as bar:
        for _ in range(10):
            bar.advance()
    assert stream.getvalue() == ""
    assert bar.done == 10


def test_draws_on_a_tty_and_finishes_the_line():
    stream = _Tty()
    with ProgressBar(4, label="files", stream=stream) as bar:
        for _ in range(4):
            bar.advance()
    text = stream.getvalue()
    assert "files [" in text
    assert "100% 4/4" in text
    assert text.endswith("\n")


def test_unknown_total_shows_a_counter():
    stream = _Tty()
    bar = ProgressBar(None, label="records", stream=stream)
    bar.advance(5)
    bar.close()
    assert "records 5 " in stream.getvalue()
