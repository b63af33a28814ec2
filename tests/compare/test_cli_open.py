"""``tensorsight compare ... --open``: write the reports, then serve the board on them."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request

from tests.conftest import run_cli
from tests.data.test_comparisons import make_comparison_logdir


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_open_needs_an_output_folder(tmp_path):
    result = run_cli("compare", str(tmp_path / "a"), str(tmp_path / "b"), "--open")
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "error: Option --open: needs -o OUT, the folder the board will show. Add -o report/."
    ]


def test_open_serves_the_new_comparison_in_the_board(tmp_path):
    logdir = tmp_path / "logs"
    make_comparison_logdir(logdir)
    out = tmp_path / "report"
    port = _free_port()
    cmd = [
        sys.executable, "-m", "tensorsight", "compare",
        str(logdir / "dumps" / "bench"), str(logdir / "dumps" / "target"),
        "-o", str(out), "--format", "csv", "--open", "--port", str(port), "-q",
    ]  # fmt: skip
    proc = subprocess.Popen(
        cmd, env={**os.environ, "PYTHONWARNINGS": "ignore"}, start_new_session=True
    )
    try:
        url = f"http://127.0.0.1:{port}/api/views/comparison/list"
        deadline = time.monotonic() + 60
        listing = None
        while time.monotonic() < deadline and listing is None and proc.poll() is None:
            try:
                with urllib.request.urlopen(url, timeout=2) as response:
                    listing = json.loads(response.read())
            except OSError:
                time.sleep(0.3)
        assert listing is not None, "the board did not come up"
        assert (out / "comparison.json").is_file()  # --open adds json to the formats
        assert (out / "comparison.csv").is_file()
        names = [c["name"] for c in listing["comparisons"]]
        assert names == ["."]
    finally:
        os.killpg(proc.pid, signal.SIGINT)
        proc.wait(timeout=20)


def test_compare_ends_without_teardown_and_loses_nothing(tmp_path):
    """``compare`` leaves by os._exit (cli.entry): every report is whole, the summary printed,
    the exit code kept; a reader that closes the pipe early costs no traceback."""
    logdir = tmp_path / "logs"
    make_comparison_logdir(logdir)
    bench, target = str(logdir / "dumps" / "bench"), str(logdir / "dumps" / "target")
    out = tmp_path / "report"
    result = run_cli("compare", bench, target, "-o", str(out), "--format", "csv,json,xlsx,html")
    assert result.returncode == 1  # the planted bug
    assert "first divergence:" in result.stdout
    assert result.stdout.rstrip().endswith(f"wrote {out / 'comparison.html'}")
    rows = json.loads((out / "comparison.json").read_text())["rows"]
    csv_lines = (out / "comparison.csv").read_text().splitlines()
    assert len(csv_lines) == len(rows) + 1
    assert (out / "comparison.html").read_text().rstrip().endswith("</html>")
    import openpyxl

    assert openpyxl.load_workbook(out / "comparison.xlsx").active.max_row == len(rows) + 1
    # stdout's reader is gone before anything is printed: no traceback, the SIGPIPE code
    piped = subprocess.Popen(
        [sys.executable, "-m", "tensorsight", "compare", bench, target],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert piped.stdout is not None
    piped.stdout.close()
    _, err = piped.communicate(timeout=120)
    assert err == ""
    assert piped.returncode == 141
