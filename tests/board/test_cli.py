from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest
from torch.utils.tensorboard import SummaryWriter

from tensorsight import cli
from tests.conftest import run_cli
from tests.e2e.conftest import free_port


def test_help_has_examples():
    r = run_cli("board", "--help")
    assert r.returncode == 0
    assert "examples:" in r.stdout
    assert "--reload-interval" in r.stdout


def test_missing_logdir_is_a_one_line_usage_error(tmp_path, capsys):
    assert cli.main(["board", "--logdir", str(tmp_path / "nope")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: Logdir ")
    assert len(err.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("flag", "value"),
    [("--max-points-per-scalar", "0"), ("--max-tags-per-run", "-3"), ("--reload-interval", "-1")],
)
def test_bad_limits_are_refused(tmp_path, capsys, flag, value):
    assert cli.main(["board", "--logdir", str(tmp_path), flag, value]) == 2
    assert flag in capsys.readouterr().err


@pytest.mark.parametrize("args", [["--port", "70000"], ["--port", "-1"], ["--host", "256.0.0.1"]])
def test_bad_address_is_a_one_line_error_before_reading(tmp_path, capsys, args):
    assert cli.main(["board", "--logdir", str(tmp_path), *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ")
    assert len(err.strip().splitlines()) == 1
    assert "--port" in err


def test_busy_port_is_a_one_line_error(tmp_path, capsys):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        assert cli.main(["board", "--logdir", str(tmp_path), "--port", str(port)]) == 2
    err = capsys.readouterr().err
    assert f"127.0.0.1:{port}: cannot listen" in err


def test_serves_a_logdir_on_localhost_and_reloads(tmp_path):
    with SummaryWriter(str(tmp_path / "run-ä")) as w:
        w.add_scalar("loss", 1.0, 0)
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "tensorsight", "board", "--logdir", str(tmp_path),
         "--port", str(port), "--reload-interval", "0.2", "--allowed-host", "proxy.example"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
    )  # fmt: skip
    try:
        url = f"http://127.0.0.1:{port}/api/runs"
        body = None
        for _ in range(150):
            try:
                with urllib.request.urlopen(url, timeout=1) as r:
                    body = json.loads(r.read())
                break
            except OSError:
                time.sleep(0.1)
        assert body is not None, proc.stderr.read() if proc.poll() is not None else "no answer"
        assert [r["name"] for r in body["runs"]] == ["run-ä"]
        with SummaryWriter(str(tmp_path / "later")) as w:
            w.add_scalar("loss", 2.0, 0)
        for _ in range(50):
            with urllib.request.urlopen(url, timeout=1) as r:
                names = [run["name"] for run in json.loads(r.read())["runs"]]
            if "later" in names:
                break
            time.sleep(0.1)
        assert "later" in names
        # DNS rebinding: a page on another site reaches 127.0.0.1 under its own Host name
        for host, status in [("evil.example", 400), (f"localhost:{port}", 200),
                             ("proxy.example", 200), (f"[::1]:{port}", 200)]:  # fmt: skip
            req = urllib.request.Request(url, headers={"Host": host})
            try:
                with urllib.request.urlopen(req, timeout=2) as r:
                    got, body = r.status, json.loads(r.read())
            except urllib.error.HTTPError as exc:
                got, body = exc.code, json.loads(exc.read())
            assert got == status, host
            if status == 400:
                assert body["error"]["code"] == "invalid_host"
                assert "evil.example" in body["error"]["message"]
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=10)
    assert f"http://127.0.0.1:{port}/" in err


def test_missing_front_end_is_a_one_line_error_before_serving(tmp_path, monkeypatch, capsys):
    from tensorsight.board import app

    monkeypatch.setattr(app, "DEFAULT_STATIC_DIR", tmp_path / "no-static")
    assert cli.main(["board", "--logdir", str(tmp_path), "--port", "0"]) == 2
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("error: Board front end ")
    assert "make web" in lines[0]
    assert "open http" not in err  # nothing served, no URL printed


def test_the_packaged_front_end_is_found(tmp_path):
    from tensorsight.board.app import DEFAULT_STATIC_DIR, require_front_end

    if not (DEFAULT_STATIC_DIR / "index.html").is_file():
        pytest.fail("board/static is not built: run `make web` (make test does)")
    assert require_front_end() == DEFAULT_STATIC_DIR
    (tmp_path / "index.html").write_text("<!doctype html>", encoding="utf-8")
    assert require_front_end(tmp_path) == tmp_path


def test_a_network_bind_warns_and_requires_the_printed_token(tmp_path):
    with SummaryWriter(str(tmp_path / "run")) as w:
        w.add_scalar("loss", 1.0, 0)
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "tensorsight", "board", "--logdir", str(tmp_path),
         "--host", "0.0.0.0", "--port", str(port), "--reload-interval", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
    )  # fmt: skip
    try:
        lines = []
        while not any("?token=" in line for line in lines):
            line = proc.stderr.readline()
            assert line, "".join(lines)
            lines.append(line)
        assert any(line.startswith("warning: --host 0.0.0.0") for line in lines)
        url_line = next(line for line in lines if "?token=" in line)
        token = url_line.split("?token=", 1)[1].split()[0]
        assert len(token) >= 32
        base = f"http://127.0.0.1:{port}"

        def get(path, headers=None):
            req = urllib.request.Request(base + path, headers=headers or {})
            for _ in range(150):
                try:
                    with urllib.request.urlopen(req, timeout=2) as r:
                        return r.status, r.headers, json.loads(r.read())
                except urllib.error.HTTPError as exc:
                    return exc.code, exc.headers, json.loads(exc.read())
                except OSError:
                    time.sleep(0.1)
            raise AssertionError("no answer")

        status, _, body = get("/api/runs")
        assert status == 401
        assert body["error"]["code"] == "unauthorized"
        status, _, _ = get("/api/runs?token=" + "x" * len(token))
        assert status == 401
        status, headers, body = get(f"/api/runs?token={token}")
        assert status == 200
        assert [r["name"] for r in body["runs"]] == ["run"]
        cookie = headers["set-cookie"]
        assert "HttpOnly" in cookie
        assert "SameSite=Strict" in cookie
        # the front end's later requests carry only the cookie; scripts send a header
        assert get("/api/runs", {"Cookie": cookie.split(";")[0]})[0] == 200
        assert get("/api/runs", {"Authorization": f"token {token}"})[0] == 200
    finally:
        proc.terminate()
        proc.communicate(timeout=10)


def test_no_auth_is_explicit_and_loopback_needs_no_token(capsys):
    from tensorsight.board.cli import _token_for

    assert _token_for("127.0.0.1", no_auth=False) is None
    assert _token_for("::1", no_auth=False) is None
    assert capsys.readouterr().err == ""
    assert _token_for("0.0.0.0", no_auth=True) is None
    assert "--no-auth: anyone who can reach this machine" in capsys.readouterr().err
    first, second = _token_for("0.0.0.0", no_auth=False), _token_for("0.0.0.0", no_auth=False)
    assert first
    assert first != second  # a fresh token per start
