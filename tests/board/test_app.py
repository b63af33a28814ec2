from __future__ import annotations

import pytest
from starlette.testclient import TestClient

from tensorsight.board.app import create_app, host_name, runs_impl
from tensorsight.board.server import allowed_hosts_for
from tensorsight.data import InMemoryProvider


def test_views_listing_has_builtins_in_tab_order(client):
    body = client.get("/api/views").json()
    names = [v["name"] for v in body["views"]]
    assert names[:4] == ["scalars", "histograms", "images", "text"]
    views = {v["name"]: v for v in body["views"]}
    for name in ("scalars", "histograms", "images", "text"):  # the fixture has no audio
        assert views[name]["enabled"], name
        assert views[name]["has_data"], name


def test_a_broken_view_is_listed_disabled_not_fatal(provider):
    app = create_app(provider, ["scalars", "no-such-view"])
    with TestClient(app) as c:
        views = {v["name"]: v for v in c.get("/api/views").json()["views"]}
    assert views["scalars"]["enabled"]
    assert not views["no-such-view"]["enabled"]
    assert "unavailable" in views["no-such-view"]["reason"]


def test_a_view_without_data_is_enabled_but_empty():
    p = InMemoryProvider()
    p.add_scalars("r", "loss", steps=[0], values=[1.0])
    with TestClient(create_app(p)) as c:
        views = {v["name"]: v for v in c.get("/api/views").json()["views"]}
    assert views["images"]["enabled"]
    assert not views["images"]["has_data"]
    assert views["images"]["reason"] == "no data yet"


def test_runs_list_times_tags_and_activity(provider):
    body = runs_impl(provider, now=2100.0)
    runs = {r["name"]: r for r in body["runs"]}
    assert list(runs) == ["eval", "train"]
    train = runs["train"]
    assert train["first_wall_time"] == 1000.0
    assert train["last_wall_time"] == 1099.0
    assert train["tag_count"] == 7
    assert train["tags"]["scalars"] == ["loss", "lr", "héllo/ünïcode"]
    assert train["active"] is False  # last write 1001 s before "now"
    assert runs["eval"]["active"] is True
    assert body["limits"]["max_points_per_scalar"] is None


def test_unknown_api_route_is_json_404(client):
    r = client.get("/api/nothing/here")
    assert r.status_code == 404
    assert r.json()["error"]["code"] == "not_found"


def test_security_headers(client):
    r = client.get("/api/runs")
    assert "script-src 'self'" in r.headers["content-security-policy"]
    assert r.headers["x-content-type-options"] == "nosniff"


@pytest.fixture
def static_client(tmp_path, provider):
    static = tmp_path / "static"
    (static / "assets").mkdir(parents=True)
    (static / "index.html").write_text("<!doctype html><title>board</title>", encoding="utf-8")
    (static / "assets" / "app.js").write_text("console.log(1)", encoding="utf-8")
    (tmp_path / "secret.txt").write_text("do not serve", encoding="utf-8")
    with TestClient(create_app(provider, static_dir=static)) as c:
        yield c


def test_serves_the_built_front_end(static_client):
    assert "<title>board</title>" in static_client.get("/").text
    r = static_client.get("/assets/app.js")
    assert r.status_code == 200
    assert "javascript" in r.headers["content-type"]


@pytest.mark.parametrize(
    "path",
    [
        "/../secret.txt",
        "/assets/../../secret.txt",
        "/%2e%2e/secret.txt",
        "/assets/%2e%2e/%2e%2e/secret.txt",
        "/..%2fsecret.txt",
        "/%2fetc%2fpasswd",
        "//etc/passwd",
        "/etc/passwd",
        "/assets/..%5c..%5csecret.txt",
    ],
)
def test_path_traversal_is_refused(static_client, path):
    r = static_client.get(path)
    assert r.status_code in (400, 404)
    assert "do not serve" not in r.text
    assert "root:" not in r.text


def test_raw_traversal_over_the_wire_is_refused(static_client):
    # httpx normalises "..": send the raw path through the ASGI scope instead
    import asyncio
    import concurrent.futures

    app = static_client.app
    sent: list[dict] = []

    async def call(path: str) -> int:
        scope = {
            "type": "http",
            "method": "GET",
            "path": path,
            "raw_path": path.encode(),
            "query_string": b"",
            "headers": [],
            "root_path": "",
            "scheme": "http",
            "server": ("127.0.0.1", 80),
            "client": ("127.0.0.1", 1),
            "http_version": "1.1",
        }

        async def receive():
            return {"type": "http.request", "body": b"", "more_body": False}

        async def send(message):
            sent.append(message)

        await app(scope, receive, send)
        return next(m["status"] for m in sent if m["type"] == "http.response.start")

    def run(path: str) -> int:
        # a loop of its own in a thread of its own: asyncio.run refuses to start in a thread
        # whose loop is running (the browser tests' Playwright leaves one in this thread)
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            return pool.submit(asyncio.run, call(path)).result()

    for path in ["/../secret.txt", "/assets/../../secret.txt", "/assets/../../../../etc/passwd"]:
        sent.clear()
        assert run(path) == 404
        body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
        assert b"do not serve" not in body


def test_missing_build_says_how_to_build(tmp_path, provider):
    with TestClient(create_app(provider, static_dir=tmp_path / "none")) as c:
        r = c.get("/")
    assert r.status_code == 503
    assert "make web" in r.text


@pytest.mark.parametrize(
    "run", ["../train", "/etc/passwd", "train/../../x", "%2e%2e", "\x00", "é" * 5000]
)
def test_hostile_run_names_are_just_unknown_runs(client, run):
    for route in ("scalars/series", "histograms/series", "images/list", "text/series"):
        r = client.get(f"/api/views/{route}", params={"run": run, "tag": "loss"})
        assert r.status_code == 404, route
        message = r.json()["error"]["message"]
        assert len(message) < 400


@pytest.mark.parametrize(
    ("header", "name"),
    [("127.0.0.1:6006", "127.0.0.1"), ("LocalHost", "localhost"), ("[::1]:80", "::1"),
     ("[::1]", "::1"), ("::1", "::1"), ("", ""), ("a.example:1:2", "a.example:1:2")],
)  # fmt: skip
def test_host_name_drops_port_and_brackets(header, name):
    assert host_name(header) == name


@pytest.mark.parametrize(
    ("base", "status"),
    [("http://127.0.0.1:6006", 200), ("http://localhost", 200), ("http://[::1]:6006", 200),
     ("http://app.localhost", 200), ("http://evil.example", 400),
     ("http://127.0.0.1.evil.example", 400), ("http://localhost.evil.example", 400)],
)  # fmt: skip
def test_host_check_refuses_other_names(provider, base, status):
    app = create_app(provider, ["scalars"], allowed_hosts=allowed_hosts_for("127.0.0.1"))
    with TestClient(app, base_url=base) as c:
        for path in ("/api/runs", "/"):
            r = c.get(path)
            assert r.status_code == status, path
    if status == 400:
        assert r.json()["error"]["code"] == "invalid_host"


def test_allowed_hosts_follow_the_bind_address():
    assert set(allowed_hosts_for("127.0.0.1")) >= {"127.0.0.1", "localhost", "::1"}
    assert "proxy.example" in (allowed_hosts_for("localhost", ["proxy.example"]) or ())
    assert allowed_hosts_for("::1") is not None
    # binding a network interface was an explicit choice: any name unless some are listed
    assert allowed_hosts_for("0.0.0.0") is None
    assert allowed_hosts_for("192.168.1.5", ["board.lan"]) == ("board.lan",)


def test_the_run_list_body_is_built_once_per_generation(monkeypatch):
    from tensorsight.board import app as app_module

    built: list[int] = []
    real = app_module.runs_impl

    def counting(provider, **kw):
        built.append(provider.generation)
        return real(provider, **kw)

    monkeypatch.setattr(app_module, "runs_impl", counting)
    p = InMemoryProvider()
    p.add_scalars("a", "loss", steps=[0], values=[1.0])
    with TestClient(create_app(p)) as c:
        first = c.get("/api/runs")
        assert c.get("/api/runs").content == first.content  # polled again: the same body
        assert len(built) == 1
        assert first.headers["content-type"] == "application/json"
        p.add_scalars("b", "loss", steps=[0], values=[1.0])  # new data: a new generation
        names = [r["name"] for r in c.get("/api/runs").json()["runs"]]
        assert names == ["a", "b"]
        assert len(built) == 2
        monkeypatch.setattr(app_module, "RUNS_BODY_TTL_SECS", 0.0)  # aged: built again
        c.get("/api/runs")
        assert len(built) == 3
